"""Chapter 06 (orthogonal SGDM, seed 004 ch. 5): profile table and the runs of every item.

``paper`` is the source's setting (digest sec. 3: "5.4.1-untuned" = CIFAR-10 40k/10k, batch
1024, lr 1e-2, momentum 0.9, wd 5e-4, 100 epochs, no schedule, 5 runs; the table 5.1 sets with
MultiStep x0.1 at 100/150 of 200 epochs). ``quick`` is the digest's section-6 reduction on
Fashion-MNIST (10k/2k/2k); ``smoke`` the same code on synthetic data in seconds. The builders
below turn resolved settings into ``RunConfig`` lists; the notebook only calls them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from lalr_core.core.config import RunConfig
from lalr_core.chapters.ch06_orthogonal_sgdm.unsupervised import BarlowTwinsTask, PoissonVAETask
from lalr_core.methods.orthogonal import GradTransform

# Optimiser variants: name -> RunConfig changes on top of the base optimiser.
VARIANTS: dict[str, dict[str, Any]] = {
    "sgdm": {},
    "orth_sgdm": dict(methods=(GradTransform("orth"),)),
    "ns_orth_sgdm": dict(methods=(GradTransform("orth", method="newton_schulz"),)),
    "n_sgdm": dict(methods=(GradTransform("norm"),)),
    "cn_sgdm": dict(methods=(GradTransform("cnorm"),)),
    "conv_orth_sgdm": dict(methods=(GradTransform("orth", layers="conv"),)),
}
TABLE51_BASES = ("sgdm", "adam", "sgdm_clip", "adam_clip")  # + orth_ each; adamw at paper

_UNTUNED = dict(lr=1e-2, momentum=0.9, wd=5e-4)  # sec. 5.4.1.1 / run.sh (digest G20)
_T51 = dict(  # table 5.1 caption; quick keeps the source's lr/wd except Adam's lr (digest sec. 6)
    sgdm=dict(optimizer="sgdm", lr=0.05, momentum=0.85, wd=1e-2),
    sgdm_clip=dict(optimizer="sgdm", lr=0.05, momentum=0.85, wd=1e-4, clip_grad_norm=1.0),
    adam=dict(optimizer="adam", lr=0.01, betas=(0.9, 0.99), wd=1e-4),
    adam_clip=dict(optimizer="adam", lr=0.01, betas=(0.9, 0.99), wd=1e-4, clip_grad_norm=1.0),
    adamw_clip=dict(optimizer="adamw", lr=1e-5, betas=(0.9, 0.99), wd=1e-3, clip_grad_norm=1.0,
                    batch_size=128),
)

_COMMON_SMALL = dict(
    suite_models=("basic_cnn", "resnet8", "mlp"), widths={"resnet8": 0.5},
    t51_model="basic_cnn", t51_adamw=False,
    t55_models=("basic_cnn", "resnet8"), t56_models=("basic_cnn", "resnet8"),
    t54_model="basic_cnn", t54_lrs=(1e-1, 1e-2, 1e-3), t54_moms=(0.9, 0.0),
    rep_model="basic_cnn", rep_modules=("bn1", "bn2", "bn3"),
    tdp_model="resnet8", tdp_layer="layer2.0.conv2",
    cos_model="basic_cnn", cos_layers=("conv2", "conv3"), cos_lrs=(1.0, 0.01),
    sym_models=("basic_cnn", "basic_cnn_skip"), sym_layer="conv2",
    f514_model="basic_cnn", f514_batches=(4, 32, 256),
    f57_model="basic_cnn",
    source_analogue={"resnet8": "resnet20"},  # reduced model -> the source model it stands for
)
# Figs 5.7-5.9 at every profile: the source's ImageNet ResNet-34 run (sec. 5.4.1.1), the
# reduced Barlow Twins (digest sec. 6: LARS trust 1e-3, momentum 0.9, lr 0.2, wd 1.5e-6,
# lambda 5e-3, views = crop pad 2 + noise 0.1, projector 256-256) and the P-VAE (Adam 1e-3,
# batch 128).
_UNSUPERVISED = dict(
    f57_imagenet=dict(model="resnet34", lr=1e-2, momentum=0.9, wd=5e-4, batch_size=1024,
                      epochs=100),
    bt_lr=0.2, bt_momentum=0.9, bt_wd=1.5e-6, bt_eta=1e-3, bt_lambd=5e-3, bt_noise=0.1,
    bt_projector=(256, 256), vae_batch=128, vae_lr=1e-3,
)

ORTHOGONAL: dict[str, dict[str, Any]] = {
    "smoke": dict(
        _COMMON_SMALL, dataset="fashion_mnist", synthetic=True, n_train=256, n_val=64,
        n_test=64, augment=False, batch_size=64, epochs=2, seeds=1, ns_seeds=1, ablation_seeds=1,
        t51_epochs=2, t51_milestones=(1,), t51_seeds=1, t51_adam_lr=1e-3, t51_sgdm_wd=1e-3,
        thresholds=(20, 30, 40, 50, 60), t54_lrs=(1e-1, 1e-2), t54_moms=(0.9,),
        t54_epochs=1, t54_seeds=1, cos_epochs=1, cos_every=2, rep_every=2, sym_epochs=1,
        sym_every=1, f514_batches=(4, 32), f514_n_train=64, f514_epochs=1, f514_seeds=1,
        f57_n_train=None, f57_n_val=64, f57_batch=64, f57_eval_every=2,
        bt_steps=6, bt_batch=64, vae_steps=30, vae_eval_every=10, unsup_seeds=1,
        **_UNSUPERVISED, workers=1, executor="local",
    ),
    "quick": dict(
        _COMMON_SMALL, dataset="fashion_mnist", synthetic=False, n_train=10_000, n_val=2_000,
        n_test=2_000, augment=False, batch_size=256, epochs=8, seeds=3, ns_seeds=1, ablation_seeds=2,
        t51_epochs=10, t51_milestones=(6, 8), t51_seeds=2, t51_adam_lr=1e-3, t51_sgdm_wd=1e-3,
        thresholds=(60, 75, 80, 85, 88),
        t54_epochs=3, t54_seeds=1, cos_epochs=3, cos_every=10, rep_every=10, sym_epochs=3,
        sym_every=1, f514_n_train=4_000, f514_epochs=1, f514_seeds=3,
        f57_n_train=None, f57_n_val=5_000, f57_batch=1024, f57_eval_every=5,
        bt_steps=150, bt_batch=256, vae_steps=1500, vae_eval_every=100,
        unsup_seeds=3, **_UNSUPERVISED, workers=2, executor="local",
    ),
    "paper": dict(
        dataset="cifar10", synthetic=False, n_train=40_000, n_val=10_000, n_test=None,
        augment=True, batch_size=1024, epochs=100, seeds=5, ns_seeds=5, ablation_seeds=5,
        suite_models=("basic_cnn", "resnet20", "resnet44", "resnet18_tv", "resnet34_tv",
                      "resnet50_tv", "densenet121_tv", "densenet161_tv", "resnext50_32x4d_tv",
                      "wide_resnet50_2_tv"), widths={},
        t51_model="resnet20", t51_adamw=True, t51_epochs=200, t51_milestones=(100, 150),
        t51_seeds=5, t51_adam_lr=0.01, t51_sgdm_wd=1e-2, thresholds=(50, 75, 80, 85, 90),
        t55_models=("basic_cnn", "resnet18_tv", "resnet50_tv", "resnet44", "densenet121_tv"),
        t56_models=("basic_cnn", "resnet34_tv", "resnet20"),
        t54_model="resnet20", t54_lrs=(1e-1, 1e-2, 1e-3, 1e-4), t54_moms=(0.95, 0.9, 0.8, 0.5, 0.0),
        t54_epochs=100, t54_seeds=5,
        rep_model="basic_cnn", rep_modules=("bn1", "bn2", "bn3"), rep_every=10,
        tdp_model="resnet50_tv", tdp_layer="layer2.1.conv2",
        cos_model="resnet34_tv", cos_layers=("layer1.2.conv2", "layer4.1.conv1"),
        cos_lrs=(1.0, 0.01), cos_epochs=100, cos_every=10,
        sym_models=("basic_cnn", "basic_cnn_skip"), sym_layer="conv2", sym_epochs=100,
        sym_every=5,
        f514_model="resnet20", f514_batches=(4, 32, 1024), f514_n_train=40_000, f514_epochs=100,
        f514_seeds=1,
        f57_model="resnet34_tv", f57_n_train=None, f57_n_val=5_000, f57_batch=1024,
        f57_eval_every=0, source_analogue={},
        bt_steps=150, bt_batch=256, vae_steps=200_000, vae_eval_every=2_000,
        unsup_seeds=3, **_UNSUPERVISED, workers=1, executor="local",  # "ray" on a cluster (pip install .[distributed])
    ),
}


# ----------------------------------------------------------------------------- builders
def _data(s: Mapping[str, Any]) -> dict[str, Any]:
    return dict(dataset=s["dataset"], synthetic=s["synthetic"], n_train=s["n_train"],
                n_val=s["n_val"], n_test=s["n_test"], augment=s["augment"])


def untuned(s: Mapping[str, Any], model: str, variant: str = "sgdm", seed: int = 0,
            **changes) -> RunConfig:
    """A sec. 5.4.1.1 run ("5.4.1-untuned"): SGDM lr 1e-2, momentum 0.9, wd 5e-4, no schedule.

    Args:
        s: resolved chapter settings. model: a model name. variant: a key of ``VARIANTS``.
        seed: the run's seed. changes: any other ``RunConfig`` field.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {sorted(VARIANTS)}")
    base = dict(_data(s), model=model, width=s["widths"].get(model, 1.0), optimizer="sgdm",
                batch_size=s["batch_size"], epochs=s["epochs"], seed=seed, **_UNTUNED)
    return RunConfig(**{**base, **VARIANTS[variant], **changes})


