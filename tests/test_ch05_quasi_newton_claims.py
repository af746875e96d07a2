"""Chapter 05's claim tests give PASS, FAIL and INCONCLUSIVE on small synthetic results.

Each case builds run results by hand (no training: the dicts `train_runs` returns, with only
the fields the chapter's function reads), calls the function of `ch05_quasi_newton.findings`
and returns its `Finding`; ``tests/test_claim_cases.py`` checks the verdicts. Per-seed
differences are chosen so the interval lies clearly above, clearly below, or across the
threshold. The sanity checks of ``CLAIMS`` (known matrix, appendix H, algorithm 5's bounds) have
no cases: they hold by construction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from lalr_core.chapters.ch05_quasi_newton import CLAIMS, QN
from lalr_core.chapters.ch05_quasi_newton import findings as F
from lalr_core.chapters.ch05_quasi_newton.numbers import own_update_removed
from lalr_core.methods.curvature.gradient_statistics import temporal_consistency

CHAPTER = "ch05_quasi_newton"

SEEDS = range(5)
UP = np.array([3.0, 4.0, 5.0, 3.5, 4.5])
DOWN = -UP
ACROSS = np.array([3.0, -3.0, 1.0, -2.0, 0.5])
EPOCHS = 10


# ----------------------------------------------------------------------------- builders
def run(curve, acc: float = 0.9, diverged: bool = False, steps_per_epoch: int = 1) -> dict:
    """A run result with held-out loss ``curve`` (one value per epoch) and accuracy ``acc``."""
    curve = np.asarray(curve, dtype=float)
    epochs = np.arange(1, len(curve) + 1)
    hist = pd.DataFrame({"epoch": epochs, "step": epochs * steps_per_epoch, "test_loss": curve,
                         "test_acc": acc})
    return {"history": hist, "final": {"test_loss": float(curve[-1]), "test_acc": acc},
            "diverged": diverged}


def _base(seed: int) -> np.ndarray:
    t = np.arange(EPOCHS)
    return 2.0 * np.exp(-0.3 * t) + 0.3 + 0.01 * seed


QN_WOBBLE = 0.02 * UP / 4


def fig46_case(acc_gap=UP, loss_gap=0.05 * UP, qn_wobble=QN_WOBBLE, sgd_wobble=0.0 * UP,
               diverge: bool = True):
    """Fig 4.6's runs: SGD − QN accuracy ``acc_gap`` (points, per seed), QN − SGD loss offset
    ``loss_gap``, alternating wobbles of relative size ``*_wobble`` on each arm's log loss."""
    sign = (-1.0) ** np.arange(EPOCHS)
    runs, div = {}, {}
    for s in SEEDS:
        base = _base(s)
        runs[("sgd", s)] = run(base * np.exp(sgd_wobble[s] * sign), 0.9)
        runs[(QN, s)] = run((base + loss_gap[s]) * np.exp(qn_wobble[s] * sign),
                            0.9 - acc_gap[s] / 100)
        for arm in ("sgd", QN):
            div[(arm, s)] = run(base * (50 if diverge else 1))
    return F.fig46(runs, div, SEEDS, 0.5)


def table_case(acc_gap_low_lr=UP, degrade=0.05 * UP):
    """Tables E.1 / E.2: SGDM − QN accuracy 5 points at the two larger lrs and
    ``acc_gap_low_lr`` at 0.01; QN's loss rises by ``degrade`` more than SGDM's from 0.1 to
    0.01."""
    lrs = (0.1, 0.05, 0.01)
    runs = {}
    for s in SEEDS:
        for lr in lrs:
            gap = acc_gap_low_lr[s] if lr == 0.01 else 5.0 + 0.3 * s
            qn_loss = 0.4 + (degrade[s] if lr == 0.01 else 0.0)
            runs[("sgdm", lr, s)] = run([0.35], 0.92)
            runs[(QN, lr, s)] = run([qn_loss], 0.92 - gap / 100)
    return F.table_e_findings(runs, lrs, SEEDS)


RUNS = 3   # independent runs behind a one-run figure's case (>= 3: a verdict can be recorded)


