"""The text tasks of chapters 01 and 03: MLM pretraining and sequence classification.

Both are tasks of the one training loop (`lalr_core.core.loop.train`; protocol in
`lalr_core.core.loop.tasks`), so their runs are ordinary cached training units. The task builds
TinyTF itself (its sizes are task fields): ``RunConfig.model`` and the in-memory image-data
fields (``dataset``, ``n_train``, ...) are not read and must keep their defaults, so that one
computation has one cache key.

* `MLMTask` (``"text_mlm"``): masked-token prediction on the D-SYN-TXT corpus (4000
  sequences, half of length 16, half 48; `mlm`). Batches hold sequences of one length (no
  compute on padding). Val / test: held-out corpus sequences with fixed masks; ``(loss,
  acc)`` are the MLM loss and the masked-token accuracy.
* `SequenceClassificationTask` (``"text_classification"``): SENT / ACC / LONG / STARS
  (`corpus`), TinyTF with a fresh linear head on [CLS], cross-entropy. With ``pretrained``
  (the MLM run's `RunConfig`) the encoder starts from that run's final weights, exactly; the
  head is new (initialised under the run's seed). Extra splits for `evaluate` / `correct`:
  the OOD tests of X-L15 (``test_noise`` or ``test_deep``; the lexicon shift is
  ``lexicon="shift"``, whose ``test`` is the shifted set) and ``"mlm"``: the held-out MLM
  loss of the current encoder with the pretrained MLM head reattached (forgetting, X-L3;
  the same masked sequences as the MLM run's ``val``, so at step 0 it equals that run's
  final ``val_loss``).

The pretraining is one cached unit (the MLM run with the ``"weights"`` callback). A
fine-tuning fetches it through `lalr_core.core.runs.units.pretrained`, which trains it on a miss
(once: other processes wait on the unit's lock), so it is computed once per cache and shared
by every chapter that names the same config. Both tasks live in this module, so a fine-tuning
unit's code fingerprint covers the pretraining's code (its task, the loop, the "weights"
callback); the pretraining may therefore use no method (refused).

The ``"text_splits"`` callback (`lalr_core.methods.pretrained.text.probe`) records extra splits of a
classification run (OOD tests, forgetting) at the start and after every epoch.

One module (over 400 lines) on purpose: the MLM and classification tasks share TinyTF's fields,
the pretraining check and the rules of which run fields they read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from lalr_core.core.data import iterate_batches
from lalr_core.core.loop.config import TASKS, RunConfig, TaskConfig
from lalr_core.core.loop.tasks import classification_loss, correct_per_example, evaluate
from lalr_core.core.runs.units import pretrained, pretraining_unit
from lalr_core.methods.pretrained.text.corpus import (
    DATASETS,
    LEXICONS,
    SPLIT_SIZES,
    classification_splits,
    pretraining_corpus,
)
from lalr_core.methods.pretrained.text.mlm import (
    MASK_RULES,
    heldout_masked,
    mask_tokens,
    masked_count,
    masked_lm_eval,
    masked_lm_loss,
)
from lalr_core.methods.pretrained.text.tinytf import (
    TinyTFClassifier,
    TinyTFConfig,
    TinyTFMLM,
    tied_mlm_logits,
)

NUM_CLASSES = 2
OOD_SPLITS = {"sent": "test_noise", "long": "test_noise", "stars": "test_noise",
              "acc": "test_deep"}
# RunConfig fields the text tasks do not read (the task names its data and its model)
UNREAD = ("dataset", "model", "width", "synthetic", "n_train", "n_val", "n_test", "split_seed",
          "augment", "augmix")
ARCH_FIELDS = ("n_blocks", "d_model", "n_heads", "d_ff")


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")


def reject_unread(cfg: RunConfig, who: str) -> None:
    """Raise ``ValueError`` if ``cfg`` sets one of the image fields (`UNREAD`) that a task
    building its own data and model (``who``) never reads."""
    defaults = {f.name: f.default for f in dataclasses.fields(RunConfig)}
    changed = [n for n in UNREAD if getattr(cfg, n) != defaults[n]]
    if changed:
        raise ValueError(f"{who} build their own data and model and read none of {changed}: "
                         f"leave them at their defaults")


@dataclass
class TextData:
    """A text task's tensors: ``splits[name] = (tokens, labels)`` (or ``(inputs, targets)``
    for MLM splits, ``(tokens, lengths)`` for the corpus), ``extras`` (e.g. the pretrained MLM
    bias) and ``host``: numpy values the batching reads without a device sync."""

    splits: dict[str, tuple[torch.Tensor, ...]]
    extras: dict[str, torch.Tensor] = field(default_factory=dict)
    host: dict[str, np.ndarray] = field(default_factory=dict)

    def to(self, device) -> TextData:
        return TextData({k: tuple(t.to(device) for t in v) for k, v in self.splits.items()},
                        {k: v.to(device) for k, v in self.extras.items()}, self.host)

    def split(self, name: str) -> tuple[torch.Tensor, ...]:
        if name not in self.splits:
            raise ValueError(f"unknown split {name!r}; this data has {sorted(self.splits)}")
        return self.splits[name]


@dataclass(frozen=True)
class TextTask(TaskConfig):
    """What both text tasks share: TinyTF's sizes and the data seed.

    Args:
        n_blocks: encoder blocks (2; 4 in X-L10; 2/4/8/16 in X-L1).
        d_model: width (32; 64 in X-L1).
        n_heads: attention heads.
        d_ff: feed-forward hidden width (2 * d_model by default).
        data_seed: which sequences are drawn (the language itself is fixed).
    """

    n_blocks: int = 2
    d_model: int = 32
    n_heads: int = 2
    d_ff: int = 64
    data_seed: int = 0
    eval_at_start = True

    def __post_init__(self):
        _check_int("data_seed", self.data_seed, 0)
        self.arch  # noqa: B018 - validates the sizes

    @property
    def arch(self) -> TinyTFConfig:
        return TinyTFConfig(d_model=self.d_model, n_heads=self.n_heads, n_blocks=self.n_blocks,
                            d_ff=self.d_ff)

    def check(self, cfg: RunConfig) -> None:
        """Raise ``ValueError`` if ``cfg`` sets a field the text tasks do not read."""
        reject_unread(cfg, "the text tasks")

    def channels_last(self, cfg: RunConfig) -> bool:
        return False


# ----------------------------------------------------------------------------- MLM
@TASKS.register("text_mlm")
@dataclass(frozen=True)
class MLMTask(TextTask):
    """Masked-token pretraining of TinyTF on the D-SYN-TXT corpus.

    Args:
        n_corpus: training sequences (half of length 16, half 48).
        n_val, n_test: held-out sequences (val: the forgetting set of X-L3).
        mask_rate: fraction of content positions predicted (0.15).
        mask_rule: ``"bert"`` (80 / 10 / 10) or ``"mask"`` (`mlm`).
    """

    name = "text_mlm"
    n_corpus: int = 4000
    n_val: int = 500
    n_test: int = 500
    mask_rate: float = 0.15
    mask_rule: str = "bert"

    def __post_init__(self):
        super().__post_init__()
        _check_int("n_corpus", self.n_corpus, 1)
        _check_int("n_val", self.n_val, 0)
        _check_int("n_test", self.n_test, 0)
        if not 0 < self.mask_rate < 1 or self.mask_rule not in MASK_RULES:
            raise ValueError(f"need 0 < mask_rate < 1 and mask_rule in {MASK_RULES}, got "
                             f"{self.mask_rate!r}, {self.mask_rule!r}")

    def heldout(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(inputs, targets)`` of the held-out ``"val"`` or ``"test"`` split, masks fixed."""
        n = self.n_val if split == "val" else self.n_test
        return heldout_masked(n, self.data_seed, split, self.mask_rate, self.mask_rule)

    def load(self, cfg: RunConfig, device: torch.device) -> TextData:
        self.check(cfg)
        tokens, lengths = pretraining_corpus(self.n_corpus, self.data_seed, "train")
        splits = {"train": (torch.as_tensor(tokens), torch.as_tensor(lengths)),
                  "val": self.heldout("val"), "test": self.heldout("test")}
        return TextData(splits, host={"lengths": lengths}).to(device)

    def build_model(self, cfg: RunConfig) -> TinyTFMLM:
        self.check(cfg)
        return TinyTFMLM(self.arch)

    def batches(self, cfg: RunConfig, data: TextData,
                generator: torch.Generator) -> Iterator[tuple]:
        """One pass in random order, each batch of one length, masked on the fly."""
        tokens, _ = data.split("train")
        lengths = data.host["lengths"]
        dev = generator.device
        plan = []  # (length, row indices) per batch
        for length in np.unique(lengths):
            rows = torch.as_tensor(np.flatnonzero(lengths == length), device=dev)
            rows = rows[torch.randperm(len(rows), generator=generator, device=dev)]
            plan += [(int(length), rows[i:i + cfg.batch_size])
                     for i in range(0, len(rows), cfg.batch_size)]
        for b in torch.randperm(len(plan), generator=generator, device=dev).tolist():
            L, rows = plan[b]
            k = masked_count(L - 1, self.mask_rate)
            inputs, targets = mask_tokens(tokens[rows.to(tokens.device), :L], k, generator,
                                          self.mask_rule)
            yield inputs, targets, len(rows) * k

    def loss(self, model: torch.nn.Module, batch: tuple, autocast, generator):
        inputs, targets, n_masked = batch
        with autocast:
            logits = model(inputs)
        loss, hits = masked_lm_loss(logits, targets)
        return loss, hits, n_masked

    def evaluate(self, cfg: RunConfig, model: torch.nn.Module, data: TextData, split: str):
        inputs, targets = data.split(split)
        was_training = model.training
        model.eval()
        try:
            return masked_lm_eval(model, inputs, targets, cfg.eval_batch_size)
        finally:
            model.train(was_training)


