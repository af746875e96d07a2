"""Curvature of a network's loss as matrix-free linear operators (chapter 05; `[Tuddenham2026]`
ch. 4, see REFERENCES.md).

Chapter 05 needs Hessian-vector products (eq. 4.12), top Hessian eigenpairs (App. E.3, Fig. E.1),
power iteration against Lanczos (sec. 4.4.1, Fig. 4.12), traces and spectral densities
(eqs. 4.13-4.14), and Hessian-vector products inside optimisers. Hand-written versions of these
are where reproductions go wrong (PyHessian, for one, calls ``eig`` on symmetric matrices and
mutates its inputs). So the operators come from ``curvlinops`` (f-dangel/curvlinops, MIT,
<https://github.com/f-dangel/curvlinops>): Hessian, generalised Gauss-Newton (GGN) and empirical Fisher (EF). Its Hutchinson trace and
Papyan-2020 Lanczos density estimators are used as they are, and the top eigenpairs come from
scipy's ARPACK ``eigsh``. This module wires them together, counts matrix-vector products (the cost
unit of the power-iteration-versus-Lanczos comparison) and fixes the conventions below.

Power iteration is not here: it is `lalr_core.methods.curvature.top_eigen.power_iteration`, the library's
one implementation, which takes these operators directly. For the comparison with Lanczos
(``top_eigenpairs``) call it with ``estimate="rayleigh"`` (the signed Rayleigh quotient ``v^T A v``
rather than Listing F.1's ``||A v||``) and ``rtol`` (PyHessian's relative stopping rule); it takes
one product per iterate, and ``matvecs_to_tolerance`` reads the cost of an accuracy from its
``values``.

Conventions:
    * An operator is the curvature of the loss over all of ``data``. A ``"mean"`` loss weights
      each batch by its size over ``N`` (curvlinops' convention), so the batching does not change
      the matrix.
    * Operators evaluate the model in **eval mode**, whatever mode it is in when a product is
      taken; the modules' modes are restored after each forward. In train mode, batch norm uses
      the statistics of the mini-batch, so one sample's loss depends on the other samples in its
      batch. The "Hessian of the data loss" would then depend on how the data is cut into
      batches. The forward pass would also update the running statistics in place, and the
      ``torch.func`` transforms that curvlinops uses refuse that ("attempted to call in-place
      operation ... that would mutate a captured Tensor"). Dropout would make the products
      random. PyHessian also uses eval mode.
    * ``hvp_function`` is the one hand-written piece: a double-backward HVP (Pearlmutter,
      eq. 4.12) for a single batch. Optimisers need the curvature of the train-mode mini-batch
      loss, which curvlinops cannot represent (see above), and they reuse one autograd graph for
      several products. It runs train mode on a copy of the buffers, so calling it leaves the
      running statistics unchanged. Where both apply (eval mode), the tests check it against
      curvlinops.
    * Eigenpairs are sorted descending (``"LA"``: by value; ``"LM"``: by magnitude).
      Eigenvectors are unit columns with arbitrary sign.
    * Device and dtype follow the model's parameters. Floating-point inputs and targets are cast
      to the parameters' dtype. curvlinops moves each batch to the parameters' device.

One module (over 400 lines) on purpose: every operator, eigen-solver, trace and density here is
built on the same curvlinops operator of a model and a loss.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.linalg import eigsh
from torch import nn
from torch.func import functional_call

from lalr_core.core.validation import check_int

# curvlinops imports gpytorch's linear_operator, whose @torch.jit.script emits a FutureWarning
# on torch >= 2.10; it is not ours to fix. (The first forward-mode product in a process emits the
# same warning from torch's own jvp decompositions: see `core.torch_compat`.)
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*torch.jit.script.*", category=FutureWarning)
    from curvlinops import (
        EFLinearOperator,
        GGNLinearOperator,
        HessianLinearOperator,
        hutchinson_trace,
        lanczos_approximate_spectrum,
    )

    # The operator base class is only exported from this module (curvlinops 3.0.1).
    from curvlinops._torch_base import PyTorchLinearOperator

CURVATURES = ("hessian", "ggn", "ef")
_OPERATORS = {"hessian": HessianLinearOperator, "ggn": GGNLinearOperator, "ef": EFLinearOperator}
# the losses curvlinops' empirical Fisher supports
_EF_LOSSES = (nn.MSELoss, nn.CrossEntropyLoss, nn.BCEWithLogitsLoss)

Operator = PyTorchLinearOperator | torch.Tensor


# ----------------------------------------------------------------------------- validation
def _check_positive(x, name: str, *, allow_zero: bool = False) -> float:
    if (isinstance(x, bool) or np.ndim(x) != 0 or not np.isfinite(x) or x < 0
            or (x == 0 and not allow_zero)):
        raise ValueError(f"{name} must be a finite {'non-negative' if allow_zero else 'positive'} "
                         f"scalar, got {x!r}")
    return float(x)


def _model_params(model: nn.Module, params) -> list[nn.Parameter]:
    """The parameters to differentiate: ``params``, or all of the model's trainable ones."""
    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    owned = {id(p) for p in model.parameters()}
    params = [p for p in model.parameters() if p.requires_grad] if params is None else list(params)
    if not params:
        raise ValueError("no parameters to differentiate (params is empty or none requires grad)")
    if any(id(p) not in owned for p in params):
        raise ValueError("every entry of params must be a parameter of model")
    if len({id(p) for p in params}) != len(params):
        raise ValueError("params contains the same parameter twice")
    kinds = {(p.dtype, p.device) for p in params}
    if len(kinds) != 1 or not params[0].is_floating_point():
        raise ValueError(f"params must share one floating dtype and one device, got {kinds}")
    return params


