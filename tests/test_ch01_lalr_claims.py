"""Chapter 01's claim tests give PASS, FAIL and INCONCLUSIVE on small synthetic results.

Each case builds run results by hand (no training: the dicts `train_runs` returns, with only
the fields the claim's function reads), calls the function of `ch01_lalr.findings` and returns
its `Finding`; ``tests/test_claim_cases.py`` checks the verdicts. Differences per seed are
chosen so the paired interval lies clearly above, clearly below, or across the threshold.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters.ch01_lalr import findings as F
from lalr_core.chapters.ch01_lalr import mechanisms as mech
from lalr_core.core.results.evidence import paired_difference

CHAPTER = "ch01_lalr"

EPOCHS = 6
UP, DOWN, ACROSS = (3.0, 4.0, 5.0, 4.0), (-5.0, -4.0, -3.0, -4.0), (-3.0, 2.0, 3.0, -2.0)
LAYERS = 6


# ----------------------------------------------------------------------------- builders
def run(acc: float, *, curve=None, splits=None, diag=None, lalr=None, params: int = 100) -> dict:
    """A run result: final validation accuracy ``acc`` (a fraction), its curve, extra
    ``text_splits`` records ``{split: (loss_before, loss_after, acc_after)}``, diagnostics."""
    curve = np.full(EPOCHS, acc) if curve is None else np.asarray(curve, float)
    callbacks = {}
    if splits:
        rows = [(name, e, loss, a) for name, (l0, l1, a) in splits.items()
                for e, loss in ((0, l0), (EPOCHS, l1))]
        callbacks["text_splits"] = {"history": pd.DataFrame(
            rows, columns=["split", "epoch", "loss", "acc"])}
    if diag is not None:
        callbacks["layer_diagnostics"] = diag
    if lalr is not None:
        callbacks["lalr"] = lalr
    return {"diverged": False, "final": {"val_acc": acc}, "num_parameters": params,
            "history": pd.DataFrame({"epoch": np.arange(1, EPOCHS + 1), "val_acc": curve}),
            "callbacks": callbacks}


def pair(diffs, base: float = 0.7, **kw):
    """Two arms' runs by seed whose final accuracies differ by ``diffs`` points."""
    a = [run(base + d / 100, **kw) for d in diffs]
    b = [run(base, **kw) for _ in diffs]
    return a, b


def by_task(runs):
    return {"sent": runs, "acc": runs}


def gains(effect):
    """LALR-REC, U, U-match by task: LALR-REC above both by ``effect`` points per seed."""
    rec, u = pair(effect)
    return by_task(rec), by_task(u), by_task(u)


# ----------------------------------------------------------------------------- X-L2
def lc15(effect):
    return F.lc15(*gains(effect)).finding


def lc15_vision(effect):
    rec, u = pair(effect)
    return F.lc15({"vision": rec}, {"vision": u}, {"vision": u}, "L-C15.vision").finding


def lc15_nlp(effect):
    rec, u = pair(effect)
    return F.lc15({"sst2": rec, "cola": rec}, {"sst2": u, "cola": u}, {"sst2": u, "cola": u},
                  "L-C15.nlp").finding


def lc2(effect, same=True):
    rec, u, _ = gains(effect)
    counts = {"a": 100, "b": 100 if same else 101, "c": 100, "d": 100}
    return F.lc2(rec, u, counts).finding


def baselines(effect):
    rec, u, _ = gains(effect)
    return F.beats("X-L2", rec, {"LARS": u, "LAMB": u, "TempBalance": u}).finding


def lc17(offsets):
    """LALR-REC - U at every epoch = ``offsets[seed]`` points."""
    rec = [run(0.7 + d / 100, curve=np.full(EPOCHS, 0.7 + d / 100)) for d in offsets]
    u = [run(0.7) for _ in offsets]
    return F.lc17(by_task(rec), by_task(u)).finding


