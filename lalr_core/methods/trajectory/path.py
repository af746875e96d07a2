"""Path metrics of a trajectory (eqs. 3.1-3.5): ``PathMetrics``, ``path_metrics`` and
the training hook ``TrajectoryCallback`` (registered as ``"trajectory"``).

Part of `lalr_core.methods.trajectory` (its docstring states the conventions).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.methods.trajectory.validation import check_vector, check_window

_FIELDS = ("step_norm", "ds", "dt", "ds_window", "dt_window")  # rows of one per-step record


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
        theta0 = check_vector(theta0, "theta0")
        self.window = check_window(window)
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
        theta = check_vector(theta, "theta")
        if theta.numel() != self.n:
            raise ValueError(f"theta must have {self.n} entries, got {theta.numel()}")
        t, N = self.t + 1, self.window
        x = theta.detach().to(self._ring.device).to(self._dtype)
        prev = self._ring[(t - 1) % (N + 1)]
        start = self._ring[max(t - N, 0) % (N + 1)]  # theta_{t-N} (eq. 3.3), theta_0 if t < N
        step = self._sq_norms(x, prev).sqrt()  # ||s_t||
        self._ds += step  # eq. 3.2
        self._norm_ring[(t - 1) % N] = step
        ds_window = self._norm_ring.sum(0)  # eq. 3.4 with i = t-N+1..t (eq. 3.4's i = N is a typo)
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
    """Names and tensors of the trainable parameters, ``named_parameters()`` order (our choice)."""
    pairs = [(nm, p) for nm, p in model.named_parameters() if p.requires_grad]
    if not pairs:
        raise ValueError("model has no trainable parameters")
    return [nm for nm, _ in pairs], [p for _, p in pairs]


def _flat(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in params])


@CALLBACKS.register("trajectory")
class TrajectoryCallback:
    """Training-loop hook recording ``PathMetrics`` of all trainable parameters.

    ``theta`` is every trainable parameter flattened in ``named_parameters()`` order; buffers
    (BN running statistics) are excluded (our choice; the thesis does not say). With ``per_layer`` each parameter tensor
    is one segment named by its parameter name. Call ``on_step`` after every optimiser step.

    Args:
        window: ``N`` of ``psi_N``. per_layer: also record per-parameter-tensor metrics.
        device: where the ring buffer lives (default: the parameters' device).
        dtype: accumulation dtype, a ``torch.dtype`` or its name (``"float64"``).
    """

    name = "trajectory"

    def __init__(self, window: int, per_layer: bool = True, *, device: str | None = None,
                 dtype: torch.dtype | str = torch.float64):
        self.window = check_window(window)
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


def spike_gain(psi_window, drop: int, window: int) -> float:
    """Largest relative rise of ``psi_N`` within ``window`` steps after an lr drop (figs 3.7,
    3.19): ``max(psi_N(drop+1 .. drop+window)) / psi_N(drop) - 1``.

    Args:
        psi_window: ``(T,)`` ``psi_N(t)`` for ``t = 1..T`` (``PathMetrics.result()``).
        drop: the last step at the old lr, ``1 <= drop < T``.
        window: ``N``, how many steps after the drop are searched.

    Returns:
        The gain (a fraction; ``nan`` where ``psi_N`` is ``nan``, e.g. an unmoved segment).

    Raises:
        ValueError: a bad window, or a drop outside the trajectory (e.g. a run that diverged
            and stopped before it), naming the trajectory's length.
    """
    psi = np.asarray(psi_window, dtype=np.float64)
    N = check_window(window)
    if psi.ndim != 1:
        raise ValueError(f"psi_window must be 1-D, got shape {psi.shape}")
    if isinstance(drop, bool) or not isinstance(drop, (int, np.integer)) \
            or not 1 <= drop < psi.size:
        raise ValueError(f"an lr drop at step {drop!r} is not inside the trajectory of "
                         f"{psi.size} steps (need 1 <= drop < {psi.size})")
    return float(psi[drop:drop + N].max() / psi[drop - 1] - 1)
