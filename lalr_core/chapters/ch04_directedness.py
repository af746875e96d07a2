"""Chapter 04 (directedness of optimisation trajectories, seed 004 sec. 3.2): profile table and runs.

Source: seed 004 sec. 3.2 ("Ch3-SGDM"/"Ch3-Adam" of the digest); quick = the digest's section 6
reduction on Fashion-MNIST, smoke = the same code on synthetic data in seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lalr_core.core.config import RunConfig

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
