"""Directedness of optimisation trajectories (seed 004, sec. 3.2; Appendices A and C).

Chapter 04 (figs 3.7-3.19, A.1). Path metrics of a parameter trajectory ``theta_0, ..., theta_T``:
displacement ``D_t`` (eq. 3.1), path length ``D_s`` (eq. 3.2), directedness ``psi = D_t/D_s``
and its rolling-window form ``psi_N`` (eqs. 3.3-3.5). ``PathMetrics`` is the one streaming
implementation, used both for simulated paths (``path_metrics``) and inside training
(``TrajectoryCallback``). Then the random-walk / AR(1) baselines (simulators and closed forms,
App. A) and the fits of eq. 3.15.

Conventions:
    * Steps are ``t = 1..T`` from the start point ``theta_0``: ``D_t(t) = ||theta_t - theta_0||``
      and ``D_s(t)`` sums ``t`` step norms. The thesis writes eq. 3.1 from ``theta_1`` with
      ``s_1 = 0`` but derives eqs. 3.6-3.8 and the AR bounds with ``t`` real steps from
      ``theta_0``; this module follows the derivations, so the closed forms apply unshifted.
    * Window (G1): ``D_s(t-N)`` sums ``i = t-N+1..t`` (eq. 3.4 prints ``i = N``), and for
      ``t < N`` the window is truncated at ``theta_0``, so ``psi_N(t) = psi(t)`` there.
    * ``0/0`` (no movement at all) gives ``nan``, never 1: an unmoved segment has no direction.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch
from scipy import optimize, special

# ----------------------------------------------------------------------------- constants
SERIES_MIN_N = 100.0  # n >= this: log G(n) from its asymptotic series (lgamma differences lose
#                       digits: at n = 3e5 they give n - 2 G(n)^2 with a 3e-4 relative error)
ALPHA_MAX = 1.0 - 1e-5  # upper bound of alpha in the AR fit (digest G6)
SIGMA_MIN = 1e-12  # lower bound of sigma in the AR fit (G6)
D_MIN_REL = 1e-9  # lower bound of d in the AR fit, relative to max D_t (G6 says d >= 0)
_FIELDS = ("step_norm", "ds", "dt", "ds_window", "dt_window")  # rows of one per-step record


# ----------------------------------------------------------------------------- validation
def _scalar(x, name: str, *, low: float = -np.inf, low_open: bool = False,
            high: float = np.inf, high_open: bool = False) -> float:
    """``float(x)`` after checking it is a finite real scalar in the given interval."""
    if isinstance(x, bool) or np.ndim(x) != 0 or not np.isfinite(x):
        raise ValueError(f"{name} must be a finite scalar, got {x!r}")
    x = float(x)
    if x < low or (low_open and x == low) or x > high or (high_open and x == high):
        lb, rb = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must be in {lb}{low}, {high}{rb}, got {x!r}")
    return x


def _check_alpha(alpha) -> float:
    return _scalar(alpha, "alpha", low=0.0, high=1.0, high_open=True)


def _check_window(window) -> int:
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"window must be an integer >= 1, got {window!r}")
    return int(window)


def _check_vector(theta, name: str) -> torch.Tensor:
    if not isinstance(theta, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(theta).__name__}")
    if theta.ndim != 1 or theta.numel() == 0 or not theta.is_floating_point():
        raise ValueError(f"{name} must be a non-empty 1-D float tensor, got shape "
                         f"{tuple(theta.shape)} and dtype {theta.dtype}")
    return theta


def _steps(t, *, integer: bool = False) -> np.ndarray:
    """Step indices ``t >= 1`` as a float64 (or int64) array."""
    arr = np.asarray(t, dtype=np.float64)
    if arr.size and (not np.all(np.isfinite(arr)) or arr.min() < 1):
        raise ValueError(f"steps t must be finite and >= 1, got min {np.nanmin(arr)!r}")
    if integer:
        if np.any(arr != np.round(arr)):
            raise ValueError("steps t must be integers here")
        return arr.astype(np.int64)
    return arr


def _curves(ds, dt, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Measured ``D_s``, ``D_t`` (1-D, equal length) and their steps (default ``1..T``)."""
    ds, dt = np.asarray(ds, dtype=np.float64), np.asarray(dt, dtype=np.float64)
    if ds.ndim != 1 or ds.shape != dt.shape or ds.size == 0:
        raise ValueError(f"ds and dt must be non-empty 1-D arrays of equal length, got shapes "
                         f"{ds.shape} and {dt.shape}")
    if not (np.all(np.isfinite(ds)) and np.all(np.isfinite(dt))):
        raise ValueError("ds and dt must be finite")
    t = np.arange(1, ds.size + 1) if t is None else _steps(t, integer=True)
    if t.shape != ds.shape:
        raise ValueError(f"t must have the shape of ds {ds.shape}, got {t.shape}")
    return ds, dt, t


