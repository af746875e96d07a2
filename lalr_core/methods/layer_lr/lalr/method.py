"""LALR in the training loop: ``RunConfig(methods=(LALR(),))`` (chapter 01's specification).

`LALR` is the run's frozen, hashable method config. Its ``param_groups`` give one group per
layer (`grouping`), and its callback, a `LayerLRCallback` around an `LALRScaler` (the core's
per-layer lr interface, as for TempBalance), sets each group's ``lr_scale`` before every
epoch. The loop trains group ``g`` at ``lr_t * lr_scale_g``, so LALR composes with any
global schedule and works with any torch optimiser (AdamW in chapter 01), whose state it
never touches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from torch import nn

from lalr_core.core.loop.config import METHODS, MethodConfig
from lalr_core.methods.layer_lr.lalr.grouping import check_grouping, param_groups
from lalr_core.methods.layer_lr.lalr.metrics import CE_BINS, CE_EPS
from lalr_core.methods.layer_lr.lalr.scaler import LALRCallback, LALRScaler
from lalr_core.methods.layer_lr.lalr.schedule import PHASES, check_order


@METHODS.register("lalr")
@dataclass(frozen=True)
class LALR(MethodConfig):
    """LALR's per-layer lrs: one metric per epoch, SVD -> CE -> CS (seed 000 ``[LALR]``; our specification).

    Args:
        order: phase of 0-based epoch ``e`` is ``order[e % len(order)]``; any order of the
            three, repeats, or one metric (``("svd",)``).
        recompute: ``"every_epoch"`` (default; §3, B.4.6) or ``"once"`` (App. A's code, bug 6).
        cs_direction: ``"code"`` (default; higher CS -> higher lr, App. A and B.1.4.2) or
            ``"text20"`` (``1 - u``, §2.0; bug 9).
        s_min: floor of the scales in [0, 1] (0 = the source: one layer per phase at lr 0).
        grouping: ``"module"`` (default) or ``"named_param_AW"`` (App. A's misaligned zip,
            bug 3); see `lalr.grouping`.
        normalise: ``"guarded"`` (default; u = 0.5 when all metrics are equal) or
            ``"literal"`` (NaN there, bug 7).
        svd_variant: ``"rank_mean"`` (default), ``"top_Lminus1"`` or ``"all_mean"``.
        ce_variant: ``"hist"`` (default), ``"softmax_trunc"`` or ``"absnorm_trunc"``.
        cs_variant: ``"same_numel_else_trunc"`` (default) or ``"trunc_all"``.
        ce_bins, ce_eps: the CE histogram's bins and the constant added before the log
            (the source gives neither; defaults `metrics.CE_BINS`, `metrics.CE_EPS`).
        exclude: ``"module"`` grouping only: shell patterns of layer names kept at lr_t.

    Example:
        >>> LALR().name, LALR(order=["svd"]).order
        ('lalr', ('svd',))
    """

    name = "lalr"
    order: tuple = PHASES
    recompute: str = "every_epoch"
    cs_direction: str = "code"
    s_min: float = 0.0
    grouping: str = "module"
    normalise: str = "guarded"
    svd_variant: str = "rank_mean"
    ce_variant: str = "hist"
    cs_variant: str = "same_numel_else_trunc"
    exclude: tuple = ()
    ce_bins: int = CE_BINS
    ce_eps: float = CE_EPS

    def __post_init__(self):
        object.__setattr__(self, "order", check_order(self.order))
        check_grouping(self.grouping)
        if isinstance(self.s_min, bool) or not isinstance(self.s_min, (int, float)) \
                or not math.isfinite(self.s_min) or not 0 <= self.s_min <= 1:
            raise ValueError(f"LALR s_min must be a number in [0, 1], got {self.s_min!r}")
        if isinstance(self.exclude, str) or not isinstance(self.exclude, (tuple, list)) \
                or not all(isinstance(p, str) for p in self.exclude):
            raise ValueError(f"LALR exclude must be a tuple of name patterns, "
                             f"got {self.exclude!r}")
        object.__setattr__(self, "exclude", tuple(self.exclude))
        if self.exclude and self.grouping != "module":
            raise ValueError("LALR exclude applies to grouping='module' only")
        self.scaler()                     # validates the remaining choices

    @classmethod
    def as_written(cls, **changes) -> LALR:
        """App. A as printed (chapter 01's LALR-AW arm): per-parameter groups zipped with the
        metrics, metrics once, CS in the code's direction, the unguarded normaliser."""
        return cls(**{"grouping": "named_param_AW", "recompute": "once",
                      "cs_direction": "code", "normalise": "literal", **changes})

    def scaler(self) -> LALRScaler:
        """A fresh `LALRScaler` with these settings."""
        return LALRScaler(self.order, self.recompute, self.cs_direction, self.s_min,
                          self.normalise, self.grouping, self.svd_variant, self.ce_variant,
                          self.cs_variant, self.ce_bins, self.ce_eps)

    def param_groups(self, model: nn.Module, lr: float) -> list[dict]:
        return param_groups(model, lr, self.grouping, self.exclude)

    def callbacks(self, cfg) -> list:
        return [LALRCallback(self.name, self.scaler())]