def suite_configs(s: Mapping[str, Any], variants=("sgdm", "orth_sgdm"), models=None,
                  seeds=None) -> list[RunConfig]:
    """Table 5.3 / figs 5.3-5.6, G.1 (and tables 5.5, 5.6 with other variants/models)."""
    models = s["suite_models"] if models is None else models
    return [untuned(s, m, v, seed) for m in models for v in variants
            for seed in range(s["seeds"] if seeds is None else seeds)]


def table51_configs(s: Mapping[str, Any]) -> dict[str, list[RunConfig]]:
    """Table 5.1/5.2: the eight (ten at paper) optimisers, name -> one config per seed."""
    bases = TABLE51_BASES + (("adamw_clip",) if s["t51_adamw"] else ())
    out = {}
    for base in bases:
        hyper = dict(_T51[base])
        if base.startswith("adam") and base != "adamw_clip":
            hyper["lr"] = s["t51_adam_lr"]
        if base == "sgdm":
            hyper["wd"] = s["t51_sgdm_wd"]
        model = "resnet18_tv" if base == "adamw_clip" else s["t51_model"]
        if base == "adamw_clip" and s["synthetic"]:
            model = s["t51_model"]
        common = dict(_data(s), model=model, width=s["widths"].get(model, 1.0),
                      batch_size=hyper.pop("batch_size", s["batch_size"]),
                      epochs=s["t51_epochs"], schedule="multistep",
                      milestones=tuple(s["t51_milestones"]), **hyper)
        for prefix, extra in (("", {}), ("orth_", VARIANTS["orth_sgdm"])):
            out[prefix + base] = [RunConfig(**common, **extra, seed=k) for k in range(s["t51_seeds"])]
    return out


