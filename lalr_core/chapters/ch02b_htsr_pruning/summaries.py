"""Chapter 02b's summaries, the checks' arithmetic: run tables with the slimmed networks' size,
rebound detection, lr extremes (accuracy comparisons between runs: `verdicts`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lalr_core.chapters.ch02b_htsr_pruning.settings import SETTINGS
from lalr_core.core.runs.units import pretrained_weights
from lalr_core.core.loop.train import run_model
from lalr_core.methods.pruning import channel_masks


def slimmed_remaining(spec: Mapping, samples: int = 32) -> float:
    """Fraction of all conv weights the physically slimmed network of a finetuning run keeps.

    Rebuilds the run's start (the cached pretrained weights, masked by the run's ratios; the
    masks are deterministic) and counts with `channel_masks.slimmed_parameters`, which also drops
    the inputs a pruned channel fed, found on ``samples`` random inputs. Memoised per
    (pretraining, ratios, importance, samples).
    """
    ps = spec["callbacks"]["pruned_start"]
    key = (repr(ps["pretrained"]), tuple(sorted(ps["ratios"].items())),
           ps.get("importance", "l1"), samples)
    if key not in _SLIMMED:
        cfg = spec["cfg"]
        model = run_model(cfg)
        if key[0] not in _WEIGHTS:  # one read of each pretraining (a WRN-28-10 is 146 MB)
            _WEIGHTS[key[0]] = pretrained_weights(ps["pretrained"])
        model.load_state_dict(_WEIGHTS[key[0]])
        pruned, masks = channel_masks.prune_channels(model, ps["ratios"], key[2])
        kept = channel_masks.slimmed_parameters(pruned, masks, cfg.image_shape,
                                                  samples=samples)
        _SLIMMED[key] = kept["remaining"]
    return _SLIMMED[key]


_SLIMMED: dict[tuple, float] = {}
_WEIGHTS: dict[str, dict] = {}


def _correct(res: Mapping) -> np.ndarray | None:
    hits = res.get("test_correct")
    return None if hits is None else np.asarray(hits, dtype=bool)


def run_table(specs: Sequence[Mapping], results: Sequence[Mapping],
              remaining_fn=slimmed_remaining) -> pd.DataFrame:
    """One row per finetuning run: labels, final test/train accuracy (%), achieved sparsity
    (fraction of the masked convs' weights, the unit of the budget P), ``remaining`` = the
    slimmed network's fraction of conv weights (``remaining_fn(spec)``, default
    `slimmed_remaining`, the source's x axis; None = ``remaining_masked``),
    ``remaining_masked`` = 1 - sparsity, ``over_pruned``, ``test_correct`` (one bool per test
    example, None for a diverged run; the verdicts pair runs on it), ``seed`` (the
    finetuning's), ``pretrain_seed`` (the seed of the pretraining it starts from, None when
    the spec does not name it; finetuning seeds of one pretraining are one replicate of a
    claim about the pipeline, `verdicts.pipelines`), ``wall_time_s``."""
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
                           diverged=bool(res["diverged"]), seed=x["cfg"].seed
                           if "cfg" in x else None, pretrain_seed=_pretrain_seed(x),
                           wall_time_s=res.get("wall_time_s"),
                           test_correct=_correct(res)))
    df = pd.DataFrame(rows)
    df["setting"] = [SETTINGS[a][r] if r in ("direct", "inverse") else 0
                     for a, r in zip(df["aug"], df["rule"])]
    return df


def _pretrain_seed(spec: Mapping) -> int | None:
    """The seed of the pretraining a finetuning spec starts from (None if not named)."""
    pre = spec.get("callbacks", {}).get("pruned_start", {}).get("pretrained", {})
    seed = pre.get("run", {}).get("seed") if isinstance(pre, Mapping) else None
    return None if seed is None else int(seed)


def rebound_rise(series) -> float:
    """Size of a rebound: the rise after the curve's minimum relative to |minimum|,
    ``(max(x[i+1:]) - x[i]) / |x[i]|``; 0 when the minimum is the first or last point."""
    x = np.asarray(series, dtype=float)
    if len(x) < 3:
        return 0.0
    i = int(np.argmin(x))
    if i in (0, len(x) - 1):
        return 0.0
    rise = float(x[i + 1:].max() - x[i])
    return float(rise / abs(x[i])) if x[i] != 0 else (math.inf if rise > 0 else 0.0)


def rebound(series, rise: float = 0.02) -> bool:
    """Our definition of a rebound (E-3.2): the minimum lies strictly inside the run and is followed by a rise of at
    least ``rise`` (relative to |minimum|)."""
    return rebound_rise(series) >= rise


def rebound_mitigated(traditional, augmix, rise: float = 0.02) -> bool | None:
    """Whether AugMix's curve rebounds less than the traditional one (`rebound_rise`); None
    when the traditional curve has no rebound of at least ``rise`` (nothing to mitigate)."""
    if not rebound(traditional, rise):
        return None
    return rebound_rise(augmix) < rebound_rise(traditional)


def alpha_gap(tb: pd.DataFrame, base: pd.DataFrame, layer: str | None = None) -> pd.Series:
    """Per finetuning epoch after the start (epoch >= 1): alpha(TempBalance) - alpha(global lr)
    of ``layer``, or of the mean over layers (None), from two `SpectralProbe` results."""
    def curve(p):
        return layer_means(p, "alpha") if layer is None else \
            p[p.layer == layer].set_index("epoch")["alpha"]
    d = curve(tb) - curve(base)
    return d[d.index >= 1]


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