def probe_case(lc=(0.05, 0.02, 0.01), sl=(0.9, 0.8, 0.75), positive=(195, 200, 205),
               gc_pairs: float = 0.05, runs: int = RUNS):
    """Figs 4.7-4.9 on ``runs`` independent runs (``positive``: batches with q^GC > 0 of 220,
    one value or one per run)."""
    pos = np.resize(np.asarray(positive), runs)
    gc = [pd.DataFrame({"q_gc": np.r_[np.full(int(p), 0.02), np.full(220 - int(p), -0.02)],
                        "q_gc_pairs": gc_pairs}) for p in pos]
    lcs = [pd.DataFrame({"q_lc": lc}) for _ in range(runs)]
    sls = [pd.DataFrame({"q_sl": sl}) for _ in range(runs)]
    if runs == 1:
        return F.fig47_49(lcs[0], sls[0], gc[0], 0.27)
    return F.fig47_49(lcs, sls, gc, 0.27)


def e1_case(late_mean=0.4, spread: float = 0.01, early_rank=20.0, late_rank=10.0,
            runs: int = RUNS):
    """Fig E.1 on ``runs`` independent runs (``late_mean``: one value or one per run)."""
    rng = np.random.default_rng(0)
    n = 100
    means = np.broadcast_to(np.asarray(late_mean, float), (runs,))
    alignments, nulls = [], []
    for m in means:
        hungarian = np.r_[np.full(80, 0.2), m + spread * rng.standard_normal(20)]
        late = np.r_[np.zeros(80, bool), np.ones(20, bool)]
        ranks = np.r_[np.full(10, early_rank), np.full(n - 10, late_rank)]
        alignments.append({"hungarian": hungarian, "late": late, "ranks": {0.1: ranks},
                           "median_early": {0.1: early_rank}, "median_late": {0.1: late_rank}})
        nulls.append(0.05 + 0.005 * rng.standard_normal(200))
    if runs == 1:
        return F.fige1(alignments[0], nulls[0], 10, 0.1)
    return F.fige1(alignments, nulls, 10, 0.1)


SIZES = (1000, 250, 50)


def fig410_runs(crossovers, noise=0.002, lost=()):
    """``(arm, batch) -> runs``: QN flat at 0.5; SGD's loss 0.5 + 0.05 (c − 0.5 − t), below QN
    from epoch ``c`` on (per batch size, largest first); batches in ``lost`` get seed noise of
    +-0.3 on SGD's final loss (an undecided overtaking)."""
    out = {}
    t = np.arange(1, EPOCHS + 1)
    for bs, c in zip(SIZES, crossovers, strict=True):
        sgd, qn = [], []
        for s in SEEDS:
            jitter = noise * (s - 2)
            curve = 0.5 + 0.05 * (c - 0.5 - t) + jitter
            if bs in lost:
                curve = curve.copy()
                curve[-1] = 0.5 + 0.3 * ACROSS[s] / 3
            sgd.append(run(curve))
            qn.append(run(np.full(EPOCHS, 0.5) - jitter))
        out[("sgd", bs)], out[(QN, bs)] = sgd, qn
    return out


def fig410_case(crossovers=(8, 5, 2), source=(8, 5, 2), lost=(), source_lost=()):
    return F.fig410(fig410_runs(crossovers, lost=lost), SIZES, 1,
                    fig410_runs(source, lost=source_lost), 0.01)


def phi_case(null=None, **columns):
    """Fig 4.15's per-seed numbers and their independent-gradient null (``null``: columns to
    override in the null's frame; by default a random walk's: median 0, ratio 0.5)."""
    base = {"median_phi_null": -0.03 + 0.002 * np.arange(5), "median_phi": -0.07 + 0 * UP,
            "significant": 0.01 + 0.001 * np.arange(5), "dt_rises": 0.99 + 0.001 * np.arange(5),
            "dt_quarter": 0.6 + 0.01 * np.arange(5), "log_spread": 0.6 + 0.01 * np.arange(5)}
    base.update({k: np.asarray(v, float) for k, v in columns.items()})
    walk = {"median_phi_null": 0.001 * (np.arange(5) - 2), "median_phi": -0.07 + 0 * UP,
            "significant": 0 * UP, "dt_rises": 1 + 0 * UP, "dt_quarter": 0.5 + 0.002 * UP,
            "log_spread": 0.5 + 0.01 * np.arange(5)}
    walk.update({k: np.asarray(v, float) for k, v in (null or {}).items()})
    return F.fig415(pd.DataFrame(base), 0.59, pd.DataFrame(walk))


