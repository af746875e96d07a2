r"""Random deep fully connected nets at initialisation, batched over seeds in torch (E2, E4-E6).

The empirical side of chapter 07 (secs. 1.2-1.4 of the lecture notes ``[ATDL-notes]``; keys:
REFERENCES.md);
the predictions are in `lalr_core.methods.signal.mean_field` and `lalr_core.methods.signal.nngp`. The net
(``[Poole2016]``, arXiv 1606.05340; the notes' eq. 1.1 with A1's ``1/N`` scaling)::

    h^l = W^l x^(l-1) + b^l,   x^l = phi(h^l),   l = 1..L,   x^0 = x (the input)
    W^l: Gaussian  N(0, sigma_w2 / N_(l-1))  or  orthogonal  sqrt(sigma_w2 max(N_l, N_(l-1))
         / N_(l-1)) Q  (Q Haar, semi-orthogonal when not square: the same E|W v|^2)
    b^l ~ N(0, sigma_b2)

``S`` independent nets (``seeds``) run as one batch: every tensor has a leading seed axis.
``q^l`` of the first layer is ``sigma_b2 + sigma_w2 |x|^2 / d_in``, so an input made by
`inputs_at_length` puts ``h^1`` (and, at ``q*``, every layer) at a chosen length. Weights are
drawn layer by layer from one ``torch.Generator`` in a fixed order (`sample_layers`), so the
same ``seed`` gives the same nets in every function here.

Costs (measured on the 2-core CPU, one torch thread, float64, one net, best of 2): a
1000-wide, 30-deep tanh net's forward pass (`propagate`, 4 inputs) 0.7 s with Gaussian
weights, 3 s orthogonal (30 QRs); `gradient_norms` 0.9 s / 3.2 s; the input-output Jacobian
(30 products of 1000 x 1000 matrices and one SVD) 2.2 s / 6.2 s; E5's 1000-point circle
through 15 layers of width 500, 0.3 s. Threaded MKL QR/SVD can stall for seconds when the
cores are oversubscribed (tests pin one thread).

One module (over 400 lines) on purpose: every measurement runs on the same batched random net
and shares its sampling and forward pass.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from lalr_core.core.validation import check_int
from lalr_core.methods.signal import nngp

# ----------------------------------------------------------------------------- constants
ACTIVATIONS = ("tanh", "relu", "linear")
INITS = ("gaussian", "orthogonal")
# weights, inputs and circles draw from separate streams: with one stream, seed 0's inputs
# would equal the first rows of W^1 (h^1 of order sqrt(N) on those units)
_WEIGHTS, _INPUTS, _CIRCLE = 0, 1, 2

_PHI = {"tanh": torch.tanh, "relu": torch.relu, "linear": lambda h: h}
_DPHI = {                                      # phi', the diagonal of D^l
    "tanh": lambda h: 1 - torch.tanh(h) ** 2,
    "relu": lambda h: (h > 0).to(h.dtype),
    "linear": torch.ones_like,
}


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class RandomNet:
    """The law of a random net (not its weights): activation, variances, init, precision.

    Attributes:
        activation: ``"tanh"``, ``"relu"`` or ``"linear"``.
        sigma_w2: weight variance times fan-in (>= 0).
        sigma_b2: bias variance (>= 0).
        init: ``"gaussian"`` or ``"orthogonal"`` weights.
        float64: compute in float64 (default) or float32.
        device: torch device string.
    """

    activation: str = "tanh"
    sigma_w2: float = 1.0
    sigma_b2: float = 0.0
    init: str = "gaussian"
    float64: bool = True
    device: str = "cpu"

    def __post_init__(self):
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")
        for name in ("sigma_w2", "sigma_b2"):
            v = getattr(self, name)
            if isinstance(v, bool) or np.ndim(v) != 0 or not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite scalar >= 0, got {v!r}")
        if not isinstance(self.float64, bool):
            raise ValueError(f"float64 must be a bool, got {self.float64!r}")  # noqa: TRY004

    @property
    def dtype(self) -> torch.dtype:
        """``torch.float64`` or ``torch.float32``."""
        return torch.float64 if self.float64 else torch.float32


# ----------------------------------------------------------------------------- validation
def _net(net) -> RandomNet:
    if not isinstance(net, RandomNet):
        raise ValueError(  # noqa: TRY004 - a setting, like the others
            f"net must be a RandomNet, got {type(net).__name__}")
    return net


def _inputs(x, net: RandomNet, ndim: int = 2) -> torch.Tensor:
    x = torch.as_tensor(x).to(device=net.device, dtype=net.dtype)
    if x.ndim != ndim or 0 in x.shape or not torch.isfinite(x).all():
        want = "(n, d_in)" if ndim == 2 else "(d_in,)"
        raise ValueError(f"x must be a finite non-empty {want} tensor, got shape "
                         f"{tuple(x.shape)}")
    return x


def _run_args(depth, width, seeds, seed, d_in: int) -> tuple[int, int, int, int]:
    depth = check_int(depth, "depth", 1)
    width = d_in if width is None else check_int(width, "width", 1)
    return depth, width, check_int(seeds, "seeds", 1), check_int(seed, "seed", 0)


# ----------------------------------------------------------------------------- sampling
def _generator(net: RandomNet, seed: int, stream: int) -> torch.Generator:
    """A torch generator for ``(seed, stream)``: numpy's SeedSequence mixes the pair (torch's
    CPU generator keeps only 32 bits of its seed, so ``seed + offset`` could collide)."""
    state = int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])
    return torch.Generator(device=net.device).manual_seed(state)


def _normal(gen: torch.Generator, net: RandomNet, *shape: int) -> torch.Tensor:
    """Standard normals drawn in float64, then cast: float32 nets are the float64 nets rounded
    (torch's float32 ``randn`` would consume the stream differently)."""
    z = torch.randn(*shape, generator=gen, dtype=torch.float64, device=net.device)
    return z.to(net.dtype)


def _weights(gen: torch.Generator, net: RandomNet, S: int, n_out: int, n_in: int
             ) -> torch.Tensor:
    """``(S, n_out, n_in)`` weights of one layer (see the module docstring for the laws)."""
    if net.init == "gaussian":
        return _normal(gen, net, S, n_out, n_in) * np.sqrt(net.sigma_w2 / n_in)
    big, small = max(n_out, n_in), min(n_out, n_in)
    Q, R = torch.linalg.qr(_normal(gen, net, S, big, small))
    # sign fix makes Q Haar-distributed (plain QR's Q depends on the sign convention)
    Q = Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1)).unsqueeze(-2)
    Q = Q if n_out >= n_in else Q.transpose(-2, -1)
    return Q * np.sqrt(net.sigma_w2 * big / n_in)