def table54_configs(s: Mapping[str, Any]) -> dict[tuple, list[RunConfig]]:
    """Table 5.4 grid: (lr, momentum, base, orth) -> one config per seed. Adam: beta2 0.999,
    "Mom" = beta1."""
    out = {}
    for lr in s["t54_lrs"]:
        for mom in s["t54_moms"]:
            for base in ("sgdm", "adam"):
                opt = dict(optimizer="sgdm", momentum=mom) if base == "sgdm" else \
                    dict(optimizer="adam", betas=(mom, 0.999))
                for orth in (False, True):
                    out[(lr, mom, base, orth)] = [
                        untuned(s, s["t54_model"], "orth_sgdm" if orth else "sgdm", seed=k,
                                lr=lr, epochs=s["t54_epochs"], **opt)
                        for k in range(s["t54_seeds"])]
    return out


def probe_callbacks(s: Mapping[str, Any], cfg: RunConfig) -> dict[str, dict]:
    """Probes attached to the seed-0 SGDM / Orth-SGDM suite runs (figs 5.12, 5.13), so those
    figures come from the same runs as table 5.3. Cache keys include the callbacks, so every
    sweep goes through `with_probes`, which applies this one rule."""
    if cfg not in (untuned(s, cfg.model, "sgdm"), untuned(s, cfg.model, "orth_sgdm")):
        return {}
    callbacks = {}
    if cfg.model == s["rep_model"]:
        callbacks["representations"] = {"modules": list(s["rep_modules"]), "every": s["rep_every"]}
    if cfg.model == s["tdp_model"]:
        callbacks["zero_grad"] = {"layer": s["tdp_layer"]}
    return callbacks


