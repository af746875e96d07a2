"""Full fine-tuning of a Hugging Face ``transformers`` encoder as a task of the one loop.

`HFSequenceClassificationTask` (``"hf_text_classification"``) fine-tunes every weight of
``AutoModelForSequenceClassification`` (2 labels) on GLUE SST-2 or CoLA with cross-entropy,
so a per-layer method (e.g. LALR, whose layers are the encoder's ``nn.Linear`` /
``nn.Embedding`` modules) runs on a real pretrained encoder with no code of its own.

The optional extra ``nlp`` (``pip install -e '.[nlp]'``) provides ``transformers`` and
``datasets``. They are imported inside the functions that use them, so ``import lalr_core``
(and the registry's discovery of this module) works without them; a run of this task
without them raises `ModuleNotFoundError` naming the extra. Weights, tokenizer and data come
from the Hugging Face hub: offline they must already be in the HF cache, else the run stops
with an `OSError` that names what is missing.

``tiny=True`` needs no download: a randomly initialised 2-block BERT (RoBERTa when
``model_name`` names one) of width 32 on synthetic sequences with a learnable rule (tests,
CI, checking a method on this code path).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from lalr_core.core.data import iterate_batches
from lalr_core.core.loop.config import TASKS, RunConfig, TaskConfig
from lalr_core.methods.pretrained.text.tasks import TextData, reject_unread

GLUE = "nyu-mll/glue"  # GLUE's canonical hub id (formerly "glue")
GLUE_TASKS = ("sst2", "cola")  # both binary, one "sentence" column
NUM_LABELS = 2
# tiny=True: the family is the first of these in model_name; sizes of the test encoder
TINY_FAMILIES = ("roberta", "bert")
TINY_ARCH = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=64)
TINY_SPLIT = 512   # tiny examples per split where n_train / n_test is None
PAD, START, CUE = 0, 1, 2  # tiny token ids; content tokens are 3 .. vocab_size - 1
INSTALL_HINT = "pip install -e '.[nlp]'"


def _need(module: str):
    """``module`` imported, or `ModuleNotFoundError` saying how to install the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ModuleNotFoundError(f"the task 'hf_text_classification' needs {module!r}, from "
                                  f"the optional extra 'nlp': {INSTALL_HINT}") from e


@contextlib.contextmanager
def _from_hub(what: str):
    """Re-raise the libraries' download failures (all `OSError`s: offline mode, no route,
    not in the cache, no such id) as one error that names ``what`` and says what to do."""
    try:
        yield
    except OSError as e:
        raise OSError(f"could not load the {what} from the Hugging Face hub: the machine "
                      f"must be online (and the id exist), or have it in the Hugging Face "
                      f"cache (HF_HOME); the library said: {e}") from e


def _check_count(name: str, value, low: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}{' or None' * allow_none}, "
                         f"got {value!r}")


