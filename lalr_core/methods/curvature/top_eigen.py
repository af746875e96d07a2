"""The top Hessian eigenvector from gradients (chapter 05, figs 4.12, 4.13, 4.15-4.18, 4.20).

Source: `[Tuddenham2026]` (M. Tuddenham, PhD thesis, University of Southampton, 2026; see
REFERENCES.md), sec. 4.4.1-4.4.4, listing F.1 and algorithm 5. On a quadratic the gradient is
``g = H r`` with ``r = theta - theta*`` (theorem 4.4, eq. 4.46), so ``g g^T = H r r^T H``
is a sketch of ``H^2`` (eq. 4.55): power-iterating a stack of gradients ``S S^T`` finds the
top eigenvector of ``H`` with no Hessian-vector product. What is here:

* `power_iteration` -- plain power iteration (eqs. 4.42-4.45) on an explicit matrix, a linear
  operator or a matvec callable (fig 4.12; with ``estimate="rayleigh"`` and ``rtol`` also the
  power-iteration side of `lalr_core.methods.curvature.operators`'s comparison with Lanczos), with
  `top_eigenpair` (the reference, ``eigh``) and `random_gram` (the listing's ``H = X^T X``);
* `sampled_gradient_power_iteration` -- one power step per iterate on ``s`` fresh gradients
  (figs 4.13 with ``s = 1`` and 4.17a with ``s = 1000``);
* `TopEigenWindow` -- the rolling window of the last ``s`` gradients, one power step per
  new gradient (listing F.1 block D and algorithm 5), with `rolling_gradient_power_iteration`
  (figs 4.17b, 4.18) and the step sizes of algorithm 5 from the estimated pair
  (`eigenvalue_step_size`, `projection_step_size`, `algorithm5_step_size`; fig 4.20; the
  optimiser is `lalr_core.methods.curvature.eigen_step`).

The gradient statistics of the same section (``phi_t``, fig 4.15; cohesion, fig 4.16) are
`lalr_core.methods.curvature.gradient_statistics`. One module (over 400 lines) on purpose: every
estimator here is listing F.1's power iteration on gradients in one of its variants (explicit
matrix, fresh samples, a rolling window) with the same tolerance and reference rules, and the
step sizes are its estimate put to use.

Listing F.1's bugs and their fixes (each is also named where it is fixed):

* F1 ``torch.eig`` (removed from PyTorch) returns unsorted eigenvalues, so the listing's
  ``eigenvectors[:, 0]`` / ``eigenvalues[0, 0]`` is some eigenpair, not the top one:
  `top_eigenpair` uses ``torch.linalg.eigh`` and takes the largest.
* F2 ``li_norm`` is called but never defined (a ``NameError`` in blocks B, C and E); the
  intended function is the second ``l1_norm``, ``max | |a| - |b| |``: `max_abs_diff`.
* F3 ``l1_norm`` is defined twice, the second (an L-infinity of magnitudes) silently shadowing
  the first (an L1 norm): one name per function here.
* F4 the ``torch.set_printoptions(...)`` line is truncated (a syntax error): dropped.
* F5 no seed is set anywhere: every function takes ``seed`` (or a ``torch.Generator``).
* F6 blocks B-D form the ``n x n`` matrix ``G2 = G @ G.T`` each iterate (``O(n^2 s)``); here
  ``G @ (G.T @ v)`` (``O(n s)``), or a Gram matrix kept up to date by rank-one updates when
  ``n <= s`` (``O(n^2)`` per step) -- the same iterate, which makes ``s = 10 000`` cheap.
* F7 the listing computes in float32 (torch's default); float64 here by default.
* F8 fig 4.17b is drawn by ``iterative_gradients()`` with its default ``sample_size = 100``
  while the caption says 1000: `FIG_4_17B_SAMPLE` = 1000 (the caption names the figure;
  fig 4.18 covers 100 anyway).
* F9 block E (gradient-descent variant, in no numbered figure) records as its eigenvalue the
  norm of the updated iterate, not of ``G2 @ v`` (the author's own ``todo``); block E is not
  implemented here (no figure uses it).
* F10 the start vector ``randn(n)`` is not normalised, so the first eigenvalue estimate is
  ``||H v0||`` with ``||v0|| ~ sqrt(n)`` (and the first ``|delta lambda|`` of block A's stop
  rule with it): start vectors are normalised here (no later direction changes).

Readings of the source: fig 4.13's estimate is ``lambda = sqrt(n)/eps`` and fig 4.17a's
``sqrt(n/s)/eps`` (``n`` the norm of the iterate), as the listing computes them; they are one
formula at ``s = 1``. The source's text says the eigenvalue comes from "the difference in norms between
iterations" (sec. 4.4.1) but its code (and every caption: "the norm of the pre-normalised
iterate") uses the norm itself; we follow the code and the captions. Its claim that fig 4.17a's
estimate "converges to ``||v||_2 = sigma^2 lambda^2 / s``" is garbled: ``||G G^T v|| ~ s eps^2
lambda^2``, so ``sqrt(n/s)/eps ~ lambda``, which is what the code plots. Algorithm 5 as
printed declares ``S`` in ``R^{p x n}`` (it is ``p x s``), reuses ``p`` (the parameter count)
for the projection step size, and stops at ``eta`` (the update ``theta <- theta - eta g`` is
implied); `algorithm5_step_size` returns ``eta`` and leaves the step to the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from lalr_core.core.validation import check_int
from lalr_core.methods.trajectory import check_scalar, check_vector, check_window

# ----------------------------------------------------------------------------- constants
KNOWN_H_SIZE = 100         # listing F.1: ``size = 100, 100``; X ~ randn, H = X^T X (fig 4.12)


KNOWN_H_TOL = 0.05         # listing F.1 block A: stop when |lambda_k - lambda_{k-1}| < 0.05


MAX_ITERS = 100            # listing F.1 blocks A-C: ``for i in range(100)``


GRADIENT_EPS = 0.1         # listing F.1 blocks B, C: r = eps * randn (figs 4.13, 4.17a)


LARGE_SAMPLE = 1000        # listing F.1 block C: ``sample_size = 1000`` (fig 4.17a)


ROLLING_STEPS = 10_000     # listing F.1 block D: ``for i in range(10_000)`` (figs 4.17b, 4.18)


ROLLING_SAMPLES = (100, 1000, 10_000)  # fig 4.18's three panels


FIG_4_17B_SAMPLE = 1000    # fig 4.17b's caption (the code's default is 100; fix F8)


ALG5_SAMPLE = 250          # sec. 4.4.4: "a sample size of 250" (ResNet-20, fig 4.20)


ALG5_ETA_MAX = 1.0         # sec. 4.4.4: "a learning rate -- or learning rate bound -- of 1"


STEP_RULES = ("eigenvalue", "projection")  # algorithm 5's two step-size rules


# ----------------------------------------------------------------------------- helpers
def _generator(seed: int | torch.Generator) -> torch.Generator:
    """A CPU generator from an integer seed, or ``seed`` itself when it is one already."""
    if isinstance(seed, torch.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(  # noqa: TRY004 - a bad setting, like the others
            f"seed must be an int or a torch.Generator, got {seed!r}")
    return torch.Generator().manual_seed(int(seed))


def _square(H, name: str = "H", dtype: torch.dtype = torch.float64,
            symmetric: bool = True) -> torch.Tensor:
    """``H`` as a finite square (symmetric) ``dtype`` tensor, not all zero."""
    H = torch.as_tensor(H).to(dtype)
    if H.ndim != 2 or H.shape[0] != H.shape[1] or H.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {tuple(H.shape)}")
    if not torch.isfinite(H).all():
        raise ValueError(f"{name} has non-finite entries")
    scale = H.abs().max()
    if scale == 0:
        raise ValueError(f"{name} is all zero: it has no top eigenvector")
    if symmetric and (H - H.T).abs().max() > 1e-10 * scale:
        raise ValueError(f"{name} must be symmetric (a Hessian), max |H - H^T| = "
                         f"{float((H - H.T).abs().max()):.3g}")
    return H


def _cos(v: torch.Tensor, ref: torch.Tensor | None) -> float:
    """Signed cosine of ``v`` with the reference (the listing's ``cos phi``; the sign of a
    power-iteration vector is arbitrary, eq. 4.45)."""
    return float(v @ ref / (v.norm() * ref.norm()))


def random_gram(rows: int = KNOWN_H_SIZE, cols: int | None = None, *,
                seed: int | torch.Generator = 0, dtype: torch.dtype = torch.float64
                ) -> torch.Tensor:
    """``H = X^T X`` with ``X ~ N(0, 1)`` of shape ``(rows, cols)``, a ``cols x cols`` PSD matrix.

    Listing F.1's known Hessian is ``rows = cols = 100``; appendix H's is ``500 x 400``
    (`lalr_core.methods.curvature.cumulants`).
    """
    rows = check_int(rows, "rows")
    cols = rows if cols is None else check_int(cols, "cols")
    X = torch.randn(rows, cols, generator=_generator(seed), dtype=dtype)
    return X.T @ X


def top_eigenpair(H) -> tuple[float, torch.Tensor]:
    """The largest eigenvalue of a symmetric ``H`` and its unit eigenvector (float64).

    Fix F1: ``torch.linalg.eigh`` sorts ascending, so the top pair is the last; the listing's
    ``torch.eig(...)[:, 0]`` is an arbitrary pair (and ``torch.eig`` no longer exists).
    """
    w, V = torch.linalg.eigh(_square(H))
    return float(w[-1]), V[:, -1].clone()


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """``max_i | |a_i| - |b_i| |``, the listing's printed "L_inf" between two eigenvectors.

    Taking magnitudes makes it blind to the arbitrary sign of a power-iteration vector (it is
    also blind to per-entry sign flips, so read it beside the cosine). Fixes F2/F3: the listing
    calls it ``li_norm`` (undefined) and defines it as a second ``l1_norm``.
    """
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if a.shape != b.shape or a.numel() == 0:
        raise ValueError(f"a and b must be non-empty and of one shape, got {tuple(a.shape)} "
                         f"and {tuple(b.shape)}")
    return float((a.abs() - b.abs()).abs().max())


@dataclass(frozen=True)
class PowerResult:
    """One run of a power iteration.

    Attributes:
        vector: the final unit iterate ``v`` (a tensor; its sign is arbitrary).
        value: the final eigenvalue estimate.
        values: ``(K,)`` the estimate after each iterate ``k = 1..K``.
        cos: ``(K,)`` signed ``cos phi`` between each iterate and the reference (``None``
            without a reference).
        iters: ``K``, the iterates run. `power_iteration` takes one matrix-vector product per
            iterate, so there ``iters`` is also its cost in products (the unit of the
            power-iteration-versus-Lanczos comparison, `curvature.top_eigenpairs`'s ``matvecs``).
        converged: the stopping rule fired (always ``False`` where there is none).
    """

    vector: torch.Tensor
    value: float
    values: np.ndarray
    cos: np.ndarray | None
    iters: int
    converged: bool


# ----------------------------------------------------------------------------- power iteration
ESTIMATES = ("norm", "rayleigh")  # power_iteration's eigenvalue estimates


class _ListingTol:
    """`power_iteration`'s default ``tol``: `KNOWN_H_TOL` unless ``rtol`` is given."""

    def __repr__(self) -> str:
        return "KNOWN_H_TOL (None if rtol is given)"


_LISTING_TOL = _ListingTol()


def power_iteration(A, v0: torch.Tensor | None = None, *, n: int | None = None,
                    iters: int = MAX_ITERS, tol: float | None | _ListingTol = _LISTING_TOL,
                    rtol: float | None = None, estimate: str = "norm",
                    seed: int | torch.Generator = 0, reference: torch.Tensor | None = None,
                    dtype: torch.dtype = torch.float64,
                    callback: Callable[[int, torch.Tensor, float], None] | None = None
                    ) -> PowerResult:
    """Power iteration ``v <- A v / ||A v||`` (eqs. 4.42-4.45; listing F.1 block A, fig 4.12).

    The one power iteration of the library: the listing's (the defaults) and the curvature
    benchmark's (``estimate="rayleigh"``, ``rtol``, a curvlinops operator; see
    `lalr_core.methods.curvature.operators`, whose ``top_eigenpairs`` is the Lanczos side and whose
    ``matvecs_to_tolerance`` reads the cost of an accuracy from ``values``).

    After ``k`` iterates ``v_k`` is ``A^k v0`` normalised, so its component off the dominant
    eigenvector shrinks like ``|lambda_2 / lambda_1|^k``. One matrix-vector product per
    iterate; no deflation. The estimate after iterate ``k`` is measured on ``v_{k-1}``:

    * ``"norm"`` (the listing's code and caption): ``||A v_{k-1}||``, the norm of the
      pre-normalised iterate, i.e. the *magnitude* of the dominant eigenvalue: for a PSD
      Hessian that is ``lambda_max``; for an indefinite matrix it is the eigenvalue of largest
      ``|lambda|``, whatever its sign.
    * ``"rayleigh"``: the Rayleigh quotient ``v_{k-1}^T A v_{k-1}`` (PyHessian's), which keeps
      the sign: the dominant eigenvalue itself.

    For a symmetric ``A`` both estimates' errors shrink like ``|lambda_2 / lambda_1|^{2k}``.

    Args:
        A: an ``(n, n)`` matrix (tensor or array); a square linear operator, i.e. an object
            with ``shape`` and ``@`` (a curvlinops operator such as
            `curvature.curvature_operator`'s or `curvature.CountingOperator`, which counts the
            products; ``v`` is cast to its dtype and device for each product); or a callable
            ``v -> A v`` on ``(n,)`` tensors (e.g. a Hessian-vector product).
        v0: start vector; default ``N(0, I)`` drawn from ``seed`` on the CPU (as the listing).
        n: the dimension, needed only for a callable ``A`` without ``v0``.
        iters: at most this many iterates (listing: 100).
        tol: stop once ``|lambda_k - lambda_{k-1}| < tol``, an *absolute* change with
            ``lambda_0 = 0`` (listing: 0.05, i.e. ~1e-4 relative for its lambda ~ 380; the
            default when ``rtol`` is not given); ``None`` for no absolute rule.
        rtol: stop once ``|lambda_k - lambda_{k-1}| <= rtol |lambda_k|`` for ``k >= 2`` (a
            *relative* change, PyHessian's rule; > 0); ``None`` (default) for none. Given
            alone, it replaces the listing's ``tol``; given with ``tol``, the first rule to
            fire stops the loop. With neither rule, all ``iters`` run.
        estimate: ``"norm"`` (default, the listing's) or ``"rayleigh"`` (see above).
        seed: seed or generator for ``v0``.
        reference: optional vector (e.g. `top_eigenpair`'s) to record ``cos phi`` against.
        dtype: working dtype (float64 by default; the listing's float32 is fix F7).
        callback: called as ``callback(k, v_k, lambda_k)`` after iterate ``k`` (1-based), with
            the new unit iterate and the estimate recorded for it (what the result would hold
            had the loop stopped there).

    Returns:
        `PowerResult`; ``len(values) == iters`` is the number of products taken.

    Raises:
        ValueError: a non-square/non-finite/zero matrix, a non-square operator, bad
            ``iters``/``tol``/``rtol``/``estimate``, a ``v0`` or ``reference`` of the wrong
            size, or ``A v = 0`` (``v`` in ``A``'s null space) or a non-finite product.
    """
    iters = check_int(iters, "iters")
    if tol is _LISTING_TOL:
        tol = KNOWN_H_TOL if rtol is None else None
    if tol is not None:
        tol = check_scalar(tol, "tol", low=0.0)
    if rtol is not None:
        rtol = check_scalar(rtol, "rtol", low=0.0, low_open=True)
    if estimate not in ESTIMATES:
        raise ValueError(f"estimate must be one of {ESTIMATES}, got {estimate!r}")
    matvec, dim, device = _matvec(A, v0, n, dtype)
    if v0 is None:
        v = torch.randn(dim, generator=_generator(seed), dtype=dtype)
    else:
        v = check_vector(torch.as_tensor(v0), "v0").to(dtype).clone()
        if v.numel() != dim:
            raise ValueError(f"v0 must have {dim} entries, got {v.numel()}")
    if device is not None:
        v = v.to(device)
    v = _unit(v, "v0")  # fix F10
    ref = _reference(reference, dim, dtype)
    if ref is not None:
        ref = ref.to(v.device)
    lam, values, cos, converged = 0.0, [], [], False
    for k in range(1, iters + 1):
        w = torch.as_tensor(matvec(v)).to(dtype).reshape(-1)
        if w.numel() != dim:
            raise ValueError(f"A v must have {dim} entries, got {w.numel()}")
        nrm = float(w.norm())
        if not np.isfinite(nrm) or nrm == 0.0:
            raise ValueError(f"||A v|| = {nrm!r}: v lies in A's null space or A v overflowed")
        new = nrm if estimate == "norm" else float(v @ w.to(v.device))
        delta, lam, v = abs(lam - new), new, (w / nrm).to(v.device)
        values.append(lam)
        if ref is not None:
            cos.append(_cos(v, ref))
        if callback is not None:
            callback(k, v, lam)
        if ((tol is not None and delta < tol)
                or (rtol is not None and k >= 2 and delta <= rtol * abs(lam))):
            converged = True
            break
    return PowerResult(v, lam, np.asarray(values), np.asarray(cos) if ref is not None else None,
                       len(values), converged)


def _matvec(A, v0, n, dtype: torch.dtype):
    """``(v -> A v, dim, device)`` for a matrix, a square operator or a callable ``A``."""
    if isinstance(A, (torch.Tensor, np.ndarray)) or not (
            callable(A) or (hasattr(A, "shape") and hasattr(A, "__matmul__"))):
        M = _square(A, "A", dtype, symmetric=False)
        return M.__matmul__, M.shape[0], M.device
    if hasattr(A, "shape") and hasattr(A, "__matmul__"):  # a linear operator (curvlinops)
        shape = tuple(A.shape)
        if len(shape) != 2 or shape[0] != shape[1] or shape[0] == 0:
            raise ValueError(f"A must be a non-empty square operator, got shape {shape}")
        op_dtype, op_device = getattr(A, "dtype", dtype), getattr(A, "device", None)
        return ((lambda x: A @ x.to(dtype=op_dtype, device=op_device)), int(shape[0]),
                op_device)
    if v0 is None and n is None:
        raise ValueError("a callable A needs v0 or n (its dimension)")
    dim = int(torch.as_tensor(v0).numel()) if v0 is not None else check_int(n, "n")
    return A, dim, v0.device if isinstance(v0, torch.Tensor) else None


def _unit(v: torch.Tensor, name: str) -> torch.Tensor:
    """``v / ||v||`` (fix F10: the listing starts from an unnormalised ``randn`` vector, so
    its first eigenvalue estimate is ``||H v0||`` with ``||v0|| ~ 10``, not a norm of ``H``
    on a unit vector; normalising changes no later direction)."""
    nrm = v.norm()
    if not torch.isfinite(nrm) or nrm == 0:
        raise ValueError(f"{name} must be finite and non-zero")
    return v / nrm


def _reference(reference, dim: int, dtype: torch.dtype) -> torch.Tensor | None:
    if reference is None:
        return None
    ref = check_vector(torch.as_tensor(reference), "reference").to(dtype)
    if ref.numel() != dim or ref.norm() == 0:
        raise ValueError(f"reference must be a non-zero vector of {dim} entries, got "
                         f"{ref.numel()} entries")
    return ref


def sampled_gradient_power_iteration(H, s: int = 1, *, iters: int = MAX_ITERS,
                                     eps: float = GRADIENT_EPS,
                                     v0: torch.Tensor | None = None,
                                     seed: int | torch.Generator = 0,
                                     reference: torch.Tensor | None = None) -> PowerResult:
    """One power step per iterate on ``s`` fresh gradients ``G = H R``, ``R = eps N(0, I)``
    (listing F.1 blocks B and C: fig 4.13 with ``s = 1``, fig 4.17a with ``s = 1000``).

    Each iterate draws ``R`` (``n x s``), forms ``G = H R`` and sets ``v <- G G^T v``,
    normalised, with ``lambda_hat = sqrt(||G G^T v|| / s) / eps`` (``E[G G^T] = s eps^2 H^2``
    makes this ``~ lambda`` once ``v`` is the top eigenvector).

    With ``s = 1`` (fig 4.13) ``G G^T v = g (g . v)`` is parallel to ``g``: every iterate is
    ``+-g_k / ||g_k||``, whatever came before. The iteration has no memory, so nothing can
    converge: ``|cos phi_k| = lambda_1 |r_1| / ||H r||`` is a fresh random draw each
    iterate (the thesis: "neither value is converging"). A stack of ``s >= n`` gradients has
    full rank and ``G G^T / s`` concentrates on ``eps^2 H^2`` (sec. 4.4.3).

    Args:
        H: the ``(n, n)`` symmetric matrix (the gradients are ``H r``).
        s: gradients per iterate. iters: iterates (listing: 100). eps: the scale of ``r``.
        v0: start vector (default ``N(0, I)`` from ``seed``; then the same ``seed`` with another
            ``v0`` draws the same gradients). seed: seed or generator.
        reference: optional vector to record ``cos phi`` against.

    Raises:
        ValueError: bad ``H``, ``s``, ``iters``, ``eps`` or vector sizes.
    """
    H = _square(H)
    n = H.shape[0]
    s, iters = check_int(s, "s"), check_int(iters, "iters")
    eps = check_scalar(eps, "eps", low=0.0, low_open=True)
    gen = _generator(seed)
    if v0 is None:
        v = torch.randn(n, generator=gen, dtype=H.dtype)
    else:
        v = check_vector(torch.as_tensor(v0), "v0").to(H.dtype).clone()
        if v.numel() != n:
            raise ValueError(f"v0 must have {n} entries, got {v.numel()}")
    v = _unit(v, "v0")  # fix F10
    ref = _reference(reference, n, H.dtype)
    values, cos = [], []
    for _ in range(iters):
        G = H @ (eps * torch.randn(n, s, generator=gen, dtype=H.dtype))
        w = G @ (G.T @ v)  # fix F6: never the n x n G @ G.T
        nrm = float(w.norm())
        if nrm > 0:  # zero only if G^T v = 0 exactly (probability 0): keep v
            v = w / nrm
        values.append(np.sqrt(nrm / s) / eps)
        if ref is not None:
            cos.append(_cos(v, ref))
    return PowerResult(v, values[-1], np.asarray(values),
                       np.asarray(cos) if ref is not None else None, iters, False)


# ----------------------------------------------------------------------------- rolling window
class TopEigenWindow:
    """The last ``s`` gradients and one power step per new gradient (listing F.1 block D,
    algorithm 5).

    ``update(g)`` replaces the oldest column of ``S`` (``S_{i mod s}``), sets
    ``v <- S S^T v`` normalised and returns ``lambda_hat = sqrt(||S S^T v|| / s)``. As
    printed, ``v`` and ``S`` start as ``N(0, 1)`` noise (algorithm 5; listing D's
    ``G = torch.randn``; ``v`` is normalised, fix F10), so for the first ``s`` steps the
    random columns (norm ``~sqrt(p)`` each) weigh on the estimate; we keep that, as it is part
    of the method whose failure fig 4.20 reports. ``lambda_hat`` also carries the unknown scale of
    ``r = theta - theta*`` (``g = H r``), so it is ``lambda`` only when ``r ~ N(0, I)`` as in
    block D.

    Storage is ``(s, p)`` in ``dtype`` (ResNet-20, ``p = 269 722`` at ``s = 250``: 270 MB in
    float32). With ``gram=True`` the ``p x p`` Gram matrix ``S^T S`` is kept as well and
    updated by two rank-one terms per step (``O(p^2)`` instead of ``O(p s)``; worth it only for
    the known-matrix experiments with ``p <= s``). It is recomputed from ``S`` every ``s``
    steps, so rounding cannot drift.

    Args:
        p: number of parameters. s: window length (algorithm 5: 250).
        seed: seed or generator for the initial ``v`` and ``S``.
        dtype, device: of the buffers. gram: keep ``S^T S`` (see above).
    """

    def __init__(self, p: int, s: int = ALG5_SAMPLE, *, seed: int | torch.Generator = 0,
                 dtype: torch.dtype = torch.float64, device: torch.device | str | None = None,
                 gram: bool = False):
        self.p, self.s = check_int(p, "p"), check_window(s)
        if not dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating dtype, got {dtype}")
        gen = _generator(seed)
        # algorithm 5: v then S, both N(0, 1) (drawn on the CPU so a seed means one thing)
        self.vector = _unit(torch.randn(self.p, generator=gen, dtype=dtype), "v").to(device)
        self.S = torch.randn(self.s, self.p, generator=gen, dtype=dtype).to(device)
        self.gram = bool(gram)
        self._M = self.S.T @ self.S if self.gram else None
        self.value = float("nan")
        self.t = 0

    @torch.no_grad()
    def update(self, g: torch.Tensor) -> float:
        """Insert gradient ``g`` ``(p,)``, do one power step, return ``lambda_hat``."""
        g = check_vector(g, "g")
        if g.numel() != self.p:
            raise ValueError(f"g must have {self.p} entries, got {g.numel()}")
        g = g.detach().to(self.S.device, self.S.dtype)
        if not torch.isfinite(g).all():
            raise ValueError("g has non-finite entries")
        col = self.t % self.s
        if self._M is not None:
            self._M.addr_(g, g).addr_(self.S[col], self.S[col], alpha=-1.0)
        self.S[col] = g
        self.t += 1
        if self._M is not None and self.t % self.s == 0:
            self._M = self.S.T @ self.S  # refresh: no rounding drift over long runs
        w = self._M @ self.vector if self._M is not None else self.S.T @ (self.S @ self.vector)
        nrm = float(w.norm())
        if nrm > 0:  # zero only when every stored gradient is orthogonal to v: keep v
            self.vector = w / nrm
        self.value = float(np.sqrt(nrm / self.s))
        return self.value


def rolling_gradient_power_iteration(H, s: int = FIG_4_17B_SAMPLE, *,
                                     steps: int = ROLLING_STEPS,
                                     seed: int | torch.Generator = 0,
                                     reference: torch.Tensor | None = None,
                                     gram: bool | None = None, chunk: int = 1024
                                     ) -> PowerResult:
    """Listing F.1 block D (figs 4.17b, 4.18): a `TopEigenWindow` fed ``g_t = H r_t``,
    ``r_t ~ N(0, I)`` (no ``eps``), one power step per gradient.

    The listing records only ``cos phi``; ``values`` also holds ``lambda_hat``, so that the
    estimate can be compared with fig 4.17a's as well. ``gram`` defaults to ``n <= s`` (fix F6). Gradients are drawn ``chunk`` at a
    time (one matrix product per chunk).

    Raises:
        ValueError: bad ``H``, ``s``, ``steps``, ``chunk`` or ``reference``.
    """
    H = _square(H)
    n = H.shape[0]
    steps, chunk = check_int(steps, "steps"), check_int(chunk, "chunk")
    gen = _generator(seed)
    win = TopEigenWindow(n, s, seed=gen, gram=(n <= s) if gram is None else gram)
    ref = _reference(reference, n, H.dtype)
    values, cos = np.empty(steps), np.empty(steps) if ref is not None else None
    for start in range(0, steps, chunk):
        m = min(chunk, steps - start)
        grads = torch.randn(m, n, generator=gen, dtype=H.dtype) @ H  # rows (H r)^T, H = H^T
        for j in range(m):
            values[start + j] = win.update(grads[j])
            if cos is not None:
                cos[start + j] = _cos(win.vector, ref)
    return PowerResult(win.vector, win.value, values, cos, steps, False)


# ----------------------------------------------------------------------------- algorithm 5
def eigenvalue_step_size(lam: float, eta_max: float = ALG5_ETA_MAX) -> float:
    """``min{eta', 2 / lambda_hat}`` (algorithm 5; the bound ``eta <= 2/lambda_max`` of sec.
    4.3.1). Unclipped, ``2/lambda_hat`` "suffers from catastrophic blow-ups" (sec. 4.4.4).
    ``lambda_hat = 0`` gives ``eta'``.

    Raises:
        ValueError: ``lam < 0`` or non-finite, or ``eta_max <= 0``.
    """
    lam = check_scalar(lam, "lam", low=0.0)
    eta_max = check_scalar(eta_max, "eta_max", low=0.0, low_open=True)
    return eta_max if lam == 0.0 else min(eta_max, 2.0 / lam)


def projection_step_size(g: torch.Tensor, v: torch.Tensor,
                         eta_max: float = ALG5_ETA_MAX) -> float:
    """``min{eta', 1 - |g^T v| / (||g|| ||v||)}`` (eq. 4.60, algorithm 5).

    One minus the absolute cosine between the gradient and the estimated top eigenvector: a
    gradient along the high-curvature direction takes a small step; the absolute value absorbs
    the ``+-v`` ambiguity. Eq. 4.59 prints ``proj_g(v) = (g . v / ||g||) g``, whose norm is
    ``|g . v|``, not the ``|g . v| / ||g||`` its eq. 4.60 uses (the true projection divides by
    ``||g||^2``); we use eq. 4.60's first line, which also divides by ``||v||`` (algorithm 5's
    ``v`` is unit). A zero gradient has cosine 0 here (the step is irrelevant then).

    Raises:
        ValueError: bad vectors (shape, size, non-finite) or ``eta_max <= 0``.
    """
    g, v = check_vector(g, "g").double(), check_vector(v, "v").double()
    if g.numel() != v.numel():
        raise ValueError(f"g and v must have one size, got {g.numel()} and {v.numel()}")
    if not (torch.isfinite(g).all() and torch.isfinite(v).all()) or v.norm() == 0:
        raise ValueError("g and v must be finite and v non-zero")
    eta_max = check_scalar(eta_max, "eta_max", low=0.0, low_open=True)
    gn = g.norm()
    cos = 0.0 if gn == 0 else float((g @ v).abs() / (gn * v.norm()))
    return min(eta_max, 1.0 - min(cos, 1.0))


def algorithm5_step_size(window: TopEigenWindow, g: torch.Tensor, rule: str,
                         eta_max: float = ALG5_ETA_MAX) -> tuple[float, float]:
    """One step of algorithm 5: insert ``g``, one power step, then the clipped step size.

    Args:
        window: the `TopEigenWindow` (algorithm 5's ``v`` and ``S``).
        g: this mini-batch's gradient ``(p,)``. rule: ``"eigenvalue"`` or ``"projection"``.
        eta_max: ``eta'``, the step-size limit (fig 4.20: 1).

    Returns:
        ``(eta, lambda_hat)``; the caller steps ``theta <- theta - eta g`` (implied by the
        algorithm, which stops at ``eta``).

    Raises:
        ValueError: an unknown rule, or bad ``g`` / ``eta_max``.
    """
    if rule not in STEP_RULES:
        raise ValueError(f"rule must be one of {STEP_RULES}, got {rule!r}")
    eta_max = check_scalar(eta_max, "eta_max", low=0.0, low_open=True)
    lam = window.update(g)
    if rule == "eigenvalue":
        return eigenvalue_step_size(lam, eta_max), lam
    return projection_step_size(g.to(window.vector.device), window.vector, eta_max), lam
