"""Tests of lalr_core.core.results.writer, lalr_core.core.results.provenance and lalr_core.core.report.

Oracles: numpy percentiles for the Tufte box plot, PIL reading back the PNG text chunks,
the PDF bytes for its metadata, pandas reading back the CSV, hashlib for the parameter hash.
"""

import csv
import json
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from PIL import Image

from lalr_core.core.results import provenance

from lalr_core.core.results import inventory, report, style
from lalr_core.core.results import writer as writer_module
from lalr_core.core.results.writer import FigureWriter, markdown_table, param_hash
from lalr_core.core.results.plots import bplot

CHAPTER = "04_directedness"


@pytest.fixture
def writer(tmp_path):
    return FigureWriter(CHAPTER, "smoke", "04_directedness.ipynb", root=tmp_path)


@pytest.fixture
def small_fig():
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1, 2], [1, 0, 1])
    yield fig
    plt.close(fig)


def _write_inventory(path, items):
    with open(path, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(inventory.INVENTORY_COLUMNS)
        for item_id, kind in items:
            out.writerow([CHAPTER, item_id, kind, f"caption of {item_id}", f"claim of {item_id}",
                          "psi ~ 0.15"])
    return path


# ----------------------------------------------------------------------------- bplot
def test_bplot_whiskers_and_median_match_numpy_percentiles():
    rng = np.random.default_rng(0)
    data = rng.normal(size=101) * 3 + 1
    fig, ax = plt.subplots()
    lower, upper, _ = bplot(ax, 2, data, offset=0.25, s=4, color="black")
    lines = ax.get_lines()
    assert len(lines) == 2 and lines[0] is lower and lines[1] is upper
    lo, q1, med, q3, hi = (np.min(data), np.percentile(data, 25), np.median(data),
                           np.percentile(data, 75), np.max(data))
    np.testing.assert_allclose(lower.get_xdata(), [2.25, 2.25])
    np.testing.assert_allclose(lower.get_ydata(), [lo, q1])
    np.testing.assert_allclose(upper.get_ydata(), [q3, hi])
    assert lower.get_linewidth() == pytest.approx(2.0)  # s / 2
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(scatters) == 1
    np.testing.assert_allclose(scatters[0].get_offsets(), [[2.25, med]])
    np.testing.assert_allclose(scatters[0].get_sizes(), [12.0])  # 3 * s
    plt.close(fig)


def test_bplot_takes_colour_from_first_line():
    fig, ax = plt.subplots()
    lower, upper, dots = bplot(ax, 1, [1.0, 2.0, 3.0, 4.0], label="a")
    rgba = matplotlib.colors.to_rgba(lower.get_color())
    assert matplotlib.colors.to_rgba(upper.get_color()) == rgba
    np.testing.assert_allclose(dots.get_facecolor()[0], rgba)
    assert [h.get_label() for h in ax.get_legend_handles_labels()[0]] == ["a"]
    with pytest.raises(ValueError, match="empty"):
        bplot(ax, 1, [])
    with pytest.raises(ValueError, match="non-finite"):
        bplot(ax, 1, [1.0, np.nan])
    plt.close(fig)


def test_set_style_is_explicit_and_hides_spines():
    before = matplotlib.rcParams["axes.spines.top"]
    with style.house_style():
        fig, ax = plt.subplots()
        assert not ax.spines["top"].get_visible() and not ax.spines["right"].get_visible()
        assert matplotlib.rcParams["savefig.dpi"] == 150
        plt.close(fig)
    assert matplotlib.rcParams["axes.spines.top"] == before  # context restores


# ----------------------------------------------------------------------------- provenance
def test_git_info_outside_repo_is_unknown(tmp_path):
    info = provenance.git_info(tmp_path, refresh=True)
    assert info == {"commit": "unknown", "dirty": None}


def test_git_info_reads_a_real_commit(tmp_path):
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}

    def git(*args):
        done = subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True,
                              capture_output=True, text=True)
        return done.stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("x")
    git("add", "a.txt")
    git("commit", "-q", "-m", "m")
    head = git("rev-parse", "HEAD")
    assert provenance.git_info(tmp_path, refresh=True) == {"commit": head, "dirty": False}
    (tmp_path / "a.txt").write_text("y")
    assert provenance.git_info(tmp_path)["dirty"] is False  # cached per process
    assert provenance.git_info(tmp_path, refresh=True)["dirty"] is True


