"""The filtered-noise null of directedness: pure gradient noise passed through an optimiser's
update rule (SGD momentum, Adam's moments), with the run's hyper-parameters, lr schedule,
dimension and step count.

A random walk is the null of a *memoryless* optimiser (plain SGD on noise). A momentum buffer
or Adam's first moment averages the noise over ~``1/(1-beta)`` steps, so consecutive updates
are correlated and the path is straighter than a walk's with no signal at all: iid Gaussian
"gradients" through SGD momentum 0.85 give ``psi_16`` about 2.75 times the walk's ``1/sqrt(16)``.
A claim that a trained trajectory is directed is judged against this path (`filtered_noise_null`),
not against the walk. With momentum 0 and a constant lr it is the random walk
(`lalr_core.methods.trajectory.simulate_rw` up to its draws).

What is left out: weight decay (it couples the update to ``theta``, a pull towards 0 that is part of
the run, not of the noise) and any signal. Adam's ``eps`` is kept; the gradients have unit
variance, so ``eps`` is negligible as long as the run's gradients are far above ``eps``.

The coordinates of isotropic noise are filtered independently and identically, so the path
metrics need only per-step sums over coordinates: the simulation runs on chunks of coordinates
(``scipy.signal.lfilter`` along the steps), accumulating ``||s_t||^2``, ``||theta_t -
theta_0||^2`` and ``||theta_t - theta_{t-N}||^2``; it never holds the path. The conventions are
`PathMetrics`' (steps ``t = 1..T`` from ``theta_0``; the window truncated at ``theta_0`` for
``t < N``).

Part of `lalr_core.methods.trajectory` (its docstring states the conventions); import it from
this module.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import signal

from lalr_core.methods.trajectory.validation import check_window

OPTIMIZERS = ("sgd", "sgdm", "adam")
CHUNK_ELEMENTS = 1 << 22  # steps x coordinates simulated at once (32 MiB of float64)


def _lr_per_step(lr, T: int) -> np.ndarray:
    lr = np.broadcast_to(np.asarray(lr, dtype=np.float64), (T,)) if np.ndim(lr) == 0 \
        else np.asarray(lr, dtype=np.float64)
    if lr.shape != (T,) or not np.all(lr > 0):
        raise ValueError(f"lr must be a positive scalar or one value per step ({T}), got "
                         f"shape {lr.shape}")
    return lr


def multistep_lr(lr: float, T: int, drops: Sequence[int], decay: float) -> np.ndarray:
    """The per-step lr ``(T,)`` of a multistep schedule: ``lr`` times ``decay`` per drop
    passed, ``drops`` the last step at each old lr (step ``d + 1`` has the new one).

    Example:
        >>> multistep_lr(1.0, 5, [2, 4], 0.1).round(3).tolist()
        [1.0, 1.0, 0.1, 0.1, 0.01]
    """
    t = np.arange(1, T + 1)
    passed = (t[:, None] > np.asarray(list(drops), dtype=np.int64)[None, :]).sum(1)
    return float(lr) * float(decay) ** passed


def filter_updates(grads, optimizer: str, *, lr=1.0, momentum: float = 0.0,
                   betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> np.ndarray:
    """The updates ``theta_t - theta_{t-1}`` ``(T, c)`` that ``optimizer`` makes from the
    gradients ``grads`` ``(T, c)`` (rows: steps), as torch's optimisers compute them without
    weight decay: ``"sgd"`` ``-lr_t g_t``; ``"sgdm"`` ``-lr_t b_t`` with ``b_1 = g_1``, ``b_t =
    momentum b_{t-1} + g_t``; ``"adam"`` ``-lr_t m_hat_t / (sqrt(v_hat_t) + eps)`` with the
    bias-corrected moments of ``betas``. ``lr``: a scalar or one value per step."""
    g = np.asarray(grads, dtype=np.float64)
    if g.ndim != 2:
        raise ValueError(f"grads must be (steps, coordinates), got shape {g.shape}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    lr = _lr_per_step(lr, g.shape[0])[:, None]
    if optimizer == "sgd" or (optimizer == "sgdm" and momentum == 0):
        return -lr * g
    if optimizer == "sgdm":
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
        return -lr * signal.lfilter([1.0], [1.0, -momentum], g, axis=0)
    b1, b2 = (float(b) for b in betas)
    if not (0 <= b1 < 1 and 0 <= b2 < 1):
        raise ValueError(f"betas must lie in [0, 1), got {betas!r}")
    t = np.arange(1, g.shape[0] + 1, dtype=np.float64)[:, None]
    m = signal.lfilter([1 - b1], [1.0, -b1], g, axis=0) / (1 - b1 ** t)
    v = signal.lfilter([1 - b2], [1.0, -b2], g * g, axis=0) / (1 - b2 ** t)
    return -lr * m / (np.sqrt(np.maximum(v, 0.0)) + eps)


def filtered_noise_path(n: int, T: int, optimizer: str, *, window: int, lr=1.0,
                        momentum: float = 0.0, betas: tuple[float, float] = (0.9, 0.999),
                        eps: float = 1e-8, seed: int | np.random.Generator = 0,
                        chunk_elements: int = CHUNK_ELEMENTS) -> dict[str, np.ndarray]:
    """Path metrics of iid ``N(0, I_n)`` gradients through ``optimizer``'s update rule
    (`filter_updates`) for ``T`` steps: what `PathMetrics` would record on that path.

    The gradients are drawn chunk by chunk of coordinates (``chunk_elements // T`` at a time),
    each chunk one ``standard_normal((T, c))`` draw from one generator: with ``n`` at most one
    chunk, ``grads = default_rng(seed).standard_normal((T, n))``.

    Returns:
        dict of ``(T,)`` float64 arrays: ``step_norm``, ``ds``, ``dt``, ``psi``, ``ds_window``,
        ``dt_window``, ``psi_window`` (eqs. 3.1-3.5).
    """
    for name, v, lo in (("n", n, 1), ("T", T, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    N = check_window(window)
    rng = np.random.default_rng(seed)
    step_sq, dt_sq, win_sq = np.zeros(T), np.zeros(T), np.zeros(T)
    per = max(1, int(chunk_elements) // T)
    for start in range(0, n, per):
        c = min(per, n - start)
        u = filter_updates(rng.standard_normal((T, c)), optimizer, lr=lr, momentum=momentum,
                           betas=betas, eps=eps)
        pos = np.cumsum(u, axis=0)                      # theta_t - theta_0, t = 1..T
        back = np.zeros_like(pos)                       # theta_{t-N} - theta_0 (0 for t <= N)
        if N < T:
            back[N:] = pos[:-N]
        step_sq += np.einsum("tc,tc->t", u, u)
        dt_sq += np.einsum("tc,tc->t", pos, pos)
        win_sq += np.einsum("tc,tc->t", pos - back, pos - back)
    step = np.sqrt(step_sq)
    ds = np.cumsum(step)
    ds_window = ds - np.concatenate([np.zeros(min(N, T)), ds[:-N]]) if N < T else ds.copy()
    dt, dt_window = np.sqrt(dt_sq), np.sqrt(win_sq)
    return {"step_norm": step, "ds": ds, "dt": dt, "psi": dt / ds, "ds_window": ds_window,
            "dt_window": dt_window, "psi_window": dt_window / ds_window}


def filtered_noise_null(n: int, T: int, optimizer: str, *, window: int, seeds: Sequence[int],
                        **kw) -> dict[str, np.ndarray]:
    """`filtered_noise_path` for each null seed, stacked: every key ``(len(seeds), T)``."""
    if not len(seeds):
        raise ValueError("the null needs at least one seed")
    paths = [filtered_noise_path(n, T, optimizer, window=window, seed=int(s), **kw)
             for s in seeds]
    return {k: np.stack([p[k] for p in paths]) for k in paths[0]}


def momentum_psi_window_limit(window: int, momentum: float, t: int | None = None) -> float:
    """The ``n -> infinity`` limit of ``psi_N(t)`` of SGD momentum on iid isotropic noise at a
    constant lr (closed form): ``sqrt(sum_k c_k^2) / sum_s sqrt(sum_{k<=s} beta^(2(s-k)))``
    over the window's steps ``s = t-N+1..t``, with ``c_k = sum_{s>=k in the window}
    beta^(s-k)`` the weight of gradient ``k`` in the window's displacement. ``t`` defaults to
    the stationary limit (``t -> infinity``, computed at a ``t`` where ``beta^t`` vanishes).
    With ``beta = 0``: ``1/sqrt(N)``, the random walk's."""
    N = check_window(window)
    b = float(momentum)
    if not 0 <= b < 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    if t is None:
        t = N + (int(np.ceil(40 / -np.log(b))) if b > 0 else 0)
    s = np.arange(max(t - N, 0) + 1, t + 1)             # the window's steps
    k = np.arange(1, t + 1)                              # every gradient so far
    lag = s[:, None] - k[None, :]
    w = np.where(lag >= 0, b ** np.maximum(lag, 0), 0.0)  # weight of g_k in update s
    c = w.sum(0)
    norms = np.sqrt((w ** 2).sum(1))
    return float(np.sqrt((c ** 2).sum()) / norms.sum())
