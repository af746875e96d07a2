"""Power-law fits of an ESD tail (eqs. 1.7-1.9): ``fit_alpha`` (x_min rules "median", "ks",
"ww" or a float) and ``alphas`` (every layer; ``alphas(model, **WW_CONVENTION)`` is
WeightWatcher's ``analyze``).

Part of `lalr_core.methods.spectra` (its docstring states the sources and conventions).
"""

from __future__ import annotations

import math
from types import MappingProxyType

import pandas as pd
import torch

from lalr_core.methods.spectra.matrices import as_mats, esds, worker_pool

XMIN_RULES = ("median", "ks", "ww")
KS_CHUNK = 2**21      # max (candidates x eigenvalues) entries per KS block: 16 MiB per
#                       float64 temporary, a block peaks at ~4 of them (~64 MiB)
KS_GRID = 64          # tail points per candidate in the KS scan's first bounding pass
KS_TOL = 1e-12        # rounding slack when a KS bound rules a candidate out (D is in [0, 1])
WW_SMALL_N = 20       # WeightWatcher's SMALL_N_CUTOFF: fewer eigenvalues -> its small-N rule
# WeightWatcher 0.7.7 ``analyze()`` defaults on a PyTorch model, as `alphas` keywords (see
# there); "method" only picks the fast CPU path (per-matrix LAPACK, as WW's SciPy SVDs)
WW_CONVENTION = MappingProxyType({"conv": "slices", "conv_norm": 0.5, "xmin": "ww",
                                  "eig_floor": 1e-5, "method": "threads"})


# ----------------------------------------------------------------------------- power law


def _prep_eigs(eigs, eig_floor: float) -> torch.Tensor:
    lam = torch.as_tensor(eigs).detach().double()
    if lam.ndim != 1:
        raise ValueError(f"eigs must be 1-D, got shape {tuple(lam.shape)}")
    if not torch.isfinite(lam).all():
        raise ValueError("eigs contain non-finite values")
    lam = torch.sort(lam[lam > eig_floor]).values       # logs need lambda > 0
    if lam.numel() < 2:
        raise ValueError(f"need >= 2 eigenvalues > eig_floor={eig_floor}, got {lam.numel()}")
    return lam


