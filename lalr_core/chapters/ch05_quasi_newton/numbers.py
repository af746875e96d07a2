"""Chapter 05's per-run numbers: held-out loss and accuracy, volatility, divergence, the
crossover epoch, and the probes' phi_t and cohesion summaries the checks judge."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from lalr_core.methods import top_eigen as te


def held_out_loss(res: dict) -> np.ndarray:
    """Held-out loss after every epoch (NaN once a run diverged)."""
    return res["history"]["test_loss"].to_numpy(dtype=float)


def final_loss(res: dict) -> float:
    return float("nan") if res["diverged"] else float(res["final"]["test_loss"])


def final_accuracy(res: dict) -> float:
    """Final held-out accuracy in points (a diverged run counts 10 %, chance on 10 classes)."""
    return 10.0 if res["diverged"] else 100.0 * float(res["final"]["test_acc"])


def volatility(res: dict) -> float:
    """Standard deviation of the epoch-to-epoch changes of the held-out loss (fig 4.6's "much
    more volatile")."""
    return float(np.std(np.diff(held_out_loss(res)), ddof=1))


def diverged(res: dict, initial_loss: float = float(np.log(10))) -> bool:
    """The digest's divergence: NaN / flagged, or a final loss above the initial ln(10)."""
    return bool(res["diverged"] or not final_loss(res) <= initial_loss)


def per_seed(results: Sequence[dict], fn) -> np.ndarray:
    return np.array([fn(r) for r in results], dtype=float)


def loss_after_steps(res: dict, steps: int) -> float:
    """Held-out loss at the end of the first epoch by which ``steps`` steps were taken (the
    last epoch's if the run is shorter; NaN once diverged)."""
    hist = res["history"]
    reached = np.flatnonzero(hist["step"].to_numpy() >= steps)
    row = reached[0] if len(reached) else len(hist) - 1
    return float(hist["test_loss"].iloc[row])


def crossover_epoch(sgd: np.ndarray, other: np.ndarray) -> int | None:
    """The first epoch (1-based) from which SGD's held-out loss stays below ``other``'s to the
    end of the run ("a crossover point where SGDM overtakes and continues to have better
    performance"); None if SGD is not below at the end."""
    below = np.asarray(sgd, dtype=float) < np.asarray(other, dtype=float)
    if not below[-1]:
        return None
    above = np.flatnonzero(~below)
    return int(above[-1]) + 2 if len(above) else 1


def step_log(res: dict):
    """Algorithm 5's per-step log of a run (``step``, ``eta``, ``lambda_hat``, ``projection``;
    `lalr_core.methods.eigen_step.Algorithm5SGD.step_log`)."""
    return res["callbacks"]["alg5_log"]
def layer_dt(res: dict, layer: str) -> np.ndarray:
    """``D_t`` (eq. 3.1) of ``layer``'s weight after each step, from chapter 04's trajectory
    callback (index ``i`` = after step ``i + 1``)."""
    traj = res["callbacks"]["trajectory"]
    return np.asarray(traj["layer_dt"])[:, traj["layer_names"].index(f"{layer}.weight")]


def phi_numbers(res: dict, layer: str) -> dict[str, float]:
    """Fig 4.15's per-run quantities (digest sec. 6 and the source's text).

    ``median_phi`` (over all steps and filters), ``negative`` (fraction of ``phi_t < 0``),
    ``significant`` (fraction with ``|phi_t| >= 10/sqrt(n)``, `top_eigen.significant_fraction`),
    ``dt_rises`` (fraction of steps on which the layer's ``D_t`` does not fall, the first step
    counted from ``D_t = 0``), ``dt_quarter`` (``D_t`` after the first quarter of the steps over
    its final value) and ``log_spread`` (log of the standard deviation of ``phi_t`` over the last
    tenth of the records over that of the first tenth).
    """
    fg = res["callbacks"]["filter_gradients"]
    phi = np.asarray(fg["phi"], dtype=float)
    tenth = max(1, len(phi) // 10)
    dt = layer_dt(res, layer)
    quarter = max(1, int(np.ceil(len(dt) / 4)))
    finite = phi[np.isfinite(phi)]
    return {"median_phi": float(np.median(finite)), "negative": float(np.mean(finite < 0)),
            "significant": te.significant_fraction(phi, fg["n"]),
            "dt_rises": float(np.mean(np.diff(np.r_[0.0, dt]) >= 0)),
            "dt_quarter": float(dt[quarter - 1] / dt[-1]),
            "log_spread": float(np.log(np.nanstd(phi[-tenth:]) / np.nanstd(phi[:tenth])))}


def cohesion_numbers(res: dict, epochs: int, high: float = 0.9) -> pd.DataFrame:
    """Fig 4.16's per-run quantities, one row per probe batch size.

    ``mean_cos`` (mean ``cos psi_i`` = mean of the probes' ``C``), ``within_sd`` (standard
    deviation of the ``d`` values of ``cos psi_i`` of a probe, averaged over the probes: the
    spread at fixed weights), ``sd`` (over all points of the run), ``n_high`` (points with
    ``cos psi_i > high``), ``high_largest`` (of those, the fraction that is its probe's largest
    ``||g_i||``), ``top_is_largest`` (fraction of probes whose largest ``cos psi_i`` belongs to
    their largest ``||g_i||``), ``first_C`` / ``last_C`` (mean ``C`` over the probes of the first
    / last epoch).
    """
    out = res["callbacks"]["cohesion_probe"]
    pts, prb = out["points"], out["probes"]
    rows = {}
    for b, p in pts.groupby("batch_size"):
        by = p.groupby("step")
        largest = p["norm"].to_numpy() == by["norm"].transform("max").to_numpy()
        high_pts = p["cos"].to_numpy() > high
        top = by["cos"].idxmax() == by["norm"].idxmax()    # per probe: the same gradient
        c = prb[prb.batch_size == b]
        rows[int(b)] = {
            "mean_cos": float(p["cos"].mean()), "within_sd": float(by["cos"].std(ddof=1).mean()),
            "sd": float(p["cos"].std(ddof=1)), "n_high": int(high_pts.sum()),
            "high_largest": float(largest[high_pts].mean()) if high_pts.any() else float("nan"),
            "top_is_largest": float(top.mean()),
            "first_C": float(c[c.epoch <= 1]["cohesion"].mean()),
            "last_C": float(c[c.epoch > epochs - 1]["cohesion"].mean())}
    return pd.DataFrame(rows).T.rename_axis("batch_size")
