"""Process-wide torch settings: its thread count for a block, and torch's own warnings that
are not ours to fix, silenced where they start and nowhere else."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block on ``n`` torch threads, then restore the previous count."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"threads must be an int >= 1, got {n!r}")
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def load_jvp_decompositions() -> None:
    """Load torch's forward-mode (jvp) decompositions now, without their warning.

    The first ``torch.func.jvp`` of a process imports them, and on torch >= 2.10 their
    ``@torch.jit.script`` emits a FutureWarning (``torch.jit.script`` is deprecated); from a
    worker process it would reach ``make figures``' terminal. Loading them here, under a filter
    for that one message, leaves every other warning as it was.
    """
    from torch.autograd import forward_ad

    load = getattr(forward_ad, "_maybe_load_decompositions", None)  # torch 2.x's loader
    if load is None:
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
        load()