# ----------------------------------------------------------------------------- App. A helpers
def _log_g_tail(x: np.ndarray) -> np.ndarray:
    """Return ``log G(2x) - log(x)/2`` for large ``x``.

    Asymptotic series of ``log Gamma(x+1/2) - log Gamma(x)`` (Bernoulli polynomials,
    DLMF 5.11.8); the next term is O(x^-9).
    """
    return -1 / (8 * x) + 1 / (192 * x**3) - 1 / (640 * x**5) + 17 / (14336 * x**7)


def _positive_n(n) -> np.ndarray:
    arr = np.asarray(n, dtype=np.float64)
    if not np.all(arr > 0):  # also rejects nan
        raise ValueError(f"n must be > 0, got {n!r}")
    return arr


def G(n):
    """``G(n) = Gamma((n+1)/2) / Gamma(n/2)`` in float64 log space (eq. A.1).

    ``sqrt(2) G(n)`` is the mean of a chi_n variable (Lemma A.3). Below ``SERIES_MIN_N`` it is
    ``exp(lgamma((n+1)/2) - lgamma(n/2))``; above, ``log G`` comes from its asymptotic series,
    which keeps full precision where the lgamma difference cancels (relative error < 1e-15).
    Note the recurrence is ``G(n) = (n-1)/(n-2) G(n-2)``; the thesis's ``G(n-1)`` is a typo.

    Args:
        n: dimension(s) ``> 0``, float or array.

    Returns:
        float for scalar ``n``, else a float64 array of ``n``'s shape.

    Raises:
        ValueError: if any ``n <= 0``.
    """
    arr = _positive_n(n)
    x = arr / 2
    big = arr >= SERIES_MIN_N
    x_small = np.where(big, 1.0, x)  # keep the unused branch cheap and finite
    small = np.exp(special.gammaln(x_small + 0.5) - special.gammaln(x_small))
    out = np.where(big, np.sqrt(x) * np.exp(_log_g_tail(np.where(big, x, SERIES_MIN_N))), small)
    return float(out) if out.ndim == 0 else out


def norm_variance(sigma, n):
    """``Var ||eps|| = sigma^2 (n - 2 G(n)^2)`` for ``eps ~ N(0, sigma^2 I_n)`` (eq. A.8).

    Also ``Var[D_s(t)] = Var[D_t(t)] = t * norm_variance`` for a random walk (A.22, A.24).
    For large ``n`` the difference is formed as ``-n expm1(2 tail)``: the naive form loses
    all digits by ``n ~ 1e7`` (``2 G^2`` and ``n`` agree to 16 digits).

    Args:
        sigma: noise std ``> 0``.
        n: dimension(s) ``> 0``.

    Returns:
        float or float64 array of ``n``'s shape.
    """
    sigma = _scalar(sigma, "sigma", low=0.0, low_open=True)
    arr = _positive_n(n)
    x = np.where(arr >= SERIES_MIN_N, arr / 2, SERIES_MIN_N)
    series = -arr * np.expm1(2 * _log_g_tail(x))
    out = sigma**2 * np.where(arr >= SERIES_MIN_N, series, arr - 2 * np.asarray(G(arr)) ** 2)
    return float(out) if out.ndim == 0 else out