# ----------------------------------------------------------------------------- X-L3, X-L4
def forgetting_runs(diffs, split="mlm"):
    rec = [run(0.7, splits={split: (2.0, 2.5 + d / 10, 0.5)}) for d in diffs]
    u = [run(0.7, splits={split: (2.0, 2.5, 0.5)}) for _ in diffs]
    return rec, u


def lc3(diffs):
    rec, u = forgetting_runs(diffs)
    return F.lc3(by_task(rec), by_task(u), by_task(u)).finding


def lc3_vision(diffs):
    rec, u = forgetting_runs(diffs, "pretrain")
    return F.lc3({"vision": rec}, {"vision": u}, {"vision": u}, "L-C3.vision",
                 split="pretrain").finding


def small_runs(gap_diffs, val_diffs):
    """X-L4: LALR-REC's gap and validation accuracy minus U's, points per seed."""
    rec = [run(0.8 + v / 100, splits={"train": (0.0, 0.0, 0.8 + v / 100 + 0.10 + g / 100)})
           for g, v in zip(gap_diffs, val_diffs)]
    u = [run(0.8, splits={"train": (0.0, 0.0, 0.9)}) for _ in gap_diffs]
    return rec, u


def lc16(gap_diffs, val_diffs=(0.5, 0.0, 0.5, 0.0)):
    rec, u = small_runs(gap_diffs, val_diffs)
    return F.lc16(rec, u, u, tolerance=1.0).finding


def lc1(forget_diffs, mechanism=True):
    forget = {"sent vs U": paired_difference(forget_diffs, np.zeros(4), side="less")}
    gap = {"gap vs U": paired_difference(DOWN, np.zeros(4), side="less")}
    return F.lc1(mechanism, forget, gap).finding


# ----------------------------------------------------------------------------- X-L5, X-L6
def lc8(margin):
    """SVD>CE>CS above the best other schedule by ``margin[seed]`` points."""
    acc = {"svd>ce>cs": 0.8 + np.asarray(margin) / 100, "ce>svd>cs": np.full(4, 0.8),
           "U": np.full(4, 0.7)}
    return F.lc8({"sent": acc, "acc": acc}).finding


def lc9(margin_mn):
    m = pd.DataFrame({k: np.asarray(margin_mn) / 1e3 for k in mech.INEQUALITIES})
    return F.lc9({"sent": m, "acc": m}, list(mech.INEQUALITIES)).finding


def lc29(step_mn):
    """Gains SVD > CE > CS by ``step_mn`` millinats per seed."""
    s = np.asarray(step_mn) / 1e3
    g = pd.DataFrame({"svd": 0.1 + 2 * s, "ce": 0.1 + s, "cs": np.full(4, 0.1)})
    return F.lc29({"sent": g, "acc": g}).finding


def loss_run(decreases) -> dict:
    """A run whose full train loss falls by ``decreases[e]`` in epoch ``e``."""
    J = 3.0 - np.concatenate([[0.0], np.cumsum(decreases)])
    epochs = pd.DataFrame({"epoch": np.arange(len(J)), "full_train_loss": J})
    return run(0.7, diag={"epochs": epochs})


def lc26(svd_extra_mn):
    """SVD's cycle-1 minus cycle-2 gain exceeds U's and the other phases' by
    ``svd_extra_mn[seed]`` millinats."""
    rec, u = [], []
    for x in np.asarray(svd_extra_mn) / 1e3:
        rec.append(loss_run([0.05 + x, 0.05, 0.05, 0.03, 0.03, 0.03]))
        u.append(loss_run([0.05, 0.05, 0.05, 0.03, 0.03, 0.03]))
    return F.lc26(by_task(rec), by_task(u)).finding