def test_provenance_fields_and_reserved_keys():
    record = provenance.provenance(notebook="nb.ipynb")
    env = record["environment"]
    assert env["lalr_core"] and env["numpy"] == np.__version__
    assert "cpu" in env["device"] and record["notebook"] == "nb.ipynb"
    assert record["timestamp_utc"].endswith("+00:00")
    with pytest.raises(ValueError, match="reserved"):
        provenance.provenance(commit="x")


# ----------------------------------------------------------------------------- savefig
def test_savefig_writes_png_pdf_sidecar_with_commit(writer, small_fig, monkeypatch):
    fake = {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": True}
    monkeypatch.setattr(writer_module, "git_info", lambda: dict(fake))
    monkeypatch.setattr(provenance, "git_info", lambda: dict(fake))
    params = {"lr": 0.05, "seeds": [0, 1], "dtype": np.float64(1.5)}
    out = writer.savefig(small_fig, "fig3.11", params=params, seeds=[0, 1], wall_time_s=1.5)
    assert set(out) == {"png", "pdf", "json"} and all(p.is_file() for p in out.values())
    assert out["png"] == writer.dir / "fig3.11.png"
    side = json.loads(out["json"].read_text())
    assert side["commit"] == fake["commit"] and side["dirty"] is True
    assert side["param_hash"] == param_hash(params) and side["seeds"] == [0, 1]
    assert side["profile"] == "smoke" and side["chapter"] == CHAPTER
    assert side["notebook"] == "04_directedness.ipynb" and side["wall_time_s"] == 1.5
    with Image.open(out["png"]) as image:
        assert image.text["Commit"] == fake["commit"] and image.text["Dirty"] == "True"
    assert fake["commit"].encode() in out["pdf"].read_bytes()  # PDF info dict is plain text
    assert not list(writer.dir.glob("*.tmp"))  # temp files renamed away


def test_param_hash_is_canonical():
    a = {"lr": 0.1, "sched": {"gamma": 0.1, "milestones": [100, 150]}}
    b = {"sched": {"milestones": [100, 150], "gamma": 0.1}, "lr": 0.1}
    assert param_hash(a) == param_hash(b)
    assert param_hash(a) != param_hash({**a, "lr": 0.2})
    # canonical JSON oracle: tests/test_runs.py
    from lalr_core.core.runs import param_hash as run_key

    assert param_hash(a) == run_key(a)  # = the param_hash in the cached runs' meta.json
    assert len(param_hash(None)) == 16
    with pytest.raises(ValueError, match="f"):
        param_hash({"f": object()})


def test_writes_go_through_atomic_io(writer, small_fig, monkeypatch):
    from lalr_core.core import atomic_io

    assert writer_module.atomic_write_text is atomic_io.atomic_write_text  # kept importable here
    assert writer_module.canonical_json is atomic_io.canonical_json
    out = writer.savefig(small_fig, "fig1", seeds=[0])
    old = {k: p.read_bytes() for k, p in out.items()}

    def broken_savefig(path, **kwargs):
        with open(path, "wb") as fh:
            fh.write(b"half a png")
        raise OSError("disk full")

    monkeypatch.setattr(small_fig, "savefig", broken_savefig)
    with pytest.raises(OSError, match="disk full"):
        writer.savefig(small_fig, "fig1", seeds=[0])
    assert {k: p.read_bytes() for k, p in out.items()} == old  # the old files are intact
    assert sorted(p.name for p in writer.dir.iterdir()) == ["fig1.json", "fig1.pdf", "fig1.png"]
    with pytest.raises(ValueError, match=r"seeds\[1\]"):  # canonical JSON, before any write
        writer.savefig(small_fig, "fig2", seeds=[0, object()])
    assert not writer.path("fig2", "png").exists()


# ----------------------------------------------------------------------------- tables
def test_save_table_csv_round_trip_and_markdown(writer):
    df = pd.DataFrame({"optimiser": ["SGDM", "Orth|SGDM", "Adam"],
                       "acc": [91.45, 92.08123456, np.nan], "runs": [5, 5, 1]})
    out = writer.save_table(df, "table5.1", params={"p": 1}, floatfmt=".2f")
    back = pd.read_csv(out["csv"])
    pd.testing.assert_frame_equal(back, df)
    md = out["md"].read_text().strip().splitlines()
    assert len(md) == 2 + len(df)
    assert md[0] == "| optimiser | acc | runs |" and md[1] == "|---|---:|---:|"
    assert md[3] == r"| Orth\|SGDM | 92.08 | 5 |" and md[4] == "| Adam |  | 1 |"
    assert json.loads(out["json"].read_text())["kind"] == "table"


def test_save_table_keeps_a_named_index(writer):
    df = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.Index(["a", "b"], name="model"))
    back = pd.read_csv(writer.save_table(df, "t")["csv"])
    assert list(back.columns) == ["model", "x"] and list(back["model"]) == ["a", "b"]
    assert markdown_table(df.reset_index()).splitlines()[2] == "| a | 1 |"