def _check_loss(loss_fn) -> nn.Module:
    reduction = getattr(loss_fn, "reduction", None)
    if not isinstance(loss_fn, nn.Module) or reduction not in ("mean", "sum"):
        raise ValueError(f"loss_fn must be a torch loss module with reduction 'mean' or 'sum', got "
                         f"{loss_fn!r} with reduction {reduction!r}")
    return loss_fn


def _cast(t, dtype: torch.dtype, device: torch.device | None = None):
    """Floating tensors to ``dtype`` (and ``device`` if given); class labels keep their dtype."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"batches must hold tensors, got {type(t).__name__}")
    return t.to(device=device, dtype=dtype if t.is_floating_point() else t.dtype)


class _Batches:
    """Re-iterable view of ``(X, y)`` batches with floating tensors cast to the model's dtype."""

    def __init__(self, data, dtype: torch.dtype):
        if (isinstance(data, (tuple, list)) and len(data) == 2
                and all(isinstance(t, torch.Tensor) for t in data)):
            data = [tuple(data)]                       # one batch given as (X, y)
        if iter(data) is data:
            raise ValueError("data must be re-iterable (a list of (X, y) or a DataLoader); a "
                             "one-shot iterator would be exhausted after the first product")
        self.data, self.dtype = data, dtype
        if next(iter(self), None) is None:
            raise ValueError("data holds no batches")

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for batch in self.data:
            if not isinstance(batch, (tuple, list)) or len(batch) != 2:
                raise ValueError(f"each batch must be a pair (X, y), got {type(batch).__name__}")
            yield _cast(batch[0], self.dtype), _cast(batch[1], self.dtype)


# ----------------------------------------------------------------------------- operators
class _EvalMode(nn.Module):
    """Runs ``model`` in eval mode on each forward and then restores every module's mode.

    curvlinops needs the model as a module (it looks parameters up by name), so the mode is
    fixed by this wrapper rather than by a lambda.
    """

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        modes = [(m, m.training) for m in self.model.modules()]
        self.model.eval()
        try:
            return self.model(x)
        finally:
            for m, mode in modes:
                m.training = mode


