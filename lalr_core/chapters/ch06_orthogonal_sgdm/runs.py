"""Chapter 06's runs: the builders that turn `Settings` into ``RunConfig`` lists, section by
section, and a run's rough cost; the notebook only calls them."""

from __future__ import annotations

from typing import Any

from lalr_core.chapters.ch06_orthogonal_sgdm.settings import Settings, check_null_settings
from lalr_core.chapters.ch06_orthogonal_sgdm.unsupervised import BarlowTwinsTask, PoissonVAETask
from lalr_core.core.runs.chapter import Sections
from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.orthogonal.transform import GradTransform

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

# Table 5.1 caption; quick keeps the source's lr/wd except Adam's lr (``t51_adam_lr``) and
# SGDM's wd (``t51_sgdm_wd``) (our reduction).
_T51 = dict(
    sgdm=dict(optimizer="sgdm", lr=0.05, momentum=0.85, wd=1e-2),
    sgdm_clip=dict(optimizer="sgdm", lr=0.05, momentum=0.85, wd=1e-4, clip_grad_norm=1.0),
    adam=dict(optimizer="adam", lr=0.01, betas=(0.9, 0.99), wd=1e-4),
    adam_clip=dict(optimizer="adam", lr=0.01, betas=(0.9, 0.99), wd=1e-4, clip_grad_norm=1.0),
    adamw_clip=dict(optimizer="adamw", lr=1e-5, betas=(0.9, 0.99), wd=1e-3, clip_grad_norm=1.0,
                    batch_size=128),
)


def _data(s: Settings) -> dict[str, Any]:
    return dict(dataset=s.dataset, synthetic=s.synthetic, n_train=s.n_train, n_val=s.n_val,
                n_test=s.n_test, augment=s.augment)


