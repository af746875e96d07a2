"""The fixed thread count every cached unit computes with, so a run is a function of its config.

On a CPU, torch's (and BLAS's) floating-point sums depend on how many threads split them: the
same run at 1 and at 2 threads drifts apart by ~1e-3 in its weights after a few epochs, and a
verdict near its threshold can flip. The count therefore cannot follow the machine or the
sweep (a pool worker with 1 thread, the last unit of a sweep in-process with all cores): every
unit computes at `run_threads()`, whatever the cache holds, and its entry records it. An entry
computed on a CPU at another count is not this run, and is computed again (`entry_matches`).
Parallelism comes from units side by side (one process per core), not threads inside a unit.

``$LALR_RUN_THREADS`` sets another count (e.g. on a GPU machine, where CPU threads do not
change the GPU's sums; recorded and checked all the same).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping

RUN_THREADS_ENV = "LALR_RUN_THREADS"
DEFAULT_RUN_THREADS = 1


def run_threads() -> int:
    """The thread count of every unit: ``$LALR_RUN_THREADS`` or `DEFAULT_RUN_THREADS`.

    Raises:
        ValueError: the variable is not an int >= 1.
    """
    value = os.environ.get(RUN_THREADS_ENV, "").strip()
    if not value:
        return DEFAULT_RUN_THREADS
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"${RUN_THREADS_ENV} must be an int >= 1, got {value!r}")
    return int(value)


@contextlib.contextmanager
def fixed_threads(n: int | None = None) -> Iterator[int]:
    """Compute the block at ``n`` (default `run_threads`) torch and BLAS threads, then restore
    the process's counts. Yields the count."""
    n = run_threads() if n is None else n
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    if torch is None:
        import torch
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n):  # numpy's and scipy's BLAS/OpenMP pools
            yield n
    finally:
        torch.set_num_threads(old)


def at_run_threads(fn: Callable) -> Callable:
    """``fn`` computed under `fixed_threads` (the units' count): for analysis a notebook kernel
    runs outside the cached units whose numbers enter a verdict (a Hessian's eigenvectors, say),
    so that they, too, do not depend on the kernel's thread count."""
    @functools.wraps(fn)
    def pinned(*args, **kwargs):
        with fixed_threads():
            return fn(*args, **kwargs)
    return pinned


def entry_threads(meta: Mapping) -> int | None:
    """The thread count a cache entry was computed with: its ``run_threads``, or for an entry
    written before the count was fixed, the torch thread count its provenance recorded."""
    if meta.get("run_threads") is not None:
        return int(meta["run_threads"])
    prov = meta.get("provenance") or {}
    return prov.get("torch_threads") if isinstance(prov, Mapping) else None


def entry_on_gpu(meta: Mapping) -> bool:
    """The entry's provenance names a CUDA device (its sums were the GPU's, not the CPU
    threads')."""
    prov = meta.get("provenance") or {}
    env = prov.get("environment") or {} if isinstance(prov, Mapping) else {}
    return "cuda" in str(env.get("device", "")).lower()


def entry_matches(meta: Mapping, n: int | None = None) -> bool:
    """Whether an entry is this run at thread count ``n`` (default `run_threads`): computed
    at ``n`` threads, or on a GPU."""
    n = run_threads() if n is None else n
    return entry_on_gpu(meta) or entry_threads(meta) == n
