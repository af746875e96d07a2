"""Chapter 05's per-run and per-section numbers: held-out loss and accuracy, volatility,
divergence, tables E.1 / E.2, the crossover epoch of fig 4.10, the probes' phi_t and cohesion
summaries (figs 4.15, 4.16), fig 4.9's q^GC shares and algorithm 5's step sizes (fig 4.20): the
quantities the checks judge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from lalr_core.chapters.ch05_quasi_newton.settings import QN
from lalr_core.core.results.evidence import per_seed
from lalr_core.methods.curvature import gradient_statistics


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
    """Divergence as fig 4.6's check reads it: NaN / flagged by the loop, or a final loss above
    the initial ln(10) (the loss of a uniform guess over 10 classes: the run ends worse than it
    started)."""
    return bool(res["diverged"] or not final_loss(res) <= initial_loss)


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
    `lalr_core.methods.curvature.eigen_step.Algorithm5SGD.step_log`)."""
    return res["callbacks"]["alg5_log"]
def layer_dt(res: dict, layer: str) -> np.ndarray:
    """``D_t`` (eq. 3.1) of ``layer``'s weight after each step, from chapter 04's trajectory
    callback (index ``i`` = after step ``i + 1``)."""
    traj = res["callbacks"]["trajectory"]
    return np.asarray(traj["layer_dt"])[:, traj["layer_names"].index(f"{layer}.weight")]


