"""Chapter 02b's summaries, the checks' arithmetic: run tables with the slimmed networks' size,
gains over uniform pruning, rebound detection, lr extremes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lalr_core.chapters.ch02b_htsr_pruning.settings import SETTINGS, UNIFORM
from lalr_core.core.callbacks import pretrained_weights
from lalr_core.core.train import run_model
from lalr_core.methods import channel_masks


def slimmed_remaining(spec: Mapping) -> float:
    """Fraction of all conv weights the physically slimmed network of a finetuning run keeps.

    Rebuilds the run's start (the cached pretrained weights, masked by the run's ratios; the
    masks are deterministic) and counts with `channel_masks.slimmed_parameters`, which also drops
    the inputs a pruned channel fed (digest I.2.10). Memoised per (pretraining, ratios).
    """
    ps = spec["callbacks"]["pruned_start"]
    key = (repr(ps["pretrained"]), tuple(sorted(ps["ratios"].items())),
           ps.get("importance", "l1"))
    if key not in _SLIMMED:
        cfg = spec["cfg"]
        model = run_model(cfg)
        model.load_state_dict(pretrained_weights(ps["pretrained"]))
        pruned, masks = channel_masks.prune_channels(model, ps["ratios"], key[2])
        kept = channel_masks.slimmed_parameters(pruned, masks, cfg.image_shape)
        _SLIMMED[key] = kept["remaining"]
    return _SLIMMED[key]


_SLIMMED: dict[tuple, float] = {}


def run_table(specs: Sequence[Mapping], results: Sequence[Mapping],
              remaining_fn=slimmed_remaining) -> pd.DataFrame:
    """One row per finetuning run: labels, final test/train accuracy (%), achieved sparsity
    (fraction of the masked convs' weights, the unit of the budget P), ``remaining`` = the
    slimmed network's fraction of conv weights (``remaining_fn(spec)``, default
    `slimmed_remaining`, the source's x axis; None = ``remaining_masked``),
    ``remaining_masked`` = 1 - sparsity, ``over_pruned``."""
    rows = []
    for x, res in zip(specs, results, strict=True):
        sp = res["callbacks"]["pruned_start"]["sparsity"]
        f = res["final"]
        rows.append({k: x[k] for k in ("section", "role", "aug", "metric", "rule", "P",
                                       "layer_lr", "epochs")}
                    | dict(test_acc=100 * f.get("test_acc", np.nan),
                           train_acc=100 * f.get("train_acc", np.nan),
                           sparsity=sp["params"], channel_sparsity=sp["channels"],
                           remaining=remaining_fn(x) if remaining_fn else 1 - sp["params"],
                           remaining_masked=1 - sp["params"],
                           over_pruned=sp["params"] > x["P"] + 1e-9,
                           diverged=bool(res["diverged"])))
    df = pd.DataFrame(rows)
    df["setting"] = [SETTINGS[a][r] if r in ("direct", "inverse") else 0
                     for a, r in zip(df["aug"], df["rule"])]
    return df


def gains(df: pd.DataFrame, by: Sequence[str] = ("role", "aug", "P")) -> pd.DataFrame:
    """Per group: uniform's accuracy, the best metric run and its gain (pp) over uniform.

    Budgets under-prune by different amounts, so the runs of one target P sit at different
    measured ``remaining`` fractions; ``uniform_interp`` is the uniform curve (same keys but
    ``P``) linearly interpolated at the best run's ``remaining`` (clamped at the curve's ends),
    and ``gain_interp`` the gain against it: the comparison along fig 3.3's x axis.
    """
    out = []
    for key, g in df.groupby(list(by)):
        labels = dict(zip(by, key))
        uni = g[g.metric == UNIFORM]["test_acc"].mean()
        met = g[g.metric != UNIFORM].sort_values("test_acc", ascending=False)
        if met.empty:                                     # a uniform-only group: nothing to rank
            continue
        best = met.iloc[0]
        same = np.ones(len(df), dtype=bool)
        for k, v in labels.items():
            if k != "P":
                same &= (df[k] == v).to_numpy()
        curve = df[same & (df.metric == UNIFORM).to_numpy()].sort_values("remaining")
        interp = float(np.interp(best.remaining, curve["remaining"], curve["test_acc"]))
        out.append(labels | dict(uniform_acc=uni, uniform_remaining=g[g.metric == UNIFORM]
                                 ["remaining"].mean(), best_metric=best.metric,
                                 best_rule=best.rule, best_acc=best.test_acc,
                                 best_remaining=best.remaining, gain=best.test_acc - uni,
                                 uniform_interp=interp, gain_interp=best.test_acc - interp,
                                 n_beat_uniform=int((met.test_acc > uni).sum()),
                                 n_metric_runs=len(met)))
    return pd.DataFrame(out)


def rebound(series, rise: float = 0.02) -> bool:
    """Digest E-3.2: the minimum lies strictly inside the run and is followed by a rise of at
    least ``rise`` (relative to |minimum|)."""
    x = np.asarray(series, dtype=float)
    if len(x) < 3:
        return False
    i = int(np.argmin(x))
    if i in (0, len(x) - 1):
        return False
    return bool(x[i + 1:].max() - x[i] >= rise * abs(x[i]))


def layer_means(probe: pd.DataFrame, column: str) -> pd.Series:
    """Mean over layers of ``column`` per epoch of a `SpectralProbe` result."""
    return probe.groupby("epoch")[column].mean()


def lr_extremes(tb: pd.DataFrame, k: int = 3) -> tuple[list[str], list[str]]:
    """The ``k`` layers with the largest lr increase and the ``k`` with the largest decrease
    relative to lr_t at the first finetuning epoch (TempBalance records of epoch 0)."""
    first = tb[tb.epoch == tb.epoch.min()].set_index("layer")["lr_scale"].sort_values()
    return list(first.index[::-1][:k]), list(first.index[:k])


def largest_lr_shift(tb: pd.DataFrame, k: int = 4) -> list[str]:
    """The ``k`` layers whose |lr_scale - 1| is largest averaged over the epochs (fig 3.22)."""
    d = (tb.assign(d=(tb.lr_scale - 1).abs()).groupby("layer")["d"].mean())
    return list(d.sort_values(ascending=False).index[:k])
