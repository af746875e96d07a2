"""Reduced Barlow Twins (fig 5.8) and Poisson-VAE (fig 5.9) of chapter 06 (seed 004 ch. 5).

Both are tasks of the one training loop (`lalr_core.core.loop.train`), so their runs are ordinary
cached training units with the loop's seeding, checkpoints and divergence handling. Their
settings are our reductions on Fashion-MNIST (the thesis gives neither model):

* Barlow Twins: BasicCNN trunk -> projector 512-256-256 (not orthogonalised, sec. 5.5.6);
  views = random crop (pad 2) + Gaussian noise sigma 0.1; lambda 5e-3; LARS vs Orth-LARS
  (only the trunk's conv weights orthogonalised). The paper-scale ImageNet version is
  ``lalr_core.chapters.ch06_orthogonal_sgdm.imagenet``.
* VAE: MLP encoder 784-256-32 / decoder with a Poisson likelihood on counts round(10 x)
  (the thesis's description; the cited P-VAE has Poisson latents instead); Adam lr 1e-3, batch 128; Orth-Adam orthogonalises
  the *encoder* weights only; held-out MSE of the decoder mean every ``eval_every_steps``.

Both count steps, not epochs (as the source does): a run is one pass (``epochs=1``) of
``steps`` full batches, reshuffled whenever the training set is used up, in the order of a
CPU generator seeded with the run's seed.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from lalr_core.core.data.augmentation import augment
from lalr_core.core.loop.config import TASKS, RunConfig, TaskConfig
from lalr_core.core.data import DATASETS, ImageData, iterate_batches
from lalr_core.core.models.networks import (
    BarlowTwins,
    PoissonVAE,
    barlow_twins_loss,
    basic_cnn_trunk,
)
from lalr_core.core.models.networks import poisson_vae_loss
from lalr_core.core.loop.tasks import load_run_images

COUNT_SCALE = 10.0  # pixel intensity in [0, 1] -> Poisson counts round(10 x) (our choice)


def step_stream(X: torch.Tensor, y: torch.Tensor, batch: int, steps: int, seed: int):
    """``steps`` full batches of ``(X, y)``, reshuffled every epoch (`data.iterate_batches`)."""
    if batch > len(X):
        raise ValueError(f"batch {batch} is larger than the {len(X)} training samples")
    gen = torch.Generator().manual_seed(seed)
    epochs = (iterate_batches(X, y, batch, generator=gen, drop_last=True)
              for _ in itertools.count())
    return itertools.islice(itertools.chain.from_iterable(epochs), steps)


@dataclass(frozen=True)
class StepTask(TaskConfig):
    """A task trained for ``steps`` steps in one pass (``cfg.epochs`` must be 1)."""

    steps: int = 100
    eval_at_start = True

    def __post_init__(self):
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"{self.name} steps must be an int >= 1, got {self.steps!r}")

    def load(self, cfg: RunConfig, device: torch.device) -> ImageData:
        if cfg.epochs != 1:
            raise ValueError(f"{self.name} counts steps: use epochs=1 (got {cfg.epochs})")
        return load_run_images(cfg, device)

    def channels_last(self, cfg: RunConfig) -> bool:
        return False


# ----------------------------------------------------------------------------- Barlow Twins
def views(X: torch.Tensor, gen: torch.Generator, noise: float) -> torch.Tensor:
    """One augmented view: random crop (pad 2, no flip) plus Gaussian noise of std ``noise``."""
    X = augment(X, crop_pad=2, flip=False, generator=gen)
    return X + noise * torch.randn(X.shape, generator=gen, device=X.device)


@TASKS.register("barlow_twins")
@dataclass(frozen=True)
class BarlowTwinsTask(StepTask):
    """Barlow Twins on a BasicCNN trunk (``cfg.model`` is ignored: the trunk is fixed).

    Args:
        steps: optimiser steps.
        lambd: weight of the redundancy-reduction term (eq. 1 of Zbontar et al.).
        noise: std of the views' Gaussian noise.
        projector: hidden and output widths of the projector.
    """

    name = "barlow_twins"
    eval_at_start = False
    lambd: float = 5e-3
    noise: float = 0.1
    projector: tuple = (256, 256)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "projector", tuple(int(w) for w in self.projector))
        if self.lambd < 0 or self.noise < 0 or not self.projector or min(self.projector) < 1:
            raise ValueError(f"invalid Barlow Twins settings lambd={self.lambd}, "
                             f"noise={self.noise}, projector={self.projector}")

    def build_model(self, cfg: RunConfig) -> torch.nn.Module:
        spec = DATASETS[cfg.dataset]
        trunk, dim = basic_cnn_trunk(spec.in_channels, spec.image_size)
        return BarlowTwins(trunk, dim, self.projector)

    def batches(self, cfg: RunConfig, data: ImageData, generator: torch.Generator):
        # both views are drawn before either forward pass, in the order the source draws them
        for X, _ in step_stream(data.X_train, data.y_train, cfg.batch_size, self.steps, cfg.seed):
            yield views(X, generator, self.noise), views(X, generator, self.noise)

    def loss(self, model: torch.nn.Module, batch: tuple, autocast, generator):
        v1, v2 = batch
        with autocast:
            loss = barlow_twins_loss(model(v1), model(v2), self.lambd)
        return loss, None, len(v1)

    def evaluate(self, cfg: RunConfig, model, data, split: str) -> tuple[float, float]:
        return float("nan"), float("nan")  # the figure is the training loss


# ----------------------------------------------------------------------------- VAE
def counts_of(X: torch.Tensor, dataset: str) -> torch.Tensor:
    """Normalised images back to [0, 1] intensities, then Poisson counts round(10 x)."""
    spec = DATASETS[dataset]
    x = X * spec.std[0] + spec.mean[0]
    return torch.round(COUNT_SCALE * x.clamp(0, 1)).flatten(1)


@torch.no_grad()
def vae_heldout_mse(model: PoissonVAE, X: torch.Tensor, counts: torch.Tensor) -> float:
    """Mean squared error between the decoder mean (at z = mu) and the held-out counts."""
    was_training = model.training
    model.eval()
    mse = (model.rate(X) - counts).square().mean().item()
    model.train(was_training)
    return mse


@TASKS.register("poisson_vae")
@dataclass(frozen=True)
class PoissonVAETask(StepTask):
    """The Poisson VAE; evaluation = held-out MSE of the decoder mean (in ``val_loss``)."""

    name = "poisson_vae"

    def build_model(self, cfg: RunConfig) -> torch.nn.Module:
        spec = DATASETS[cfg.dataset]
        return PoissonVAE(spec.in_channels * spec.image_size ** 2)

    def batches(self, cfg: RunConfig, data: ImageData, generator: torch.Generator):
        counts = counts_of(data.X_train, cfg.dataset)
        yield from step_stream(data.X_train, counts, cfg.batch_size, self.steps, cfg.seed)

    def loss(self, model: torch.nn.Module, batch: tuple, autocast, generator):
        X, counts = batch
        with autocast:
            log_rate, mu, logvar = model(X, generator=generator)
            loss = poisson_vae_loss(counts, log_rate, mu, logvar)
        return loss, None, len(X)

    def evaluate(self, cfg: RunConfig, model, data: ImageData, split: str) -> tuple[float, float]:
        X = data.X_val if split == "val" else data.X_test
        return vae_heldout_mse(model, X, counts_of(X, cfg.dataset)), float("nan")