# ----------------------------------------------------------------------------- checks
def test_check_records_dedups_and_never_raises_on_fail(writer):
    r1 = writer.check("fig3.11", "psi tracks 1/sqrt(t)", False, kind="claim", detail="12% off",
                      ours=np.float64(0.11), source=0.1, replicates=3)
    assert r1["verdict"] == "FAIL" and r1["ours"] == 0.11
    writer.check("fig3.11", "psi tracks 1/sqrt(t)", np.bool_(True), kind="claim", ours=0.1,
                 source=0.1, replicates=3)
    writer.check("fig3.7A", "spikes at LR drops", None, kind="claim",
                 detail="no LR schedule at smoke")
    records = writer.checks()
    assert [(r["item_id"], r["verdict"]) for r in records] == [("fig3.11", "PASS"),
                                                                ("fig3.7A", "N/A")]
    on_disk = json.loads(writer.checks_path.read_text())
    assert on_disk == records
    with pytest.raises(ValueError, match="detail"):
        writer.check("fig3.7A", "x", None, kind="claim")
    with pytest.raises(ValueError, match="passed"):
        writer.check("fig3.7A", "x", 1, kind="claim")
    with pytest.raises(ValueError, match="kind"):
        writer.check("fig3.7A", "x", True, kind="proxy")
    with pytest.raises(TypeError):
        writer.check("fig3.7A", "x", True)  # every check says what it is


# ----------------------------------------------------------------------------- report
def test_build_report_lists_present_missing_and_counts(tmp_path, writer, small_fig):
    inv = _write_inventory(tmp_path / "inv.csv", [("fig3.10", "figure"), ("fig3.11", "figure"),
                                                  ("table9", "table")])
    writer.savefig(small_fig, "fig3.11")
    writer.check("fig3.11", "psi tracks 1/sqrt(t)", True, kind="claim", detail="within 5%",
                 ours=0.1, source=0.1, replicates=3)
    writer.check("fig3.11", "second claim", False, kind="claim", detail="off", replicates=3)
    writer.check("figX", "extra claim", None, kind="claim", detail="data missing")
    writer.check("table9", "rows sum to one", True, kind="sanity")
    (tmp_path / "smoke" / "timings.json").write_text(
        json.dumps([{"notebook": "04_directedness.ipynb", "seconds": 12.5, "status": "ok"}]))
    path = report.build_report("smoke", root=tmp_path, inventory=inv)
    assert path == tmp_path / "smoke" / "REPORT.md"
    text = path.read_text()
    assert "3 in the inventory, 1 present, 2 missing" in text
    assert "- claim tests (the verdicts): 3: 1 PASS, 1 FAIL, 0 INCONCLUSIVE, 1 N/A" in text
    assert "- sanity checks (not verdicts): 1, 1 hold" in text
    rows = {}  # item -> its table rows, one per claim test
    for line in text.split("## Items")[1].split("## ")[0].splitlines():
        if line.startswith(f"| {CHAPTER} |"):
            rows.setdefault(line.split(" | ")[1], []).append(line)
    first, second = rows[f"[fig3.11]({CHAPTER}.md#fig3.11)"]
    assert f"[png]({CHAPTER}/fig3.11.png)" in first and "caption of fig3.11" in first
    assert "| **PASS** | psi tracks 1/sqrt(t) | 0.1; 3 replicates | 0.1 |" in first
    assert "| **FAIL** | second claim |" in second and "png" not in second
    assert "| missing |" in rows[f"[fig3.10]({CHAPTER}.md#fig3.10)"][0]
    [table9] = rows[f"[table9]({CHAPTER}.md#table9)"]
    assert "| missing |" in table9 and "no claim test (1 sanity checks below)" in table9
    assert "| **PASS** | rows sum to one |" in text.split("## Sanity checks")[1]
    other = text.split("## Other checks")[1]
    assert f"[figX]({CHAPTER}.md#figX)" in other and "| **N/A** | extra claim |" in other
    # the long texts are on the chapter's page, beside REPORT.md
    page = (tmp_path / "smoke" / f"{CHAPTER}.md").read_text()
    assert "How: within 5%" in page and "How: data missing" in page
    assert "| 04_directedness.ipynb | 12.5 | ok |" in text


