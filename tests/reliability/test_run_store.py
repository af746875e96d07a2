"""Reliability of the run store: orphaned sweep workers, checksummed
checkpoints, one computation per unit across processes, and the cache's leftovers.

Oracles: pids read from /proc, a counter file every real computation appends a line to
(``O_APPEND``, so it works across processes), a fresh run's exact history, and file listings.
Processes that must die (or race) are subprocesses running this module's units.
"""

import hashlib
import json
import logging
import os
import pathlib
import pickle
import re
import signal
import subprocess
import sys
import threading
import time
import warnings

import pytest

from lalr_core.core import atomic_io
from lalr_core.core.runs import RunCache, cached

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROC = pathlib.Path("/proc")


# ---------------------------------------------------------------- units (imported by subprocesses)


def slow_unit(params: dict) -> int:
    """Leave ``<marks>/<i>-<pid>`` and sleep ``params["sleep"]`` seconds."""
    pathlib.Path(params["marks"], f"{params['i']}-{os.getpid()}").touch()
    time.sleep(params["sleep"])
    return params["i"]


def counting_unit(params: dict) -> dict:
    """Append this pid to the counter, wait while ``params["hold"]`` exists (at most 60 s),
    then 0.5 s more; the result names the process that computed it."""
    fd = os.open(params["counter"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    deadline = time.monotonic() + 60
    while params.get("hold") and os.path.exists(params["hold"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    return {"rep": params["rep"], "pid": os.getpid()}


def counted(counter: pathlib.Path) -> list[int]:
    return [int(p) for p in counter.read_text().split()] if counter.exists() else []


def run_script(body: str) -> list[str]:
    """argv running `body` with this directory importable (its units pickle by module name)."""
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r})\n{body}"]


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


# ---------------------------------------------------------------- /proc helpers


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name, or None when the process is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def alive(pid: int) -> bool:
    """Running (a zombie left for a non-reaping init counts as dead)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def children(pid: int) -> list[int]:
    kids = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) and int(fields[1]) == pid:
            kids.append(int(entry.name))
    return kids


def cmdline(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


# ---------------------------------------------------------------- item 1: orphaned workers


@pytest.mark.skipif(not PROC.is_dir(), reason="finds the workers through /proc")
def test_sweep_workers_and_resource_tracker_die_with_a_killed_parent(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    grid = [{"i": i, "marks": str(marks), "sleep": 120} for i in range(4)]
    body = ("from test_run_store import slow_unit\n"
            "from lalr_core.core.runs import RunCache, sweep\n"
            f"sweep(slow_unit, {grid!r}, name='slow', workers=2, threads=1, progress=False, "
            f"cache=RunCache({str(tmp_path / 'runs')!r}, version='t'))\n")
    parent = subprocess.Popen(run_script(body), cwd=REPO, stderr=subprocess.DEVNULL)
    kids: list[int] = []
    try:
        wait_for(lambda: len(os.listdir(marks)) >= 2 or parent.poll() is not None, 90,
                 "two workers to start their units")
        workers = {int(p.name.split("-")[1]) for p in marks.iterdir()}
        kids = children(parent.pid)
        assert len(workers) == 2 and workers <= set(kids), (workers, kids)
        trackers = [k for k in kids if "resource_tracker" in cmdline(k)]
        assert trackers, [cmdline(k) for k in kids]  # the pool started one
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while any(alive(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = {k: cmdline(k) for k in kids if alive(k)}
        assert not left, f"still running after the parent's death: {left}"
    finally:
        for pid in [parent.pid, *kids]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        parent.wait(10)


# ---------------------------------------------------------------- item 2: checksummed checkpoints


class _Stop(Exception):
    pass


class _StopAfter:
    """Raise at the end of epoch `n` (a kill after the checkpoint of an earlier epoch)."""

    name = "stop_after"

    def __init__(self, n: int):
        self.n = n

    def on_epoch_end(self, model, row):
        if row["epoch"] == self.n:
            raise _Stop


class _Epochs:
    name = "epochs"

    def __init__(self):
        self.seen = []

    def on_epoch_end(self, model, row):
        self.seen.append(row["epoch"])


def _tiny_cfg():
    from lalr_core.core.loop.config import RunConfig  # lazy: subprocesses import this module

    return RunConfig(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16,
                     model="mlp", batch_size=16, epochs=4, device="cpu", eval_batch_size=32)


@pytest.mark.parametrize("damage", ["flip", "no_checksum"])
def test_damaged_checkpoint_is_discarded_and_the_run_restarts(tmp_path, damage):
    import pandas as pd
    import torch

    from lalr_core.core.loop.train import train

    cfg = _tiny_cfg()
    fresh = train(cfg, progress=False)
    with pytest.raises(_Stop):
        train(cfg, callbacks=[_StopAfter(3)], progress=False, checkpoint_dir=tmp_path,
              checkpoint_every=2)
    path = tmp_path / "checkpoint.pt"
    if damage == "flip":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x10
        path.write_bytes(bytes(data))
        torch.load(path, weights_only=False)  # the damage is silent: it still loads
    else:  # a checkpoint that cannot be verified
        for p in tmp_path.iterdir():
            if p != path:
                p.unlink()
    epochs = _Epochs()
    with pytest.warns(RuntimeWarning, match=re.escape(str(path))):
        resumed = train(cfg, callbacks=[epochs], progress=False, checkpoint_dir=tmp_path,
                        checkpoint_every=2)
    assert epochs.seen == [1, 2, 3, 4]  # restarted from scratch, nothing loaded
    pd.testing.assert_frame_equal(resumed["history"].drop(columns="time_s"),
                                  fresh["history"].drop(columns="time_s"))
    pd.testing.assert_frame_equal(resumed["steps"], fresh["steps"])


def test_checkpoint_round_trip_and_resume_unchanged(tmp_path):
    """An intact checkpoint still resumes (no warning), and the file is a plain torch file."""
    import torch

    from lalr_core.core.loop.train import train

    cfg = _tiny_cfg()
    with pytest.raises(_Stop):
        train(cfg, callbacks=[_StopAfter(3)], progress=False, checkpoint_dir=tmp_path,
              checkpoint_every=2)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=False)["state"]["epoch"] == 2
    epochs = _Epochs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        train(cfg, callbacks=[epochs], progress=False, checkpoint_dir=tmp_path,
              checkpoint_every=2)
    assert epochs.seen == [3, 4]


def test_checksummed_write_killed_between_its_two_files_leaves_a_valid_pair(tmp_path,
                                                                            monkeypatch):
    path = tmp_path / "state.bin"
    atomic_io.atomic_write_checked(path, b"old state")
    assert atomic_io.read_checked(path) == b"old state"
    real = atomic_io.atomic_write_bytes

    def die_on_data(target, data):
        if pathlib.Path(target) == path:  # the digest file went first; die before the data
            raise KeyboardInterrupt
        return real(target, data)

    monkeypatch.setattr(atomic_io, "atomic_write_bytes", die_on_data)
    with pytest.raises(KeyboardInterrupt):
        atomic_io.atomic_write_checked(path, b"new state")
    monkeypatch.undo()
    assert atomic_io.read_checked(path) == b"old state"  # the old data still verifies
    atomic_io.atomic_write_checked(path, b"new state")
    assert atomic_io.read_checked(path) == b"new state"
    path.write_bytes(b"new statf")
    with pytest.raises(ValueError, match="checksum"):
        atomic_io.read_checked(path)


# ---------------------------------------------------------------- item 3: one computation per unit


_RACE = """
import json, os, pathlib, time
from test_run_store import counting_unit
from lalr_core.core.runs import RunCache, cached
tmp, me, n = pathlib.Path({tmp!r}), {me}, {n}
cache = RunCache(tmp / "runs", version="t")
out = []
for rep in range(3):
    ready = tmp / f"ready-{{rep}}"
    ready.mkdir(exist_ok=True)
    (ready / str(me)).touch()
    deadline = time.monotonic() + 60
    while len(os.listdir(ready)) < n and time.monotonic() < deadline:  # start together
        time.sleep(0.01)
    params = {{"rep": rep, "counter": str(tmp / f"counter-{{rep}}")}}
    out.append(cached(counting_unit, params, name="race", cache=cache))
print(json.dumps(out))
"""


def test_processes_racing_for_one_unit_compute_it_once(tmp_path):
    n = 4
    procs = [subprocess.Popen(run_script(_RACE.format(tmp=str(tmp_path), me=i, n=n)), cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * n, [err for _, err in outs]
    results = [json.loads(out) for out, _ in outs]
    for rep in range(3):
        computed = counted(tmp_path / f"counter-{rep}")
        assert len(computed) == 1, f"rep {rep} computed by {computed}"
        assert [r[rep] for r in results] == [{"rep": rep, "pid": computed[0]}] * n
    left = os.listdir(tmp_path / "runs" / "race")
    assert len(left) == 3 and not any(name.startswith(".") for name in left), left


def test_a_killed_lock_holder_does_not_block_the_unit(tmp_path, caplog, monkeypatch):
    from lalr_core.core.runs import locks

    monkeypatch.setattr(locks, "NOTICE_AFTER_S", 0.2)
    hold, counter = tmp_path / "hold", tmp_path / "counter"
    hold.touch()
    params = {"rep": 0, "counter": str(counter), "hold": str(hold)}
    cache = RunCache(tmp_path / "runs", version="t")
    body = ("from test_run_store import counting_unit\n"
            "from lalr_core.core.runs import RunCache, cached\n"
            f"cached(counting_unit, {params!r}, name='held', "
            f"cache=RunCache({str(cache.root)!r}, version='t'))\n")
    holder = subprocess.Popen(run_script(body), cwd=REPO, stderr=subprocess.DEVNULL)
    out: list = []
    try:
        wait_for(lambda: counted(counter) or holder.poll() is not None, 60, "the holder to start")
        assert counted(counter) == [holder.pid]
        caplog.set_level(logging.INFO, logger="lalr_core.core.runs")
        waiter = threading.Thread(target=lambda: out.append(
            cached(counting_unit, params, name="held", cache=cache)))
        waiter.start()
        time.sleep(1.0)
        assert counted(counter) == [holder.pid] and not out  # waits, does not compute
        assert f"computed by pid {holder.pid}" in caplog.text
        holder.send_signal(signal.SIGKILL)  # dies mid-compute, holding the lock
        holder.wait(10)
        hold.unlink()
        waiter.join(30)
        assert not waiter.is_alive()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    assert counted(counter) == [holder.pid, os.getpid()]
    assert out == [{"rep": 0, "pid": os.getpid()}]
    assert cached(counting_unit, params, name="held", cache=cache) == out[0]


# ---------------------------------------------------------------- item 7: size report and prune


def _age(path: pathlib.Path, seconds: float) -> None:
    then = time.time() - seconds
    for p in [path, *path.rglob("*")]:
        os.utime(p, (then, then))


def test_du_reports_and_prune_removes_moved_aside_entries_and_stale_leftovers(tmp_path):
    cache = RunCache(tmp_path / "runs", version="t")
    good = cache.put("u", {"a": 1}, list(range(1000)))
    bad = cache.put("u", {"a": 2}, list(range(1000)))
    (bad / "result.pkl").write_bytes(b"damaged")
    with pytest.warns(RuntimeWarning, match="corrupt cache entry"):
        assert cache.lookup("u", {"a": 2}) == (False, None)
    name_dir = good.parent
    moved = [p for p in name_dir.iterdir() if p.name.startswith(".corrupt-")]
    assert len(moved) == 1
    stale_tmp = name_dir / f".tmp-{good.name}-999999-abc"
    stale_tmp.mkdir()
    (stale_tmp / "result.pkl").write_bytes(b"x" * 100)
    _age(stale_tmp, 2 * 86400)
    fresh_tmp = name_dir / f".tmp-{good.name}-999998-def"  # may be a live writer's: kept
    fresh_tmp.mkdir()
    resumable = cache.checkpoint_dir("u", {"a": 3})  # a unit still to finish: kept
    (resumable / "checkpoint.pt").write_bytes(b"c" * 10)
    finished = name_dir / f".ckpt-{good.name}"  # its entry exists: a leftover
    finished.mkdir()
    (finished / "checkpoint.pt").write_bytes(b"c" * 10)
    stale_lock = name_dir / f".lock-{good.name}"  # no holder: a killed process's
    stale_lock.write_text("12345 elsewhere\n")

    report = cache.du()
    assert report["corrupt"]["count"] == 1 and report["corrupt"]["bytes"] > 0
    assert report["entries"]["count"] == 1 and report["stale_temp"]["count"] == 1
    assert report["temp"]["count"] == 1 and report["checkpoints"]["count"] == 1
    assert report["finished_checkpoints"]["count"] == 1 and report["stale_locks"]["count"] == 1
    assert report["total"]["bytes"] == sum(v["bytes"] for k, v in report.items() if k != "total")

    removed = cache.prune()
    assert sorted(removed) == sorted([moved[0], stale_tmp, finished, stale_lock])
    assert sorted(p.name for p in name_dir.iterdir()) == sorted(
        [good.name, fresh_tmp.name, resumable.name])
    assert cache.lookup("u", {"a": 1}) == (True, list(range(1000)))  # valid entry untouched
    after = cache.du()
    assert after["corrupt"]["count"] == after["stale_temp"]["count"] == 0
    assert after["entries"] == report["entries"]


def _cli(cache: RunCache, *args: str) -> str:
    """``python -m lalr_core.core.runs <args> --root <cache>``'s output (it must succeed)."""
    done = subprocess.run([sys.executable, "-m", "lalr_core.core.runs", *args,
                           "--root", str(cache.root)], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_cli_du_and_prune(tmp_path):
    cache = RunCache(tmp_path / "runs", version="t")
    cache.put("u", {"a": 1}, "ok")
    moved = cache.root / "u" / f".corrupt-{'0' * 16}-20240101T000000000000"
    moved.mkdir()
    (moved / "result.pkl").write_bytes(b"z" * 2048)

    def cli(*args):
        return _cli(cache, *args)

    assert re.search(r"corrupt\s+1\s", cli("du"))
    assert moved.exists()
    assert str(moved) in cli("prune", "--dry-run") and moved.exists()
    assert str(moved) in cli("prune") and not moved.exists()
    assert re.search(r"corrupt\s+0\s", cli("du"))
    assert cache.get("u", {"a": 1}) == "ok"


@pytest.mark.parametrize("damage", ["truncate", "swapped", "bad_meta", "not_a_pickle"])
def test_verify_finds_entries_damaged_in_place_and_prune_removes_only_them(tmp_path, damage):
    """Without --verify an entry damaged in place counts as valid (du reads no checksum);
    with it, du counts it apart and prune removes it, leaving every valid entry."""
    cache = RunCache(tmp_path / "runs", version="t")
    good = [cache.put("u", {"a": i}, list(range(100 * i))) for i in (1, 2)]
    bad = cache.put("u", {"a": 3}, list(range(300)))
    pkl, meta = bad / "result.pkl", bad / "meta.json"
    if damage == "truncate":
        pkl.write_bytes(pkl.read_bytes()[:-9])
    elif damage == "swapped":
        pkl.write_bytes(pickle.dumps([0, 1, 2]))
    elif damage == "bad_meta":
        meta.write_text("{not json")
    else:  # the checksum matches, but the bytes are no pickle
        junk = b"not a pickle"
        pkl.write_bytes(junk)
        record = json.loads(meta.read_text())
        meta.write_text(json.dumps({**record, "result_sha256": hashlib.sha256(junk).hexdigest()}))
    assert cache.du()["entries"]["count"] == 3 and cache.du()["damaged"]["count"] == 0
    checked = cache.du(verify=True)
    assert checked["entries"]["count"] == 2 and checked["damaged"]["count"] == 1
    assert cache.prune() == [] and bad.exists()
    assert cache.prune(verify=True, dry_run=True) == [bad] and bad.exists()
    assert cache.prune(verify=True) == [bad] and not bad.exists()
    assert all(p.exists() for p in good)
    assert [cache.get("u", {"a": i}) for i in (1, 2)] == [list(range(100)), list(range(200))]


def test_cli_verify(tmp_path):
    cache = RunCache(tmp_path / "runs", version="t")
    cache.put("u", {"a": 1}, "ok")
    bad = cache.put("u", {"a": 2}, "soon damaged")
    (bad / "result.pkl").write_bytes(b"x")

    def cli(*args):
        return _cli(cache, *args)

    assert re.search(r"damaged\s+0\s", cli("du")) and re.search(r"entries\s+2\s", cli("du"))
    assert re.search(r"damaged\s+1\s", cli("du", "--verify"))
    assert str(bad) in cli("prune", "--verify") and not bad.exists()
    assert cache.get("u", {"a": 1}) == "ok"