def with_probes(s: Mapping[str, Any], configs: list[RunConfig]) -> list[dict[str, dict]]:
    """One callbacks spec per config (for ``train_runs(configs, callbacks=...)``)."""
    return [probe_callbacks(s, cfg) for cfg in configs]


def ablation_configs(s: Mapping[str, Any], variants, models) -> list[RunConfig]:
    """Tables 5.5/5.6: ``ablation_seeds`` seeds per (model, variant). SGDM and Orth-SGDM are
    the suite's runs (seeds 0, 1, ...), so they are shared through the cache."""
    return suite_configs(s, variants, models=models, seeds=s["ablation_seeds"])


def fig57_configs(s: Mapping[str, Any]) -> list[RunConfig]:
    """Fig 5.7's reduced analogue: the whole Fashion-MNIST train split, one epoch, validation
    every ``f57_eval_every`` steps (SGDM, Orth-SGDM). Also the paper profile's stand-in when
    ImageNet is absent."""
    model = "basic_cnn" if s["dataset"] != "fashion_mnist" else s["f57_model"]
    return [untuned(s, model, v, dataset="fashion_mnist", n_train=s["f57_n_train"],
                    n_val=s["f57_n_val"], n_test=s["f57_n_val"], augment=False, width=1.0,
                    batch_size=s["f57_batch"], epochs=1, eval_every_steps=s["f57_eval_every"] or 5)
            for v in ("sgdm", "orth_sgdm")]


def section_runs(s: Mapping[str, Any]) -> dict[str, tuple[list[RunConfig], list[dict]]]:
    """Every training run of the notebook: section -> (configs, one callbacks spec each)."""
    t51 = [c for cs in table51_configs(s).values() for c in cs]
    t54 = [c for cs in table54_configs(s).values() for c in cs]
    suite = suite_configs(s, ("sgdm", "orth_sgdm")) + \
        suite_configs(s, ("ns_orth_sgdm",), seeds=s["ns_seeds"])
    cos = [untuned(s, s["cos_model"], v, lr=lr, epochs=s["cos_epochs"])
           for lr in s["cos_lrs"] for v in ("sgdm", "orth_sgdm")]
    f514 = [untuned(s, s["f514_model"], v, seed=k, batch_size=b, n_train=s["f514_n_train"],
                    epochs=s["f514_epochs"])
            for b in s["f514_batches"] for v in ("sgdm", "orth_sgdm") for k in range(s["f514_seeds"])]
    sym = [untuned(s, m, "sgdm", epochs=s["sym_epochs"]) for m in s["sym_models"]]
    sections = {
        "suite": suite, "table5.1": t51, "table5.4": t54, "fig5.7": fig57_configs(s),
        "table5.5": ablation_configs(s, ("sgdm", "n_sgdm", "cn_sgdm", "orth_sgdm"), s["t55_models"]),
        "table5.6": ablation_configs(s, ("sgdm", "orth_sgdm", "conv_orth_sgdm"), s["t56_models"]),
        "fig5.14": f514,
    }
    out = {k: (v, with_probes(s, v)) for k, v in sections.items()}
    out["fig5.10"] = (cos, [{"filter_cos": {"layers": list(s["cos_layers"]), "every": s["cos_every"]}}] * len(cos))
    out["figI"] = (sym, [{"symmetry": {"layer": s["sym_layer"], "every": s["sym_every"]}}] * len(sym))
    return out


