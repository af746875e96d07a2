"""Chapter 07's claim tests on synthetic results: each gives PASS on data that holds the claim,
FAIL on data that contradicts it, and INCONCLUSIVE on replicates (random nets, stacks, draws,
timing runs) that disagree or are too few. Every claim test is judged on an interval over >= 3
replicates. Also: E3's comparison at equal depth is not fooled by depth alone, E2 judges each
net rather than the seed-averaged curve, and the sanity checks fail on wrong numbers."""

import math

import numpy as np
import pytest
from claim_cases import verdict_of

from lalr_core.chapters.ch07_signal_propagation import claims as cl
from lalr_core.chapters.ch07_signal_propagation import findings as fd

CHAPTER = "ch07_signal_propagation"

# E3: depths (rows) x sigma_w^2 with these xi_c (columns); 6 xi_c = 18, 60, 600
DEPTHS, XI = (10, 30, 100), (3.0, 10.0, 100.0)


def _acc(inside_acc, beyond_acc, seeds=3, noise=0.0, seed=0):
    """Accuracies ``(seeds, depths, sigmas)``: ``inside_acc`` within 6 xi_c, ``beyond_acc``
    beyond, plus seed-level noise."""
    inside = np.array(DEPTHS)[:, None] <= 6 * np.array(XI)[None, :]
    base = np.where(inside, inside_acc, beyond_acc)
    rng = np.random.default_rng(seed)
    return np.stack([base + noise * rng.standard_normal() for _ in range(seeds)])


def _e3(inside_acc, beyond_acc, noise=0.02, seeds=3):
    acc = _acc(inside_acc, beyond_acc, seeds=seeds)
    if noise:  # seeds that differ (``noise`` large: that disagree in sign)
        acc[:, :, 0] += noise * np.array([1, -1, 0.2])[:seeds, None]
    return fd.e3_trainability(acc, DEPTHS, XI).findings["E3-6xi"]


NETS = np.array([1.0, 0.8, 1.2, 0.9, 1.1])   # per-net scale of a synthetic error (5 nets)


def _e1(err, nets=NETS):
    """Each net's q* misses by ``err`` times its scale in the ordered phase."""
    nets = np.asarray(nets)
    return fd.e1_self_averaging({"ordered": (0.2 * (1 + err * nets), 0.2),
                                 "chaotic": (2.2 * (1 + 0.001 * nets), 2.2)}
                                ).findings["E1-self-averaging"]


def _e2(q_err, c_err, nets=NETS):
    """Per-net curves (nets x 3 layers) whose worst layer misses the maps by ``q_err`` (q,
    relative) and ``c_err`` (c) times the net's scale, alternating in sign across nets."""
    q_th, c_th = np.array([1.0, 0.8, 0.7]), np.array([0.6, 0.7, 0.8])
    nets = np.asarray(nets)[:, None]
    sign = np.where(np.arange(nets.shape[0]) % 2, -1.0, 1.0)[:, None]
    shape = np.array([0.3, 1.0, 0.5])[None]
    return fd.e2_maps({"a": q_th * (1 + sign * q_err * nets * shape)}, {"a": q_th},
                      {"a": c_th + sign * c_err * nets * shape}, {"a": c_th}).findings["E2"]


CHI4 = {"ordered": 0.76, "critical": 1.0, "chaotic": 1.34}


def _grad(slopes, L=12, n=4):
    """``q~^l`` of ``len(slopes)`` seeds growing as ``exp(slope * l)``: ``(S, L, n)``."""
    ls = np.arange(1, L + 1)
    return np.stack([np.exp(s * ls)[:, None] * np.ones(n) for s in slopes])


def _e4(key, **slopes):
    base = {"ordered": [-math.log(0.76) * f for f in (1.0, 1.02, 0.98)],
            "chaotic": [-math.log(1.34) * f for f in (1.0, 1.02, 0.98)],
            "critical": [0.001, 0.002, 0.0]}
    base.update(slopes)
    return fd.e4_gradients({k: _grad(v) for k, v in base.items()}, CHI4).findings[key]


HALF = 0.5 * math.log(1.34)
SPREAD = np.array([1.0, 1.02, 0.98, 1.01, 0.99])   # per-net scatter of a synthetic statistic


