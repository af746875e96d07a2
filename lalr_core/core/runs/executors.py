"""Executors of a sweep (this process, a local process pool, Ray) and ``sweep`` itself."""

from __future__ import annotations

import atexit
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
    os.environ.pop("LALR_PROGRESS", None)  # the sweep's bar speaks for its workers
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


def visible_gpus() -> list[str]:
    """The CUDA devices this process may use, as ``CUDA_VISIBLE_DEVICES`` entries (the
    parent's own list when it has one), without creating a CUDA context; [] without CUDA."""
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch
        except ImportError:
            return []
    count = torch.cuda.device_count()
    listed = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
              if d.strip()]
    return listed[:count] if listed else [str(i) for i in range(count)]


def _init_gpu_worker(threads: int, parent_pid: int, gpu_queue) -> None:
    """Pool initializer with one GPU per worker: take a device id from the queue and make it
    the only CUDA device this worker sees (before torch initialises CUDA)."""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu_queue.get()
    _init_worker(threads, parent_pid)


class LocalExecutor:
    """Run tasks in this process (``workers=1``) or in a spawn-context process pool.

    With two or more visible GPUs the pool has one process per GPU (at least; ``workers``
    beyond that share them round-robin) and each process sees only its own GPU, so the
    runs of a sweep spread over the machine's GPUs one run per GPU.

    Args:
        workers: Number of processes; 1 runs sequentially here (with fewer than two GPUs).
        threads: Torch threads per worker process; default usable cores ``// workers``.
        gpu_ids: The GPUs to spread over (``CUDA_VISIBLE_DEVICES`` entries); default
            `visible_gpus`. Fewer than two: no pinning.
    """

    def __init__(self, workers: int = 1, threads: int | None = None,
                 gpu_ids: Sequence[str] | None = None):
        self.gpu_ids = list(visible_gpus() if gpu_ids is None else gpu_ids)
        if len(self.gpu_ids) < 2:
            self.gpu_ids = []
        self.workers = max(workers, len(self.gpu_ids))
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count() or 1  # the cores this process may use, not the machine's
        self.threads = threads or max(1, cores // self.workers)

    def map(self, task: Callable, arg_tuples: Sequence[tuple],
            devices: Sequence[str] | None = None) -> Iterator[tuple[int, Any]]:
        """Run ``task(*args)`` for every tuple; the first error propagates. ``devices`` is
        accepted for the executors' one interface; the processes' GPUs are set up front.

        Yields:
            ``(position in arg_tuples, result)``, in completion order.
        """
        if not arg_tuples:
            return
        if self.workers == 1 or (len(arg_tuples) == 1 and not self.gpu_ids):
            for i, args in enumerate(arg_tuples):
                yield i, task(*args)
            return
        context = multiprocessing.get_context("spawn")  # fork is unsafe once torch has threads
        n = min(self.workers, len(arg_tuples))
        if self.gpu_ids:
            gpu_queue = context.Queue()
            for k in range(n):
                gpu_queue.put(self.gpu_ids[k % len(self.gpu_ids)])
            init, initargs = _init_gpu_worker, (self.threads, os.getpid(), gpu_queue)
        else:
            init, initargs = _init_worker, (self.threads, os.getpid())
        tracker_was_running = _tracker_running()
        try:
            with concurrent.futures.ProcessPoolExecutor(
                max_workers=n, mp_context=context, initializer=init, initargs=initargs,
            ) as pool:
                futures = {pool.submit(task, *args): i for i, args in enumerate(arg_tuples)}
                try:
                    for future in concurrent.futures.as_completed(futures):
                        yield futures[future], future.result()
                except BaseException:  # also on interrupt: in-flight units finish and are saved
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        finally:
            if not tracker_was_running:
                _stop_tracker()


def _tracker_running() -> bool:
    """Whether multiprocessing's resource tracker process of this process is up."""
    from multiprocessing import resource_tracker
    return getattr(resource_tracker._resource_tracker, "_pid", None) is not None


def _stop_tracker() -> None:
    """Stop the resource tracker a spawned pool started, once the pool is gone.

    The tracker ignores SIGTERM, and ipykernel's shutdown signals its children until they
    exit: a notebook kernel that ran a pool took 30 s to exit (until jupyter_client's
    SIGTERM), every notebook of `make figures`. Only a tracker this pool started is stopped,
    so no resource registered by anyone else is released; the next pool starts a new one.
    """
    from multiprocessing import resource_tracker
    stop = getattr(resource_tracker._resource_tracker, "_stop", None)  # private, 3.8+
    if stop is not None:
        stop()


RAY_RETRIES = 3  # times Ray re-runs a task whose worker died (a crash, OOM kill, SIGKILL)


def task_resources(device: str, cluster_gpus: float, threads: int,
                   gpus_per_task: float | None = None) -> dict[str, float]:
    """The Ray resources of one unit: ``threads`` CPUs, and a GPU when the unit runs on one.

    ``device`` is the unit's (``"cpu"``, ``"cuda[:k]"``, ``"mps"`` or ``"auto"``: a GPU
    when the cluster has one, as `lalr_core.core.loop.train.resolve_device` picks on a node);
    an explicit ``gpus_per_task`` overrides it.

    Raises:
        ValueError: a CUDA device asked of a cluster without GPUs (Ray would wait forever).
    """
    if gpus_per_task is not None:
        gpus = float(gpus_per_task)
    elif device.startswith("cuda"):
        if cluster_gpus < 1:
            raise ValueError(f"the unit asks for device {device!r} but the Ray cluster has no "
                             "GPU; use device 'auto' or 'cpu', or a cluster with GPUs")
        gpus = 1.0
    else:
        gpus = 1.0 if device == "auto" and cluster_gpus >= 1 else 0.0
    return {"num_cpus": threads, "num_gpus": gpus}


def _run_ray_unit(threads: int, task: Callable, *args) -> Any:
    """``task(*args)`` in a Ray worker, with torch using the CPUs Ray reserved for it."""
    import torch

    torch.set_num_threads(max(1, int(threads)))
    return task(*args)


class RayExecutor:
    """Run tasks as Ray tasks (``pip install -e .[distributed]``).

    Ray is joined or started on first use: ``ray.init()`` connects to the cluster named by
    ``RAY_ADDRESS`` (Ray's own convention) and otherwise starts one on this machine. Each task
    reserves ``threads`` CPUs and, by its unit's device (`task_resources`), one GPU; a task
    whose worker dies is retried (`RAY_RETRIES`). The cache root must be on a file system
    every node sees: a unit found there is not sent, and a retried unit that had finished
    reads its entry instead of computing again.

    Args:
        gpus_per_task: GPUs per task, overriding the units' devices (fractions allowed).
        threads: CPUs Ray reserves per task; default 1.
    """

    def __init__(self, gpus_per_task: float | None = None, threads: int | None = None):
        try:
            import ray
        except ImportError as exc:
            raise ImportError(
                "executor='ray' needs Ray: pip install -e .[distributed]") from exc
        self.ray = ray
        self.gpus_per_task = gpus_per_task
        self.threads = threads or 1

    def map(self, task: Callable, arg_tuples: Sequence[tuple],
            devices: Sequence[str] | None = None) -> Iterator[tuple[int, Any]]:
        """Run ``task(*args)`` for every tuple; the first error propagates.

        Args:
            devices: each tuple's unit device (default ``"auto"``), for its resources.

        Yields:
            ``(position in arg_tuples, result)``, in completion order.
        """
        ray = self.ray
        if not ray.is_initialized():
            ray.init()
            # Leave Ray when this process ends normally (a notebook kernel asked to shut down),
            # not when its manager's SIGTERM comes after the grace period (Ray prints a stack).
            atexit.register(ray.shutdown)
        cluster_gpus = ray.cluster_resources().get("GPU", 0)
        devices = devices or ["auto"] * len(arg_tuples)
        options = [task_resources(d, cluster_gpus, self.threads, self.gpus_per_task)
                   for d in devices]  # all checked before the first task is sent
        remote = ray.remote(max_retries=RAY_RETRIES)(_run_ray_unit)
        refs = {remote.options(**opt).remote(opt["num_cpus"], task, *args): i
                for i, (opt, args) in enumerate(zip(options, arg_tuples, strict=True))}
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


EXECUTORS = ("local", "ray")
EXECUTOR_ENV = "LALR_EXECUTOR"  # the default executor (`make figures EXECUTOR=ray` sets it)


def resolve_executor(executor: str | None) -> str:
    """``executor``, or when None the one ``$LALR_EXECUTOR`` names (default ``"local"``).

    Raises:
        ValueError: an executor other than `EXECUTORS` (naming the variable when it came
            from there).
    """
    if executor is None:
        value = os.environ.get(EXECUTOR_ENV) or "local"
        if value not in EXECUTORS:
            raise ValueError(f"${EXECUTOR_ENV} must be one of {EXECUTORS}, got {value!r}")
        return value
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS} (or None: ${EXECUTOR_ENV}), "
                         f"got {executor!r}")
    return executor


