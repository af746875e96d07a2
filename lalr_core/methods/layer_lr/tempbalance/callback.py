"""TempBalance in the training loop: per-layer lr multipliers from the current alphas.

Seed 001 (``[Ye2023]``) ch. 2: at the start of every epoch the alpha of
every layer is fitted on the current weights (median x_min rule by default, conv kernels as
TempBalance's kh*kw slices), an allocation scheme of `lalr_core.methods.layer_lr.tempbalance` maps the
alphas to lrs in units of lr_t, and each layer's param group trains at ``lr_t * multiplier``.
The first conv and the last linear are excluded (they and every other parameter keep lr_t); BN
follows its conv (`tempbalance.layer_groups`). `TempBalance` is the run's method config
(``RunConfig(methods=(TempBalance("eq2.13"),))``): it builds the per-layer groups and the
`LayerLRCallback` (the core's per-layer lr interface) that refits the multipliers.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from lalr_core.core.loop.config import METHODS, MethodConfig
from lalr_core.core.loop.layer_lr import LayerLRCallback
from lalr_core.methods import spectra as spectral
from lalr_core.methods.layer_lr.tempbalance import SCHEMES, LayerLR, allocate
from lalr_core.methods.layer_lr.tempbalance.groups import NORM_RULES

SKIP_FIRST, SKIP_LAST = True, True  # stem conv and classifier keep lr_t (the source's §1.4, TempBalance)
CONV = "slices"  # TempBalance's kh*kw slices (our choice; its sqrt(0.5) does not change alpha)
MIN_FIT_EIGS = 2  # an ESD with fewer eigenvalues has no power-law fit (a one-output head)
XMIN_RULES = ("median", "ks")
ZERO_RULES = ("keep", "drop")


class TempBalanceScaler:
    """`LayerScaler` of TempBalance: alphas of the tagged layers -> allocation scheme.

    Only the tagged layers are fitted (the skipped stem and classifier never are, so a
    one-output head cannot stop the run). A tagged layer with fewer than
    ``max(min_eigs, MIN_FIT_EIGS)`` eigenvalues is left out of the allocation and keeps
    multiplier 1 (lr_t), as TempBalance's code leaves out layers under its ``eigs_thresh``;
    its alpha is recorded as NaN.
    """

    columns = ("alpha",)

    def __init__(self, scheme: str, params=(), xmin: str = "median", seed: int = 0,
                 min_eigs: int = 0, zeros: str = "keep"):
        if scheme not in SCHEMES:
            raise ValueError(f"unknown scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
        self.scheme, self.params, self.xmin = scheme, dict(params), xmin
        self.min_eigs = max(int(min_eigs), MIN_FIT_EIGS)
        if zeros not in ZERO_RULES:
            raise ValueError(f"zeros must be one of {ZERO_RULES}, got {zeros!r}")
        self.eig_floor = None if zeros == "keep" else 0.0   # see `TempBalance.zeros`
        needs_rng = "rng" in inspect.signature(SCHEMES[scheme]).parameters
        self.rng = np.random.default_rng(seed) if needs_rng else None

    @torch.no_grad()
    def __call__(self, model: nn.Module, layers: list[str]):
        mats = spectral.layer_matrices(model, conv=CONV)
        if missing := [n for n in layers if n not in mats]:
            raise ValueError(f"no weight matrix for layer(s) {missing}")
        esds = spectral.esds({n: mats[n] for n in layers})  # one eigensolve per layer
        used = np.array([esds[n].numel() >= self.min_eigs for n in layers])
        a = np.array([spectral.fit_alpha(esds[n], xmin=self.xmin, eig_floor=self.eig_floor)
                      ["alpha"] if u else np.nan for n, u in zip(layers, used)], dtype=np.float64)
        scales = np.ones(len(layers))
        if used.any():
            extra = {"rng": self.rng} if self.rng is not None else {}
            scales[used] = allocate(a[used], 1.0, self.scheme, **self.params, **extra)
        return scales, {"alpha": a}

    def state_dict(self) -> dict:
        return {"rng": None if self.rng is None else self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        if self.rng is not None and state.get("rng") is not None:
            self.rng.bit_generator.state = state["rng"]


@METHODS.register("tempbalance")
@dataclass(frozen=True)
class TempBalance(MethodConfig):
    """TempBalance's per-layer lrs (a per-layer lr policy of `lalr_core.core.loop.layer_lr`).

    Args:
        scheme: a key of ``tempbalance.SCHEMES`` (e.g. ``"eq2.13"``, ``"tb_linear"``).
        params: the scheme's ``(name, value)`` pairs (a dict is accepted), e.g.
            ``(("lr_min_ratio", 0.4),)``.
        xmin: x_min rule of the alpha fits (``"median"`` or ``"ks"``).
        min_eigs: layers whose ESD has fewer eigenvalues keep lr_t. TempBalance's code uses 50
            (its ``eigs_thresh``); the default 0 keeps every layer, because the reduced models
            of the quick profile have layers of 36 eigenvalues that 50 would silently exclude
            (at the paper's widths every layer has >= 576, so 50 never binds).
        zeros: what the alpha fit counts of a rank-deficient layer's zero eigenvalues.
            ``"keep"`` (default): TempBalance's own count (its ``net_esd_estimator`` has
            ``filter_zeros=False``), so the median-rule x_min is the whole spectrum's middle.
            ``"drop"``: only the non-zero eigenvalues (WeightWatcher's convention), so a
            channel-pruned layer gets the alpha of its kept rows. Identical on full-rank
            layers (every layer of an unpruned network here).
        norms: which layer's lr a norm module (BN) follows (`tempbalance.layer_groups`).
            ``"name"`` (default): the authors' ``batchnorm_type='name'`` (``bn2`` follows
            ``conv2``; a shortcut BN, or a BN in an ``nn.Sequential``, keeps the global lr).
            ``"order"``: the most recent conv (this collection's rule before 0.4).
    """

    name = "tempbalance"
    scheme: str = "tb_linear"
    params: tuple = ()
    xmin: str = "median"
    min_eigs: int = 0
    zeros: str = "keep"
    norms: str = "name"

    def __post_init__(self):
        if self.scheme not in SCHEMES:
            raise ValueError(f"unknown TempBalance scheme {self.scheme!r}; choose one of "
                             f"{', '.join(SCHEMES)}")
        if self.xmin not in XMIN_RULES:
            raise ValueError(f"unknown TempBalance xmin {self.xmin!r}; choose one of {XMIN_RULES}")
        if self.norms not in NORM_RULES:
            raise ValueError(f"unknown TempBalance norms {self.norms!r}; choose one of "
                             f"{NORM_RULES}")
        if self.zeros not in ZERO_RULES:
            raise ValueError(f"unknown TempBalance zeros {self.zeros!r}; choose one of "
                             f"{ZERO_RULES}")
        if isinstance(self.min_eigs, bool) or not isinstance(self.min_eigs, int) \
                or self.min_eigs < 0:
            raise ValueError(f"TempBalance min_eigs must be an int >= 0, got {self.min_eigs!r}")
        items = self.params.items() if isinstance(self.params, dict) else self.params
        try:
            pairs = tuple((str(name), value) for name, value in items)
        except (TypeError, ValueError):
            raise ValueError(f"TempBalance params must be (name, value) pairs, "
                             f"got {self.params!r}") from None
        if pairs:
            allowed = set() if self.scheme == "eq2.13" else \
                set(inspect.signature(SCHEMES[self.scheme]).parameters) - {"alphas", "lr_t", "rng"}
            if unknown := sorted({n for n, _ in pairs} - allowed):
                raise ValueError(f"unknown TempBalance params {unknown} for {self.scheme!r}; "
                                 f"allowed: {sorted(allowed)}")
        object.__setattr__(self, "params", pairs)

    def param_groups(self, model: nn.Module, lr: float) -> list[dict]:
        return LayerLR(model, skip_first=SKIP_FIRST, skip_last=SKIP_LAST,
                       norms=self.norms).param_groups(lr)

    def callbacks(self, cfg) -> list:
        scaler = TempBalanceScaler(self.scheme, self.params, self.xmin, seed=cfg.seed,
                                   min_eigs=self.min_eigs, zeros=self.zeros)
        return [LayerLRCallback(self.name, scaler)]


def TempBalanceCallback(scheme: str = "tb_linear", params=(), xmin: str = "median",
                        seed: int = 0, min_eigs: int = 0, zeros: str = "keep"
                        ) -> LayerLRCallback:
    """The per-epoch refit as a stand-alone callback (for your own loop; name ``tempbalance``)."""
    return LayerLRCallback("tempbalance",
                           TempBalanceScaler(scheme, params, xmin, seed, min_eigs, zeros))
