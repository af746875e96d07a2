"""Chapter 02b (seed 001 ch. 3, HT-SR-metric-guided channel pruning): profiles, runs, summaries.

Pipeline of the source: pretrain (traditional augmentation or AugMix) -> per-layer pruning
budgets from an HT-SR metric of the pretrained conv weights (`pruning.layer_budgets`, Table 3.1
settings) -> mask channels (ME-Prune scores) -> finetune with lr0 0.05 cosine, with a global lr
or TempBalance's alpha-weighted layer-wise lrs (eq. 2.13). ``PRUNING`` holds the profiles
(smoke / quick = the digest's I.5 reductions on sklearn digits / paper = CIFAR-100 and the
source's models). Pretraining is one sweep; the budgets need its weights, so every finetuning
run is built from `metric_tables` afterwards. The summaries (gains over uniform pruning,
transition-layer ranks, rebound detection, lr extremes) are the checks' arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from torch import nn

from lalr_core.methods import channel_masks, pruning, spectral
from lalr_core.core.callbacks import pretrained_weights
from lalr_core.core.config import RunConfig
from lalr_core.core.train import run_model
from lalr_core.methods.tempbalance_callback import TempBalance

# The 10 HT-SR metrics (digest I.2.9 / A-17) grouped as in the source's bullet list (ch. 3.2).
SHAPE = ("alpha", "rand_distance", "stable_rank", "entropy")
SCALE = ("norm", "log_norm", "spectral_norm", "log_spectral_norm")
HYBRID = ("alpha_weighted", "log_alpha_norm")
METRICS = SHAPE + SCALE + HYBRID
UNIFORM = "uniform"
AUGS = ("traditional", "augmix")
# Table 3.1 is `pruning.TABLE_3_1`, the dict `layer_budgets`' rules are named after.
SETTINGS = pruning.TABLE_3_1
SOURCE_MODELS = {"densenet": "DenseNet40", "wrn": "WRN28-10", "mobilenet": "MobileNetV2",
                 "vgg": "VGG19"}

# Figs 3.4-3.21: (role, aug) -> (direct panel, inverse panel, composite figure)
GRID_FIGS = {("densenet", "traditional"): ("fig3.4", "fig3.5", "fig3.6"),
             ("densenet", "augmix"): ("fig3.7", "fig3.8", "fig3.9"),
             ("mobilenet", "traditional"): ("fig3.10", "fig3.11", "fig3.12"),
             ("mobilenet", "augmix"): ("fig3.13", "fig3.14", "fig3.15"),
             ("wrn", "traditional"): ("fig3.16", "fig3.17", "fig3.18"),
             ("wrn", "augmix"): ("fig3.19", "fig3.20", "fig3.21")}

_MINI = {"densenet": "densenet10_mini", "wrn": "wrn10_1", "mobilenet": "mobilenetv2_mini",
         "vgg": "vgg_mini"}
_COMMON = dict(
    pretrain_lr=0.1, momentum=0.9, wd=5e-4, ft_lr=0.05, importance="me_prune", seed=0,
    augmix_roles=("densenet", "wrn", "mobilenet"), fig32_roles=("densenet", "wrn"),
    fig31_roles=("wrn", "densenet"), fig31_sparsity=0.8, rules=("direct", "inverse"),
    te_roles=("mobilenet", "wrn"), f322_ratio=0.553, f326_ratios=(0.2, 0.35, 0.45, 0.6, 0.8),
    executor="local",
)
PRUNING: dict[str, dict[str, Any]] = {
    "smoke": dict(
        _COMMON, dataset="digits", n_train=256, models=_MINI, batch_size=64,
        pretrain_epochs=2, f33_epochs=2, f33_metrics=("entropy", "norm"), f33_ratios=(0.85,),
        f33_aug_ratios=(0.85,), f33_augs=AUGS, grid_ratios=(0.5, 0.85),
        grid_metrics=("entropy", "norm", "spectral_norm"), te_metrics=("entropy",),
        te_ratios=(0.85,), vgg_ratios=(0.0, 0.9), vgg_epochs=2, f322_epochs=2,
        f326_ratios=(0.6,), f326_epochs=2, workers=1,
    ),
    "quick": dict(
        _COMMON, dataset="digits", n_train=None, models=_MINI, batch_size=64,
        pretrain_epochs=15, f33_epochs=2, f33_metrics=METRICS, f33_ratios=(0.3, 0.5, 0.7, 0.85),
        f33_aug_ratios=(0.5, 0.85), f33_augs=AUGS, grid_ratios=(0.3, 0.5, 0.7, 0.85),
        grid_metrics=METRICS,
        te_metrics=("entropy", "alpha", "norm", "spectral_norm"), te_ratios=(0.5, 0.85),
        vgg_ratios=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95), vgg_epochs=5,
        f322_epochs=8, f326_epochs=4, workers=2,
    ),
    "paper": dict(  # source silent on epochs / ratio grid / batch: our choices (digest A-22)
        _COMMON, dataset="cifar100", n_train=None, batch_size=128,
        models={"densenet": "densenet40_cifar", "wrn": "wrn28_10_cifar",
                "mobilenet": "mobilenetv2_cifar", "vgg": "vgg19_cifar"},
        pretrain_epochs=200, f33_epochs=40, f33_metrics=METRICS,
        f33_ratios=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
        f33_aug_ratios=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9), f33_augs=AUGS,
        grid_ratios=(0.1, 0.3, 0.5, 0.7, 0.9), grid_metrics=METRICS, te_metrics=METRICS,
        te_ratios=(0.3, 0.5, 0.7, 0.9),
        vgg_ratios=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95), vgg_epochs=40,
        f322_epochs=40, f326_epochs=40, workers=1,
    ),
}


def check_settings(s: Mapping[str, Any]) -> Mapping[str, Any]:
    """Raise ``ValueError`` for settings that would only fail after pretraining: unknown
    metrics, rules, roles or channel scores, and ratios outside the budget range."""
    for key in ("f33_metrics", "grid_metrics", "te_metrics"):
        if bad := sorted(set(s[key]) - set(METRICS)):
            raise ValueError(f"{key}: unknown metrics {bad}; choose from {METRICS}")
    if bad := sorted(set(s["rules"]) - set(pruning.RULES)):
        raise ValueError(f"rules: unknown {bad}; choose from {pruning.RULES}")
    if s["importance"] not in pruning.IMPORTANCE:
        raise ValueError(f"importance must be one of {pruning.IMPORTANCE}, got {s['importance']!r}")
    roles = ("augmix_roles", "fig32_roles", "fig31_roles", "te_roles")
    if bad := sorted({r for key in roles for r in s[key]} - set(s["models"])):
        raise ValueError(f"unknown model roles {bad}; choose from {sorted(s['models'])}")
    for key in ("f33_ratios", "f33_aug_ratios", "grid_ratios", "te_ratios", "f326_ratios"):
        if bad := [P for P in s[key] if not 0 < P <= pruning.K_MAX]:
            raise ValueError(f"{key}: ratios {bad} outside (0, {pruning.K_MAX}]")
    if bad := [r for r in (*s["vgg_ratios"], s["f322_ratio"]) if not 0 <= r < 1]:
        raise ValueError(f"vgg_ratios / f322_ratio {bad} outside [0, 1)")
    return s


def setting(aug: str, rule: str) -> int:
    """Table 3.1's setting number of ``aug`` (traditional | augmix) and ``rule``."""
    if aug not in SETTINGS or rule not in SETTINGS[aug]:
        raise ValueError(f"no setting for ({aug!r}, {rule!r}); table: {SETTINGS}")
    return SETTINGS[aug][rule]


