"""The vision transfer setting of chapter 01: pretrain on some classes, fine-tune on others.

Issue 13: "a cached pretraining run on some Fashion-MNIST classes, fine-tuned on the others
(paper: CIFAR-100 -> CIFAR-10, and torchvision's ImageNet ResNet-18 -> CIFAR-10 when online).
Forgetting is measured on the pretraining task." It mirrors the text setting
(`lalr_core.methods.pretrained.text.tasks`): both are tasks of the one training loop, the pretraining is one
cached unit (its run with the core's ``"weights"`` callback) that a fine-tuning fetches through
`lalr_core.core.runs.units.pretrained`, and a callback records the forgetting split during the run.

* `ClassSubsetTask` (``"image_subset"``): image classification on ``classes`` of the run's
  dataset (real or synthetic, from `lalr_core.core.data.load_data`), labels remapped to
  ``0..k-1`` in the order given; ``classes=None`` keeps every class (then it is exactly the
  core's ``"image_classification"``). ``n_train`` / ``n_val`` / ``n_test`` of the `RunConfig`
  count examples *of those classes*.
* `TransferTask` (``"image_transfer"``): a `ClassSubsetTask` whose model starts from the
  pretraining run's final weights (``pretrained``: its `RunConfig`), every tensor but the
  classifier head's; the head is new, ``k`` outputs, initialised under the run's seed. The
  pretraining may use another dataset of the same input shape (CIFAR-100 -> CIFAR-10), or
  be ``"imagenet"``: torchvision's ImageNet ResNet-18 (model ``"resnet18_tv"``), downloaded
  with torchvision's weights API, a clear `PretrainedWeightsUnavailable` offline. Extra split
  ``"pretrain"`` (forgetting; not for ``"imagenet"``): the pretraining run's own test split
  (its dataset, classes and sizes) scored by the current trunk with the *pretrained* head
  reattached, so at step 0 it equals the pretraining's final ``test_loss`` / ``test_acc``.
* The ``"transfer_splits"`` callback (`TransferSplitProbe`): that split at step 0 and after
  every epoch, the same table as ``"text_splits"``.

The head (`head_name`) is, by one rule for every model of `lalr_core.core.models.networks`: the direct
child named ``fc``, ``linear``, ``classifier`` or ``head`` that is an ``nn.Linear`` (BasicCNN's
and ResNet's ``fc``, the CIFAR models' ``linear`` / ``classifier``); failing that, the model's
last module in ``named_modules`` order if it is an ``nn.Linear`` (the MLP's ``net.5``).

Example (the chapter's quick setting, Fashion-MNIST classes 0-4 -> 5-9)::

    pre = pretraining_config(classes=(0, 1, 2, 3, 4))
    cfg = finetuning_config(pre, seed=0)                 # classes 5-9, AdamW
    (res,) = train_runs([cfg], callbacks={"transfer_splits": {"task": cfg.task.key()}})
    res["callbacks"]["transfer_splits"]["history"]       # epoch, split, loss, acc

One module (over 400 lines) on purpose: the class-subset task, the head rule and the transfer
task with its forgetting probe are one setting and share its data split.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from lalr_core.core.data import (
    DATASETS,
    SYNTHETIC_SIZES,
    ImageData,
    check_sizes,
    data_root,
    load_data,
    split_indices,
)
from lalr_core.core.loop.callbacks import CALLBACKS, SplitHistory
from lalr_core.core.loop.config import TASKS, RunConfig, plugin_config
from lalr_core.core.loop.tasks import ImageClassification, correct_per_example, evaluate
from lalr_core.core.models.networks import build_model
from lalr_core.core.runs.units import pretrained as pretrained_run
from lalr_core.core.runs.units import pretraining_unit

HEAD_NAMES = ("fc", "linear", "classifier", "head")


IMAGENET = "imagenet"            # `TransferTask.pretrained`: torchvision's ImageNet ResNet-18


IMAGENET_MODEL = "resnet18_tv"   # the model those weights fit


FORGET_SPLIT = "pretrain"


SYNTHETIC_POOL_FACTOR = 2        # synthetic pools hold 2x the expected draws of each class


class PretrainedWeightsUnavailable(RuntimeError):
    """Pretrained weights that are neither cached nor downloadable (e.g. offline)."""


# ----------------------------------------------------------------------------- the head
def head_name(model: nn.Module) -> str:
    """The name of ``model``'s classifier head (the rule in the module docstring).

    Raises:
        ValueError: the model has no such ``nn.Linear``.
    """
    children = dict(model.named_children())
    for name in HEAD_NAMES:
        if isinstance(children.get(name), nn.Linear):
            return name
    name, last = list(model.named_modules())[-1]
    if name and isinstance(last, nn.Linear):
        return name
    raise ValueError(f"{type(model).__name__} has no classifier head: no nn.Linear child named "
                     f"one of {HEAD_NAMES}, and its last module is {type(last).__name__}")


def head_keys(model: nn.Module) -> list[str]:
    """The ``state_dict`` keys of the head (``"fc.weight"``, ``"fc.bias"``)."""
    head = head_name(model)
    return [k for k in model.state_dict() if k.startswith(head + ".")]


class WithHead(nn.Module):
    """``model`` with its head's parameters replaced by ``head`` (``{"weight", "bias"}``).

    The trunk, its BN statistics included, is ``model``'s own as it is now; only the head's
    tensors are swapped in the call (`torch.func.functional_call`), so ``model`` is unchanged.
    """

    def __init__(self, model: nn.Module, head: Mapping[str, torch.Tensor]):
        super().__init__()
        self.model = model
        prefix = head_name(model)
        self.params = {f"{prefix}.{k}": v for k, v in head.items()}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.model, self.params, (x,))


# ----------------------------------------------------------------------------- class subsets
def _check_classes(classes) -> tuple[int, ...] | None:
    if classes is None:
        return None
    if isinstance(classes, (str, bytes)) or not isinstance(classes, (tuple, list)):
        raise ValueError(  # noqa: TRY004 - a bad setting, like the others
            f"classes must be a tuple of class indices or None, got {classes!r}")
    if len(classes) < 2 or len(set(classes)) != len(classes) or any(
            isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in classes):
        raise ValueError(f"classes must be >= 2 distinct ints >= 0, got {classes!r}")
    return tuple(classes)


def _take(X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor, lookup: torch.Tensor):
    """Rows ``idx`` with labels remapped through ``lookup`` (original label -> new)."""
    idx = idx.to(X.device)
    return X[idx].contiguous(), lookup.to(y.device)[y[idx]]


@functools.lru_cache(maxsize=1)
def _official_splits(dataset: str, root: str) -> ImageData:
    """The whole official train / test splits under data root ``root`` on the CPU, kept for
    the next call: a fine-tuning reads its dataset, its forgetting split and (in the
    callback) the forgetting split again; each read takes ~0.4 s on Fashion-MNIST (220 MB
    kept). Never handed out: callers index copies out of it."""
    return load_data(dataset, root=root, split_seed=0, device="cpu")


def subset_images(cfg: RunConfig, classes: tuple[int, ...] | None,
                  device: torch.device | str = "cpu") -> ImageData:
    """The run's images of ``classes`` only, labels ``0..k-1``; sizes count those classes.

    Real data: the official splits filtered to the classes, then the core's seeded
    train / val / test indices (`split_indices`, ``cfg.split_seed``) on what remains, so val
    is held out of the train split and train sets are nested as ``n_train`` grows.
    Synthetic data: a seeded pool of ``SYNTHETIC_POOL_FACTOR`` times the expected draws,
    filtered the same way (``n_train`` / ``n_test`` None: ``SYNTHETIC_SIZES``).

    Args:
        cfg: the run (``dataset``, ``synthetic``, ``n_train``, ``n_val``, ``n_test``,
            ``split_seed``).
        classes: original class indices, or None for every class (`load_data` unchanged).
        device: where the tensors go.

    Raises:
        ValueError: a class out of range, or sizes larger than the classes hold.
    """
    classes = _check_classes(classes)
    if classes is None:
        return load_data(cfg.dataset, n_train=cfg.n_train, n_val=cfg.n_val, n_test=cfg.n_test,
                         split_seed=cfg.split_seed, synthetic=cfg.synthetic, device=device)
    spec = DATASETS[cfg.dataset]
    if max(classes) >= spec.num_classes:
        raise ValueError(f"classes {classes} out of range: {cfg.dataset} has "
                         f"{spec.num_classes} classes")
    n_train, n_test = cfg.n_train, cfg.n_test
    if cfg.synthetic:
        n_train = SYNTHETIC_SIZES[0] if n_train is None else n_train
        n_test = SYNTHETIC_SIZES[1] if n_test is None else n_test
        per = SYNTHETIC_POOL_FACTOR * spec.num_classes / len(classes)  # draws per kept example
        pool = load_data(cfg.dataset, n_train=int(per * (n_train + cfg.n_val)) + 64,
                         n_test=int(per * n_test) + 64, split_seed=cfg.split_seed,
                         synthetic=True, device="cpu")
    else:
        pool = _official_splits(cfg.dataset, str(data_root()))
    lookup = torch.full((spec.num_classes,), -1, dtype=torch.int64)
    lookup[list(classes)] = torch.arange(len(classes))
    keep_tr = torch.nonzero(lookup[pool.y_train] >= 0).flatten()
    keep_te = torch.nonzero(lookup[pool.y_test] >= 0).flatten()
    check_sizes(n_train, cfg.n_val, n_test, len(keep_tr), len(keep_te))
    i_tr, i_val, i_te = split_indices(len(keep_tr), len(keep_te), n_train, cfg.n_val, n_test,
                                      cfg.split_seed)
    data = ImageData(*_take(pool.X_train, pool.y_train, keep_tr[i_tr], lookup),
                     *_take(pool.X_train, pool.y_train, keep_tr[i_val], lookup),
                     *_take(pool.X_test, pool.y_test, keep_te[i_te], lookup),
                     cfg.dataset, len(classes), spec.in_channels, spec.image_size,
                     synthetic=cfg.synthetic)
    return data.to(device)


@TASKS.register("image_subset")
@dataclass(frozen=True)
class ClassSubsetTask(ImageClassification):
    """Image classification on a subset of the dataset's classes, labels ``0..k-1``.

    Args:
        classes: the original class indices kept, in the order that defines the new labels;
            None = every class.
    """

    name = "image_subset"
    classes: Any = None

    def __post_init__(self):
        object.__setattr__(self, "classes", _check_classes(self.classes))

    def num_classes(self, cfg: RunConfig) -> int:
        return DATASETS[cfg.dataset].num_classes if self.classes is None else len(self.classes)

    def load(self, cfg: RunConfig, device: torch.device) -> ImageData:
        return subset_images(cfg, self.classes, device)

    def build_model(self, cfg: RunConfig) -> nn.Module:
        spec = DATASETS[cfg.dataset]
        return build_model(cfg.model, in_channels=spec.in_channels,
                           num_classes=self.num_classes(cfg), width=cfg.width,
                           image_size=spec.image_size)


# ----------------------------------------------------------------------------- pretraining
def subset_pretraining(cfg: RunConfig) -> RunConfig:
    """``cfg`` itself, checked to be a pretraining a fine-tuning may start from: an
    ``"image_subset"`` run without methods (fetched through
    `lalr_core.core.runs.units.pretrained`).

    Raises:
        ValueError: another task, or a run with methods.
    """
    if type(cfg.task) is not ClassSubsetTask:
        raise ValueError(f"a pretraining must be an image_subset run, got task "
                         f"{cfg.task.name!r}")
    pretraining_unit(cfg)  # refuses methods
    return cfg


def imagenet_resnet18_weights() -> dict[str, torch.Tensor]:
    """torchvision's ``ResNet18_Weights.IMAGENET1K_V1`` state dict (torch hub cache, else
    downloaded there).

    Raises:
        PretrainedWeightsUnavailable: neither cached nor downloadable; says what to do.
    """
    import torchvision  # 1-3 s to import; only this path needs its weights API

    weights = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
    try:
        return weights.get_state_dict(progress=False, check_hash=True)
    except (OSError, RuntimeError, ValueError) as exc:  # URLError is an OSError
        hub = torch.hub.get_dir()
        raise PretrainedWeightsUnavailable(
            f"torchvision's ImageNet ResNet-18 weights ({weights.url}) are not in the torch "
            f"hub cache ({hub}/checkpoints) and could not be downloaded ({exc}). Run once "
            f"online, or copy the file into that folder; offline, use a pretraining run "
            f"(pretraining_config) instead of pretrained='imagenet'.") from exc


def _trunk_state(pretrained: RunConfig | str, model: nn.Module) -> dict[str, torch.Tensor]:
    """The pretrained state dict without the head's tensors (``model`` names the head)."""
    if pretrained == IMAGENET:
        state = imagenet_resnet18_weights()
    else:
        state = pretrained_run(subset_pretraining(pretrained))["callbacks"].get("weights")
        if not state:
            raise LookupError("the pretraining run has no 'weights' callback result")
    head = head_name(model) + "."
    return {k: v for k, v in state.items() if not k.startswith(head)}


