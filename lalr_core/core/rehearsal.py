"""Rehearsal: every notebook run to its end on its real grid, each run as short as at smoke.

``make figures PROFILE=paper REHEARSE=1`` (the driver's ``--rehearse``) sets ``$LALR_REHEARSE``
for the notebook kernels. A rehearsing notebook builds the profile's grid (models, widths,
datasets and their shapes, tasks, methods, callbacks, optimisers, seeds, sweeps) and runs the
same figure, table and check code on it as a real run, so that code meets the paper grid
before a GPU hour is spent. What is cut is the length of everything, in a few places:

* `lalr_core.core.runs.chapter.Chapter.settings` takes the chapter's *length* settings
  (``Chapter.rehearsal``: epochs, steps, example counts, windows, milestones, sample sizes)
  from its smoke profile (and ``Chapter.rehearsal_values`` below them, for grids of wide
  models) and keeps every other setting of the profile; the settings' own checks then hold
  the shortened lengths consistent (a window shorter than the run, say);
* `lalr_core.core.runs.units.train_runs` trains one run per distinct shape (`shape_key`: the
  run without its `NOT_SHAPE` entries: seeds, lr, momentum, weight decay, schedule; and its
  callbacks without the arguments each names in ``not_shape``: `units.rehearsal_shape`) and
  hands its result, under each run's own config, to the others of that shape;
* `lalr_core.core.data.load_data` draws synthetic data of the dataset's real shapes and classes
  where the real data is absent (CIFAR on an offline machine), and loads at most `SPLIT_CAP`
  training and `EVAL_CAP` validation and test examples (a profile's "the whole test set" is a
  length too: evaluating 10,000 images each epoch was most of a wide model's rehearsed run);
* `lalr_core.core.runs.cache.RunCache` keeps its entries beside the real cache
  (``<root>-rehearsal``), never in it;
* `lalr_core.core.results.writer.FigureWriter` stamps "REHEARSAL" on every figure and
  ``"rehearsal": true`` in every sidecar and check record; REPORT.md says so beside each
  verdict.

Nothing a rehearsal computes is a result.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REHEARSE_ENV = "LALR_REHEARSE"  # "1": this process (and the kernels it starts) rehearses
SPLIT_CAP = 512  # training examples a rehearsal loads, at most
EVAL_CAP = 32    # validation and test examples a rehearsal loads, at most (each)
# Run-config entries that change a run's numbers but not its shapes: runs that differ only in
# these share one rehearsed result.
NOT_SHAPE = ("seed", "split_seed", "lr", "momentum", "betas", "wd", "nesterov", "lr_decay",
             "clip_grad_norm", "schedule", "milestones", "optimizer_params")
# What a rehearsal is, in one phrase (REPORT.md's note and the results index both quote it)
DESCRIPTION = ("the profile's grid (models, widths, data shapes, methods, seeds, sweeps) with "
               "every length (epochs, steps, example counts, windows) cut to the smoke "
               "profile's, one training run per distinct shape (its result shared by the runs "
               "that differ only in seed or optimiser settings), on synthetic data where the real "
               "data is absent, to test the figure, table and check code before the real run")


def active() -> bool:
    """Whether this process rehearses (``$LALR_REHEARSE`` is ``1``)."""
    return os.environ.get(REHEARSE_ENV, "0") == "1"


def shape_key(unit: Mapping[str, Any],
              not_shape: Mapping[str, Sequence[str]] | None = None) -> str:
    """The shape of a training unit ``{"run": key, "callbacks": {...}}``: its canonical JSON
    without the `NOT_SHAPE` entries of the run, nor the arguments ``not_shape`` names for each
    callback kind (values that change its numbers, not its code path or tensor shapes: a
    pruning's per-layer ratios, say; `lalr_core.core.runs.units` reads them from the callbacks'
    ``not_shape``). Units of one shape share a rehearsed result."""
    from lalr_core.core.atomic_io import canonical_json

    not_shape = not_shape or {}
    run = {k: v for k, v in unit["run"].items() if k not in NOT_SHAPE}
    callbacks = {kind: {k: v for k, v in spec.items() if k not in not_shape.get(kind, ())}
                 for kind, spec in unit["callbacks"].items()}
    return canonical_json({**unit, "run": run, "callbacks": callbacks})


def sibling_root(root: str | os.PathLike) -> Path:
    """Where a rehearsal keeps its run cache: beside ``root`` (``<root>-rehearsal``)."""
    root = Path(root)
    return root if root.name.endswith("-rehearsal") else root.with_name(root.name + "-rehearsal")