def own_update_removed(phi, dist, grad_norm, steps, total_steps: int, lr: float,
                       momentum: float = 0.0) -> np.ndarray:
    """``phi_t`` with step ``t``'s own update left out of ``theta_tau - theta_{t-1}``: the null
    of fig 4.15's sign.

    The record of step ``t`` holds the weights before the step and the step's gradient
    ``g_t``, so ``theta_tau - theta_{t-1}`` contains ``g_t``'s own contribution to the steps
    ``t .. tau``. With torch's SGD (momentum ``beta``, no dampening, constant ``lr``, no weight
    decay), ``b_k = beta b_{k-1} + g_k`` and ``theta_k = theta_{k-1} - lr b_k``, that
    contribution is ``-lr g_t (1 - beta^(tau - t + 1)) / (1 - beta)``: it points against
    ``g_t`` by construction and pulls every ``phi_t`` below zero (with ``beta = 0.9``, ten
    times one step). Adding it back gives the direction to the solution that the other
    gradients travelled; its cosine with ``g_t`` is computed here from the per-filter numbers a
    run keeps (`lalr_core.methods.curvature.gradient_probes.FilterGradients`: ``phi``, ``dist`` = ``||theta_tau -
    theta_{t-1}||``, ``grad_norm`` = ``||g_t||``), without the tensors.

    Args:
        phi, dist, grad_norm: ``(T, F)`` (or ``(T,)``) per record.
        steps: ``(T,)`` the 1-based step ``t`` of each record.
        total_steps: ``tau``, the number of steps the run took.
        lr, momentum: the run's constant learning rate and SGD momentum (0: plain SGD).

    Returns:
        float64, the shape of ``phi`` (NaN where ``phi`` is NaN or the remainder is zero).

    Example:
        >>> import numpy as np
        >>> float(own_update_removed(np.array([-1.0]), np.array([0.1]), np.array([1.0]),
        ...                          np.array([1]), 1, lr=0.1)[0])  # one SGD step: nothing left
        nan
    """
    phi, dist, gn = (np.asarray(x, dtype=np.float64) for x in (phi, dist, grad_norm))
    steps = np.asarray(steps, dtype=np.float64)
    if not 0 <= momentum < 1 or lr <= 0:
        raise ValueError(f"need lr > 0 and momentum in [0, 1), got {lr}, {momentum}")
    c = lr * (1 - momentum ** (total_steps - steps + 1)) / (1 - momentum)
    c = c.reshape((-1,) + (1,) * (phi.ndim - 1))
    dot = phi * dist * gn
    sq = dist ** 2 + 2 * c * dot + (c * gn) ** 2
    rest = np.sqrt(np.maximum(sq, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (dot + c * gn ** 2) / (rest * gn)
    out[~(rest > 1e-9 * np.maximum(dist, c * gn))] = np.nan    # nothing left but round-off
    return out


def phi_summary(phi, dist, grad_norm, steps, total_steps: int, lr: float, momentum: float,
                n: int, dt) -> dict[str, float]:
    """Fig 4.15's per-run quantities from the per-filter records (``phi``, ``dist``,
    ``grad_norm`` ``(T, F)``, ``steps`` ``(T,)``) and the layer's ``D_t`` after every step
    (``dt``): the numbers `phi_numbers` returns, for a real run or the independent-gradient
    null (`random_walk_phi_numbers`)."""
    phi = np.asarray(phi, dtype=float)
    dt = np.asarray(dt, dtype=float)
    tenth = max(1, len(phi) // 10)
    quarter = max(1, int(np.ceil(len(dt) / 4)))
    finite = phi[np.isfinite(phi)]
    null = own_update_removed(phi, dist, grad_norm, steps, total_steps, lr, momentum)
    return {"median_phi": float(np.median(finite)), "negative": float(np.mean(finite < 0)),
            "median_phi_null": float(np.nanmedian(null)),
            "negative_null": float(np.nanmean(null[np.isfinite(null)] < 0)),
            "significant": gradient_statistics.significant_fraction(phi, n),
            "dt_rises": float(np.mean(np.diff(np.r_[0.0, dt]) >= 0)),
            "dt_quarter": float(dt[quarter - 1] / dt[-1]),
            "log_spread": float(np.log(np.nanstd(phi[-tenth:]) / np.nanstd(phi[:tenth])))}


def _phi_run_args(res: dict) -> tuple[dict, int, float, float]:
    fg = res["callbacks"]["filter_gradients"]
    cfg = res["config"]
    momentum = float(cfg["momentum"]) if cfg["optimizer"] == "sgdm" else 0.0
    return fg, int(max(fg["epoch_end_step"].values())), float(cfg["lr"]), momentum


def phi_numbers(res: dict, layer: str) -> dict[str, float]:
    """Fig 4.15's per-run quantities (our checks of the figure, and of the source's text).

    ``median_phi`` (over all steps and filters), ``negative`` (fraction of ``phi_t < 0``),
    ``median_phi_null`` / ``negative_null`` (the same with step t's own update left out,
    `own_update_removed`; the run's ``config`` gives its lr and momentum),
    ``significant`` (fraction with ``|phi_t| >= 10/sqrt(n)``, `gradient_statistics.significant_fraction`),
    ``dt_rises`` (fraction of steps on which the layer's ``D_t`` does not fall, the first step
    counted from ``D_t = 0``), ``dt_quarter`` (``D_t`` after the first quarter of the steps over
    its final value) and ``log_spread`` (log of the standard deviation of ``phi_t`` over the last
    tenth of the records over that of the first tenth). `random_walk_phi_numbers` gives the
    same numbers for the independent-gradient null of the same run.
    """
    fg, total, lr, momentum = _phi_run_args(res)
    return phi_summary(fg["phi"], fg["dist"], fg["grad_norm"], fg["step"], total, lr, momentum,
                       fg["n"], layer_dt(res, layer))


def random_walk_phi(grad_norm, steps, total_steps: int, n: int, lr: float, momentum: float,
                    seed: int = 0) -> dict[str, np.ndarray]:
    """Fig 4.15's null: the same optimiser (SGD with ``momentum``, constant ``lr``, no weight
    decay) driven by independent gradients, uniformly random directions in each filter's ``n``
    dimensions with the run's own per-filter norms (``grad_norm`` ``(T, F)`` at the recorded
    1-based ``steps``; between two records a step takes the last recorded norm), so that they
    share no direction with each other or with the solution.

    Returns ``phi``, ``dist``, ``grad_norm`` ``(T, F)`` at the recorded steps (as
    `gradient_probes.FilterGradients` records them: ``phi`` the cosine of ``g_t`` with
    ``theta_tau - theta_{t-1}``) and ``dt`` ``(total_steps,)``, the layer's distance from its
    start after every step. Memory: the recorded steps' weights, ``T x F x n`` floats.
    """
    gn = np.asarray(grad_norm, dtype=np.float64)
    steps = np.asarray(steps, dtype=int)
    T, F = gn.shape
    if T == 0 or len(steps) != T or steps[0] != 1 or np.any(np.diff(steps) <= 0):
        raise ValueError("need records at increasing 1-based steps, the first at step 1")
    rng = np.random.default_rng(seed)
    rec = np.searchsorted(steps, np.arange(1, total_steps + 1), side="right") - 1
    theta, buf = np.zeros((F, n)), np.zeros((F, n))
    where = {int(t): i for i, t in enumerate(steps)}
    before, grads = np.empty((T, F, n)), np.empty((T, F, n))
    dt = np.empty(total_steps)
    for k in range(1, total_steps + 1):
        g = rng.standard_normal((F, n))
        g *= (gn[rec[k - 1]] / np.linalg.norm(g, axis=1))[:, None]
        i = where.get(k)
        if i is not None:
            before[i], grads[i] = theta, g
        buf = momentum * buf + g
        theta = theta - lr * buf
        dt[k - 1] = np.linalg.norm(theta)
    rest = theta[None] - before
    dist = np.linalg.norm(rest, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = (rest * grads).sum(-1) / (dist * np.linalg.norm(grads, axis=-1))
    return {"phi": phi, "dist": dist, "grad_norm": np.linalg.norm(grads, axis=-1), "dt": dt}


def random_walk_phi_numbers(res: dict, seed: int = 0) -> dict[str, float]:
    """`phi_numbers` of fig 4.15's independent-gradient null (`random_walk_phi`) of run
    ``res``: its optimiser, steps and per-filter gradient norms, random directions."""
    fg, total, lr, momentum = _phi_run_args(res)
    sim = random_walk_phi(fg["grad_norm"], fg["step"], total, int(fg["n"]), lr, momentum, seed)
    return phi_summary(sim["phi"], sim["dist"], sim["grad_norm"], fg["step"], total, lr,
                       momentum, fg["n"], sim["dt"])


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


def independent_cohesion(points: pd.DataFrame, dim: int, seed: int = 0
                         ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig 4.16's null: each probe's ``d`` gradients with their recorded norms (``points``:
    ``step, epoch, batch_size, i, cos, norm``) but independent, uniformly random directions in
    ``dim`` dimensions (the network's parameters), so that they share no direction:
    ``cos psi_i`` of that null, exactly (the unit vectors' Gram matrix is drawn from its
    Wishart law, ``scipy.stats.wishart``, instead of the vectors). With no shared direction
    ``cos psi_i ~ ||g_i|| / sqrt(sum_j ||g_j||^2)``: it still rises with the batch size where
    larger batches have more even norms, and the largest gradient is the most aligned.

    Returns ``(points, probes)`` as `gradient_probes.CohesionProbe` records them (``probes``:
    ``step, epoch, batch_size, cohesion``), for `cohesion_numbers`.
    """
    from scipy.stats import wishart

    rng = np.random.default_rng(seed)
    pts = points.sort_values(["batch_size", "step", "i"]).reset_index(drop=True)
    groups = pts.groupby(["batch_size", "step"], sort=False)
    sizes = groups.size().to_numpy()
    cos = np.empty(len(pts))
    start = 0
    for d in np.unique(sizes):
        which = np.flatnonzero(sizes == d)
        rows = np.concatenate([np.arange(o, o + d) for o in np.r_[0, np.cumsum(sizes)][which]])
        W = np.asarray(wishart(df=int(dim), scale=np.eye(int(d))).rvs(
            size=len(which), random_state=rng)).reshape(len(which), d, d)
        u = np.sqrt(np.einsum("kii->ki", W))
        r = pts["norm"].to_numpy(float)[rows].reshape(len(which), d)
        G = W / (u[:, :, None] * u[:, None, :]) * r[:, :, None] * r[:, None, :]
        c = G.sum(2) / (np.sqrt(np.einsum("kii->ki", G)) * np.sqrt(G.sum((1, 2)))[:, None])
        cos[rows] = c.ravel()
        start += len(which)
    pts = pts.assign(cos=cos)
    probes = pts.groupby(["step", "epoch", "batch_size"], as_index=False)["cos"].mean() \
        .rename(columns={"cos": "cohesion"})
    return pts, probes


def independent_cohesion_numbers(res: dict, epochs: int, seed: int = 0) -> pd.DataFrame:
    """`cohesion_numbers` of run ``res``'s independent-gradient null (`independent_cohesion`,
    in the run's ``num_parameters`` dimensions)."""
    pts, probes = independent_cohesion(res["callbacks"]["cohesion_probe"]["points"],
                                       int(res["num_parameters"]), seed)
    return cohesion_numbers({"callbacks": {"cohesion_probe": {"points": pts, "probes": probes}}},
                            epochs)


# ----------------------------------------------------------------------------- fig 4.6, tables E
def divergence_counts(runs: Mapping[tuple[str, int], dict], arms: Sequence[str],
                      seeds: Sequence[int]) -> dict[str, int]:
    """Per arm, how many of the ``(arm, seed)`` runs `diverged`."""
    return {arm: sum(diverged(runs[(arm, s)]) for s in seeds) for arm in arms}


def arm_summary(runs: Mapping[str, Sequence[dict]]) -> pd.DataFrame:
    """Per series (columns): the seed-mean final held-out loss, accuracy and `volatility`."""
    return pd.DataFrame({label: {"final loss": per_seed(rs, final_loss).mean(),
                                 "final acc (%)": per_seed(rs, final_accuracy).mean(),
                                 "spread of Δloss": per_seed(rs, volatility).mean()}
                         for label, rs in runs.items()})


def table_e(runs: Mapping[tuple[str, float, int], dict], source: pd.DataFrame,
            lrs: Sequence[float], arms: Sequence[str], seeds: Sequence[int],
            labels: Mapping[str, str]) -> pd.DataFrame:
    """Tables E.1 / E.2 side by side: per learning rate and arm, the seed-mean final held-out
    accuracy (%) and loss (NaN-mean: a diverged run has no loss), with the source's numbers
    (``source``: columns ``lr``, ``arm`` in {"sgdm", "qn"}, ``accuracy``, ``loss``; NaN where it
    has no row)."""
    rows = []
    for lr in lrs:
        for arm in arms:
            rs = [runs[(arm, lr, s)] for s in seeds]
            src = source[(source.lr == lr) & (source.arm == ("qn" if arm == QN else "sgdm"))]
            rows.append({"lr": lr, "method": labels[arm],
                         "accuracy (%)": per_seed(rs, final_accuracy).mean(),
                         "source accuracy (%)": float(src.accuracy.iloc[0]) if len(src) else np.nan,
                         "loss": np.nanmean(per_seed(rs, final_loss)),
                         "source loss": float(src.loss.iloc[0]) if len(src) else np.nan})
    return pd.DataFrame(rows)


def source_accuracies(source: pd.DataFrame) -> dict[str, str]:
    """Table E.1's numbers as ``{"lr 0.1": "SGDM 89 vs QN 85", ...}``."""
    table = source.pivot(index="lr", columns="arm", values="accuracy").reset_index()
    return {f"lr {r.lr:g}": f"SGDM {int(r.sgdm)} vs QN {int(r.qn)}" for r in table.itertuples()}


def loss_drop(runs: Mapping[tuple[str, float, int], dict], arm: str, high: float, low: float,
              seeds: Sequence[int]) -> np.ndarray:
    """Per seed, ``arm``'s final held-out loss at learning rate ``low`` minus at ``high``
    (table E.2: how much the loss degrades as the learning rate falls)."""
    return (per_seed([runs[(arm, low, s)] for s in seeds], final_loss)
            - per_seed([runs[(arm, high, s)] for s in seeds], final_loss))


# ----------------------------------------------------------------------------- figs 4.7-4.9
def random_cosine_scale(p: int) -> float:
    """``10 / sqrt(P)``: the |cos| of two random vectors in ``P`` dimensions exceeds it with
    probability at most 1 % (`[Tuddenham2026]` app. A, eqs. A.18-A.20)."""
    return 10 / np.sqrt(p)


def gc_numbers(gc: pd.DataFrame, random_scale: float) -> dict:
    """Fig 4.9's numbers from the per-batch records ``gc`` (``q_gc`` as printed, eq. 4.41;
    ``q_gc_pairs``, the mean over pairs): ``positive`` (share of batches with q^GC > 0, over the
    ``batches`` with a value), ``median`` / ``median_pairs``, ``above_random`` (share of batches
    whose pair mean exceeds ``random_scale``)."""
    valid = gc.q_gc.dropna()
    return {"positive": float((valid > 0).mean()), "batches": len(valid),
            "median": float(valid.median()), "median_pairs": float(gc.q_gc_pairs.median()),
            "above_random": float((gc.q_gc_pairs > random_scale).mean())}


# ----------------------------------------------------------------------------- fig 4.10
def mean_curve(results: Sequence[dict]) -> np.ndarray:
    """The seed-mean held-out loss after every epoch (NaN-mean over the runs)."""
    return np.nanmean(np.stack([held_out_loss(r) for r in results]), 0)


# ----------------------------------------------------------------------------- fig 4.16
def cohesion_column(numbers: Mapping[int, pd.DataFrame], column: str, batch: int) -> np.ndarray:
    """Per seed, ``column`` of `cohesion_numbers` at probe batch size ``batch``."""
    return np.array([numbers[seed].loc[batch, column] for seed in numbers], dtype=float)


def cohesion_extremes(results: Mapping[int, dict], batch: int) -> dict:
    """At probe batch size ``batch``: ``points``, the number of (probe, gradient) points over
    all runs (the first run's count times the runs), and ``max_cos``, the largest cos psi_i."""
    points = [r["callbacks"]["cohesion_probe"]["points"] for r in results.values()]
    return {"points": len(points) * int((points[0].batch_size == batch).sum()),
            "max_cos": max(float(p[p.batch_size == batch]["cos"].max()) for p in points)}


# ----------------------------------------------------------------------------- fig 4.20
def first_epoch_loss(res: dict) -> float:
    """Held-out loss after the first epoch."""
    return float(res["history"]["test_loss"].iloc[0])


def mean_eta(res: dict) -> float:
    """The mean step size algorithm 5 took over a run."""
    return float(step_log(res)["eta"].mean())


def max_eta(res: dict, steps: int) -> float:
    """The largest step size algorithm 5 took in its first ``steps`` steps."""
    return float(step_log(res)["eta"].iloc[:steps].max())


def train_loss_noise(res: dict) -> float:
    """Standard deviation of the step-to-step changes of the training loss over the second
    half of the run's steps."""
    loss = res["steps"]["loss"].to_numpy()
    return float(np.std(np.diff(loss[len(loss) // 2:]), ddof=1))
