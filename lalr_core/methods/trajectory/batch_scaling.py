r"""Batch size vs learning rate on a teacher task (``[ATDL-notes]`` sec. 3.5, experiment E13).

Chapter 04's section on the lecture notes ``[ATDL-notes]`` (keys: REFERENCES.md). The notes'
batch-size table (sec. 3.5, "Batch size" and "Learning rate") says a large batch needs fewer weight updates, that "the benefit of larger batch
size to parallelism plateau for large enough batch size (called **maximal data parallelism**)"
(they cite ``[Shallue2019]``, arXiv:1811.03600), and that for Adam/RMSprop the effective learning rate
is larger at a large batch. Our experiment E13 measures all three on a small MLP, plus chapter
04's directedness ``psi = D_t / D_s`` of every run.

The task (`Task`): inputs ``x ~ N(0, I_d)``, targets ``y = f*(x) + noise * eps`` with ``f*`` a
random one-hidden-layer tanh MLP (the teacher) and ``eps ~ N(0, 1)``; every step draws a fresh
batch (online data, so an "epoch" never ends and steps are the only budget). The student has
the teacher's architecture, so the teacher is exactly learnable. Progress is the *relative
excess error* on a fixed evaluation set of clean targets, ``mean (f - f*)^2 / var f*``
(0 = the teacher, 1 = the best constant); a run reaches the target at the first evaluated
step at which this falls to ``target`` or below (steps-to-target, Shallue et al.'s
measure). The label noise is what makes small batches slow: without it the gradient noise
vanishes at the teacher and the linear-scaling regime shrinks to a few small batches.

Vectorised: one call trains every (seed, lr) pair of one batch size at once, the parameters
stacked as ``[S, L, ...]`` (seed-major) and the forward pass a broadcast ``matmul``; the runs
of a seed share its initialisation and its batches (common random numbers), so the best lr of
a seed is decided on the same data. ``psi`` of every run comes from one
`lalr_core.methods.trajectory.PathMetrics` over the concatenated parameters with one segment
per run (its per-segment ``D_t``, ``D_s``), never from a re-implementation.

Conventions: the loss is the per-run batch mean of ``(f - y)^2`` (no 1/2). SGD is
``theta <- theta - lr g``; Adam is torch's (bias-corrected, ``eps`` outside the square root).
A run diverges when its batch loss is not finite or exceeds ``DIVERGED`` times ``var f*``; it
is then frozen at ``theta_0`` and all its numbers are NaN. Evaluation runs every step up to
step 32, then every ``t // 32`` steps, so a reported step-to-target is at most ~3% late.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from lalr_core.core.validation import check_int
from lalr_core.methods import trajectory as tj

DIVERGED = 1e4        # batch loss / var f* above this (or non-finite): the run diverged
EVAL_EVERY_UNTIL = 32  # evaluate every step up to here, then every t // 32 steps
OPTIMIZERS = ("sgd", "adam")


# ----------------------------------------------------------------------------- the task
@dataclass(frozen=True)
class Task:
    """The teacher task; every field has a default (the chapter's quick setting).

    Attributes:
        d: input dimension.
        width: hidden units of the teacher and of the student (same architecture).
        teacher_scale: the teacher's weights are ``teacher_scale`` times a student-like init,
            so that ``f*`` is not nearly linear.
        noise: standard deviation of the label noise, in units of the targets.
        n_eval: examples of the fixed evaluation set (clean targets).
        seed: draws the teacher and the evaluation set (the runs' seeds are separate).
    """

    d: int = 8
    width: int = 16
    teacher_scale: float = 2.0
    noise: float = 0.7
    n_eval: int = 512
    seed: int = 0

    def __post_init__(self):
        for name in ("d", "width", "n_eval"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Task.{name} must be an integer >= 1, got {v!r}")
        if not self.teacher_scale > 0 or not self.noise >= 0:
            raise ValueError(f"Task needs teacher_scale > 0 and noise >= 0, got "
                             f"{self.teacher_scale!r}, {self.noise!r}")


def init_mlp(shape: tuple[int, ...], d: int, width: int, generator: torch.Generator,
             scale: float = 1.0) -> list[torch.Tensor]:
    """Parameters ``[W1, b1, W2, b2]`` of ``prod(shape)`` MLPs stacked on leading dims
    ``shape``: ``W1 [*shape, d, width] ~ N(0, scale^2 / d)``, ``W2 [*shape, width, 1] ~
    N(0, scale^2 / width)``, biases zero (``[*shape, 1, width]``, ``[*shape, 1, 1]``)."""
    W1 = torch.randn(*shape, d, width, generator=generator) * (scale / math.sqrt(d))
    W2 = torch.randn(*shape, width, 1, generator=generator) * (scale / math.sqrt(width))
    return [W1, torch.zeros(*shape, 1, width), W2, torch.zeros(*shape, 1, 1)]


def forward(params: Sequence[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Outputs ``[..., B]`` of the stacked MLPs on inputs ``X [..., B, d]`` (leading dims
    broadcast, so one batch ``[S, 1, B, d]`` feeds the ``L`` runs of each seed)."""
    W1, b1, W2, b2 = params
    return (torch.tanh(X @ W1 + b1) @ W2 + b2)[..., 0]


def teacher(task: Task) -> list[torch.Tensor]:
    """The teacher ``f*``: one MLP, parameters with leading dims ``[1, 1]``."""
    gen = torch.Generator().manual_seed(task.seed)
    return init_mlp((1, 1), task.d, task.width, gen, task.teacher_scale)


def eval_set(task: Task, f_star: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixed evaluation inputs ``[1, 1, n_eval, d]`` and clean targets ``[1, 1, n_eval]``."""
    gen = torch.Generator().manual_seed(task.seed + 1)
    X = torch.randn(1, 1, task.n_eval, task.d, generator=gen)
    return X, forward(f_star, X)


def relative_error(params: Sequence[torch.Tensor], X: torch.Tensor, y: torch.Tensor
                   ) -> torch.Tensor:
    """``mean (f - f*)^2 / var f*`` per run, ``[S, L]`` (0 = the teacher)."""
    return ((forward(params, X) - y) ** 2).mean(-1) / y.var()


def flat(params: Sequence[torch.Tensor]) -> torch.Tensor:
    """``[S, L, P]``: each run's parameters in one row (``W1, b1, W2, b2`` order)."""
    return torch.cat([p.flatten(2) for p in params], dim=-1)


# ----------------------------------------------------------------------------- updates
def adam_update(grad: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: int,
                betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> torch.Tensor:
    """torch's Adam direction at step ``t >= 1``: updates the moments ``m``, ``v`` in place and
    returns ``m_hat / (sqrt(v_hat) + eps)``; the step is ``-lr`` times it. At ``t = 1`` it is
    ``g / (|g| + eps)``, so every coordinate moves by ``lr`` (E13 reads ``|dtheta| / lr``)."""
    b1, b2 = betas
    m.mul_(b1).add_(grad, alpha=1 - b1)
    v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
    return (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps)


def due(t: int) -> bool:
    """Whether step ``t`` is evaluated (every step up to 32, then every ``t // 32``)."""
    return t <= EVAL_EVERY_UNTIL or t % (t // EVAL_EVERY_UNTIL) == 0


# ----------------------------------------------------------------------------- one batch size
@dataclass(frozen=True)
class GridResult:
    """Every (seed, lr) run of one batch size; arrays are ``[S, L]`` (NaN: not reached or
    diverged).

    Attributes:
        batch, lrs, seeds, optimizer: what was run.
        steps_run: steps taken (the same for every run of the call).
        steps_to_target: first evaluated step with relative error <= target.
        psi_at_target: ``psi = D_t / D_s`` (eqs. 3.1-3.2) of the path up to that step.
        psi_end: ``psi`` at ``steps_run``.
        error_end: relative error at ``steps_run``.
        step_over_lr: mean over steps and coordinates of ``|dtheta| / lr`` (Adam: of
            ``|m_hat / (sqrt(v_hat) + eps)|``; SGD: of ``|g|``).
        diverged: bool ``[S, L]``.
        path: ``[steps_run + 1, S, L, P]`` parameters when asked for (tests), else None.
    """

    batch: int
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    optimizer: str
    steps_run: int
    steps_to_target: np.ndarray
    psi_at_target: np.ndarray
    psi_end: np.ndarray
    error_end: np.ndarray
    step_over_lr: np.ndarray
    diverged: np.ndarray
    path: np.ndarray | None = None


def _stacked_init(task: Task, seeds: Sequence[int], L: int) -> list[torch.Tensor]:
    """``[S, L, ...]`` parameters: seed ``s``'s initialisation (generator ``10_000 + s``) in
    each of its ``L`` runs."""
    inits = [init_mlp((1, 1), task.d, task.width, torch.Generator().manual_seed(10_000 + s))
             for s in seeds]
    return [torch.cat([one[i].expand(1, L, *one[i].shape[2:]) for one in inits]).contiguous()
            for i in range(4)]


def _done(hit: torch.Tensor, live: torch.Tensor, t: int, stop_factor: float) -> bool:
    """Every live run has arrived, or every seed has and ``t >= stop_factor x`` its first."""
    if bool(((hit > 0) | ~live).all()):
        return True
    arrived = torch.where(hit > 0, hit, torch.iinfo(torch.long).max).min(dim=1).values  # [S]
    return bool((hit > 0).any(dim=1).all()) and t >= stop_factor * float(arrived.max())


def _check_grid(batch, lrs, seeds, steps, optimizer, target, stop_factor) -> None:
    check_int(batch, "batch", 1)
    if not lrs or not all(np.isfinite(lr) and lr > 0 for lr in lrs):
        raise ValueError(f"lrs must be one or more positive numbers, got {lrs!r}")
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be one or more distinct integers, got {seeds!r}")
    check_int(steps, "steps", 1)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if target is not None and not target > 0:
        raise ValueError(f"target must be > 0 or None, got {target!r}")
    if not stop_factor >= 1:
        raise ValueError(f"stop_factor must be >= 1, got {stop_factor!r}")


def train_grid(task: Task, batch: int, lrs: Sequence[float], seeds: Sequence[int], *,
               steps: int, optimizer: str = "sgd", target: float | None = 0.1,
               stop_factor: float = 2.0, betas: tuple[float, float] = (0.9, 0.999),
               eps: float = 1e-8, keep_path: bool = False) -> GridResult:
    """Train the ``len(seeds) x len(lrs)`` runs of one batch size together (one readable loop).

    Seed ``s`` draws its initialisation from generator ``10_000 + s`` and its batches from
    generator ``s``, so a seed's runs do not depend on the other seeds or lrs of the call.

    Args:
        task: the teacher task.
        batch: examples per step ``B``.
        lrs: the lr grid (per step; Adam's ``lr`` is the largest per-coordinate step).
        seeds: run seeds.
        steps: the step budget.
        optimizer: ``"sgd"`` or ``"adam"``.
        target: relative excess error to reach; None: no target, run ``steps`` steps.
        stop_factor: stop once every seed has a run at the target and ``t`` is at least
            ``stop_factor`` times that seed's first hit (its best lr is then known; runs that
            have not arrived are more than ``stop_factor`` times slower: NaN).
        betas, eps: Adam's.
        keep_path: also return every run's parameter path (memory ``steps x runs x P``).

    Returns:
        `GridResult`.
    """
    lrs, seeds = tuple(float(x) for x in lrs), tuple(int(s) for s in seeds)
    _check_grid(batch, lrs, seeds, steps, optimizer, target, stop_factor)
    S, L = len(seeds), len(lrs)
    f_star = teacher(task)
    X_eval, y_eval = eval_set(task, f_star)
    params = _stacked_init(task, seeds, L)
    theta0 = [p.clone() for p in params]
    for p in params:
        p.requires_grad_(True)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    lr = torch.tensor(lrs).expand(S, L)                       # [S, L]
    live = torch.ones(S, L, dtype=torch.bool)
    hit = torch.zeros(S, L, dtype=torch.long)                 # 0: not yet
    moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]
    step_sum = torch.zeros(S, L, dtype=torch.float64)
    P = flat(params).shape[-1]
    pm = tj.PathMetrics(flat(params).detach().reshape(-1), window=1,
                        segments={f"{i}": slice(i * P, (i + 1) * P) for i in range(S * L)})
    path = [flat(params).detach().clone()] if keep_path else None
    var = float(y_eval.var())
    t = 0
    for t in range(1, steps + 1):
        X = torch.stack([torch.randn(batch, task.d, generator=g) for g in gens])[:, None]
        eps_y = torch.stack([torch.randn(batch, generator=g) for g in gens])[:, None]
        with torch.no_grad():
            y = forward(f_star, X) + task.noise * eps_y                      # [S, 1, B]
        batch_loss = ((forward(params, X) - y) ** 2).mean(-1)             # [S, L]
        grads = torch.autograd.grad(batch_loss.sum(), params)
        with torch.no_grad():
            bad = ~torch.isfinite(batch_loss) | (batch_loss > DIVERGED * var)
            if (bad & live).any():
                for p, p0 in zip(params, theta0, strict=True):
                    p[bad & live] = p0[bad & live]
                live &= ~bad
            scale = (lr * live)[..., None, None]
            total = torch.zeros(S, L, dtype=torch.float64)
            for p, g, (m, v) in zip(params, grads, moments, strict=True):
                g = torch.where(live[..., None, None], g, 0.0)
                direction = g if optimizer == "sgd" else adam_update(g, m, v, t, betas, eps)
                p -= scale * direction
                total += direction.abs().flatten(2).sum(-1).double()
            step_sum += total / P
            theta = flat(params)
            pm.update(theta.reshape(-1))
            if keep_path:
                path.append(theta.clone())
            if target is not None and due(t):
                newly = (relative_error(params, X_eval, y_eval) <= target) & live & (hit == 0)
                hit[newly] = t
                if _done(hit, live, t, stop_factor):
                    break
    return _result(task, batch, lrs, seeds, optimizer, t, hit, live, pm, step_sum,
                   relative_error(params, X_eval, y_eval).detach(), path)


def _result(task, batch, lrs, seeds, optimizer, t, hit, live, pm, step_sum, error, path
            ) -> GridResult:
    """Collect one call's numbers (NaN for runs that did not arrive or diverged)."""
    S, L = len(seeds), len(lrs)
    psi = pm.result()["layer_psi"].reshape(t, S, L)           # [T, S, L], psi(t) per run
    dead = ~live.numpy()
    hit = hit.numpy()
    arrived = (hit > 0) & ~dead
    at_target = np.full((S, L), np.nan)
    at_target[arrived] = psi[hit[arrived] - 1, *np.nonzero(arrived)]

    def nan_dead(a):
        return np.where(dead, np.nan, a)

    return GridResult(
        batch=batch, lrs=lrs, seeds=seeds, optimizer=optimizer, steps_run=t,
        steps_to_target=np.where(arrived, hit, np.nan).astype(np.float64),
        psi_at_target=at_target, psi_end=nan_dead(psi[-1]),
        error_end=nan_dead(error.numpy().astype(np.float64)),
        step_over_lr=nan_dead((step_sum / t).numpy()), diverged=dead,
        path=None if path is None else torch.stack(path).numpy())


# ----------------------------------------------------------------------------- the sweep
def sweep(task: Task, batches: Sequence[int], lrs: Sequence[float], seeds: Sequence[int], *,
          steps: int, optimizer: str = "sgd", target: float | None = 0.1,
          stop_factor: float = 2.0) -> pd.DataFrame:
    """`train_grid` at every batch size: one row per (batch, seed, lr) run.

    Returns:
        Columns ``batch, seed, lr, steps_to_target, psi_at_target, psi_end, error_end,
        step_over_lr, diverged, steps_run``.
    """
    rows = []
    for B in batches:
        r = train_grid(task, int(B), lrs, seeds, steps=steps, optimizer=optimizer,
                       target=target, stop_factor=stop_factor)
        for i, s in enumerate(r.seeds):
            for j, lr in enumerate(r.lrs):
                rows.append({"batch": r.batch, "seed": s, "lr": lr,
                             "steps_to_target": r.steps_to_target[i, j],
                             "psi_at_target": r.psi_at_target[i, j], "psi_end": r.psi_end[i, j],
                             "error_end": r.error_end[i, j],
                             "step_over_lr": r.step_over_lr[i, j],
                             "diverged": bool(r.diverged[i, j]), "steps_run": r.steps_run})
    return pd.DataFrame(rows)


def best_lr(runs: pd.DataFrame) -> pd.DataFrame:
    """Each (batch, seed)'s fastest run: ``batch, seed, lr, steps_to_target, psi_at_target``
    (NaN where no lr of the grid reached the target; ties go to the smaller lr)."""
    out = []
    for (B, s), g in runs.groupby(["batch", "seed"], sort=True):
        ok = g[np.isfinite(g["steps_to_target"])]
        if ok.empty:
            out.append({"batch": B, "seed": s, "lr": np.nan, "steps_to_target": np.nan,
                        "psi_at_target": np.nan})
            continue
        row = ok.sort_values(["steps_to_target", "lr"]).iloc[0]
        out.append({"batch": B, "seed": s, "lr": row["lr"],
                    "steps_to_target": row["steps_to_target"],
                    "psi_at_target": row["psi_at_target"]})
    return pd.DataFrame(out)


def loglog_slope(x, y) -> float:
    """Least-squares slope of ``log y`` on ``log x`` (NaN if fewer than two finite points):
    -1 where ``y`` is proportional to ``1 / x``, 0 on a plateau."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 2:
        return math.nan
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def slopes_per_seed(best: pd.DataFrame, batches: Sequence[int]) -> np.ndarray:
    """`loglog_slope` of steps-to-target on ``batches`` for each seed of `best_lr`'s table
    (seed order), ``[S]``."""
    pick = best[best["batch"].isin(list(batches))]
    return np.array([loglog_slope(g["batch"], g["steps_to_target"])
                     for _, g in pick.groupby("seed", sort=True)])
