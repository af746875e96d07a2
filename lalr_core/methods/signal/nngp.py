r"""The NNGP kernel recursion and the mean-field q-/c-maps of random deep nets (``[ATDL-notes]`` sec. 1.2).

Experiment E16 (ours, on the remark on the GP link in sec. 1.2 of the lecture notes
``[ATDL-notes]``; keys: REFERENCES.md): an infinitely wide fully connected net at
initialisation is a Gaussian process whose kernel obeys the same recursion as the c-map
(``[Lee2018]``, arXiv 1711.00165; ``[Poole2016]``, arXiv 1606.05340). Chapter 07 (signal propagation, E1-E6) reuses the
maps `qmap`, `cmap`, `chi1`, `derivative_moment` and `q_fixed_point` below through
`lalr_core.methods.signal.mean_field` (phase diagram, depth scales, Jacobian moments).

The random net (the notes', with A1's ``1/N`` scaling) and the conventions used throughout::

    h^1 = W^1 x + b^1,              W^1_ij ~ N(0, sigma_w2 / d_in)
    h^l = W^l phi(h^(l-1)) + b^l,   W^l_ij ~ N(0, sigma_w2 / N_(l-1)),   b^l_i ~ N(0, sigma_b2)

``K^l`` is the covariance of the pre-activations ``h^(l+1)`` across inputs, so

    K^0(x, x')  = sigma_b2 + sigma_w2 x.x' / d_in                         (input layer)
    K^l(x, x')  = sigma_b2 + sigma_w2 E_{(u, v) ~ N(0, K^(l-1))}[phi(u) phi(v)]

and a net with ``depth = L`` hidden layers has ``K^0..K^L``; ``K^L`` is the covariance of its
(linear) read-out. The empirical counterpart on one random net is

    K_hat^l(x, x') = sigma_b2 + sigma_w2 phi(h^l(x)) . phi(h^l(x')) / N_l    (l >= 1),

the post-activations of hidden layer ``l`` pushed through the next layer's weight and bias
*variances* (the read-out's covariance given the hidden layers, averaged exactly over the
read-out's weights rather than over a finite read-out). ``K_hat^0 = K^0`` exactly: the input
layer is deterministic. Averages over neurons replace averages over weights (the notes'
"self-averaging"), so ``K_hat^l -> K^l`` with a per-net relative error ``O(1/sqrt(N))``.

The expectation ``E[phi(u) phi(v)]``:

* ReLU: the arc-cosine kernel of degree 1 (Cho & Saul 2009, NeurIPS),
  ``sqrt(q1 q2) / (2 pi) (sin t + (pi - t) cos t)``, ``t = arccos c``;
* erf: Williams (1997), ``(2 / pi) arcsin(2 q12 / sqrt((1 + 2 q1)(1 + 2 q2)))``;
* linear: ``q12``;
* anything else (tanh, a callable): 2-D Gauss-Hermite quadrature with probabilists' nodes,
  ``u = sqrt(q1) z1``, ``v = sqrt(q2) (c z1 + sqrt(1 - c^2) z2)`` (the notes' eq. 1.2.2
  parametrisation; its ``e^(-z^2)`` measure is an erratum of the notes: we use
  ``Dz = e^(-z^2/2) / sqrt(2 pi) dz``). Smooth activations converge exponentially in the
  number of nodes, but tanh's slows as ``tanh(sqrt(q) z)`` nears a step: at 101 nodes the
  relative error is ~1e-12 at ``q = 1``, ~1e-8 at ``q = 2``, ~1e-6 at ``q = 4`` and ~1e-4 at
  ``q = 8`` (raise ``nodes`` for large variances). A kinked activation (ReLU through
  quadrature) converges only algebraically, ~1/nodes.

The one-dimensional integrals (`qmap`, `derivative_moment`, `chi1`, `q_fixed_point`) choose
their node count from ``q`` unless given one (`nodes_for`): ``sech^4(sqrt(q) z)``, the
integrand of ``chi_1``, has poles at ``z = i pi / (2 sqrt(q))``, so Gauss-Hermite needs nodes
in proportion to ``q``. With a fixed 101 nodes ``chi_1`` was off by ~1e-5 at ``q = 3`` and
~5e-4 at ``q = 6`` (against adaptive `scipy.integrate.quad`), which moved the critical
``sigma_w2`` at ``sigma_b2 = 2`` from 4.2664 to 4.2611. The 2-D rule keeps a fixed
``nodes`` per dimension (its cost grows as ``nodes^2``).

Everything is float64 numpy; the module does not import torch.

One module (over 400 lines) on purpose: the closed forms, the quadrature and the empirical twin
are one recursion computed three ways and checked against each other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special

from lalr_core.core.validation import check_int, check_nonnegative

# ----------------------------------------------------------------------------- constants
QUAD_NODES = 101           # Gauss-Hermite nodes per dimension (our choice; accuracy: docstring)
# 1-D rules: nodes per unit of q. Measured against adaptive scipy.integrate.quad, the error of
# int Dz sech^4(sqrt(q) z) is ~exp(4.9 - 2.8 sqrt(nodes / q)), so 135 q nodes give ~1e-12
# (q = 4: 1e-12 at 540 nodes, where 101 gave 7e-5); the tanh^2 of the q-map converges faster.
NODES_PER_Q = 135
MAX_NODES = 4001           # the 1-D rule's cap (q ~ 30; beyond, pass nodes explicitly)
_CHUNK = 1 << 21           # max (pairs x nodes^2) quadrature evaluations held at once (16 MB)
SAMPLERS = ("weights", "conditional")

Activation = str | Callable[[np.ndarray], np.ndarray]

_PHI = {
    "relu": lambda x: np.maximum(x, 0.0),
    "erf": special.erf,
    "tanh": np.tanh,
    "linear": lambda x: x,
}
# phi' for chi_1; ReLU's closed form 1/2 is used instead of its step (the node z = 0)
_DPHI = {
    "relu": lambda x: (x > 0).astype(np.float64),
    "erf": lambda x: 2.0 / np.sqrt(np.pi) * np.exp(-np.square(x)),
    "tanh": lambda x: 1.0 / np.square(np.cosh(x)),
    "linear": np.ones_like,
}
_CLOSED = ("relu", "erf", "linear")


# ----------------------------------------------------------------------------- validation
def _activation(activation) -> Activation:
    if callable(activation):
        return activation
    if isinstance(activation, str) and activation.lower() in _PHI:
        return activation.lower()
    raise ValueError(f"activation must be one of {sorted(_PHI)} or a callable, "
                     f"got {activation!r}")


def _phi(activation: Activation) -> Callable[[np.ndarray], np.ndarray]:
    return _PHI[activation] if isinstance(activation, str) else activation


def _inputs(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0 or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite non-empty 2-D array (n_inputs, d_in), got shape "
                         f"{X.shape}")
    return X


def _variances(sigma_w2, sigma_b2) -> tuple[float, float]:
    return check_nonnegative(sigma_w2, "sigma_w2"), check_nonnegative(sigma_b2, "sigma_b2")


def _nonneg_array(q, name: str) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        raise ValueError(f"{name} must be finite and >= 0, got {q!r}")
    return q


# ----------------------------------------------------------------------------- E[phi(u) phi(v)]
@lru_cache(maxsize=64)
def _gh(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights normalised to the N(0, 1) measure.

    scipy's rule rather than ``numpy.polynomial.hermite_e.hermegauss``: numpy's weights
    overflow to NaN beyond ~370 nodes, scipy switches to an asymptotic method there. Cached
    (the q-map iterations ask for the same rule thousands of times); read-only arrays.
    """
    z, w = special.roots_hermitenorm(nodes)
    w = w / np.sqrt(2.0 * np.pi)
    z.flags.writeable = w.flags.writeable = False
    return z, w