def barlow_twins_configs(s: Mapping[str, Any]) -> list[RunConfig]:
    """Fig 5.8: LARS then Orth-LARS (trunk convs only), ``unsup_seeds`` seeds each."""
    task = BarlowTwinsTask(steps=s["bt_steps"], lambd=s["bt_lambd"], noise=s["bt_noise"],
                           projector=tuple(s["bt_projector"]))
    orth = (GradTransform("orth", layers="conv", prefix="trunk."),)
    return [RunConfig(**_data(s) | dict(augment=False), model="basic_cnn", optimizer="lars",
                      lr=s["bt_lr"], momentum=s["bt_momentum"], wd=s["bt_wd"],
                      optimizer_params=(("eta", s["bt_eta"]),), batch_size=s["bt_batch"],
                      epochs=1, task=task, methods=orth if o else (), seed=k)
            for o in (False, True) for k in range(s["unsup_seeds"])]


def vae_configs(s: Mapping[str, Any]) -> list[RunConfig]:
    """Fig 5.9: Adam then Orth-Adam (encoder only), ``unsup_seeds`` seeds each; the held-out
    MSE every ``vae_eval_every`` steps is the result's ``evals.val_loss``."""
    orth = (GradTransform("orth", layers="all", prefix="encoder."),)
    return [RunConfig(**_data(s) | dict(augment=False), model="mlp", optimizer="adam",
                      lr=s["vae_lr"], batch_size=s["vae_batch"], epochs=1,
                      task=PoissonVAETask(steps=s["vae_steps"]),
                      eval_every_steps=s["vae_eval_every"], methods=orth if o else (), seed=k)
            for o in (False, True) for k in range(s["unsup_seeds"])]


def is_orthogonalised(cfg: RunConfig) -> bool:
    return cfg.method("grad_transform") is not None


_COST = {"resnet": 4.0, "densenet": 8.0, "basic_cnn": 1.0, "mlp": 0.1}  # rough relative step cost


def run_cost(cfg: RunConfig) -> float:
    """A rough relative cost of a run, to start the longest first (fewer idle workers)."""
    unit = next((v for k, v in _COST.items() if cfg.model.startswith(k)), 4.0)
    n = cfg.n_train or 50_000
    gt = cfg.method("grad_transform")
    return unit * cfg.epochs * n * (1.5 if gt is not None and gt.transform == "orth" else 1.0)


def all_runs(s: Mapping[str, Any]) -> tuple[list[RunConfig], list[dict]]:
    """The union of `section_runs`, longest first (duplicates are trained once by the sweep)."""
    pairs = [p for cfgs, cbs in section_runs(s).values() for p in zip(cfgs, cbs)]
    pairs.sort(key=lambda p: -run_cost(p[0]))
    return [p[0] for p in pairs], [p[1] for p in pairs]


# ----------------------------------------------------------------------------- summaries
def variant_of(cfg: RunConfig) -> str:
    """The ``VARIANTS`` name of an SGDM-family config (``"sgdm"``, ``"orth_sgdm"``, ...)."""
    for name, changes in VARIANTS.items():
        if cfg.methods == changes.get("methods", ()):
            return name
    gt = cfg.method("grad_transform")
    return "none/svd/all" if gt is None else f"{gt.transform}/{gt.method}/{gt.layers}"