def _ks_distances(logs: torch.Tensor, idx: torch.Tensor, log_xmin: torch.Tensor,
                  alpha: torch.Tensor) -> torch.Tensor:
    """KS distance of each candidate tail ``logs[idx[c]:]`` to its fitted power law.

    ``D = max_k |1 - (lambda_k / x_min)^(1 - alpha) - k / n|``, k = 0..n-1 indexing the tail
    (Clauset et al. 2009; the empirical CDF ``k / n`` is powerlaw 2.0's and WeightWatcher's).
    Every tail point is evaluated, in blocks of <= ``KS_CHUNK`` entries over the columns the
    block's tails span; `_ks_scan` is the fast path for many candidates.
    """
    N = logs.numel()
    out = torch.empty(idx.numel(), dtype=torch.float64, device=logs.device)
    step = max(1, KS_CHUNK // N)
    for s in range(0, idx.numel(), step):
        i, a, lx = idx[s:s + step, None], alpha[s:s + step, None], log_xmin[s:s + step, None]
        c0 = int(i.min())                                               # first column used
        j = torch.arange(c0, N, device=logs.device) - i                 # (B, N - c0) tail pos.
        n = (N - i).double()
        fit = 1.0 - torch.exp((1.0 - a) * (logs[None, c0:] - lx))      # power-law CDF
        diff = (fit - j / n).abs().masked_fill(j < 0, 0.0)
        out[s:s + step] = diff.amax(dim=1)
    return torch.where(alpha > 1.0, out, torch.ones_like(out))        # D = 1 if alpha <= 1


def _ks_bounds(logs: torch.Tensor, idx: torch.Tensor, alpha: torch.Tensor,
               G: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Lower and upper bounds on each candidate's KS distance from ``G`` points of its tail.

    The points ``k_t = i + floor(t (n - 1) / (G - 1))``, t = 0..G-1, run from x_min to the
    largest eigenvalue. Lower bound: the max of ``|F - e|`` over them (exact when n <= G, as
    the points then cover the whole tail). Upper bound: between two points both the fitted CDF
    F and the empirical e = k / n increase (alpha > 1), so ``|F_k - e_k|`` there is at most
    ``max(F_t+1 - e_t, e_t+1 - F_t)``.
    """
    N = logs.numel()
    lo, hi = torch.empty_like(alpha), torch.empty_like(alpha)
    t = torch.arange(G, device=logs.device)
    step = max(1, KS_CHUNK // G)
    for s in range(0, idx.numel(), step):
        i, a = idx[s:s + step, None], alpha[s:s + step, None]
        k = i + t * (N - 1 - i) // (G - 1)                               # (B, G) tail points
        F = 1.0 - torch.exp((1.0 - a) * (logs[k] - logs[i]))            # as in _ks_distances
        e = (k - i) / (N - i).double()
        lo[s:s + step] = (F - e).abs().amax(dim=1)
        hi[s:s + step] = torch.maximum(F[:, 1:] - e[:, :-1], e[:, 1:] - F[:, :-1]).amax(dim=1)
    return lo, hi


def _ks_scan(logs: torch.Tensor, idx: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """KS distances of all candidates, exact wherever the distance can be the smallest.

    Branch and bound (an exact `_ks_distances` of every candidate is O(N^2) exps): bound every
    candidate from ``KS_GRID`` points of its tail (`_ks_bounds`); the smallest upper bound caps
    the minimum, so a candidate whose lower bound exceeds it cannot be the argmin and drops
    out; the rest are bounded again on 8x more points, until each is exact (n <= points) or
    an exact pass is as cheap as another bound. Entries of the dropped candidates are their
    lower bounds, each > the minimum, so ``argmin`` (first minimum) is that of the exact D.
    ``alpha <= 1`` gives D = 1 (as `_ks_distances`); ``alpha = inf`` (a tail of equal values,
    rule "ww" only) gives WeightWatcher's ``(n - 1) / n``. ResNet-18's 21 layers (slices, up
    to 4608 eigenvalues): 0.05 s against 1.23 s for the exact D of every candidate (1 core).
    """
    N = logs.numel()
    n = (N - idx).double()
    D = torch.where(torch.isinf(alpha), (n - 1) / n, torch.ones_like(alpha))
    live = torch.nonzero((alpha > 1) & torch.isfinite(alpha)).flatten()
    best, G = float(D.min()), KS_GRID
    while live.numel() > 0:
        i, a = idx[live], alpha[live]
        if int((N - i).sum()) <= 4 * live.numel() * G:    # exact costs about one more bound
            D[live] = _ks_distances(logs, i, logs[i], a)
            break
        lo, hi = _ks_bounds(logs, i, a, G)
        D[live] = lo                                       # exact where n <= G
        best = min(best, float(hi.min()))
        live = live[(N - i > G) & (lo <= best + KS_TOL)]
        G *= 8
    return D


def _mle(logs: torch.Tensor, idx: torch.Tensor, log_xmin: torch.Tensor) -> torch.Tensor:
    """Eq. 1.9, alpha = 1 + n / sum_i ln(x_i / x_min), for the tails ``logs[idx:]``."""
    suffix = torch.flip(torch.cumsum(torch.flip(logs, [0]), 0), [0])    # sum_{k >= i} ln x_k
    n = (logs.numel() - idx).double()
    return 1.0 + n / (suffix[idx] - n * log_xmin)                      # eq. 1.9


def _ks_candidates(lam: torch.Tensor) -> torch.Tensor:
    # powerlaw.Fit scans the unique values except the largest (it is also x_max).
    first = torch.ones_like(lam, dtype=torch.bool)
    first[1:] = lam[1:] != lam[:-1]
    idx = torch.nonzero(first).flatten()
    return idx[lam[idx] < lam[-1]]


def _ww_small_n(lam: torch.Tensor, logs: torch.Tensor) -> dict:
    """WeightWatcher 0.7.7's fit of fewer than ``WW_SMALL_N`` eigenvalues (rule "ww").

    As WW_powerlaw.py ``WWFit.fit_powerlaw_smallN`` (``k_min=8``) and then ``WWFit.__init__``:
    each tail of >= 8 values with ``s = sum ln(x / x_min) > 1e-12`` gets the bias-corrected
    MLE ``alpha = 1 + (n - 1) / s`` and its KS distance, every other candidate D = 1, and the
    first minimum of D wins (``__init__`` overwrites the pick by ``D - 0.868 / sqrt(n)`` that
    ``fit_powerlaw_smallN`` makes). No such tail (N < 8): the whole spectrum, or alpha 0 (WW's
    unset value) when its ``s <= 1e-12``.
    """
    N = lam.numel()
    idx = torch.arange(N - 1, device=lam.device)
    n = (N - idx).double()
    gaps = logs[None, :] - logs[idx, None]                             # (N-1, N) ln(x / x_min)
    s = gaps.masked_fill(torch.arange(N, device=lam.device) < idx[:, None], 0.0).sum(1)
    alpha = 1.0 + (n - 1.0) / s                                        # bias-corrected MLE
    ok = (n >= 8) & (s > 1e-12)
    if not ok.any():                                                   # WW's fallback
        ok = (idx == 0) & (s > 1e-12)
    D = torch.where(ok, _ks_distances(logs, idx, logs[idx], alpha), 1.0)
    best = int(torch.argmin(D))                                        # first minimum
    return {"alpha": float(alpha[best]) if ok[best] else 0.0, "xmin": float(lam[best]),
            "n_tail": N - best, "ks_distance": float(D[best])}


def fit_alpha(eigs, xmin="median", xmin_pos: float = 2.0,
              eig_floor: float | None = 0.0) -> dict:
    """Continuous power-law MLE of the ESD tail (eqs. 1.7-1.9).

    ``p(x) ~ x^-alpha`` for ``x >= x_min`` (eq. 1.7); the MLE of eq. 1.9 is
    ``alpha = 1 + n / sum_{lambda_i >= x_min} ln(lambda_i / x_min)``. x_max is the largest
    eigenvalue and is not used by the MLE (as in TempBalance, WeightWatcher, powerlaw). The
    source does not say how x_min is chosen; rules (our choices):

    * ``"median"``: TempBalance's default: sorted ascending, ``i = int(N / xmin_pos)``,
      ``x_min = lambda_i`` (the median for ``xmin_pos=2``), tail = ``lambda_i..lambda_{N-1}``,
      ``n = N - i``; what ``N`` counts is set by ``eig_floor`` (below).
    * ``"ks"``: Clauset-Shalizi-Newman: every unique eigenvalue but the largest is a candidate
      x_min; keep the one minimising the KS distance (as ``powerlaw.Fit(data)``, continuous).
      All candidates' alphas come from suffix sums of the sorted logs; the KS distances by
      branch and bound (`_ks_scan`): the exact first minimum, without evaluating every one of
      the O(N^2) tail points, in blocks of bounded memory.
    * ``"ww"``: WeightWatcher 0.7.7's x_min (WW_powerlaw.py ``WWFit``, its default
      ``pl_package="ww"``): as ``"ks"``, but every sorted eigenvalue except the last is a
      candidate, each copy of a tied value included; below ``WW_SMALL_N = 20`` eigenvalues,
      WW's small-N rule (`_ww_small_n`). WW first drops eigenvalues ``<= 1e-5``: pass
      ``eig_floor=1e-5``, or use ``alphas(model, **WW_CONVENTION)``.
    * a float: fixed x_min, tail = ``lambda >= x_min`` (as ``powerlaw.Fit(data, xmin=x)``).

    The count ``N`` of a rank-deficient spectrum. `esd` sets the eigenvalues of a rank-deficient
    ``W`` that lie within eigvalsh's rounding of 0 (``<= max(n, m) eps lambda_max``) to exactly
    0. YefanZhou/TempBalance tempbalance.py ``net_esd_estimator`` (squared ``svdvals``) has
    ``filter_zeros=False`` by default: ``N = len(eigs)``, numerical zeros included, so its
    median-rule x_min is the middle of the *whole* spectrum; ``filter_zeros=True`` first drops
    eigenvalues ``<= EVALS_THRESH = 1e-5``. Here:

    * ``eig_floor=None``: TempBalance's default count. The median rule counts every eigenvalue
      given (zeros and rounding negatives included) and fits the tail above its x_min. If
      x_min is itself a zero (rank ``<= N - i``), eq. 1.9's sum is infinite and alpha is its
      limit 1 (``xmin = 0``, ``ks_distance = 1``). TempBalance reads rounding noise there
      instead: a rank-10 200 x 150 product of Gaussians gives ~1.09 with float64 SVD, ~1.16
      with float32 (tests/test_spectral.py). The KS rule and a fixed x_min count the
      eigenvalues > 0 (their logs need lambda > 0).
    * a float (default ``0.0``, as before this option existed): eigenvalues ``<= eig_floor``
      are dropped first and every rule counts only the rest. TempBalance's
      ``filter_zeros=True`` is ``eig_floor=1e-5``; WeightWatcher also uses 1e-5. The default
      drops only `esd`'s exact zeros, so a channel-pruned matrix gets the alpha of its kept
      rows (the 02b pruning chapter's fine-tuning alphas depend on this).

    On a spectrum without zeros (every full-rank layer) both counts give bit-identical fits.

    Pitfall when using powerlaw 2.0 as an oracle: its ``power_law`` has
    ``DEFAULT_PARAMETER_RANGES = {'alpha': [0, 3]}``, so alpha > 3 is clipped to 3 unless
    ``parameter_ranges={'alpha': [1, 20]}`` is passed; with it, it equals this MLE exactly.

    Args:
        eigs: 1-D eigenvalues (any order), e.g. from `esd`.
        xmin: ``"median"``, ``"ks"``, ``"ww"`` or a positive float.
        xmin_pos: TempBalance's divisor for the ``"median"`` rule; > 1.
        eig_floor: eigenvalues ``<= eig_floor`` are dropped first; ``None`` keeps them in the
            median rule's count (TempBalance's default, see above). The default drops only
            exact zeros (and negatives), whose log is -inf (nan).

    Returns:
        ``{"alpha", "xmin", "n_tail", "ks_distance"}``; alpha is ``inf`` if every tail
        eigenvalue equals x_min.

    Raises:
        ValueError: eigs not 1-D / non-finite / fewer than 2 left, unknown rule, bad
            ``xmin_pos``, or an empty tail for a fixed x_min.
    """
    lam = _prep_eigs(eigs, 0.0 if eig_floor is None else eig_floor)
    logs, N = lam.log(), lam.numel()
    if isinstance(xmin, str):
        if xmin not in XMIN_RULES:
            raise ValueError(f"xmin must be one of {XMIN_RULES} or a float, got {xmin!r}")
        if xmin == "median":
            if not xmin_pos > 1:
                raise ValueError(f"xmin_pos must be > 1, got {xmin_pos}")
            count = N if eig_floor is not None else torch.as_tensor(eigs).numel()
            i, below = int(count / xmin_pos), count - N   # below: counted, <= 0, not in lam
            if i < below:                                 # x_min is a zero: the limit alpha 1
                return {"alpha": 1.0, "xmin": 0.0, "n_tail": count - i, "ks_distance": 1.0}
            idx = torch.tensor([i - below], device=lam.device)
        elif xmin == "ww":
            if N < WW_SMALL_N:
                return _ww_small_n(lam, logs)
            idx = torch.arange(N - 1, device=lam.device)           # ties included
        else:
            idx = _ks_candidates(lam)
            if idx.numel() == 0:
                raise ValueError("ks rule needs >= 2 distinct eigenvalues")
        log_xmin = logs[idx]
    else:
        x = float(xmin)
        if not x > 0:
            raise ValueError(f"fixed xmin must be > 0, got {xmin}")
        idx = torch.searchsorted(lam, torch.tensor([x], dtype=torch.float64, device=lam.device))  # first >= x
        if int(idx) >= N:
            raise ValueError(f"empty tail: no eigenvalue >= xmin={x} (max {lam[-1].item():.4g})")
        log_xmin = torch.tensor([math.log(x)], dtype=torch.float64, device=lam.device)
    alpha = _mle(logs, idx, log_xmin)                                  # every candidate's
    if isinstance(xmin, str) and xmin != "median":
        D = _ks_scan(logs, idx, alpha)
    else:
        D = _ks_distances(logs, idx, log_xmin, alpha)
    best = int(torch.argmin(D))                                        # first minimum
    return {"alpha": float(alpha[best]), "xmin": float(log_xmin[best].exp()),
            "n_tail": int(N - idx[best]), "ks_distance": float(D[best])}


def alphas(model_or_mats, xmin="median", conv: str = "slices", conv_norm: float = 1.0,
           method: str = "batched", **fit_kw) -> pd.DataFrame:
    """`fit_alpha` of every layer's `esd` (no 1/N; alpha is scale invariant).

    ``alphas(model, **WW_CONVENTION)`` computes the alphas of WeightWatcher 0.7.7's
    ``WeightWatcher(model=model).analyze()`` (its defaults, on a CPU-only machine; see the
    package docstring): kernel slices pooled, conv eigenvalues scaled by WW's ``conv2d_norm``
    factor 0.5, eigenvalues ``<= 1e-5`` dropped, x_min rule ``"ww"``. WW skips layers whose
    ``min(n, m) * kh * kw`` is below 8 or above 15000; here every layer gets a row.

    Args:
        model_or_mats: ``nn.Module`` or ``{name: matrix}``.
        xmin: x_min rule, see `fit_alpha`.
        conv: conv handling when a module is given (`layer_matrices`; default slices).
        conv_norm: the eigenvalues of stacked conv slices (3-D matrices) are multiplied by it,
            as if each slice were multiplied by ``sqrt(conv_norm)`` (`layer_matrices`' option,
            but exact); > 0. Alpha does not depend on it, x_min and ``eig_floor`` do.
        method: ``"batched"`` (default) or ``"threads"``: how `esds` computes the spectra;
            ``"threads"`` also fits the layers on its `worker_pool` (CPU), largest first.
        **fit_kw: ``xmin_pos``, ``eig_floor`` for `fit_alpha`.

    Returns:
        DataFrame indexed by layer name: ``alpha, xmin, n_tail, ks_distance, n_eigs``.

    Raises:
        ValueError: non-positive ``conv_norm``, or as `fit_alpha` / `esds`.
    """
    if not conv_norm > 0:
        raise ValueError(f"conv_norm must be > 0, got {conv_norm}")
    mats = as_mats(model_or_mats, conv)
    lams = esds(mats, method=method)
    if conv_norm != 1.0:
        lams = {k: lam * conv_norm if mats[k].ndim >= 3 else lam for k, lam in lams.items()}

    def fit(name: str) -> dict:
        return {**fit_alpha(lams[name], xmin=xmin, **fit_kw), "n_eigs": lams[name].numel()}

    if method == "threads" and all(lam.device.type == "cpu" for lam in lams.values()):
        order = sorted(lams, key=lambda k: -lams[k].numel())            # largest first
        with worker_pool() as pool:
            rows = dict(zip(order, pool.map(fit, order)))
    else:
        rows = {name: fit(name) for name in lams}
    return pd.DataFrame.from_dict({name: rows[name] for name in lams}, orient="index")
