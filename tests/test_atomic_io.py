"""Tests of `lalr_core.core.atomic_io`: atomic writers and canonical JSON.

Oracles: the bytes on disk, the directory listing (no temporary file left), processes that
die mid-write, and canonical JSON spelled out by hand.
"""

import concurrent.futures
import dataclasses
import enum
import json
import multiprocessing
import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch

from lalr_core.core import atomic_io
from lalr_core.core.atomic_io import (
    atomic_torch_save,
    atomic_write,
    atomic_write_bytes,
    atomic_write_text,
    canonical_json,
    temp_file,
    to_canonical,
)

# ---------------------------------------------------------------- writers


def test_write_bytes_and_text(tmp_path):
    path = tmp_path / "new" / "dir" / "f.bin"
    assert atomic_write_bytes(path, b"\x00\x01abc") == path
    assert path.read_bytes() == b"\x00\x01abc"
    atomic_write_text(path, "h\u00e9llo\nw\n")  # replaces; UTF-8, "\n" kept as is
    assert path.read_bytes() == "h\u00e9llo\nw\n".encode("utf-8")
    assert os.listdir(path.parent) == ["f.bin"]  # no temporary file left
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # like a plain open()


def test_temp_names_are_hidden_unique_and_carry_the_pid(tmp_path):
    target = tmp_path / "out.json"
    names = [temp_file(target) for _ in range(50)]
    assert len({n.name for n in names}) == 50 and all(n.is_file() for n in names)
    for n in names:
        assert n.parent == tmp_path and n.name.startswith(".out.json.") and n.suffix == ".tmp"
        assert n.name.split(".")[3] == str(os.getpid())
    script = ("import sys; from lalr_core.core.atomic_io import temp_file; "
              "print(temp_file(sys.argv[1]).name)")
    child = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True,
                           text=True, check=True, timeout=60).stdout.strip()
    assert child.split(".")[3] != str(os.getpid()) and child not in {n.name for n in names}


def test_temp_file_never_reuses_an_existing_name(tmp_path, monkeypatch):
    tokens = iter(["aa", "aa", "bb"])
    monkeypatch.setattr(atomic_io.secrets, "token_hex", lambda n: next(tokens))
    first, second = temp_file(tmp_path / "x"), temp_file(tmp_path / "x")
    assert first.name.endswith(".aa.tmp") and second.name.endswith(".bb.tmp")


def test_failed_write_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "old")

    def half_then_fail(tmp):
        tmp.write_text("ne")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(path, half_then_fail)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]
    with pytest.raises(TypeError):
        atomic_write_bytes(path, 12.5)  # not bytes: fails before touching anything
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]


def test_killed_write_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "old")
    script = (
        "import os, sys; from lalr_core.core.atomic_io import atomic_write\n"
        "def die(tmp):\n"
        "    tmp.write_text('half'); os._exit(9)\n"
        "atomic_write(sys.argv[1], die)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                          timeout=60, check=False)
    assert proc.returncode == 9, proc.stderr.decode()
    assert path.read_text() == "old"
    left = sorted(set(os.listdir(tmp_path)) - {"f.txt"})
    assert len(left) == 1 and left[0].startswith(".f.txt.")  # hidden, never the target


def test_torch_save_round_trip_and_failure(tmp_path):
    path = tmp_path / "ckpt.pt"
    state = {"w": torch.arange(6.0).reshape(2, 3), "epoch": 3}
    atomic_torch_save(state, path)
    back = torch.load(path, weights_only=False)
    assert torch.equal(back["w"], state["w"]) and back["epoch"] == 3
    old = path.read_bytes()
    with pytest.raises((pickle.PicklingError, AttributeError)):  # a lambda: fails mid-way
        atomic_torch_save({"w": state["w"], "f": lambda: 0}, path)
    assert path.read_bytes() == old and os.listdir(tmp_path) == ["ckpt.pt"]


def _write_many(path: str, tag: int, n: int) -> None:
    for i in range(n):
        atomic_write_bytes(path, bytes([tag]) * 100_000 + str(i).encode())


def test_concurrent_writers_of_one_path(tmp_path):
    """Processes and threads writing one path: every read sees one whole write."""
    path = tmp_path / "shared.bin"
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as procs, \
            concurrent.futures.ThreadPoolExecutor(2) as threads:
        jobs = [procs.submit(_write_many, str(path), tag, 15) for tag in (1, 2)]
        jobs += [threads.submit(_write_many, str(path), tag, 15) for tag in (3, 4)]
        while not all(j.done() for j in jobs):
            if path.exists():
                data = path.read_bytes()
                assert len(set(data[:100_000])) == 1 and int(data[100_000:]) < 15
        for j in jobs:
            j.result()
    data = path.read_bytes()
    assert data[0] in (1, 2, 3, 4) and data == bytes([data[0]]) * 100_000 + b"14"
    assert os.listdir(tmp_path) == ["shared.bin"]


# ---------------------------------------------------------------- canonical JSON


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Opt:
    lr: float
    betas: tuple


def test_canonical_json_by_hand():
    obj = {"z": (1, 2.5, (3,)), "a": {"y": np.float64(0.1), "b": np.int64(3),
                                      "n": np.bool_(True)},
           "arr": np.array([[1, 2]]), "p": pathlib.PurePosixPath("data/x.csv"),
           "e": Color.RED, "opt": Opt(1e-3, (0.9, 0.99)), "d": torch.float32, "none": None}
    expected = ('{"a":{"b":3,"n":true,"y":0.1},"arr":[[1,2]],"d":"torch.float32","e":"red",'
                '"none":null,"opt":{"betas":[0.9,0.99],"lr":0.001},"p":"data/x.csv",'
                '"z":[1,2.5,[3]]}')
    assert canonical_json(obj) == expected
    assert json.loads(expected) == to_canonical(obj)
    assert canonical_json({"b": 1, "a": 1.0}) == '{"a":1.0,"b":1}'  # 1 and 1.0 stay apart
    assert canonical_json([float("nan"), 0.1 + 0.2]) == "[NaN,0.30000000000000004]"
    assert type(to_canonical(np.float32(0.5))) is float


def test_canonical_json_rejects_what_it_cannot_hash():
    with pytest.raises(ValueError, match=r"opt\.fn"):
        canonical_json({"opt": {"fn": object()}})
    with pytest.raises(ValueError, match=r"seeds\[1\]"):
        to_canonical([0, {1, 2}], "seeds")
    with pytest.raises(ValueError, match="keys must be str"):
        canonical_json({"lrs": {0: 0.1}})