def curvature_operator(model: nn.Module, loss_fn: nn.Module, data, kind: str = "hessian", *,
                       params: Iterable[nn.Parameter] | None = None,
                       check_deterministic: bool = True,
                       num_data: int | None = None) -> PyTorchLinearOperator:
    """The ``kind`` curvature (``"hessian"``, ``"ggn"`` or ``"ef"``) of ``loss_fn`` over ``data``.

    Args:
        model: the network, evaluated in eval mode (module docstring).
        loss_fn: loss module with reduction ``"mean"`` or ``"sum"``. ``"ef"`` supports MSE,
            cross-entropy and BCE-with-logits only.
        data: a re-iterable of ``(X, y)`` batches (list, DataLoader without shuffling) or one
            ``(X, y)`` pair.
        kind: which matrix.
        params: the parameters that span the matrix (default: all trainable ones, in order).
        check_deterministic: curvlinops' check, which costs two passes over the data and two
            products. It fails with shuffled or augmented loaders.
        num_data: number of samples, if known (otherwise one pass counts them).

    Returns:
        A curvlinops linear operator on the flattened ``params``. ``op @ v`` takes a vector or
        a ``[P, K]`` matrix, and ``op.to_scipy()`` plugs into scipy.
    """
    if kind not in CURVATURES:
        raise ValueError(f"kind must be one of {CURVATURES}, got {kind!r}")
    params = _model_params(model, params)
    loss_fn = _check_loss(loss_fn)
    if kind == "ef" and not isinstance(loss_fn, _EF_LOSSES):
        raise ValueError(f"kind 'ef' supports {[c.__name__ for c in _EF_LOSSES]}, got "
                         f"{type(loss_fn).__name__}")
    if num_data is not None:
        num_data = check_int(num_data, "num_data", 1)
    batches = _Batches(data, params[0].dtype)
    return _OPERATORS[kind](_EvalMode(model), loss_fn, params, batches,
                            check_deterministic=check_deterministic, num_data=num_data)


class _Dense(PyTorchLinearOperator):
    """An explicit symmetric matrix as an operator (tests, toy quadratics, Listing F.1)."""

    SELF_ADJOINT = True

    def __init__(self, A: torch.Tensor):
        if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0 or not A.is_floating_point():
            raise ValueError(f"A must be a non-empty square float matrix, got shape "
                             f"{tuple(A.shape)} and dtype {A.dtype}")
        scale = float(A.abs().max())
        if float((A - A.T).abs().max()) > 1e3 * torch.finfo(A.dtype).eps * scale:
            raise ValueError("A must be symmetric")
        super().__init__([(A.shape[0],)], [(A.shape[0],)])
        self.A = A

    def _matmat(self, X: list[torch.Tensor]) -> list[torch.Tensor]:
        return [self.A @ X[0]]

    @property
    def device(self) -> torch.device:
        return self.A.device

    @property
    def dtype(self) -> torch.dtype:
        return self.A.dtype


def as_operator(A: Operator) -> PyTorchLinearOperator:
    """``A`` as a square curvlinops operator (an explicit symmetric matrix is wrapped)."""
    if isinstance(A, torch.Tensor):
        return _Dense(A)
    if not isinstance(A, PyTorchLinearOperator):
        raise ValueError(f"A must be a curvlinops operator or a torch matrix, got "
                         f"{type(A).__name__}")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    return A


class CountingOperator(PyTorchLinearOperator):
    """Wraps a symmetric operator on flat vectors and counts the matrix-vector products.

    A product with a ``[P, K]`` matrix counts as ``K``, so the count is the cost in HVPs (one
    pass over the data per column) whether a solver batches its vectors or not.
    """

    SELF_ADJOINT = True

    def __init__(self, A: Operator):
        self.op = as_operator(A)
        n = self.op.shape[0]
        super().__init__([(n,)], [(n,)])
        self.count = 0

    def _matmat(self, X: list[torch.Tensor]) -> list[torch.Tensor]:
        self.count += X[0].shape[1]
        return [self.op @ X[0]]

    @property
    def device(self) -> torch.device:
        return self.op.device

    @property
    def dtype(self) -> torch.dtype:
        return self.op.dtype


def dense_matrix(A: Operator) -> torch.Tensor:
    """The explicit ``P x P`` matrix of ``A`` (``P`` products; only for small models)."""
    op = as_operator(A)
    return op @ torch.eye(op.shape[0], dtype=op.dtype, device=op.device)