def nodes_for(q) -> int:
    """Gauss-Hermite nodes for a 1-D integral of a tanh-like activation at lengths ``q``:
    ``ceil(NODES_PER_Q * max q)``, at least `QUAD_NODES`, at most `MAX_NODES` (~1e-12 for
    ``chi_1`` up to ``q ~ 30``; module docstring).

    Example:
        >>> nodes_for(0.5), nodes_for([1.0, 4.0])
        (101, 540)
    """
    q = np.asarray(q, dtype=np.float64)
    top = float(np.max(q)) if q.size and np.all(np.isfinite(q)) else 0.0
    return int(min(MAX_NODES, max(QUAD_NODES, math.ceil(NODES_PER_Q * top))))


def _nodes_1d(nodes, q) -> int:
    """``nodes`` checked, or `nodes_for` ``q`` when it is None."""
    return nodes_for(q) if nodes is None else check_int(nodes, "nodes", 2)


def _correlation(q1, q2, q12) -> np.ndarray:
    """``q12 / sqrt(q1 q2)`` clipped to [-1, 1] (rounding); 0 where a variance is 0."""
    s = np.sqrt(q1 * q2)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(s > 0, q12 / np.where(s > 0, s, 1.0), 0.0)
    return np.clip(c, -1.0, 1.0)


