"""Chapter 02b's runs: pretraining (one sweep), per-layer budgets from the pretrained weights'
HT-SR metrics, and every prune-then-finetune run by section (built after pretraining)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from torch import nn

from lalr_core.chapters.ch02b_htsr_pruning.settings import AUGS, METRICS, ROLES, UNIFORM, Settings
from lalr_core.core.runs.units import pretrained_weights
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model, run_model
from lalr_core.methods.pruning import channel_masks, budgets as pruning
from lalr_core.methods import spectra as spectral
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance


# ----------------------------------------------------------------------------- pretraining
def pretrain_config(s: Settings, role: str, aug: str = "traditional") -> RunConfig:
    """The initial training of ``role`` (crop + flip; then AugMix if ``aug == "augmix"``)."""
    if aug not in AUGS:
        raise ValueError(f"aug must be one of {AUGS}, got {aug!r}")
    return RunConfig(dataset=s.dataset, n_train=s.n_train, augment=True,
                     augmix=aug == "augmix", model=s.models[role], optimizer="sgdm",
                     lr=s.pretrain_lr, momentum=s.momentum, wd=s.wd,
                     batch_size=s.batch_size, epochs=s.pretrain_epochs, schedule="cosine",
                     seed=s.seed)


def pretrain_unit(s: Settings, role: str, aug: str = "traditional") -> dict:
    """``{"run", "callbacks"}`` of a pretraining run: weights kept; alpha/entropy per epoch
    (KS x_min, our choice) for the fig 3.2 roles."""
    cb = {"weights": {}}
    if role in s.fig32_roles:
        # flatten, as `layer_table`: each conv one [c_out, c_in k k] matrix, rows = its channels
        cb["spectral"] = {"xmin": "ks", "conv": "flatten", "every": 1}
    return {"run": pretrain_config(s, role, aug).key(), "callbacks": cb}


def pretrain_pairs(s: Settings) -> list[tuple[str, str]]:
    """Every pretrained (role, aug), AugMix (the slow ones) first."""
    return [(r, "augmix") for r in s.augmix_roles] + [(r, "traditional") for r in ROLES]


def pretrain_runs(s: Settings) -> tuple[list[RunConfig], list[dict]]:
    """Configs and callbacks of every pretraining run, for one ``train_runs`` sweep."""
    units = [pretrain_unit(s, r, a) for r, a in pretrain_pairs(s)]
    return [RunConfig(**u["run"]) for u in units], [u["callbacks"] for u in units]


def sections(s: Settings) -> dict[str, tuple[list[RunConfig], list[dict]]]:
    """The runs known before any training: the pretraining sweep (the finetuning sections need
    its weights, `finetune_plan`)."""
    return {"pretraining": pretrain_runs(s)}


def pretrained_model(s: Settings, role: str, aug: str = "traditional") -> nn.Module:
    """The pretrained ``role`` model (from the cache; raises ``LookupError`` if not trained)."""
    model = run_model(pretrain_config(s, role, aug))
    model.load_state_dict(pretrained_weights(pretrain_unit(s, role, aug)))
    return model.eval()


# ----------------------------------------------------------------------------- budgets
def transition_layers(model: nn.Module) -> list[str]:
    """Names of the convs inside DenseNet transition blocks (the source's bottlenecks)."""
    return [f"{name}.conv" for name, mod in model.named_modules()
            if type(mod).__name__ == "_Transition"]


def layer_table(model: nn.Module, xmin: str = "ks") -> tuple[pd.DataFrame, dict[str, int]]:
    """HT-SR metrics (`spectral.htsr_metrics`) of the prunable convs in network order, and
    their sizes (weight entries, the unit of the global parameter target)."""
    convs = channel_masks.prunable_layers(model)
    # flatten: one [c_out, c_in k k] matrix per conv, its rows the channels this chapter prunes
    metrics = spectral.htsr_metrics(model, xmin=xmin, conv="flatten").loc[list(convs)]
    return metrics, {k: int(conv.weight.numel()) for k, (conv, _) in convs.items()}


def metric_tables(s: Settings) -> dict[tuple[str, str], tuple[pd.DataFrame, dict]]:
    """`layer_table` of every pretrained (role, aug); needs the pretraining sweep done."""
    return {(r, a): layer_table(pretrained_model(s, r, a)) for r, a in pretrain_pairs(s)}


def init_tables(s: Settings, role: str) -> list[pd.DataFrame]:
    """The null of the layer claims (figs 3.6-3.21): `layer_table`'s metrics of ``role``'s
    architecture at initialisation, one per seed of ``s.init_seeds`` (seeds 1000, 1001, ...,
    apart from the runs' seeds); no training, so cheap. A property of the trained network
    that these already show is the architecture's (e.g. the widths of DenseNet's transition
    convs), not training's."""
    cfg = pretrain_config(s, role)
    return [layer_table(initial_model(cfg.replace(seed=1000 + k)))[0]
            for k in range(s.init_seeds)]


def ratios_for(table: tuple[pd.DataFrame, Mapping[str, int]], metric: str, P: float,
               rule: str = "direct") -> dict[str, float]:
    """Per-conv channel ratios: ``uniform`` or a metric's budgets (global parameter target P,
    0.01 increments, never above P; `pruning.layer_budgets`)."""
    metrics, sizes = table
    if metric == UNIFORM:
        return pruning.uniform_budgets(list(sizes), P)
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose {UNIFORM!r} or one of {METRICS}")
    return pruning.layer_budgets(metrics[metric].to_dict(), P, rule, sizes=dict(sizes))


def budget_grid(table, ratios: Sequence[float], metrics: Sequence[str] = METRICS,
                rules: Sequence[str] = pruning.RULES) -> pd.DataFrame:
    """Tidy ``metric, rule, P, layer, index, ratio`` for figs 3.4-3.21 (plus ``uniform``)."""
    rows = []
    for P in ratios:
        for metric in (*metrics, UNIFORM):
            for rule in (rules if metric != UNIFORM else ("direct",)):
                for i, (layer, r) in enumerate(ratios_for(table, metric, P, rule).items()):
                    rows.append(dict(metric=metric, rule=rule if metric != UNIFORM else UNIFORM,
                                     P=P, layer=layer, index=i, ratio=r))
    return pd.DataFrame(rows)


def rule_correlations(grid: pd.DataFrame) -> pd.DataFrame:
    """Pearson correlation of the direct and inverse ratio profiles per (metric, P)."""
    out = []
    for (metric, P), g in grid[grid.rule != UNIFORM].groupby(["metric", "P"]):
        d = g[g.rule == "direct"].sort_values("index")["ratio"].to_numpy()
        v = g[g.rule == "inverse"].sort_values("index")["ratio"].to_numpy()
        ok = d.std() > 0 and v.std() > 0
        out.append(dict(metric=metric, P=P, corr=float(np.corrcoef(d, v)[0, 1]) if ok else np.nan))
    return pd.DataFrame(out)


def ranks_of(values: Mapping[str, float] | pd.Series, layers: Sequence[str]) -> dict[str, int]:
    """1-based ascending rank (1 = smallest) of ``layers`` among all entries of ``values``."""
    r = pd.Series(values, dtype=float).rank(method="min")
    return {k: int(r[k]) for k in layers}


def max_abs_zscore(values) -> float:
    """Largest |z| of ``values`` across layers (0 if they are all equal)."""
    x = np.asarray(values, dtype=float)
    sd = x.std(ddof=1) if len(x) > 1 else 0.0
    return float(np.abs((x - x.mean()) / sd).max()) if sd > 0 else 0.0


def fig31_table(model: nn.Module, P: float) -> pd.DataFrame:
    """Per-conv pruned fraction of ERK, LAMP (global, unstructured) and uniform at sparsity P."""
    convs = {k: conv.weight.detach()
             for k, (conv, _) in channel_masks.prunable_layers(model).items()}
    erk = pruning.erk_budgets({k: tuple(w.shape) for k, w in convs.items()}, P)
    lamp = pruning.lamp_budgets(convs, P)
    return pd.DataFrame([dict(index=i, layer=k, size=w.numel(), erk=erk[k], lamp=lamp[k],
                              uniform=P) for i, (k, w) in enumerate(convs.items())])


# ----------------------------------------------------------------------------- finetuning
def finetune_spec(s: Settings, section: str, role: str, aug: str, table, metric: str,
                  P: float, rule: str, epochs: int, layer_lr: str = "none",
                  probe: bool = False, seed: int | None = None) -> dict[str, Any]:
    """One prune-then-finetune run: its labels, ``RunConfig`` and callbacks.

    Finetuning always uses traditional augmentation (crop + flip; AugMix only in pretraining,
    a stated deviation) at lr0 ``ft_lr`` with a cosine schedule over ``epochs``; with
    ``layer_lr="eq2.13"`` the lrs are TempBalance's (refit every epoch; a pruned layer's alpha
    from its non-zero eigenvalues, ``zeros="drop"``: the kept channels' spectrum, as
    WeightWatcher counts; the source does not say, and TempBalance's own count would read the
    masked zeros' rounding noise). ``probe`` adds a
    `SpectralProbe` with TempBalance's alphas (median x_min, kernel slices) for figs 3.22-3.24.
    ``seed`` is the finetuning's (data order, augmentation; default the pretraining's): the
    masks and the pretrained weights do not depend on it.
    """
    ratios = ratios_for(table, metric, P, rule)
    methods = () if layer_lr == "none" else (TempBalance(layer_lr, zeros="drop"),)
    cfg = pretrain_config(s, role, aug).replace(augmix=False, lr=s.ft_lr, epochs=int(epochs),
                                                methods=methods,
                                                seed=s.seed if seed is None else int(seed))
    cb = {"pruned_start": {"pretrained": pretrain_unit(s, role, aug), "ratios": ratios,
                           "importance": s.importance}}
    if probe:
        cb["spectral"] = {"xmin": "median", "conv": "slices", "every": 1}
    return dict(section=section, role=role, aug=aug, metric=metric,
                rule=rule if metric != UNIFORM else UNIFORM, P=float(P), layer_lr=layer_lr,
                epochs=int(epochs), cfg=cfg, callbacks=cb)


def _sweep(s, section, role, aug, tables, metrics, ratios, epochs, rules=None):
    """Uniform + every metric x rule at each target of ``ratios``, then uniform alone at the
    ``curve_ratios`` not swept (the uniform curve the verdicts compare each run with)."""
    out = []
    for P in ratios:
        out.append(finetune_spec(s, section, role, aug, tables[(role, aug)], UNIFORM, P,
                                 "direct", epochs))
        out += [finetune_spec(s, section, role, aug, tables[(role, aug)], m, P, r, epochs)
                for m in metrics for r in (rules or s.rules)]
    out += [finetune_spec(s, section, role, aug, tables[(role, aug)], UNIFORM, P, "direct",
                          epochs)
            for P in sorted(set(s.curve_ratios) - set(ratios))]
    return out


def finetune_plan(s: Settings, tables) -> dict[str, list[dict[str, Any]]]:
    """Every finetuning run, by section: fig3.3, T-001-e, vgg (figs 3.23-3.25), fig3.22, fig3.26.

    Args:
        s: resolved settings. tables: `metric_tables` (or any ``{(role, aug): layer_table}``).
    """
    ratios = {"traditional": s.f33_ratios, "augmix": s.f33_aug_ratios}
    plan = {"fig3.3": [x for aug in s.f33_augs for x in _sweep(
        s, "fig3.3", "densenet", aug, tables, s.f33_metrics, ratios[aug], s.f33_epochs)]}
    plan["T-001-e"] = [x for role in ("densenet", *s.te_roles) for x in _sweep(
        s, "T-001-e", role, "traditional", tables, s.te_metrics, s.te_ratios,
        s.f33_epochs)]
    vgg = tables[("vgg", "traditional")]
    plan["vgg"] = [finetune_spec(s, "vgg", "vgg", "traditional", vgg, UNIFORM, P, "direct",
                                 s.vgg_epochs, lr, probe=True, seed=s.seed + k)
                   for k in range(s.vgg_seeds) for P in s.vgg_ratios
                   for lr in ("none", "eq2.13")]
    plan["fig3.22"] = [finetune_spec(s, "fig3.22", "vgg", "traditional", vgg, UNIFORM,
                                     s.f322_ratio, "direct", s.f322_epochs, lr, probe=True)
                       for lr in ("none", "eq2.13")]
    dn = tables[("densenet", "traditional")]
    plan["fig3.26"] = [finetune_spec(s, "fig3.26", "densenet", "traditional", dn, m, P, "direct",
                                     s.f326_epochs, lr)
                       for P in s.f326_ratios for m in (UNIFORM, "alpha")
                       for lr in ("none", "eq2.13")]
    return plan


def all_finetunes(plan: Mapping[str, list[dict]]) -> tuple[list[RunConfig], list[dict]]:
    """The union of the plan's runs, longest first (duplicates are trained once)."""
    specs = sorted((x for xs in plan.values() for x in xs),
                   key=lambda x: -x["epochs"] * (4 if x["role"] == "vgg" else 1))
    return [x["cfg"] for x in specs], [x["callbacks"] for x in specs]
