"""The class-gradient assumptions measured along an ordinary training run (chapter 05, figs
4.7, 4.8, 4.9 and E.1).

Source: Mark Tuddenham, *Advancing differentiable program optimisation via novel first and
second-order metrics, and adaptive optimisation strategies*, PhD thesis, University of
Southampton, 2026 (`[Tuddenham2026]` in REFERENCES.md), sec. 4.3.6 and app. E.3. The metrics
themselves are `lalr_core.methods.class_subspace.assumptions`'s (`q_lc`, `q_sl`, `q_gc`,
`subspace_rank`, `assignment_cosine`); this module computes their inputs during a run and keeps
the records.

The ``"class_subspace_probe"`` callback (`ClassSubspaceProbe`) records:

* **q^LC** (eqs. 4.36-4.39, fig 4.7) at fixed checkpoints (the start, then every ``lc_every``
  steps and / or every ``lc_every_epochs`` epochs) on a fixed probe set: the first
  ``lc_per_class`` training examples of each class. Per example it takes the gradient and the
  Hessian of the example's own-class logit with respect to every trainable parameter
  (``torch.func``; exact) and stores ``f``, ``u`` and ``u / f^2``. For networks too large for a
  ``P x P`` Hessian, ``lc_columns = m`` estimates ``u`` from ``m`` random Hessian columns
  (forward-over-reverse Hessian-vector products with unit vectors; the mean ``|H_ij|`` over
  ``i != j`` of those columns, which by symmetry estimates the mean over the strict upper
  triangle; the thesis does not say how it obtained the logit Hessians of its 6.5M-parameter
  ResNet-9). The columns come from the callback's own generator, seeded
  by ``seed`` and the step, so the run's random streams are not touched.
* **q^SL** (eq. 4.40, fig 4.8) every ``sl_every`` steps (and at the start) on the first
  ``sl_per_class`` training examples of each class: per-example own-class logit gradients
  (``vmap(grad)``), then `q_sl` class by class.
* **q^GC** (eq. 4.41, fig 4.9) at every step, from the batch's own class gradients
  ``c_k^B`` (eq. 4.34, right; fig 4.9 is "plotted for each batch"): both the printed
  normalisation (half the mean pairwise cosine, ``q_gc(printed=True)``) and the true mean over
  pairs, over the classes present in the batch.
* **E.1's directions**: the normalised class gradients ``v_k = c_k^B / ||c_k^B||`` of every
  ``store_every``-th step, float32 ``C x P``, with the class counts (an absent class has a zero
  row and count 0). After the run, `rank_series`, `assignment_series`, `span_energy_series`
  and `top_hessian_eigenvectors` give fig E.1 (a) and (b).

How the batch's class gradients are obtained without touching the loop or the training (the
quasi-Newton optimiser's own `gradients.ClassGradientTap`): a forward hook on the model
keeps the logits ``z`` of each training-mode, grad-enabled forward and puts a tensor hook on
them. During the loop's ``loss.backward()`` that hook receives ``dL/dz``, recovers the labels
from it (`gradients.labels_from_logit_grad`: mean cross-entropy only) and computes
``c_k^B`` by one vector-Jacobian product per present class on the graph that is still alive
(`gradients.class_gradients_from_logits`). With batch norm in train mode this is the class
gradient of the forward as it ran. The products go to ``torch.autograd.grad``, never to
``.grad``.

Guarantees (tested): the run's weights are bit-identical with and without the callback; the
probes run in eval mode on float64 copies of the parameters through ``functional_call`` (no
module is changed, every mode is restored, batch-norm statistics are not updated, no random
number is drawn from a global generator); a resumed run has the same records. A step whose
loss is not a mean cross-entropy of the logits, or a non-finite state, gives NaN rows, not an
error.

*[choice]* points where the source is open, each named where it is used: the probe examples
are the first ones of each class in the training split (a fixed set, so that every record
measures the same examples); ``N`` in eq. 4.40 is ``N_k`` (so that each class's mean cosine is
over its own pairs); q^GC uses the per-batch class gradients of the classes present (a class
absent from a batch has no class gradient there); per-example probes use eval mode (in train
mode batch norm makes one example's logits depend on the rest of its batch); float64 for the
probes (Hessians and small cosines lose digits in float32).

One module (over 400 lines) on purpose: the probe and the per-record functions it calls
(functional logits, logit curvature, rank and assignment series) share one functional model and
one probe set.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, hessian, jvp, vmap

from lalr_core.core.data import load_data
from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.runs.threads import at_run_threads
from lalr_core.core.torch_compat import load_jvp_decompositions
from lalr_core.core.validation import check_int
from lalr_core.methods.class_subspace import assumptions, gradients

load_jvp_decompositions()  # this module's jvp calls would warn once (torch, not ours)

__all__ = [
    "EXACT_LIMIT",
    "NAME",
    "ClassSubspaceProbe",
    "FunctionalLogit",
    "assignment_series",
    "batch_gc",
    "data_spec",
    "logit_curvature",
    "own_logit_grads",
    "probe_indices",
    "q_lc_by_step",
    "q_sl_by_step",
    "rank_series",
    "same_class_similarity",
    "span_energy_series",
    "top_hessian_eigenvectors",
]

NAME = "class_subspace_probe"
# Exact per-example Hessians (and dense loss Hessians) are P x P: refused above this many
# parameters (1,338 for the digits' BasicCNN; 6.5M for ResNet-9, where ``lc_columns`` is used).
EXACT_LIMIT = 6000
_DTYPES = {"float64": torch.float64, "float32": torch.float32}
_DATA_KEYS = ("dataset", "n_train", "n_val", "n_test", "split_seed", "synthetic")


# ----------------------------------------------------------------------------- helpers
def data_spec(cfg: RunConfig) -> dict:
    """The ``data`` argument of `ClassSubspaceProbe` for a run: the fields of ``cfg`` that fix
    its training split (``load_data``'s arguments), so the probe examples are the run's own."""
    return {k: getattr(cfg, k) for k in _DATA_KEYS}


def probe_indices(y: torch.Tensor, per_class: int, num_classes: int) -> torch.Tensor:
    """Positions of the first ``per_class`` examples of each class in ``y`` (class by class;
    fewer for a class with fewer examples). *[choice]* A fixed set, the same at every record,
    as the source's figures follow one run, so that every record measures the same examples."""
    if isinstance(per_class, bool) or not isinstance(per_class, int) or per_class < 1:
        raise ValueError(f"per_class must be an int >= 1, got {per_class!r}")
    y = y.detach().cpu()
    parts = [(y == k).nonzero().flatten()[:per_class] for k in range(num_classes)]
    return torch.cat(parts)


@contextlib.contextmanager
def _eval_mode(model: nn.Module):
    """Eval mode for the block; every module's own mode is restored after it."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for m, mode in modes:
            m.training = mode


class FunctionalLogit:
    """``z_k(theta; x)``: one example's logit ``k`` (selected by a one-hot row) as a function of
    the model's trainable parameters flattened into ``theta`` (``named_parameters`` order, as
    `gradients.class_gradients` and `curvature.dense_hessian`).

    Frozen parameters and buffers are fixed at their current values cast to ``dtype`` (integer
    buffers as they are); ``theta`` is a copy. Call it inside `_eval_mode`, where nothing writes
    to a buffer: the module's own tensors are never changed.
    """

    def __init__(self, model: nn.Module, dtype: torch.dtype = torch.float64):
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("the model has no trainable parameters")
        self.model, self.dtype = model, dtype
        self.names = [n for n, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.sizes = [p.numel() for _, p in named]
        with torch.no_grad():
            self.theta = torch.cat([p.detach().reshape(-1).to(dtype) for _, p in named])
            fixed = {n: p.detach().to(dtype) for n, p in model.named_parameters()
                     if not p.requires_grad}
            fixed.update({n: b.detach().to(dtype) if b.is_floating_point() else b
                          for n, b in model.named_buffers()})
        self.fixed = fixed

    @property
    def num_parameters(self) -> int:
        return int(self.theta.numel())

    def logits(self, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        values = {n: t.view(s) for n, t, s in
                  zip(self.names, torch.split(theta, self.sizes), self.shapes, strict=True)}
        return functional_call(self.model, {**self.fixed, **values}, (x.to(self.dtype),))

    def __call__(self, theta: torch.Tensor, x: torch.Tensor, onehot: torch.Tensor) -> torch.Tensor:
        return (self.logits(theta, x.unsqueeze(0))[0] * onehot).sum()

    def onehot(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            C = self.logits(self.theta, x[:1]).shape[1]
        gradients._check_labels(y, len(y), C)
        return F.one_hot(y, C).to(self.dtype)


def _dtype(name) -> torch.dtype:
    if name not in _DTYPES:
        raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {name!r}")
    return _DTYPES[name]


# ----------------------------------------------------------------------------- the probes
def own_logit_grads(model: nn.Module, X: torch.Tensor, y: torch.Tensor,
                    dtype: torch.dtype = torch.float64, chunk_size: int | None = 64
                    ) -> torch.Tensor:
    """Per-example gradients of each example's own-class logit, ``(N, P)``, in eval mode, by
    ``vmap(grad)`` on a ``dtype`` copy of the parameters. The same quantity as
    `assumptions.own_logit_gradients` (one backward per example, in the model's dtype)."""
    with _eval_mode(model):
        f = FunctionalLogit(model, dtype)
        if len(X) == 0:
            return torch.zeros((0, f.num_parameters), dtype=dtype)
        oh = f.onehot(X, y)
        return vmap(grad(f), in_dims=(None, 0, 0), chunk_size=chunk_size)(
            f.theta, X.to(dtype), oh)


def logit_curvature(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *,
                    columns: int | None = None, generator: torch.Generator | None = None,
                    dtype: torch.dtype = torch.float64) -> pd.DataFrame:
    """Per-example terms of q^LC (eqs. 4.36-4.38) for each example's own-class logit.

    Exact (``columns=None``): the ``P x P`` logit Hessian by ``torch.func.hessian`` and the ratio
    ``u / f^2`` from `assumptions.q_lc` on that one example. Sampled (``columns=m``): ``m``
    distinct random columns ``j`` (``generator``; the same columns for every example) of the
    Hessian as Hessian-vector products ``H e_j``; ``u`` is the mean ``|H_ij|`` over those columns
    and ``i != j``. With all ``P`` columns this is the exact ``u``, since ``H`` is symmetric.

    Returns:
        DataFrame ``label, f, u, ratio``, one row per example in the order of ``X``.

    Raises:
        ValueError: ``columns`` outside ``[1, P]``; an exact Hessian above `EXACT_LIMIT`
            parameters.
    """
    with _eval_mode(model):
        f = FunctionalLogit(model, dtype)
        P = f.num_parameters
        if columns is None and P > EXACT_LIMIT:
            raise ValueError(f"an exact logit Hessian has P^2 = {P}^2 entries (P > "
                             f"{EXACT_LIMIT}); pass columns=m to sample m Hessian columns")
        if columns is not None and (isinstance(columns, bool) or not isinstance(columns, int)
                                    or not 1 <= columns <= P):
            raise ValueError(f"columns must be None or an int in [1, {P}], got {columns!r}")
        if P < 2:
            raise ValueError("q^LC needs P >= 2 parameters")
        oh = f.onehot(X, y)
        Xd = X.to(dtype)
        rows = []
        if columns is not None:
            J = torch.randperm(P, generator=generator)[:columns].to(f.theta.device)
            basis = torch.zeros((columns, P), dtype=dtype, device=f.theta.device)
            basis[torch.arange(columns), J] = 1
        for i in range(len(X)):
            g = grad(f)(f.theta, Xd[i], oh[i])
            fi = float(g.abs().sum() / P)
            if columns is None:
                H = hessian(f)(f.theta, Xd[i], oh[i])
                ratio = assumptions.q_lc(g.unsqueeze(0), H.unsqueeze(0), y[i:i + 1].cpu())
                ui = float(torch.triu(H, diagonal=1).abs().sum() * 2 / (P * (P - 1)))
            else:
                def hvp(e, x=Xd[i], o=oh[i]):
                    return jvp(lambda th: grad(f)(th, x, o), (f.theta,), (e,))[1]
                rows_J = vmap(hvp)(basis)                                   # H[J, :]
                diag = rows_J[torch.arange(columns), J].abs().sum()
                ui = float((rows_J.abs().sum() - diag) / (columns * (P - 1)))
                ratio = ui / fi**2 if fi > 0 else float("nan")
            rows.append((int(y[i]), fi, ui, float(ratio)))
    return pd.DataFrame(rows, columns=["label", "f", "u", "ratio"])


def same_class_similarity(model: nn.Module, X: torch.Tensor, y: torch.Tensor,
                          dtype: torch.dtype = torch.float64) -> pd.DataFrame:
    """The per-class terms of q^SL (eq. 4.40): for each class with >= 2 examples,
    `assumptions.q_sl` on its examples' own-class logit gradients (*[choice]* ``N = N_k``: eq.
    4.40 prints N). q^SL is the mean of ``q_sl`` over the rows, as `assumptions.q_sl` on all
    examples at once. One class at a time keeps the memory at ``N_k x P``.

    Returns:
        DataFrame ``label, n, q_sl``.
    """
    rows = []
    for k in y.unique().tolist():
        idx = (y == k).nonzero().flatten()
        if len(idx) < 2:
            continue
        G = own_logit_grads(model, X[idx], y[idx], dtype)
        rows.append((int(k), len(idx), assumptions.q_sl(G, y[idx].cpu())))
    return pd.DataFrame(rows, columns=["label", "n", "q_sl"])


def batch_gc(G: torch.Tensor, counts: torch.Tensor) -> tuple[float, float, int]:
    """``(q^GC printed (eq. 4.41), mean pairwise cosine, classes present)`` of one batch's class
    gradients ``G`` (``C x P``) over the classes present (*[choice]*: an absent class has no
    class gradient in that batch). NaN
    with fewer than 2 present classes or a non-finite gradient."""
    present = (counts > 0).nonzero().flatten()
    Gp = G[present].double()
    if len(present) < 2 or not bool(torch.isfinite(Gp).all()) \
            or not bool((torch.linalg.vector_norm(Gp, dim=1) > 0).all()):
        return float("nan"), float("nan"), len(present)
    return assumptions.q_gc(Gp, printed=True), assumptions.q_gc(Gp, printed=False), len(present)


# ----------------------------------------------------------------------------- summaries
def q_lc_by_step(lc: pd.DataFrame) -> pd.DataFrame:
    """q^LC per record (eq. 4.39: the mean over classes of the per-class mean ratio) from the
    callback's ``"lc"`` table: ``step, epoch, q_lc``."""
    if lc.empty:
        return pd.DataFrame(columns=["step", "epoch", "q_lc"])
    per_class = lc.groupby(["step", "epoch", "label"])["ratio"].mean()
    return per_class.groupby(["step", "epoch"]).mean().rename("q_lc").reset_index()


def q_sl_by_step(sl: pd.DataFrame) -> pd.DataFrame:
    """q^SL per record (eq. 4.40: the mean over classes) from the ``"sl"`` table."""
    if sl.empty:
        return pd.DataFrame(columns=["step", "epoch", "q_sl"])
    return sl.groupby(["step", "epoch"])["q_sl"].mean().reset_index()


def _present_rows(directions: np.ndarray, counts: np.ndarray, t: int) -> torch.Tensor:
    V = torch.as_tensor(np.asarray(directions[t]), dtype=torch.float64)
    return V[torch.as_tensor(np.asarray(counts[t]) > 0)]


def rank_series(directions: np.ndarray, counts: np.ndarray, E: torch.Tensor,
                rtol: float = assumptions.RANK_RTOL) -> np.ndarray:
    """Fig E.1a: per stored step, `assumptions.subspace_rank` of the present classes'
    directions stacked with the eigenvectors ``E`` (``k x P``, rows). NaN where a direction is
    not finite."""
    out = np.full(len(directions), np.nan)
    for t in range(len(directions)):
        V = _present_rows(directions, counts, t)
        if len(V) and bool(torch.isfinite(V).all()):
            out[t] = assumptions.subspace_rank(V, E.double(), rtol)
    return out


def assignment_series(directions: np.ndarray, counts: np.ndarray, E: torch.Tensor) -> np.ndarray:
    """Per stored step, the Hungarian mean ``|cos|`` (`assumptions.assignment_cosine`) between
    the present classes' directions and the eigenvectors ``E``."""
    out = np.full(len(directions), np.nan)
    for t in range(len(directions)):
        V = _present_rows(directions, counts, t)
        if len(V) and bool(torch.isfinite(V).all()):
            out[t] = assumptions.assignment_cosine(V, E.double())[0]
    return out


def span_energy_series(directions: np.ndarray, counts: np.ndarray, E: torch.Tensor) -> np.ndarray:
    """Per stored step, the mean over the present classes of ``||E v_k||^2`` (``v_k`` scaled to
    unit norm): the fraction of each class-gradient direction that lies in the span of the orthonormal rows of ``E`` (1: inside
    it; about ``k / P`` for a random direction). A tolerance-free companion of `rank_series`."""
    out = np.full(len(directions), np.nan)
    Ed = E.double()
    for t in range(len(directions)):
        V = _present_rows(directions, counts, t)
        if len(V) and bool(torch.isfinite(V).all()):
            V = V / torch.linalg.vector_norm(V, dim=1, keepdim=True)
            out[t] = float(((V @ Ed.T) ** 2).sum(1).mean())
    return out


@at_run_threads  # called from a kernel too (fig E.1): pinned like the runs
def top_hessian_eigenvectors(model: nn.Module, X: torch.Tensor, y: torch.Tensor, k: int, *,
                             dense_limit: int = EXACT_LIMIT,
                             tol: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """The top-``k`` (largest) eigenpairs of the Hessian of the mean cross-entropy of ``model``
    on ``(X, y)``, eval mode, in the model's dtype: ``(values (k,) descending, vectors (k, P))``.

    Up to ``dense_limit`` parameters the full eigensystem of `curvature.dense_hessian` (the
    source's "full eigensystem", E.3); above it ARPACK Lanczos on the curvlinops Hessian
    (`curvature.top_eigenpairs`: a dense Hessian of ~60k parameters, the thesis's E.3 CNN,
    would take 29 GB in float64), to relative accuracy ``tol`` (0: machine precision).
    """
    from lalr_core.methods.curvature import operators as cv  # late: curvlinops is a heavy import

    loss = nn.CrossEntropyLoss()
    P = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if P <= dense_limit:
        H = cv.dense_hessian(model, loss, X, y)
        vals, vecs = torch.linalg.eigh(0.5 * (H + H.T))
        order = torch.argsort(vals, descending=True)[:k]
        return vals[order], vecs[:, order].T.contiguous()
    pairs = cv.top_eigenpairs(cv.curvature_operator(model, loss, [(X, y)]), k=k, which="LA",
                              tol=tol)
    return pairs.values, pairs.vectors.T.contiguous()


# ----------------------------------------------------------------------------- the callback
@CALLBACKS.register(NAME)
class ClassSubspaceProbe:
    """q^LC, q^SL, q^GC and the normalised per-batch class gradients along a run (module
    docstring).

    Args:
        data: the run's data as ``load_data`` arguments (`data_spec(cfg)`): the probe sets are
            the first examples of each class in its training split.
        lc_every: q^LC every this many steps (0: not by steps).
        lc_every_epochs: q^LC after every this many epochs (0: not by epochs). With either, q^LC
            is also recorded at the start (step 0).
        lc_per_class: q^LC's probe examples per class (chapter 05: 2).
        lc_columns: None for exact logit Hessians; ``m`` to sample ``m`` Hessian columns.
        sl_every: q^SL every this many steps and at the start (0: never; chapter 05: 10).
        sl_per_class: q^SL's probe examples per class (chapter 05: 20).
        gc: record q^GC at every step (needs the class gradients: C extra VJPs per step).
        store_every: keep the normalised class gradients of every this many steps (0: never).
        store_first: ... and of every one of the first this many steps (E.1a's early decline
            at a coarse ``store_every``).
        dtype: ``"float64"`` or ``"float32"``: the probes' arithmetic.
        seed: seed of the sampled Hessian columns (with the step).

    Result (``result["callbacks"]["class_subspace_probe"]``), a dict:

    * ``"lc"``: DataFrame ``step, epoch, index, label, f, u, ratio`` (one row per probe
      example and record; ``index`` in the training split); `q_lc_by_step` gives fig 4.7.
    * ``"sl"``: DataFrame ``step, epoch, label, n, q_sl``; `q_sl_by_step` gives fig 4.8.
    * ``"gc"``: DataFrame ``step, epoch, classes, q_gc, q_gc_pairs`` (one row per step; printed
      eq. 4.41 and the mean over pairs, fig 4.9).
    * ``"directions"``: float32 ``(T, C, P)``, unit rows ``c_k^B/||c_k^B||`` (zero rows for
      absent classes); ``"direction_steps"`` ``(T,)``; ``"direction_counts"`` ``(T, C)``.
    * ``"probe"``: ``{"lc": [...], "sl": [...]}``, the training-split indices used;
      ``"num_parameters"``: P; ``"missed_steps"``: steps whose class gradients could not be
      taken (not a mean cross-entropy, non-finite logits).

    Steps count optimiser steps: step ``s`` is the state after ``s`` steps for q^LC / q^SL and
    the batch of step ``s`` (1-based) for q^GC and the directions. ``epoch`` is the epoch the
    step belongs to (0 for the start).
    """

    name = NAME

    def __init__(self, data: Mapping, lc_every: int = 0, lc_every_epochs: int = 0,
                 lc_per_class: int = 2, lc_columns: int | None = None, sl_every: int = 10,
                 sl_per_class: int = 20, gc: bool = True, store_every: int = 1,
                 store_first: int = 0, dtype: str = "float64", seed: int = 0):
        if not isinstance(data, Mapping) or "dataset" not in data \
                or set(data) - set(_DATA_KEYS):
            raise ValueError(f"data must be a mapping of load_data arguments with 'dataset' "
                             f"(keys among {_DATA_KEYS}; see data_spec), got {data!r}")
        if not isinstance(gc, bool):
            raise ValueError(f"gc must be true or false, got {gc!r}")
        if lc_columns is not None:
            check_int(lc_columns, "lc_columns", 1)
        self.data = dict(data)
        self.lc_every = check_int(lc_every, "lc_every", 0)
        self.lc_every_epochs = check_int(lc_every_epochs, "lc_every_epochs", 0)
        self.lc_per_class = check_int(lc_per_class, "lc_per_class", 1)
        self.lc_columns = lc_columns
        self.sl_every = check_int(sl_every, "sl_every", 0)
        self.sl_per_class = check_int(sl_per_class, "sl_per_class", 2)
        self.gc = gc
        self.store_every = check_int(store_every, "store_every", 0)
        self.store_first = check_int(store_first, "store_first", 0)
        self.dtype = _dtype(dtype)
        self.seed = check_int(seed, "seed", 0)
        # records (the checkpointed state)
        self.step, self.epoch = 0, 0
        self.started = False
        self.lc_rows: list[tuple] = []
        self.sl_rows: list[tuple] = []
        self.gc_rows: list[tuple] = []
        self.dir_steps: list[int] = []
        self.dirs: list[torch.Tensor] = []
        self.dir_counts: list[torch.Tensor] = []
        self.missed = 0
        # transient
        self._probe: dict | None = None
        self._pending: tuple[torch.Tensor, torch.Tensor] | None = None
        self._params: list[torch.Tensor] = []
        self._tap = gradients.ClassGradientTap(self._on_class_gradients, lambda: self._params)

    @property
    def wants_class_gradients(self) -> bool:
        return self.gc or self.store_every > 0 or self.store_first > 0

    # ------------------------------------------------------------------ hooks of the loop
    def on_train_start(self, model: nn.Module) -> None:
        self._tap.detach()
        self._params = [p for p in model.parameters() if p.requires_grad]
        if self.wants_class_gradients:
            self._tap.attach(model)
        self._load_probe(model)

    def on_backward(self, model: nn.Module) -> None:
        if not self.started:                       # the state before the first step
            self.started = True
            self._record_probes(model, 0, lc=self._lc_scheduled(), sl=self.sl_every > 0)
        if not self.wants_class_gradients:
            return
        step, pending = self.step + 1, self._pending
        self._pending, self._tap.logits = None, None
        if pending is None:
            self.missed += 1
            if self.gc:
                self.gc_rows.append((step, self.epoch + 1, 0, math.nan, math.nan))
            return
        G, counts = pending
        if self.gc:
            q_print, q_pairs, present = batch_gc(G, counts)
            self.gc_rows.append((step, self.epoch + 1, present, q_print, q_pairs))
        if step <= self.store_first or (self.store_every and step % self.store_every == 0):
            norms = torch.linalg.vector_norm(G.double(), dim=1, keepdim=True)
            V = torch.where(norms > 0, G.double() / torch.where(norms > 0, norms, 1.0), 0.0)
            self.dir_steps.append(step)
            self.dirs.append(V.float().cpu())
            self.dir_counts.append(counts.cpu())

    def on_step(self, model: nn.Module) -> None:
        self.step += 1
        lc = bool(self.lc_every and self.step % self.lc_every == 0)
        sl = bool(self.sl_every and self.step % self.sl_every == 0)
        self._record_probes(model, self.epoch + 1, lc=lc, sl=sl)

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        self.epoch = int(row["epoch"])
        if self.lc_every_epochs and self.epoch % self.lc_every_epochs == 0 \
                and not (self.lc_rows and self.lc_rows[-1][0] == self.step):
            self._record_probes(model, self.epoch, lc=True, sl=False)

    # ------------------------------------------------------------------ class gradients
    def _on_class_gradients(self, z, params, grads, counts) -> None:
        # (another backward through z, a probe's or the QN optimiser's VJPs, is refused by
        # the tap's label check and left alone)
        self._pending = (gradients._flat_rows([g.detach() for g in grads]), counts.detach())

    # ------------------------------------------------------------------ probes
    def _lc_scheduled(self) -> bool:
        return bool(self.lc_every or self.lc_every_epochs)

    def _load_probe(self, model: nn.Module) -> None:
        if self._probe is not None or not (self._lc_scheduled() or self.sl_every):
            return
        d = load_data(self.data["dataset"], **{k: v for k, v in self.data.items()
                                               if k != "dataset"}, device="cpu")
        device = next(model.parameters()).device
        C = d.num_classes
        lc = probe_indices(d.y_train, self.lc_per_class, C)
        sl = probe_indices(d.y_train, self.sl_per_class, C)
        self._probe = {name: (idx.tolist(), d.X_train[idx].to(device), d.y_train[idx].to(device))
                       for name, idx in (("lc", lc), ("sl", sl))}

    def _record_probes(self, model: nn.Module, epoch: int, *, lc: bool, sl: bool) -> None:
        """Record q^LC and / or q^SL of the current weights; ``epoch`` is the epoch of the last
        step (0 at the start)."""
        if not (lc or sl):
            return
        finite = all(bool(torch.isfinite(p).all()) for p in self._params)
        with self._tap.quiet(), torch.random.fork_rng(devices=[]):  # fork: belt and braces,
            if lc:                                                    # it draws none
                self._record_lc(model, epoch, finite)
            if sl:
                self._record_sl(model, epoch, finite)

    def _record_lc(self, model: nn.Module, epoch: int, finite: bool) -> None:
        index, X, y = self._probe["lc"]
        if finite:
            gen = None
            if self.lc_columns is not None:
                gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.step)
            df = logit_curvature(model, X, y, columns=self.lc_columns, generator=gen,
                                 dtype=self.dtype)
            values = df[["f", "u", "ratio"]].itertuples(index=False)
        else:
            values = [(math.nan,) * 3] * len(index)
        self.lc_rows += [(self.step, epoch, i, int(lab), *map(float, v))
                         for i, lab, v in zip(index, y.tolist(), values, strict=True)]

    def _record_sl(self, model: nn.Module, epoch: int, finite: bool) -> None:
        _, X, y = self._probe["sl"]
        if finite:
            df = same_class_similarity(model, X, y, self.dtype)
            rows = df.itertuples(index=False)
        else:
            rows = [(int(k), int((y == k).sum()), math.nan) for k in y.unique().tolist()]
        self.sl_rows += [(self.step, epoch, int(k), int(n), float(q)) for k, n, q in rows]

    # ------------------------------------------------------------------ results and state
    def result(self) -> dict:
        self._tap.detach()
        P = sum(p.numel() for p in self._params)
        dirs = (torch.stack(self.dirs).numpy() if self.dirs
                else np.zeros((0, 0, P), dtype=np.float32))
        counts = (torch.stack(self.dir_counts).numpy() if self.dir_counts
                  else np.zeros((0, 0), dtype=np.int64))
        probe = {k: v[0] for k, v in (self._probe or {}).items()}
        return {
            "lc": pd.DataFrame(self.lc_rows, columns=["step", "epoch", "index", "label", "f",
                                                      "u", "ratio"]),
            "sl": pd.DataFrame(self.sl_rows, columns=["step", "epoch", "label", "n", "q_sl"]),
            "gc": pd.DataFrame(self.gc_rows, columns=["step", "epoch", "classes", "q_gc",
                                                      "q_gc_pairs"]),
            "directions": dirs,
            "direction_steps": np.asarray(self.dir_steps, dtype=np.int64),
            "direction_counts": counts,
            "probe": probe,
            "num_parameters": int(P),
            "missed_steps": int(self.missed),
        }

    def state_dict(self) -> dict:
        return {"step": self.step, "epoch": self.epoch, "started": self.started,
                "lc_rows": list(self.lc_rows), "sl_rows": list(self.sl_rows),
                "gc_rows": list(self.gc_rows), "dir_steps": list(self.dir_steps),
                "dirs": list(self.dirs), "dir_counts": list(self.dir_counts),
                "missed": self.missed}

    def load_state_dict(self, state: dict) -> None:
        self.step, self.epoch, self.started = state["step"], state["epoch"], state["started"]
        self.lc_rows, self.sl_rows = list(state["lc_rows"]), list(state["sl_rows"])
        self.gc_rows, self.dir_steps = list(state["gc_rows"]), list(state["dir_steps"])
        self.dirs, self.dir_counts = list(state["dirs"]), list(state["dir_counts"])
        self.missed = state["missed"]
