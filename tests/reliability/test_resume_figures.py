"""A whole ``make figures`` killed mid-sweep and run again.

The driver (its papermill kernel and any worker processes with it, one process group) is
SIGKILLed while a chapter's training sweep is running, once some runs have finished; then it
runs again from the same run cache. Oracles: the session's uninterrupted run of the same
chapters from an empty cache (conftest's `smoke_run`), the cache entries themselves (checksums,
file identities before and after) and the figures, tables and verdicts both runs write.
"""

import hashlib
import json
import os
import pathlib
import pickle
import signal
import time

import pytest
from conftest import finish, run_figures

CHAPTER_DIRS = ("02_tempbalance", "04_directedness")  # conftest.SMOKE_CHAPTERS' outputs
TRAIN = "train"


def finished_entries(runs: pathlib.Path) -> dict[str, tuple[int, int, str]]:
    """Entry hash -> (inode of meta.json, its mtime in ns, result checksum) of every visible
    training entry; each entry's checksum is verified and its result unpickled."""
    out = {}
    family = runs / TRAIN
    for entry in sorted(family.iterdir()) if family.is_dir() else []:
        if entry.name.startswith("."):  # temporary entries, checkpoints, locks
            continue
        meta_file, result = entry / "meta.json", entry / "result.pkl"
        meta = json.loads(meta_file.read_text())
        data = result.read_bytes()
        assert hashlib.sha256(data).hexdigest() == meta["result_sha256"], f"corrupt {entry}"
        pickle.loads(data)
        st = meta_file.stat()
        out[entry.name] = (st.st_ino, st.st_mtime_ns, meta["result_sha256"])
    return out


def outputs(out: pathlib.Path) -> dict[str, object]:
    """The chapters' figures and tables (bytes) and verdicts, without times or dates."""
    files, verdicts = {}, []
    for chapter in CHAPTER_DIRS:
        folder = out / "smoke" / chapter
        files |= {f"{chapter}/{p.name}": p.read_bytes() for p in sorted(folder.iterdir())
                  if p.suffix in (".csv", ".md", ".png")}
        verdicts += sorted((chapter, c["item_id"], c["claim"], c["verdict"],
                            json.dumps(c.get("ours"), sort_keys=True))
                           for c in json.loads((folder / "checks.json").read_text()))
    return {"files": files, "verdicts": verdicts}


@pytest.mark.skipif(not pathlib.Path("/proc").is_dir(), reason="POSIX process groups")
def test_killed_make_figures_resumes_reusing_every_finished_run(smoke_run, tmp_path):
    out, runs = tmp_path / "figures", tmp_path / "runs"
    proc = run_figures(out, runs, start_new_session=True)  # own group: kernel, workers too
    try:
        deadline = time.monotonic() + 600
        while len(finished_entries(runs)) < 2:  # mid-sweep: some runs finished, others not
            assert proc.poll() is None, "the driver ended before the sweep could be killed"
            assert time.monotonic() < deadline, "no training run finished in 600 s"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    before = finished_entries(runs)  # every entry complete and readable after the kill
    reference = finished_entries(smoke_run / "runs")
    assert 2 <= len(before) < len(reference), (len(before), len(reference))

    finish(run_figures(out, runs), out)
    after = finished_entries(runs)
    assert set(after) == set(reference)  # the same runs, under the same keys
    for key, ident in before.items():  # reused as they were: not computed (or written) again
        assert after[key] == ident, f"entry {key} was written again"
    ours, expected = outputs(out), outputs(smoke_run / "figures")
    assert ours["verdicts"] == expected["verdicts"]
    assert ours["files"].keys() == expected["files"].keys()
    different = [name for name in ours["files"] if ours["files"][name] != expected["files"][name]]
    assert not different, f"outputs differ from the uninterrupted run: {different}"
