"""pyproject.toml and environment.yml pin the same packages; the driver rejects bad input."""

import re
import tomllib
from pathlib import Path

import pytest

from lalr_core import driver

ROOT = Path(__file__).resolve().parents[1]


def test_environment_yml_has_the_same_pins():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = re.findall(r"^ {6}- ([A-Za-z0-9_.-]+[=<>!~].*)$", (ROOT / "environment.yml").read_text(), re.M)
    assert sorted(d.replace(" ", "") for d in deps) == sorted(e.strip() for e in env)
    assert "torch==2.14.1" in deps and "torchvision==0.29.1" in deps


def test_driver_rejects_unknown_chapter_and_profile(capsys):
    assert driver.main(["--profile", "smoke", "--chapters", "99"]) == 2
    assert "unknown chapters" in capsys.readouterr().err
    assert driver.main(["--profile", "fast"]) == 2
    assert "unknown profile" in capsys.readouterr().err


def test_select_chapters():
    available = {"04": Path("04_x.ipynb"), "06": Path("06_y.ipynb")}
    assert driver.select_chapters("4", available) == ["04"]
    assert driver.select_chapters("all", available) == ["04", "06"]
    with pytest.raises(ValueError):
        driver.select_chapters("05", available)


def test_chapter_notebooks_accepts_letter_suffixed_ids(tmp_path):
    for name in ("02_tempbalance.ipynb", "02b_htsr_pruning.ipynb", "04_directedness.ipynb",
                 "README.md", "x_02.ipynb", "2_short.ipynb", "02b_notes.txt"):
        (tmp_path / name).write_text("")
    found = driver.chapter_notebooks(tmp_path)
    assert found == {"02": tmp_path / "02_tempbalance.ipynb",
                     "02b": tmp_path / "02b_htsr_pruning.ipynb",
                     "04": tmp_path / "04_directedness.ipynb"}
    assert driver.select_chapters("2,02b", found) == ["02", "02b"]
    assert driver.select_chapters(" 02b , 4 ", found) == ["02b", "04"]
    assert driver.select_chapters(None, found) == ["02", "02b", "04"]
    for bad in ("02c", "03", "2,02x"):
        with pytest.raises(ValueError, match="unknown chapters"):
            driver.select_chapters(bad, found)