COH_SIZES = (4, 32, 256)


def _cohesion_frames(mean_step, sd_step, n_high, top, degrade):
    numbers = {}
    for s in SEEDS:
        rows = {}
        for i, b in enumerate(COH_SIZES):
            rows[b] = {"mean_cos": 0.2 + i * mean_step[s], "within_sd": 0.3 - i * sd_step[s],
                       "n_high": n_high if b == 4 else 0,
                       "top_is_largest": top + 0.02 * (s - 2) if np.isscalar(top) else top[s],
                       "first_C": 0.5, "last_C": 0.5 + degrade[s]}
        numbers[s] = pd.DataFrame(rows).T
    return numbers


# the independent-gradient null: the norms alone raise the mean and lower the spread a little
NULL_COHESION = {"mean_step": 0.02 + 0.001 * np.arange(5), "sd_step": 0.005 + 0.0005 * np.arange(5),
                 "n_high": 0, "top": 0.95, "degrade": -0.002 + 0.0005 * np.arange(5)}


def cohesion_case(mean_step=0.1 * UP / 4, sd_step=0.02 * UP / 4, n_high=1, top=0.7,
                  degrade=-0.03 * UP / 4, null=None):
    """Fig 4.16's per-seed numbers against its null (``null``: `NULL_COHESION` overrides)."""
    return F.fig416(_cohesion_frames(mean_step, sd_step, n_high, top, degrade), COH_SIZES,
                    _cohesion_frames(**{**NULL_COHESION, **(null or {})}))


NAMES420 = ("SGD lr 1", "SGD lr 0.1", "eigenvalue-based", "projection-based")


def fig420_case(sgd_hi=0.8, sgd_lo=0.5, eig=0.6, proj=0.6, epoch1_lo=1.0, jitter=UP / 100):
    final = {n: v + jitter for n, v in zip(NAMES420, (sgd_hi, sgd_lo, eig, proj), strict=True)}
    final[NAMES420[1]] = sgd_lo + 0.0 * jitter
    epoch1 = {n: 1.5 + jitter for n in NAMES420}
    epoch1[NAMES420[1]] = epoch1_lo + 0.0 * jitter
    return F.fig420(final, epoch1, NAMES420, 0.9 + 0.01 * np.arange(5),
                    {s: 0.6 for s in range(3)})


def _var(values):
    """Per-seed values whose interval straddles its centre (for INCONCLUSIVE)."""
    return np.asarray(values, float)