def dense_hessian(model: nn.Module, loss_fn: nn.Module, X: torch.Tensor,
                  y: torch.Tensor) -> torch.Tensor:
    """The explicit Hessian of ``loss_fn(model(X), y)`` over every trainable parameter, in
    ``named_parameters`` order, by ``torch.func.hessian`` (forward-over-reverse, vectorised
    over the ``P`` directions): for a 1,338-parameter CNN on 1,347 images about 10x faster
    than ``dense_matrix`` of the curvlinops operator, which runs the ``P`` products one by one.
    The model runs in eval mode (as `curvature_operator`); ``P x P`` memory: small models only.
    """
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = dict(model.named_parameters())
    sizes = [params[n].numel() for n in names]
    flat = torch.cat([params[n].detach().reshape(-1) for n in names])

    def loss(theta: torch.Tensor) -> torch.Tensor:
        pieces = torch.split(theta, sizes)
        values = {n: t.view_as(params[n]) for n, t in zip(names, pieces, strict=True)}
        return loss_fn(functional_call(model, values, (X,)), y)

    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        return torch.func.hessian(loss)(flat)
    finally:
        for m, mode in modes:
            m.training = mode


# ----------------------------------------------------------------------------- eigenpairs
@dataclass(frozen=True)
class Eigenpairs:
    """``values`` descending (float64, CPU), ``vectors[:, i]`` the unit eigenvector of value i."""

    values: torch.Tensor
    vectors: torch.Tensor
    matvecs: int


def top_eigenpairs(A: Operator, k: int = 1, *, which: str = "LA", tol: float = 0.0,
                   ncv: int | None = None, maxiter: int | None = None, seed: int = 0) -> Eigenpairs:
    """The top-``k`` eigenpairs of a symmetric operator by ARPACK's implicitly restarted Lanczos.

    Args:
        A: curvlinops operator or explicit symmetric matrix.
        k: number of pairs, ``1 <= k < P`` (ARPACK's limit).
        which: ``"LA"`` for the largest values (the sharp directions of a Hessian) or ``"LM"``
            for the largest magnitudes (what power iteration finds).
        tol: eigsh's relative accuracy (0 means machine precision).
        ncv, maxiter: eigsh's Lanczos basis size and restart limit (None means scipy's defaults).
        seed: seed of the start vector, so that runs repeat exactly.

    Returns:
        ``Eigenpairs``. The vectors are in the operator's dtype and on its device. ``matvecs``
        is the number of products eigsh used.
    """
    op = CountingOperator(A)
    n = op.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < n:
        raise ValueError(f"k must be an integer in [1, {n - 1}] for a {n}x{n} operator, got {k!r}")
    if which not in ("LA", "LM"):
        raise ValueError(f"which must be 'LA' or 'LM', got {which!r}")
    tol = _check_positive(tol, "tol", allow_zero=True)
    v0 = np.random.default_rng(seed).standard_normal(n)
    vals, vecs = eigsh(op.to_scipy(), k=int(k), which=which, tol=tol, ncv=ncv, maxiter=maxiter,
                       v0=v0)
    order = np.argsort(-(vals if which == "LA" else np.abs(vals)), kind="stable")
    return Eigenpairs(values=torch.from_numpy(vals[order].copy()),
                      vectors=torch.as_tensor(vecs[:, order], dtype=op.dtype, device=op.device),
                      matvecs=op.count)


def matvecs_to_tolerance(history, reference: float, rtol: float) -> int | None:
    """The first number of products after which ``history`` is within ``rtol`` of ``reference``.

    ``None`` if it never gets there. This is the benchmark's cost of an accuracy: ``history``
    is one estimate per product, e.g. the ``values`` of
    `lalr_core.methods.curvature.top_eigen.power_iteration` (one product per iterate), to be set against
    ``top_eigenpairs(...).matvecs``.
    """
    rtol = _check_positive(rtol, "rtol")
    if not np.isfinite(reference) or reference == 0:
        raise ValueError(f"reference must be finite and non-zero, got {reference!r}")
    err = np.abs(np.asarray(history, dtype=np.float64) - reference) / abs(reference)
    hit = np.flatnonzero(err <= rtol)
    return int(hit[0]) + 1 if hit.size else None


# ----------------------------------------------------------------------------- trace, density
def _rng_devices(device: torch.device) -> list:
    return [device] if device.type == "cuda" else []


@dataclass(frozen=True)
class TraceEstimate:
    """Hutchinson estimate of ``tr A`` and its standard error (from ``groups`` batch means)."""

    value: float
    stderr: float
    matvecs: int
    groups: int