def _check_sweep_args(fn: Callable, executor: str, workers: Any, threads: Any,
                      gpus_per_task: Any) -> None:
    """Raise ValueError for a bad sweep configuration, before any compute."""
    for label, value in (("workers", workers), ("threads", threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"{label} must be an int >= 1, got {value!r}")
    if gpus_per_task is not None and (isinstance(gpus_per_task, bool) or not isinstance(
            gpus_per_task, (int, float)) or not gpus_per_task >= 0):
        raise ValueError(f"gpus_per_task must be a number >= 0, got {gpus_per_task!r}")
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {fn!r}")


def _check_picklable(fn: Callable) -> None:
    """Raise ValueError unless spawned worker processes can load ``fn``."""
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
          executor: str | None = None, workers: int = 1, cache: RunCache | None = None,
          progress: bool = True, threads: int | None = None,
          gpus_per_task: float | None = None) -> list[Any]:
    """Run ``fn`` over a grid of parameters, reusing finished units and computing the rest.

    Each unit is written to the cache by whoever computes it, as soon as it finishes, so a
    killed sweep resumes losing at most the units in flight. Equal parameter sets are computed
    once. A unit's key includes the fingerprint of its code (see `cached`), so units computed
    by code that has changed since are computed again.

    Args:
        fn: The unit's computation, ``fn(params: dict) -> result``; module-level (picklable)
            when ``workers > 1`` or with Ray. An attribute ``fn.code_modules(params) ->
            list[str]`` names modules beyond ``fn.__module__`` whose code the unit depends on;
            ``fn.device(params) -> str`` the device a unit runs on (default ``"auto"``), from
            which Ray reserves a GPU for it or not.
        param_list: One mapping of resolved parameters per unit.
        name: Run family (directory under the cache root).
        executor: ``"local"`` (this process, or a process pool; one process per GPU on a
            machine with several) or ``"ray"``; None: ``$LALR_EXECUTOR``, else local.
        workers: Local processes; 1 computes sequentially in this process.
        cache: Cache to use; default ``RunCache()``.
        progress: Show a bar, one tick per finished unit, with the time left (in ``make
            figures``' terminal, see `lalr_core.core.progress`).
        threads: Torch threads per local worker process (default ``cpu_count // workers``;
            ignored when ``workers == 1``), or CPUs per Ray task (default 1).
        gpus_per_task: GPUs Ray reserves per task, overriding the units' devices; ignored by
            the local executor.

    Returns:
        The results, in the order of `param_list`.

    Raises:
        ValueError: For an unknown executor (also in ``$LALR_EXECUTOR``), ``workers < 1``, a
            `fn` that worker processes cannot load, or unhashable parameters; all before any compute.
        ImportError: For ``executor="ray"`` when Ray is not installed.
    """
    executor = resolve_executor(executor)
    _check_sweep_args(fn, executor, workers, threads, gpus_per_task)
    runner = LocalExecutor(workers, threads) if executor == "local" else \
        RayExecutor(gpus_per_task, threads)
    if executor == "local" and runner.workers > 1:
        _check_picklable(fn)
    cache = cache if cache is not None else RunCache()
    if isinstance(param_list, Mapping) or not all(isinstance(p, Mapping) for p in param_list):
        raise ValueError("param_list must be a sequence of mappings")
    param_list = [dict(p) for p in param_list]
    units = [cache._unit(name, p, fn) for p in param_list]  # validates everything up front
    keys = [u.key for u in units]
    from lalr_core.core import progress as progress_out

    results: dict[str, Any] = {}
    for unit in units:
        if unit.key not in results:
            hit, result = cache._lookup(unit)
            if hit:
                results[unit.key] = result
    by_key = dict(zip(keys, param_list, strict=True))
    todo = [k for k in by_key if k not in results]  # unique, in order of first appearance
    n_cached = sum(k in results for k in keys)
    with progress_out.bar(total=len(keys), desc=name, unit="run", disable=not progress) as bar:
        bar.update(n_cached)
        bar.set_postfix(cached=n_cached, computed=0)
        args = [(fn, by_key[k], name, str(cache.root), cache.version) for k in todo]
        device = getattr(fn, "device", None)
        devices = [device(by_key[k]) if device else "auto" for k in todo]
        for n_done, (i, result) in enumerate(runner.map(_run_unit, args, devices), start=1):
            results[todo[i]] = result
            bar.update(keys.count(todo[i]))
            bar.set_postfix(cached=n_cached, computed=n_done)
    return [results[k] for k in keys]