def _e5(rel_err, final, spread=SPREAD):
    """Chaotic slopes ``(1 + rel_err) 1/2 log chi_1`` and ordered ratios ``final``, per net."""
    spread = np.asarray(spread)
    return fd.e5_curve_length((1 + rel_err) * HALF * spread, 1.34, final * spread
                              ).findings["E5"]


def _e6(orth_var, mean, spread=SPREAD):
    """Per-net variances and means of lambda (5 nets scattered by ``spread``)."""
    spread = np.asarray(spread)
    var = {("lin", "orthogonal"): 1e-12 * spread, ("lin", "gaussian"): 30.0 * spread[::-1],
           ("small", "orthogonal"): orth_var * spread, ("small", "gaussian"): 30.0 * spread[::-1],
           ("crit", "orthogonal"): 0.5 * spread, ("crit", "gaussian"): 9.0 * spread}
    theory = {k: 0.14 if k == ("small", "orthogonal") else 1.0 for k in var}
    means = {k: mean * spread for k in var}
    return fd.e6_jacobian(var, theory, means, linear="lin", small_q="small",
                          critical=["lin", "crit"])


def _doubly(*rates, a=0.02, layers=9):
    """Pure-stack curves ``res_l = exp(-a rate^l)``, one seed per rate: log(-log res) has
    slope log(rate) and each layer raises res to the power ``rate``."""
    r = np.asarray(rates, dtype=float)[:, None]
    return np.exp(-a * r ** np.arange(layers))


def _e7(**bad):
    """Three seeds per variant; ``bad[variant]`` replaces its curves (one row per seed)."""
    layers = np.arange(9)
    seeds = np.array([1.0, 1.1, 0.9])[:, None]
    res = {"pure": np.exp(-(3.0 ** layers) * seeds), "skip_scaled": 0.97 * seeds ** 0.1
           * np.ones(9), "ln": np.geomspace(1, 1e-5, 9) ** seeds}
    res.update({k: v for k, v in bad.items() if k in res})
    return fd.e7_rank_collapse(res)


def _e8(err, growth, runs=SPREAD):
    """``err``: (smallest k, largest k) errors, ``growth``: (exact, Linformer), scattered
    over 5 draws / runs."""
    runs = np.asarray(runs)[:, None]
    return fd.e8_linformer((16, 64), np.array(err)[None] * runs, np.array(growth)[None] * runs)