def sample_layers(net: RandomNet, widths: Sequence[int], *, seeds: int = 1, seed: int = 0
                  ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Draw ``(W^l, b^l)`` for ``l = 1..len(widths)-1`` lazily, in a fixed order.

    Lazily so that a deep, wide net never holds more than one layer; in a fixed order
    (``W^1, b^1, W^2, ...``) so that a prefix of ``widths`` gives the same first layers.

    Args:
        net: the `RandomNet` law.
        widths: ``[d_in, N_1, ..., N_L]``, each >= 1.
        seeds: independent nets ``S`` (the batch axis).
        seed: the generator's seed (>= 0).

    Returns:
        An iterator over ``(W, b)``: ``W`` of shape ``(S, N_l, N_(l-1))``, ``b`` of shape
        ``(S, N_l)`` (arguments are checked at the call, not at the first ``next``).

    Raises:
        ValueError: bad ``net``, ``widths``, ``seeds`` or ``seed``.
    """
    net = _net(net)
    widths = [check_int(w, "widths entries", 1) for w in widths]
    if len(widths) < 2:
        raise ValueError(f"widths needs at least [d_in, N_1], got {widths}")
    S, seed = check_int(seeds, "seeds", 1), check_int(seed, "seed", 0)
    return _layer_stream(net, widths, S, seed)


def _layer_stream(net, widths, S, seed):
    gen = _generator(net, seed, _WEIGHTS)
    for n_in, n_out in itertools.pairwise(widths):
        W = _weights(gen, net, S, n_out, n_in)
        yield W, _normal(gen, net, S, n_out) * np.sqrt(net.sigma_b2)


def inputs_at_length(n: int, d_in: int, q: float, net: RandomNet, *, seed: int = 0
                     ) -> torch.Tensor:
    """``n`` random inputs whose first-layer pre-activations have length ``q`` (in mean).

    ``|x|^2 / d_in = (q - sigma_b2) / sigma_w2`` exactly, so ``E[(h^1_i)^2] = q``; with
    ``q = q*`` every layer sits at the fixed point (what E4-E6's predictions assume).

    Args:
        n: number of inputs, >= 1.
        d_in: input dimension, >= 1.
        q: the target length, ``>= sigma_b2``.
        net: the `RandomNet` (its variances, dtype and device).
        seed: seed of the (uniform) directions.

    Returns:
        ``(n, d_in)`` tensor.

    Raises:
        ValueError: bad sizes, ``q < sigma_b2``, or ``sigma_w2 = 0`` with ``q > sigma_b2``.
    """
    net = _net(net)
    n, d_in, seed = check_int(n, "n", 1), check_int(d_in, "d_in", 1), check_int(seed, "seed", 0)
    if isinstance(q, bool) or np.ndim(q) != 0 or not np.isfinite(q) or q < net.sigma_b2:
        raise ValueError(f"q must be a finite scalar >= sigma_b2 = {net.sigma_b2}, got {q!r}")
    if net.sigma_w2 == 0 and q > net.sigma_b2:
        raise ValueError("sigma_w2 = 0: the first layer's length is sigma_b2 for any input")
    r2 = 0.0 if q == net.sigma_b2 else (q - net.sigma_b2) / net.sigma_w2
    gen = _generator(net, seed, _INPUTS)
    g = _normal(gen, net, n, d_in)
    return g / g.norm(dim=1, keepdim=True) * np.sqrt(d_in * r2)


# ----------------------------------------------------------------------------- forward
@dataclass(frozen=True)
class Propagation:
    """Empirical pre-activation second moments of ``S`` random nets, layers ``1..L``.

    Attributes:
        K: ``(S, L, n, n)``, ``K[s, l-1] = h^l h^l^T / N_l`` (the average over units that
            replaces the average over weights: "self-averaging").
    """

    K: torch.Tensor

    @property
    def q(self) -> torch.Tensor:
        """``(S, L, n)``: ``q^l`` per input, the mean square of ``h^l``."""
        return torch.diagonal(self.K, dim1=-2, dim2=-1)

    @property
    def c(self) -> torch.Tensor:
        """``(S, L, n, n)``: ``c^l = q^l_12 / sqrt(q^l_11 q^l_22)``."""
        s = self.q.sqrt()
        return self.K / (s.unsqueeze(-1) * s.unsqueeze(-2))


@torch.no_grad()
def propagate(x, depth: int, net: RandomNet, *, width: int | None = None, seeds: int = 1,
              seed: int = 0) -> Propagation:
    """Run ``n`` inputs through ``seeds`` random nets and record ``q^l``, ``c^l`` (E2).

    The mean-field prediction is `nngp.nngp_kernel` ``(x, depth - 1, ...)``: its ``K^(l-1)``
    is ``h^l``'s covariance (``K^0`` the first layer's), the q-map on the diagonal, the
    c-map off it. Per net the relative error is ``O(1/sqrt(N))``.

    Args:
        x: ``(n, d_in)`` inputs.
        depth: ``L``, number of layers, >= 1.
        net: the `RandomNet` law.
        width: hidden width ``N`` (every layer); ``d_in`` if None.
        seeds: independent nets, >= 1.
        seed: generator seed, >= 0.

    Returns:
        A `Propagation`.

    Raises:
        ValueError: bad ``x``, ``depth``, ``width``, ``seeds``, ``seed`` or ``net``.
    """
    net = _net(net)
    x = _inputs(x, net)
    depth, width, S, seed = _run_args(depth, width, seeds, seed, x.shape[1])
    phi = _PHI[net.activation]
    K = torch.empty(S, depth, x.shape[0], x.shape[0], dtype=net.dtype, device=net.device)
    a = x.expand(S, *x.shape)                                             # (S, n, d_in)
    for layer, (W, b) in enumerate(_layer_stream(net, [x.shape[1]] + [width] * depth, S,
                                                 seed)):
        h = a @ W.transpose(-2, -1) + b.unsqueeze(-2)                     # (S, n, N)
        K[:, layer] = h @ h.transpose(-2, -1) / width
        a = phi(h)
    return Propagation(K)


# ----------------------------------------------------------------------------- backward
@dataclass(frozen=True)
class GradientNorms:
    """Per-layer, per-example gradient statistics at initialisation (E4).

    Attributes:
        weight_sq: ``(S, L, n)``, ``||d loss / d W^l||_F^2 = |delta^l|^2 |x^(l-1)|^2`` (the
            per-example gradient of ``W^l`` is the outer product ``delta^l x^(l-1)^T``).
        delta_sq: ``(S, L, n)``, ``q~^l``: the mean over units of ``(delta^l_i)^2``.
    """

    weight_sq: torch.Tensor
    delta_sq: torch.Tensor

    def profile(self, which: str = "delta_sq") -> torch.Tensor:
        """``(L,)``: each example's statistic divided by its last layer's, averaged over
        seeds and examples (the per-example loss scale ``(y_hat - y)^2`` cancels)."""
        t = getattr(self, which)
        return (t / t[:, -1:]).mean(dim=(0, 2))


@torch.no_grad()
def gradient_norms(x, depth: int, net: RandomNet, *, targets=None, width: int | None = None,
                   seeds: int = 1, seed: int = 0) -> GradientNorms:
    """Backpropagate a squared loss through ``seeds`` random nets: ``E||dL/dW^l||^2`` vs ``l``.

    The loss (our choice; the notes do not name one): a random linear read-out drawn from the net's
    own law, ``y_hat = W^(L+1) x^L + b^(L+1)`` with ``W^(L+1)`` of shape ``(1, N)`` (drawn
    after the hidden layers, so ``propagate`` with the same seed sees the same nets), and
    ``loss = (y_hat - y)^2 / 2`` per example, ``y = 0`` unless ``targets`` are given. Then
    ``delta^l = phi'(h^l) * (W^(l+1)^T delta^(l+1))`` (seed eq. 1.3.6), computed by hand
    (no autograd). Prediction: ``q~^l / q~^L = chi_1^(L-l)`` when the input sits at ``q*``
    (`mean_field.gradient_scaling`). Holds all ``L`` weight matrices: ``S L N^2`` numbers.

    Args:
        x: ``(n, d_in)`` inputs.
        depth: ``L`` >= 1.
        net: the `RandomNet` law.
        targets: ``(n,)`` regression targets; zeros if None.
        width, seeds, seed: as in `propagate`.

    Returns:
        A `GradientNorms`.

    Raises:
        ValueError: bad ``x``, ``targets``, ``depth``, ``width``, ``seeds``, ``seed``, ``net``.
    """
    net = _net(net)
    x = _inputs(x, net)
    depth, width, S, seed = _run_args(depth, width, seeds, seed, x.shape[1])
    y = torch.zeros(x.shape[0], dtype=net.dtype, device=net.device) if targets is None else \
        torch.as_tensor(targets).to(device=net.device, dtype=net.dtype)
    if y.shape != (x.shape[0],) or not torch.isfinite(y).all():
        raise ValueError(f"targets must be finite of shape ({x.shape[0]},), got "
                         f"{tuple(y.shape)}")
    phi, dphi = _PHI[net.activation], _DPHI[net.activation]
    Ws, hs, acts = [], [], [x.expand(S, *x.shape)]                        # acts[l] = x^l
    widths = [x.shape[1]] + [width] * depth + [1]
    for W, b in _layer_stream(net, widths, S, seed):
        Ws.append(W)
        hs.append(acts[-1] @ W.transpose(-2, -1) + b.unsqueeze(-2))      # (S, n, N_l)
        acts.append(phi(hs[-1]))
    residual = hs.pop() - y[:, None]                                      # (S, n, 1)
    g = residual * Ws[-1]                                                 # dloss/dx^L
    weight_sq = torch.empty(S, depth, x.shape[0], dtype=net.dtype, device=net.device)
    delta_sq = torch.empty_like(weight_sq)
    for layer in range(depth, 0, -1):
        delta = dphi(hs[layer - 1]) * g                                   # (S, n, N_l)
        d2 = delta.square().sum(-1)
        weight_sq[:, layer - 1] = d2 * acts[layer - 1].square().sum(-1)
        delta_sq[:, layer - 1] = d2 / delta.shape[-1]
        g = delta @ Ws[layer - 1]                                         # dloss/dx^(l-1)
    return GradientNorms(weight_sq, delta_sq)


# ----------------------------------------------------------------------------- Jacobian
@dataclass(frozen=True)
class JacobianSpectrum:
    """Singular values of the input-output Jacobians ``J = D^L W^L ... D^1 W^1`` (E6).

    Attributes:
        singular_values: ``(S, min(N, d_in))``, descending, one row per net.
        mean_sq_per_layer: ``(S, L)``, ``Tr(J_l^T J_l) / d_in`` of the partial products
            ``J_l = D^l W^l ... D^1 W^1``: the mean of ``lambda`` after ``l`` layers
            (``~ chi_1^l`` at ``q*`` in a square net).
    """

    singular_values: torch.Tensor
    mean_sq_per_layer: torch.Tensor

    @property
    def lam(self) -> torch.Tensor:
        """``(S, min(N, d_in))``: the squared singular values ``lambda = sigma^2``."""
        return self.singular_values.square()

    @property
    def mean(self) -> float:
        """The mean of ``lambda``, pooled over seeds."""
        return float(self.lam.mean())

    @property
    def variance(self) -> float:
        """The variance of ``lambda``, pooled over seeds (the spread: conditioning)."""
        return float(self.lam.var(unbiased=False))


@torch.no_grad()
def jacobian_singular_values(x, depth: int, net: RandomNet, *, width: int | None = None,
                             seeds: int = 1, seed: int = 0) -> JacobianSpectrum:
    """The spectrum of ``dx^L / dx^0`` at input ``x`` for ``seeds`` random nets (E6).

    ``J`` is accumulated as ``J <- D^l (W^l J)`` (``N x N`` matrix products, no autograd),
    then ``torch.linalg.svdvals``. Predictions (`mean_field.jacobian_spectrum_moments`,
    Pennington et al. 2017/2018): mean ``lambda = chi_1^L`` and, at ``chi_1 = 1``, variance
    ``L (mu_2/mu_1^2 - 1 - s_1)`` with ``s_1 = -1`` Gaussian, ``0`` orthogonal; a linear net
    with orthogonal weights and ``sigma_w2 = 1`` is an exact isometry. Put ``x`` at ``q*``
    (`inputs_at_length`) for these to apply.

    Args:
        x: ``(d_in,)``, the one input at which every net's Jacobian is taken.
        depth, net, width, seeds, seed: as in `propagate`.

    Returns:
        A `JacobianSpectrum`.

    Raises:
        ValueError: bad ``x``, ``depth``, ``width``, ``seeds``, ``seed`` or ``net``.
    """
    net = _net(net)
    x = _inputs(x, net, ndim=1)
    depth, width, S, seed = _run_args(depth, width, seeds, seed, x.shape[0])
    phi, dphi = _PHI[net.activation], _DPHI[net.activation]
    a = x.expand(S, 1, x.shape[0])                                        # (S, 1, d_in)
    J = None
    mean_sq = torch.empty(S, depth, dtype=net.dtype, device=net.device)
    for layer, (W, b) in enumerate(_layer_stream(net, [x.shape[0]] + [width] * depth, S,
                                                 seed)):
        h = a @ W.transpose(-2, -1) + b.unsqueeze(-2)                     # (S, 1, N)
        J = W if J is None else W @ J                                     # (S, N, d_in)
        J = dphi(h).transpose(-2, -1) * J                                 # D^l: row scaling
        mean_sq[:, layer] = J.square().sum(dim=(-2, -1)) / x.shape[0]
        a = phi(h)
    return JacobianSpectrum(torch.linalg.svdvals(J), mean_sq)


# ----------------------------------------------------------------------------- curves
@dataclass(frozen=True)
class CurveLengths:
    """Lengths of the image of a great circle, layer by layer (E5).

    Attributes:
        lengths: ``(S, L + 1)``, the closed polygon's length in ``h^0 .. h^L``.
        kept: ``{l: (S, n_theta, N)}``, the curve ``h^l(theta)`` for the requested layers
            (e.g. for E5's 2-D PCA).
    """

    lengths: torch.Tensor
    kept: dict = field(default_factory=dict)

    def relative(self) -> torch.Tensor:
        """``(L + 1,)``: ``length^l / length^0`` averaged over seeds (~ ``chi_1^(l/2)``)."""
        return (self.lengths / self.lengths[:, :1]).mean(dim=0)


def _polygon_length(h: torch.Tensor) -> torch.Tensor:
    """``(S,)`` length of the closed polygon through the rows of ``h`` ``(S, n, N)``."""
    return (torch.roll(h, -1, dims=1) - h).norm(dim=-1).sum(dim=-1)


@torch.no_grad()
def great_circle_lengths(depth: int, net: RandomNet, width: int, *, q0: float | None = None,
                         n_theta: int = 1000, seeds: int = 1, seed: int = 0,
                         keep_layers: Sequence[int] = ()) -> CurveLengths:
    """Push ``h^0(theta) = sqrt(N q0) (u0 cos theta + u1 sin theta)`` through random nets (E5).

    Poole et al. 2016 (their ``h^1``; our ``h^0``): the circle is a layer of
    *pre-activations* at length ``q0`` (default ``q*``), so ``x^0 = phi(h^0)`` feeds layer 1
    and every layer stays at ``q*``. ``u0, u1`` are orthonormal, drawn per net. Each
    infinitesimal arc is stretched by ``chi_1`` in squared length per layer, so the length
    goes like ``chi_1^(l/2)``: it shrinks in the ordered phase and grows in the chaotic one
    (until consecutive points decorrelate: keep ``n_theta`` large). ``n_theta`` points on
    ``[0, 2 pi)``; the length is that of the closed polygon.

    Args:
        depth: ``L`` >= 1.
        net: the `RandomNet` law.
        width: ``N``, the width of ``h^0`` and every layer.
        q0: the circle's length per unit; ``nngp.q_fixed_point`` of ``net`` if None.
        n_theta: points on the circle, >= 3.
        seeds, seed: as in `propagate`.
        keep_layers: layers (``0..L``) whose curves to return.

    Returns:
        A `CurveLengths`.

    Raises:
        ValueError: bad arguments (before any compute). RuntimeError: ``q0`` is None and the
            q-map does not converge (e.g. a linear net).
    """
    net = _net(net)
    depth, width, S, seed = _run_args(depth, check_int(width, "width", 1), seeds, seed, 1)
    n_theta = check_int(n_theta, "n_theta", 3)
    keep = {check_int(k, "keep_layers entries", 0) for k in keep_layers}
    if any(k > depth for k in keep):
        raise ValueError(f"keep_layers must lie in 0..{depth}, got {sorted(keep)}")
    if q0 is None:
        q0 = nngp.q_fixed_point(net.activation, net.sigma_w2, net.sigma_b2)
    elif isinstance(q0, bool) or np.ndim(q0) != 0 or not np.isfinite(q0) or q0 <= 0:
        raise ValueError(f"q0 must be a finite scalar > 0, got {q0!r}")
    kw = {"dtype": net.dtype, "device": net.device}
    gen = _generator(net, seed, _CIRCLE)
    U, _ = torch.linalg.qr(_normal(gen, net, S, width, 2))                # (S, N, 2)
    theta = torch.arange(n_theta, **kw) * (2 * np.pi / n_theta)
    circle = torch.stack([theta.cos(), theta.sin()], dim=-1)             # (n_theta, 2)
    h = np.sqrt(width * q0) * circle @ U.transpose(-2, -1)                # (S, n_theta, N)
    lengths = torch.empty(S, depth + 1, **kw)
    lengths[:, 0] = _polygon_length(h)
    kept = {0: h.clone()} if 0 in keep else {}
    phi = _PHI[net.activation]
    for layer, (W, b) in enumerate(_layer_stream(net, [width] * (depth + 1), S, seed), 1):
        h = phi(h) @ W.transpose(-2, -1) + b.unsqueeze(-2)
        lengths[:, layer] = _polygon_length(h)
        if layer in keep:
            kept[layer] = h.clone()
    return CurveLengths(lengths, kept)