def _geometric(lam2, k):
    """``sum_{i=0}^{k-1} lam2^i = (1 - lam2^k) / (1 - lam2)`` (A.13), ``k`` when ``lam2 = 1``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (1 - lam2**k) / (1 - lam2)
    return np.where(lam2 == 1, k, ratio)


def decayed_sum_norm_mean(k, lam, sigma, n):
    """``E||sum_{i=1}^k lam^(i-1) eps_i|| = sigma sqrt(2 (1-lam^2k)/(1-lam^2)) G(n)`` (A.14).

    Args:
        k: number of terms ``>= 1`` (int or int array).
        lam: decay in ``[0, 1]`` (``lam = 1`` is the plain sum of Lemma A.9).
        sigma: noise std ``> 0``.
        n: dimension ``> 0``.

    Returns:
        float64 array of ``k``'s shape.
    """
    k = _steps(k, integer=True)
    lam = _scalar(lam, "lam", low=0.0, high=1.0)
    sigma = _scalar(sigma, "sigma", low=0.0, low_open=True)
    return sigma * np.sqrt(2 * _geometric(lam**2, k)) * G(_scalar(n, "n", low=0, low_open=True))


def decayed_sum_sq_norm_mean(k, lam, sigma, n):
    """``E||sum_{i=1}^k lam^(i-1) eps_i||^2 = sigma^2 n (1-lam^2k)/(1-lam^2)`` (A.15)."""
    k = _steps(k, integer=True)
    lam = _scalar(lam, "lam", low=0.0, high=1.0)
    sigma = _scalar(sigma, "sigma", low=0.0, low_open=True)
    return sigma**2 * _scalar(n, "n", low=0, low_open=True) * _geometric(lam**2, k)


def cos_threshold(n, p: float = 0.01):
    """Chebyshev threshold ``k = 1/sqrt(n p)`` of the cosine of random vectors (A.18-A.19).

    ``P[|S_cos| >= k] <= p``; ``p = 0.01`` gives ``10/sqrt(n)`` (A.20).
    """
    p = _scalar(p, "p", low=0.0, low_open=True, high=1.0)
    return 1 / np.sqrt(_positive_n(n) * p)


# ----------------------------------------------------------------------------- closed forms
def rw_expected_ds(t, sigma, n):
    """Random walk ``E[D_s(t)] = t sigma sqrt(2) G(n)`` (eq. 3.6), ``t`` a step array."""
    sigma = _scalar(sigma, "sigma", low=0.0, low_open=True)
    return _steps(t) * sigma * np.sqrt(2) * G(_scalar(n, "n", low=0, low_open=True))


def rw_expected_dt(t, sigma, n):
    """Random walk ``E[D_t(t)] = sigma sqrt(2t) G(n)`` (eqs. 3.7-3.8)."""
    sigma = _scalar(sigma, "sigma", low=0.0, low_open=True)
    return sigma * np.sqrt(2 * _steps(t)) * G(_scalar(n, "n", low=0, low_open=True))


def rw_expected_psi_window(t, window):
    """Random-walk baseline of ``psi_N``: ``1/sqrt(t)`` for ``t < N``, then ``1/sqrt(N)``.

    Eq. 3.14 applied to the window (digest G9); it is the ratio of expectations, which the
    mean of the ratio exceeds by ``O(1/n)`` (eq. 3.12).
    """
    return 1 / np.sqrt(np.minimum(_steps(t), _check_window(window)))


def _check_ar(alpha, sigma, n, d) -> tuple[float, float, float, float]:
    return (_check_alpha(alpha), _scalar(sigma, "sigma", low=0.0, low_open=True),
            _scalar(n, "n", low=0.0, low_open=True), _scalar(d, "d", low=0.0))


def ar_expected_ds(t, alpha, sigma, n, d):
    """Jensen upper bound on the AR(1) ``E[D_s(t)]`` (sec. 3.2.6, via eq. 3.19, A.4, A.10).

    ``sum_{k=1}^t sqrt((1-a)^2 a^(2k-2) d^2 + sigma^2 n ((1-a)(1-a^(2k-2))/(1+a) + 1))``.

    Args:
        t: integer steps ``>= 1``, any order.
        alpha: AR coefficient in ``[0, 1)``; ``alpha = 0`` gives the limit (``0**0 = 1``).
        sigma: noise std ``> 0``.
        n: dimension ``> 0``.
        d: ``||theta_0 - mu|| >= 0`` (the bounds depend on ``theta_0, mu`` only through it).

    Returns:
        float64 array of ``t``'s shape.
    """
    t = _steps(t, integer=True)
    alpha, sigma, n, d = _check_ar(alpha, sigma, n, d)
    if t.size == 0:
        return np.zeros(t.shape)
    a2k = alpha ** (2 * np.arange(t.max(), dtype=np.float64))  # alpha^(2k-2), k = 1..max t
    var = sigma**2 * n * ((1 - alpha) * (1 - a2k) / (1 + alpha) + 1)  # E||b_k + eps_k||^2
    return np.cumsum(np.sqrt((1 - alpha) ** 2 * a2k * d**2 + var))[t - 1]


def ar_expected_dt(t, alpha, sigma, n, d):
    """Jensen upper bound on the AR(1) ``E[D_t(t)] = E||theta_t - theta_0||`` (sec. 3.2.6).

    ``sqrt((1 - a^t)^2 d^2 + sigma^2 n (1 - a^2t)/(1 - a^2))``; arguments as
    ``ar_expected_ds`` (``t`` need not be integer here).
    """
    t = _steps(t)
    alpha, sigma, n, d = _check_ar(alpha, sigma, n, d)
    return np.sqrt((1 - alpha**t) ** 2 * d**2 + sigma**2 * n * _geometric(alpha**2, t))


def ar_limit_ds(t, sigma, n, d):
    """``alpha -> 0`` limit of ``ar_expected_ds``: ``sqrt(d^2 + s^2 n) + (t-1) s sqrt(2n)``."""
    _, sigma, n, d = _check_ar(0.0, sigma, n, d)
    return np.sqrt(d**2 + sigma**2 * n) + (_steps(t) - 1) * sigma * np.sqrt(2 * n)


def ar_limit_dt(t, sigma, n, d):
    """``alpha -> 0`` limit of ``ar_expected_dt``: ``sqrt(d^2 + sigma^2 n)`` for every ``t``."""
    _, sigma, n, d = _check_ar(0.0, sigma, n, d)
    return np.full(_steps(t).shape, np.sqrt(d**2 + sigma**2 * n))


# ----------------------------------------------------------------------------- path metrics
def _segment_ids(segments: Mapping[str, slice] | None, n: int, device: torch.device
                 ) -> tuple[list[str], list[tuple[int, int]], torch.Tensor | None]:
    """Names, ``(start, stop)`` bounds and an ``(n,)`` segment-id map (``S`` = not covered)."""
    if not segments:
        return [], [], None
    names, bounds = [], []
    for name, sl in segments.items():
        if not isinstance(sl, slice) or sl.step not in (None, 1):
            raise ValueError(f"segment {name!r} must be a contiguous slice, got {sl!r}")
        start, stop = 0 if sl.start is None else sl.start, n if sl.stop is None else sl.stop
        if not 0 <= start < stop <= n:
            raise ValueError(f"segment {name!r} needs 0 <= start < stop <= {n}, got {sl!r}")
        names.append(str(name))
        bounds.append((int(start), int(stop)))
    order = sorted(range(len(bounds)), key=lambda i: bounds[i])
    for a, b in zip(order, order[1:], strict=False):
        if bounds[b][0] < bounds[a][1]:
            raise ValueError(f"segments {names[a]!r} and {names[b]!r} overlap")
    ids = torch.full((n,), len(names), dtype=torch.long, device=device)
    for i, (start, stop) in enumerate(bounds):
        ids[start:stop] = i
    return names, bounds, ids


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num/den`` with ``nan`` where ``den == 0`` (a path that has not moved)."""
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