def untuned(s: Settings, model: str, variant: str = "sgdm", seed: int = 0,
            **changes) -> RunConfig:
    """A sec. 5.4.1.1 run ("5.4.1-untuned"): SGDM at ``s.lr``, ``s.momentum``, ``s.wd`` (the
    source's 1e-2, 0.9, 5e-4), no schedule.

    Args:
        s: the chapter's settings. model: a model name. variant: a key of ``VARIANTS``.
        seed: the run's seed. changes: any other ``RunConfig`` field.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {sorted(VARIANTS)}")
    base = dict(_data(s), model=model, width=s.widths.get(model, 1.0), optimizer="sgdm",
                batch_size=s.batch_size, epochs=s.epochs, seed=seed, lr=s.lr,
                momentum=s.momentum, wd=s.wd)
    return RunConfig(**{**base, **VARIANTS[variant], **changes})


def suite_configs(s: Settings, variants=("sgdm", "orth_sgdm"), models=None,
                  seeds=None) -> list[RunConfig]:
    """Table 5.3 / figs 5.3-5.6, G.1 (and tables 5.5, 5.6 with other variants/models)."""
    models = s.suite_models if models is None else models
    return [untuned(s, m, v, seed) for m in models for v in variants
            for seed in range(s.seeds if seeds is None else seeds)]


def table51_configs(s: Settings) -> dict[str, list[RunConfig]]:
    """Table 5.1/5.2: the eight (ten at paper) optimisers, name -> one config per seed."""
    bases = TABLE51_BASES + (("adamw_clip",) if s.t51_adamw else ())
    out = {}
    for base in bases:
        hyper = dict(_T51[base])
        if base.startswith("adam") and base != "adamw_clip":
            hyper["lr"] = s.t51_adam_lr
        if base == "sgdm":
            hyper["wd"] = s.t51_sgdm_wd
        model = "resnet18_tv" if base == "adamw_clip" else s.t51_model
        if base == "adamw_clip" and s.synthetic:
            model = s.t51_model
        common = dict(_data(s), model=model, width=s.widths.get(model, 1.0),
                      batch_size=hyper.pop("batch_size", s.batch_size),
                      epochs=s.t51_epochs, schedule="multistep",
                      milestones=tuple(s.t51_milestones), **hyper)
        for prefix, extra in (("", {}), ("orth_", VARIANTS["orth_sgdm"])):
            out[prefix + base] = [RunConfig(**common, **extra, seed=k)
                                  for k in range(s.t51_seeds)]
    return out


def table54_configs(s: Settings) -> dict[tuple, list[RunConfig]]:
    """Table 5.4 grid: (lr, momentum, base, orth) -> one config per seed. Adam: beta2 0.999,
    "Mom" = beta1."""
    out = {}
    for lr in s.t54_lrs:
        for mom in s.t54_moms:
            for base in ("sgdm", "adam"):
                opt = dict(optimizer="sgdm", momentum=mom) if base == "sgdm" else \
                    dict(optimizer="adam", betas=(mom, 0.999))
                for orth in (False, True):
                    out[(lr, mom, base, orth)] = [
                        untuned(s, s.t54_model, "orth_sgdm" if orth else "sgdm", seed=k,
                                lr=lr, epochs=s.t54_epochs, **opt)
                        for k in range(s.t54_seeds)]
    return out


def probe_callbacks(s: Settings, cfg: RunConfig) -> dict[str, dict]:
    """Probes attached to the SGDM / Orth-SGDM suite runs of every seed (figs 5.12, 5.13), so
    those figures come from the same runs as table 5.3 and their checks pair the seeds (and to
    fig 5.13's runs of ``tdp_exact_model``, `tdp_exact_configs`). Cache
    keys include the callbacks, so every sweep goes through `with_probes`, which applies this
    one rule."""
    if cfg not in (untuned(s, cfg.model, "sgdm", cfg.seed),
                   untuned(s, cfg.model, "orth_sgdm", cfg.seed)):
        return {}
    callbacks = {}
    if cfg.model == s.rep_model:
        callbacks["representations"] = {"modules": list(s.rep_modules), "every": s.rep_every}
    if cfg.model == s.tdp_model:
        callbacks["zero_grad"] = {"layer": s.tdp_layer}
    elif cfg.model == s.tdp_exact_model:
        callbacks["zero_grad"] = {"layer": s.tdp_exact_layer}
    return callbacks


def tdp_exact_configs(s: Settings) -> list[RunConfig]:
    """Fig 5.13's exact-zero runs: SGDM and Orth-SGDM on ``tdp_exact_model``, ``seeds`` seeds
    each (the suite's own runs when the model is in the suite)."""
    return suite_configs(s, ("sgdm", "orth_sgdm"), models=(s.tdp_exact_model,))


def with_probes(s: Settings, configs: list[RunConfig]) -> list[dict[str, dict]]:
    """One callbacks spec per config (for ``train_runs(configs, callbacks=...)``)."""
    return [probe_callbacks(s, cfg) for cfg in configs]


def ablation_configs(s: Settings, variants, models) -> list[RunConfig]:
    """Tables 5.5/5.6: ``ablation_seeds`` seeds per (model, variant). SGDM and Orth-SGDM are
    the suite's runs (seeds 0, 1, ...), so they are shared through the cache."""
    return suite_configs(s, variants, models=models, seeds=s.ablation_seeds)


def fig57_configs(s: Settings) -> list[RunConfig]:
    """Fig 5.7's reduced analogue: the whole Fashion-MNIST train split, one epoch, validation
    every ``f57_eval_every`` steps (SGDM, Orth-SGDM). Also the paper profile's stand-in when
    ImageNet is absent."""
    model = "basic_cnn" if s.dataset != "fashion_mnist" else s.f57_model
    return [untuned(s, model, v, dataset="fashion_mnist", n_train=s.f57_n_train,
                    n_val=s.f57_n_val, n_test=s.f57_n_val, augment=False, width=1.0,
                    batch_size=s.f57_batch, epochs=1, eval_every_steps=s.f57_eval_every or 5)
            for v in ("sgdm", "orth_sgdm")]


def section_runs(s: Settings) -> Sections:
    """Every training run of the notebook: section -> (configs, one callbacks spec each)."""
    t51 = [c for cs in table51_configs(s).values() for c in cs]
    t54 = [c for cs in table54_configs(s).values() for c in cs]
    suite = suite_configs(s, ("sgdm", "orth_sgdm")) + \
        suite_configs(s, ("ns_orth_sgdm",), seeds=s.ns_seeds)
    cos = [untuned(s, s.cos_model, v, seed=k, lr=lr, epochs=s.cos_epochs)
           for lr in s.cos_lrs for v in ("sgdm", "orth_sgdm") for k in range(s.cos_seeds)]
    f514 = [untuned(s, s.f514_model, v, seed=k, batch_size=b, n_train=s.f514_n_train,
                    epochs=s.f514_epochs)
            for b in s.f514_batches for v in ("sgdm", "orth_sgdm") for k in range(s.f514_seeds)]
    sym = [untuned(s, m, "sgdm", seed=k, epochs=s.sym_epochs)
           for m in s.sym_models for k in range(s.sym_seeds)]
    sections = {
        "suite": suite, "table5.1": t51, "table5.4": t54, "fig5.7": fig57_configs(s),
        "table5.5": ablation_configs(s, ("sgdm", "n_sgdm", "cn_sgdm", "orth_sgdm"),
                                     s.t55_models),
        "table5.6": ablation_configs(s, ("sgdm", "orth_sgdm", "conv_orth_sgdm"), s.t56_models),
        "fig5.14": f514,
        "fig5.13": tdp_exact_configs(s),
    }
    out = {k: (v, with_probes(s, v)) for k, v in sections.items()}
    out["fig5.10"] = (cos, [{"filter_cos": {"layers": list(s.cos_layers),
                                            "every": s.cos_every}}] * len(cos))
    out["figI"] = (sym, [{"symmetry": {"layer": s.sym_layer, "every": s.sym_every,
                                       "skip": s.sym_skip}}] * len(sym))
    out["classifier_null"] = null_configs(s)
    return out


def null_configs(s: Settings) -> tuple[list[RunConfig], list[dict]]:
    """Per model of ``s.null_seeds`` and seed: Orth-SGDM as the source (``complete``; the
    suite's runs, shared through the cache with the same probes) and with the null direction
    dropped; plus Newton-Schulz where the suite trains it (seeds below ``ns_seeds``)."""
    check_null_settings(s)
    drop = (GradTransform("orth", null="drop"),)
    cfgs = []
    for model, n in s.null_seeds.items():
        for seed in range(n):
            cfgs += [untuned(s, model, "orth_sgdm", seed),
                     untuned(s, model, seed=seed, methods=drop)]
            if model in s.suite_models and seed < s.ns_seeds:
                cfgs.append(untuned(s, model, "ns_orth_sgdm", seed))
    return cfgs, with_probes(s, cfgs)


def barlow_twins_configs(s: Settings) -> list[RunConfig]:
    """Fig 5.8: LARS then Orth-LARS (trunk convs only), ``unsup_seeds`` seeds each."""
    task = BarlowTwinsTask(steps=s.bt_steps, lambd=s.bt_lambd, noise=s.bt_noise,
                           projector=tuple(s.bt_projector))
    orth = (GradTransform("orth", layers="conv", prefix="trunk."),)
    return [RunConfig(**_data(s) | dict(augment=False), model="basic_cnn", optimizer="lars",
                      lr=s.bt_lr, momentum=s.bt_momentum, wd=s.bt_wd,
                      optimizer_params=(("eta", s.bt_eta),), batch_size=s.bt_batch,
                      epochs=1, task=task, methods=orth if o else (), seed=k)
            for o in (False, True) for k in range(s.unsup_seeds)]


def vae_configs(s: Settings) -> list[RunConfig]:
    """Fig 5.9: Adam then Orth-Adam (encoder only), ``unsup_seeds`` seeds each; the held-out
    MSE every ``vae_eval_every`` steps is the result's ``evals.val_loss``."""
    orth = (GradTransform("orth", layers="all", prefix="encoder."),)
    return [RunConfig(**_data(s) | dict(augment=False), model="mlp", optimizer="adam",
                      lr=s.vae_lr, batch_size=s.vae_batch, epochs=1,
                      task=PoissonVAETask(steps=s.vae_steps),
                      eval_every_steps=s.vae_eval_every, methods=orth if o else (), seed=k)
            for o in (False, True) for k in range(s.unsup_seeds)]


def is_orthogonalised(cfg: RunConfig) -> bool:
    return cfg.method("grad_transform") is not None


_COST = {"resnet": 4.0, "densenet": 8.0, "basic_cnn": 1.0, "mlp": 0.1}  # rough relative step cost


def run_cost(cfg: RunConfig) -> float:
    """A rough relative cost of a run, to start the longest first (fewer idle workers)."""
    unit = next((v for k, v in _COST.items() if cfg.model.startswith(k)), 4.0)
    n = cfg.n_train or 50_000
    gt = cfg.method("grad_transform")
    return unit * cfg.epochs * n * (1.5 if gt is not None and gt.transform == "orth" else 1.0)