# ----------------------------------------------------------------------------- X-L7
def diag_table(delta_top: float, top_positions=(0, 1), raw_reverse_at=()) -> pd.DataFrame:
    """A ``"layers"`` table: every epoch the layers at ``top_positions`` change by
    ``delta_top`` (effective rank and entropy, nats), the others by 0; raw metrics rank the
    layers by position (LALR's would-be SVD / CE scales: position 0 highest), reversed at the
    epochs in ``raw_reverse_at``."""
    rows = []
    for e in range(EPOCHS + 1):
        for p in range(LAYERS):
            grow = e * delta_top if p in top_positions else 0.0
            raw = float(LAYERS - p if e in raw_reverse_at else p + 1)
            rows.append({"epoch": e, "position": p, "layer": f"l{p}", "fro_norm": 1.0,
                         "update_norm": 0.1, "rel_update": 0.1, "eff_rank": 3.0 + grow,
                         "mean_sv": 1.0, "hist_entropy": 2.0 + grow, "mean_cs": raw,
                         "grad_norm": 1.0, "raw_svd": raw, "raw_ce": raw})
    return pd.DataFrame(rows)


def lalr_table(scales_at=None, cs=None) -> pd.DataFrame:
    """LALR's table: position 0 has the highest scale (1, 0.8, ..., 0) in every epoch, or
    ``scales_at[epoch]``; phases svd, ce, cs; raw metrics ``cs`` (default: position)."""
    rows = []
    for e in range(EPOCHS + 1):
        sc = (scales_at or {}).get(e, np.linspace(1, 0, LAYERS))
        for p in range(LAYERS):
            m = float(p if cs is None else cs[e] * p)
            rows.append({"epoch": e, "layer": f"l{p}", "phase": ("svd", "ce", "cs")[e % 3],
                         "svd": m, "ce": m, "cs": m, "u": 0.0, "lr_scale": float(sc[p])})
    return pd.DataFrame(rows)


def tercile_runs(rec_effect, null_effect):
    rec = [run(0.7, diag={"layers": diag_table(x)}, lalr=lalr_table()) for x in rec_effect]
    u = [run(0.7, diag={"layers": diag_table(x)}) for x in null_effect]
    return by_task(rec), by_task(u)


def lc10(rec_effect, null_effect=(0.0, 0.0, 0.0, 0.0)):
    return F.lc10(*tercile_runs(rec_effect, null_effect)).finding


def lc11(rec_effect, null_effect=(0.0, 0.0, 0.0, 0.0)):
    return F.lc11(*tercile_runs(np.asarray(rec_effect) / 1e3,
                                np.asarray(null_effect) / 1e3)).finding


def lc12(diffs):
    """Layer-mean CS falls over the CS epochs by ``diffs[seed]`` (x 1e3) more under LALR-REC."""
    def cs_run(step):
        t = diag_table(0.0)
        t["mean_cs"] = t["mean_cs"] + step * t["epoch"]
        return run(0.7, diag={"layers": t})
    rec = [cs_run(d / 1e3) for d in diffs]
    u = [cs_run(0.0) for _ in diffs]
    return F.lc12(by_task(rec), by_task(u), [2, 5]).finding