def settings_table() -> pd.DataFrame:
    """Table 3.1 rendered from ``SETTINGS`` (rows augmentation, columns ratio ~ metric)."""
    names = {"traditional": "Traditional", "augmix": "AugMix"}
    cols = {"direct": "Directly Proportional", "inverse": "Inversely Proportional"}
    df = pd.DataFrame({cols[r]: {names[a]: SETTINGS[a][r] for a in SETTINGS} for r in cols})
    df.index.name = "Augmentation Scheme"
    return df


# ----------------------------------------------------------------------------- pretraining
def pretrain_config(s: Mapping[str, Any], role: str, aug: str = "traditional") -> RunConfig:
    """The initial training of ``role`` (crop + flip; then AugMix if ``aug == "augmix"``)."""
    if aug not in AUGS:
        raise ValueError(f"aug must be one of {AUGS}, got {aug!r}")
    return RunConfig(dataset=s["dataset"], n_train=s["n_train"], augment=True,
                     augmix=aug == "augmix", model=s["models"][role], optimizer="sgdm",
                     lr=s["pretrain_lr"], momentum=s["momentum"], wd=s["wd"],
                     batch_size=s["batch_size"], epochs=s["pretrain_epochs"], schedule="cosine",
                     seed=s["seed"])


def pretrain_unit(s: Mapping[str, Any], role: str, aug: str = "traditional") -> dict:
    """``{"run", "callbacks"}`` of a pretraining run: weights kept; alpha/entropy per epoch
    (KS x_min, digest A-1) for the fig 3.2 roles."""
    cb = {"weights": {}}
    if role in s["fig32_roles"]:
        # flatten, as `layer_table`: each conv one [c_out, c_in k k] matrix, rows = its channels
        cb["spectral"] = {"xmin": "ks", "conv": "flatten", "every": 1}
    return {"run": pretrain_config(s, role, aug).key(), "callbacks": cb}


