"""Chapter profile tables and the cached training unit every chapter's sweeps go through.

A chapter table maps each profile to a flat dict of settings (every heavy setting lives here,
so the notebooks only name a profile and optional overrides). ``train_runs`` turns a list of
``RunConfig`` into cached, resumable training units executed by ``lalr_core.runs.sweep``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .htsr_callbacks import FinalWeights, PrunedStart, SpectralProbe
from .orth_experiments import ORTHOGONAL
from .probes import FilterCosineProbe, RepresentationProbe, SymmetryProbe, ZeroGradProbe
from .profiles import RunConfig, resolve
from .prune_experiments import PRUNING, check_settings
from .runs import RunCache, active_cache, sweep
from .tb_experiments import TEMPBALANCE
from .train import train
from .trajectory import TrajectoryCallback

# ----------------------------------------------------------------------------- chapter 04
# Source: seed 004 sec. 3.2 ("Ch3-SGDM"/"Ch3-Adam" of the digest); quick = the digest's
# section 6 reduction on Fashion-MNIST, smoke = the same code on synthetic data in seconds.
DIRECTEDNESS: dict[str, dict[str, Any]] = {
    "smoke": dict(
        dataset="fashion_mnist", synthetic=True, n_train=512, n_val=128, n_test=128,
        augment=False, model="basic_cnn", width=0.5, batch_size=64, epochs=6,
        milestones=(3, 5), window=10,
        sgdm_lr=0.05, sgdm_momentum=0.85, sgdm_wd=1e-3,
        adam_lr=1e-3, adam_betas=(0.9, 0.99), adam_wd=1e-4,
        sim_steps=300, sim_seeds=3, mc_count=2000, workers=1,
    ),
    "quick": dict(
        dataset="fashion_mnist", synthetic=False, n_train=10_000, n_val=2_000, n_test=2_000,
        augment=False, model="resnet20", width=0.5, batch_size=256, epochs=15,
        milestones=(8, 12), window=50,
        sgdm_lr=0.05, sgdm_momentum=0.85, sgdm_wd=1e-3,
        adam_lr=1e-3, adam_betas=(0.9, 0.99), adam_wd=1e-4,
        sim_steps=1000, sim_seeds=20, mc_count=20_000, workers=2,
    ),
    "paper": dict(
        dataset="cifar10", synthetic=False, n_train=40_000, n_val=10_000, n_test=None,
        augment=True, model="resnet20", width=1.0, batch_size=1024, epochs=200,
        milestones=(100, 150), window=250,
        sgdm_lr=0.05, sgdm_momentum=0.85, sgdm_wd=1e-2,
        adam_lr=0.01, adam_betas=(0.9, 0.99), adam_wd=1e-4,
        sim_steps=1000, sim_seeds=20, mc_count=100_000, workers=1,
    ),
}

CHAPTERS: dict[str, dict[str, dict[str, Any]]] = {
    "02": TEMPBALANCE, "02b": PRUNING, "04": DIRECTEDNESS, "06": ORTHOGONAL,
}
CHECKS = {"02b": check_settings}  # chapter -> settings check beyond resolve's (before compute)


def chapter_settings(chapter: str, profile: str,
                     overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Resolved settings of ``chapter`` at ``profile`` (raises ``ValueError`` on bad input)."""
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; known: {sorted(CHAPTERS)}")
    settings = resolve(CHAPTERS[chapter], profile, overrides)
    return CHECKS[chapter](settings) if chapter in CHECKS else settings


def directedness_configs(s: Mapping[str, Any]) -> dict[str, RunConfig]:
    """The SGDM and Adam runs of chapter 04 from resolved settings ``s``."""
    common = dict(dataset=s["dataset"], synthetic=s["synthetic"], n_train=s["n_train"],
                  n_val=s["n_val"], n_test=s["n_test"], augment=s["augment"], model=s["model"],
                  width=s["width"], batch_size=s["batch_size"], epochs=s["epochs"],
                  schedule="multistep", milestones=s["milestones"], lr_decay=0.1)
    return {
        "sgdm": RunConfig(**common, optimizer="sgdm", lr=s["sgdm_lr"],
                          momentum=s["sgdm_momentum"], wd=s["sgdm_wd"]),
        "adam": RunConfig(**common, optimizer="adam", lr=s["adam_lr"],
                          betas=s["adam_betas"], wd=s["adam_wd"]),
    }


# ----------------------------------------------------------------------------- training units
CALLBACK_FACTORIES = {"trajectory": TrajectoryCallback, "filter_cos": FilterCosineProbe,
                      "representations": RepresentationProbe, "zero_grad": ZeroGradProbe,
                      "symmetry": SymmetryProbe, "weights": FinalWeights,
                      "pruned_start": PrunedStart, "spectral": SpectralProbe}
CHECKPOINT_EVERY = 10  # epochs; a killed paper run resumes losing at most this many


def train_unit(params: dict[str, Any]) -> dict[str, Any]:
    """One cached unit: train ``params['run']`` with the callbacks in ``params['callbacks']``.

    Module-level (picklable) so process and Ray executors can run it.
    """
    cfg = RunConfig(**params["run"])
    callbacks = [CALLBACK_FACTORIES[kind](**spec) for kind, spec in params["callbacks"].items()]
    ckpt = active_cache().checkpoint_dir("train", params) if cfg.epochs > CHECKPOINT_EVERY else None
    return train(cfg, callbacks=callbacks, progress=params.get("progress", False),
                 checkpoint_dir=ckpt, checkpoint_every=CHECKPOINT_EVERY)


def train_runs(configs: Sequence[RunConfig], *,
               callbacks: Mapping[str, dict] | Sequence[Mapping[str, dict]] | None = None,
               workers: int = 1, executor: str = "local",
               cache: RunCache | None = None) -> list[dict[str, Any]]:
    """Train every config (cached and resumable), in order, through the sweep executor.

    Args:
        configs: the runs.
        callbacks: kind -> constructor kwargs, e.g. ``{"trajectory": {"window": 250}}``, for
            every run, or a sequence of such mappings, one per config.
        workers: parallel processes (threads are split between them).
        executor: ``"local"`` or ``"ray"``.
        cache: the run cache (default ``data/runs``).
    """
    per_run = [dict(c) for c in callbacks] if isinstance(callbacks, (list, tuple)) else \
        [dict(callbacks or {})] * len(configs)
    if len(per_run) != len(configs):
        raise ValueError(f"{len(per_run)} callback specs for {len(configs)} configs")
    unknown = set().union(*per_run) - set(CALLBACK_FACTORIES) if per_run else set()
    if unknown:
        raise ValueError(f"unknown callbacks {sorted(unknown)}; "
                         f"known: {sorted(CALLBACK_FACTORIES)}")
    params = [{"run": cfg.key(), "callbacks": cb} for cfg, cb in zip(configs, per_run)]
    return sweep(train_unit, params, name="train", executor=executor,
                 workers=min(workers, len(params)) or 1, cache=cache)
