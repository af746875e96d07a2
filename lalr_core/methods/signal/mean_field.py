r"""Mean-field theory of random deep nets at initialisation: phases, depth scales, isometry.

Chapter 07 (signal propagation; secs. 1.2-1.4 of the lecture notes ``[ATDL-notes]``, our
experiments E1-E6; keys: REFERENCES.md) builds on the maps of `lalr_core.methods.signal.nngp` (``qmap``, ``cmap``,
``chi1``, ``derivative_moment``, ``q_fixed_point``) and adds what they imply:

* the phase diagram ``chi_1(sigma_w2, sigma_b2)`` at ``q*`` over a grid (E1, Poole et al.
  2016, arXiv 1606.05340), and the critical line ``chi_1 = 1``;
* ``c*``, the stable fixed point of the c-map (``< 1`` in the chaotic phase);
* the depth scales of Schoenholz et al. 2017 (arXiv 1611.01232, eqs. 6-9)
  ``xi_q = -1 / ln chi_q`` with ``chi_q = V'(q*)`` the q-map's slope at ``q*`` (Schoenholz et
  al.'s ``chi_1 + sigma_w2 int Dz phi'' phi``), and ``xi_c = -1 / ln chi_c`` with ``chi_c`` the
  c-map's slope at ``c*``: at ``c* = 1`` (ordered) it is ``chi_1``. The notes'
  ``xi_c^-1 = -ln chi_1`` holds only in the ordered phase (an erratum in the notes): there
  ``-ln chi_1 < 0`` in the chaotic phase, while ``chi_c < 1`` on both sides (E3);
* the backward scaling ``q~^l / q~^L = chi_1^(L-l)`` of the gradients (E4; the notes' eq.
  1.3.6 and Schoenholz et al. eq. 12, equal widths);
* the mean and variance of the squared singular values ``lambda`` of the input-output
  Jacobian (E6; Pennington et al. 2017, arXiv 1711.04735, and 2018, arXiv 1802.09979).

Conventions are `nngp`'s: weights ``N(0, sigma_w2 / fan_in)``, biases ``N(0, sigma_b2)``,
Gauss-Hermite with the normalised measure ``Dz`` (the notes' ``e^(-z^2)`` is an erratum).
Everything is float64 numpy.

Quadrature: ``nodes`` is the 1-D rule of ``q*``, ``chi_1`` and ``mu_k``; None (the default)
chooses it from the largest length the q-map can visit (`nngp.nodes_for` of
`nngp.length_bound`), ~1e-12 on ``chi_1``. A fixed 101-node rule put the critical
``sigma_w2`` at ``sigma_b2 = 2`` at 4.2611 where adaptive quadrature gives 4.2664, and
``chi_1`` on E1's grid off by up to 1.7e-3. ``cmap_nodes`` is the 2-D rule of the c-map
(``c*``, ``chi_c``), fixed (cost ``cmap_nodes^2`` per point); its ``C(1) = 1`` is exact
because both of its integrals use it.

One module (over 400 lines) on purpose: every quantity here is a function of the same fixed
points and maps at ``(sigma_w2, sigma_b2)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from lalr_core.core.validation import check_int, check_nonnegative
from lalr_core.methods.signal import nngp
from lalr_core.methods.signal.nngp import QUAD_NODES, Activation

# ----------------------------------------------------------------------------- constants
Q_MAX = 1e8            # a length beyond this counts as divergent (ReLU/linear past chi_1 = 1)
MAX_ITER = 10_000      # q-map iterations per grid point (only near sigma_b2 = 0, chi_1 = 1 slow)
TOL = 1e-12            # |q_(t+1) - q_t| <= TOL (1 + q_t), as nngp.q_fixed_point
C_ONE = 1e-8           # 1 - c* below this: c* is 1 (the c-map excess is under quadrature noise)
INITS = ("gaussian", "orthogonal")
_S1 = {"gaussian": -1.0, "orthogonal": 0.0}   # the S-transform coefficient s_1 of W^T W


# ----------------------------------------------------------------------------- validation
def _grid(x, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError(f"{name} must be a non-empty 1-D array of finite values >= 0, got "
                         f"shape {x.shape}")
    return x


def _variance_arrays(sigma_w2, sigma_b2) -> tuple[np.ndarray, np.ndarray]:
    sw, sb = np.asarray(sigma_w2, dtype=np.float64), np.asarray(sigma_b2, dtype=np.float64)
    for v, name in ((sw, "sigma_w2"), (sb, "sigma_b2")):
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    return np.broadcast_arrays(sw, sb)


def _check_activation(activation, derivative) -> None:
    # nngp validates names lazily; a bad name should fail before any iteration
    nngp.qmap(1.0, activation, 1.0, 0.0, nodes=3)
    if callable(activation) and derivative is None:
        raise ValueError("a callable activation needs derivative=phi' (chi_1 needs phi')")


# ----------------------------------------------------------------------------- q* on a grid
def _fixed_points(activation, sw: np.ndarray, sb: np.ndarray, *, q0: float = 1.0,
                  tol: float = TOL, max_iter: int = MAX_ITER, nodes: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``q*`` at every ``(sw, sb)`` by iterating the q-map, vectorised, converged points frozen.

    ``V(q) = sb + sw E[phi(sqrt(q) z)^2]``: the expectation is nngp's `qmap` with unit weight
    and zero bias variance, so one quadrature serves every grid point. Iteration (not root
    finding) lands on the stable fixed point, as `nngp.q_fixed_point`. ``nodes=None``: one
    rule for the whole grid and iteration, `nngp.nodes_for` the largest `nngp.length_bound`.

    Returns:
        ``(q_star, converged)`` of the broadcast shape; ``q_star = inf`` where the length
        passed ``Q_MAX`` (divergent), the last iterate where ``max_iter`` ran out.
    """
    if nodes is None:
        nodes = nngp.nodes_for(nngp.length_bound(activation, np.max(sw, initial=0.0),
                                                 np.max(sb, initial=0.0), q0))
    q = np.full(sw.shape, float(q0))
    active = np.ones(sw.shape, dtype=bool)
    converged = np.zeros(sw.shape, dtype=bool)
    for _ in range(max_iter):
        if not active.any():
            break
        qa = q[active]
        q_next = sb[active] + sw[active] * nngp.qmap(qa, activation, 1.0, 0.0, nodes=nodes)
        done = np.abs(q_next - qa) <= tol * (1 + qa)
        blown = ~np.isfinite(q_next) | (q_next > Q_MAX)
        q[active] = np.where(blown, np.inf, q_next)
        idx = np.flatnonzero(active)
        converged.flat[idx[done & ~blown]] = True
        active.flat[idx[done | blown]] = False
    return q, converged


