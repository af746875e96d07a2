"""X-L8: does min-max normalisation make LALR robust to an outlier layer? (claim L-C13)

Seed 000 §2.4 claims "Robustness through reduced sensitivity to outliers". Our test
(X-L8, thresholds ours): compute the scales of every phase, multiply one mid layer's weights by 10,
recompute, and report the mean ``|Delta scale|`` of the other layers and the range (max - min)
of their scales before and after; the claim is falsified if the others' range shrinks by more
than 50 % in the SVD phase.

What is invariant under ``W_o -> a W_o`` (``a > 0``), exactly:

* SVD: the others' raw metrics (their own singular values); the outlier's is ``a`` times its
  own. Min-max then moves the others' ``u`` whenever the outlier is or becomes the strict
  minimum or maximum of the raw metric (it sets the normaliser's ``min`` or ``max``); else
  their ``u`` is unchanged.
* CS: every pairwise cosine, so *every* layer's raw CS, the outlier's included (the
  truncated vectors of the default variant scale with the layer too): the CS ``u`` and
  scales of every layer are unchanged, whatever the outlier's rank (up to float rounding;
  `CS_TOL`). A negative ``a`` flips the outlier's cosines and so changes everyone's raw CS.
* CE: nothing: the default ``"hist"`` distributions share bins over the global weight range,
  which the outlier stretches, so the others' raw CE changes too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from torch import nn

from lalr_core.methods.layer_lr.lalr.grouping import layer_matrices
from lalr_core.methods.layer_lr.lalr.method import LALR
from lalr_core.methods.layer_lr.lalr.metrics import layer_metrics
from lalr_core.methods.layer_lr.lalr.schedule import PHASES, scales

FACTOR = 10.0          # X-L8 (ours): multiply one mid layer's weights by 10
SHRINK_FALSIFIES = 0.5  # X-L8 (ours): falsified if the others' SVD range shrinks by > 50 %
CS_TOL = 1e-6          # |Delta scale| allowed for CS (float32 cosines of rescaled weights)


def phase_scales(raw: dict[str, np.ndarray], method: LALR) -> dict[str, np.ndarray]:
    """``{phase: [L] scales}`` of every phase from raw metrics, with ``method``'s rules."""
    return {p: scales(raw, p, method.cs_direction, method.s_min, method.normalise)[1]
            for p in PHASES}


def _spread(x: np.ndarray) -> float:
    return float(x.max() - x.min()) if x.size else float("nan")


def outlier_robustness(model: nn.Module, layer: str | None = None, factor: float = FACTOR,
                       method: LALR | None = None) -> dict:
    """LALR's scales per phase before and after one layer's weights are multiplied by
    ``factor`` (the model is not modified: its weight matrices are copied).

    Args:
        model: the network (chapter 01: the pretrained TinyTF classifier).
        layer: the outlier, a name of `grouping.layer_matrices`; default the middle one in
            metric order, ``names[len(names) // 2]``.
        factor: the multiplier, > 0 (10 in X-L8).
        method: LALR's settings (grouping, variants, direction, floor, normaliser);
            default ``LALR()``.

    Returns:
        ``{"summary": DataFrame`` one row per phase: ``phase``, ``mean_abs_dscale`` (others),
        ``range_before``, ``range_after`` (others' max - min scale), ``range_shrink``
        (``1 - after / before``), ``max_abs_dscale`` (others), ``max_abs_draw`` (others' largest
        raw metric change); ``"layers"``: ``layer, phase, outlier, raw_before,
        raw_after, scale_before, scale_after``; ``"outlier"``: its name; ``"falsified"``:
        SVD ``range_shrink > SHRINK_FALSIFIES``; ``"cs_unchanged"``: every CS scale (the
        outlier's too) moved by less than `CS_TOL`.

    Raises:
        ValueError: fewer than 3 layers, an unknown ``layer`` or ``factor <= 0``.
    """
    method = LALR() if method is None else method
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or \
            not np.isfinite(factor) or factor <= 0:
        raise ValueError(f"factor must be a positive number, got {factor!r}")
    mats = layer_matrices(model, method.grouping)
    names = list(mats)
    if len(names) < 3:
        raise ValueError(f"need >= 3 layers (an outlier and >= 2 others), got {names}")
    layer = names[len(names) // 2] if layer is None else layer
    if layer not in mats:
        raise ValueError(f"no LALR layer named {layer!r}; layers: {names}")
    i = names.index(layer)
    variants = {"svd_variant": method.svd_variant, "ce_variant": method.ce_variant,
                "cs_variant": method.cs_variant}
    before = list(mats.values())
    after = [m * factor if k == i else m for k, m in enumerate(before)]
    raw_b, raw_a = layer_metrics(before, **variants), layer_metrics(after, **variants)
    sc_b, sc_a = phase_scales(raw_b, method), phase_scales(raw_a, method)
    others = np.arange(len(names)) != i
    rows, layers = [], []
    for p in PHASES:
        b, a = sc_b[p][others], sc_a[p][others]
        rb, ra = _spread(b), _spread(a)
        rows.append({"phase": p, "mean_abs_dscale": float(np.abs(a - b).mean()),
                     "range_before": rb, "range_after": ra,
                     "range_shrink": 1.0 - ra / rb if rb > 0 else float("nan"),
                     "max_abs_dscale": float(np.abs(a - b).max()),
                     "max_abs_draw": float(np.abs(raw_a[p] - raw_b[p])[others].max())})
        layers += [{"layer": n, "phase": p, "outlier": k == i, "raw_before": raw_b[p][k],
                    "raw_after": raw_a[p][k], "scale_before": sc_b[p][k],
                    "scale_after": sc_a[p][k]} for k, n in enumerate(names)]
    summary = pd.DataFrame(rows)
    svd_shrink = float(summary.set_index("phase").loc["svd", "range_shrink"])
    return {"summary": summary, "layers": pd.DataFrame(layers), "outlier": layer,
            "falsified": bool(svd_shrink > SHRINK_FALSIFIES),
            "cs_unchanged": bool(np.abs(sc_a["cs"] - sc_b["cs"]).max() < CS_TOL)}