CASES = {
    "E1-self-averaging": {"PASS": lambda: _e1(0.01), "FAIL": lambda: _e1(0.2),
                          "INCONCLUSIVE": lambda: _e1(0.04, nets=[0.1, 1.8, 0.4, 1.6, 0.2]),
                          },
    "E2": {"PASS": lambda: _e2(0.01, 0.01), "FAIL": lambda: _e2(0.01, 0.2),
           "INCONCLUSIVE": lambda: _e2(0.01, 0.01, nets=[1.0, 1.2])},   # 2 nets: too few
    "E3-6xi": {"PASS": lambda: _e3(0.8, 0.2), "FAIL": lambda: _e3(0.2, 0.8),
               "INCONCLUSIVE": lambda: _e3(0.5, 0.5, noise=0.3)},
    "E4-ordered": {"PASS": lambda: _e4("E4-ordered"),
                   "FAIL": lambda: _e4("E4-ordered", ordered=[0.5, 0.52, 0.48]),
                   "INCONCLUSIVE": lambda: _e4("E4-ordered", ordered=[0.27, 0.35, 0.2])},
    "E4-chaotic": {"PASS": lambda: _e4("E4-chaotic", chaotic=[-0.29, -0.295, -0.3]),
                   "FAIL": lambda: _e4("E4-chaotic", chaotic=[-0.1, -0.12, -0.08]),
                   "INCONCLUSIVE": lambda: _e4("E4-chaotic", chaotic=[-0.29, -0.4, -0.2])},
    "E4-critical": {"PASS": lambda: _e4("E4-critical"),
                    "FAIL": lambda: _e4("E4-critical", critical=[0.05, 0.06, 0.04]),
                    "INCONCLUSIVE": lambda: _e4("E4-critical", critical=[0.0, 0.02, 0.005])},
    "E5": {"PASS": lambda: _e5(0.0, 0.1), "FAIL": lambda: _e5(0.0, 1.5),
           "INCONCLUSIVE": lambda: _e5(0.0, 0.1, spread=[1.0, 1.3])},      # 2 nets: too few
    "E6-orthogonal": {"PASS": lambda: _e6(0.13, 1.0).findings["E6-orthogonal"],
                      "FAIL": lambda: _e6(20.0, 1.0).findings["E6-orthogonal"],
                      "INCONCLUSIVE": lambda: _e6(0.07, 1.0, spread=[0.5, 1.5, 1.0, 1.4, 0.6]
                                                  ).findings["E6-orthogonal"]},
    "E6-mean": {"PASS": lambda: _e6(0.13, 1.0).findings["E6-mean"],
                "FAIL": lambda: _e6(0.13, 0.5).findings["E6-mean"],
                "INCONCLUSIVE": lambda: _e6(0.13, 1.0, spread=[0.5, 1.5, 1.0, 1.4, 0.6]
                                            ).findings["E6-mean"]},
    "E7-pure": {"PASS": lambda: _e7().findings["E7-pure"],
                "FAIL": lambda: _e7(pure=np.full((3, 9), 0.5) * [[1.0], [0.9], [0.8]]
                                    ).findings["E7-pure"],
                "INCONCLUSIVE": lambda: _e7(pure=np.array([[1e-12] * 9, [1e-3] * 9,
                                                           [1e-5] * 9])).findings["E7-pure"]},
    "E7-skip": {"PASS": lambda: _e7().findings["E7-skip"],
                "FAIL": lambda: _e7(skip_scaled=np.geomspace(1, 0.1, 9)[None] * np.ones((3, 1))
                                    ).findings["E7-skip"],
                "INCONCLUSIVE": lambda: _e7(skip_scaled=np.array([[0.97] * 9, [0.8] * 9,
                                                                  [0.92] * 9])
                                            ).findings["E7-skip"]},
    "E7-ln": {"PASS": lambda: _e7().findings["E7-ln"],
              "FAIL": lambda: _e7(ln=np.full((3, 9), 0.8) * [[1.0], [0.9], [0.8]]
                                  ).findings["E7-ln"],
              "INCONCLUSIVE": lambda: _e7(ln=np.array([[1e-6] * 9, [1e-1] * 9, [1e-3] * 9])
                                          ).findings["E7-ln"]},
    "E7-slope": {"PASS": lambda: _e7(pure=_doubly(2.9, 3.0, 3.1)).findings["E7-slope"],
                 "FAIL": lambda: _e7(pure=_doubly(1.4, 1.5, 1.6)).findings["E7-slope"],
                 "INCONCLUSIVE": lambda: _e7(pure=_doubly(2.2, 4.0, 3.0)
                                             ).findings["E7-slope"]},
    "E7-cubic": {"PASS": lambda: _e7(pure=_doubly(2.9, 3.0, 3.1)).findings["E7-cubic"],
                 "FAIL": lambda: _e7(pure=_doubly(1.4, 1.5, 1.6)).findings["E7-cubic"],
                 "INCONCLUSIVE": lambda: _e7(pure=_doubly(2.3, 3.9, 3.0)
                                             ).findings["E7-cubic"]},
    "E8-error": {"PASS": lambda: _e8((0.5, 0.1), (2.0, 1.0)).findings["E8-error"],
                 "FAIL": lambda: _e8((0.5, 0.6), (2.0, 1.0)).findings["E8-error"],
                 "INCONCLUSIVE": lambda: fd.e8_linformer(
                     (16, 64), [[0.5, 0.4], [0.5, 0.6], [0.5, 0.45]], [[2.0, 1.0]] * 3
                 ).findings["E8-error"]},
    "E8-time": {"PASS": lambda: _e8((0.5, 0.1), (2.0, 1.0)).findings["E8-time"],
                "FAIL": lambda: _e8((0.5, 0.1), (1.0, 1.1)).findings["E8-time"],
                "INCONCLUSIVE": lambda: _e8((0.5, 0.1), (2.0, 1.0), runs=[1.0, 0.9]
                                            ).findings["E8-time"]},          # 2 runs: too few
}