class PathMetrics:
    """Streaming ``D_s``, ``D_t``, ``psi`` and ``psi_N`` of a trajectory (eqs. 3.1-3.5).

    Memory: ``theta_0``, a ring buffer of the last ``N+1`` parameter vectors (``(N+1, n)``
    in ``theta0``'s dtype, on ``device``; it also holds the previous ``theta``), the last ``N``
    step norms, and one ``(5, 1+S)`` record per step. Norms accumulate in ``dtype``
    (float64 by default). Per-segment norms use one ``index_add_`` per reference point, never a
    Python loop over segments. Nothing syncs with the device before ``result()``.

    Args:
        theta0: ``(n,)`` start point ``theta_0``.
        window: ``N >= 1``, the window of ``psi_N`` (the thesis uses 250 batches).
        segments: optional name -> contiguous ``slice`` of the flat vector (e.g. one per
            layer), non-overlapping; entries outside every slice count only globally.
        device: where the buffers live (default ``theta0.device``). A ResNet-50 (25M
            parameters) with ``N = 250`` needs 25 GB of ring buffer: pass ``"cpu"`` then.
        dtype: accumulation dtype of the norms.

    Raises:
        ValueError: on a bad window, non-1-D ``theta0`` or bad/overlapping segments.
    """

    def __init__(self, theta0: torch.Tensor, window: int,
                 segments: Mapping[str, slice] | None = None, *,
                 device: torch.device | str | None = None,
                 dtype: torch.dtype = torch.float64):
        theta0 = _check_vector(theta0, "theta0")
        self.window = _check_window(window)
        self.n = theta0.numel()
        dev = theta0.device if device is None else torch.device(device)
        self._dtype = dtype
        self._names, self._bounds, self._ids = _segment_ids(segments, self.n, dev)
        self._theta0 = theta0.detach().to(dev).clone()
        self._ring = torch.empty((self.window + 1, self.n), dtype=theta0.dtype, device=dev)
        self._ring[0] = self._theta0
        width = 1 + len(self._names)  # column 0: the whole vector, then the segments
        self._norm_ring = torch.zeros((self.window, width), dtype=dtype, device=dev)
        self._ds = torch.zeros(width, dtype=dtype, device=dev)
        self._records: list[torch.Tensor] = []
        self.t = 0

    @property
    def segment_names(self) -> list[str]:
        """Names of the segments, in the order of the ``layer_*`` columns."""
        return list(self._names)

    def _sq_norms(self, theta: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
        """``(1+S,)`` squared norms of ``theta - ref``: whole vector, then each segment."""
        sq = (theta - ref.to(self._dtype)).square()
        if self._ids is None:
            return sq.sum().reshape(1)
        seg = torch.zeros(len(self._names) + 1, dtype=self._dtype, device=sq.device)
        seg.index_add_(0, self._ids, sq)  # segment sums, last bin = uncovered entries
        return torch.cat([sq.sum().reshape(1), seg[:-1]])

    @torch.no_grad()
    def update(self, theta: torch.Tensor) -> None:
        """Record step ``t = self.t + 1`` given the new parameter vector ``theta`` ``(n,)``."""
        theta = _check_vector(theta, "theta")
        if theta.numel() != self.n:
            raise ValueError(f"theta must have {self.n} entries, got {theta.numel()}")
        t, N = self.t + 1, self.window
        x = theta.detach().to(self._ring.device).to(self._dtype)
        prev = self._ring[(t - 1) % (N + 1)]
        start = self._ring[max(t - N, 0) % (N + 1)]  # theta_{t-N} (eq. 3.3), theta_0 if t < N
        step = self._sq_norms(x, prev).sqrt()  # ||s_t||
        self._ds += step  # eq. 3.2
        self._norm_ring[(t - 1) % N] = step
        ds_window = self._norm_ring.sum(0)  # eq. 3.4 with i = t-N+1..t (G1)
        dt = self._sq_norms(x, self._theta0).sqrt()  # eq. 3.1
        dt_window = self._sq_norms(x, start).sqrt()  # eq. 3.3
        self._records.append(torch.stack([step, self._ds.clone(), dt, ds_window, dt_window]))
        self._ring[t % (N + 1)] = theta.detach()
        self.t = t

    def _stacked(self) -> torch.Tensor:
        width = 1 + len(self._names)
        if not self._records:
            return torch.zeros((0, len(_FIELDS), width), dtype=self._dtype)
        return torch.stack(self._records).cpu()

    def result(self) -> dict[str, Any]:
        """Per-step metrics as numpy arrays, index ``i`` = step ``t = i + 1``.

        Returns:
            dict with ``step_norm``, ``ds``, ``dt``, ``psi`` (eq. 3.2/3.1 ratio),
            ``ds_window``, ``dt_window``, ``psi_window`` (eq. 3.5), each ``(T,)``; with
            segments also ``layer_<same>`` arrays ``(T, S)`` and ``layer_names``.
            ``psi`` is ``nan`` where ``D_s = 0``.
        """
        rec = self._stacked().to(torch.float64).numpy()
        out: dict[str, Any] = {}
        for prefix, cols in [("", slice(0, 1)), ("layer_", slice(1, None))]:
            if prefix and not self._names:
                break
            block = {f: rec[:, i, cols] for i, f in enumerate(_FIELDS)}
            block["psi"] = _divide(block["dt"], block["ds"])
            block["psi_window"] = _divide(block["dt_window"], block["ds_window"])
            out.update({prefix + k: (v[:, 0] if not prefix else v) for k, v in block.items()})
        if self._names:
            out["layer_names"] = list(self._names)
        return out

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly (CPU tensors; includes the ``(N+1, n)`` ring)."""
        return {"window": self.window, "t": self.t, "n": self.n,
                "segments": list(zip(self._names, self._bounds, strict=True)),
                "theta0": self._theta0.cpu(), "ring": self._ring.cpu(),
                "norm_ring": self._norm_ring.cpu(), "ds": self._ds.cpu(),
                "records": self._stacked()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore a ``state_dict()`` onto this object's device (same n, window, segments)."""
        mine = list(zip(self._names, self._bounds, strict=True))
        theirs = [(nm, tuple(b)) for nm, b in state["segments"]]
        if (state["window"], state["n"], theirs) != (self.window, self.n, mine):
            raise ValueError(f"state (window={state['window']}, n={state['n']}) does not match "
                             f"this PathMetrics (window={self.window}, n={self.n}) or its segments")
        dev = self._ring.device
        self._theta0 = state["theta0"].to(dev, self._theta0.dtype).clone()
        self._ring = state["ring"].to(dev, self._ring.dtype).clone()
        self._norm_ring = state["norm_ring"].to(dev, self._dtype).clone()
        self._ds = state["ds"].to(dev, self._dtype).clone()
        self._records = list(state["records"].to(dev, self._dtype).unbind(0))
        self.t = int(state["t"])

    @classmethod
    def from_state_dict(cls, state: Mapping[str, Any], *, device=None,
                        dtype: torch.dtype = torch.float64) -> "PathMetrics":
        """Build a ``PathMetrics`` from ``state`` (on ``device``, default CPU)."""
        segments = {nm: slice(*b) for nm, b in state["segments"]} or None
        obj = cls(state["theta0"], state["window"], segments, device=device, dtype=dtype)
        obj.load_state_dict(state)
        return obj


def _trainable(model: torch.nn.Module) -> tuple[list[str], list[torch.Tensor]]:
    """Names and tensors of the trainable parameters, ``named_parameters()`` order (G2)."""
    pairs = [(nm, p) for nm, p in model.named_parameters() if p.requires_grad]
    if not pairs:
        raise ValueError("model has no trainable parameters")
    return [nm for nm, _ in pairs], [p for _, p in pairs]


def _flat(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in params])


