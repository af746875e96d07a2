"""Per-layer diagnostics of a run, every epoch: the measurements chapter 01's claims need.

Chapter 01's experiments (ours) X-L6 (one-epoch train-loss decreases), X-L7 (effective rank, weight
entropy and mean pairwise CS by scale tercile), X-L10 (per-layer probe accuracy), X-L11
(relative update vs scale), X-L13 (gradient and update norms, early vs late layers) and X-L14
(final accuracy of perturbed starts). The ``"layer_diagnostics"`` callback records, before the
first step (epoch 0) and after every epoch, for every layer of LALR's ``"module"`` grouping
(`grouping.layer_matrices`: same layers, same order):

* ``fro_norm`` ``||W_e||_F``; ``update_norm`` ``||W_e - W_{e-1}||_F`` and ``rel_update`` (that
  over ``||W_{e-1}||_F``; NaN at epoch 0);
* ``eff_rank`` ``exp(H(sigma / sum sigma))`` (Roy & Vetterli 2007; 0 for a zero matrix) and
  ``mean_sv``, the mean of all ``min(m, n)`` singular values;
* ``hist_entropy``: the entropy (nats) of the layer's weight histogram, exactly the
  distribution LALR's CE phase compares (64 bins shared by all layers, ``+ eps``,
  `metrics.weight_distributions`): the diagonal of its cross-entropy matrix;
* ``mean_cs``: the layer's mean cosine similarity to the others, LALR's raw CS metric
  (`metrics.cs_metric`, its default variant);
* ``raw_svd`` and ``raw_ce``: LALR's raw SVD and CE metrics (`metrics.svd_metric`,
  `metrics.ce_metric`, default variants), so a run trained *without* LALR (U) has the scales
  LALR would have given it (`analysis.uniform_table`: chapter 01's null of X-L7 and X-L12);
* ``grad_norm``: the mean over the epoch's steps of ``||dL/dW||_F`` (raw gradients, before
  clipping; NaN at epoch 0);

and per epoch the loss and accuracy on the whole train split in eval mode (``full_train_loss``,
the ``J`` of X-L6; the loop's ``history.train_loss`` is the mean of the minibatch losses while
the weights move). With ``probes=True`` (text classification tasks only) it also fits a ridge
probe (`ridge_probe_accuracy`) on TinyTF's [CLS] state after the embedding (point 0) and after
each encoder block (points 1..n_blocks): ``P(l, t)``, and ``G(t) = max_l P - min_l P``.

The epoch-0 record is taken at the first ``on_backward`` (the weights are those every
``on_train_start`` hook left, before any step), so an initial perturbation (`perturb`) is
seen whatever the order of the callbacks. `analysis` joins the result with LALR's table.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch
from torch import nn

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.core.loop.config import TASKS, plugin_config
from lalr_core.core.validation import check_int
from lalr_core.methods.layer_lr.lalr.grouping import layer_matrices
from lalr_core.methods.layer_lr.lalr.metrics import (
    cross_entropy_matrix,
    cs_metric,
    mean_off_diagonal,
    singular_values,
    svd_metric,
    weight_distributions,
)

LAYER_COLUMNS = ("fro_norm", "update_norm", "rel_update", "eff_rank", "mean_sv",
                 "hist_entropy", "mean_cs", "grad_norm", "raw_svd", "raw_ce")
WEIGHT_COLUMNS = ("eff_rank", "mean_sv", "hist_entropy", "mean_cs", "raw_svd", "raw_ce")
PROBE_N = 500        # X-L10 (our setting): probe fit on 500 train, scored on 500 val examples
RIDGE_ALPHA = 1.0    # ridge penalty on standardised features (ours)


# ----------------------------------------------------------------------------- pure helpers
def effective_rank(s: torch.Tensor) -> float:
    """``exp(H(p))``, ``p = s / sum s``, of singular values ``s`` (natural log, 0 log 0 = 0).

    Between 1 (rank one) and ``len(s)`` (all equal); 0 for a zero matrix.

    Example:
        >>> effective_rank(torch.tensor([2.0, 2.0, 0.0]))
        2.0
    """
    s = s.double()
    total = float(s.sum())
    if total <= 0:
        return 0.0
    p = s[s > 0] / total
    return float(torch.exp(-(p * p.log()).sum()))


def weight_diagnostics(weights: list[torch.Tensor]) -> dict[str, np.ndarray]:
    """``fro_norm``, ``eff_rank``, ``mean_sv``, ``hist_entropy``, ``mean_cs``, ``raw_svd``,
    ``raw_ce`` of every matrix.

    Args:
        weights: `[m_l, n_l]` layer matrices, in layer order (the shared histogram bins and
            the CS partners depend on the whole set).

    Returns:
        ``{column: [L] float64}``; NaN everywhere but ``fro_norm`` when a weight is not
        finite (a diverged run: no SVD of NaN).
    """
    L = len(weights)
    with torch.no_grad():
        out = {"fro_norm": np.array([float(torch.linalg.matrix_norm(w.double()))
                                     for w in weights])}
        if not all(bool(torch.isfinite(w).all()) for w in weights):
            return {**out, **{c: np.full(L, np.nan) for c in WEIGHT_COLUMNS}}
        svs = singular_values(weights)
        out["eff_rank"] = np.array([effective_rank(s) for s in svs])
        out["mean_sv"] = np.array([float(s.double().mean()) for s in svs])
        P = weight_distributions(weights, "hist")                      # (L, 64) as LALR's CE
        C = cross_entropy_matrix(P)
        out["hist_entropy"] = C.diagonal().double().cpu().numpy()
        out["mean_cs"] = cs_metric(weights)
        out["raw_svd"] = svd_metric(weights)
        out["raw_ce"] = mean_off_diagonal(C).double().cpu().numpy()     # = metrics.ce_metric
    return out


def ridge_probe_accuracy(X_train: np.ndarray, y_train: np.ndarray, X_val: np.ndarray,
                         y_val: np.ndarray, alpha: float = RIDGE_ALPHA) -> float:
    """Accuracy on ``(X_val, y_val)`` of a ridge classifier fit on ``(X_train, y_train)``.

    Closed form, as sklearn's ``RidgeClassifier``: features standardised with the train mean
    and std (a feature constant up to rounding is dropped); targets one-hot in {-1, +1}
    `[n, C]`; with an intercept (centred data), ``W = (Xc^T Xc + alpha I)^-1 Xc^T Yc``; the
    prediction is the class of the largest score.

    Args:
        X_train: `[n, d]` features; y_train: `[n]` labels (any integers).
        X_val: `[m, d]`; y_val: `[m]`.
        alpha: ridge penalty (> 0) on the standardised features.

    Returns:
        Fraction of ``y_val`` predicted; NaN when a feature is not finite.
    """
    X_train, X_val = np.asarray(X_train, np.float64), np.asarray(X_val, np.float64)
    y_train, y_val = np.asarray(y_train), np.asarray(y_val)
    if X_train.ndim != 2 or X_val.ndim != 2 or X_train.shape[1] != X_val.shape[1] \
            or len(X_train) != len(y_train) or len(X_val) != len(y_val) or not len(X_val):
        raise ValueError(f"need X_train [n, d], y_train [n], X_val [m, d], y_val [m] (m > 0); "
                         f"got {X_train.shape}, {y_train.shape}, {X_val.shape}, {y_val.shape}")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    if not (np.isfinite(X_train).all() and np.isfinite(X_val).all()):
        return float("nan")
    mu, sd = X_train.mean(0), X_train.std(0)
    const = sd <= 1e-9 * np.maximum(np.abs(mu), 1e-300)   # rounding noise of a constant
    sd[const] = 1.0
    Z, Zv = (X_train - mu) / sd, (X_val - mu) / sd
    Z[:, const], Zv[:, const] = 0.0, 0.0          # e.g. [CLS] after the embedding: no signal
    classes = np.unique(y_train)
    Y = np.where(y_train[:, None] == classes[None], 1.0, -1.0)          # (n, C)
    W = np.linalg.solve(Z.T @ Z + alpha * np.eye(Z.shape[1]), Z.T @ (Y - Y.mean(0)))
    scores = Zv @ W + Y.mean(0)                                          # Z is centred
    return float((classes[scores.argmax(1)] == y_val).mean())


@torch.no_grad()
def cls_states(encoder: nn.Module, tokens: torch.Tensor, batch_size: int = 1000
               ) -> list[np.ndarray]:
    """TinyTF's [CLS] (position 0) state after the embedding and after each block.

    Args:
        encoder: a `TinyTFEncoder` (anything with ``hidden_states(tokens)``).
        tokens: `[N, T]` token ids.

    Returns:
        ``n_blocks + 1`` float64 arrays `[N, d]`, read in eval mode.
    """
    was_training = encoder.training
    encoder.eval()
    try:
        parts = [[h[:, 0].double().cpu() for h in encoder.hidden_states(tokens[i:i + batch_size])]
                 for i in range(0, len(tokens), batch_size)]
    finally:
        encoder.train(was_training)
    return [torch.cat(p).numpy() for p in zip(*parts)]


def _layer_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """``{layer: its weight Parameter}`` in LALR's ``"module"`` order (for the gradients)."""
    modules, params = dict(model.named_modules()), dict(model.named_parameters())
    return {n: modules[n].weight if n in modules else params[n] for n in layer_matrices(model)}


