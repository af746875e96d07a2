"""Power-law fits of an ESD tail (eqs. 1.7-1.9): ``fit_alpha`` (x_min rules "median", "ks" or a
float) and ``alphas`` (every layer).

Part of `lalr_core.methods.spectral` (its docstring states the sources and conventions).
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from lalr_core.methods.spectral.matrices import esds

XMIN_RULES = ("median", "ks")
KS_CHUNK = 2**22            # max (candidates x eigenvalues) entries per block of the KS scan


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
    """
    N = logs.numel()
    k = torch.arange(N, dtype=torch.float64, device=logs.device)  # on the spectrum's device
    out = torch.empty(idx.numel(), dtype=torch.float64, device=logs.device)
    step = max(1, KS_CHUNK // N)
    for s in range(0, idx.numel(), step):
        i, a, lx = idx[s:s + step, None], alpha[s:s + step, None], log_xmin[s:s + step, None]
        j = k[None, :] - i                                              # (B, N) tail position
        n = (N - i).double()
        fit = 1.0 - torch.exp((1.0 - a) * (logs[None, :] - lx))         # power-law CDF
        diff = (fit - j / n).abs().masked_fill(j < 0, 0.0)
        out[s:s + step] = diff.amax(dim=1)
    return torch.where(alpha > 1.0, out, torch.ones_like(out))        # D = 1 if alpha <= 1


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


def fit_alpha(eigs, xmin="median", xmin_pos: float = 2.0,
              eig_floor: float | None = 0.0) -> dict:
    """Continuous power-law MLE of the ESD tail (eqs. 1.7-1.9).

    ``p(x) ~ x^-alpha`` for ``x >= x_min`` (eq. 1.7); the MLE of eq. 1.9 is
    ``alpha = 1 + n / sum_{lambda_i >= x_min} ln(lambda_i / x_min)``. x_max is the largest
    eigenvalue and is not used by the MLE (as in TempBalance, WeightWatcher, powerlaw). The
    source does not say how x_min is chosen (digest A-1); rules:

    * ``"median"``: TempBalance's default: sorted ascending, ``i = int(N / xmin_pos)``,
      ``x_min = lambda_i`` (the median for ``xmin_pos=2``), tail = ``lambda_i..lambda_{N-1}``,
      ``n = N - i``; what ``N`` counts is set by ``eig_floor`` (below).
    * ``"ks"``: Clauset-Shalizi-Newman: every unique eigenvalue but the largest is a candidate
      x_min; keep the one minimising the KS distance (as ``powerlaw.Fit(data)``, continuous).
      O(N^2) work, blocked in memory.
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
        xmin: ``"median"``, ``"ks"`` or a positive float.
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
    alpha = _mle(logs, idx, log_xmin)
    D = _ks_distances(logs, idx, log_xmin, alpha)
    best = int(torch.argmin(D))                                        # first minimum
    return {"alpha": float(alpha[best]), "xmin": float(log_xmin[best].exp()),
            "n_tail": int(N - idx[best]), "ks_distance": float(D[best])}


def alphas(model_or_mats, xmin="median", conv: str = "slices", **fit_kw) -> pd.DataFrame:
    """`fit_alpha` of every layer's `esd` (no 1/N; alpha is scale invariant).

    Args:
        model_or_mats: ``nn.Module`` or ``{name: matrix}``.
        xmin: x_min rule, see `fit_alpha`.
        conv: conv handling when a module is given (`layer_matrices`; default slices).
        **fit_kw: ``xmin_pos``, ``eig_floor`` for `fit_alpha`.

    Returns:
        DataFrame indexed by layer name: ``alpha, xmin, n_tail, ks_distance, n_eigs``.
    """
    rows = {name: {**fit_alpha(lam, xmin=xmin, **fit_kw), "n_eigs": lam.numel()}
            for name, lam in esds(model_or_mats, conv=conv).items()}
    return pd.DataFrame.from_dict(rows, orient="index")