def spread_run(sign: float, seed: int, noise: float = 0.25) -> dict:
    """L-C28: per epoch the phase metric's spread changes by ``x`` and the loss falls by
    ``sign * x`` plus ``noise`` (``x`` and the noise drawn from ``seed``)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 1.0, EPOCHS)   # spreads stay positive
    w = np.concatenate([[1.0], 1.0 + np.cumsum(x)])
    # the loss follows the spread up to noise, so each run's rho differs (no zero-width mean)
    J = 3.0 - np.concatenate([[0.0], np.cumsum(sign * x + rng.normal(0, noise, EPOCHS))])
    epochs = pd.DataFrame({"epoch": np.arange(EPOCHS + 1), "full_train_loss": J})
    return run(0.7, diag={"epochs": epochs}, lalr=lalr_table(cs=w))


def lc28(signs):
    runs = [spread_run(s, k) for k, s in enumerate(signs)]
    return F.lc28(by_task(runs)).finding


# ----------------------------------------------------------------------------- X-L8, X-L1
def lc13(shrink):
    summary = pd.DataFrame({"phase": ["svd", "ce", "cs"], "range_before": [1.0, 1.0, 1.0],
                            "range_after": [1 - shrink, 1.0, 1.0],
                            "range_shrink": [shrink, 0.0, 0.0]})
    return F.lc13(summary, 0.5).finding


def lc7(r_max_seen, replicates=3):
    """r of each configuration in each of 3 timed repeats (every repeat below / one above)."""
    table = pd.DataFrame({"n_blocks": [2, 4], "n_train": [250, 250], "r": [0.01, r_max_seen]})
    return F.lc7(table, 0.05, replicates=replicates).finding


# ----------------------------------------------------------------------------- X-L10
def probe_run(gap_slope: float, worst_slope: float = 0.0, acc=None) -> dict:
    t = np.arange(EPOCHS + 1)
    worst = 0.5 + worst_slope * t
    best = worst + 0.3 + gap_slope * t
    probes = pd.DataFrame([(e, k, a) for e in t for k, a in
                           ((0, 0.5), (1, worst[e]), (2, best[e]))],
                          columns=["epoch", "point", "acc"])
    return run(0.7, curve=acc, diag={"probes": probes})


def lc19(slope_diffs):
    rec = [probe_run(d / 100) for d in slope_diffs]
    u = [probe_run(0.0) for _ in slope_diffs]
    return F.lc19(rec, u).finding


def lc25(slope_diffs):
    rec = [probe_run(0.0, d / 100) for d in slope_diffs]
    u = [probe_run(0.0) for _ in slope_diffs]
    return F.lc25(rec, u).finding


def gap_run(sign: float, seed: int) -> dict:
    """L-C20: the block gap follows a random walk; validation accuracy moves by ``sign``
    times the gap's change."""
    rng = np.random.default_rng(seed)
    gap = 0.2 + np.concatenate([[0.0], np.cumsum(rng.normal(0, 0.02, EPOCHS))])
    t = np.arange(EPOCHS + 1)
    probes = pd.DataFrame([(e, k, a) for e in t for k, a in
                           ((0, 0.5), (1, 0.5), (2, 0.5 + gap[e]))],
                          columns=["epoch", "point", "acc"])
    acc = 0.6 + sign * gap[1:] + rng.normal(0, 0.01, EPOCHS)   # each run's rho differs
    return run(float(acc[-1]), curve=acc, diag={"probes": probes})


def lc20(signs):
    return F.lc20([gap_run(s, k) for k, s in enumerate(signs)]).finding


# ----------------------------------------------------------------------------- X-L12..X-L15
def lc22_case(rec_falls, null_reverses):
    """LALR-REC's runs: of the two top layers at epoch 0, ``rec_falls[run]`` have a lower
    scale at epoch 3; U's would-be scales reverse their ranking at epoch 3 when
    ``null_reverses[run]`` (then both top layers fall)."""
    tables = []
    for n in rec_falls:
        at3 = np.linspace(1, 0, LAYERS)
        at3[:n] = 0.05
        tables.append(lalr_table({3: at3}))
    u = [run(0.7, diag={"layers": diag_table(0.0, raw_reverse_at=(3,) if r else ())})
         for r in null_reverses]
    return F.lc22(tables, u)


def lc22(rec_falls, null_reverses=(False, False, False, False)):
    return lc22_case(rec_falls, null_reverses).finding


def lc4(rec_falls, null_reverses=(False,) * 4):
    ev22 = lc22_case(rec_falls, null_reverses).finding.evidence
    gain = {"sent": paired_difference(UP, np.zeros(4))}
    return F.lc4(ev22, gain).finding


def lc23(log_ratio):
    amp = pd.DataFrame({"ratio": np.exp(log_ratio), "grad_ratio": np.ones(4),
                        "scale_excess": [0.2, 0.25, 0.15, 0.2]})
    return F.lc23({"sent": amp, "acc": amp}).finding


def lc24(sd_diffs):
    """Final accuracies over three perturbations: U spread 4 points; LALR-REC's spread
    differs by ``sd_diffs[seed]`` points."""
    def spread(sd):
        return {k: [run(0.7 + z * sd / 100)] for k, z in (("a", -1.0), ("b", 0.0), ("c", 1.0))}
    def merge(arms):
        return {k: [a[k][0] for a in arms] for k in ("a", "b", "c")}

    rec = [spread(4.0 + d) for d in sd_diffs]
    u = [spread(4.0) for _ in sd_diffs]
    return F.lc24(merge(rec), merge(u)).finding