# ----------------------------------------------------------------------------- cases
CASES = {
    "fig4.6-accuracy": {
        "PASS": lambda: fig46_case().accuracy,
        "FAIL": lambda: fig46_case(acc_gap=DOWN).accuracy,
        "INCONCLUSIVE": lambda: fig46_case(acc_gap=ACROSS).accuracy},
    "fig4.6-slower": {
        "PASS": lambda: fig46_case().slower,
        "FAIL": lambda: fig46_case(loss_gap=0.05 * DOWN).slower,
        "INCONCLUSIVE": lambda: fig46_case(loss_gap=0.05 * ACROSS).slower},
    "fig4.6-volatile": {
        "PASS": lambda: fig46_case().volatile,
        "FAIL": lambda: fig46_case(qn_wobble=0 * UP, sgd_wobble=0.005 * UP).volatile,
        "INCONCLUSIVE": lambda: fig46_case(qn_wobble=0.01 * np.maximum(ACROSS, 0),
                                           sgd_wobble=0.01 * np.maximum(-ACROSS, 0)).volatile},
    "fig4.6-diverge": {
        "PASS": lambda: fig46_case().diverge,
        "FAIL": lambda: fig46_case(diverge=False).diverge},
    "tableE.1": {
        "PASS": lambda: table_case().accuracy,
        "FAIL": lambda: table_case(acc_gap_low_lr=DOWN).accuracy,
        "INCONCLUSIVE": lambda: table_case(acc_gap_low_lr=ACROSS).accuracy},
    "tableE.2": {
        "PASS": lambda: table_case().degrades,
        "FAIL": lambda: table_case(degrade=0.05 * DOWN).degrades,
        "INCONCLUSIVE": lambda: table_case(degrade=0.05 * ACROSS).degrades},
    "fig4.7-small": {
        "PASS": lambda: probe_case().lc_small,
        "FAIL": lambda: probe_case(lc=(18.0, 0.6, 0.05)).lc_small},
    "fig4.7-start": {
        "PASS": lambda: probe_case().lc_start,
        "FAIL": lambda: probe_case(lc=(0.01, 0.05, 0.02)).lc_start},
    "fig4.8-high": {
        "PASS": lambda: probe_case().sl_high,
        "FAIL": lambda: probe_case(sl=(0.9, 0.2, 0.8)).sl_high},
    "fig4.8-relaxes": {
        "PASS": lambda: probe_case().sl_relaxes,
        "FAIL": lambda: probe_case(sl=(0.7, 0.8, 0.9)).sl_relaxes},
    "fig4.9-overlap": {
        "PASS": lambda: probe_case().gc_overlap,
        "FAIL": lambda: probe_case(positive=(55, 60, 65)).gc_overlap,
        "INCONCLUSIVE": lambda: probe_case(positive=(60, 200, 110)).gc_overlap},
    "fig4.9-contrast": {
        "PASS": lambda: probe_case().gc_contrast,
        "FAIL": lambda: probe_case(gc_pairs=0.95).gc_contrast},
    "figE.1-cosine": {
        "PASS": lambda: e1_case().cosine,
        "FAIL": lambda: e1_case(late_mean=0.03).cosine,
        "INCONCLUSIVE": lambda: e1_case(late_mean=(0.02, 0.12, 0.07)).cosine},
    "figE.1-rank": {
        "PASS": lambda: e1_case().rank,
        "FAIL": lambda: e1_case(late_rank=20.0).rank},
    "fig4.10-early": {
        "PASS": lambda: fig410_case().early,
        "FAIL": lambda: fig410_case(crossovers=(8, 5, 1)).early,
        "INCONCLUSIVE": lambda: F.fig410(
            {**fig410_runs((8, 5, 2)), **{k: [run(np.r_[0.5 + 0.1 * ACROSS[i], np.full(
                EPOCHS - 1, 0.4)]) for i in SEEDS] for k in [("sgd", 50)]}},
            SIZES, 1, fig410_runs((8, 5, 2)), 0.01).early},
    "fig4.10-overtakes": {
        "PASS": lambda: fig410_case().overtakes,
        "FAIL": lambda: fig410_case(crossovers=(EPOCHS + 5, 5, 2)).overtakes,
        "INCONCLUSIVE": lambda: fig410_case(lost=(1000,)).overtakes},
    "fig4.10-order": {
        "PASS": lambda: fig410_case().order,
        "FAIL": lambda: fig410_case(crossovers=(2, 5, 8)).order,
        "N/A": lambda: fig410_case(crossovers=(EPOCHS + 5, 5, 2)).order},
    "fig4.10-source-lr": {
        "PASS": lambda: fig410_case().source_lr,
        "FAIL": lambda: fig410_case(source=(EPOCHS + 5, EPOCHS + 5, EPOCHS + 5)).source_lr,
        "INCONCLUSIVE": lambda: fig410_case(source_lost=(50,)).source_lr},
    "fig4.11-large": {
        "PASS": lambda: F.fig411([{"lam_max": 8.0, "median_top": 0.5, "small": 0.95}] * 3,
                                 100).large,
        "FAIL": lambda: F.fig411([{"lam_max": 2.0, "median_top": 0.5, "small": 0.95}] * 3,
                                 100).large,
        "INCONCLUSIVE": lambda: F.fig411({"lam_max": 8.0, "median_top": 0.5, "small": 0.95},
                                         100).large},
    "fig4.11-zero": {
        "PASS": lambda: F.fig411([{"lam_max": 8.0, "median_top": 0.5, "small": 0.95}] * 3,
                                 100).zero,
        "FAIL": lambda: F.fig411([{"lam_max": 8.0, "median_top": 0.5, "small": 0.5}] * 3,
                                 100).zero,
        "N/A": lambda: F.fig411({"lam_max": 8.0, "median_top": 0.5, "small": None}, 85_898).zero},
    "fig4.14-rastrigin": {
        "PASS": lambda: F.fig414(_fig414(3.5, 45.0)).rastrigin,
        "FAIL": lambda: F.fig414(_fig414(10.6, 45.0)).rastrigin},
    "fig4.14-rosenbrock": {
        "PASS": lambda: F.fig414(_fig414(3.5, 45.0)).rosenbrock,
        "FAIL": lambda: F.fig414(_fig414(3.5, 5.0)).rosenbrock},
    "fig4.15-toward": {
        "PASS": lambda: phi_case().toward,
        "FAIL": lambda: phi_case(median_phi_null=0.03 + 0.002 * np.arange(5)).toward,
        "INCONCLUSIVE": lambda: phi_case(median_phi_null=0.01 * ACROSS).toward},
    "fig4.15-early": {
        "PASS": lambda: phi_case().early,
        "FAIL": lambda: phi_case(null={"dt_quarter": 0.7 + 0.01 * UP}).early,
        "INCONCLUSIVE": lambda: phi_case(dt_quarter=0.5 + 0.05 * ACROSS).early},
    "fig4.16-mean": {
        "PASS": lambda: cohesion_case().mean,
        "FAIL": lambda: cohesion_case(mean_step=0.02 + 0.001 * np.arange(5),
                                      null={"mean_step": 0.04 + 0.001 * UP}).mean,
        "INCONCLUSIVE": lambda: cohesion_case(mean_step=0.1 * ACROSS / 4).mean},
    "fig4.16-spread": {
        "PASS": lambda: cohesion_case().spread,
        "FAIL": lambda: cohesion_case(sd_step=0.005 + 0.0005 * np.arange(5),
                                      null={"sd_step": 0.01 + 0.001 * UP}).spread,
        "INCONCLUSIVE": lambda: cohesion_case(sd_step=0.02 * ACROSS / 4).spread},
    "fig4.16-high": {
        "PASS": lambda: cohesion_case().high,
        "FAIL": lambda: cohesion_case(n_high=0).high},
    "fig4.16-largest": {
        "PASS": lambda: cohesion_case().largest,
        "FAIL": lambda: cohesion_case(top=0.2).largest,
        "INCONCLUSIVE": lambda: cohesion_case(top=0.5 + 0.1 * ACROSS).largest},
    "fig4.16-degrades": {
        "PASS": lambda: cohesion_case().degrades,
        "FAIL": lambda: cohesion_case(degrade=-0.03 * DOWN / 4).degrades,
        "INCONCLUSIVE": lambda: cohesion_case(degrade=0.03 * ACROSS / 4).degrades},
    "fig4.20-premise": {
        "PASS": lambda: fig420_case().premise,
        "FAIL": lambda: fig420_case(sgd_hi=0.3).premise,
        "INCONCLUSIVE": lambda: fig420_case(sgd_hi=0.5, jitter=ACROSS / 20).premise},
    "fig4.20-projection": {
        "PASS": lambda: fig420_case(proj=0.6 - UP / 100).projection,
        "FAIL": lambda: fig420_case(proj=1.0 - UP / 100).projection,
        "INCONCLUSIVE": lambda: fig420_case(proj=0.8 - ACROSS / 20 - UP / 100).projection},
    "fig4.20-eigenvalue": {
        "PASS": lambda: fig420_case(eig=0.6 - UP / 100).eigenvalue,
        "FAIL": lambda: fig420_case(eig=1.0 - UP / 100).eigenvalue,
        "INCONCLUSIVE": lambda: fig420_case(eig=0.8 - ACROSS / 20 - UP / 100).eigenvalue},
    "fig4.20-early": {
        "PASS": lambda: fig420_case().early,
        "FAIL": lambda: fig420_case(epoch1_lo=2.0).early,
        "INCONCLUSIVE": lambda: fig420_case(epoch1_lo=1.54, jitter=ACROSS / 20).early},
    "fig4.20-end": {
        "PASS": lambda: fig420_case().end,
        "FAIL": lambda: fig420_case(eig=0.3, proj=0.3).end,
        "INCONCLUSIVE": lambda: fig420_case(eig=0.46, jitter=ACROSS / 20).end},
}


