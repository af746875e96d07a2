"""Chapter 06 (our addition, not a source item): the classifier's null direction in Orth-SGDM.

Under softmax cross-entropy the classifier's weight gradient ``G = (P - Y)^T H / B`` (``[C, d]``)
has rows summing to zero (each softmax-minus-one-hot row of ``P - Y`` does), so its rank is at
most ``C - 1``. Its thin-SVD ``U V^T`` still has ``C`` unit singular values: the last left vector
is ``1 / sqrt(C)`` and the right one an arbitrary unit vector orthogonal to ``G``'s rows, chosen
by the SVD routine from rounding noise. ``GradTransform(null="complete")`` keeps that direction
(the source's code), ``null="drop"`` removes it (Newton-Schulz maps the zero singular value to 0).
Of the update's Frobenius norm it is ``1 / sqrt(C)`` (0.32 for ten classes).

Under SGD with momentum and coupled weight decay it cannot change what the network computes:
the update is linear in ``O``, so ``W`` splits into a visible part (rows centred,
``(I - 1 1^T / C) W``) and a common row ``1 a^T``; ``a^T h`` added to every logit leaves the
softmax, the loss, the predictions and the gradient sent back to the features
(``W^T (p - y)`` with ``1^T (p - y) = 0``) unchanged, and the visible part's update never
depends on ``a``. Complete and drop runs therefore agree in exact arithmetic and differ in
floats only by rounding, which training amplifies like any perturbation (`exact_probe`
measures both). Under Adam the per-coordinate scaling mixes the two parts, so there the
completion does change the trained network.

`null_split` measures one gradient, `exact_probe` a few float64 steps, `runs.null_configs` builds
the cached runs (drop runs beside Orth-SGDM's complete runs, seed by seed), `null_accuracy`
judges them.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from lalr_core.chapters.ch06_orthogonal_sgdm.runs import untuned
from lalr_core.chapters.ch06_orthogonal_sgdm.settings import Settings, check_null_settings
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.results.evidence import Evidence, bootstrap_difference, paired_difference
from lalr_core.core.models.layers import weight_layers
from lalr_core.core.loop.optim import make_optimizer
from lalr_core.core.runs import cached
from lalr_core.core.loop.train import initial_model
from lalr_core.methods.orthogonal.transform import GradTransform
from lalr_core.methods.orthogonal.polar import newton_schulz, null_tolerance, svd_polar

RULES = ("complete", "drop")
# The source on its conv-only variant (sec. 5.5.6, after table 5.6), verbatim.
TABLE56_QUOTE = ("While both the error rates actually decrease for Conv-Orthogonal-SGDM we "
                 "hesitate to say that orthogonalising dense layers is detrimental since the "
                 "results are within the margin of experimental error; additionally these "
                 "networks only have a dense final classification layer which is qualitatively "
                 "different from intermediary dense layers, and only making up a small "
                 "proportion of the performance of the network.")
VARIANT = {"complete": "orth_sgdm", "drop": "orth_sgdm_drop", "newton_schulz": "ns_orth_sgdm"}


# ----------------------------------------------------------------------------- one gradient
def _norm(x: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(x))


def null_split(G: torch.Tensor, rtol: float | None = None) -> dict[str, float]:
    """What the null direction is in one classifier gradient ``G`` (``[C, d]``, ``C <= d``).

    Returns:
        ``rank`` (singular values above `null_tolerance`), ``frobenius`` (``||G||_F``, the
        raw step's size, against ``sqrt(C)`` after orthogonalisation), ``smallest_rel``
        (smallest / largest singular value), ``row_sum_rel`` (``||1^T G|| / ||G||``),
        ``null_share`` (``||O_complete - O_drop||_F / ||O_complete||_F``; ``1/sqrt(C)`` at
        rank ``C - 1``),
        ``null_common_row`` (``||1^T N|| / (sqrt(C) ||N||)`` of that difference ``N``: 1 when
        ``N`` adds one vector to every row, i.e. shifts every logit alike; NaN when ``N = 0``)
        and ``ns_null_share`` (the same share of ``1 1^T / C`` in Newton-Schulz's output).
    """
    M = G.flatten(1)
    C = M.shape[0]
    ones = torch.full((1, C), 1 / math.sqrt(C), dtype=M.dtype)
    S = torch.linalg.svdvals(M)
    N = svd_polar(M, "complete", rtol) - svd_polar(M, "drop", rtol)
    ns = newton_schulz(M)
    n_norm = _norm(N)
    return {
        "rows": C, "cols": M.shape[1],
        "rank": int((S > null_tolerance(M, rtol) * S[0]).sum()),
        "frobenius": _norm(M),
        "smallest_rel": float(S[-1] / S[0]),
        "row_sum_rel": _norm(ones @ M) / _norm(M),
        "null_share": n_norm / _norm(svd_polar(M, "complete", rtol)),
        "null_common_row": _norm(ones @ N) / n_norm if n_norm > 0 else math.nan,
        "ns_null_share": _norm(ones @ ns) / _norm(ns),
    }


def classifier_name(model: torch.nn.Module) -> str:
    """The parameter name of the last linear layer's weight (the classifier)."""
    linear = list(weight_layers(model, ("linear",)))
    if not linear:
        raise ValueError(f"{type(model).__name__} has no linear layer")
    return f"{linear[-1]}.weight" if linear[-1] else "weight"


def first_gradient(cfg: RunConfig, data) -> torch.Tensor:
    """The classifier's gradient on the run's first batch at initialisation (float32)."""
    model = initial_model(cfg)
    batch = next(iter(cfg.task.batches(cfg, data, torch.Generator().manual_seed(cfg.seed))))
    loss, *_ = cfg.task.loss(model, batch, contextlib.nullcontext(), None)
    loss.backward()
    return dict(model.named_parameters())[classifier_name(model)].grad.detach().clone()


def gradient_table(s: Settings) -> pd.DataFrame:
    """`null_split` of the classifier's first gradient of each ``null_seeds`` model's seed-0
    Orth-SGDM run (its initialisation, its first batch), one row per model."""
    rows = []
    for model in s.null_seeds:
        cfg = untuned(s, model, "orth_sgdm")
        rows.append({"model": model, **null_split(first_gradient(cfg, cfg.task.load(
            cfg, torch.device("cpu"))))})
    return pd.DataFrame(rows).set_index("model")


# ----------------------------------------------------------------------------- same-batch steps
def exact_probe(cfg: RunConfig, data, steps: int, optimizers: Mapping[str, dict] | None = None,
                dtype: torch.dtype = torch.float64, control: bool = False) -> pd.DataFrame:
    """Train one initialisation with the null direction completed and dropped, same batches.

    Args:
        cfg: an Orth-SGDM run (its model, seed, batch size, lr, momentum, wd).
        data: its data (``cfg.task.load``).
        steps: optimiser steps.
        optimizers: name -> ``RunConfig`` changes (default ``{"sgdm": {}}``); e.g. ``{"adam":
            dict(optimizer="adam", lr=1e-3)}`` to see the completion matter.
        dtype: of the models and inputs (float64: rounding far below any effect; float32: as
            the runs train).
        control: also train ``"control"``: the complete update with the classifier's rows
            centred, which is the drop update in exact arithmetic, computed with the complete
            run's rounding (how far rounding alone carries two runs apart).

    Returns:
        One row per (optimizer, step, run), ``run`` = ``"complete"`` (and ``"control"``),
        each compared with the drop run on that step's batch, before the step:
        ``null_share`` (of the complete run's classifier update), ``classifier_diff`` (max
        |W_run - W_drop|), ``visible_diff`` (the same with rows centred), ``common_row`` /
        ``common_row_drop`` (``||mean row|| * sqrt(C)`` of each classifier: the invisible
        part), ``other_diff`` (max difference of every other parameter), ``logit_shift`` (max
        |mean over classes| of the logit difference), ``logit_diff`` (max of that difference
        centred per example: what the softmax sees), ``loss_diff``.
    """
    optimizers = {"sgdm": {}} if optimizers is None else optimizers
    runs = ("complete", "drop", "control") if control else RULES
    base = initial_model(cfg).to(dtype)
    gen = torch.Generator().manual_seed(cfg.seed)
    epochs = itertools.chain.from_iterable(cfg.task.batches(cfg, data, gen)
                                           for _ in itertools.count())
    batches = [(X.to(dtype), y) for X, y in itertools.islice(epochs, steps)]
    name = classifier_name(base)
    rows = []
    for opt_name, changes in optimizers.items():
        models = {run: copy.deepcopy(base) for run in runs}
        opts = {run: make_optimizer(dataclasses.replace(cfg, **changes, methods=(
            GradTransform("orth", null="drop" if run == "drop" else "complete"),)), models[run])
            for run in runs}
        for t, (X, y) in enumerate(batches):
            logits, losses = {}, {}
            for run in runs:
                opts[run].zero_grad()
                z = models[run](X)
                losses[run] = torch.nn.functional.cross_entropy(z, y)
                losses[run].backward()
                logits[run] = z.detach()
            share = null_split(dict(models["complete"].named_parameters())[name].grad)
            for run in runs:
                opts[run].transform_grads()
                if run == "control":                                # drop, in exact arithmetic
                    with torch.no_grad():
                        G = dict(models[run].named_parameters())[name].grad
                        G.sub_(G.mean(0, keepdim=True))
                opts[run].optimizer.step()
            rows += [{"optimizer": opt_name, "step": t + 1, "run": run,
                      "null_share": share["null_share"],
                      **_compare(models[run], models["drop"], name, logits[run] - logits["drop"],
                                 losses[run] - losses["drop"])}
                     for run in runs if run != "drop"]
    return pd.DataFrame(rows)


@torch.no_grad()
def _compare(model: torch.nn.Module, drop: torch.nn.Module, name: str, dz: torch.Tensor,
             dloss: torch.Tensor) -> dict[str, float]:
    pa, pb = dict(model.named_parameters()), dict(drop.named_parameters())
    Wa, Wb = pa[name], pb[name]
    C = Wa.shape[0]
    others = [float((pa[k] - pb[k]).abs().max()) for k in pa if k != name]
    return {
        "classifier_diff": float((Wa - Wb).abs().max()),
        "visible_diff": float(((Wa - Wa.mean(0)) - (Wb - Wb.mean(0))).abs().max()),
        "common_row": float(Wa.mean(0).norm()) * math.sqrt(C),
        "common_row_drop": float(Wb.mean(0).norm()) * math.sqrt(C),
        "other_diff": max(others, default=0.0),
        "logit_shift": float(dz.mean(1).abs().max()),
        "logit_diff": float((dz - dz.mean(1, keepdim=True)).abs().max()),
        "loss_diff": abs(float(dloss)),
    }


# Float64 rounding (eps 2.2e-16) grown over a few dozen steps stays far below this; an effect of
# the completed direction on what the network computes would be of the update's size (lr).
IDENTITY_TOL = 1e-9


def probe_summary(probe: pd.DataFrame, tol: float = IDENTITY_TOL) -> pd.DataFrame:
    """Per (model, precision, optimizer, run) of `probe_table` / `exact_probe` (the columns
    present): the largest raw classifier difference from the drop run, and the largest of each
    difference the network can see; ``invisible`` = every visible difference <= ``tol``
    while the classifiers differ by more than ``1000 * tol`` (so the probe did exercise a
    completed direction; meaningful for the complete run in float64)."""
    cols = ["classifier_diff", "visible_diff", "other_diff", "logit_diff", "loss_diff"]
    by = [c for c in ("model", "precision", "optimizer", "run") if c in probe]
    out = probe.groupby(by, sort=False)[cols].max()
    out["invisible"] = (out[cols[1:]].max(axis=1) <= tol) & (out["classifier_diff"] > 1e3 * tol)
    return out


def probe_unit(params: dict) -> pd.DataFrame:
    """Cached unit: `exact_probe` of ``RunConfig(**params["run"])`` for ``params["steps"]``
    steps, ``params["optimizers"]`` (name -> ``RunConfig`` changes), in ``params["precision"]``
    (``"float64"`` or ``"float32"``), with the control run if ``params["control"]``."""
    cfg = RunConfig(**params["run"])
    data = cfg.task.load(cfg, torch.device("cpu"))
    return exact_probe(cfg, data, params["steps"], params["optimizers"],
                       dtype=getattr(torch, params["precision"]), control=params["control"])


def probe_table(s: Settings) -> pd.DataFrame:
    """`exact_probe` of each ``null_probe`` model's seed-0 Orth-SGDM run (cached): float64 for
    ``null_steps`` steps under SGDM (the run's) and Adam at ``t51_adam_lr`` (betas 0.9,
    0.999); float32, SGDM, with the rounding control, for ``null_f32_steps`` steps."""
    check_null_settings(s)
    adam = dict(optimizer="adam", lr=s.t51_adam_lr, betas=(0.9, 0.999))
    frames = []
    for model in s.null_probe:
        run = untuned(s, model, "orth_sgdm").key()
        for precision, steps, optimizers, control in (
                ("float64", s.null_steps, {"sgdm": {}, "adam": adam}, False),
                ("float32", s.null_f32_steps, {"sgdm": {}}, True)):
            params = {"run": run, "steps": steps, "optimizers": optimizers,
                      "precision": precision, "control": control}
            frames.append(cached(probe_unit, params, name="ch06_null_probe").assign(
                model=model, precision=precision))
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------- the runs
def rule_of(cfg: RunConfig) -> str:
    """``"complete"``, ``"drop"`` or ``"newton_schulz"`` of an Orth-SGDM config."""
    gt = cfg.method("grad_transform")
    if gt is None or gt.transform != "orth":
        raise ValueError(f"not an Orth-SGDM run: {cfg.methods}")
    return "newton_schulz" if gt.method == "newton_schulz" else gt.null


def source_gap(model: str, source: pd.DataFrame, analogue: Mapping[str, str]) -> float:
    """Table 5.6's conv-only minus all-layer test accuracy (points) of ``model``'s source
    counterpart (``analogue``, then the name without torchvision's ``_tv``); NaN if none."""
    name = analogue.get(model, model).removesuffix("_tv")
    acc = source[source.model == name].set_index("variant")["test_acc_mean"]
    if not {"orth_sgdm", "conv_orth_sgdm"} <= set(acc.index):
        return math.nan
    return float(acc["conv_orth_sgdm"] - acc["orth_sgdm"])


def _difference(a: dict[int, dict], b: dict[int, dict], **claim) -> Evidence:
    """``acc(a) - acc(b)`` in points over the seeds both have: paired t over seeds, or with
    one seed the paired bootstrap over the test examples."""
    seeds = sorted(set(a) & set(b))
    if len(seeds) > 1:
        return paired_difference([a[k]["final"]["test_acc"] for k in seeds],
                                 [b[k]["final"]["test_acc"] for k in seeds], scale=100, **claim)
    hits_a, hits_b = a[seeds[0]]["test_correct"], b[seeds[0]]["test_correct"]
    if hits_a is None or hits_b is None:                    # a diverged run: no interval
        return paired_difference([math.nan], [math.nan], scale=100, **claim)
    return bootstrap_difference(hits_a, hits_b, scale=100, **claim)


def null_accuracy(cfgs: Sequence[RunConfig], results: Sequence[dict],
                  tolerance: Mapping[str, float]) -> tuple[pd.DataFrame, dict[str, Evidence]]:
    """Test accuracy (%) of complete, drop and Newton-Schulz per model, and the evidence on
    complete - drop (points) against ``|difference| <= tolerance[model]``.

    Several seeds: paired t over seeds; one seed: paired bootstrap over the test examples
    (`lalr_core.core.results.evidence`). Models without a finite tolerance get no evidence.
    ``drop_minus_ns`` compares the two rules that both leave out the null direction, over the
    seeds Newton-Schulz has (its interval, judged against 0).
    """
    runs: dict[tuple[str, str], dict[int, dict]] = {}
    for cfg, res in zip(cfgs, results, strict=True):
        runs.setdefault((cfg.model, rule_of(cfg)), {})[cfg.seed] = res
    rows, evidence = [], {}
    for model in dict.fromkeys(c.model for c in cfgs):
        got = {rule: runs.get((model, rule), {}) for rule in VARIANT}
        tol = tolerance.get(model, math.nan)
        if math.isfinite(tol) and tol > 0:
            evidence[model] = _difference(got["complete"], got["drop"], threshold=tol,
                                          side="within")
        ns = _difference(got["drop"], got["newton_schulz"]) if got["newton_schulz"] else None
        rows.append({"model": model, "seeds": len(got["complete"]),
                     **{f"{VARIANT[r]}_acc": 100 * float(np.mean(
                         [x["final"]["test_acc"] for x in v.values()])) if v else math.nan
                        for r, v in got.items()},
                     "ns_seeds": len(got["newton_schulz"]),
                     "complete_minus_drop": evidence[model].text() if model in evidence else "",
                     "tolerance": tol,
                     "drop_minus_ns": ns.text() if ns is not None else ""})
    return pd.DataFrame(rows), evidence


def reading(summary: pd.DataFrame) -> str:
    """What `probe_summary`'s table shows, one Markdown paragraph per model, from this run's
    numbers: float64 SGDM (is the completion invisible?), float64 Adam (how far the logits
    part), float32 SGDM complete vs the rounding-only control (how far each parts from drop)."""
    lines = []
    for model, d in summary.groupby(level="model", sort=False):
        d = d.droplevel("model")

        def cell(precision, optimizer, run, col, d=d):
            key = (precision, optimizer, run)
            return float(d.loc[key, col]) if key in d.index else float("nan")

        sgdm = d.loc[("float64", "sgdm", "complete")] if ("float64", "sgdm", "complete") in \
            d.index else None
        text = f"**{model}.** "
        if sgdm is not None:
            text += ("In float64 under SGDM the classifiers of complete and drop differ by up to "
                     f"{sgdm['classifier_diff']:.1e} while the largest difference the network "
                     f"can see is {max(sgdm[c] for c in ('visible_diff', 'logit_diff', 'loss_diff')):.1e}"
                     f" ({'invisible' if sgdm['invisible'] else 'not invisible'} at "
                     f"{IDENTITY_TOL:g}). ")
        adam = cell("float64", "adam", "complete", "logit_diff")
        if math.isfinite(adam):
            text += f"Under Adam the logits part by up to {adam:.1e}. "
        c32, k32 = (cell("float32", "sgdm", r, "logit_diff") for r in ("complete", "control"))
        if math.isfinite(c32) and math.isfinite(k32):
            same = k32 >= 0.1 * c32
            text += (f"In float32, complete parts from drop by up to {c32:.1e} in the logits and the "
                     f"rounding-only control by {k32:.1e}: "
                     + ("rounding alone carries runs about as far apart, so accuracy differences "
                        "between complete and drop are run-to-run spread of that kind, not an "
                        "effect of the null direction." if same else
                        "the control stays well below complete, so here the completed direction "
                        "moves the float32 run beyond rounding alone."))
        lines.append(text)
    return "\n\n".join(lines)
