"""Deterministic checks of LALR's mechanics on real models: the AdamW integration (X-L9,
L-C14) and the source's bugs that need no statistics (X-L17: the literal normaliser's NaN,
App. A's misaligned per-parameter zip).

* `lr_integration`: trains one LALR run (uncached) with a probe that reads, before the first
  optimiser step of every epoch, each layer group's lr and the whole AdamW state; the lr must
  equal ``lr_t * scale`` of that epoch's row of LALR's table, and the state must equal the
  one recorded at the end of the previous epoch, before LALR adjusted the lrs (§3.2:
  ``lr_{l,e} = lr_{per-batch,l,e} x scale_{layer-wise,l,e}``; the moments persist).
* `normaliser_cases`: two identical layers and a single layer, where max = min and the
  source's min-max divides 0 by 0 (bug 7); the guarded normaliser gives 0.5.
* `misalignment_summary`: `lalr_core.methods.layer_lr.lalr.aw_misalignment` counted (bug 3).
* `metrics_read_weights_only`: L-C6 on a real model: LALR's per-epoch computation with every
  gradient set to NaN, under grad mode, builds no autograd node and leaves the gradients as
  they were (so it neither needs nor computes a gradient).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import train
from lalr_core.methods.layer_lr.lalr import (
    LALRScaler,
    aw_misalignment,
    layer_matrices,
    layer_metrics,
    minmax,
    phase_scale,
)


def _state(optimizer) -> dict:
    """A detached copy of an optimiser's per-parameter state (moments, step counts)."""
    return {id(p): {k: (v.detach().clone() if torch.is_tensor(v) else v) for k, v in s.items()}
            for p, s in optimizer.state.items()}