def _fig414(ras_falls: float, ros_falls: float) -> dict:
    return {"rastrigin": {"path": np.array([[4.3, -4.6], [0.0, 0.0]]),
                          "numbers": {"falls on (% of steps)": ras_falls}},
            "rosenbrock": {"path": np.array([[-1.5, -0.5], [1.0, 1.0]]),
                           "numbers": {"falls on (% of steps)": ros_falls}}}


# ----------------------------------------------------------------------------- unit tests
def test_every_case_names_a_claim_test_of_the_chapter():
    assert set(CASES) <= set(CLAIMS)
    assert all(CLAIMS[c].kind == "claim" for c in CASES)
    claims = {c for c, claim in CLAIMS.items() if claim.kind == "claim"}
    assert claims == set(CASES)


def test_detrended_volatility_ignores_a_smooth_descent_of_any_speed():
    t = np.arange(20)
    slow, fast = run(np.exp(-0.05 * t)), run(np.exp(-0.8 * t))
    wobbly = run(np.exp(-0.05 * t) * np.exp(0.05 * (-1.0) ** t))
    assert F.detrended_volatility(slow) == pytest.approx(0, abs=1e-12)
    assert F.detrended_volatility(fast) == pytest.approx(0, abs=1e-12)
    assert F.detrended_volatility(wobbly) > 0.1