def shifts(*diffs):
    return {f"shift {i}": paired_difference(d, np.zeros(4)) for i, d in enumerate(diffs)}


def ood(cid, *diffs):
    return F.ood(cid, shifts(*diffs)).finding


def lc18(task_diffs, shift_diffs):
    gain = {"sent": paired_difference(task_diffs, np.zeros(4)),
            "acc": paired_difference(task_diffs, np.zeros(4))}
    return F.lc18(gain, F.ood("L-C5", shifts(*shift_diffs))).finding


# ----------------------------------------------------------------------------- E14
def e14(cid, column, slope, seeds=3):
    """Three SGD seeds (replicates); at lr 1 every seed's slope is ``slope`` +- 0.005."""
    table = pd.concat([pd.DataFrame({"lr": [0.1, 1.0, 0.1], "wd": [0.0, 0.0, 1e-3],
                                     column: [0.5, slope + 0.005 * (s - 1), 0.1], "seed": s})
                       for s in range(seeds)], ignore_index=True)
    return F.e14(cid, table, column).finding


def cases(make, up, down, across=None):
    out = {"PASS": lambda: make(up), "FAIL": lambda: make(down)}
    if across is not None:
        out["INCONCLUSIVE"] = lambda: make(across)
    return out


CASES = {
    "L-C1": {"PASS": lambda: lc1(DOWN), "FAIL": lambda: lc1(UP),
             "INCONCLUSIVE": lambda: lc1(ACROSS)},
    "L-C2": {"PASS": lambda: lc2(UP), "FAIL": lambda: lc2(UP, same=False),
             "INCONCLUSIVE": lambda: lc2(ACROSS)},
    "L-C3": cases(lc3, DOWN, UP, ACROSS),
    "L-C3.vision": cases(lc3_vision, DOWN, UP, ACROSS),
    "L-C4": {"PASS": lambda: lc4((2, 2, 1, 2)),
             # LALR's top layers fall less often than U's would-be ones
             "FAIL": lambda: lc4((0, 1, 0, 0), (True,) * 4),
             "INCONCLUSIVE": lambda: lc4((2, 0, 0, 2))},
    "L-C5": {"PASS": lambda: ood("L-C5", UP, UP, DOWN),
             "FAIL": lambda: ood("L-C5", UP, DOWN, DOWN),
             "INCONCLUSIVE": lambda: ood("L-C5", UP, ACROSS, DOWN)},
    "L-C27": {"PASS": lambda: ood("L-C27", UP, UP, ACROSS),
              "FAIL": lambda: ood("L-C27", DOWN, DOWN, ACROSS),
              "INCONCLUSIVE": lambda: ood("L-C27", UP, ACROSS, ACROSS)},
    "L-C7": {**cases(lc7, 0.02, 0.2),
             # the medians of the repeats only: not declared to hold in every repeat
             "INCONCLUSIVE": lambda: lc7(0.02, replicates=None)},
    "L-C8": cases(lc8, UP, DOWN, ACROSS),
    "L-C9": cases(lc9, UP, DOWN, ACROSS),
    "L-C10": {"PASS": lambda: lc10((1.0, 1.2, 0.9, 1.1)),
              # the top tercile gains more than the bottom one, but no more than under U
              "FAIL": lambda: lc10((1.0, 1.2, 0.9, 1.1), (2.0, 2.2, 1.9, 2.1)),
              "INCONCLUSIVE": lambda: lc10((1.0, -1.0, 1.1, -1.1))},
    "L-C11": {"PASS": lambda: lc11((1.0, 1.2, 0.9, 1.1)),
              "FAIL": lambda: lc11((1.0, 1.2, 0.9, 1.1), (2.0, 2.2, 1.9, 2.1)),
              "INCONCLUSIVE": lambda: lc11((1.0, -1.0, 1.1, -1.1))},
    "L-C12": cases(lc12, DOWN, UP, ACROSS),
    "L-C13": cases(lc13, 0.2, 0.8),
    "L-C15": cases(lc15, UP, DOWN, ACROSS),
    "L-C15.vision": cases(lc15_vision, UP, DOWN, ACROSS),
    "L-C15.nlp": cases(lc15_nlp, UP, DOWN, ACROSS),
    "L-C16": cases(lc16, DOWN, UP, ACROSS),
    "L-C17": cases(lc17, (0.5, 1.0, 0.5, 1.0), (-5.0, -6.0, -5.0, -6.0),
                   (3.0, -5.0, 2.0, -4.0)),
    "L-C18": {"PASS": lambda: lc18(UP, (UP, UP, DOWN)),
              "FAIL": lambda: lc18(DOWN, (UP, UP, DOWN)),
              "INCONCLUSIVE": lambda: lc18(ACROSS, (UP, UP, DOWN))},
    "L-C19": cases(lc19, DOWN, UP, ACROSS),
    "L-C20": cases(lc20, (-1,) * 6, (1,) * 6, (1, -1) * 3),
    "L-C22": {"PASS": lambda: lc22((2, 2, 1, 2)),
              # LALR's top layers fall as often as U's would-be ones: ranking drift alone
              "FAIL": lambda: lc22((0, 1, 0, 0), (True,) * 4),
              "INCONCLUSIVE": lambda: lc22((2, 0, 0, 2))},
    "L-C23": cases(lc23, (0.3, 0.4, 0.5, 0.4), (-0.3, -0.4, -0.5, -0.4),
                   (0.3, -0.2, 0.3, -0.3)),
    "L-C24": cases(lc24, (-2.0, -2.5, -1.5, -2.0), (2.0, 2.5, 1.5, 2.0),
                   (-2.0, 2.0, -1.5, 1.5)),
    "L-C25": cases(lc25, UP, DOWN, ACROSS),
    "L-C26": cases(lc26, UP, DOWN, ACROSS),
    "L-C28": cases(lc28, (-1,) * 6, (1,) * 6, (1, -1) * 3),
    "L-C29": cases(lc29, UP, DOWN, ACROSS),
    "L-C30": {"N/A": lambda: F.lc30().finding},
    # the chapter's other claim tests (X-L2's baselines, E14)
    "X-L2": cases(baselines, UP, DOWN, ACROSS),
    "E14": {"PASS": lambda: e14("E14", "slope", 0.49),
            "FAIL": lambda: e14("E14", "slope", 0.4),
            "INCONCLUSIVE": lambda: e14("E14", "slope", 0.49, seeds=1)},
    "E14-growth": {"PASS": lambda: e14("E14-growth", "slope_corrected", 0.52),
                   "FAIL": lambda: e14("E14-growth", "slope_corrected", 0.6),
                   "INCONCLUSIVE": lambda: e14("E14-growth", "slope_corrected", 0.52,
                                               seeds=1)},
}