def trace_estimate(A: Operator, num_matvecs: int = 100, *, batch: int = 10,
                   distribution: str = "rademacher", seed: int = 0) -> TraceEstimate:
    """Girard-Hutchinson trace (curvlinops' ``hutchinson_trace``) with a standard error.

    curvlinops returns only the mean of its probes. So the ``num_matvecs`` probes are drawn in
    ``num_matvecs / batch`` calls of ``batch`` probes each. The estimate is the mean of the call
    means, and the standard error is their standard deviation over ``sqrt(calls)``. The global
    torch RNG is forked and seeded with ``seed``, so the caller's random stream is not touched.

    Args:
        A: curvlinops operator or explicit symmetric matrix.
        num_matvecs: total products, a multiple of ``batch`` giving at least 2 calls.
        batch: probes per call, ``< P`` (curvlinops' rule).
        distribution: ``"rademacher"`` (minimum variance for a fixed matrix) or ``"normal"``.
        seed: RNG seed.
    """
    op = CountingOperator(A)
    n = op.shape[0]
    num_matvecs = check_int(num_matvecs, "num_matvecs", 2)
    batch = check_int(batch, "batch", 1)
    if batch >= n:
        raise ValueError(f"batch must be < the operator size {n}, got {batch}")
    if num_matvecs % batch or num_matvecs // batch < 2:
        raise ValueError(f"num_matvecs must be a multiple of batch ({batch}) giving >= 2 calls, "
                         f"got {num_matvecs}")
    if distribution not in ("rademacher", "normal"):
        raise ValueError(f"distribution must be 'rademacher' or 'normal', got {distribution!r}")
    groups = num_matvecs // batch
    with torch.random.fork_rng(devices=_rng_devices(op.device)):
        torch.manual_seed(seed)
        means = torch.stack([hutchinson_trace(op, batch, distribution) for _ in range(groups)])
    means = means.double()
    return TraceEstimate(value=float(means.mean()), stderr=float(means.std() / math.sqrt(groups)),
                         matvecs=op.count, groups=groups)


@dataclass(frozen=True)
class SpectralDensity:
    """Grid ``lam`` and smoothed density ``density`` (integrates to about 1) of eq. 4.13/4.14."""

    lam: torch.Tensor
    density: torch.Tensor
    boundaries: tuple[float, float]
    matvecs: int


def spectral_density(A: Operator, *, ncv: int = 64, num_points: int = 1024,
                     num_repeats: int = 1, kappa: float = 3.0, margin: float = 0.05,
                     boundaries: tuple[float, float] | None = None,
                     seed: int = 0) -> SpectralDensity:
    """Stochastic Lanczos quadrature density (Papyan 2020, Alg. 2; curvlinops' implementation).

    Each repeat runs ``ncv`` Lanczos steps from a random unit vector, without reorthogonalisation.
    The nodes are the eigenvalues of the tridiagonal matrix, weighted by their squared first
    components and smoothed by Gaussians whose width is set by ``kappa`` on the spectrum rescaled
    to [-1, 1]. ``boundaries`` (lambda_min, lambda_max) default to an ``eigsh`` run (``tol=1e-2``)
    from a seeded start vector. curvlinops would start ARPACK from its own random vector.

    Args:
        A: curvlinops operator or explicit symmetric matrix.
        ncv: Lanczos steps per repeat, ``2 <= ncv <= P``.
        num_points: grid size (>= 2).
        num_repeats: random start vectors averaged over.
        kappa: bump width parameter (> 1; Papyan's 3).
        margin: relative padding of the grid beyond the boundaries.
        boundaries: known (lambda_min, lambda_max), lambda_min < lambda_max.
        seed: RNG seed of the start vectors.
    """
    op = CountingOperator(A)
    n = op.shape[0]
    ncv = check_int(ncv, "ncv", 2)
    if ncv > n:
        raise ValueError(f"ncv must be <= the operator size {n}, got {ncv}")
    num_points = check_int(num_points, "num_points", 2)
    num_repeats = check_int(num_repeats, "num_repeats", 1)
    if _check_positive(kappa, "kappa") <= 1:
        raise ValueError(f"kappa must be > 1, got {kappa!r}")
    margin = _check_positive(margin, "margin", allow_zero=True)
    if boundaries is None:
        if n < 3:
            raise ValueError(f"boundaries must be given for a {n}x{n} operator")
        v0 = np.random.default_rng(seed).standard_normal(n)
        lo, hi = eigsh(op.to_scipy(), k=2, which="BE", tol=1e-2, v0=v0, return_eigenvectors=False)
        boundaries = (float(min(lo, hi)), float(max(lo, hi)))
    if (len(boundaries) != 2 or not all(np.isfinite(boundaries))
            or boundaries[0] >= boundaries[1]):
        raise ValueError(f"boundaries must be finite (lambda_min, lambda_max) with min < max, got "
                         f"{boundaries!r}")
    boundaries = (float(boundaries[0]), float(boundaries[1]))
    with torch.random.fork_rng(devices=_rng_devices(op.device)):
        torch.manual_seed(seed)
        grid, density = lanczos_approximate_spectrum(op, ncv, num_points=num_points,
                                                     num_repeats=num_repeats, kappa=kappa,
                                                     boundaries=boundaries, margin=margin)
    return SpectralDensity(lam=grid, density=density, boundaries=boundaries, matvecs=op.count)


