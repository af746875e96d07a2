"""The ``"text_splits"`` callback: extra splits of a text classification run, every epoch.

X-L15's OOD tests (``test_noise`` / ``test_deep``) and X-L3's forgetting (``"mlm"``: the
held-out MLM loss with the pretrained head reattached) are measured on the run's model as it
trains, so a sweep need not keep every model's weights. The splits come from the task itself
(`lalr_core.methods.pretrained.text.tasks.SequenceClassificationTask.data`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from lalr_core.core.loop.callbacks import CALLBACKS, SplitHistory
from lalr_core.core.loop.config import TASKS, plugin_config
from lalr_core.core.loop.tasks import correct_per_example
from lalr_core.methods.pretrained.text.tasks import SequenceClassificationTask, TextData


@CALLBACKS.register("text_splits")
class TextSplitProbe(SplitHistory):
    """``(loss, acc)`` of a classification run on extra splits, at step 0 and every epoch.

    For X-L15's OOD tests (``test_noise`` / ``test_deep``) and X-L3's forgetting (``"mlm"``)
    without keeping every model. ``task`` must be the run's task (its key dict).

    Result: ``{"history": DataFrame(epoch, split, loss, acc), "correct": {split: bool array
    of the last record}}`` (no per-example array for ``"mlm"``).
    """

    name = "text_splits"

    def __init__(self, task: Mapping, splits: Sequence[str] = ("mlm",),
                 batch_size: int = 1000):
        self.task = plugin_config(task, TASKS)
        if not isinstance(self.task, SequenceClassificationTask):
            raise ValueError(f"text_splits needs a text_classification task, got "
                             f"{self.task.name!r}")
        unknown = [splits] if isinstance(splits, str) else \
            sorted(set(splits) - set(self.task.splits))
        if unknown:
            raise ValueError(f"splits must be a list of {self.task.splits}, got {unknown}")
        super().__init__()
        self.splits, self.batch_size = tuple(splits), int(batch_size)
        self._data: TextData | None = None

    def _record(self, model: torch.nn.Module, epoch: int) -> None:
        if self._data is None:
            self._data = self.task.data(next(model.parameters()).device)
        for split in self.splits:
            loss, acc = self.task.evaluate_split(model, self._data, split, self.batch_size)
            self.rows.append({"epoch": epoch, "split": split, "loss": loss, "acc": acc})
            if split != "mlm":
                self.hits[split] = correct_per_example(model, *self._data.split(split),
                                                       self.batch_size)