def _quadrature(q1, q2, c, phi, nodes: int) -> np.ndarray:
    """``E[phi(u) phi(v)]`` by 2-D Gauss-Hermite, flattened pairs processed in chunks.

    The rule is not symmetric in ``u, v`` (``u`` is integrated on the nodes, ``v`` mixes
    both), so each pair is put in a canonical order (larger variance first): the value is then
    a function of the unordered pair, and identical inputs give identical kernel rows.
    """
    z, w = _gh(nodes)
    swap = q1 < q2
    q1, q2 = np.where(swap, q2, q1), np.where(swap, q1, q2)
    s1, s2, c = (np.sqrt(q1).ravel(), np.sqrt(q2).ravel(), c.ravel())
    s = np.sqrt(np.clip(1.0 - c * c, 0.0, None))
    out = np.empty(c.size)
    step = max(1, _CHUNK // (nodes * nodes))
    for a in range(0, c.size, step):
        sl = slice(a, a + step)
        fu = phi(s1[sl, None] * z)                                        # (P, m): phi(u_i)
        v = s2[sl, None, None] * (c[sl, None, None] * z[:, None]
                                  + s[sl, None, None] * z[None, :])       # (P, m_i, m_j)
        inner = phi(v) @ w                                                # (P, m_i)
        out[sl] = (fu * inner) @ w
    return out.reshape(np.shape(q1))


def gaussian_product_expectation(q1, q2, q12, activation: Activation = "relu", *,
                                 nodes: int = QUAD_NODES, closed_form: bool = True
                                 ) -> np.ndarray:
    """``E[phi(u) phi(v)]`` for ``(u, v) ~ N(0, [[q1, q12], [q12, q2]])``, broadcast elementwise.

    Args:
        q1, q2: the variances (>= 0), arrays broadcastable with ``q12``.
        q12: the covariance; ``|q12| <= sqrt(q1 q2)`` up to rounding (clipped there).
        activation: ``"relu"``, ``"erf"``, ``"tanh"``, ``"linear"`` or a numpy callable.
        nodes: Gauss-Hermite nodes per dimension for the quadrature path.
        closed_form: use the closed forms of ReLU (Cho & Saul 2009), erf (Williams 1997) and
            linear; ``False`` forces quadrature (the tests' cross-check).

    Returns:
        float64 array of the broadcast shape.

    Raises:
        ValueError: unknown activation, negative or non-finite variances, ``nodes < 2``.
    """
    act = _activation(activation)
    nodes = check_int(nodes, "nodes", 2)
    q1, q2 = _nonneg_array(q1, "q1"), _nonneg_array(q2, "q2")
    q12 = np.asarray(q12, dtype=np.float64)
    if not np.all(np.isfinite(q12)):
        raise ValueError("q12 must be finite")
    q1, q2, q12 = np.broadcast_arrays(q1, q2, q12)
    c = _correlation(q1, q2, q12)
    if closed_form and act == "relu":
        t = np.arccos(c)
        return np.sqrt(q1 * q2) / (2 * np.pi) * (np.sin(t) + (np.pi - t) * np.cos(t))
    if closed_form and act == "erf":
        # c sqrt(q1 q2) rather than q12: the clipped correlation keeps the arcsin argument in
        # [-1, 1] when rounding pushes |q12| a hair above sqrt(q1 q2)
        return 2 / np.pi * np.arcsin(2 * c * np.sqrt(q1 * q2)
                                     / np.sqrt((1 + 2 * q1) * (1 + 2 * q2)))
    if closed_form and act == "linear":
        return c * np.sqrt(q1 * q2)
    return _quadrature(q1, q2, c, _phi(act), nodes)


def covariance_map(q1, q2, q12, activation: Activation, sigma_w2: float, sigma_b2: float, *,
                   nodes: int = QUAD_NODES, closed_form: bool = True) -> np.ndarray:
    """One layer of the kernel recursion: ``sigma_b2 + sigma_w2 E[phi(u) phi(v)]``.

    The notes' q12-map (eq. 1.2.2) and, on a whole Gram matrix, Lee et al.'s NNGP step.

    Args:
        q1, q2, q12: the layer-``l`` variances and covariance (broadcast elementwise).
        activation, nodes, closed_form: as in `gaussian_product_expectation`.
        sigma_w2, sigma_b2: weight and bias variances (>= 0); weights are ``N(0, sigma_w2/N)``.

    Returns:
        The layer-``l+1`` covariance, float64 of the broadcast shape.

    Raises:
        ValueError: negative variances, or as `gaussian_product_expectation`.
    """
    sw, sb = _variances(sigma_w2, sigma_b2)
    e = gaussian_product_expectation(q1, q2, q12, activation, nodes=nodes,
                                     closed_form=closed_form)
    return sb + sw * e


# ----------------------------------------------------------------------------- q / c maps
def qmap(q, activation: Activation, sigma_w2: float, sigma_b2: float, *,
         nodes: int | None = None, closed_form: bool = True) -> np.ndarray:
    """The length map ``V(q) = sigma_w2 int Dz phi(sqrt(q) z)^2 + sigma_b2`` (the notes' eq. 1.2.1).

    One-dimensional quadrature (``nodes`` points) unless a closed form applies: ReLU
    ``sigma_w2 q / 2 + sigma_b2``, erf ``sigma_w2 (2/pi) arcsin(2q / (1 + 2q)) + sigma_b2``.

    Args:
        q: the layer-``l`` pre-activation variance(s), >= 0 (any shape).
        activation, sigma_w2, sigma_b2, closed_form: as in `covariance_map`.
        nodes: Gauss-Hermite nodes; None: `nodes_for` ``q``.

    Returns:
        ``q^(l+1)``, float64 of ``q``'s shape.

    Raises:
        ValueError: as `covariance_map`.
    """
    act = _activation(activation)
    sw, sb = _variances(sigma_w2, sigma_b2)
    q = _nonneg_array(q, "q")
    nodes = _nodes_1d(nodes, q)
    if closed_form and act in _CLOSED:
        return covariance_map(q, q, q, act, sw, sb)
    z, w = _gh(nodes)
    return sb + sw * (np.square(_phi(act)(np.sqrt(q)[..., None] * z)) @ w)


def cmap(c, q, activation: Activation, sigma_w2: float, sigma_b2: float, *,
         nodes: int = QUAD_NODES, closed_form: bool = True) -> np.ndarray:
    """The correlation map ``c^(l+1) = q12^(l+1) / V(q)`` for two inputs of equal length ``q``.

    Poole et al.'s ``C(c, q, q)``: with ``q11 = q22 = q`` both lengths map to ``V(q)``, so
    ``c^(l+1) = covariance_map(q, q, c q) / qmap(q)``. At the fixed point ``q = q*`` it is the
    notes' c-map (eq. 1.2.2) and ``c* = 1`` is a fixed point. Unequal lengths: use
    `covariance_map` and normalise by both mapped lengths.

    Args:
        c: layer-``l`` correlation(s) in [-1, 1] (any shape, broadcast with ``q``).
        q: the common layer-``l`` length, > 0.
        activation, sigma_w2, sigma_b2, nodes, closed_form: as in `covariance_map`.

    Returns:
        ``c^(l+1)``, float64.

    Raises:
        ValueError: ``c`` outside [-1, 1], ``q <= 0``, ``V(q) = 0``, or as `covariance_map`.
    """
    c = np.asarray(c, dtype=np.float64)
    if not np.all(np.isfinite(c)) or np.any(np.abs(c) > 1):
        raise ValueError(f"c must be in [-1, 1], got {c!r}")
    q = _nonneg_array(q, "q")
    if np.any(q == 0):
        raise ValueError("q must be > 0 (a correlation needs a non-zero length)")
    q_next = qmap(q, activation, sigma_w2, sigma_b2, nodes=nodes, closed_form=closed_form)
    if np.any(q_next == 0):
        raise ValueError("V(q) = 0: the next layer has zero length (sigma_w2 = sigma_b2 = 0?)")
    q12 = covariance_map(q, q, c * q, activation, sigma_w2, sigma_b2, nodes=nodes,
                         closed_form=closed_form)
    return q12 / q_next


def derivative_moment(q, activation: Activation, k: int = 1, *,
                      derivative: Callable[[np.ndarray], np.ndarray] | None = None,
                      nodes: int | None = None) -> np.ndarray:
    """``mu_k(q) = int Dz phi'(sqrt(q) z)^(2k)``, the moments of the squared slope ``D^2``.

    ``mu_1`` gives ``chi_1 = sigma_w2 mu_1`` (`chi1`); ``mu_2 / mu_1^2`` sets the spread of the
    input-output Jacobian's spectrum (Pennington et al. 2017, arXiv 1711.04735, and 2018).
    Closed forms: ReLU ``1/2`` (its step squared is itself, for any ``k``), erf
    ``(4/pi)^k / sqrt(1 + 4 k q)``, linear ``1``; tanh and callables by 1-D Gauss-Hermite.

    Args:
        q: pre-activation variance(s) >= 0 (any shape).
        activation: a name, or a callable together with ``derivative``.
        k: the moment's order, >= 1.
        derivative: ``phi'`` for a callable activation (ignored for a name).
        nodes: Gauss-Hermite nodes; None: `nodes_for` ``q`` (fixed 101 nodes missed
            ``mu_1`` by 7e-5 at ``q = 4``).

    Returns:
        float64 of ``q``'s shape.

    Raises:
        ValueError: a callable activation without ``derivative``, bad ``q``, ``k`` or ``nodes``.
    """
    act = _activation(activation)
    k = check_int(k, "k", 1)
    q = _nonneg_array(q, "q")
    nodes = _nodes_1d(nodes, q)
    if act == "relu":
        return np.full(q.shape, 0.5)
    if act == "erf":
        return (4 / np.pi) ** k / np.sqrt(1 + 4 * k * q)
    if act == "linear":
        return np.ones(q.shape)
    if callable(act):
        if derivative is None:
            raise ValueError("a callable activation needs derivative=phi' for its slope moments")
        dphi = derivative
    else:
        dphi = _DPHI[act]
    z, w = _gh(nodes)
    return np.square(dphi(np.sqrt(q)[..., None] * z)) ** k @ w


def chi1(q, activation: Activation, sigma_w2: float, *,
         derivative: Callable[[np.ndarray], np.ndarray] | None = None,
         nodes: int | None = None) -> np.ndarray:
    """``chi_1 = sigma_w2 int Dz phi'(sqrt(q) z)^2``, the slope of the c-map at ``c = 1``.

    ``[Poole2016]``'s closed form (the notes' derivation in A1 stops at "..." before it). At
    ``q = q*`` it is ``d c^(l+1) / d c^l`` at ``c = 1``: ``< 1`` ordered, ``> 1`` chaotic.
    It is ``sigma_w2`` times `derivative_moment` with ``k = 1`` (its closed forms: ReLU
    ``sigma_w2 / 2``, erf ``sigma_w2 (4/pi) / sqrt(1 + 4q)``, linear ``sigma_w2``).

    Args:
        q: pre-activation variance(s) >= 0.
        activation: a name, or a callable together with ``derivative``.
        sigma_w2: weight variance (>= 0).
        derivative: ``phi'`` for a callable activation (ignored for a name).
        nodes: Gauss-Hermite nodes; None: `nodes_for` ``q``.

    Returns:
        float64 of ``q``'s shape.

    Raises:
        ValueError: a callable activation without ``derivative``, or bad ``q``/``sigma_w2``.
    """
    sw = check_nonnegative(sigma_w2, "sigma_w2")
    return sw * derivative_moment(q, activation, 1, derivative=derivative, nodes=nodes)


def q_fixed_point(activation: Activation, sigma_w2: float, sigma_b2: float, *, q0: float = 1.0,
                  tol: float = 1e-12, max_iter: int = 100_000,
                  nodes: int | None = None) -> float:
    """``q*``, the limit of iterating `qmap` from ``q0`` (the notes' "converges to ``q*``").

    Iteration, not root finding, so it lands on the *stable* fixed point the net reaches (for
    tanh with ``sigma_b2 = 0``: ``q* = 0`` when ``sigma_w2 < 1``, the positive root above).

    Args:
        activation, sigma_w2, sigma_b2: as in `qmap`.
        nodes: Gauss-Hermite nodes; None: `nodes_for` the larger of ``q0`` and, for a
            bounded activation (tanh, erf: ``|phi| <= 1``), the bound ``sigma_w2 + sigma_b2``
            on every iterate (one rule for the whole iteration).
        q0: the starting length (> 0).
        tol: stop when ``|q_(t+1) - q_t| <= tol (1 + q_t)``.
        max_iter: the iteration budget.

    Returns:
        ``q*`` as a float.

    Raises:
        ValueError: bad arguments. RuntimeError: no convergence in ``max_iter`` steps (e.g.
        on the critical line, where it is algebraic, or ReLU with ``sigma_w2 >= 2``, where the
        length grows or stays put for any ``q0``).
    """
    q = check_nonnegative(q0, "q0", positive=True)
    tol = check_nonnegative(tol, "tol", positive=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    nodes = _nodes_1d(nodes, length_bound(activation, sigma_w2, sigma_b2, q))
    for _ in range(max_iter):
        q_next = float(qmap(q, activation, sigma_w2, sigma_b2, nodes=nodes))
        if not np.isfinite(q_next):
            break
        if abs(q_next - q) <= tol * (1 + q):
            return q_next
        q = q_next
    raise RuntimeError(f"qmap did not converge from q0={q0} in {max_iter} iterations "
                       f"(last q={q!r})")


def length_bound(activation: Activation, sigma_w2, sigma_b2, q0) -> np.ndarray:
    """An upper bound on the lengths the q-map visits from ``q0``: ``max(q0, sigma_w2 +
    sigma_b2)`` for a bounded activation (tanh, erf: ``phi^2 <= 1``), else ``q0`` (then a 1-D
    rule chosen from it may be short for large lengths: pass ``nodes``)."""
    q0 = np.asarray(q0, dtype=np.float64)
    if isinstance(activation, str) and activation.lower() in ("tanh", "erf"):
        return np.maximum(q0, np.asarray(sigma_w2, dtype=np.float64)
                          + np.asarray(sigma_b2, dtype=np.float64))
    return q0


# ----------------------------------------------------------------------------- NNGP
def input_kernel(X, sigma_w2: float, sigma_b2: float) -> np.ndarray:
    """``K^0 = sigma_b2 + sigma_w2 X X^T / d_in``: the covariance of the first pre-activations.

    Raises:
        ValueError: ``X`` not a finite non-empty 2-D array, or negative variances.
    """
    X = _inputs(X)
    sw, sb = _variances(sigma_w2, sigma_b2)
    return sb + sw * (X @ X.T) / X.shape[1]


def nngp_kernel(X, depth: int, activation: Activation, sigma_w2: float, sigma_b2: float, *,
                nodes: int = QUAD_NODES, closed_form: bool = True) -> np.ndarray:
    """The infinite-width kernels ``K^0..K^depth`` of a ``depth``-hidden-layer net (Lee et al.).

    ``K^l`` is the covariance across inputs of the pre-activations of layer ``l+1`` (module
    docstring); ``K^depth`` (``[-1]``) is the read-out's, the NNGP kernel of the network. Each
    step applies `covariance_map` to the whole Gram matrix, so the diagonal follows `qmap`.

    Args:
        X: ``(n, d_in)`` inputs.
        depth: number of hidden layers, >= 1.
        activation: ``"relu"``, ``"erf"``, ``"tanh"``, ``"linear"`` or a numpy callable.
        sigma_w2, sigma_b2: weight (``N(0, sigma_w2 / fan_in)``) and bias variances, >= 0.
        nodes, closed_form: as in `gaussian_product_expectation`.

    Returns:
        ``(depth + 1, n, n)`` float64, symmetric PSD per layer.

    Raises:
        ValueError: bad ``X``, ``depth < 1``, negative variances, unknown activation, bad
            ``nodes`` (all before any compute).
    """
    X = _inputs(X)
    depth = check_int(depth, "depth", 1)
    act = _activation(activation)
    sw, sb = _variances(sigma_w2, sigma_b2)
    nodes = check_int(nodes, "nodes", 2)
    K = [input_kernel(X, sw, sb)]
    iu = np.triu_indices(X.shape[0])
    for _ in range(depth):
        prev, d = K[-1], np.diag(K[-1])
        # upper triangle only, then mirrored: halves the quadrature and makes symmetry exact
        up = covariance_map(d[iu[0]], d[iu[1]], prev[iu], act, sw, sb, nodes=nodes,
                            closed_form=closed_form)
        nxt = np.empty_like(prev)
        nxt[iu] = up
        nxt.T[iu] = up
        K.append(nxt)
    return np.stack(K)


# ----------------------------------------------------------------------------- empirical
@dataclass(frozen=True)
class EmpiricalKernel:
    """Empirical kernels ``K_hat^0..K_hat^depth`` of ``seeds`` random nets of one width.

    Attributes:
        per_seed: ``(seeds, depth + 1, n, n)``, one net per row (``[:, 0]`` is ``K^0``).
        width: the hidden width ``N``.
        sampler: ``"weights"`` or ``"conditional"`` (see `empirical_nngp_kernel`).
    """

    per_seed: np.ndarray
    width: int
    sampler: str

    @property
    def mean(self) -> np.ndarray:
        """``(depth + 1, n, n)``: the kernel averaged over seeds."""
        return self.per_seed.mean(axis=0)

    @property
    def std(self) -> np.ndarray:
        """``(depth + 1, n, n)``: the per-entry spread over seeds (ddof 1; 0 for one seed)."""
        if self.per_seed.shape[0] < 2:
            return np.zeros_like(self.per_seed[0])
        return self.per_seed.std(axis=0, ddof=1)

    def relative_errors(self, K, layer: int = -1) -> np.ndarray:
        """Per-seed ``||K_hat_s - K||_F / ||K||_F`` at ``layer`` (``(seeds,)``): ~ 1/sqrt(N).

        Args:
            K: the analytic kernels, ``(depth + 1, n, n)`` from `nngp_kernel`, or one
                ``(n, n)`` matrix for ``layer``.
            layer: which ``K_hat^l`` (default the read-out's).

        Raises:
            ValueError: shape mismatch or ``K`` zero.
        """
        K = np.asarray(K, dtype=np.float64)
        if K.shape == self.per_seed.shape[1:]:
            K = K[layer]
        if K.shape != self.per_seed.shape[2:]:
            raise ValueError(f"K must have shape {self.per_seed.shape[1:]} or "
                             f"{self.per_seed.shape[2:]}, got {K.shape}")
        norm = np.linalg.norm(K)
        if norm == 0:
            raise ValueError("K is zero: relative error undefined")
        return np.linalg.norm(self.per_seed[:, layer] - K, axis=(1, 2)) / norm


def _sqrt_factor(K: np.ndarray) -> np.ndarray:
    """``A`` with ``A^T A = K`` for symmetric PSD ``K`` (eigh, so singular ``K`` is fine)."""
    lam, V = np.linalg.eigh(K)
    return np.sqrt(np.clip(lam, 0.0, None))[:, None] * V.T


def empirical_nngp_kernel(X, depth: int, activation: Activation, sigma_w2: float,
                          sigma_b2: float, width: int, seeds: int, *,
                          seed: int | np.random.Generator = 0,
                          sampler: str = "weights") -> EmpiricalKernel:
    """``K_hat^l = sigma_b2 + sigma_w2 phi(h^l) . phi(h^l) / N`` of ``seeds`` random nets.

    The nets are the module docstring's (weights ``N(0, sigma_w2 / fan_in)``, biases
    ``N(0, sigma_b2)``, ``depth`` hidden layers of ``width`` units), so ``K_hat^l`` estimates
    `nngp_kernel`'s ``K^l`` at every layer, unbiased at ``l = 1`` (and at every layer for a
    linear activation) for any width.

    Two samplers with the same law:

    * ``"weights"``: draws every ``W^l`` and ``b^l`` and runs the net, ``O(depth N^2)`` normals
      per net (~0.1 s per 2048 x 2048 layer on one core);
    * ``"conditional"``: given layer ``l-1``, the ``N`` pre-activation rows ``W^l_i x + b^l_i``
      are iid ``N(0, K_hat^(l-1))`` over the inputs, so it draws them as ``Z A`` with
      ``A^T A = K_hat^(l-1)`` (``O(depth N n)`` normals): exact in distribution, cheap for
      width sweeps with few inputs.

    Args:
        X: ``(n, d_in)`` inputs.
        depth: hidden layers, >= 1.
        activation: as in `nngp_kernel` (a callable must act elementwise on numpy arrays).
        sigma_w2, sigma_b2: weight and bias variances, >= 0.
        width: hidden width ``N`` (every hidden layer), >= 1.
        seeds: number of independent nets, >= 1.
        seed: an int, or a ``numpy.random.Generator`` that is advanced.
        sampler: ``"weights"`` or ``"conditional"``.

    Returns:
        An `EmpiricalKernel` (per-seed kernels, mean, spread, relative errors).

    Raises:
        ValueError: bad ``X``, ``depth``, variances, activation, ``width``, ``seeds``,
            ``seed`` or ``sampler`` (all before any compute).
    """
    X = _inputs(X)
    depth = check_int(depth, "depth", 1)
    phi = _phi(_activation(activation))
    sw, sb = _variances(sigma_w2, sigma_b2)
    width = check_int(width, "width", 1)
    seeds = check_int(seeds, "seeds", 1)
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(
        check_int(seed, "seed (an int >= 0 or a numpy Generator)", 0))
    K0 = input_kernel(X, sw, sb)
    n = X.shape[0]
    out = np.empty((seeds, depth + 1, n, n))
    out[:, 0] = K0
    for s in range(seeds):
        x, K = X, K0
        for layer in range(1, depth + 1):
            if sampler == "weights":
                fan_in = x.shape[1]
                W = rng.standard_normal((fan_in, width)) * np.sqrt(sw / fan_in)
                b = rng.standard_normal(width) * np.sqrt(sb)
                h = x @ W + b                                             # (n, N)
            else:
                h = (rng.standard_normal((width, n)) @ _sqrt_factor(K)).T  # rows ~ N(0, K)
            x = phi(h)
            K = sb + sw * (x @ x.T) / width
            out[s, layer] = K
    return EmpiricalKernel(out, width, sampler)
