"""Shared fixtures and test callbacks (import them with ``from conftest import ...``)."""

import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest
import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
# The chapters a test's `make figures` runs at smoke: 02 saves figures and tables under literal
# ids and trains a sweep of small runs; 04 builds ids at run time. About 75 s on 2 idle cores.
SMOKE_CHAPTERS = "02,04"
SMOKE_RUN_ENV = "LALR_TEST_SMOKE_RUN"  # a folder this fixture made before: copied, not re-run


def run_figures(out: pathlib.Path, runs: pathlib.Path, chapters: str = SMOKE_CHAPTERS,
                **popen) -> subprocess.Popen:
    """``make figures PROFILE=smoke CHAPTERS=<chapters>`` into ``out`` with the run cache at
    ``runs`` (both usually empty), as a process; its terminal output goes to ``<out>.log``
    (a file, not a pipe nobody reads while it runs)."""
    env = {**os.environ, "LALR_RUNS_ROOT": str(runs), "LALR_FIGURES_ROOT": str(out)}
    with open(f"{out}.log", "a") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "lalr_core.driver", "--profile", "smoke", "--chapters",
             chapters, "--out", str(out), "--notebooks", str(REPO / "notebooks")], cwd=REPO,
            env=env, stdout=log, stderr=subprocess.STDOUT, **popen)


def finish(proc: subprocess.Popen, out: pathlib.Path, timeout: float = 1800) -> str:
    """Wait for a `run_figures` process; its output, after asserting it succeeded."""
    proc.wait(timeout)
    log = pathlib.Path(f"{out}.log").read_text()
    assert proc.returncode == 0, log[-5000:]
    return log


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """A folder with ``figures/`` (executed notebooks, outputs, REPORT.md) and ``runs/`` (the
    run cache) of one uninterrupted ``make figures`` at smoke of `SMOKE_CHAPTERS`, from an
    empty cache. Tests may add files (the book) but must not change what is there."""
    base = tmp_path_factory.mktemp("smoke_run")
    given = os.environ.get(SMOKE_RUN_ENV)
    if given:
        for part in ("figures", "runs"):
            if not (pathlib.Path(given) / part).is_dir():
                raise ValueError(f"${SMOKE_RUN_ENV}={given} holds no {part}/ folder")
            shutil.copytree(pathlib.Path(given) / part, base / part)
        return base
    t0 = time.perf_counter()
    finish(run_figures(base / "figures", base / "runs"), base / "figures")
    print(f"smoke_run fixture: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return base


@pytest.fixture
def one_thread():
    """Run the test with one torch thread (MKL's threaded eigvalsh / svdvals stall for seconds
    per call when the 2 cores are oversubscribed; one thread takes ~20 ms)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


class LRProbe:
    """A training callback that records, at each epoch's end (before LALR's hook: a caller's
    callbacks run first), every tagged param group's lr of the epoch just ended, and the
    weights at the start and after every epoch."""

    name = "probe"

    def __init__(self):
        self.lrs, self.weights = [], []

    def on_optimizer(self, optimizer):
        self.optimizer = optimizer

    def on_train_start(self, model):
        self.weights.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    def on_epoch_end(self, model, row):
        self.lrs += [(row["epoch"], row["lr"], g["layer"], g["lr"])
                     for g in self.optimizer.param_groups if g.get("layer") is not None]
        self.weights.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    def result(self):
        return None
