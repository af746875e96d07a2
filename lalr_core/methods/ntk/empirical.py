"""Empirical neural tangent kernels, linearised models and the NTK theory of fine-tuning (seed 002).

The chapter reproduces "Linearization Explains Fine-Tuning in Large Language Models"
(``[RahimiAfzal2025]``, as presented in the course slides ``[KimKim-slides]``; keys:
REFERENCES.md): fine-tuning with a pull toward ``theta0`` stays close to the linearised model
``f(x; theta0) + <grad f(x; theta0), theta - theta0>``, whose regularised solution is kernel
ridge regression with the empirical NTK ``K = J J^T`` at ``theta0``. This module holds:

* ``empirical_ntk`` / ``per_sample_jacobian`` / ``jacobian_norm``: ``K`` (and ``J``) with
  ``torch.func`` for all trainable parameters or a named subset (the per-layer kernels ``S_l``
  of Theorem 6). Two methods, as in the PyTorch tutorial "Neural Tangent Kernels"
  (pytorch/tutorials:intermediate_source/neural_tangent_kernels.py) and neural-tangents'
  ``NtkImplementation``:

  - ``"jacobian"`` (default, the simplest): ``vmap(jacrev)`` per chunk of samples, then one
    matrix product. Cost: ``n * C`` per-sample backward passes and ``C`` products
    ``(n x P) (P x n)`` (one ``(nC) x P x (nC)`` product for ``blocks=True``). Memory: the
    Jacobian, ``n * C * P`` numbers, plus the transform's intermediates for ``chunk``
    samples. The fast choice whenever ``J`` fits.
  - ``"ntvp"``: NTK-vector products, ``jvp`` of ``vjp`` against unit output vectors, one
    ``chunk x chunk`` block at a time (upper triangle, then mirrored). Memory does not grow
    with ``n``: a chunk's ``chunk * C`` parameter-sized cotangents and a forward-mode pass of
    ``chunk`` samples for each (``chunk^2 * C`` sample activations). Cost: about ``n^2 C / 2``
    per-sample forward-mode passes, much slower than ``"jacobian"`` at this project's sizes
    (``benchmarks/bench_ntk.py``). For a ``J`` too large to hold (with a small ``chunk``),
    and as an independent check.
* ``LinearisedModel`` and ``taylor_remainder``: the linearised model trained like any network,
  and the Taylor remainder of the fine-tuned model: the slides' table measures the latter,
  their Theorem 3 bounds the gap to the former, so both are computed.
* Kernel ridge regression, the regularised condition number and the bounds of Theorems 2-7
  are in `lalr_core.methods.ntk.theory`.

Conventions:
    * Kernels evaluate the model in **eval mode** (batch norm with running statistics, no
      dropout) and restore every module's mode after; in train mode one sample's output would
      depend on its batch, and ``torch.func`` refuses the in-place update of running statistics.
    * The model is never modified: parameters and buffers enter ``functional_call`` as detached
      copies, cast to ``dtype`` if one is given (floating inputs too; integer tokens stay).
    * A "per-sample output" is ``output(model(x[None]))[0]``: the logits by default, or e.g.
      the logit margin ``lambda logits: logits[:, 1] - logits[:, 0]`` (our scalar output for the slides'
      one-output theory), a scalar.
    * Linear algebra on kernels is float64 with ``torch.linalg.eigh``; eigenvalues ascend.

One module (over 400 lines) on purpose: the kernel, the functional model it differentiates and
the linearised model share one parameter selection and one functional call; apart, each would
re-derive them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Literal

import torch
from torch import nn
from torch.func import functional_call, jacrev, jvp, vmap

from lalr_core.core.torch_compat import load_jvp_decompositions
from lalr_core.core.validation import check_int
from lalr_core.methods.pretrained.transforms import MODEL_TRANSFORMS

load_jvp_decompositions()  # this module's jvp calls would warn once (torch, not ours)

ParamSelection = Iterable[str] | Callable[[str], bool] | None
NTK_METHODS = ("jacobian", "ntvp")


# ----------------------------------------------------------------------------- functional model
def ntk_params(model: nn.Module, params: ParamSelection = None) -> list[str]:
    """Names of the parameters that span the kernel, in ``model.named_parameters()`` order.

    Args:
        model: the network.
        params: ``None`` for every parameter with ``requires_grad``; an iterable of parameter
            names; or a predicate on names. Names and predicates may pick frozen parameters
            (a candidate layer's kernel ``S`` is needed before the layer is trained).

    Returns:
        The selected names (non-empty).

    Raises:
        ValueError: for a non-module, an unknown or repeated name, a string instead of a list
            of names, an empty selection or a non-floating parameter.
    """
    if not isinstance(model, nn.Module):
        raise ValueError(  # noqa: TRY004 - bad input is a ValueError throughout the library
            f"model must be a torch.nn.Module, got {type(model).__name__}")
    named = dict(model.named_parameters())
    if params is None:
        names = [n for n, p in named.items() if p.requires_grad]
    elif callable(params):
        names = [n for n in named if params(n)]
    else:
        if isinstance(params, str):
            raise ValueError(f"params must be an iterable of names, got the string {params!r}")
        wanted = list(params)
        unknown = [n for n in wanted if n not in named]
        if unknown:
            raise ValueError(f"unknown parameter names {unknown}; the model has {list(named)}")
        if len(set(wanted)) != len(wanted):
            raise ValueError(f"params names a parameter twice: {wanted}")
        names = [n for n in named if n in set(wanted)]
    if not names:
        raise ValueError("no parameters selected (params is empty or none requires grad)")
    if not all(named[n].is_floating_point() for n in names):
        raise ValueError("every selected parameter must be floating point")
    return names


def snapshot_params(model: nn.Module, params: ParamSelection = None) -> dict[str, torch.Tensor]:
    """Detached copies of the selected parameters (``theta0`` for `taylor_remainder`)."""
    named = dict(model.named_parameters())
    return {n: named[n].detach().clone() for n in ntk_params(model, params)}


def _functional_state(model: nn.Module, names: list[str], dtype: torch.dtype | None):
    """``(params, rest)``: detached copies of the selected parameters and of every other
    parameter and buffer, floating ones cast to ``dtype`` (if given)."""
    def cast(t):
        t = t.detach()
        return t.to(dtype) if dtype is not None and t.is_floating_point() else t

    chosen = set(names)
    params = {n: cast(p) for n, p in model.named_parameters() if n in chosen}
    rest = {n: cast(p) for n, p in model.named_parameters() if n not in chosen}
    rest.update({n: cast(b) for n, b in model.named_buffers()})
    return params, rest


@contextmanager
def _eval_mode(model: nn.Module) -> Iterator[None]:
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode


def _prepare_inputs(inputs, params: dict[str, torch.Tensor]) -> torch.Tensor:
    if not isinstance(inputs, torch.Tensor) or inputs.ndim < 1 or inputs.shape[0] == 0:
        raise ValueError(f"inputs must be a tensor [n, ...] with n >= 1, got "
                         f"{getattr(inputs, 'shape', type(inputs).__name__)}")
    p = next(iter(params.values()))
    return inputs.to(device=p.device, dtype=p.dtype if inputs.is_floating_point() else None)


def _batch_fn(model: nn.Module, rest: dict, output: Callable | None):
    """``f(params, X)`` -> per-sample outputs ``[B, *O]`` of the functional model."""
    def f(params, X):
        out = functional_call(model, (params, rest), (X,))
        if output is not None:
            out = output(out)
        if not isinstance(out, torch.Tensor) or out.ndim < 1 or out.shape[0] != X.shape[0]:
            raise ValueError(f"output must map the model's output to a tensor [B, ...] with "
                             f"B = {X.shape[0]}, got {getattr(out, 'shape', type(out).__name__)}")
        return out
    return f


# ----------------------------------------------------------------------------- Jacobian, NTK
def _per_sample_jacobian_fn(f):
    """``(params, X) -> {name: [b, *O, *shape]}``: ``vmap`` over samples of ``jacrev``, i.e. of
    one ``vjp`` per output unit vector."""
    def one(p, x):                                     # one sample -> output [*O]
        return f(p, x[None])[0]

    return vmap(jacrev(one), in_dims=(None, 0))


def _jacobian_chunks(f, params: dict, X: torch.Tensor, chunk: int) -> Iterator[torch.Tensor]:
    """Per-sample Jacobians, ``[b, C, P]`` per chunk of ``b <= chunk`` samples."""
    jac = _per_sample_jacobian_fn(f)
    for s in range(0, X.shape[0], chunk):
        J = jac(params, X[s:s + chunk])                # name -> [b, *O, *shape]
        b = X[s:s + chunk].shape[0]
        yield torch.cat([J[n].reshape(b, -1, params[n].numel()) for n in params], dim=2)


def _setup(model, inputs, params, output, chunk, dtype):
    chunk = check_int(chunk, "chunk")
    names = ntk_params(model, params)
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"dtype must be a floating torch dtype or None, got {dtype!r}")
    if output is not None and not callable(output):
        raise ValueError(f"output must be callable or None, got {type(output).__name__}")
    p, rest = _functional_state(model, names, dtype)
    return _batch_fn(model, rest, output), p, _prepare_inputs(inputs, p), chunk


def per_sample_jacobian(model: nn.Module, inputs: torch.Tensor, *, params: ParamSelection = None,
                        output: Callable | None = None, chunk: int = 32,
                        dtype: torch.dtype | None = None) -> torch.Tensor:
    """Jacobian of each sample's output with respect to the selected parameters.

    Args:
        model: the network (evaluated in eval mode; never modified).
        inputs: `[n, ...]` samples (images, or int64 tokens `[n, T]`).
        params: which parameters (`ntk_params`).
        output: map from the model's batched output to `[B, *O]` (default: identity).
        chunk: samples per ``vmap(jacrev)`` call (bounds the transform's memory).
        dtype: compute in this floating dtype (e.g. ``torch.float64``).

    Returns:
        `[n, *O, P]`, ``P`` the selected parameters flattened in `ntk_params` order.
    """
    f, p, X, chunk = _setup(model, inputs, params, output, chunk, dtype)
    with _eval_mode(model):
        out_shape = f(p, X[:1]).shape[1:]
        J = torch.cat(list(_jacobian_chunks(f, p, X, chunk)))
    return J.reshape(X.shape[0], *out_shape, -1)


def _ntvp_kernel(f, params: dict, X: torch.Tensor, chunk: int, C: int) -> torch.Tensor:
    """``[n, n, C, C]`` from NTK-vector products, one block pair ``i <= j`` at a time.

    Block ``(i, j)`` is ``J_i (J_j^T e)`` for the ``b_j * C`` output unit vectors ``e`` of chunk
    ``j``: the ``vjp`` s give ``J_j^T e`` (parameter-shaped), a ``jvp`` of chunk ``i``'s outputs
    along each gives a column (pytorch/tutorials, neural_tangent_kernels.py, "NTK-vector
    products"; Novak et al. 2022, "Fast Finite Width Neural Tangent Kernel").
    """
    n = X.shape[0]
    p0 = next(iter(params.values()))
    K = torch.empty(n, n, C, C, dtype=p0.dtype, device=p0.device)
    pull = _per_sample_jacobian_fn(f)
    starts = range(0, n, chunk)
    for j in starts:
        Xj = X[j:j + chunk]
        bj = Xj.shape[0]
        cot = {k: v.reshape(bj * C, *params[k].shape)  # J_j^T e, one per (sample, output)
               for k, v in pull(params, Xj).items()}
        for i in (s for s in starts if s <= j):
            Xi = X[i:i + chunk]
            bi = Xi.shape[0]

            def push(v, Xi=Xi, bi=bi):
                return jvp(lambda p: f(p, Xi).reshape(bi, C), (params,), (v,))[1]

            cols = vmap(push)(cot).reshape(bj, C, bi, C)           # (bj, b, bi, a) = J_i J_j^T
            K[i:i + bi, j:j + bj] = cols.permute(2, 0, 3, 1)       # (bi, bj, a, b)
            K[j:j + bj, i:i + bi] = cols.permute(0, 2, 1, 3)       # the mirror block
    return K


def empirical_ntk(model: nn.Module, inputs: torch.Tensor, *, params: ParamSelection = None,
                  output: Callable | None = None, chunk: int = 32,
                  dtype: torch.dtype | None = None,
                  method: Literal["jacobian", "ntvp"] = "jacobian",
                  blocks: bool = False) -> torch.Tensor:
    """The empirical NTK Gram matrix ``K = J J^T`` at the model's current parameters.

    ``K_ij = <d f(x_i) / d theta, d f(x_j) / d theta>`` over the selected parameters (the slides'
    sec. 4, "Fine-Tuning Meets NTK Regression"); a partition of the parameters splits ``K`` into a sum, which is how
    the kernels ``S_l`` of Theorem 6 arise.

    Args:
        model: the network (eval mode, never modified; module docstring).
        inputs: `[n, ...]` samples (images, or int64 tokens `[n, T]`).
        params: which parameters (`ntk_params`): default all trainable ones.
        output: map from the model's batched output to `[B, *O]`, e.g. the logit margin
            ``lambda z: z[:, 1] - z[:, 0]`` (chapter 03's choice). Default: the model's output.
        chunk: samples per Jacobian block (memory bound; see the module docstring).
        dtype: compute in this floating dtype (``torch.float64`` for checks).
        method: ``"jacobian"`` (``vmap(jacrev)``, stores ``J``) or ``"ntvp"`` (``jvp`` of
            ``vjp``, no full Jacobian).
        blocks: for a vector output of size ``C``, return `[n, n, C, C]` instead of the sum over
            the output axis (the trace of each block, neural-tangents' ``trace_axes`` default).

    Returns:
        `[n, n]` (scalar output, or ``blocks=False``) or `[n, n, C, C]`, symmetric, in
        ``dtype`` (default: the parameters' dtype).

    Raises:
        ValueError: for an unknown method, bad ``chunk``/``dtype``/``output``, a bad parameter
            selection or inputs that are not a non-empty tensor.
    """
    if method not in NTK_METHODS:
        raise ValueError(f"method must be one of {NTK_METHODS}, got {method!r}")
    f, p, X, chunk = _setup(model, inputs, params, output, chunk, dtype)
    n = X.shape[0]
    with _eval_mode(model):
        out_shape = f(p, X[:1]).shape[1:]
        C = math.prod(out_shape)
        traced = len(out_shape) == 0 or not blocks
        if method == "jacobian":
            J = torch.cat(list(_jacobian_chunks(f, p, X, chunk)))            # (n, C, P)
            if traced:                                 # C times fewer products than the blocks
                K = torch.einsum("iaP,jaP->ij", J, J)
            else:
                J = J.reshape(n * C, -1)
                K = (J @ J.T).reshape(n, C, n, C).permute(0, 2, 1, 3)   # (i, j, a, b)
        else:
            K = _ntvp_kernel(f, p, X, chunk, C)
            K = K.diagonal(dim1=2, dim2=3).sum(-1) if traced else K
    # exact symmetry for eigh downstream
    return (K + K.T) / 2 if traced else (K + K.permute(1, 0, 3, 2)) / 2


def jacobian_norm(model: nn.Module, inputs: torch.Tensor, **kwargs) -> float:
    """Spectral norm of the stacked Jacobian, ``||J||_2 = sqrt(lambda_max(J J^T))``.

    The estimate of Lip(f) on ``x*`` of experiment E-002-Th2 (maximised over visited
    parameters by the caller). Keyword arguments go to `empirical_ntk` (``blocks`` is forced).
    """
    K = empirical_ntk(model, inputs, **{**kwargs, "blocks": True})
    m = K.shape[0] * (K.shape[2] if K.ndim == 4 else 1)
    K = K.permute(0, 2, 1, 3).reshape(m, m) if K.ndim == 4 else K
    return math.sqrt(max(float(torch.linalg.eigvalsh(K.double())[-1]), 0.0))


# ----------------------------------------------------------------------------- linearisation
class LinearisedModel(nn.Module):
    """``f_lin(x; theta) = f(x; theta0) + <grad f(x; theta0), theta - theta0>`` (the slides' sec. 4).

    ``theta0`` is a frozen copy of the wrapped model's selected (default: trainable) parameters
    at construction; ``theta`` (``self.theta``, initialised to ``theta0``) are this module's
    only parameters, so any optimiser and the shared training loop train it. Unselected
    parameters stay fixed at their values at construction. The output is the full model output
    (logits), so cross-entropy training works. One forward is one ``torch.func.jvp`` (about two
    to three forwards of the network); gradients flow through its tangent.

    The wrapped network is a private copy kept in **eval mode** whatever ``train()`` says: the
    linearisation is of the inference function (module docstring). Tied parameters are not
    supported.

    Args:
        model: the network to linearise (not modified).
        params: which parameters are ``theta`` (`ntk_params`).

    Raises:
        ValueError: for a bad selection or tied parameters.
    """

    def __init__(self, model: nn.Module, params: ParamSelection = None):
        super().__init__()
        names = ntk_params(model, params)
        if len(list(model.named_parameters(remove_duplicate=False))) != len(dict(
                model.named_parameters())):
            raise ValueError("LinearisedModel does not support tied (shared) parameters")
        base = copy.deepcopy(model)
        for module in base.modules():                  # parameters -> buffers: frozen constants
            for key, p in list(module._parameters.items()):
                del module._parameters[key]
                module.register_buffer(key, None if p is None else p.detach())
        self.base = base.eval()
        self.param_names = names
        self.theta = nn.ParameterList(nn.Parameter(base.get_buffer(n).clone()) for n in names)

    def train(self, mode: bool = True) -> LinearisedModel:
        super().train(mode)
        self.base.eval()
        return self

    def theta0(self) -> dict[str, torch.Tensor]:
        """The frozen expansion point, name -> tensor."""
        return {n: self.base.get_buffer(n) for n in self.param_names}

    def forward(self, *args, **kwargs):
        theta0 = self.theta0()
        delta = {n: t - theta0[n] for n, t in zip(self.param_names, self.theta)}
        f0, df = jvp(lambda p: functional_call(self.base, p, args, kwargs), (theta0,), (delta,))
        return f0 + df


def taylor_remainder(model: nn.Module, model0_params: Mapping[str, torch.Tensor],
                     inputs: torch.Tensor, *, output: Callable | None = None) -> torch.Tensor:
    """``f_theta_t(x) - [f_theta0(x) + J0 (theta_t - theta0)]`` (the slides' table, row 2).

    The model holds ``theta_t``; ``model0_params`` holds ``theta0`` for the parameters that
    moved (e.g. from `snapshot_params` before fine-tuning); every other parameter and buffer
    is shared by both expansions. Eval mode; the model is not modified.

    Args:
        model: the fine-tuned network.
        model0_params: name -> ``theta0`` tensor (same shapes as the model's parameters).
        inputs: `[n, ...]` samples, e.g. all training inputs ``x*`` (our reading of the slides' ``x*``).
        output: map of the batched model output (default: the logits).

    Returns:
        `[n, *O]` remainder, detached (its norm is the table's linearisation error).

    Raises:
        ValueError: for unknown names or mismatched shapes.
    """
    if not isinstance(model0_params, Mapping) or not model0_params:
        raise ValueError("model0_params must be a non-empty mapping name -> tensor")
    names = ntk_params(model, list(model0_params))
    p_t, rest = _functional_state(model, names, None)
    p_0 = {}
    for n in names:
        t0 = torch.as_tensor(model0_params[n]).detach()
        if t0.shape != p_t[n].shape:
            raise ValueError(f"model0_params[{n!r}] has shape {tuple(t0.shape)}, the model's "
                             f"parameter {tuple(p_t[n].shape)}")
        p_0[n] = t0.to(device=p_t[n].device, dtype=p_t[n].dtype)
    f = _batch_fn(model, rest, output)
    X = _prepare_inputs(inputs, p_t)
    with _eval_mode(model), torch.no_grad():
        f_t = f(p_t, X)
        f_0, df = jvp(lambda p: f(p, X), (p_0,), ({n: p_t[n] - p_0[n] for n in names},))
    return (f_t - (f_0 + df)).detach()


@MODEL_TRANSFORMS.register("linearise")
def linearise_transform(model: nn.Module, params: ParamSelection = None) -> LinearisedModel:
    """The ``"linearise"`` model transform of the ``"transformed"`` task: the trainable
    parameters' `LinearisedModel` at the model's initial values (theta_0), trained by the
    shared loop with the nonlinear run's optimiser, seed and data order (the model of Theorem 3)."""
    return LinearisedModel(model, params)