class TrajectoryCallback:
    """Training-loop hook recording ``PathMetrics`` of all trainable parameters.

    ``theta`` is every trainable parameter flattened in ``named_parameters()`` order; buffers
    (BN running statistics) are excluded (digest G2). With ``per_layer`` each parameter tensor
    is one segment named by its parameter name. Call ``on_step`` after every optimiser step.

    Args:
        window: ``N`` of ``psi_N``. per_layer: also record per-parameter-tensor metrics.
        device: where the ring buffer lives (default: the parameters' device).
        dtype: accumulation dtype, a ``torch.dtype`` or its name (``"float64"``).
    """

    name = "trajectory"

    def __init__(self, window: int, per_layer: bool = True, *, device: str | None = None,
                 dtype: torch.dtype | str = torch.float64):
        self.window = _check_window(window)
        self.per_layer = bool(per_layer)
        self.device = device
        self.dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        if not isinstance(self.dtype, torch.dtype) or not self.dtype.is_floating_point:
            raise ValueError(f"dtype must be a floating torch dtype, got {dtype!r}")
        self.metrics: PathMetrics | None = None

    def on_train_start(self, model: torch.nn.Module) -> None:
        """Capture ``theta_0`` (skipped when a state was already loaded, i.e. on resume)."""
        names, params = _trainable(model)
        if self.metrics is not None:  # resumed: keep the loaded theta_0
            if self.metrics.n != sum(p.numel() for p in params) or (
                    self.per_layer and self.metrics.segment_names != names):
                raise ValueError("loaded trajectory state does not match the model's parameters")
            return
        segments, start = {}, 0
        for nm, p in zip(names, params, strict=True):
            segments[nm] = slice(start, start + p.numel())
            start += p.numel()
        self.metrics = PathMetrics(_flat(params), self.window,
                                   segments if self.per_layer else None,
                                   device=self.device, dtype=self.dtype)

    def on_step(self, model: torch.nn.Module) -> None:
        """Record the parameters after one optimiser step."""
        if self.metrics is None:
            raise RuntimeError("TrajectoryCallback.on_step called before on_train_start")
        self.metrics.update(_flat(_trainable(model)[1]))

    def result(self) -> dict[str, Any]:
        """``PathMetrics.result()`` (empty dict before ``on_train_start``)."""
        return {} if self.metrics is None else self.metrics.result()

    def state_dict(self) -> dict[str, Any]:
        """Return the constructor settings and the ``PathMetrics`` state (CPU tensors)."""
        return {"window": self.window, "per_layer": self.per_layer,
                "metrics": None if self.metrics is None else self.metrics.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore; works before or after ``on_train_start``."""
        if (state["window"], state["per_layer"]) != (self.window, self.per_layer):
            raise ValueError(f"state window/per_layer {state['window']}/{state['per_layer']} "
                             f"!= {self.window}/{self.per_layer}")
        if state["metrics"] is None:
            self.metrics = None
        elif self.metrics is None:
            self.metrics = PathMetrics.from_state_dict(state["metrics"], device=self.device,
                                                       dtype=self.dtype)
        else:
            self.metrics.load_state_dict(state["metrics"])


# ----------------------------------------------------------------------------- simulators
def _start(value, n: int, name: str) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)) if np.ndim(value) == 0 \
        else np.asarray(value, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a scalar or shape ({n},), got {arr.shape}")
    return arr


def _sim_args(n, T) -> tuple[int, int]:
    for name, v, lo in (("n", n, 1), ("T", T, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an integer >= {lo}, got {v!r}")
    return int(n), int(T)


def simulate_rw(n: int, T: int, sigma: float, theta0=0.0,
                seed: int | np.random.Generator = 0) -> np.ndarray:
    """Gaussian random walk ``theta_t = theta_{t-1} + s_t``, ``s_t ~ N(0, sigma^2 I_n)``.

    Sec. 3.2.4, float64.

    Args:
        n: dimension.
        T: number of steps.
        sigma: step std ``> 0``.
        theta0: start, scalar or ``(n,)``.
        seed: int or numpy ``Generator``.

    Returns:
        ``(T+1, n)`` path, row 0 = ``theta0``.
    """
    n, T = _sim_args(n, T)
    sigma = _scalar(sigma, "sigma", low=0.0, low_open=True)
    path = np.empty((T + 1, n))
    path[0] = _start(theta0, n, "theta0")
    steps = sigma * np.random.default_rng(seed).standard_normal((T, n))
    path[1:] = path[0] + np.cumsum(steps, axis=0)
    return path


def simulate_ar(n: int, T: int, alpha: float, sigma: float, theta0, mu,
                seed: int | np.random.Generator = 0) -> np.ndarray:
    """AR(1) ``theta_t = (1-alpha) mu + alpha theta_{t-1} + eps_t`` (eq. 3.16).

    Args:
        n: dimension.
        T: number of steps.
        alpha: AR coefficient in ``[0, 1)`` (the thesis allows ``(-1, 1)``; the fits and
            plots use ``[0, 1)``).
        sigma: noise std ``> 0``.
        theta0: start, scalar or ``(n,)``.
        mu: mean, scalar or ``(n,)``.
        seed: int or numpy ``Generator``.

    Returns:
        ``(T+1, n)`` float64 path, row 0 = ``theta0``.
    """
    n, T = _sim_args(n, T)
    alpha = _check_alpha(alpha)
    sigma = _scalar(sigma, "sigma", low=0.0, low_open=True)
    mu = _start(mu, n, "mu")
    eps = sigma * np.random.default_rng(seed).standard_normal((T, n))
    path = np.empty((T + 1, n))
    path[0] = _start(theta0, n, "theta0")
    for t in range(1, T + 1):
        path[t] = (1 - alpha) * mu + alpha * path[t - 1] + eps[t - 1]  # eq. 3.16
    return path


def path_metrics(path, window: int | None = None,
                 segments: Mapping[str, slice] | None = None) -> dict[str, Any]:
    """Run ``PathMetrics`` over the rows of a ``(T+1, n)`` path (row 0 = ``theta_0``).

    Args:
        path: ``(T+1, n)`` array.
        window: ``N``; ``None`` means ``N = T`` (so ``psi_window = psi``).
        segments: as in ``PathMetrics``.

    Returns:
        ``PathMetrics.result()``.
    """
    arr = np.asarray(path, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"path must have shape (T+1, n), got {arr.shape}")
    rows = torch.from_numpy(np.ascontiguousarray(arr))
    pm = PathMetrics(rows[0], max(arr.shape[0] - 1, 1) if window is None else window, segments)
    for row in rows[1:]:
        pm.update(row)
    return pm.result()


# ----------------------------------------------------------------------------- fits (eq. 3.15)
def balanced_gamma(ds, dt) -> float:
    """Weight ``gamma = sum D_t^2 / (sum D_s^2 + sum D_t^2)`` of eq. 3.15 (digest G5).

    Both terms of eq. 3.15 then weigh the same at ``sigma = 0``; the thesis gives no value.
    """
    ds, dt, _ = _curves(ds, dt, None)
    total = np.sum(ds**2) + np.sum(dt**2)
    if total == 0:
        raise ValueError("ds and dt are all zero")
    return float(np.sum(dt**2) / total)


def fit_objective(ds, dt, ds_model, dt_model, gamma) -> float:
    """Eq. 3.15: ``sum_i gamma (D_s - D_s^model)^2 + (1 - gamma)(D_t - D_t^model)^2``.

    ``ds_model`` and ``dt_model`` broadcast to the measured curves' shape ``(T,)``.
    """
    ds, dt, _ = _curves(ds, dt, None)
    gamma = _scalar(gamma, "gamma", low=0.0, high=1.0)
    ds_model, dt_model = np.broadcast_to(ds_model, ds.shape), np.broadcast_to(dt_model, dt.shape)
    return float(gamma * np.sum((ds - ds_model) ** 2) + (1 - gamma) * np.sum((dt - dt_model) ** 2))


def fit_rw(ds, dt, n, gamma, t=None) -> dict[str, Any]:
    """Fit the random-walk ``sigma`` to measured ``D_s``, ``D_t`` by eq. 3.15 (sec. 3.2.5).

    Nelder-Mead (the source's method) on ``log sigma``, objective divided by its value at
    ``sigma = 0``. Both expectations are linear in ``sigma``, so the least-squares optimum is
    also returned in closed form (``sigma_lstsq``) as a check.

    Args:
        ds: ``(T,)`` measured path length.
        dt: ``(T,)`` measured displacement.
        n: dimension, the number of parameters ("in same dimension").
        gamma: weight of the ``D_s`` term in ``[0, 1]`` (0 fits ``D_t`` only, Fig 3.18).
        t: integer steps of the curves (default ``1..T``; pass them for subsampled curves).

    Returns:
        dict ``sigma``, ``objective`` (eq. 3.15 value), ``sigma_lstsq``, ``success``,
        ``ds_fit``, ``dt_fit`` (the fitted expectations).
    """
    ds, dt, t = _curves(ds, dt, t)
    gamma = _scalar(gamma, "gamma", low=0.0, high=1.0)
    a, b = rw_expected_ds(t, 1.0, n), rw_expected_dt(t, 1.0, n)  # curves per unit sigma
    scale = fit_objective(ds, dt, 0.0, 0.0, gamma)
    sigma_ls = (gamma * a @ ds + (1 - gamma) * b @ dt) / (gamma * a @ a + (1 - gamma) * b @ b)
    if scale == 0 or not sigma_ls > 0:
        raise ValueError("cannot fit a random walk: the weighted curves are zero or negative")
    moment = (ds[-1] + dt[-1]) / (a[-1] + b[-1])  # a start near, but not at, the optimum
    x0 = np.log(moment if moment > 0 else sigma_ls)

    def loss(x):
        return fit_objective(ds, dt, np.exp(x[0]) * a, np.exp(x[0]) * b, gamma) / scale

    res = optimize.minimize(loss, [x0], method="Nelder-Mead",
                            options=dict(xatol=1e-12, fatol=1e-16, maxiter=4000))
    sigma = float(np.exp(res.x[0]))
    return {"sigma": sigma, "objective": float(res.fun * scale), "sigma_lstsq": float(sigma_ls),
            "success": bool(res.success), "ds_fit": sigma * a, "dt_fit": sigma * b}


def _ar_start(ds, dt, n, gamma, t, init) -> dict[str, float]:
    """G6 start ``alpha = 0.99``, ``sigma`` = RW fit, ``d`` = final ``D_t``; ``init`` overrides."""
    unknown = set(init or {}) - {"alpha", "sigma", "d"}
    if unknown:
        raise ValueError(f"unknown init keys {sorted(unknown)}; allowed: alpha, sigma, d")
    start = {"alpha": 0.99, "d": float(dt[-1])}
    if "sigma" not in (init or {}):
        start["sigma"] = fit_rw(ds, dt, n, gamma, t)["sigma"]
    start.update(init or {})
    _check_ar(start["alpha"], start["sigma"], n, start["d"])
    return start


def fit_ar(ds, dt, n, gamma, init: Mapping[str, float] | None = None, t=None,
           multi_start: bool = True) -> dict[str, Any]:
    """Fit the AR(1) bounds ``(alpha, sigma, d)`` to measured curves by eq. 3.15 (sec. 3.2.7).

    L-BFGS-B (the source's method) over ``(alpha, log sigma, log d)`` with bounds ``alpha in
    [0, ALPHA_MAX]``, ``sigma >= SIGMA_MIN``, ``d >= D_MIN_REL max D_t`` (G6's ``d >= 0``:
    fitting ``d`` itself, ``d = 0`` is a stationary point that traps the search, as ``d``
    enters only as ``d^2``); the objective is divided by its value at zero, and generous upper
    bounds on ``sigma`` and ``d`` keep line searches finite. The objective has local minima
    with small ``d`` and ``alpha`` near 1, so besides the G6 start (``alpha = 0.99``, ``sigma``
    = RW fit, ``d`` = final ``D_t``; ``init`` overrides any of them) ``multi_start`` also
    starts from ``alpha in {0.5, 0.9, 0.999}`` with ``d = 2 max D_t`` and keeps the best.

    Args:
        ds: ``(T,)`` measured path length.
        dt: ``(T,)`` measured displacement.
        n: dimension, the number of parameters.
        gamma: weight of the ``D_s`` term in ``[0, 1]``.
        init: optional start values for any of ``alpha``, ``sigma``, ``d``.
        t: integer steps of the curves (default ``1..T``).
        multi_start: also try the three extra starts (4 L-BFGS-B runs instead of 1).

    Returns:
        dict ``alpha``, ``sigma``, ``d``, ``objective`` (eq. 3.15 value), ``success``,
        ``ds_fit``, ``dt_fit``.
    """
    ds, dt, t = _curves(ds, dt, t)
    gamma = _scalar(gamma, "gamma", low=0.0, high=1.0)
    n = _scalar(n, "n", low=0.0, low_open=True)
    start = _ar_start(ds, dt, n, gamma, t, init)
    scale, d_unit = fit_objective(ds, dt, 0.0, 0.0, gamma), max(float(dt.max()), 1e-300)

    def params(x):  # clipped: finite-difference probes may step just outside the bounds
        return min(max(x[0], 0.0), ALPHA_MAX), np.exp(x[1]), d_unit * np.exp(x[2])

    def curves(x):
        alpha, sigma, d = params(x)
        return ar_expected_ds(t, alpha, sigma, n, d), ar_expected_dt(t, alpha, sigma, n, d)

    lo, log_s = np.log(D_MIN_REL), np.log(max(start["sigma"], SIGMA_MIN))
    # finite upper bounds only keep line searches from overflowing: one step of noise longer
    # than 1e3 x the whole path, or a mean 1e6 x farther than the largest D_t, cannot fit
    bounds = [(0.0, ALPHA_MAX), (np.log(SIGMA_MIN), max(np.log(1e3 * max(ds.max(), dt.max())
                                                              / np.sqrt(n)), log_s)),
              (lo, np.log(1e6))]
    log_d = max(np.log(max(start["d"], 1e-300) / d_unit), lo)
    x0s = [[min(start["alpha"], ALPHA_MAX), log_s, log_d]]
    x0s += [[a, log_s, np.log(2.0)] for a in (0.5, 0.9, 0.999)] if multi_start else []
    runs = [optimize.minimize(lambda x: fit_objective(ds, dt, *curves(x), gamma) / scale, x0,
                              method="L-BFGS-B", bounds=bounds,
                              options=dict(ftol=1e-15, gtol=1e-12, maxiter=2000))
            for x0 in x0s]
    res = min(runs, key=lambda r: r.fun)
    (ds_fit, dt_fit), (alpha, sigma, d) = curves(res.x), params(res.x)
    return {"alpha": float(alpha), "sigma": float(sigma), "d": float(d),
            "objective": float(res.fun * scale), "success": bool(res.success),
            "ds_fit": ds_fit, "dt_fit": dt_fit}
