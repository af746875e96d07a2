"""The Ray executor against a real Ray instance started here (``ray.init(num_cpus=2)``), not a
stand-in: the same results as the local executor, a SIGKILLed worker's unit retried with no
finished unit lost or computed twice, and each task's CPU / GPU reservation.

Oracles: the local executor's results, a counter file every unit appends its start and end to
(``O_APPEND``, shared by all processes), the cache's own entries, and the resources Ray reports
inside a task. Ray's workers import this module's units from this folder (``PYTHONPATH``).
"""

import os
import pathlib
import signal
import threading
import time

import pytest

ray = pytest.importorskip("ray", reason="the distributed extra: pip install -e .[distributed]")

from lalr_core.core.loop.config import RunConfig  # noqa: E402
from lalr_core.core.runs import RunCache, sweep, task_resources  # noqa: E402
from lalr_core.core.runs.units import train_runs  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


# ---------------------------------------------------------------- units (imported by Ray workers)


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, f"{line}\n".encode())
    os.close(fd)


def held_unit(params: dict) -> int:
    """Log ``start i pid``, wait while ``params["hold"]`` exists (at most 60 s), log
    ``end i pid``; the result is i squared."""
    _append(params["counter"], f"start {params['i']} {os.getpid()}")
    deadline = time.monotonic() + 60
    while os.path.exists(params["hold"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    _append(params["counter"], f"end {params['i']} {os.getpid()}")
    return params["i"] ** 2


def resources_unit(params: dict) -> dict:
    """What Ray reserved for this task, and the torch threads it runs with."""
    import torch

    return {"assigned": dict(ray.get_runtime_context().get_assigned_resources()),
            "threads": torch.get_num_threads(), "i": params["i"]}


def cuda_unit(params: dict) -> int:
    return params["i"]


cuda_unit.device = lambda params: "cuda"  # type: ignore[attr-defined]


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():
        ray.shutdown()
    path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()


def events(counter: pathlib.Path) -> list[tuple[str, int, int]]:
    if not counter.exists():
        return []
    return [(kind, int(i), int(pid)) for kind, i, pid in
            (line.split() for line in counter.read_text().splitlines())]


def _tiny_run(seed: int) -> RunConfig:
    return RunConfig(dataset="fashion_mnist", synthetic=True, n_train=96, n_val=32, n_test=32,
                     model="mlp", batch_size=32, epochs=2, seed=seed, device="cpu",
                     eval_batch_size=64)


# ---------------------------------------------------------------- tests


def test_training_runs_on_ray_equal_the_local_executor(local_ray, tmp_path):
    import torch

    cfgs = [_tiny_run(0), _tiny_run(1), _tiny_run(2)]
    on_ray = train_runs(cfgs, executor="ray", cache=RunCache(tmp_path / "ray", version="t"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the Ray task (1 CPU): the same float reduction order
    try:
        local = train_runs(cfgs, executor="local",
                           cache=RunCache(tmp_path / "local", version="t"))
    finally:
        torch.set_num_threads(threads)
    for r, l in zip(on_ray, local, strict=True):  # bit-identical but for the wall times
        assert r["history"].drop(columns="time_s").equals(l["history"].drop(columns="time_s"))
        assert {k: v for k, v in r["final"].items() if k != "time_s"} == \
            {k: v for k, v in l["final"].items() if k != "time_s"}
    assert len(RunCache(tmp_path / "ray", version="t").entries("train")) == 3
    # a second sweep finds every run in the cache and sends nothing to Ray
    again = train_runs(cfgs, executor="ray", cache=RunCache(tmp_path / "ray", version="t"))
    assert [a["final"] for a in again] == [r["final"] for r in on_ray]


def test_runs_are_ray_tasks_reserving_cpus_and_no_gpu_on_a_cpu_cluster(local_ray, tmp_path):
    out = sweep(resources_unit, [{"i": i} for i in range(2)], name="res", executor="ray",
                cache=RunCache(tmp_path, version="t"), progress=False)
    for r in out:
        assert r["assigned"].get("CPU") == 1.0 and "GPU" not in r["assigned"], r
        assert r["threads"] == 1
    with pytest.raises(ValueError, match="no GPU"):  # before any task is sent
        sweep(cuda_unit, [{"i": 0}], name="cuda", executor="ray",
              cache=RunCache(tmp_path, version="t"), progress=False)
    assert RunCache(tmp_path, version="t").entries("cuda") == []


def test_task_resources_follow_the_units_device():
    assert task_resources("cpu", 4, 2) == {"num_cpus": 2, "num_gpus": 0.0}
    assert task_resources("auto", 4, 1) == {"num_cpus": 1, "num_gpus": 1.0}
    assert task_resources("auto", 0, 1) == {"num_cpus": 1, "num_gpus": 0.0}
    assert task_resources("cuda:1", 2, 1) == {"num_cpus": 1, "num_gpus": 1.0}
    assert task_resources("auto", 4, 1, gpus_per_task=0.25)["num_gpus"] == 0.25
    with pytest.raises(ValueError, match="no GPU"):
        task_resources("cuda", 0, 1)


def test_a_sigkilled_worker_is_retried_and_no_finished_unit_is_lost_or_redone(local_ray,
                                                                               tmp_path):
    counter, hold = tmp_path / "counter", tmp_path / "hold"
    hold.touch()
    grid = [{"i": i, "counter": str(counter), "hold": str(hold)} for i in range(4)]
    cache = RunCache(tmp_path / "runs", version="t")
    out: dict = {}

    def run():
        try:
            out["results"] = sweep(held_unit, grid, name="held", executor="ray", cache=cache,
                                   progress=False)
        except BaseException as exc:  # surfaced by the assertion below
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 90
    while len(events(counter)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = events(counter)
    assert len(started) == 2, f"two units should run at once on 2 CPUs, saw {started}"
    _, victim, pid = started[0]
    os.kill(pid, signal.SIGKILL)  # the Ray worker computing unit `victim` dies mid-unit
    time.sleep(1.0)
    hold.unlink()  # let every unit finish
    thread.join(180)
    assert not thread.is_alive() and "error" not in out, out.get("error")
    assert out["results"] == [0, 1, 4, 9]

    log = events(counter)
    ends = sorted(i for kind, i, _ in log if kind == "end")
    starts = sorted(i for kind, i, _ in log if kind == "start")
    assert ends == [0, 1, 2, 3]  # every unit finished exactly once
    assert starts == sorted([0, 1, 2, 3, victim])  # only the killed unit started again
    assert (("end", victim, pid)) not in log
    for params in grid:  # every entry is complete and readable
        assert cache.get("held", params, fn=held_unit) == params["i"] ** 2
    # the sweep again: all four come from the cache, nothing runs
    assert sweep(held_unit, grid, name="held", executor="ray", cache=cache,
                 progress=False) == [0, 1, 4, 9]
    assert len(events(counter)) == len(log)