@dataclass(frozen=True)
class PhaseGrid:
    """``q*`` and ``chi_1`` over a ``(sigma_w2, sigma_b2)`` grid (E1's phase diagram).

    Attributes:
        sigma_w2: ``(n_w,)`` weight variances (first axis of the maps).
        sigma_b2: ``(n_b,)`` bias variances (second axis).
        q_star: ``(n_w, n_b)`` stable fixed lengths; ``inf`` where the length diverges.
        chi1: ``(n_w, n_b)`` ``chi_1`` at ``q*`` (``nan`` where ``q*`` is infinite).
        converged: ``(n_w, n_b)`` whether the q-map iteration met its tolerance (it is slow,
            algebraic, only on the line ``sigma_b2 = 0`` near ``chi_1 = 1``).
    """

    sigma_w2: np.ndarray
    sigma_b2: np.ndarray
    q_star: np.ndarray
    chi1: np.ndarray
    converged: np.ndarray

    @property
    def chaotic(self) -> np.ndarray:
        """``(n_w, n_b)`` bool: ``chi_1 > 1`` (``c* = 1`` unstable)."""
        return np.nan_to_num(self.chi1, nan=0.0) > 1


def chi1_grid(activation: Activation, sigma_w2_grid, sigma_b2_grid, *, q0: float = 1.0,
              tol: float = TOL, max_iter: int = MAX_ITER, nodes: int | None = None,
              derivative: Callable[[np.ndarray], np.ndarray] | None = None) -> PhaseGrid:
    """``chi_1`` at ``q*`` over the grid ``sigma_w2_grid x sigma_b2_grid`` (E1, Poole Fig. 2).

    ``q*`` per point by iterating the q-map from ``q0`` on the whole grid at once; then
    ``chi_1 = sigma_w2 mu_1(q*)``. E1's 120 x 80 tanh grid took 0.9 s at 101 nodes and takes
    ~8 s at the ~950 nodes ``nodes=None`` chooses for it (measured, shared 2-core CPU). The
    ``chi_1 = 1`` contour is the critical line (`critical_sigma_w2` gives it to ``1e-10``).

    Args:
        activation: ``"tanh"``, ``"erf"``, ``"relu"``, ``"linear"`` or a numpy callable.
        sigma_w2_grid: ``(n_w,)`` weight variances >= 0.
        sigma_b2_grid: ``(n_b,)`` bias variances >= 0.
        q0: the starting length (> 0).
        tol: relative stopping tolerance of the iteration.
        max_iter: iterations before a point is left unconverged (see `PhaseGrid.converged`).
        nodes: Gauss-Hermite nodes of the 1-D rule; None: chosen from the lengths (module
            docstring).
        derivative: ``phi'`` for a callable activation.

    Returns:
        A `PhaseGrid`.

    Raises:
        ValueError: grids not 1-D finite non-negative, bad activation, ``q0``, ``tol``,
            ``max_iter`` or ``nodes`` (before any compute).
    """
    sw1, sb1 = _grid(sigma_w2_grid, "sigma_w2_grid"), _grid(sigma_b2_grid, "sigma_b2_grid")
    _check_activation(activation, derivative)
    q0 = check_nonnegative(q0, "q0", positive=True)
    tol = check_nonnegative(tol, "tol", positive=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    sw, sb = np.meshgrid(sw1, sb1, indexing="ij")                         # (n_w, n_b)
    if nodes is None:
        nodes = nngp.nodes_for(nngp.length_bound(activation, sw1.max(), sb1.max(), q0))
    nodes = check_int(nodes, "nodes", 2)
    q, conv = _fixed_points(activation, sw, sb, q0=q0, tol=tol, max_iter=max_iter,
                            nodes=nodes)
    finite = np.isfinite(q)
    mu1 = np.full(q.shape, np.nan)
    mu1[finite] = nngp.derivative_moment(q[finite], activation, 1, derivative=derivative,
                                         nodes=nodes)
    return PhaseGrid(sw1, sb1, q, sw * mu1, conv)


# ----------------------------------------------------------------------------- critical line
def _scalar_q_star(activation, sw: float, sb: float, nodes: int | None) -> float:
    q, conv = _fixed_points(activation, np.array(sw), np.array(sb), nodes=nodes)
    if not conv:
        raise RuntimeError(f"the q-map did not converge at sigma_w2={sw}, sigma_b2={sb} "
                           f"(last q={float(q)!r}): critical, or a divergent length")
    return float(q)


def critical_sigma_w2(activation: Activation, sigma_b2: float, *, xtol: float = 1e-10,
                      nodes: int | None = None,
                      derivative: Callable[[np.ndarray], np.ndarray] | None = None) -> float:
    """The ``sigma_w2`` with ``chi_1(q*) = 1`` at bias variance ``sigma_b2`` (the critical line).

    ``brentq`` on ``chi_1(q*(sigma_w2), sigma_w2) - 1`` after a scan of ``[0.01, 100]`` for the
    bracket. Special cases: where ``chi_1`` does not depend on ``q`` (ReLU, linear) it is
    ``1 / mu_1`` (2 and 1); at ``sigma_b2 = 0`` with ``phi(0) = 0`` the stable length is
    ``q* = 0`` up to the transition, so it is ``1 / phi'(0)^2`` (tanh 1, erf ``pi / 4``). Our
    reference values for tanh (adaptive quadrature and 301-node Gauss-Hermite agree to 1e-6;
    not in the notes): 1.4242, 1.7610, 1.9861, 2.8432, 3.4432, 4.2664 at ``sigma_b2`` = 0.01,
    0.05, 0.1, 0.5, 1, 2 (Schoenholz et al. use 1.76 at 0.05). An earlier table from a fixed
    101-node rule had 4.261 at ``sigma_b2 = 2``.

    Args:
        activation: a name, or a numpy callable with ``derivative``.
        sigma_b2: bias variance >= 0.
        xtol: absolute tolerance on ``sigma_w2``.
        nodes: Gauss-Hermite nodes of the 1-D rule; None: chosen from the lengths.
        derivative: ``phi'`` for a callable activation.

    Returns:
        The critical ``sigma_w2``.

    Raises:
        ValueError: bad arguments. RuntimeError: no sign change of ``chi_1 - 1`` in
            ``[0.01, 100]``.
    """
    sb = check_nonnegative(sigma_b2, "sigma_b2")
    xtol = check_nonnegative(xtol, "xtol", positive=True)
    if nodes is not None:
        nodes = check_int(nodes, "nodes", 2)
    _check_activation(activation, derivative)

    def mu1(q):
        return float(nngp.derivative_moment(q, activation, 1, derivative=derivative,
                                            nodes=nodes))

    def mu1_fixed(q):
        return float(nngp.derivative_moment(q, activation, 1, derivative=derivative,
                                            nodes=nodes or QUAD_NODES))

    if isinstance(activation, str) and activation.lower() in ("relu", "linear"):
        return 1.0 / mu1(1.0)
    if sb == 0 and float(nngp.qmap(0.0, activation, 1.0, 0.0, nodes=nodes or 3)) == 0:
        return 1.0 / mu1(0.0)                  # chi_1 at q* = 0 is sigma_w2 phi'(0)^2
    scan = np.geomspace(0.01, 100.0, 81)
    # the scan only brackets the root: a fixed rule (a length-100 rule would cost 13 500 nodes)
    q, _ = _fixed_points(activation, scan, np.full_like(scan, sb), nodes=nodes or QUAD_NODES)
    with np.errstate(invalid="ignore"):
        excess = scan * np.array([mu1_fixed(v) if np.isfinite(v) else np.nan for v in q]) - 1
    up = np.flatnonzero((excess[:-1] < 0) & (excess[1:] > 0))
    if up.size == 0:
        raise RuntimeError(f"chi_1 - 1 has no sign change for sigma_w2 in [0.01, 100] at "
                           f"sigma_b2={sb}")
    i = up[0]

    def f(sw):
        return sw * mu1(_scalar_q_star(activation, sw, sb, nodes)) - 1

    lo, hi = scan[max(i - 1, 0)], scan[min(i + 2, scan.size - 1)]   # the scan's rule is coarser
    return float(optimize.brentq(f, lo, hi, xtol=xtol))


# ----------------------------------------------------------------------------- c*
def _cmap_excess(c, q, activation, sw, sb, nodes) -> np.ndarray:
    """``C(c) - c`` at ``q*`` with broadcast variances: nngp's `cmap` (``q12' / V(q)``)
    written through `nngp.gaussian_product_expectation` so that every grid point has its own
    ``sigma_w2, sigma_b2`` (nngp's maps take scalars). Both integrals use the same
    ``nodes``-point rule, so ``C(1) = 1`` holds to rounding."""
    e12 = nngp.gaussian_product_expectation(q, q, c * q, activation, nodes=nodes)
    e11 = nngp.qmap(q, activation, 1.0, 0.0, nodes=nodes)
    return (sb + sw * e12) / (sb + sw * e11) - c


def c_star(activation: Activation, sigma_w2, sigma_b2, *, q_star=None, tol: float = 1e-10,
           nodes: int | None = None, cmap_nodes: int = QUAD_NODES,
           derivative: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """The stable fixed point ``c*`` of the c-map at ``q*``; broadcast over the variances.

    Why bisection on ``[0, 1]`` finds it: ``E[phi(u) phi(v)]`` is a power series in ``c`` with
    non-negative coefficients (the squared Hermite coefficients of ``phi(sqrt(q*) z)``), so
    the excess ``g(c) = C(c) - c`` is convex on ``[0, 1]`` with ``g(0) >= 0`` and ``g(1) = 0``.
    Ordered (``chi_1 = g'(1) + 1 <= 1``): ``g > 0`` below 1 and ``c* = 1``. Chaotic: ``g`` has
    exactly one root in ``[0, 1)``, stable, with ``g > 0`` below and ``< 0`` above it (Poole et
    al. 2016). A root within ``C_ONE`` of 1 is returned as 1.

    Args:
        activation: a name, or a numpy callable with ``derivative``.
        sigma_w2, sigma_b2: variances >= 0 (scalars or broadcastable arrays).
        q_star: the fixed lengths, broadcastable (e.g. `PhaseGrid.q_star`); computed if None.
        tol: bisection tolerance on ``c``.
        nodes: the 1-D rule of ``q*`` and ``chi_1`` (None: from the lengths).
        cmap_nodes: the 2-D rule of the c-map (cost ``cmap_nodes^2`` per point and step).
        derivative: ``phi'`` for a callable activation.

    Returns:
        ``c*`` in ``[0, 1]``, float64 of the broadcast shape (a 0-d array for scalars).

    Raises:
        ValueError: bad arguments, or a ``q_star`` that is not finite and > 0.
        RuntimeError: the q-map did not converge (``q_star`` not given).
    """
    sw, sb = _variance_arrays(sigma_w2, sigma_b2)
    tol = check_nonnegative(tol, "tol", positive=True)
    cmap_nodes = check_int(cmap_nodes, "cmap_nodes", 2)
    if nodes is not None:
        nodes = check_int(nodes, "nodes", 2)
    _check_activation(activation, derivative)
    if q_star is None:
        q, conv = _fixed_points(activation, sw, sb, nodes=nodes)
        if not np.all(conv):
            raise RuntimeError(f"the q-map did not converge at {np.size(conv) - conv.sum()} "
                               f"point(s) (critical at sigma_b2 = 0, or divergent)")
    else:
        q = np.asarray(q_star, dtype=np.float64)
        if not np.all(np.isfinite(q)) or np.any(q <= 0):
            raise ValueError("q_star must be finite and > 0")
    sw, sb, q = np.broadcast_arrays(sw, sb, q)
    chi = sw * nngp.derivative_moment(q, activation, 1, derivative=derivative, nodes=nodes)
    out = np.ones(sw.shape)
    todo = chi > 1
    if todo.any():
        args = (q[todo], activation, sw[todo], sb[todo], cmap_nodes)
        lo, hi = np.zeros(todo.sum()), np.ones(todo.sum())
        for _ in range(int(np.ceil(np.log2(1 / tol)))):
            mid = (lo + hi) / 2
            above = _cmap_excess(mid, *args) < 0             # g < 0: mid lies above c*
            hi, lo = np.where(above, mid, hi), np.where(above, lo, mid)
        c = (lo + hi) / 2
        out[todo] = np.where(1 - c < C_ONE, 1.0, c)
    return out


# ----------------------------------------------------------------------------- depth scales
@dataclass(frozen=True)
class DepthScales:
    """The depth scales at one setting (Schoenholz et al. 2017; chapter 07's E3 table).

    Attributes:
        q_star, chi1, c_star: the fixed length, ``chi_1`` at it, the stable correlation.
        chi_q: ``V'(q*)``, the q-map's slope; ``|q^l - q*| ~ chi_q^l``.
        chi_c: the c-map's slope at ``c*`` (``chi_1`` when ``c* = 1``).
        xi_q, xi_c: ``-1 / ln chi``, in layers (``inf`` at ``chi = 1``).
        xi_grad: ``-1 / ln chi_1``, the gradient depth scale (negative: gradients explode).
    """

    q_star: float
    chi1: float
    c_star: float
    chi_q: float
    chi_c: float
    xi_q: float
    xi_c: float
    xi_grad: float


def _xi(chi: float) -> float:
    """``-1 / ln chi``; ``inf`` at ``chi = 1`` (the critical line's divergence)."""
    return np.inf if chi == 1 else float(-1.0 / np.log(chi))


def depth_scales(activation: Activation, sigma_w2: float, sigma_b2: float, *,
                 nodes: int | None = None, cmap_nodes: int = QUAD_NODES,
                 derivative: Callable[[np.ndarray], np.ndarray] | None = None) -> DepthScales:
    """Slopes of the q- and c-maps at their fixed points and the depth scales they set (E3).

    ``chi_q`` and (in the chaotic phase) ``chi_c`` are central differences of nngp's `qmap`
    and `cmap` (step ``1e-5`` relative; error ~1e-9). Our reference values for tanh
    at ``sigma_b2 = 0.05`` (computed independently while planning, not in the notes):
    ``xi_q`` = 1.75, 1.68, 1.52, 1.18, 0.87 and ``xi_c`` = 3.6, 15.8, ~1e3, 11.8, 7.0 at
    ``sigma_w2`` = 1, 1.5, 1.76, 2.5, 4.

    Args:
        activation: a name, or a numpy callable with ``derivative``.
        sigma_w2, sigma_b2: variances >= 0.
        nodes: the 1-D rule (None: from the lengths; module docstring).
        cmap_nodes: the 2-D rule of the c-map (``c*``, ``chi_c``).
        derivative: ``phi'`` for a callable activation.

    Returns:
        A `DepthScales`.

    Raises:
        ValueError: bad arguments. RuntimeError: the q-map did not converge.
    """
    sw, sb = check_nonnegative(sigma_w2, "sigma_w2"), check_nonnegative(sigma_b2, "sigma_b2")
    if nodes is not None:
        nodes = check_int(nodes, "nodes", 2)
    cmap_nodes = check_int(cmap_nodes, "cmap_nodes", 2)
    _check_activation(activation, derivative)
    q = _scalar_q_star(activation, sw, sb, nodes)
    chi = float(nngp.chi1(q, activation, sw, derivative=derivative, nodes=nodes))
    h = 1e-5 * max(q, 1e-3)
    lo = max(q - h, 0.0)                     # one-sided at q* = 0 (sigma_b2 = 0, ordered)
    v = nngp.qmap(np.array([lo, q + h]), activation, sw, sb, nodes=nodes)
    chi_q = float((v[1] - v[0]) / (q + h - lo))
    if q == 0:
        c, chi_c = 1.0, chi
    else:
        c = float(c_star(activation, sw, sb, q_star=q, nodes=nodes, cmap_nodes=cmap_nodes,
                         derivative=derivative))
        if c == 1.0:
            chi_c = chi
        else:
            hc = min(1e-5, (1 - c) / 2)
            f = nngp.cmap(np.array([c - hc, c + hc]), q, activation, sw, sb, nodes=cmap_nodes)
            chi_c = float((f[1] - f[0]) / (2 * hc))
    return DepthScales(q, chi, c, chi_q, chi_c, _xi(chi_q), _xi(min(chi_c, 1.0)), _xi(chi))


def xi_q(activation: Activation, sigma_w2: float, sigma_b2: float, **kw) -> float:
    """``xi_q = -1 / ln V'(q*)`` (Schoenholz et al. eq. 6); see `depth_scales` for ``kw``."""
    return depth_scales(activation, sigma_w2, sigma_b2, **kw).xi_q


def xi_c(activation: Activation, sigma_w2: float, sigma_b2: float, **kw) -> float:
    """``xi_c = -1 / ln chi_c`` (Schoenholz et al. eq. 9), ``inf`` on the critical line."""
    return depth_scales(activation, sigma_w2, sigma_b2, **kw).xi_c


# ----------------------------------------------------------------------------- gradients
def gradient_scaling(activation: Activation, sigma_w2: float, sigma_b2: float, depth: int, *,
                     nodes: int | None = None,
                     derivative: Callable[[np.ndarray], np.ndarray] | None = None
                     ) -> np.ndarray:
    """``q~^l / q~^L = chi_1^(L-l)``, ``l = 1..L``: the backward mean-field prediction (E4).

    ``q~^l = E[(delta^l_i)^2]`` obeys ``q~^l = q~^(l+1) (N_(l+1) / N_l) chi_1`` (seed eq.
    1.3.6; Schoenholz et al. eq. 12) when every layer sits at ``q*`` and widths are equal.
    ``E||dL/dW^l||^2 = N^2 q~^l E[phi(h^(l-1))^2]`` then scales the same way for ``l >= 2``.

    Args:
        activation, sigma_w2, sigma_b2, nodes, derivative: as in `depth_scales`.
        depth: ``L``, the number of layers, >= 1.

    Returns:
        ``(depth,)`` float64, the last entry 1.

    Raises:
        ValueError: bad arguments. RuntimeError: the q-map did not converge.
    """
    sw, sb = check_nonnegative(sigma_w2, "sigma_w2"), check_nonnegative(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 1)
    if nodes is not None:
        nodes = check_int(nodes, "nodes", 2)
    _check_activation(activation, derivative)
    q = _scalar_q_star(activation, sw, sb, nodes)
    chi = float(nngp.chi1(q, activation, sw, derivative=derivative, nodes=nodes))
    return chi ** np.arange(depth - 1, -1, -1, dtype=np.float64)


# ----------------------------------------------------------------------------- Jacobian
def jacobian_spectrum_moments(activation: Activation, sigma_w2: float, sigma_b2: float,
                              depth: int, init: str = "gaussian", *, q=None,
                              nodes: int | None = None,
                              derivative: Callable[[np.ndarray], np.ndarray] | None = None
                              ) -> tuple[float, float]:
    """Mean and variance of ``lambda = sigma^2`` of ``J = prod_l D^l W^l`` (wide limit, E6).

    Free probability (Pennington et al. 2017 eqs. 12-16; 2018): the S-transforms of the free
    factors multiply, so means multiply and normalised variances add:
    ``mean = chi_1^L`` and ``var = chi_1^(2L) L (mu_2 / mu_1^2 - 1 - s_1)``, with
    ``mu_k = E[phi'(sqrt(q) z)^(2k)]`` and ``s_1 = -1`` (Gaussian ``W``) or ``0``
    (orthogonal). At ``chi_1 = 1`` this is Pennington et al.'s ``L (mu_2/mu_1^2 - 1 - s_1)``; the
    ``chi_1^(2L)`` factor off criticality is our extension of it. ``mean = chi_1^L`` is the
    *mean* squared singular value (the notes call it the "second moment of the squared
    singular value distribution": an erratum in the notes). Valid when every layer sits at ``q``.

    Args:
        activation, sigma_w2, sigma_b2, nodes, derivative: as in `depth_scales`.
        depth: ``L`` >= 1.
        init: ``"gaussian"`` or ``"orthogonal"`` weights.
        q: the common pre-activation length; ``q*`` if None (unused for ReLU/linear, whose
            ``mu_k`` do not depend on it).

    Returns:
        ``(mean, variance)`` of the squared singular values.

    Raises:
        ValueError: bad arguments. RuntimeError: ``q`` is None and the q-map did not converge.
    """
    sw, sb = check_nonnegative(sigma_w2, "sigma_w2"), check_nonnegative(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 1)
    if nodes is not None:
        nodes = check_int(nodes, "nodes", 2)
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    _check_activation(activation, derivative)
    if q is not None:
        q = check_nonnegative(q, "q")
    elif isinstance(activation, str) and activation.lower() in ("relu", "linear"):
        q = 1.0
    else:
        q = _scalar_q_star(activation, sw, sb, nodes)
    mu1, mu2 = (float(nngp.derivative_moment(q, activation, k, derivative=derivative,
                                             nodes=nodes)) for k in (1, 2))
    mean = (sw * mu1) ** depth
    return mean, mean ** 2 * depth * (mu2 / mu1 ** 2 - 1 - _S1[init])
