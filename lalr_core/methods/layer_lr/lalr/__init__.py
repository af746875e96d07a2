"""LALR: layer-adaptive learning rates from weight metrics, one per epoch (seed 000).

Chapter 01. Source: ``[LALR]``, "LALR: Layer-Adaptive Learning Rate Fine-Tuning Using
Sequential Scaling Metrics" (no authors or date given; see REFERENCES.md). Every layer's lr is ``lr_t`` times a
scale in [0, 1] computed from the weights alone: in epoch ``e`` the metric of phase
``order[e % 3]`` (SVD, then CE, then CS), min-max normalised across layers, then ``1 - u``
(svd, ce) or ``u`` (cs). The source has three SVD definitions, leaves the CE distributions
and the CS of unequal lengths undefined, and its code contradicts its text in several places
(listed in chapter 01's "The source's issues"); the defaults here are our executable
specification (chapter 01, "The executable specification we test") and the switches reproduce
the code as written (`LALR.as_written`).

The package: ``metrics`` (`layer_metrics`: SVD / CE / CS raw metrics, vectorised pairwise
terms), ``schedule`` (`minmax`, `phase_scale`, `floor_scale`, `phase_of`, `scales`),
``grouping`` (which parameters form a layer; `param_groups`; `aw_misalignment`), ``scaler``
(`LALRScaler`, `LALRCallback`) and ``method`` (`LALR`, registered as method ``"lalr"``).

Example (the collection's loop; any torch optimiser):
    >>> from lalr_core.core.loop.config import RunConfig
    >>> cfg = RunConfig(dataset="fashion_mnist", model="mlp", optimizer="adamw", lr=1e-3,
    ...                 methods=(LALR(),))
    >>> cfg.method("lalr").order
    ('svd', 'ce', 'cs')

``train(cfg)["callbacks"]["lalr"]`` is then the table ``epoch, layer, phase, svd, ce, cs, u,
metric_time_s, lr_scale``.
"""

from __future__ import annotations

from lalr_core.methods.layer_lr.lalr.grouping import (
    GROUPINGS,
    aw_assignment,
    aw_misalignment,
    layer_matrices,
    module_layers,
    param_groups,
)
from lalr_core.methods.layer_lr.lalr.method import LALR
from lalr_core.methods.layer_lr.lalr.metrics import (
    CE_BINS,
    CE_EPS,
    CE_VARIANTS,
    CS_VARIANTS,
    SVD_VARIANTS,
    ce_metric,
    cosine_matrix,
    cross_entropy_matrix,
    cs_metric,
    layer_metrics,
    singular_values,
    svd_metric,
    weight_distributions,
)
from lalr_core.methods.layer_lr.lalr.scaler import RECOMPUTE, LALRCallback, LALRScaler
from lalr_core.methods.layer_lr.lalr.schedule import (
    CS_DIRECTIONS,
    MINMAX_TOL,
    NORMALISERS,
    PHASES,
    floor_scale,
    minmax,
    phase_of,
    phase_scale,
    scales,
)

__all__ = [
    "CE_BINS", "CE_EPS", "CE_VARIANTS", "CS_DIRECTIONS", "CS_VARIANTS", "GROUPINGS", "LALR",
    "MINMAX_TOL", "NORMALISERS", "PHASES", "RECOMPUTE", "SVD_VARIANTS",
    "LALRCallback", "LALRScaler", "aw_assignment", "aw_misalignment", "ce_metric",
    "cosine_matrix", "cross_entropy_matrix", "cs_metric", "floor_scale", "layer_matrices",
    "layer_metrics", "minmax", "module_layers", "param_groups", "phase_of", "phase_scale",
    "scales", "singular_values", "svd_metric", "weight_distributions",
]
