"""LALR as a `LayerScaler`: the phase of each epoch, its metric, the scales (chapter 01's specification).

`LayerLRCallback` (the core's per-layer lr interface) calls the scaler once before the first
epoch (``on_train_start``) and once after every epoch (``on_epoch_end``); call ``k`` gives the
multipliers of 0-based epoch ``k``, so the scaler counts its calls and epoch ``k`` runs in
phase ``order[k % len(order)]``. The count, the metrics kept by ``recompute="once"`` and the
log are its state, so a resumed run continues the schedule.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import torch
from torch import nn

from lalr_core.core.loop.layer_lr import LayerLRCallback
from lalr_core.methods.layer_lr.lalr.grouping import aw_assignment, check_grouping, layer_matrices
from lalr_core.methods.layer_lr.lalr.metrics import (
    CE_BINS,
    CE_EPS,
    CE_VARIANTS,
    CS_VARIANTS,
    SVD_VARIANTS,
    check_ce_choices,
    layer_metrics,
)
from lalr_core.methods.layer_lr.lalr.schedule import (
    CS_DIRECTIONS,
    NORMALISERS,
    PHASES,
    check_order,
    floor_scale,
    phase_of,
    scales,
)

RECOMPUTE = ("every_epoch", "once")
METRICS = ("svd", "ce", "cs")
VARIANTS = {"svd_variant": SVD_VARIANTS, "ce_variant": CE_VARIANTS, "cs_variant": CS_VARIANTS}


class LALRScaler:
    """Per-layer lr multipliers of LALR, one phase per call (`LayerScaler` protocol).

    Args:
        order: phases by epoch, e.g. ``("svd", "ce", "cs")`` or ``("svd",)``.
        recompute: ``"every_epoch"`` (the text, B.4.6) or ``"once"`` (App. A's code: metrics
            of the first call, i.e. the initial weights, reused; bug 6).
        cs_direction, s_min, normalise: see `schedule.scales`.
        grouping: ``"module"`` or ``"named_param_AW"`` (`grouping`); it must match the
            groups the optimiser was built from.
        svd_variant, ce_variant, cs_variant: see `metrics`.
        ce_bins, ce_eps: the CE distributions' bins and constant (`metrics.ce_metric`).

    Records per tagged group (``columns``): the phase (as its index in ``order``), the raw
    metrics, the normalised value ``u`` of the phase and the seconds the metric computation
    took in this call (0 when reused); with ``named_param_AW`` also the index of the metric
    the group was paired with (NaN: none). Weights with NaN / inf (a diverged run) give NaN
    metrics and multiplier 1.
    """

    def __init__(self, order=PHASES, recompute: str = "every_epoch", cs_direction: str = "code",
                 s_min: float = 0.0, normalise: str = "guarded", grouping: str = "module",
                 svd_variant: str = "rank_mean", ce_variant: str = "hist",
                 cs_variant: str = "same_numel_else_trunc", ce_bins: int = CE_BINS,
                 ce_eps: float = CE_EPS):
        self.order = check_order(order)
        if recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
        if cs_direction not in CS_DIRECTIONS:
            raise ValueError(f"cs_direction must be one of {CS_DIRECTIONS}, got {cs_direction!r}")
        if normalise not in NORMALISERS:
            raise ValueError(f"normalise must be one of {NORMALISERS}, got {normalise!r}")
        floor_scale(0.0, s_min)                                     # validates s_min
        self.recompute, self.cs_direction, self.s_min = recompute, cs_direction, float(s_min)
        self.normalise, self.grouping = normalise, check_grouping(grouping)
        self.variants = {"svd_variant": svd_variant, "ce_variant": ce_variant,
                         "cs_variant": cs_variant}
        for name, value in self.variants.items():
            if value not in VARIANTS[name]:
                raise ValueError(f"{name} must be one of {VARIANTS[name]}, got {value!r}")
        check_ce_choices(ce_bins, ce_eps)
        self.ce_choices = {"ce_bins": int(ce_bins), "ce_eps": float(ce_eps)}
        self.columns = ("phase_index", *METRICS, "u", "metric_time_s") + \
            (("metric_index",) if grouping == "named_param_AW" else ())
        self.calls = 0
        self.cache: dict | None = None    # {"names": [...], "svd": [...], ...} for "once"
        self.log: list[dict] = []         # per call: call, phase, metric_time_s, recomputed
        self.metric_names: list[str] = []

    # ------------------------------------------------------------------ metrics
    def _raw(self, mats: dict[str, torch.Tensor]) -> tuple[dict[str, np.ndarray], float, bool]:
        names = list(mats)
        if self.recompute == "once" and self.cache is not None:
            if self.cache["names"] != names:
                raise ValueError(f"the layers changed since the metrics were computed: "
                                 f"{self.cache['names']} -> {names}")
            return {m: np.asarray(self.cache[m]) for m in METRICS}, 0.0, False
        t0 = time.perf_counter()
        if all(bool(torch.isfinite(w).all()) for w in mats.values()):
            raw = layer_metrics(list(mats.values()), **self.variants, **self.ce_choices)
        else:                                                       # a diverged run's weights
            raw = {m: np.full(len(names), np.nan) for m in METRICS}
        seconds = time.perf_counter() - t0
        self.cache = {"names": names, **{m: raw[m].tolist() for m in METRICS}}
        return raw, seconds, True

    @torch.no_grad()
    def __call__(self, model: nn.Module, layers: list[str]):
        phase = phase_of(self.calls, self.order)
        all_mats = layer_matrices(model, self.grouping)
        if self.grouping == "module":
            if missing := [n for n in layers if n not in all_mats]:
                raise ValueError(f"no LALR layer named {missing}; layers: {list(all_mats)}")
            mats = {n: all_mats[n] for n in layers}
        else:
            mats = all_mats
        raw, seconds, fresh = self._raw(mats)
        self.metric_names = list(mats)
        if np.isnan(np.stack(list(raw.values()))).all():
            u, s = np.full(len(mats), np.nan), np.ones(len(mats))
        else:
            u, s = scales(raw, phase, self.cs_direction, self.s_min, self.normalise)
        out_scales, extras = self._per_group(layers, raw, u, s)
        extras["phase_index"] = np.full(len(layers), self.calls % len(self.order), dtype=np.float64)
        extras["metric_time_s"] = np.full(len(layers), seconds)
        self.log.append({"call": self.calls, "phase": phase, "metric_time_s": seconds,
                         "recomputed": fresh})
        self.calls += 1
        return out_scales, extras

    def _per_group(self, layers, raw, u, s):
        """Module grouping: one metric per group. AW: App. A's zip (bug 3)."""
        if self.grouping == "module":
            return s, {**{m: raw[m] for m in METRICS}, "u": u}
        pairs = aw_assignment(list(layers), self.metric_names)
        idx = np.array([np.nan if k is None else k for k, _ in pairs], dtype=np.float64)

        def take(v):
            return np.array([np.nan if k is None else v[k] for k, _ in pairs], dtype=np.float64)

        out = np.array([s[k] if applied else 1.0 for k, applied in pairs], dtype=np.float64)
        return out, {**{m: take(raw[m]) for m in METRICS}, "u": take(u), "metric_index": idx}

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {"calls": self.calls, "cache": self.cache, "log": list(self.log),
                "metric_names": list(self.metric_names)}

    def load_state_dict(self, state: dict) -> None:
        self.calls, self.cache = int(state["calls"]), state["cache"]
        self.log, self.metric_names = list(state["log"]), list(state["metric_names"])


class LALRCallback(LayerLRCallback):
    """`LayerLRCallback` whose result names the phase (and, as written, the metric's layer).

    Result: ``epoch, layer, phase, svd, ce, cs, u, metric_time_s, lr_scale`` (+ ``metric_of``
    with ``named_param_AW``); row ``epoch = e`` holds the multipliers used in 0-based epoch
    ``e`` (the callback fits them after ``e`` epochs), in phase ``order[e % len(order)]``.
    """

    scaler: LALRScaler

    def result(self) -> pd.DataFrame:
        df = super().result()
        order = self.scaler.order
        phase = [order[int(i)] for i in df.pop("phase_index")]
        df.insert(2, "phase", phase)
        if "metric_index" in df:
            names = self.scaler.metric_names
            df["metric_of"] = [None if math.isnan(i) else names[int(i)]
                               for i in df.pop("metric_index")]
        return df
