"""Layer-wise learning-rate allocation from per-layer power-law alphas (seed 001, ch. 2).

Chapter 02 (figs 2.1-2.6, the text's allocation experiments, and the fine-tuning figures
3.22-3.26; the notebook is still to come, issue 4). The alphas come from ``lalr_core.spectral`` (one per layer, in
layer order); this module only maps ``(alphas, lr_t) -> lrs``:

* ``tb_linear`` -- YefanZhou/TempBalance:tempbalance.py ``tb_linear_map`` (anchors, Topic 2):
  linear in alpha between ``lr_min_ratio * lr_t`` and ``lr_max_ratio * lr_t``;
* weighted probabilities ``lr_i = lr_t * n * g(alpha_i) / sum_j g(alpha_j)`` with ``g`` the
  identity (eq. 2.13), a power (2.16-2.17), a root (2.18), a logarithm (2.18 text) or ``exp``
  (softmax, 2.19);
* ``neg_pow2`` -- dyadic probabilities permuted by the alpha ranks (2.20-2.22);
* sampling schemes -- Gaussians around each alpha (2.26-2.27), around ``lr_t`` (2.28-2.29) and
  the exponential / EMG model of alpha (2.30-2.31), each with an explicit generator.

Direction: every scheme gives a larger (or, for sampling, rank-wise larger) lr to a larger
alpha -- a heavier-tailed, i.e. *less* trained layer in HT-SR terms (source sec. 2.3; TempBalance).
Every scheme but ``tb_linear`` preserves the sum, ``sum_i lr_i = n * lr_t`` (``SUM_PRESERVING``).

Conventions: every scheme takes ``alphas`` (`[n]`, one per layer in layer order; numpy, list or
tensor) and ``lr_t`` (the schedule's global lr at step t, e.g. eq. 2.12, >= 0), returns `[n]`
float64 lrs in the units of lr_t, and raises ``ValueError`` naming a bad value. Sampling schemes
need a keyword ``rng`` (``np.random.Generator`` or ``torch.Generator``; never the global RNG).
`LayerLR` ties the lrs to a torch optimiser's param groups by parameter identity.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import torch
from torch import nn

from .layers import weight_layers

__all__ = [
    "SCHEMES", "SUM_PRESERVING", "LayerLR", "allocate", "emg", "gauss_alpha", "gauss_lr",
    "layer_groups", "log", "neg_pow2", "neg_pow2_probs", "power", "root", "softmax", "tb_linear",
    "uniform", "weighted",
]

SAMPLE_FLOOR = 1e-3  # digest A-6: sampled weights are clipped here before normalising
NORM_TYPES = (nn.modules.batchnorm._NormBase, nn.GroupNorm, nn.LayerNorm)  # BN and InstanceNorm


# ----------------------------------------------------------------------------- checks / helpers
def _check(alphas, lr_t: float, min_alpha: float | None = None) -> tuple[np.ndarray, float]:
    """Return alphas as float64 `[n]` and lr_t as float, or raise ValueError."""
    if isinstance(alphas, torch.Tensor):
        alphas = alphas.detach().cpu().numpy()
    a = np.asarray(alphas, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"alphas must be a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"alphas must be finite, got {a}")
    if min_alpha is not None and np.any(a <= min_alpha):
        raise ValueError(f"this scheme needs every alpha > {min_alpha}, got {a}")
    if not (np.isfinite(lr_t) and lr_t >= 0):
        raise ValueError(f"lr_t must be finite and >= 0, got {lr_t}")
    return a, float(lr_t)


def weighted(g: np.ndarray, lr_t: float) -> np.ndarray:
    """Weighted-probability allocation ``lr_t * n * g_i / sum_j g_j`` (form of eq. 2.13).

    Args:
        g: `[n]` non-negative weights with a positive sum.
        lr_t: global learning rate at step t.

    Returns:
        `[n]` float64 lrs with ``sum = n * lr_t`` (mean lr equals the schedule's lr_t).

    Raises:
        ValueError: if ``g`` has a negative or non-finite entry or sums to 0.
    """
    g = np.asarray(g, dtype=np.float64)
    if not np.all(np.isfinite(g)) or np.any(g < 0) or g.sum() <= 0:
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {g}")
    return lr_t * g.size * g / g.sum()


def _by_rank(a: np.ndarray, probs: np.ndarray, lr_t: float) -> np.ndarray:
    """The layer with the j-th smallest alpha gets the j-th smallest prob (eqs. 2.22, 2.29)."""
    lrs = np.empty_like(a)
    lrs[np.argsort(a, kind="stable")] = lr_t * a.size * np.sort(probs)  # ties: layer order
    return lrs


def _draw(rng, kind: str, size: int, scale: float = 1.0) -> np.ndarray:
    """`[size]` float64 draws, ``kind`` in {"normal" (N(0, scale^2)), "exp" (mean scale)}."""
    if isinstance(rng, np.random.Generator):
        if kind == "normal":
            return rng.normal(0.0, scale, size)
        return rng.exponential(scale, size)
    if isinstance(rng, torch.Generator):
        if kind == "normal":
            return scale * torch.randn(size, generator=rng, dtype=torch.float64).numpy()
        x = torch.empty(size, dtype=torch.float64).exponential_(1.0, generator=rng)
        return scale * x.numpy()
    raise ValueError(f"rng must be a numpy Generator or a torch.Generator (no global RNG), "
                     f"got {type(rng).__name__}")


# ----------------------------------------------------------------------------- schemes
def uniform(alphas, lr_t: float) -> np.ndarray:
    """Baseline: every layer gets ``lr_t`` (the source's uniform, max-entropy allocation)."""
    a, lr_t = _check(alphas, lr_t)
    return np.full_like(a, lr_t)


def tb_linear(alphas, lr_t: float, lr_min_ratio: float = 0.5,
              lr_max_ratio: float = 1.5) -> np.ndarray:
    """TempBalance's linear map from alpha to lr (anchors, Topic 2, ``tb_linear_map``).

    ``lr_i = lr_t * (r_min + (r_max - r_min) * (alpha_i - min alpha) / (max alpha - min alpha))``,
    i.e. ``np.interp(alpha, [min, max], [r_min * lr_t, r_max * lr_t])``: the smallest alpha gets
    ``r_min * lr_t`` and the largest ``r_max * lr_t``. Not sum-preserving (the mean lr is
    ``lr_t`` only if the alphas are symmetric about their mid-range). Pitfall (TempBalance issue
    #2): a single outlier alpha (e.g. from a layer with 1-2 eigenvalues) squeezes every other
    layer to one end; drop such layers before computing alphas.

    Args:
        alphas: `[n]` per-layer alphas.
        lr_t: global lr at step t.
        lr_min_ratio: lr of the smallest-alpha layer, in units of lr_t (TempBalance: 0.5).
        lr_max_ratio: lr of the largest-alpha layer, in units of lr_t (TempBalance: 1.5).

    Returns:
        `[n]` float64 lrs. If all alphas are equal, every layer gets the mid ratio
        ``(r_min + r_max) / 2 * lr_t`` (``np.interp`` would return ``r_max * lr_t``; ours is
        symmetric and, for the defaults, equals lr_t).

    Raises:
        ValueError: bad alphas / lr_t, or ratios not ``0 <= lr_min_ratio <= lr_max_ratio``.
    """
    a, lr_t = _check(alphas, lr_t)
    if not 0 <= lr_min_ratio <= lr_max_ratio:
        raise ValueError(f"need 0 <= lr_min_ratio <= lr_max_ratio, got {lr_min_ratio}, "
                         f"{lr_max_ratio}")
    span = a.max() - a.min()
    u = (a - a.min()) / span if span > 0 else np.full_like(a, 0.5)  # position in [0, 1]
    return lr_t * (lr_min_ratio + (lr_max_ratio - lr_min_ratio) * u)


def power(alphas, lr_t: float, p: float = 1.0) -> np.ndarray:
    """``lr_i = lr_t * n * alpha_i^p / sum_j alpha_j^p``: eq. 2.13 (p=1), 2.16 (p=2), 2.17 (p=3).

    Roots (eq. 2.18) are ``p = 1/k``; see `root`. Sum-preserving. Needs every alpha > 0.
    """
    a, lr_t = _check(alphas, lr_t, min_alpha=0.0)
    if not np.isfinite(p):
        raise ValueError(f"p must be finite, got {p}")
    return weighted(a**p, lr_t)


def root(alphas, lr_t: float, k: float = 2.0) -> np.ndarray:
    """``lr_i = lr_t * n * alpha_i^(1/k) / sum_j alpha_j^(1/k)`` (eq. 2.18; k = 2, 3, 4, ...).

    TempBalance's ``tb_sqrt`` is ``k = 2``. Sum-preserving. Needs every alpha > 0.
    """
    if not (np.isfinite(k) and k > 0):
        raise ValueError(f"k must be finite and > 0, got {k}")
    return power(alphas, lr_t, p=1.0 / k)


def log(alphas, lr_t: float, base: float = 2.0) -> np.ndarray:
    """``lr_i = lr_t * n * log(alpha_i) / sum_j log(alpha_j)`` (eq. 2.18 text; base 2 in fig 2.3).

    Sum-preserving; the base cancels (kept for fig 2.3's labels). Needs every alpha > 1
    (``log alpha <= 0`` otherwise; a power-law MLE alpha is > 1 by construction, eq. 1.9).
    TempBalance's ``tb_log2`` is the same map.
    """
    a, lr_t = _check(alphas, lr_t, min_alpha=1.0)
    if not (np.isfinite(base) and base > 0 and base != 1):
        raise ValueError(f"base must be positive and != 1, got {base}")
    return weighted(np.log(a) / np.log(base), lr_t)


def softmax(alphas, lr_t: float) -> np.ndarray:
    """``lr_i = lr_t * n * exp(alpha_i) / sum_j exp(alpha_j)`` (eq. 2.19). Sum-preserving.

    Computed as ``exp(alpha - max alpha)`` (same ratios, no overflow). The source reports it fails
    because most layers get lr ~ 0.
    """
    a, lr_t = _check(alphas, lr_t)
    return weighted(np.exp(a - a.max()), lr_t)


def neg_pow2_probs(n: int) -> np.ndarray:
    """NegPow2_n of eqs. 2.20-2.21: `[n]` ascending ``[2^-n, 2^-(n-1), ..., 2^-1]``, residue added.

    The source prints eq. 2.20 as ``[2^-n, 2^-n-1, 2^-n-2, ..., 2^-1]``, which cannot end at
    ``2^-1``; its own text ("add the residue to the largest probability", eq. 2.21 indexing
    ``[-1]`` as ``2^-1``) fixes the ascending reading used here (digest A-7). The last entry is
    ``2^-1 + (1 - sum) = 2^-1 + 2^-n`` (eq. 2.21), so the vector sums to 1.
    """
    if not (isinstance(n, (int, np.integer)) and n >= 1):
        raise ValueError(f"n must be a positive integer, got {n}")
    probs = 2.0 ** -np.arange(n, 0, -1, dtype=np.float64)  # eq. 2.20, ascending
    probs[-1] += 1.0 - probs.sum()                          # eq. 2.21
    return probs


def neg_pow2(alphas, lr_t: float) -> np.ndarray:
    """Layer with the j-th smallest alpha gets ``lr_t * n * NegPow2_n[j]`` (eq. 2.22).

    Sum-preserving. The largest-alpha layer gets ``(n/2 + 1/2^n) * lr_t`` (9.5 lr_t for n = 19;
    digest A-8: may diverge, implemented literally). Ties keep layer order.
    """
    a, lr_t = _check(alphas, lr_t)
    return _by_rank(a, neg_pow2_probs(a.size), lr_t)


def gauss_alpha(alphas, lr_t: float, *, rng, std: float = 1.0,
                floor: float = SAMPLE_FLOOR) -> np.ndarray:
    """Gaussians around each alpha (eqs. 2.26-2.27): ``y_i ~ N(alpha_i, std^2)``, then weighted.

    ``lr_i = lr_t * n * y_i / sum_j y_j`` with ``y`` clipped at ``floor`` first. The printed
    eq. 2.27 (``lr_t * n * y_i``) omits the normalisation that the source's text asks for ("we
    normalize by the weighted average of the y_i's"); the text wins. The floor is ours (digest
    A-6): without it a negative draw would give a negative lr. Sum-preserving.

    Args:
        alphas, lr_t, rng: see the module docstring.
        std: standard deviation of each Gaussian (source: 1; digest A-29).
        floor: positive lower clip of the draws.
    """
    a, lr_t = _check(alphas, lr_t)
    if not (std >= 0 and floor > 0):
        raise ValueError(f"need std >= 0 and floor > 0, got std={std}, floor={floor}")
    y = a + _draw(rng, "normal", a.size, std)   # eq. 2.26
    return weighted(np.maximum(y, floor), lr_t)  # eq. 2.27 (normalised)


def gauss_lr(alphas, lr_t: float, *, rng, std: float = 1.0,
             positive: str = "softplus") -> np.ndarray:
    """One Gaussian around lr_t, permuted by alpha ranks (eqs. 2.28-2.29).

    Draw ``x_i ~ N(lr_t, std^2)``, i = 1..n (eq. 2.28); turn them into probabilities ``x_hat``;
    the layer with the j-th largest alpha gets the j-th largest ``x_hat`` (eq. 2.29):
    ``lr = lr_t * n * x_hat``. The source does not say how to normalise draws that are ~45 %
    negative for lr_t <= 0.2; ``positive="softplus"`` uses ``softplus(x) / sum softplus(x)`` and
    ``"shift"`` uses ``x - min(x) + 1e-3`` (digest A-6; both our choice). Sum-preserving.

    Args:
        alphas, lr_t, rng: see the module docstring; only the ranks of alphas matter.
        std: standard deviation (source: 1).
        positive: ``"softplus"`` or ``"shift"``.
    """
    a, lr_t = _check(alphas, lr_t)
    if positive not in ("softplus", "shift") or not std >= 0:
        raise ValueError(f"need positive in ('softplus', 'shift') and std >= 0, got "
                         f"{positive!r}, {std}")
    x = lr_t + _draw(rng, "normal", a.size, std)  # eq. 2.28
    w = np.logaddexp(0.0, x) if positive == "softplus" else x - x.min() + SAMPLE_FLOOR
    return _by_rank(a, w / w.sum(), lr_t)         # eq. 2.29


def emg(alphas, lr_t: float, *, rng, noise_std: float = 1.0) -> np.ndarray:
    """Exponential / EMG model of alpha (eqs. 2.30-2.31), assigned by rank like eq. 2.29.

    The source models alpha as ``Z ~ Exp(nu)`` (eq. 2.30) plus ``N(0, 1)`` noise (the EMG,
    eq. 2.31) but gives no allocation rule; ours follows digest A-9: fit ``nu = 1 / mean(alpha -
    1)`` on the excess over 1, draw ``a_i = 1 + Z_i + eps_i`` with ``eps ~ N(0, noise_std^2)``,
    clip at 1e-3, and give the j-th largest ``a / sum a`` to the layer with the j-th largest
    alpha. ``noise_std=0`` is the pure exponential model (scheme ``"exp"``). Sum-preserving.

    Args:
        alphas, lr_t, rng: see the module docstring; needs ``mean(alpha) > 1``.
        noise_std: std of the Gaussian noise eps (source: 1).
    """
    a, lr_t = _check(alphas, lr_t)
    excess = float(np.mean(a - 1.0))  # = 1 / nu, E[Z] of eq. 2.30
    if excess <= 0 or not noise_std >= 0:
        raise ValueError(f"need mean(alpha) > 1 and noise_std >= 0, got mean(alpha)="
                         f"{excess + 1}, noise_std={noise_std}")
    z = _draw(rng, "exp", a.size, excess)  # eq. 2.30, Exp(nu) with 1/nu = excess
    eps = _draw(rng, "normal", a.size, noise_std) if noise_std > 0 else 0.0  # eq. 2.31
    w = np.maximum(1.0 + z + eps, SAMPLE_FLOOR)
    return _by_rank(a, w / w.sum(), lr_t)


def _exp(alphas, lr_t: float, *, rng) -> np.ndarray:
    """Pure exponential model of alpha (eq. 2.30): `emg` without the noise term."""
    return emg(alphas, lr_t, rng=rng, noise_std=0.0)


SCHEMES = {  # "eq2.13" is `power` with p = 1 (no parameters accepted)
    "uniform": uniform, "tb_linear": tb_linear, "eq2.13": power, "power": power, "root": root,
    "log": log, "softmax": softmax, "neg_pow2": neg_pow2, "gauss_alpha": gauss_alpha,
    "gauss_lr": gauss_lr, "exp": _exp, "emg": emg,
}
SUM_PRESERVING = tuple(s for s in SCHEMES if s != "tb_linear")  # sum of lrs = n * lr_t


def allocate(alphas, lr_t: float, scheme: str = "eq2.13", **params) -> np.ndarray:
    """Per-layer lrs from per-layer alphas with the named scheme of ``SCHEMES``.

    Args:
        alphas: `[n]` per-layer alphas (numpy, list or tensor), layer order.
        lr_t: the schedule's global lr at step t (e.g. eq. 2.12), >= 0.
        scheme: a key of ``SCHEMES``; ``"eq2.13"`` is ``power`` with ``p=1``.
        **params: the scheme's keyword arguments (``p``, ``k``, ``base``, ``lr_min_ratio``,
            ``lr_max_ratio``, ``rng``, ``std``, ...).

    Returns:
        `[n]` float64 lrs, in the units of ``lr_t``.

    Raises:
        ValueError: unknown scheme or parameter, or bad values.

    Example:
        >>> allocate([2.0, 3.0, 5.0], 0.1, "eq2.13").round(4).tolist()
        [0.06, 0.09, 0.15]
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    fn = SCHEMES[scheme]
    allowed = set(inspect.signature(fn).parameters) - {"alphas", "lr_t"}
    if scheme == "eq2.13":
        allowed = set()
    if unknown := set(params) - allowed:
        raise ValueError(f"unknown parameter(s) {sorted(unknown)} for scheme {scheme!r}; "
                         f"allowed: {sorted(allowed)}")
    return fn(alphas, lr_t, **params)


# ----------------------------------------------------------------------------- param groups
def layer_groups(model: nn.Module, skip_first: bool = False, skip_last: bool = False
                 ) -> tuple[list[str], list[list[nn.Parameter]], list[nn.Parameter]]:
    """Split a model's parameters into layers (the units that get one lr each) and the rest.

    Rule, in ``model.named_modules()`` registration order:

    * every conv / linear module (`layers.weight_layers`) starts a layer, named by its module name,
      holding its own weight and bias;
    * a norm module (BatchNorm, InstanceNorm, GroupNorm, LayerNorm) joins the *most recent*
      conv / linear layer (TempBalance ties BN to its conv the same way, by order); a norm met
      before any conv / linear goes to the rest. Pre-norm models (LayerNorm registered *before*
      its Linear) are therefore tied to the previous layer -- check ``names`` for such models;
    * parameters of any other module go to the rest; ``skip_first`` / ``skip_last`` move the
      first / last layer (and its norms) to the rest, as TempBalance and seed 001 (digest A-4)
      exclude the stem conv and the classifier;
    * a parameter shared by several modules is counted once, where it is first met.

    Args:
        model: any ``nn.Module``.
        skip_first: move the first conv / linear layer to the rest.
        skip_last: move the last conv / linear layer to the rest.

    Returns:
        ``(names, params, rest)``: layer names, each layer's parameters, and the rest.

    Raises:
        ValueError: if no layer is left.
    """
    names, params, rest, seen = [], [], [], set()
    layers = weight_layers(model)
    for name, module in model.named_modules():
        own = [p for p in module.parameters(recurse=False) if id(p) not in seen]
        seen.update(id(p) for p in own)
        if name in layers:
            names.append(name)
            params.append(own)
        elif isinstance(module, NORM_TYPES) and params:
            params[-1].extend(own)
        else:
            rest.extend(own)
    lo, hi = int(skip_first), len(names) - int(skip_last)
    if hi - lo < 1:
        raise ValueError(f"no conv / linear layer left in {type(model).__name__} "
                         f"({len(names)} found, skip_first={skip_first}, skip_last={skip_last})")
    rest = [p for ps in params[:lo] + params[hi:] for p in ps] + rest
    return names[lo:hi], params[lo:hi], rest


class LayerLR:
    """One param group per layer, and per-layer lrs written into them by parameter identity.

    The schedule gives the global ``lr_t``; an allocation scheme turns it into per-layer lrs;
    `apply` writes them into ``group["lr"]``. Works with any torch optimiser (hyper-parameters
    live in param groups). Use a schedule you evaluate yourself (e.g. eq. 2.12) or a closed-form
    scheduler (``LambdaLR``) and call `apply` after ``scheduler.step()``; recursive schedulers
    (``CosineAnnealingLR``'s chainable form) would compound the per-layer factors.

    Args:
        model: the network; layers follow `layer_groups`.
        skip_first: stem layer gets the default lr, not an allocated one.
        skip_last: classifier gets the default lr, not an allocated one.

    Example:
        >>> net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
        >>> ll = LayerLR(net)
        >>> opt = torch.optim.SGD(ll.param_groups(lr=0.1), lr=0.1)
        >>> ll.apply(opt, [0.05, 0.2])
        >>> [g["lr"] for g in opt.param_groups]
        [0.05, 0.2]
    """

    def __init__(self, model: nn.Module, skip_first: bool = False, skip_last: bool = False):
        self.names, self.params, self.rest = layer_groups(model, skip_first, skip_last)
        self._owner = {id(p): i for i, ps in enumerate(self.params) for p in ps}

    @property
    def n_layers(self) -> int:
        """Number of layers that get an allocated lr (= length of the alphas / lrs)."""
        return len(self.names)

    def param_groups(self, lr: float) -> list[dict]:
        """Param groups for an optimiser: one per layer (``"layer"``: name), then the rest.

        Args:
            lr: initial lr of every group.

        Returns:
            List of dicts ``{"params", "lr", "layer"}``; the rest group (``"layer": None``) is
            present only if non-empty.
        """
        groups = [{"params": ps, "lr": lr, "layer": n} for n, ps in zip(self.names, self.params)]
        if self.rest:
            groups.append({"params": self.rest, "lr": lr, "layer": None})
        return groups

    def _group_layers(self, optimizer: torch.optim.Optimizer) -> list[int]:
        """Layer index of each param group (-1 for rest); ValueError if a group mixes layers."""
        owners = []
        for k, group in enumerate(optimizer.param_groups):
            idx = {self._owner.get(id(p), -1) for p in group["params"]}
            if len(idx) != 1:
                raise ValueError(f"param group {k} mixes layers "
                                 f"{sorted(self.names[i] if i >= 0 else 'rest' for i in idx)}")
            owners.append(idx.pop())
        if missing := set(range(self.n_layers)) - set(owners):
            raise ValueError(f"optimizer has no group for layer(s) "
                             f"{[self.names[i] for i in sorted(missing)]}")
        return owners

    def apply(self, optimizer: torch.optim.Optimizer, lrs, default_lr: float | None = None
              ) -> None:
        """Set ``group["lr"]`` of every group to its layer's lr (matched by parameter identity).

        Args:
            optimizer: any torch optimiser whose groups each hold parameters of one layer (or
                only rest parameters), e.g. built from `param_groups`; group order is free.
            lrs: `[n_layers]` non-negative finite lrs, in ``names`` order (from `allocate`).
            default_lr: lr for rest groups (usually lr_t); ``None`` leaves them unchanged.

        Raises:
            ValueError: wrong length or bad values of ``lrs`` / ``default_lr``, a group mixing
                layers, or a layer without a group. Nothing is changed when it raises.
        """
        lrs = np.asarray(lrs.detach().cpu() if isinstance(lrs, torch.Tensor) else lrs,
                         dtype=np.float64)
        if lrs.shape != (self.n_layers,):
            raise ValueError(f"lrs must have shape ({self.n_layers},), got {lrs.shape}")
        if not np.all(np.isfinite(lrs)) or np.any(lrs < 0):
            raise ValueError(f"lrs must be finite and >= 0, got {lrs}")
        if default_lr is not None and not (np.isfinite(default_lr) and default_lr >= 0):
            raise ValueError(f"default_lr must be finite and >= 0, got {default_lr}")
        for group, i in zip(optimizer.param_groups, self._group_layers(optimizer)):
            if i >= 0:
                group["lr"] = float(lrs[i])
            elif default_lr is not None:
                group["lr"] = float(default_lr)

    def step(self, optimizer: torch.optim.Optimizer, alphas, lr_t: float,
             scheme: str = "eq2.13", **params) -> np.ndarray:
        """`allocate` then `apply`, rest groups getting ``lr_t``; call once per epoch.

        Args:
            optimizer: as in `apply`.
            alphas: `[n_layers]` alphas of the layers ``names``, in that order, or a
                ``{name: alpha}`` dict / Series (e.g. ``spectral.alphas(model)["alpha"]``),
                aligned by name; extra names are ignored.
            lr_t: the schedule's global lr at this step.
            scheme: a key of ``SCHEMES``.
            **params: the scheme's keyword arguments.

        Returns:
            `[n_layers]` float64 lrs that were written.

        Raises:
            ValueError: wrong number of alphas, a missing layer name, or any error of
                `allocate` / `apply`.
        """
        if isinstance(alphas, (dict, pd.Series)):
            alphas = pd.Series(alphas)
            if missing := [n for n in self.names if n not in alphas.index]:
                raise ValueError(f"no alpha for layer(s) {missing}")
            alphas = alphas.loc[self.names].to_numpy(dtype=np.float64)
        if tuple(np.shape(alphas)) != (self.n_layers,):
            raise ValueError(f"alphas must have shape ({self.n_layers},), "
                             f"got {tuple(np.shape(alphas))}")
        lrs = allocate(alphas, lr_t, scheme, **params)
        self.apply(optimizer, lrs, default_lr=lr_t)
        return lrs