# ----------------------------------------------------------------------------- the callback
@CALLBACKS.register("layer_diagnostics")
class LayerDiagnostics:
    """Per-layer weight, gradient and probe diagnostics at epoch 0 and after every epoch.

    Args:
        task: the run's task (``cfg.task.key()``); needed for ``train_loss`` and ``probes``.
        train_loss: record the loss / accuracy on the whole train split in eval mode (the
            task must evaluate a ``"train"`` split: the text classification task does).
        probes: X-L10's ridge probes on TinyTF's [CLS] states (text classification only).
        probe_train, probe_val: probe examples: the first ones of the train / val split (all
            of it when the split is smaller).
        ridge_alpha: the probes' ridge penalty on standardised features.
        batch_size: evaluation batch size.

    Result (``result["callbacks"]["layer_diagnostics"]``), a dict of DataFrames:

    * ``"layers"``: ``epoch, position, layer, <LAYER_COLUMNS>`` (``position`` = index in the
      layer order, 0 = first); row ``epoch = e`` is the state after ``e`` epochs, so its
      ``rel_update`` / ``grad_norm`` belong to 0-based epoch ``e - 1``, trained with LALR's
      scales of its table's row ``epoch = e - 1``;
    * ``"epochs"``: ``epoch, full_train_loss, full_train_acc`` (NaN without ``train_loss``),
      ``probe_min, probe_max, probe_gap`` (NaN without probes), ``seconds`` (this callback's
      time at that boundary; on_backward's share is not counted);
    * ``"probes"``: ``epoch, point, acc`` (point 0 = after the embedding, k = after block k).
      The [CLS] state after the embedding is the same for every sequence (token and position
      fixed), so point 0 always scores the train subset's majority-class rate on val, and
      ``probe_gap`` (the gap G over all points) is ``probe_max`` minus that rate; the
      gap over the blocks alone is ``max - min`` of points >= 1 of this table.

    Raises:
        ValueError: bad settings; ``train_loss`` or ``probes`` without a task that supports
            them.
    """

    name = "layer_diagnostics"

    def __init__(self, task: Mapping | str | None = None, train_loss: bool = True,
                 probes: bool = False, probe_train: int = PROBE_N, probe_val: int = PROBE_N,
                 ridge_alpha: float = RIDGE_ALPHA, batch_size: int = 1000):
        for flag, value in (("train_loss", train_loss), ("probes", probes)):
            if not isinstance(value, bool):
                raise ValueError(f"{flag} must be true or false, got {value!r}")
        self.task = None if task is None else plugin_config(task, TASKS)
        if (train_loss or probes) and self.task is None:
            raise ValueError("train_loss and probes need the run's task: pass "
                             "task=cfg.task.key(), or train_loss=False")
        if train_loss and not self._has_train_split(self.task):
            raise ValueError(f"task {self.task.name!r} cannot evaluate its train split (needs "
                             "'train' in task.splits, task.data(device) and "
                             "task.evaluate_split); pass train_loss=False")
        if probes and not (self._has_train_split(self.task)
                           and self.task.name == "text_classification"):
            raise ValueError(f"probes read TinyTF's [CLS] states: they need a "
                             f"text_classification task, got {self.task.name!r}")
        if isinstance(ridge_alpha, bool) or not isinstance(ridge_alpha, (int, float)) \
                or not ridge_alpha > 0:
            raise ValueError(f"ridge_alpha must be a number > 0, got {ridge_alpha!r}")
        self.train_loss, self.probes = train_loss, probes
        self.probe_train = check_int(probe_train, "probe_train", 2)
        self.probe_val = check_int(probe_val, "probe_val", 1)
        self.batch_size = check_int(batch_size, "batch_size", 1)
        self.ridge_alpha = float(ridge_alpha)
        self.layer_rows: list[tuple] = []
        self.epoch_rows: list[tuple] = []
        self.probe_rows: list[tuple] = []
        self.previous: dict[str, torch.Tensor] = {}   # CPU copies of the last recorded weights
        self._data = None
        self._weights: dict[str, torch.Tensor] | None = None
        self._grad_sum: torch.Tensor | None = None
        self._steps = 0

    @staticmethod
    def _has_train_split(task) -> bool:
        return "train" in getattr(task, "splits", ()) and hasattr(task, "data") \
            and hasattr(task, "evaluate_split")

    # ------------------------------------------------------------------ hooks
    def on_backward(self, model: nn.Module) -> None:
        if not self.epoch_rows:                      # before the first step: the start state
            self._record(model, 0)
        if self._weights is None:
            self._weights = _layer_weights(model)
        norms = torch.stack([p.grad.detach().float().norm() if p.grad is not None
                             else torch.zeros((), device=p.device)
                             for p in self._weights.values()])
        self._grad_sum = norms if self._grad_sum is None else self._grad_sum + norms
        self._steps += 1

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        if not self.epoch_rows:                      # an epoch without a step
            self._record(model, 0)
        self._record(model, int(row["epoch"]))

    # ------------------------------------------------------------------ records
    @torch.no_grad()
    def _record(self, model: nn.Module, epoch: int) -> None:
        t0 = time.perf_counter()
        mats = layer_matrices(model)
        names, weights = list(mats), list(mats.values())
        stats = weight_diagnostics(weights)
        current = {n: w.detach().float().cpu().clone() for n, w in mats.items()}
        upd, rel = np.full(len(names), np.nan), np.full(len(names), np.nan)
        if epoch > 0:
            for i, n in enumerate(names):
                upd[i] = float(torch.linalg.matrix_norm((current[n] - self.previous[n]).double()))
                rel[i] = upd[i] / float(torch.linalg.matrix_norm(self.previous[n].double()))
        grads = np.full(len(names), np.nan)
        if epoch > 0 and self._steps:
            grads = (self._grad_sum / self._steps).double().cpu().numpy()
        self._grad_sum, self._steps, self.previous = None, 0, current
        cols = {**stats, "update_norm": upd, "rel_update": rel, "grad_norm": grads}
        self.layer_rows += [(epoch, i, n, *(float(cols[c][i]) for c in LAYER_COLUMNS))
                            for i, n in enumerate(names)]
        loss = acc = np.nan
        if self.train_loss or self.probes:
            data = self._task_data(model)
        if self.train_loss:
            loss, acc = self.task.evaluate_split(model, data, "train", self.batch_size)
        gap = (np.nan,) * 3
        if self.probes:
            P = np.asarray(self._probe(model, data))                # NaN propagates
            self.probe_rows += [(epoch, k, float(p)) for k, p in enumerate(P)]
            gap = (float(P.min()), float(P.max()), float(P.max() - P.min()))
        self.epoch_rows.append((epoch, loss, acc, *gap, time.perf_counter() - t0))

    def _task_data(self, model: nn.Module):
        if self._data is None:
            self._data = self.task.data(next(model.parameters()).device)
        return self._data

    def _probe(self, model: nn.Module, data) -> list[float]:
        encoder = getattr(model, "encoder", None)
        if not callable(getattr(encoder, "hidden_states", None)):
            raise ValueError(f"probes need a model with encoder.hidden_states (TinyTF), got "
                             f"{type(model).__name__}")
        (Xt, yt), (Xv, yv) = data.split("train"), data.split("val")
        Xt, yt, Xv, yv = Xt[:self.probe_train], yt[:self.probe_train], \
            Xv[:self.probe_val], yv[:self.probe_val]
        train_states = cls_states(encoder, Xt, self.batch_size)
        val_states = cls_states(encoder, Xv, self.batch_size)
        return [ridge_probe_accuracy(a, yt.cpu().numpy(), b, yv.cpu().numpy(), self.ridge_alpha)
                for a, b in zip(train_states, val_states)]

    # ------------------------------------------------------------------ result and state
    def result(self) -> dict[str, pd.DataFrame]:
        return {
            "layers": pd.DataFrame(self.layer_rows,
                                   columns=["epoch", "position", "layer", *LAYER_COLUMNS]),
            "epochs": pd.DataFrame(self.epoch_rows,
                                   columns=["epoch", "full_train_loss", "full_train_acc",
                                            "probe_min", "probe_max", "probe_gap", "seconds"]),
            "probes": pd.DataFrame(self.probe_rows, columns=["epoch", "point", "acc"]),
        }

    def state_dict(self) -> dict:
        # saved after on_epoch_end, when no gradient sum is pending
        return {"layer_rows": list(self.layer_rows), "epoch_rows": list(self.epoch_rows),
                "probe_rows": list(self.probe_rows), "previous": dict(self.previous)}

    def load_state_dict(self, state: dict) -> None:
        self.layer_rows, self.epoch_rows = list(state["layer_rows"]), list(state["epoch_rows"])
        self.probe_rows, self.previous = list(state["probe_rows"]), dict(state["previous"])
        self._grad_sum, self._steps = None, 0