def test_crossover_order_is_not_judged_without_a_crossover_everywhere():
    assert F.crossover_order({1000: 8, 250: 5, 50: 1}) is True
    assert F.crossover_order({1000: 1, 250: 5, 50: 8}) is False
    assert F.crossover_order({1000: None, 250: 5, 50: 1}) is None


def test_share_interval_covers_the_share_and_decides_far_from_half():
    assert F.share_interval(110, 220).verdict == "INCONCLUSIVE"
    assert F.share_interval(200, 220).verdict == "PASS"
    ev = F.share_interval(0, 10)
    assert ev.low == 0 and ev.high < 0.5 and ev.verdict == "FAIL"


def test_own_update_removed_matches_a_momentum_run_without_that_gradient():
    """Oracle: rerun the same momentum-SGD trajectory with gradient t zeroed; the difference of
    theta_tau - theta_{t-1} is g_t's own part, and the cosine of the rest matches."""
    rng = np.random.default_rng(0)
    T, lr, beta = 15, 0.1, 0.9
    grads = rng.standard_normal((T, 2, 4))

    def trajectory(G):
        theta, buf, W = np.zeros((2, 4)), np.zeros((2, 4)), []
        for g in G:
            W.append(theta.copy())
            buf = beta * buf + g
            theta = theta - lr * buf
        return np.array(W), theta

    W, final = trajectory(grads)
    phi = temporal_consistency(torch.tensor(W), torch.tensor(grads), torch.tensor(final),
                               per_filter=True).numpy()
    dist = np.linalg.norm(final[None] - W, axis=-1)
    gn = np.linalg.norm(grads, axis=-1)
    got = own_update_removed(phi, dist, gn, np.arange(1, T + 1), T, lr, beta)
    for t in (1, 7, T - 1):
        G0 = grads.copy()
        G0[t - 1] = 0
        W0, final0 = trajectory(G0)
        rest = (final - W[t - 1]) - ((final - W[t - 1]) - (final0 - W0[t - 1]))
        want = (rest * grads[t - 1]).sum(-1) / (np.linalg.norm(rest, axis=-1) * gn[t - 1])
        np.testing.assert_allclose(got[t - 1], want, atol=1e-10)
    assert np.isnan(got[-1]).all() or np.isfinite(got[-1]).all()