# ----------------------------------------------------------------------------- beyond the cases
def test_the_tercile_null_is_what_separates_lalr_from_drift():
    """L-C10's old rule (top - bottom of LALR-REC alone) passes on the FAIL case, where U's
    would-be terciles drift apart even more: the null decides."""
    rec, u = tercile_runs((1.0, 1.2, 0.9, 1.1), (2.0, 2.2, 1.9, 2.1))
    table = F.tercile_null(rec["sent"], u["sent"], "svd", "eff_rank")
    assert np.allclose(table["lalr"], [1.0, 1.2, 0.9, 1.1])
    assert np.allclose(table["null"], [2.0, 2.2, 1.9, 2.1])
    assert F.lc10(rec, u).verdict == "FAIL"


def test_spearman_takes_the_run_as_its_unit():
    ev = F.lc28(by_task([spread_run(-1, k) for k in range(5)])).finding.evidence
    assert ev.unit == "run" and ev.n == 5 and "t interval over runs" in ev.method
    assert ev.verdict == "PASS"
    few = F.lc28(by_task([spread_run(-1, k, noise=0.0) for k in range(1)])).finding.evidence
    assert few.verdict == "INCONCLUSIVE" and few.estimate == pytest.approx(-1.0)


def test_arm_table_says_which_arm_leaves_chance():
    u = [run(0.95 + d / 1000) for d in (1, -1, 2, 0)]
    rec = [run(0.5 + d / 1000) for d in (1, -1, 2, 0)]
    t = F.arm_table({"U": u, "REC": rec}, "REC", "U").set_index("arm")
    assert t.loc["U", "off chance"] == "PASS" and t.loc["REC", "off chance"] == "INCONCLUSIVE"
    assert t.loc["U", "moves"] == "PASS" and t.loc["REC", "moves"] == "-"