def test_e3_compares_at_equal_depth_not_pooled():
    """Accuracy that depends on depth alone: the pooled comparison (the former check) credits
    the claim, the comparison at equal depth does not (FAIL: no difference at any depth)."""
    depth_only = np.stack([np.tile(np.array([0.9, 0.5, 0.2])[:, None], (1, 3))] * 3)
    depth_only += np.random.default_rng(0).normal(0, 0.01, depth_only.shape)
    res = fd.e3_trainability(depth_only, DEPTHS, XI)
    assert res.pooled > 0.2
    assert res.findings["E3-6xi"].verdict in ("FAIL", "INCONCLUSIVE")
    assert abs(np.mean(res.per_seed)) < 0.05 and res.depths == (30, 100)


def test_e3_is_na_without_a_depth_on_both_sides_and_counts_divergence_as_chance():
    na = fd.e3_trainability(np.full((2, 3), 0.5), (5, 10), (100.0, 200.0, 300.0))
    assert na.findings["E3-6xi"].verdict == "N/A"
    acc = _acc(0.8, np.nan)
    assert fd.e3_trainability(acc, DEPTHS, XI).per_seed[0] == pytest.approx(0.7)
    assert fd.e3_contrast_depths(DEPTHS, XI) == [30, 100]


def test_sanity_checks_fail_on_wrong_numbers():
    good = dict(cl.CRITICAL_TABLE)
    assert fd.e1_critical_line(good).findings["E1-table"].verdict == "PASS"
    assert fd.e1_critical_line(good).findings["E1-critical"].verdict == "PASS"
    # the former 101-node value at sigma_b^2 = 2
    assert fd.e1_critical_line({**good, 2.0: 4.2611}).findings["E1-table"].verdict == "FAIL"
    assert fd.e1_critical_line({**good, 0.05: 1.80}).findings["E1-critical"].verdict == "FAIL"
    sw = np.linspace(1.0, 3.0, 21)
    xi = 1 / np.abs(sw - 1.76 + 1e-3)
    table = {s: v for s, v in cl.DEPTH_TABLE.items()}
    res = fd.e3_depth_scales(sw, xi, 1.761, table).findings
    assert res["E3-peak"].verdict == "PASS" and res["E3-table"].verdict == "PASS"
    res = fd.e3_depth_scales(sw, xi, 2.5, {1.0: (0.2, 0.8, 1.0, 3.6, 1.75)}).findings
    assert res["E3-peak"].verdict == "FAIL" and res["E3-table"].verdict == "FAIL"
    assert _e6(0.13, 1.0).findings["E6-linear"].verdict == "PASS"


def test_e2_judges_each_net_not_the_seed_averaged_curve():
    """Nets whose errors cancel in the seed-averaged curve (the former statistic, within the
    tolerance) but whose worst layers each miss it by 10 %: FAIL however many nets."""
    for nets in (6, 20):
        res = _e2(0.1, 0.01, nets=np.linspace(0.9, 1.1, nets)[::-1])
        assert res.ours["a"]["seed-averaged curve: q rel. err (max)"] < cl.Q_REL_TOL
        assert verdict_of(res, cl.CLAIMS["E2"]) == "FAIL"


def test_e7_fits_each_seed_and_counts_those_without_a_fit():
    fits = fd.seed_fits(np.concatenate([_doubly(3.0, 3.0, 3.0), np.ones((1, 9))]))
    assert fits[-1] is None and all(f is not None for f in fits[:-1])
    assert [round(f.slope, 6) for f in fits[:-1]] == [round(math.log(3), 6)] * 3
    assert all(abs(f.exponent - 3) < 1e-6 for f in fits[:-1])
    res = _e7(pure=np.concatenate([_doubly(2.9, 3.0, 3.1), np.ones((1, 9))])
              ).findings["E7-slope"]
    assert res.evidence.n == 3 and "3 of 4 seeds" in res.detail


def test_one_replicate_decides_nothing():
    """One net, one draw, one timing run: INCONCLUSIVE, whatever the data say."""
    one = {"E1-self-averaging": _e1(0.01, nets=[1.0]), "E2": _e2(0.01, 0.01, nets=[1.0]),
           "E5": _e5(0.0, 0.1, spread=[1.0]),
           "E6-mean": _e6(0.13, 1.0, spread=[1.0]).findings["E6-mean"],
           "E8-time": _e8((0.5, 0.1), (2.0, 1.0), runs=[1.0]).findings["E8-time"]}
    for cid, finding in one.items():
        assert verdict_of(finding, cl.CLAIMS[cid]) == "INCONCLUSIVE", cid
