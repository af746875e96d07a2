"""Chapter 08's tasks: an image classifier trained from scratch, or chapter 01's TinyTF
fine-tuned from its masked-LM pretraining; each with a fixed epoch budget.

A `Task` holds what every contender shares on it (data, model, batch, epochs, weight decay);
`base_config` is its run before a contender's changes (`contenders.changes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from lalr_core.core.data import check_dataset_name
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.models.networks import check_model_name
from lalr_core.methods.pretrained.text import tasks as text

KINDS = ("image", "text")
TEXT_DATASETS = ("sent", "acc")   # chapter 01's TinyTF fine-tuning tasks


@dataclass(frozen=True)
class Task:
    """One task of the comparison.

    Attributes:
        kind: ``"image"`` (from scratch) or ``"text"`` (TinyTF fine-tuned).
        dataset: an image dataset (`lalr_core.core.data`) or a TinyTF task (``TEXT_DATASETS``).
        model, width, augment: the image network (image tasks only).
        n_train, n_val, n_test: examples (``None``: the whole split; image tasks only).
        batch_size, epochs, wd: the same for every contender (wd: each optimiser's own
            weight-decay form: L2 in SGDM's family, decoupled in AdamW's, LAMB's and Muon's).
        mlm_epochs, mlm_corpus, mlm_heldout: the TinyTF pretraining (text tasks only).
    """

    kind: str
    dataset: str
    n_train: int | None
    n_val: int
    n_test: int | None
    batch_size: int
    epochs: int
    wd: float
    model: str = "tinytf"
    width: float = 1.0
    augment: bool = False
    mlm_epochs: int = 0
    mlm_corpus: int = 0
    mlm_heldout: int = 0

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"task kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "image":
            check_dataset_name(self.dataset)
            check_model_name(self.model)
        else:
            if self.dataset not in TEXT_DATASETS:
                raise ValueError(f"a text task's dataset must be one of {TEXT_DATASETS}, "
                                 f"got {self.dataset!r}")
            if min(self.mlm_epochs, self.mlm_corpus, self.mlm_heldout) <= 0:
                raise ValueError("a text task needs mlm_epochs, mlm_corpus and mlm_heldout > 0")
            if self.n_train is None or self.n_test is None:
                raise ValueError("a text task needs n_train and n_test (its corpus is generated)")
        for name in ("n_train", "n_test"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
                raise ValueError(f"task {name} must be a positive int or None, got {v!r}")
        for name in ("n_val", "batch_size", "epochs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"task {name} must be a positive int, got {v!r}")
        if not self.width > 0 or self.wd < 0:
            raise ValueError(f"task width must be > 0 and wd >= 0, got {self.width}, {self.wd}")


def task_of(name: str, spec: Mapping) -> Task:
    """``spec`` (a setting's dict) as a `Task`; a bad field raises ``ValueError`` naming it."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"task {name!r} must be a mapping of Task fields, got {spec!r}")
    known = {f.name for f in fields(Task)}
    if unknown := sorted(set(spec) - known):
        raise ValueError(f"task {name!r}: unknown fields {unknown}; known: {sorted(known)}")
    try:
        return Task(**spec)
    except TypeError as e:
        raise ValueError(f"task {name!r}: {e}") from None
    except ValueError as e:
        raise ValueError(f"task {name!r}: {e}") from None


def pretraining(task: Task) -> RunConfig | None:
    """The masked-LM run a text task fine-tunes from (chapter 01's, so one cached unit)."""
    if task.kind != "text":
        return None
    return text.pretraining_config(epochs=task.mlm_epochs, n_corpus=task.mlm_corpus,
                                   n_val=task.mlm_heldout, n_test=task.mlm_heldout)


def base_config(task: Task, seed: int, synthetic: bool = False) -> RunConfig:
    """The task's run with ``seed`` before a contender's changes (optimiser, lr, methods)."""
    if task.kind == "text":
        return text.finetuning_config(task.dataset, pretrained=pretraining(task), seed=seed,
                                      epochs=task.epochs, wd=task.wd,
                                      batch_size=task.batch_size, n_train=task.n_train,
                                      n_val=task.n_val, n_test=task.n_test, lexicon="all")
    return RunConfig(dataset=task.dataset, synthetic=synthetic, n_train=task.n_train,
                     n_val=task.n_val, n_test=task.n_test, augment=task.augment,
                     model=task.model, width=task.width, batch_size=task.batch_size,
                     epochs=task.epochs, wd=task.wd, seed=seed)