def pretrain_pairs(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every pretrained (role, aug), AugMix (the slow ones) first."""
    return [(r, "augmix") for r in s["augmix_roles"]] + [(r, "traditional") for r in _MINI]


def pretrain_runs(s: Mapping[str, Any]) -> tuple[list[RunConfig], list[dict]]:
    """Configs and callbacks of every pretraining run, for one ``train_runs`` sweep."""
    units = [pretrain_unit(s, r, a) for r, a in pretrain_pairs(s)]
    return [RunConfig(**u["run"]) for u in units], [u["callbacks"] for u in units]


def pretrained_model(s: Mapping[str, Any], role: str, aug: str = "traditional") -> nn.Module:
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


def metric_tables(s: Mapping[str, Any]) -> dict[tuple[str, str], tuple[pd.DataFrame, dict]]:
    """`layer_table` of every pretrained (role, aug); needs the pretraining sweep done."""
    return {(r, a): layer_table(pretrained_model(s, r, a)) for r, a in pretrain_pairs(s)}


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
def finetune_spec(s: Mapping[str, Any], section: str, role: str, aug: str, table, metric: str,
                  P: float, rule: str, epochs: int, layer_lr: str = "none",
                  probe: bool = False) -> dict[str, Any]:
    """One prune-then-finetune run: its labels, ``RunConfig`` and callbacks.

    Finetuning always uses traditional augmentation (crop + flip; AugMix only in pretraining,
    a stated deviation) at lr0 ``ft_lr`` with a cosine schedule over ``epochs``; with
    ``layer_lr="eq2.13"`` the lrs are TempBalance's (refit every epoch). ``probe`` adds a
    `SpectralProbe` with TempBalance's alphas (median x_min, kernel slices) for figs 3.22-3.24.
    """
    ratios = ratios_for(table, metric, P, rule)
    methods = () if layer_lr == "none" else (TempBalance(layer_lr),)
    cfg = pretrain_config(s, role, aug).replace(augmix=False, lr=s["ft_lr"], epochs=int(epochs),
                                                methods=methods)
    cb = {"pruned_start": {"pretrained": pretrain_unit(s, role, aug), "ratios": ratios,
                           "importance": s["importance"]}}
    if probe:
        cb["spectral"] = {"xmin": "median", "conv": "slices", "every": 1}
    return dict(section=section, role=role, aug=aug, metric=metric,
                rule=rule if metric != UNIFORM else UNIFORM, P=float(P), layer_lr=layer_lr,
                epochs=int(epochs), cfg=cfg, callbacks=cb)


def _sweep(s, section, role, aug, tables, metrics, ratios, epochs, rules=None):
    out = []
    for P in ratios:
        out.append(finetune_spec(s, section, role, aug, tables[(role, aug)], UNIFORM, P,
                                 "direct", epochs))
        out += [finetune_spec(s, section, role, aug, tables[(role, aug)], m, P, r, epochs)
                for m in metrics for r in (rules or s["rules"])]
    return out


def finetune_plan(s: Mapping[str, Any], tables) -> dict[str, list[dict[str, Any]]]:
    """Every finetuning run, by section: fig3.3, T-001-e, vgg (figs 3.23-3.25), fig3.22, fig3.26.

    Args:
        s: resolved settings. tables: `metric_tables` (or any ``{(role, aug): layer_table}``).
    """
    ratios = {"traditional": s["f33_ratios"], "augmix": s["f33_aug_ratios"]}
    plan = {"fig3.3": [x for aug in s["f33_augs"] for x in _sweep(
        s, "fig3.3", "densenet", aug, tables, s["f33_metrics"], ratios[aug], s["f33_epochs"])]}
    plan["T-001-e"] = [x for role in ("densenet", *s["te_roles"]) for x in _sweep(
        s, "T-001-e", role, "traditional", tables, s["te_metrics"], s["te_ratios"],
        s["f33_epochs"])]
    vgg = tables[("vgg", "traditional")]
    plan["vgg"] = [finetune_spec(s, "vgg", "vgg", "traditional", vgg, UNIFORM, P, "direct",
                                 s["vgg_epochs"], lr, probe=True)
                   for P in s["vgg_ratios"] for lr in ("none", "eq2.13")]
    plan["fig3.22"] = [finetune_spec(s, "fig3.22", "vgg", "traditional", vgg, UNIFORM,
                                     s["f322_ratio"], "direct", s["f322_epochs"], lr, probe=True)
                       for lr in ("none", "eq2.13")]
    dn = tables[("densenet", "traditional")]
    plan["fig3.26"] = [finetune_spec(s, "fig3.26", "densenet", "traditional", dn, m, P, "direct",
                                     s["f326_epochs"], lr)
                       for P in s["f326_ratios"] for m in (UNIFORM, "alpha")
                       for lr in ("none", "eq2.13")]
    return plan


def all_finetunes(plan: Mapping[str, list[dict]]) -> tuple[list[RunConfig], list[dict]]:
    """The union of the plan's runs, longest first (duplicates are trained once)."""
    specs = sorted((x for xs in plan.values() for x in xs),
                   key=lambda x: -x["epochs"] * (4 if x["role"] == "vgg" else 1))
    return [x["cfg"] for x in specs], [x["callbacks"] for x in specs]


# ----------------------------------------------------------------------------- summaries
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
