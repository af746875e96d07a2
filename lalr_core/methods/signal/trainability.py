"""Trainability of deep random networks against their depth scale (Schoenholz et al. 2017).

The claim (Schoenholz et al. 2017 ``[Schoenholz2017]``, whose depth scales the lecture notes
``[ATDL-notes]`` restate in sec. 1.3; the notes do not make this claim): a fully connected tanh network initialised at
``(sigma_w^2, sigma_b^2)`` trains when its depth is below about ``6 xi_c``, the correlation
depth scale of mean-field theory (`lalr_core.methods.signal.mean_field`), and fails beyond. Here each
``(sigma_w^2, depth)`` cell is one network of the given width trained for a few SGD steps on a
small real task; its training accuracy after those steps is the cell's value.

Scale of the test: Schoenholz et al. trained thousands of steps on MNIST / CIFAR-10; a grid of
short runs can only show where training starts quickly, so the heatmap is read against the
``6 xi_c`` curve, not as a replication of their figure. Cells within ``6 xi_c`` are also the
shallower ones, so chapter 07 compares cells at equal depth, over several ``seed`` offsets of
`trainability_grid`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from lalr_core.core.runs import register_unit, sweep


def _check(name: str, values: Sequence[float], *, integer: bool = False) -> list:
    vals = list(values)
    if not vals or any((v <= 0) or (integer and int(v) != v) for v in vals):
        raise ValueError(f"{name} must be a non-empty list of positive "
                         f"{'integers' if integer else 'numbers'}, got {values!r}")
    return vals


def random_tanh_net(d_in: int, n_out: int, width: int, depth: int, sigma_w2: float,
                    sigma_b2: float, generator: torch.Generator) -> list[tuple[torch.Tensor, ...]]:
    """``depth`` hidden tanh layers of ``width`` plus a linear readout, weights
    ``N(0, sigma_w^2 / fan_in)`` and biases ``N(0, sigma_b^2)`` (the mean-field convention),
    as a list of ``(W, b)`` leaf tensors that require grad."""
    sizes = [d_in] + [width] * depth + [n_out]
    layers = []
    for fan_in, fan_out in itertools.pairwise(sizes):
        W = torch.randn(fan_out, fan_in, generator=generator) * math.sqrt(sigma_w2 / fan_in)
        b = torch.randn(fan_out, generator=generator) * math.sqrt(sigma_b2)
        layers.append((W.requires_grad_(True), b.requires_grad_(True)))
    return layers


def forward(layers, X: torch.Tensor) -> torch.Tensor:
    """The net's logits; ``layers`` and ``X`` may carry a leading axis of cells (the
    batched weights of `train_accuracies`), which then runs every cell at once."""
    h = X
    for W, b in layers[:-1]:
        h = torch.tanh(h @ W.mT + b.unsqueeze(-2))
    W, b = layers[-1]
    return h @ W.mT + b.unsqueeze(-2)


def train_accuracies(X: torch.Tensor, y: torch.Tensor, *, width: int, depth: int,
                     sigma_w2s: Sequence[float], sigma_b2: float, steps: int, lr: float,
                     batch: int, seeds: Sequence[int]) -> list[float]:
    """Training accuracy (on all of ``X``) of one net per ``(sigma_w2s[c], seeds[c])`` cell
    after ``steps`` plain SGD steps of cross-entropy on random mini-batches (NaN where it
    diverged).

    The cells share a depth, so they train side by side as one batched net: a tiny net's
    step costs mostly per-operation overhead, which the cells then share. Each cell still
    draws its initialisation and its mini-batches from its own seeded generator (on the CPU,
    so a GPU draws the same), exactly as it would alone, and its loss is its own batch mean:
    the cells never mix. The nets train on ``X``'s device."""
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    n_out = int(y.max()) + 1
    if len(gens) != len(sigma_w2s):
        raise ValueError(f"one seed per cell: {len(sigma_w2s)} sigma_w2s, {len(gens)} seeds")
    cells = [random_tanh_net(X.shape[1], n_out, width, depth, s2, sigma_b2, g)
             for s2, g in zip(sigma_w2s, gens)]
    layers = [tuple(torch.stack([cell[i][k].detach() for cell in cells]).to(X.device)
                    .requires_grad_(True) for k in (0, 1)) for i in range(depth + 1)]
    params = [p for layer in layers for p in layer]
    for _ in range(steps):
        idx = torch.stack([torch.randint(0, len(X), (batch,), generator=g) for g in gens])
        idx = idx.to(X.device)
        logits = forward(layers, X[idx])                      # (cells, batch, classes)
        loss = F.cross_entropy(logits.flatten(0, 1), y[idx].flatten(), reduction="sum") / batch
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            torch._foreach_add_(params, grads, alpha=-lr)     # one call for every tensor
    with torch.no_grad():
        out = forward(layers, X.expand(len(cells), *X.shape))
    acc = (out.argmax(-1) == y).float().mean(-1)
    finite = torch.isfinite(out).flatten(1).all(1)
    return [float(a) if ok else float("nan") for a, ok in zip(acc, finite)]