# ----------------------------------------------------------------------------- the nulls
def test_one_run_of_a_probed_figure_is_recorded_inconclusive():
    from claim_cases import verdict_of
    for cid, make in (("fig4.7-small", lambda: probe_case(runs=1).lc_small),
                      ("fig4.9-overlap", lambda: probe_case(runs=1).gc_overlap),
                      ("figE.1-cosine", lambda: e1_case(runs=1).cosine),
                      ("figE.1-rank", lambda: e1_case(runs=1).rank)):
        assert verdict_of(make(), CLAIMS[cid]) == "INCONCLUSIVE", cid


def _walk_numbers(norms, seed):
    from lalr_core.chapters.ch05_quasi_newton.numbers import phi_summary, random_walk_phi
    T = norms.shape[0]
    steps = np.arange(1, T + 1)
    sim = random_walk_phi(norms, steps, T, 288, 0.05, 0.9, seed=seed)
    return phi_summary(sim["phi"], sim["dist"], sim["grad_norm"], steps, T, 0.05, 0.9, 288,
                       sim["dt"])


def test_the_random_walk_null_passes_the_checks_it_should_and_centres_the_claims():
    """Independent gradients (several null seeds): the median φ_t with the own update left out
    is 0, few pass 10/√n, D_t rises on every step and φ_t spreads at the end (so those checks
    are no claim tests); with equal norms D_t(T/4)/D_t(T) is about √(1/4), with norms that
    shrink it is well above 0.5 without any shared direction (so fig4.15-early is judged
    against the null)."""
    flat = [_walk_numbers(np.ones((400, 8)), s) for s in range(3)]
    for r in flat:
        assert abs(r["median_phi_null"]) < 0.01
        assert r["significant"] < 0.01 and r["dt_rises"] > 0.9 and r["log_spread"] > 0
        assert 0.4 < r["dt_quarter"] < 0.55
    shrinking = np.repeat(np.linspace(3, 0.5, 400)[:, None], 8, 1)
    assert all(_walk_numbers(shrinking, s)["dt_quarter"] > 0.6 for s in range(3))


def test_the_independent_cohesion_null_matches_norm_shares_and_rises_with_even_norms():
    from lalr_core.chapters.ch05_quasi_newton.numbers import cohesion_numbers, independent_cohesion
    rng = np.random.default_rng(0)
    rows = []
    for b, spread in ((4, 1.0), (32, 0.4), (256, 0.05)):
        for step in range(1, 41):
            norms = np.exp(rng.normal(0, spread, 10))
            rows += [{"step": step, "epoch": step / 8, "batch_size": b, "i": i, "cos": 0.0,
                      "norm": float(v)} for i, v in enumerate(norms)]
    pts = pd.DataFrame(rows)
    for seed in range(3):
        p, probes = independent_cohesion(pts, 50_000, seed)
        share = p["norm"] / np.sqrt(p.groupby(["batch_size", "step"])["norm"]
                                    .transform(lambda x: (x ** 2).sum()))
        np.testing.assert_allclose(p["cos"], share, atol=0.03)
        num = cohesion_numbers({"callbacks": {"cohesion_probe": {"points": p,
                                                                 "probes": probes}}}, 5)
        assert num.loc[4, "mean_cos"] < num.loc[32, "mean_cos"] < num.loc[256, "mean_cos"]
        assert num.loc[4, "within_sd"] > num.loc[256, "within_sd"]
        assert num.loc[4, "top_is_largest"] > 0.9       # the thesis's mechanism, no direction
        assert num.loc[256, "mean_cos"] == pytest.approx(1 / np.sqrt(10), abs=0.01)