def run_table(configs: list[RunConfig], results: list[dict], **labels) -> pd.DataFrame:
    """One row per run: model, variant, seed, final test/val metrics, diverged, wall time.

    A diverged run's accuracies are recorded as 0 (digest G22: the "0.00 +- 0.00" cells).
    ``labels`` are extra constant columns.
    """
    rows = []
    for cfg, res in zip(configs, results, strict=True):
        f = res["final"]
        row = {"model": cfg.model, "variant": variant_of(cfg), "optimizer": cfg.optimizer,
               "lr": cfg.lr, "seed": cfg.seed, "batch_size": cfg.batch_size,
               "diverged": bool(res["diverged"]), "wall_time_s": res["wall_time_s"], **labels}
        for k in ("test_loss", "test_acc", "val_loss", "val_acc", "train_loss", "train_acc"):
            row[k] = f.get(k, np.nan)
        if row["diverged"]:
            row.update(test_acc=0.0, val_acc=0.0, test_loss=np.nan, val_loss=np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def mean_se(df: pd.DataFrame, by: list[str], cols=("test_loss", "test_acc")) -> pd.DataFrame:
    """Mean and standard error (sample std / sqrt(n), digest G21) of ``cols`` per group;
    accuracies in percent."""
    out = []
    for key, g in df.groupby(by, sort=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        for c in cols:
            x = g[c].to_numpy(float) * (100 if c.endswith("acc") else 1)
            x = x[np.isfinite(x)]
            row[f"{c}_mean"] = x.mean() if len(x) else np.nan
            row[f"{c}_se"] = x.std(ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0
        row["runs"], row["diverged"] = len(g), int(g["diverged"].sum())
        out.append(row)
    return pd.DataFrame(out)


def epochs_to_reach(history: pd.DataFrame, threshold_pct: float) -> float:
    """First epoch (1-indexed) whose validation accuracy is >= ``threshold_pct`` percent, or
    NaN if never (table 5.2's "--")."""
    hit = history.loc[history["val_acc"] * 100 >= threshold_pct, "epoch"]
    return float(hit.iloc[0]) if len(hit) else np.nan


def running_mean(x, n: int) -> np.ndarray:
    """Trailing mean over the last ``n`` values (fewer at the start), fig 5.13's N = 50."""
    x = np.asarray(x, dtype=float)
    c = np.concatenate([[0.0], np.cumsum(x)])
    idx = np.arange(1, len(x) + 1)
    lo = np.maximum(idx - n, 0)
    return (c[idx] - c[lo]) / (idx - lo)


# ----------------------------------------------------------------------------- source numbers
def read_source(table: str, root=None) -> pd.DataFrame:
    """The source's table ``"5.1"`` ... ``"5.6"`` from ``data/reference/ch06_table<N>.csv``,
    with ``opt`` renamed ``variant`` and table 5.6's long form pivoted to ``<metric>_mean/_se``."""
    from lalr_core.core.provenance import repo_root

    path = (root or repo_root() / "data" / "reference") / f"ch06_table{table}.csv"
    if not path.is_file():
        raise ValueError(f"no source table {table!r} at {path}")
    df = pd.read_csv(path).rename(columns={"opt": "variant"})
    if table == "5.6":
        df = df.pivot_table(index=["model", "variant"], columns="metric", values=["mean", "se"],
                            sort=False)
        df.columns = [f"{metric}_{stat}" for stat, metric in df.columns]
        df = df.reset_index()
    return df


def beside_source(ours: pd.DataFrame, source: pd.DataFrame, on: list[str],
                  analogue: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Our rows with the source's numbers for the same keys as ``source_*`` columns.

    ``analogue`` maps a reduced model to the source model it stands for (quick profile:
    ResNet-8-FM for ResNet-20); models without a counterpart get empty source cells.
    """
    left = ours.copy()
    if "model" in on:
        left["source_model"] = left["model"].map(lambda m: (analogue or {}).get(m, m))
    keys = ["source_model" if k == "model" else k for k in on]
    right = source.rename(columns={"model": "source_model"}) if "model" in on else source
    right = right.rename(columns={c: f"source_{c}" for c in right.columns if c not in keys})
    return left.merge(right, on=keys, how="left")