def pretrained_head(pretrained: RunConfig) -> dict[str, torch.Tensor]:
    """The pretraining run's final head, ``{"weight": [k_pre, d], "bias": [k_pre]}`` (no
    bias key for a bias-free head)."""
    state = pretrained_run(subset_pretraining(pretrained))["callbacks"]["weights"]
    head = head_name(pretrained.task.build_model(pretrained)) + "."
    return {k[len(head):]: v for k, v in state.items() if k.startswith(head)}


# ----------------------------------------------------------------------------- fine-tuning
@dataclass
class TransferData(ImageData):
    """A fine-tuning's `ImageData` plus the forgetting split and the pretrained head."""

    X_pretrain: torch.Tensor | None = None
    y_pretrain: torch.Tensor | None = None
    head: dict[str, torch.Tensor] = field(default_factory=dict)

    def to(self, device: str | torch.device) -> TransferData:
        moved = {k: getattr(self, k).to(device) for k in self._TENSORS}
        if self.X_pretrain is not None:
            moved.update(X_pretrain=self.X_pretrain.to(device),
                         y_pretrain=self.y_pretrain.to(device))
        return dataclasses.replace(self, **moved,
                                   head={k: v.to(device) for k, v in self.head.items()})


@TASKS.register("image_transfer")
@dataclass(frozen=True)
class TransferTask(ClassSubsetTask):
    """Fine-tuning from a pretraining run's (or ImageNet's) trunk with a fresh head.

    Args:
        classes: the fine-tuning's classes (None: every class of the run's dataset).
        pretrained: the pretraining's `RunConfig` (an ``"image_subset"`` run without methods;
            or its key dict), ``"imagenet"`` (torchvision's ResNet-18, model
            ``"resnet18_tv"``, 3-channel data) or None (from scratch, no forgetting split).
            The run must use the pretraining's model and width, on data of its input shape.
    """

    name = "image_transfer"
    pretrained: Any = None

    def __post_init__(self):
        super().__post_init__()
        pre = self.pretrained
        if pre is None or pre == IMAGENET:
            return
        if isinstance(pre, Mapping):
            pre = RunConfig(**pre)
            object.__setattr__(self, "pretrained", pre)
        if not isinstance(pre, RunConfig):
            raise ValueError(  # noqa: TRY004 - a bad setting, like the others
                f"pretrained must be the pretraining's RunConfig, its key dict, {IMAGENET!r} or "
                f"None, got {type(pre).__name__}")
        subset_pretraining(pre)

    def key(self) -> dict[str, Any]:
        out = super().key()
        if isinstance(self.pretrained, RunConfig):
            out["pretrained"] = self.pretrained.key()
        return out

    @property
    def has_forgetting(self) -> bool:
        """Whether the pretraining's data exists here (a pretraining run, not ImageNet)."""
        return isinstance(self.pretrained, RunConfig)

    @property
    def splits(self) -> tuple[str, ...]:
        """Every split `evaluate` and `correct` accept."""
        return ("train", "val", "test") + ((FORGET_SPLIT,) if self.has_forgetting else ())

    def check(self, cfg: RunConfig) -> None:
        """Raise ``ValueError`` unless ``cfg`` fits the pretrained weights."""
        spec = DATASETS[cfg.dataset]
        if self.pretrained == IMAGENET:
            if cfg.model != IMAGENET_MODEL or spec.in_channels != 3:
                raise ValueError(f"pretrained='imagenet' needs model {IMAGENET_MODEL!r} on "
                                 f"3-channel data, got {cfg.model!r} on {cfg.dataset!r}")
        elif self.pretrained is not None:
            pre, pspec = self.pretrained, DATASETS[self.pretrained.dataset]
            if (pre.model, pre.width) != (cfg.model, cfg.width):
                raise ValueError(f"the run's model {cfg.model!r} (width {cfg.width}) differs "
                                 f"from the pretraining's {pre.model!r} (width {pre.width})")
            if (pspec.in_channels, pspec.image_size) != (spec.in_channels, spec.image_size):
                raise ValueError(f"{cfg.dataset!r} images differ in shape from the "
                                 f"pretraining's {pre.dataset!r}")

    def forgetting_split(self, device: torch.device | str = "cpu"
                         ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        """``(X, y, head)``: the pretraining's test split and its final head, on ``device``."""
        if not self.has_forgetting:
            raise ValueError("no forgetting split: the task has no pretraining run "
                             f"(pretrained={self.pretrained!r})")
        pre = self.pretrained
        data = pre.task.load(pre, torch.device(device))
        head = {k: v.to(device) for k, v in pretrained_head(pre).items()}
        return data.X_test, data.y_test, head

    def load(self, cfg: RunConfig, device: torch.device) -> TransferData:
        self.check(cfg)
        data = super().load(cfg, device)
        extra = {}
        if self.has_forgetting:
            X, y, head = self.forgetting_split(device)
            extra = {"X_pretrain": X, "y_pretrain": y, "head": head}
        return TransferData(**{f.name: getattr(data, f.name)
                               for f in dataclasses.fields(ImageData)}, **extra)

    def build_model(self, cfg: RunConfig) -> nn.Module:
        """The run's model (seeded by the loop) with the pretrained trunk loaded exactly."""
        self.check(cfg)
        model = super().build_model(cfg)
        if self.pretrained is None:
            return model
        missing, unexpected = model.load_state_dict(_trunk_state(self.pretrained, model),
                                                    strict=False)
        # the head is new; a BN step counter absent from an older checkpoint changes nothing
        # (momentum is set), every other tensor must come from the pretrained weights
        missing = set(missing) - set(head_keys(model))
        missing = {k for k in missing if not k.endswith("num_batches_tracked")}
        if unexpected or missing:
            raise ValueError(f"the pretrained weights do not fit {cfg.model!r}: missing "
                             f"{sorted(missing)}, unexpected {sorted(unexpected)}")
        return model

    def _arrays(self, data: ImageData, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r}; this task has {self.splits}")
        prefix = {"train": "train", "val": "val", "test": "test", FORGET_SPLIT: "pretrain"}
        return getattr(data, f"X_{prefix[split]}"), getattr(data, f"y_{prefix[split]}")

    def evaluate_split(self, model: nn.Module, data: ImageData, split: str,
                       batch_size: int = 1000) -> tuple[float, float]:
        """``(loss, accuracy)`` on ``split``; ``"pretrain"``: with the pretrained head."""
        X, y = self._arrays(data, split)
        net = WithHead(model, data.head) if split == FORGET_SPLIT else model
        return evaluate(net, X, y, batch_size)

    def evaluate(self, cfg: RunConfig, model: nn.Module, data: ImageData, split: str):
        return self.evaluate_split(model, data, split, cfg.eval_batch_size)

    def correct(self, cfg: RunConfig, model: nn.Module, data: ImageData,
                split: str) -> np.ndarray:
        X, y = self._arrays(data, split)
        net = WithHead(model, data.head) if split == FORGET_SPLIT else model
        return correct_per_example(net, X, y, cfg.eval_batch_size)


# ----------------------------------------------------------------------------- the callback
@CALLBACKS.register("transfer_splits")
class TransferSplitProbe(SplitHistory):
    """``(loss, acc)`` on the forgetting split, at step 0 and after every epoch.

    The image twin of ``"text_splits"``; ``task`` must be the run's `TransferTask` (its key
    dict). Result: ``{"history": DataFrame(epoch, split, loss, acc), "correct": {split:
    bool array of the last record}}``.
    """

    name = "transfer_splits"

    def __init__(self, task: Mapping, splits: Sequence[str] = (FORGET_SPLIT,),
                 batch_size: int = 1000):
        self.task = plugin_config(task, TASKS)
        if not isinstance(self.task, TransferTask) or not self.task.has_forgetting:
            raise ValueError("transfer_splits needs an image_transfer task with a pretraining "
                             f"run, got {self.task.key()}")
        if isinstance(splits, str) or set(splits) - {FORGET_SPLIT}:
            raise ValueError(f"splits must be a list of {(FORGET_SPLIT,)}, got {splits!r}")
        super().__init__()
        self.splits, self.batch_size = tuple(splits), int(batch_size)
        self._split: tuple | None = None

    def _record(self, model: nn.Module, epoch: int) -> None:
        if self._split is None:
            self._split = self.task.forgetting_split(next(model.parameters()).device)
        X, y, head = self._split
        net = WithHead(model, head)
        for split in self.splits:
            loss, acc = evaluate(net, X, y, self.batch_size)
            self.rows.append({"epoch": epoch, "split": split, "loss": loss, "acc": acc})
            self.hits[split] = correct_per_example(net, X, y, self.batch_size)