def test_report_cli(tmp_path):
    inv = _write_inventory(tmp_path / "inv.csv", [("fig1.2", "figure")])
    done = subprocess.run([sys.executable, "-m", "lalr_core.core.results.report", "--profile", "quick",
                           "--root", str(tmp_path), "--inventory", str(inv)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(tmp_path / "quick" / "REPORT.md")
    assert "0 present, 1 missing" in (tmp_path / "quick" / "REPORT.md").read_text()


def test_repo_inventory_is_well_formed():
    rows = inventory.read_inventory(inventory.default_inventory())
    ids = [r["item_id"] for r in rows if r["chapter"] == CHAPTER]
    assert len(ids) == 22 and {"fig1.2", "fig3.7A", "figA.1B", "E13"} <= set(ids)
    assert all(r["source_claim"] and r["caption"] for r in rows)


def test_inventory_holds_every_lalr_claim_with_its_quote():
    from lalr_core.chapters.ch01_lalr import CLAIMS
    rows = {r["item_id"]: r for r in inventory.read_inventory(inventory.default_inventory())
            if r["chapter"] == "01_lalr"}
    for cid, claim in CLAIMS.items():
        row = rows[claim.item]  # a claim's own row, or the check or experiment it belongs to
        assert row["kind"] != "claim" or row["source_claim"] == claim.quote, cid
    assert all(rows[cid]["kind"] == "claim" for cid in CLAIMS if cid.startswith("L-C")
               and "." not in cid)


def test_a_claim_item_links_its_chapters_verdict_table(tmp_path):
    inv = tmp_path / "inv.csv"
    inv.write_text("chapter,item_id,kind,caption,source_claim,source_numbers\n"
                   "01_x,L-C1,claim,what we test,the sentence,\n"
                   "01_x,L-C2,claim,what we test,the sentence,\n", encoding="utf-8")
    text = report.build_report("smoke", root=tmp_path, inventory=inv).read_text()
    assert "2 in the inventory, 0 present, 2 missing" in text
    (tmp_path / "smoke" / "01_x").mkdir(parents=True)
    (tmp_path / "smoke" / "01_x" / "verdicts.md").write_text("| claim |")
    text = report.build_report("smoke", root=tmp_path, inventory=inv).read_text()
    assert "2 in the inventory, 2 present, 0 missing" in text
    assert "[md](01_x/verdicts.md)" in text


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("item_id", ["", "a/b", "a\\b", "../x", ".hidden", "checks", None])
def test_bad_item_id_raises(writer, small_fig, item_id):
    with pytest.raises(ValueError, match="item_id"):
        writer.savefig(small_fig, item_id)
    with pytest.raises(ValueError, match="item_id"):
        writer.check(item_id, "claim", True, kind="claim")


def test_bad_profile_raises(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        FigureWriter(CHAPTER, "full", "nb.ipynb", root=tmp_path)
    with pytest.raises(ValueError, match="profile"):
        report.build_report("Quick", root=tmp_path, inventory=inventory.default_inventory())
    with pytest.raises(ValueError, match="chapter"):
        FigureWriter("a/b", "smoke", "nb.ipynb", root=tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        report.build_report("smoke", root=tmp_path, inventory=tmp_path / "none.csv")


def test_a_new_writer_starts_with_fresh_checks(tmp_path):
    from lalr_core.core.results.writer import FigureWriter

    first = FigureWriter("04_x", "smoke", "nb.ipynb", root=tmp_path)
    first.check("fig1", "old claim", True, kind="claim")
    assert len(first.checks()) == 1
    second = FigureWriter("04_x", "smoke", "nb.ipynb", root=tmp_path)
    assert second.checks() == []
    second.check("fig1", "new claim", False, kind="claim")
    kept = FigureWriter("04_x", "smoke", "nb.ipynb", root=tmp_path, fresh_checks=False)
    assert [c["claim"] for c in kept.checks()] == ["new claim"]


def test_default_root_follows_the_drivers_out(tmp_path, monkeypatch):
    from lalr_core.core.results.writer import FIGURES_ENV
    monkeypatch.setenv(FIGURES_ENV, str(tmp_path / "elsewhere"))
    out = FigureWriter("04_x", "smoke", "nb.ipynb")
    assert out.dir == tmp_path / "elsewhere" / "smoke" / "04_x"
    monkeypatch.delenv(FIGURES_ENV)
    assert FigureWriter("04_x", "smoke", "nb.ipynb").root.name == "figures"