def _same_state(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k in a:
        if a[k].keys() != b[k].keys():
            return False
        for name, x in a[k].items():
            y = b[k][name]
            same = torch.equal(x, y) if torch.is_tensor(x) else x == y
            if not same:
                return False
    return True


class _LRProbe:
    """Before the first step of each epoch: every layer group's lr and whether the optimiser
    state equals the one recorded at the end of the previous epoch (before LALR's hook: a
    caller's callbacks run before the method's)."""

    name = "lr_probe"

    def __init__(self):
        self.epoch, self.read = 0, -1
        self.lrs: list[tuple[int, str, float]] = []
        self.state_kept: list[bool] = []
        self.end_state: dict | None = None

    def on_optimizer(self, optimizer) -> None:
        self.optimizer = optimizer

    def on_backward(self, model) -> None:
        if self.read == self.epoch:
            return
        self.read = self.epoch
        self.lrs += [(self.epoch, g["layer"], float(g["lr"]))
                     for g in self.optimizer.param_groups if g.get("layer") is not None]
        if self.end_state is not None:
            self.state_kept.append(_same_state(self.end_state, _state(self.optimizer)))

    def on_epoch_end(self, model, row) -> None:
        self.end_state = _state(self.optimizer)
        self.epoch += 1


def lr_integration(cfg: RunConfig) -> dict:
    """Train ``cfg`` (an LALR run, uncached) and compare each layer group's lr in every epoch
    with ``cfg.lr * lr_scale`` of LALR's table (the run's schedule is constant).

    Returns:
        ``{"max_abs_error": largest |lr - lr_t scale|, "groups": layer-epochs compared,
        "state_kept": epochs after which AdamW's state was bit-identical, "epochs":
        adjustments after the first, "table": DataFrame epoch, layer, lr, expected}``.

    Raises:
        ValueError: ``cfg`` has no LALR method or a non-constant schedule.
    """
    if cfg.method("lalr") is None or cfg.schedule != "constant":
        raise ValueError("lr_integration needs an LALR run with a constant schedule")
    probe = _LRProbe()
    res = train(cfg, callbacks=[probe], progress=False)
    got = pd.DataFrame(probe.lrs, columns=["epoch", "layer", "lr"])
    want = res["callbacks"]["lalr"][["epoch", "layer", "lr_scale"]]
    t = got.merge(want, on=["epoch", "layer"], how="left")
    t["expected"] = cfg.lr * t["lr_scale"]
    err = (t["lr"] - t["expected"]).abs()
    return {"max_abs_error": float(err.max()) if err.notna().all() else math.inf,
            "groups": len(t), "state_kept": int(sum(probe.state_kept)),
            "epochs": len(probe.state_kept), "table": t}


def normaliser_cases(d: int = 8, seed: int = 0) -> pd.DataFrame:
    """Bug 7 on constructed layers: ``"identical"`` (two copies of one random ``d x d``
    matrix) and ``"single"`` (one layer). Per case and metric: the raw metrics, ``u`` from the
    literal (§2.4) and the guarded normaliser, and the resulting scale of the phase."""
    w = torch.randn(d, d, generator=torch.Generator().manual_seed(seed))
    rows = []
    for case, weights in (("identical", [w, w.clone()]), ("single", [w])):
        raw = layer_metrics(weights)
        for phase in ("svd", "ce", "cs"):
            for k in range(len(weights)):
                lit = minmax(raw[phase], guarded=False)[k]
                grd = minmax(raw[phase], guarded=True)[k]
                rows.append({"case": case, "metric": phase, "layer": k,
                             "raw": float(raw[phase][k]), "u_literal": float(lit),
                             "u_guarded": float(grd),
                             "scale_literal": float(phase_scale([lit], phase)[0]),
                             "scale_guarded": float(phase_scale([grd], phase)[0])})
    return pd.DataFrame(rows)


def misalignment_summary(model: nn.Module) -> dict[str, int]:
    """App. A's zip of per-parameter groups with per-'weight' metrics, counted (bug 3).

    Returns:
        ``params``: named parameters (= groups); ``weights``: those whose name contains
        ``'weight'`` (App. A's layers); ``own``: weights that get their own metric;
        ``other``: weights that get another parameter's; ``none``: weights past the end of the
        metric list (their lr is never set); ``wasted``: metrics consumed by non-weight
        groups (biases), which the 'weight' test then skips.
    """
    t = aw_misalignment(model)
    is_weight = t["param"].str.contains("weight")
    has = t["metric_of"].notna()
    return {"params": len(t), "weights": int(is_weight.sum()), "own": int(t["own"].sum()),
            "other": int((is_weight & has & ~t["own"]).sum()),
            "none": int((is_weight & ~has).sum()), "wasted": int((~is_weight & has).sum())}


def literal_gives_nan(cases: pd.DataFrame) -> bool:
    """Every literal ``u`` of `normaliser_cases` is NaN and every guarded one 0.5."""
    return bool(np.isnan(cases["u_literal"]).all() and (cases["u_guarded"] == 0.5).all())


def metrics_read_weights_only(model: nn.Module) -> dict:
    """L-C6 ("without requiring computationally expensive gradient assessments"): run LALR's
    per-epoch scaler (`LALRScaler`: layer matrices, all three raw metrics, the phase's
    scales) on ``model`` with every parameter's ``.grad`` a NaN tensor, grad mode on.

    Returns:
        ``{"layers": LALR layers, "finite": every raw metric and scale finite (a metric that
        read a NaN gradient would not be), "grads_untouched": every ``.grad`` is the same
        tensor, still all NaN, "graph_nodes": autograd nodes the call created (saved-tensor
        hooks fire once per tensor saved for a backward pass: 0 means no graph)}``.
    """
    params = list(model.parameters())
    for p in params:
        p.grad = torch.full_like(p, float("nan"))
    before = [p.grad for p in params]
    saved = []
    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(
            lambda t: saved.append(1) or t, lambda t: t):
        layers = list(layer_matrices(model))
        scales, raw = LALRScaler()(model, layers)
    finite = bool(np.isfinite(scales).all() and all(np.isfinite(raw[m]).all()
                                                    for m in ("svd", "ce", "cs")))
    untouched = all(p.grad is g and bool(torch.isnan(g).all()) for p, g in zip(params, before))
    for p in params:
        p.grad = None
    return {"layers": len(layers), "finite": finite, "grads_untouched": untouched,
            "graph_nodes": len(saved)}