def tiny_split(n: int, max_length: int, seed: int, split: str
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ids, mask, labels)`` of ``n`` synthetic sequences: ``START``, then content tokens
    (lengths uniform in ``[max_length // 2, max_length]``, padded with ``PAD``); a sequence
    is labelled 1 (a fair coin) exactly when it holds the token ``CUE`` (at a uniform
    position after ``START``), so the labels are random yet learnable."""
    rng = np.random.default_rng([seed, ("train", "val", "test").index(split)])
    labels = rng.integers(0, NUM_LABELS, n)
    lengths = rng.integers(max(2, max_length // 2), max_length + 1, n)
    ids = rng.integers(CUE + 1, TINY_ARCH["vocab_size"], (n, max_length))
    ids[:, 0] = START
    cued = np.flatnonzero(labels == 1)
    ids[cued, rng.integers(1, lengths[cued])] = CUE
    mask = np.arange(max_length) < lengths[:, None]
    ids[~mask] = PAD
    return torch.as_tensor(ids), torch.as_tensor(mask, dtype=torch.long), torch.as_tensor(labels)


@TASKS.register("hf_text_classification")
@dataclass(frozen=True)
class HFSequenceClassificationTask(TaskConfig):
    """Binary classification of GLUE sentences by a fine-tuned ``transformers`` encoder.

    GLUE's test labels are hidden, so our ``"test"`` split is GLUE's validation split (the
    first ``n_test`` examples) and our ``"val"`` is ``n_val`` examples held out of GLUE's
    train split (a ``data_seed`` permutation; ``"train"`` is the next ``n_train``).

    Args:
        model_name: hub id of the pretrained encoder and its tokenizer (e.g.
            ``"roberta-base"``); with ``tiny`` only its family counts.
        dataset: ``"sst2"`` or ``"cola"``.
        n_train: training examples (None = all of GLUE train but val).
        n_val: held-out examples of GLUE train.
        n_test: examples of GLUE validation (None = all).
        max_length: tokens per sentence (longer ones are truncated).
        data_seed: which train / val examples (tiny: which sequences).
        tiny: no download: `TINY_ARCH` randomly initialised, ``tiny_split`` data
            (None sizes: `TINY_SPLIT`), for tests and CI.

    ``RunConfig.model`` and its image-data fields are not read and must keep their defaults
    (one computation, one cache key), as for the other text tasks.
    """

    name = "hf_text_classification"
    model_name: str = "roberta-base"
    dataset: str = "sst2"
    n_train: int | None = None
    n_val: int = 500
    n_test: int | None = None
    max_length: int = 128
    data_seed: int = 0
    tiny: bool = False
    eval_at_start = True
    splits = ("train", "val", "test")

    def __post_init__(self):
        if not isinstance(self.model_name, str) or not self.model_name:
            raise ValueError(f"model_name must be a hub id, got {self.model_name!r}")
        if self.dataset not in GLUE_TASKS:
            raise ValueError(f"unknown GLUE task {self.dataset!r}; choose one of {GLUE_TASKS}")
        _check_count("n_train", self.n_train, 1, allow_none=True)
        _check_count("n_val", self.n_val, 1)
        _check_count("n_test", self.n_test, 1, allow_none=True)
        _check_count("max_length", self.max_length, 2)
        _check_count("data_seed", self.data_seed, 0)
        if not isinstance(self.tiny, bool):
            raise ValueError(f"tiny must be true or false, got {self.tiny!r}")  # noqa: TRY004
        if self.tiny:
            self.tiny_family  # noqa: B018 - validates model_name

    @property
    def tiny_family(self) -> str:
        """The ``transformers`` model type of the tiny encoder."""
        found = [f for f in TINY_FAMILIES if f in self.model_name.lower()]
        if not found:
            raise ValueError(f"tiny=True builds one of {TINY_FAMILIES}: model_name must "
                             f"contain one, got {self.model_name!r}")
        return found[0]

    def check(self, cfg: RunConfig) -> None:
        """Raise ``ValueError`` if ``cfg`` sets a field this task does not read."""
        reject_unread(cfg, "hf_text_classification runs")

    def channels_last(self, cfg: RunConfig) -> bool:
        return False

    # ------------------------------------------------------------------------- data
    def data(self, device: torch.device | str = "cpu") -> TextData:
        """``splits[name] = (token ids, attention mask, labels)`` for train / val / test."""
        if self.tiny:
            sizes = {"train": self.n_train, "val": self.n_val, "test": self.n_test}
            return TextData({s: tiny_split(n or TINY_SPLIT, self.max_length, self.data_seed, s)
                             for s, n in sizes.items()}).to(device)
        datasets = _need("datasets")
        transformers = _need("transformers")
        with _from_hub(f"GLUE task {self.dataset!r} (hub id {GLUE!r})"):
            glue = datasets.load_dataset(GLUE, self.dataset)
        with _from_hub(f"tokenizer {self.model_name!r}"):
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.model_name)
        tokenizer.padding_side = "right"  # what `_batches`' trimming assumes
        train, test = glue["train"], glue["validation"]
        n_train = len(train) - self.n_val if self.n_train is None else self.n_train
        n_test = len(test) if self.n_test is None else self.n_test
        if self.n_val + n_train > len(train) or n_test > len(test):
            raise ValueError(f"GLUE {self.dataset} has {len(train)} train and {len(test)} "
                             f"validation examples; asked for n_val + n_train = "
                             f"{self.n_val + n_train} and n_test = {n_test}")
        order = np.random.default_rng(self.data_seed).permutation(len(train))
        rows = {"val": (train, order[:self.n_val]),
                "train": (train, order[self.n_val:self.n_val + n_train]),
                "test": (test, np.arange(n_test))}
        splits = {}
        for split, (source, index) in rows.items():
            part = source.select(index)
            enc = tokenizer(list(part["sentence"]), truncation=True, max_length=self.max_length,
                            padding=True, return_tensors="pt")
            splits[split] = (enc["input_ids"], enc["attention_mask"],
                             torch.as_tensor(list(part["label"])))
        return TextData(splits).to(device)

    def load(self, cfg: RunConfig, device: torch.device) -> TextData:
        self.check(cfg)
        return self.data(device)

    # ------------------------------------------------------------------------- model
    def build_model(self, cfg: RunConfig) -> torch.nn.Module:
        """The pretrained encoder with a new 2-way head (seeded by the loop), in float32
        whatever the checkpoint's dtype (``cfg.bf16`` autocasts); tiny: random weights."""
        self.check(cfg)
        transformers = _need("transformers")
        auto = transformers.AutoModelForSequenceClassification
        if self.tiny:
            config = transformers.AutoConfig.for_model(
                self.tiny_family, **TINY_ARCH, pad_token_id=PAD, num_labels=NUM_LABELS,
                max_position_embeddings=self.max_length + 2)  # RoBERTa's start after PAD
            return auto.from_config(config)
        with _from_hub(f"model {self.model_name!r}"):
            return auto.from_pretrained(self.model_name, num_labels=NUM_LABELS).float()

    # ------------------------------------------------------------------------- steps
    @staticmethod
    def _batches(data: TextData, split: str, batch_size: int, shuffle: bool,
                 generator: torch.Generator | None = None) -> Iterator[tuple]:
        """``(ids, mask, labels)`` batches, cut to their longest sequence: padding is on the
        right (tiny data and our tokenizer), so the columns dropped are masked everywhere (GLUE sentences are mostly far
        shorter than ``max_length``; one host sync per batch buys that compute back)."""
        ids, mask, labels = data.split(split)
        rows = torch.arange(len(labels), device=labels.device)
        for idx, yb in iterate_batches(rows, labels, batch_size, shuffle=shuffle,
                                       generator=generator):
            mb = mask[idx]
            width = int(mb.sum(1).max())
            yield ids[idx, :width], mb[:, :width], yb

    def batches(self, cfg: RunConfig, data: TextData,
                generator: torch.Generator) -> Iterator[tuple]:
        yield from self._batches(data, "train", cfg.batch_size, True, generator)

    def loss(self, model: torch.nn.Module, batch: tuple, autocast, generator):
        ids, mask, y = batch
        with autocast:
            logits = model(input_ids=ids, attention_mask=mask).logits
            loss = F.cross_entropy(logits.float(), y)
        return loss, (logits.detach().argmax(1) == y).sum(), len(y)

    @torch.no_grad()
    def _predictions(self, model: torch.nn.Module, data: TextData, split: str,
                     batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """float32 logits and labels of the whole split, in eval mode (no dropout)."""
        was_training = model.training
        model.eval()
        try:
            out = [(model(input_ids=ids, attention_mask=mask).logits.float(), y)
                   for ids, mask, y in self._batches(data, split, batch_size, False)]
        finally:
            model.train(was_training)
        return torch.cat([o[0] for o in out]), torch.cat([o[1] for o in out])

    def evaluate(self, cfg: RunConfig, model: torch.nn.Module, data: TextData, split: str):
        """``(mean cross-entropy, accuracy)`` on ``split``."""
        logits, y = self._predictions(model, data, split, cfg.eval_batch_size)
        return F.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()

    def correct(self, cfg: RunConfig, model: torch.nn.Module, data: TextData,
                split: str) -> np.ndarray:
        logits, y = self._predictions(model, data, split, cfg.eval_batch_size)
        return (logits.argmax(1) == y).cpu().numpy()