@pytest.mark.parametrize("cid", sorted(CASES))
def test_findings_record_their_claims_own_threshold(cid):
    """Every interval a claim's function returns is judged against the claim's own
    threshold and side (``FigureWriter.record`` refuses anything else)."""
    from lalr_core.core.results.evidence import Evidence
    claim = F.claim_of(cid)
    for make in CASES[cid].values():
        ev = make().evidence
        if isinstance(ev, Evidence) and claim.side is not None:
            assert (ev.side, ev.threshold) == (claim.side, claim.threshold)
            assert math.isfinite(ev.half_width) or ev.verdict == "INCONCLUSIVE"


def test_one_failing_comparison_is_counted_once():
    """L-C2 and L-C18 FAILed only by L-C15's LALR-REC - U interval are recorded N/A pointing
    to L-C15; a FAIL of their own (another part, a differing parameter count) is kept."""
    ref = F.lc15(*gains(DOWN))
    assert ref.verdict == "FAIL"
    lc2 = F.lc2(*gains(DOWN)[:2], {"a": 100, "b": 100, "c": 100})
    once = F.counted_once(lc2, ref, {"sent vs U": "sent vs U", "acc vs U": "acc vs U"})
    assert once.verdict == "N/A" and "decided by L-C15's interval" in once.finding.detail
    assert "counted once there" in once.finding.detail
    own = F.lc2(*gains(DOWN)[:2], {"a": 100, "b": 101, "c": 100})   # a FAIL of its own
    assert F.counted_once(own, ref, {"sent vs U": "sent vs U"}) is own
    gain = {t: paired_difference(DOWN, np.zeros(4)) for t in ("sent", "acc")}
    lc18_own_ood = F.lc18(gain, F.ood("L-C5", shifts(DOWN, DOWN, DOWN)))   # OOD FAILs too
    same = {"sent LALR-REC - U": "sent vs U", "acc LALR-REC - U": "acc vs U"}
    assert F.counted_once(lc18_own_ood, ref, same).verdict == "FAIL"
    lc18 = F.lc18(gain, F.ood("L-C5", shifts(UP, UP, DOWN)))
    assert F.counted_once(lc18, ref, same).verdict == "N/A"
    passing = F.lc15(*gains(UP))
    assert F.counted_once(passing, passing, {"sent vs U": "sent vs U"}) is passing


def test_a_fail_names_its_measured_cause():
    fail = F.lc15(*gains(DOWN))
    named = F.with_cause(fail, ["sent vs U"], "cause: X-L18")
    assert named.verdict == "FAIL" and named.finding.detail.endswith("; cause: X-L18")
    passing = F.lc15(*gains(UP))
    assert F.with_cause(passing, ["sent vs U"], "cause: X-L18") is passing


def test_lc20_counts_a_seeds_two_runs_once():
    runs = [gap_run(-1, k) for k in range(6)]      # U's and LALR-REC's runs of 3 seeds
    assert F.lc20(runs).finding.evidence.replicates == 6
    ev = F.lc20(runs, seeds=3).finding.evidence
    assert ev.replicates == 3 and ev.n == 6
    assert F.lc20(runs[:4], seeds=2).finding.evidence.claim_verdict == "INCONCLUSIVE"
