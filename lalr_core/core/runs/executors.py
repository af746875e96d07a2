"""Executors of a sweep (this process, a local process pool, Ray) and ``sweep`` itself."""

from __future__ import annotations

import concurrent.futures
import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from lalr_core.core.runs.cache import ACTIVE_CACHES, RunCache, cached

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCHDOG_S = 1.0  # seconds between a worker's checks that the sweep process still lives

# ---------------------------------------------------------------- executors


def _run_unit(fn: Callable[[dict], Any], params: dict, name: str, root: str,
              version: str) -> Any:
    """Compute one sweep unit and write its own entry (runs in a worker)."""
    cache = RunCache(root, version=version)
    ACTIVE_CACHES.append(cache)
    try:
        return cached(fn, params, name=name, cache=cache)
    finally:
        ACTIVE_CACHES.pop()


def _init_worker(threads: int, parent_pid: int | None = None) -> None:
    """Process-pool initializer: split the machine's cores between the workers, and tie each
    worker's life to the sweep process `parent_pid` (see `die_with_parent`)."""
    if parent_pid is not None:
        die_with_parent(parent_pid)
    import torch  # lazy: only worker processes pay for it

    torch.set_num_threads(max(1, threads))


def die_with_parent(parent_pid: int) -> None:
    """End this process when its parent `parent_pid` dies, even by SIGKILL.

    A pool's workers otherwise outlive a killed sweep (each holding its torch memory, ~1 GB)
    and keep the pool's resource tracker alive with them; the tracker exits by itself once no
    process holds its pipe. On Linux the kernel sends SIGKILL when the parent dies
    (``prctl(PR_SET_PDEATHSIG)``; strictly, when the parent's thread that started this
    process ends: the pool starts workers from the thread running the sweep, which outlives
    the pool). Everywhere, a daemon thread also polls ``os.getppid()``, which changes when the
    parent dies and this process is re-parented, and then calls ``os._exit``.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no usable libc: the watchdog alone
            pass
    if os.getppid() != parent_pid:  # the parent died before the prctl
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="die-with-parent",
                     daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCHDOG_S)
    os._exit(1)  # no cleanup: the parent that would collect the results is gone


class LocalExecutor:
    """Run tasks in this process (``workers=1``) or in a spawn-context process pool.

    Args:
        workers: Number of processes; 1 runs sequentially here.
        threads: Torch threads per worker process; default usable cores ``// workers``.
    """

    def __init__(self, workers: int = 1, threads: int | None = None):
        self.workers = workers
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count() or 1  # the cores this process may use, not the machine's
        self.threads = threads or max(1, cores // workers)

    def map(self, task: Callable, arg_tuples: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        """Run ``task(*args)`` for every tuple; the first error propagates.

        Yields:
            ``(position in arg_tuples, result)``, in completion order.
        """
        if self.workers == 1 or len(arg_tuples) <= 1:
            for i, args in enumerate(arg_tuples):
                yield i, task(*args)
            return
        context = multiprocessing.get_context("spawn")  # fork is unsafe once torch has threads
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(self.workers, len(arg_tuples)), mp_context=context,
            initializer=_init_worker, initargs=(self.threads, os.getpid()),
        ) as pool:
            futures = {pool.submit(task, *args): i for i, args in enumerate(arg_tuples)}
            try:
                for future in concurrent.futures.as_completed(futures):
                    yield futures[future], future.result()
            except BaseException:  # also on interrupt: in-flight units finish and are saved
                pool.shutdown(wait=True, cancel_futures=True)
                raise


class RayExecutor:
    """Run tasks as Ray remote tasks (``pip install -e .[distributed]``).

    The cache root must be on a file system that every Ray node sees. Ray is started locally
    unless it is already initialised (``ray.init(address=...)`` to join a cluster).

    Args:
        gpus_per_task: GPUs Ray reserves per task (fractions allowed).
        threads: CPUs Ray reserves per task; default 1.
    """

    def __init__(self, gpus_per_task: float = 0, threads: int | None = None):
        try:
            import ray
        except ImportError as exc:
            raise ImportError(
                "executor='ray' needs Ray: pip install -e .[distributed]") from exc
        self.ray = ray
        self.gpus_per_task = gpus_per_task
        self.threads = threads or 1

    def map(self, task: Callable, arg_tuples: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        """Run ``task(*args)`` for every tuple; the first error propagates.

        Yields:
            ``(position in arg_tuples, result)``, in completion order.
        """
        ray = self.ray
        if not ray.is_initialized():
            ray.init()
        remote = ray.remote(num_cpus=self.threads, num_gpus=self.gpus_per_task)(task)
        refs = {remote.remote(*args): i for i, args in enumerate(arg_tuples)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield refs[done[0]], ray.get(done[0])
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise


# ---------------------------------------------------------------- sweeps


def _check_sweep_args(fn: Callable, executor: str, workers: Any, threads: Any,
                      gpus_per_task: Any) -> None:
    """Raise ValueError for a bad sweep configuration, before any compute."""
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    for label, value in (("workers", workers), ("threads", threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"{label} must be an int >= 1, got {value!r}")
    if isinstance(gpus_per_task, bool) or not isinstance(gpus_per_task, (int, float)) \
            or not gpus_per_task >= 0:
        raise ValueError(f"gpus_per_task must be a number >= 0, got {gpus_per_task!r}")
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {fn!r}")
    if executor == "local" and workers > 1:
        main = sys.modules.get("__main__")
        if getattr(fn, "__module__", None) == "__main__" and not hasattr(main, "__file__"):
            raise ValueError(f"fn {fn!r} is defined in a notebook or REPL, which spawned worker "
                             "processes cannot import; move it into a module or use workers=1")
        try:
            pickle.dumps(fn)
        except Exception as exc:
            raise ValueError(f"fn {fn!r} cannot be pickled for worker processes ({exc}); "
                             "use a module-level function or workers=1") from exc


def sweep(fn: Callable[[dict], Any], param_list: Sequence[Mapping], *, name: str,
          executor: str = "local", workers: int = 1, cache: RunCache | None = None,
          progress: bool = True, threads: int | None = None,
          gpus_per_task: float = 0) -> list[Any]:
    """Run ``fn`` over a grid of parameters, reusing finished units and computing the rest.

    Each unit is written to the cache by whoever computes it, as soon as it finishes, so a
    killed sweep resumes losing at most the units in flight. Equal parameter sets are computed
    once. A unit's key includes the fingerprint of its code (see `cached`), so units computed
    by code that has changed since are computed again.

    Args:
        fn: The unit's computation, ``fn(params: dict) -> result``; module-level (picklable)
            when ``workers > 1`` or with Ray. An attribute ``fn.code_modules(params) ->
            list[str]`` names modules beyond ``fn.__module__`` whose code the unit depends on.
        param_list: One mapping of resolved parameters per unit.
        name: Run family (directory under the cache root).
        executor: ``"local"`` (this process, or a process pool) or ``"ray"``.
        workers: Local processes; 1 computes sequentially in this process.
        cache: Cache to use; default ``RunCache()``.
        progress: Show a ``tqdm.auto`` bar, one tick per finished unit.
        threads: Torch threads per local worker process (default ``cpu_count // workers``;
            ignored when ``workers == 1``), or CPUs per Ray task (default 1).
        gpus_per_task: GPUs Ray reserves per task; ignored by the local executor.

    Returns:
        The results, in the order of `param_list`.

    Raises:
        ValueError: For an unknown executor, ``workers < 1``, a `fn` that worker processes
            cannot load, or unhashable parameters; all before any compute.
        ImportError: For ``executor="ray"`` when Ray is not installed.
    """
    _check_sweep_args(fn, executor, workers, threads, gpus_per_task)
    cache = cache if cache is not None else RunCache()
    if isinstance(param_list, Mapping) or not all(isinstance(p, Mapping) for p in param_list):
        raise ValueError("param_list must be a sequence of mappings")
    param_list = [dict(p) for p in param_list]
    units = [cache._unit(name, p, fn) for p in param_list]  # validates everything up front
    keys = [u.key for u in units]
    runner = LocalExecutor(workers, threads) if executor == "local" else \
        RayExecutor(gpus_per_task, threads)
    from tqdm.auto import tqdm  # lazy: keeps import of this module light

    results: dict[str, Any] = {}
    for unit in units:
        if unit.key not in results:
            hit, result = cache._lookup(unit)
            if hit:
                results[unit.key] = result
    by_key = dict(zip(keys, param_list, strict=True))
    todo = [k for k in by_key if k not in results]  # unique, in order of first appearance
    n_cached = sum(k in results for k in keys)
    with tqdm(total=len(keys), desc=name, disable=not progress) as bar:
        bar.update(n_cached)
        bar.set_postfix(cached=n_cached, computed=0)
        args = [(fn, by_key[k], name, str(cache.root), cache.version) for k in todo]
        for n_done, (i, result) in enumerate(runner.map(_run_unit, args), start=1):
            results[todo[i]] = result
            bar.update(keys.count(todo[i]))
            bar.set_postfix(cached=n_cached, computed=n_done)
    return [results[k] for k in keys]
