"""Mini-batches of device-resident tensors, drawn on their device (never the global RNG).

Part of `lalr_core.core.data` (the package docstring describes the whole flow).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch


def generator_for(generator: torch.Generator | None, device: torch.device) -> torch.Generator:
    """``generator``, or a fresh OS-seeded one (never the global RNG)."""
    if generator is not None:
        return generator
    gen = torch.Generator(device=device)
    gen.seed()
    return gen


def num_batches(n: int, batch_size: int, drop_last: bool = False) -> int:
    """Batches per pass over ``n`` samples.

    Args:
        n: samples.
        batch_size: samples per batch.
        drop_last: whether the final incomplete batch is skipped.

    Returns:
        ``n // batch_size`` if ``drop_last`` else ``ceil(n / batch_size)``.

    Raises:
        ValueError: ``batch_size`` not positive.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return n // batch_size if drop_last else -(-n // batch_size)


def iterate_batches(X: torch.Tensor, y: torch.Tensor, batch_size: int, *, shuffle: bool = True,
                    generator: torch.Generator | None = None,
                    drop_last: bool = False) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(Xb, yb)`` minibatches covering each sample once per pass.

    Args:
        X: inputs ``[N, ...]``.
        y: labels ``[N]``.
        batch_size: samples per batch (the last one may be smaller unless ``drop_last``).
        shuffle: random order (``index_select``) instead of contiguous views.
        generator: source of the order; its device is used; None = fresh, non-reproducible.
        drop_last: skip the final incomplete batch.

    Yields:
        ``(Xb, yb)`` with ``Xb`` ``[B, ...]`` and ``yb`` ``[B]``.

    Raises:
        ValueError: mismatched lengths or non-positive ``batch_size``.
    """
    N = len(X)
    if len(y) != N:
        raise ValueError(f"X and y differ in length: {N} vs {len(y)}")
    count = num_batches(N, batch_size, drop_last)
    if not shuffle:
        for b in range(count):
            yield X[b * batch_size:(b + 1) * batch_size], y[b * batch_size:(b + 1) * batch_size]
        return
    gen = generator_for(generator, X.device)
    perm = torch.randperm(N, generator=gen, device=gen.device).to(X.device)
    for b in range(count):
        idx = perm[b * batch_size:(b + 1) * batch_size]
        yield X.index_select(0, idx), y.index_select(0, idx)
