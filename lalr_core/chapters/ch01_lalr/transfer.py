"""Chapter 01's vision transfer runs: the pretraining and fine-tuning configs on Fashion-MNIST's
class split (or CIFAR / ImageNet weights at paper).
"""

from __future__ import annotations

from lalr_core.core.data import (
    DATASETS,
)
from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.pretrained.vision import (
    IMAGENET,
    IMAGENET_MODEL,
    ClassSubsetTask,
    TransferTask,
)

# ----------------------------------------------------------------------------- configs
# Fashion-MNIST's classes: 0-4 T-shirt/top, trouser, pullover, dress, coat (pretraining);
# 5-9 sandal, shirt, sneaker, bag, ankle boot (fine-tuning)
FMNIST_SPLIT = ((0, 1, 2, 3, 4), (5, 6, 7, 8, 9))


def pretraining_config(dataset: str = "fashion_mnist", classes=FMNIST_SPLIT[0], *,
                       model: str = "basic_cnn", n_train: int | None = 24_000, n_val: int = 500,
                       n_test: int | None = 2000, epochs: int = 4, optimizer: str = "adamw",
                       lr: float = 2e-3, wd: float = 0.01, batch_size: int = 64, seed: int = 0,
                       synthetic: bool = False, device: str = "auto", **run) -> RunConfig:
    """The pretraining run; quick defaults: BasicCNN on 24000 Fashion-MNIST images of
    classes 0-4, 4 epochs, AdamW 2e-3, batch 64 (11 s on 1 CPU thread; test accuracy 0.92 on
    2000 test images of those classes, seed 0).

    ``run``: further `RunConfig` fields (``width``, ``schedule``, ``augment``, ...). The paper
    profile's CIFAR-100 pretraining is e.g. ``pretraining_config("cifar100", None,
    model="resnet18_cifar", n_train=None, n_test=None, optimizer="sgdm", lr=0.1, ...)``.
    """
    return RunConfig(dataset=dataset, model=model, n_train=n_train, n_val=n_val, n_test=n_test,
                     epochs=epochs, optimizer=optimizer, lr=lr, wd=wd, batch_size=batch_size,
                     seed=seed, synthetic=synthetic, device=device,
                     task=ClassSubsetTask(classes=classes), **run)


def finetuning_config(pretrained: RunConfig | str, dataset: str | None = None,
                      classes="complement", *, model: str | None = None,
                      n_train: int | None = 2000, n_val: int = 500, n_test: int | None = 2000,
                      epochs: int = 5, optimizer: str = "adamw", lr: float = 1e-3,
                      wd: float = 0.01, batch_size: int = 32, seed: int = 0,
                      methods: tuple = (), synthetic: bool | None = None,
                      device: str = "auto", **run) -> RunConfig:
    """A fine-tuning from ``pretrained``; quick defaults: 2000 images, 5 epochs, AdamW 1e-3,
    batch 32 (P-LALR's optimiser; 1.5 s of training on 1 CPU thread, ~3.5 s with loading and
    the forgetting split; from the default pretraining, seed 0: test accuracy 0.95 on classes
    5-9, forgetting-split accuracy 0.92 -> 0.79).

    Args:
        pretrained: the pretraining's `RunConfig`, or ``"imagenet"``.
        dataset: default: the pretraining's (``"cifar10"`` for ``"imagenet"``).
        classes: ``"complement"`` (default): the classes the pretraining did not see when the
            dataset is the same, else every class; or a tuple, or None (every class).
        model: default: the pretraining's (``"resnet18_tv"`` for ``"imagenet"``).
        synthetic: default: the pretraining's (False for ``"imagenet"``).
        run: further `RunConfig` fields.
    """
    imagenet = pretrained == IMAGENET
    pre_dataset = None if imagenet else pretrained.dataset
    dataset = dataset or ("cifar10" if imagenet else pre_dataset)
    if classes == "complement":
        seen = None if imagenet else pretrained.task.classes
        classes = None if dataset != pre_dataset or seen is None else tuple(
            c for c in range(DATASETS[dataset].num_classes) if c not in seen)
    return RunConfig(dataset=dataset, model=model or (IMAGENET_MODEL if imagenet
                                                      else pretrained.model),
                     width=1.0 if imagenet else pretrained.width,
                     synthetic=(not imagenet and pretrained.synthetic) if synthetic is None
                     else synthetic,
                     n_train=n_train, n_val=n_val, n_test=n_test, epochs=epochs,
                     optimizer=optimizer, lr=lr, wd=wd, batch_size=batch_size, seed=seed,
                     methods=methods, device=device,
                     task=TransferTask(classes=classes, pretrained=pretrained), **run)
