"""Tasks: what a training step computes from a batch, so the loop knows no data or model kind.

A task is a frozen `TaskConfig` (its settings, part of the run's cache key) registered by name
in ``TASKS``; ``RunConfig.task`` holds it. The loop calls:

* ``load(cfg, device)``: the run's data (an object with ``.to(device)``);
* ``build_model(cfg)``: the architecture (unseeded; the loop seeds it);
* ``channels_last(cfg)``: whether the model runs in channels_last memory format;
* ``batches(cfg, data, generator)``: the training batches of one epoch; ``generator`` is the
  run's (seeded ``cfg.seed + 1``) for data order and augmentation;
* ``loss(model, batch, autocast, generator)``: the mean loss (a tensor to backpropagate), the
  number of correct predictions (a tensor, or None where accuracy means nothing) and the batch
  size;
* ``evaluate(cfg, model, data, split)``: ``(loss, accuracy)`` on ``"val"`` or ``"test"`` (the
  image task also ``"train"``; an unknown split is an error);
* ``correct(cfg, model, data, split)`` (optional): one bool per example of the split, whether
  the model classifies it correctly; the loop keeps the test set's at the end of a run
  (``result["test_correct"]``), so two runs' accuracies can be compared example by example
  (`lalr_core.core.results.evidence.bootstrap_difference`);
* ``eval_at_start``: also evaluate validation at step 0 when ``cfg.eval_every_steps`` is set.

and, where the task has them (all optional; e.g. chapter 06's ImageNet tasks use each):

* ``start_epoch(cfg, data, epoch)``: before each epoch's ``batches``, with the 0-based epoch
  (e.g. to set a data loader's per-epoch order and seeds);
* ``configure_optimizer(cfg, optimizer)``: right after the optimiser is built (methods'
  wrappers included), e.g. to give param groups their own ``lr_scale``;
* ``step_lr_factor(cfg, data, step)``: a per-step lr schedule (e.g. warm-up then cosine)
  in place of ``cfg.schedule``, which must then be ``"constant"``: before the 0-based step
  ``step`` every group's lr is ``factor * (cfg.lr * group.get("lr_scale", 1))``, and the
  step's recorded lr is ``cfg.lr * factor``;
* ``max_steps`` (int or None): stop after this many steps in all, even if epochs remain (the
  schedules still span ``cfg.epochs``); an epoch it cuts short is recorded and evaluated but
  not checkpointed, so a resume never starts inside an epoch;
* ``resume_free``: names of the key entries (``"epochs"``, ``"task.<field>"``) in which a
  run may differ from the checkpoint it resumes; any other difference is refused.

Image classification is the core task; a chapter registers others (Barlow Twins, a VAE,
masked-language modelling, ...) with ``@TASKS.register(name)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lalr_core.core.data import DATASETS, ImageData, iterate_batches, load_data
from lalr_core.core.data.augmentation import augment, augmix, crop_pad_for
from lalr_core.core.loop.config import TASKS, RunConfig, TaskConfig
from lalr_core.core.models.networks import build_model


@torch.no_grad()
def evaluate(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor,
             batch_size: int = 1000) -> tuple[float, float]:
    """Mean cross-entropy and accuracy (in [0, 1]) of ``model`` in eval mode."""
    if len(X) == 0:
        return float("nan"), float("nan")
    was_training = model.training
    model.eval()
    loss_sum, correct = 0.0, 0
    for Xb, yb in iterate_batches(X, y, batch_size, shuffle=False):
        logits = model(Xb).float()
        loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
        correct += (logits.argmax(1) == yb).sum().item()
    model.train(was_training)
    return loss_sum / len(X), correct / len(X)


def classification_loss(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, autocast):
    """A classification task's ``loss`` hook: mean cross-entropy of ``model(X)`` (in float32
    under ``autocast``), the number of correct argmax predictions and the batch size."""
    with autocast:
        logits = model(X)
        loss = F.cross_entropy(logits.float(), y)
    return loss, (logits.detach().argmax(1) == y).sum(), len(y)


@torch.no_grad()
def correct_per_example(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor,
                        batch_size: int = 1000) -> np.ndarray:
    """One bool per example: ``argmax(model(x)) == y``, in eval mode."""
    was_training = model.training
    model.eval()
    hits = [(model(Xb).argmax(1) == yb).cpu()
            for Xb, yb in iterate_batches(X, y, batch_size, shuffle=False)]
    model.train(was_training)
    return torch.cat(hits).numpy() if hits else np.zeros(0, dtype=bool)


def load_run_images(cfg: RunConfig, device: torch.device) -> ImageData:
    """The run's image data (real or synthetic) on ``device``."""
    return load_data(cfg.dataset, n_train=cfg.n_train, n_val=cfg.n_val, n_test=cfg.n_test,
                     split_seed=cfg.split_seed, synthetic=cfg.synthetic, device=device)


@TASKS.register("image_classification")
@dataclass(frozen=True)
class ImageClassification(TaskConfig):
    """Cross-entropy on images (real or synthetic), on-device crop + flip and AugMix."""

    name = "image_classification"
    eval_at_start = False

    def load(self, cfg: RunConfig, device: torch.device) -> ImageData:
        return load_run_images(cfg, device)

    def build_model(self, cfg: RunConfig) -> torch.nn.Module:
        spec = DATASETS[cfg.dataset]
        return build_model(cfg.model, in_channels=spec.in_channels, num_classes=spec.num_classes,
                           width=cfg.width, image_size=spec.image_size)

    def channels_last(self, cfg: RunConfig) -> bool:
        return cfg.model != "mlp"

    def batches(self, cfg: RunConfig, data: ImageData,
                generator: torch.Generator) -> Iterator[tuple]:
        for Xb, yb in iterate_batches(data.X_train, data.y_train, cfg.batch_size,
                                      shuffle=True, generator=generator):
            if cfg.augment:
                Xb = augment(Xb, crop_pad=crop_pad_for(data.image_size), generator=generator)
            if cfg.augmix:
                Xb = augmix(Xb, data.name, generator=generator)
            yield Xb, yb

    def loss(self, model: torch.nn.Module, batch: tuple, autocast, generator):
        return classification_loss(model, *batch, autocast)

    splits = ("train", "val", "test")

    @staticmethod
    def split_of(data: ImageData, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(X, y)`` of ``"train"``, ``"val"`` or ``"test"`` (another name is an error, not
        the test set)."""
        if split not in ImageClassification.splits:
            raise ValueError(f"unknown split {split!r}; choose one of "
                             f"{ImageClassification.splits}")
        return getattr(data, f"X_{split}"), getattr(data, f"y_{split}")

    def evaluate(self, cfg: RunConfig, model: torch.nn.Module, data: ImageData, split: str):
        X, y = self.split_of(data, split)
        return evaluate(model, X, y, cfg.eval_batch_size)

    def correct(self, cfg: RunConfig, model: torch.nn.Module, data: ImageData, split: str):
        X, y = self.split_of(data, split)
        return correct_per_example(model, X, y, cfg.eval_batch_size)
