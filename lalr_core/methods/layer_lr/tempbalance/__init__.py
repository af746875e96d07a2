"""Layer-wise learning-rate allocation from per-layer power-law alphas (seed 001, ch. 2).

Seed 001 is ``[Ye2023]``; TempBalance is ``[Zhou2023]`` (REFERENCES.md). Chapter 02 (figs
2.1-2.6, the text's allocation experiments) and chapter 02b's fine-tuning figures 3.22-3.26. The alphas come from
``lalr_core.methods.spectra`` (one per layer, in layer order); this package only maps
``(alphas, lr_t) -> lrs``:

* ``tb_linear`` -- YefanZhou/TempBalance:tempbalance.py ``tb_linear_map`` (TempBalance's code):
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

The package: ``deterministic`` (input checks, ``weighted``, the deterministic schemes),
``sampling`` (the sampling schemes), ``allocation`` (``SCHEMES``, ``SUM_PRESERVING``,
``allocate``) and ``groups`` (``layer_groups``, ``LayerLR``); this module re-exports them.
"""

from __future__ import annotations

from lalr_core.methods.layer_lr.tempbalance.allocation import SCHEMES, SUM_PRESERVING, allocate
from lalr_core.methods.layer_lr.tempbalance.deterministic import (
    by_rank,
    check_alphas,
    log,
    neg_pow2,
    neg_pow2_probs,
    power,
    root,
    softmax,
    tb_linear,
    uniform,
    weighted,
)
from lalr_core.methods.layer_lr.tempbalance.groups import NORM_TYPES, LayerLR, layer_groups
from lalr_core.methods.layer_lr.tempbalance.sampling import (
    SAMPLE_FLOOR,
    emg,
    exp,
    gauss_alpha,
    gauss_lr,
)
from lalr_core.methods.layer_lr.tempbalance.schedule import cosine_tb  # registers "cosine_tb"

__all__ = [
    "cosine_tb",
    "NORM_TYPES", "SAMPLE_FLOOR", "SCHEMES", "SUM_PRESERVING", "LayerLR", "allocate", "by_rank",
    "check_alphas", "emg", "exp", "gauss_alpha", "gauss_lr", "layer_groups", "log", "neg_pow2",
    "neg_pow2_probs", "power", "root", "softmax", "tb_linear", "uniform", "weighted",
]