# ----------------------------------------------------------------------------- pretraining
def mlm_pretraining(cfg: RunConfig) -> RunConfig:
    """``cfg`` itself, checked to be a pretraining a fine-tuning may start from: a
    ``text_mlm`` run without methods (fetched through `lalr_core.core.runs.units.pretrained`).

    Raises:
        ValueError: another task, or a run with methods.
    """
    if not isinstance(cfg.task, MLMTask):
        raise ValueError(f"a pretraining must be a text_mlm run, got task {cfg.task.name!r}")
    pretraining_unit(cfg)  # refuses methods
    return cfg


def _pretrained_state(source) -> dict[str, torch.Tensor]:
    if isinstance(source, RunConfig):
        source = pretrained(mlm_pretraining(source))
    if not isinstance(source, Mapping) or "callbacks" not in source:
        raise ValueError(f"expected the MLM run's RunConfig or its result dict, got "
                         f"{type(source).__name__}")
    weights = source["callbacks"].get("weights")
    if not weights:
        raise LookupError("the run was trained without the 'weights' callback")
    return weights


def _part(state: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def pretrained_backbone(source: RunConfig | Mapping) -> dict[str, torch.Tensor]:
    """The pretrained encoder's state dict (``model.encoder.load_state_dict`` takes it).

    Args:
        source: the MLM run's `RunConfig` (looked up, trained on a miss) or its result dict.
    """
    return _part(_pretrained_state(source), "encoder.")


def pretrained_mlm_head(source: RunConfig | Mapping) -> dict[str, torch.Tensor]:
    """The pretrained MLM head's state dict (``{"bias": [64]}``; its weight is tied)."""
    return _part(_pretrained_state(source), "mlm_head.")


# ----------------------------------------------------------------------------- fine-tuning
@TASKS.register("text_classification")
@dataclass(frozen=True)
class SequenceClassificationTask(TextTask):
    """Binary classification of D-SYN-TXT sequences by TinyTF's [CLS] state.

    Args:
        dataset: ``"sent"``, ``"acc"``, ``"long"`` or ``"stars"``.
        n_train, n_val, n_test: examples per split (1000 / 500 / 1000).
        lexicon: ``"all"`` or ``"shift"`` (X-L15 ii: train / val on half the lexicon, test on
            the other half).
        pretrained: the MLM run (its `RunConfig` or key dict) whose encoder the model starts
            from; None = from scratch. Its sizes must equal this task's
            (`SequenceClassificationTask.from_pretrained` copies them).
    """

    name = "text_classification"
    dataset: str = "sent"
    n_train: int = SPLIT_SIZES["train"]
    n_val: int = SPLIT_SIZES["val"]
    n_test: int = SPLIT_SIZES["test"]
    lexicon: str = "all"
    pretrained: Any = None

    def __post_init__(self):
        super().__post_init__()
        if self.dataset not in DATASETS:
            raise ValueError(f"unknown text dataset {self.dataset!r}; choose one of {DATASETS}")
        if self.lexicon not in LEXICONS or (self.lexicon == "shift" and self.dataset == "acc"):
            raise ValueError(f"lexicon must be one of {LEXICONS} ('shift' not for acc), got "
                             f"{self.lexicon!r}")
        _check_int("n_train", self.n_train, 1)
        _check_int("n_val", self.n_val, 1)
        _check_int("n_test", self.n_test, 1)
        if self.pretrained is None:
            return
        pre = self.pretrained
        if isinstance(pre, Mapping):
            pre = RunConfig(**pre)
            object.__setattr__(self, "pretrained", pre)
        if not isinstance(pre, RunConfig):
            raise ValueError(f"pretrained must be the MLM run's RunConfig, its key dict or "
                             f"None, got {type(pre).__name__}")
        mlm_pretraining(pre)
        differ = [f for f in ARCH_FIELDS if getattr(pre.task, f) != getattr(self, f)]
        if differ:
            raise ValueError(f"the pretrained TinyTF differs in {differ}: use "
                             f"SequenceClassificationTask.from_pretrained")

    @classmethod
    def from_pretrained(cls, pretrained: RunConfig, **fields) -> SequenceClassificationTask:
        """The task with ``pretrained``'s TinyTF sizes."""
        arch = {f: getattr(pretrained.task, f) for f in ARCH_FIELDS}
        return cls(pretrained=pretrained, **{**arch, **fields})

    def key(self) -> dict[str, Any]:
        out = super().key()
        out["pretrained"] = None if self.pretrained is None else self.pretrained.key()
        return out

    @property
    def splits(self) -> tuple[str, ...]:
        """Every split `evaluate` and `correct` accept ("mlm" only with ``pretrained``)."""
        return ("train", "val", "test", OOD_SPLITS[self.dataset]) + \
            (("mlm",) if self.pretrained is not None else ())

    def data(self, device: torch.device | str = "cpu") -> TextData:
        """Every split, and with ``pretrained`` the forgetting set and the pretrained head."""
        found = classification_splits(self.dataset, self.n_train, self.n_val, self.n_test,
                                      self.data_seed, self.lexicon)
        splits = {k: (torch.as_tensor(X), torch.as_tensor(y)) for k, (X, y) in found.items()}
        extras = {}
        if self.pretrained is not None:
            splits["mlm"] = self.pretrained.task.heldout("val")
            extras["mlm_bias"] = pretrained_mlm_head(self.pretrained)["bias"]
        return TextData(splits, extras).to(device)

    def load(self, cfg: RunConfig, device: torch.device) -> TextData:
        self.check(cfg)
        return self.data(device)

    def build_model(self, cfg: RunConfig) -> TinyTFClassifier:
        self.check(cfg)
        backbone = None if self.pretrained is None else pretrained_backbone(self.pretrained)
        model = TinyTFClassifier(self.arch, NUM_CLASSES)
        if backbone is not None:
            model.encoder.load_state_dict(backbone)  # strict: exactly the pretrained encoder
        return model

    def batches(self, cfg: RunConfig, data: TextData,
                generator: torch.Generator) -> Iterator[tuple]:
        X, y = data.split("train")
        yield from iterate_batches(X, y, cfg.batch_size, shuffle=True, generator=generator)

    def loss(self, model: torch.nn.Module, batch: tuple, autocast, generator):
        return classification_loss(model, *batch, autocast)

    def evaluate_split(self, model: torch.nn.Module, data: TextData, split: str,
                       batch_size: int = 1000) -> tuple[float, float]:
        """``(loss, accuracy)`` on ``split``; for ``"mlm"`` the held-out MLM loss and
        masked-token accuracy of ``model.encoder`` with the pretrained MLM head."""
        if split != "mlm":
            return evaluate(model, *data.split(split), batch_size)
        inputs, targets = data.split("mlm")
        was_training = model.training
        model.eval()
        try:
            return masked_lm_eval(
                lambda x: tied_mlm_logits(model.encoder, data.extras["mlm_bias"], x),
                inputs, targets, batch_size)
        finally:
            model.train(was_training)

    def evaluate(self, cfg: RunConfig, model: torch.nn.Module, data: TextData, split: str):
        return self.evaluate_split(model, data, split, cfg.eval_batch_size)

    def correct(self, cfg: RunConfig, model: torch.nn.Module, data: TextData,
                split: str) -> np.ndarray:
        if split == "mlm":
            raise ValueError("per-example correctness is for classification splits")
        return correct_per_example(model, *data.split(split), cfg.eval_batch_size)


# ----------------------------------------------------------------------------- configs
def pretraining_config(*, seed: int = 0, epochs: int = 3, lr: float = 3e-3, wd: float = 0.01,
                       batch_size: int = 16, device: str = "auto", **task) -> RunConfig:
    """P-LALR's MLM run (3 epochs, 4000 sequences; our design); ``task``: `MLMTask` fields.

    The optimiser is ours too: AdamW, ``wd`` torch's
    default, lr 3e-3 and batch 16, the best of a small sweep (lr 1e-3..1e-2, batch 8..32;
    seed 0, 1 CPU thread, ~5 s): held-out MLM loss 3.77 / 3.57 / 3.35 after epochs 1-3
    (uniform guess: ln 61 = 4.11; 2.19 after 15 epochs at batch 32). Three epochs leave it far
    from converged: attention to neighbouring positions is learnt late.
    """
    return RunConfig(optimizer="adamw", lr=lr, wd=wd, batch_size=batch_size, epochs=epochs,
                     seed=seed, device=device, task=MLMTask(**task))


def finetuning_config(dataset: str = "sent", *, pretrained: RunConfig | None = None,
                      seed: int = 0, epochs: int = 6, lr: float = 1e-3, wd: float = 0.01,
                      batch_size: int = 32, methods: tuple = (), device: str = "auto",
                      **task) -> RunConfig:
    """A P-LALR fine-tuning (our protocol: AdamW 1e-3, batch 32, 6 epochs, ``wd`` 0.01).

    ``task``: further `SequenceClassificationTask` fields; the sizes come from
    ``pretrained`` when given.
    """
    spec = SequenceClassificationTask.from_pretrained(pretrained, dataset=dataset, **task) \
        if pretrained is not None else SequenceClassificationTask(dataset=dataset, **task)
    return RunConfig(optimizer="adamw", lr=lr, wd=wd, batch_size=batch_size, epochs=epochs,
                     seed=seed, device=device, methods=methods, task=spec)