def _check_grid(sigma_w2s, depths, width, steps, batch, lr, sigma_b2) -> tuple[list, list]:
    sigma_w2s = _check("sigma_w2s", sigma_w2s)
    depths = _check("depths", depths, integer=True)
    _check("width/steps/batch", (width, steps, batch), integer=True)
    if not (lr > 0 and sigma_b2 >= 0):
        raise ValueError(f"lr must be > 0 and sigma_b2 >= 0, got {lr!r}, {sigma_b2!r}")
    return sigma_w2s, depths


def _row_seeds(seed: int, row: int, cells: int) -> list[int]:
    """The seeds of row ``row``'s cells: ``seed + 1000 row + j``."""
    return [seed + 1000 * row + j for j in range(cells)]


def trainability_grid(X: torch.Tensor, y: torch.Tensor, sigma_w2s: Sequence[float],
                      depths: Sequence[int], *, width: int = 64, sigma_b2: float = 0.05,
                      steps: int = 100, lr: float = 1e-2, batch: int = 64,
                      seed: int = 0) -> np.ndarray:
    """Training accuracy after ``steps`` steps for every ``(depth, sigma_w^2)``: an array of
    shape ``(len(depths), len(sigma_w2s))`` (NaN where training diverged). Cell ``(i, j)``
    draws from seed ``seed + 1000 i + j``.

    Raises:
        ValueError: for empty or non-positive grids, sizes or steps, or mismatched data.
    """
    sigma_w2s, depths = _check_grid(sigma_w2s, depths, width, steps, batch, lr, sigma_b2)
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"X must be (n, d) and y (n,), got {tuple(X.shape)}, {tuple(y.shape)}")
    return np.array([train_accuracies(X, y, width=width, depth=int(L), sigma_w2s=sigma_w2s,
                                      sigma_b2=sigma_b2, steps=steps, lr=lr, batch=batch,
                                      seeds=_row_seeds(seed, i, len(sigma_w2s)))
                     for i, L in enumerate(depths)])


@register_unit("trainability")  # so a cache tool can recompute its entries' keys
def grid_row(params: Mapping[str, Any]) -> list[float]:
    """One cached unit (`lalr_core.core.runs.sweep`): a row of `cached_grid`, ``params`` =
    ``{"data": load_data's arguments, "depth", "sigma_w2s", "seeds", "width", "sigma_b2",
    "steps", "lr", "batch"}``, on the training split flattened, on a GPU where there is one."""
    from lalr_core.core.data import load_data
    from lalr_core.core.loop.train import resolve_device

    data, device = load_data(**params["data"]), resolve_device("auto")
    X = data.X_train.reshape(len(data.X_train), -1).float().to(device)
    kw = {k: params[k] for k in ("width", "depth", "sigma_w2s", "sigma_b2", "steps", "lr",
                                 "batch", "seeds")}
    return train_accuracies(X, data.y_train.to(device), **kw)


def cached_grid(data: Mapping[str, Any], sigma_w2s: Sequence[float], depths: Sequence[int], *,
                width: int = 64, sigma_b2: float = 0.05, steps: int = 100, lr: float = 1e-2,
                batch: int = 64, seed: int = 0, workers: int = 1) -> np.ndarray:
    """`trainability_grid` on the training split of ``load_data(**data)``, each depth's row a
    cached unit (run family ``"trainability"``, `grid_row`): a killed grid resumes, ``workers``
    processes train rows side by side, and rows trained on another machine (a GPU's) are
    found in the cache. Same seeds, so the same values as `trainability_grid`."""
    sigma_w2s, depths = _check_grid(sigma_w2s, depths, width, steps, batch, lr, sigma_b2)
    params = [{"data": dict(data), "depth": int(L), "sigma_w2s": [float(s) for s in sigma_w2s],
               "seeds": _row_seeds(seed, i, len(sigma_w2s)), "width": width,
               "sigma_b2": sigma_b2, "steps": steps, "lr": lr, "batch": batch}
              for i, L in enumerate(depths)]
    return np.array(sweep(grid_row, params, name="trainability", workers=workers))