# ----------------------------------------------------------------------------- batch HVP
class BatchHVP:
    """``v -> H v`` for the loss of one batch, flattened over ``params`` (double backward).

    Built by ``hvp_function``. ``loss`` and ``gradient`` (flattened, detached) are those of the
    same forward pass. ``matvecs`` counts the calls.
    """

    def __init__(self, flat_grad: torch.Tensor, loss: torch.Tensor, params: list[nn.Parameter]):
        self._flat_grad, self.params = flat_grad, params
        self.loss, self.gradient = loss.detach(), flat_grad.detach()
        self.dim, self.matvecs = flat_grad.numel(), 0

    def __call__(self, v: torch.Tensor) -> torch.Tensor:
        if not isinstance(v, torch.Tensor) or v.shape != (self.dim,):
            raise ValueError(f"v must be a tensor of shape ({self.dim},), got "
                             f"{getattr(v, 'shape', type(v).__name__)}")
        self.matvecs += 1
        g = self.gradient
        if not self._flat_grad.requires_grad:  # loss linear in params: H = 0
            return torch.zeros_like(g)
        hv = torch.autograd.grad(self._flat_grad, self.params,
                                 grad_outputs=v.to(dtype=g.dtype, device=g.device),
                                 retain_graph=True, allow_unused=True, materialize_grads=True)
        return torch.cat([h.reshape(-1) for h in hv]).detach()


def hvp_function(model: nn.Module, loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                 X: torch.Tensor, y: torch.Tensor, *,
                 params: Iterable[nn.Parameter] | None = None,
                 train: bool = False) -> BatchHVP:
    """Hessian-vector products of ``loss_fn(model(X), y)`` for use inside an optimiser.

    This replaces curvlinops where it does not fit (module docstring). With ``train=True`` the
    Hessian is that of the train-mode batch loss, including the dependence of batch norm's batch
    statistics on the parameters. One forward and one backward with ``create_graph`` build the
    graph, and every call then costs one more backward. The forward runs on a copy of the
    buffers, so the running statistics are left unchanged. The modules' modes are restored.

    Args:
        model: the network; ``X`` and ``y`` are moved to its parameters' device and floating
            tensors are cast to its dtype.
        loss_fn: any ``(output, y) -> scalar`` callable.
        X, y: the batch.
        params: the parameters that span the matrix (default: all trainable ones).
        train: evaluate in train mode (True) or eval mode (False, the default).
    """
    params = _model_params(model, params)
    if not callable(loss_fn):
        raise ValueError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    dtype, device = params[0].dtype, params[0].device
    X, y = _cast(X, dtype, device), _cast(y, dtype, device)
    modes = [(m, m.training) for m in model.modules()]
    buffers = {name: b.clone() for name, b in model.named_buffers()}
    model.train(bool(train))
    try:
        with torch.enable_grad():
            loss = loss_fn(functional_call(model, buffers, (X,)), y)
            if not (isinstance(loss, torch.Tensor) and loss.numel() == 1):
                raise ValueError(f"loss_fn must return a scalar tensor, got "
                                 f"{getattr(loss, 'shape', type(loss).__name__)}")
            grads = torch.autograd.grad(loss.reshape(()), params, create_graph=True,
                                        allow_unused=True, materialize_grads=True)
    finally:
        for m, mode in modes:
            m.training = mode
    return BatchHVP(torch.cat([g.reshape(-1) for g in grads]), loss, params)
