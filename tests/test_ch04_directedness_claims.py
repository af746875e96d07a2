"""Chapter 04's claim tests on synthetic per-seed curves: each gives PASS where the claim holds,
FAIL where it does not, and INCONCLUSIVE where the seeds disagree; the spikes are judged
against a step without an lr drop, so a curve that fluctuates as much everywhere fails; E13's
directedness is judged against a random walk with the same number of steps; the directedness of
the training runs against the filtered-noise null (noise through the same optimiser), built
here as given curves (its simulation is tested in `test_ch04_directedness_null.py`). Every case
has 3 seeds (replicates), or 2 for the INCONCLUSIVE cases of the bools."""

import math

import numpy as np
import pytest

from lalr_core.chapters import ch04_directedness as ch4
from lalr_core.chapters.ch04_directedness import findings as fd
from lalr_core.methods import trajectory as tj

CHAPTER = "ch04_directedness"

T, N, DROPS = 60, 10, [30, 45]
SPREAD = (1.0, 1.1, 0.9)           # seeds that agree
MIXED = (1.0, -1.0, 0.3)           # seeds that disagree in sign


def curve(p5=0.95, pN=0.6, before=0.4, spike=0.0, base=0.4):
    """``psi_N`` of one seed: ``p5`` at batch 5, ``pN`` at batch N, ``base`` after it,
    ``before`` at the first drop, and a rise by ``spike`` (a fraction) after each drop."""
    psi = np.full(T, base)
    psi[4], psi[N - 1], psi[DROPS[0] - 1] = p5, pN, before
    for d in DROPS:
        psi[d:d + 3] = psi[d - 1] * (1 + spike)
    return psi


def early(margins):
    # margin = min(p5 - 0.8, p5 - pN, pN - before) = p5 - 0.8 when the decay is large
    return fd.early_phase("sgdm", [curve(p5=0.8 + m) for m in margins], DROPS[0], N).finding


NULL_SPIKE = 0.15                  # the filtered-noise null's own rise at each drop


def spikes(gains, name="sgdm"):
    """Each seed rises by the null's rise plus ``gain`` after each drop."""
    return fd.lr_drop_spikes(name, [curve(spike=NULL_SPIKE + g) for g in gains], DROPS, N,
                             null_psi_window=np.stack([curve(spike=NULL_SPIKE)] * 3)).finding


def above_rw(ratios):
    """psi_N = ratio x the null's, the null 1.3x the random walk's (momentum alone; below
    1 / 1.5 so that a ratio above 1.5 can be reached)."""
    t = np.arange(1, T + 1)
    null = 1.3 * tj.rw_expected_psi_window(t, N)
    return fd.above_random_walk("adam", [r * null for r in ratios], N,
                                null_psi_window=null).finding


def order(gaps):
    return fd.sgdm_above_adam([curve(base=0.4 + g) for g in gaps], [curve() for _ in gaps],
                              DROPS, N).finding


def larger(diffs):
    return fd.adam_spikes_larger([curve(spike=0.2) for _ in diffs],
                                 [curve(spike=0.2 + d) for d in diffs], DROPS, N).finding


def layers(shares):
    out = []
    for s in shares:       # 10 weight tensors, round(10 s) of them spike after both drops
        cols = [curve(spike=NULL_SPIKE + 0.5 if i < round(10 * s) else NULL_SPIKE)
                for i in range(10)]  # the others rise only as much as the null
        out.append({"layer_names": [f"l{i}.weight" for i in range(10)],
                    "layer_psi_window": np.stack(cols, axis=1)})
    return fd.layer_spikes(out, DROPS, N, null_psi_window=curve(spike=NULL_SPIKE)).finding


def far(ratios):
    """The null's D_s = t, D_t = 3 sqrt(t); each seed's D_s twice the null's, its D_t
    ``ratio`` times twice the null's; gamma = 1 fits the null's scale (2) on D_s alone."""
    t = np.arange(1.0, T + 1)
    null = {"ds": t, "dt": 3 * np.sqrt(t)}
    fit = {"rw": {"sigma": 0.01}, "n": 1000, "gamma": 1.0}
    return fd.far_above_random_walk("sgdm", [2 * t] * len(ratios),
                                    [2 * r * null["dt"] for r in ratios], [fit] * len(ratios),
                                    null=null).finding


def start(diffs):
    """Adam's psi above SGDM's by the nulls' gap (0.05) plus ``diff``."""
    nulls = {"sgdm": np.full(T, 0.6), "adam": np.full(T, 0.65)}
    return fd.adam_directed_at_start([np.full(T, 0.5)] * len(diffs),
                                     [np.full(T, 0.55 + d) for d in diffs], nulls=nulls).finding


def ar_better(ratios):
    fits = [{"ar": {"objective": r}, "rw": {"objective": 1.0}} for r in ratios]
    return fd.ar_fits_better("adam", fits).finding


def shape(log_ratios):
    """D_t = t; the AR shape off by a fixed bend, the RW's scaled so that
    log(RW error / AR error) is the given value."""
    dt = np.arange(1.0, 11.0)
    bend = (dt - dt.mean()) ** 2
    bend -= bend @ dt / (dt @ dt) * dt            # orthogonal to D_t: a shape error only
    fits = [{"ar": {"dt_fit": dt + 0.1 * bend},
             "rw0": {"dt_fit": dt + 0.1 * math.exp(v / 2) * bend}} for v in log_ratios]
    return fd.rw_shape_better([dt] * len(fits), fits).finding


def tracks(factor, key, walks=5):
    """``walks`` simulated walks (each a replicate) whose psi is ``factor / sqrt(t)``."""
    t = np.arange(1, 201)
    return fd.rw_tracks_inverse_sqrt(np.stack([factor / np.sqrt(t)] * walks))[key].finding


def e13(key, small=(-1.0, -1.02, -0.98), large=(0.0, 0.05, -0.05), adam=(0.5, 0.6, 0.4),
        directed=(0.5, 0.6, 0.4)):
    """Per seed: slopes, Adam's |dtheta|/lr (small B 1, large B 1 + adam) and psi at the
    target: the small batch takes 400 steps at psi = 0.1, the large 100 steps at psi such that
    log(psi sqrt(t)) rises by ``directed``."""
    k = len(small)
    psi_small = np.full(k, 0.1)
    psi_large = 0.1 * math.sqrt(4) * np.exp(np.asarray(directed))
    return fd.e13(small, large, np.ones(k), 1 + np.asarray(adam), psi_small, psi_large,
                  np.full(k, 400.0), np.full(k, 100.0))[key].finding


CASES = {
    **{f"fig3.7{p}-early": {"PASS": lambda: early([0.15, 0.16, 0.14]),
                            "FAIL": lambda: early([-0.3, -0.25, -0.35]),
                            "INCONCLUSIVE": lambda: early([0.15, -0.15, 0.02])} for p in "AB"},
    **{f"fig3.7{p}-spikes": {"PASS": lambda n=n: spikes([0.5, 0.6, 0.4], n),
                             "FAIL": lambda n=n: spikes([0.0, 0.02, 0.01], n),
                             "INCONCLUSIVE": lambda n=n: spikes([0.5, -0.2, 0.1], n)}
       for p, n in (("A", "sgdm"), ("B", "adam"))},
    **{f"fig3.19{p}-rw": {"PASS": lambda: above_rw([2.0, 2.2, 1.9]),
                          "FAIL": lambda: above_rw([1.0, 1.1, 0.9]),
                          "INCONCLUSIVE": lambda: above_rw([2.5, 0.8, 1.5])} for p in "AB"},
    **{f"fig3.12{p}": {"PASS": lambda: far([5.0, 5.5, 4.5]), "FAIL": lambda: far([1.0, 1.1, 0.9]),
                       "INCONCLUSIVE": lambda: far([4.0, 0.5, 2.0])} for p in "AB"},
    **{f"fig3.17{p}": {"PASS": lambda: ar_better([0.1, 0.08, 0.12]),
                       "FAIL": lambda: ar_better([0.9, 0.95, 0.85]),
                       "INCONCLUSIVE": lambda: ar_better([0.1, 0.9, 0.4])} for p in "AB"},
    "fig3.19-order": {"PASS": lambda: order([0.2, 0.22, 0.18]),
                      "FAIL": lambda: order([-0.2, -0.22, -0.18]),
                      "INCONCLUSIVE": lambda: order([0.2, -0.2, 0.05])},
    "fig3.19-spikes": {"PASS": lambda: larger([0.3, 0.35, 0.25]),
                       "FAIL": lambda: larger([-0.15, -0.12, -0.18]),
                       "INCONCLUSIVE": lambda: larger([0.3, -0.15, 0.05])},
    "extra_layer_psi": {"PASS": lambda: layers([0.9, 1.0, 0.8]),
                        "FAIL": lambda: layers([0.1, 0.2, 0.0]),
                        "INCONCLUSIVE": lambda: layers([1.0, 0.1, 0.6])},
    "fig3.12B-start": {"PASS": lambda: start([0.3, 0.35, 0.25]),
                       "FAIL": lambda: start([-0.3, -0.35, -0.25]),
                       "INCONCLUSIVE": lambda: start([0.3, -0.3, 0.05])},
    "fig3.18": {"PASS": lambda: shape([-1.0, -1.2, -0.8]), "FAIL": lambda: shape([1.0, 1.2, 0.8]),
                "INCONCLUSIVE": lambda: shape([-1.0, 1.0, 0.1])},
    "fig3.11-single": {"PASS": lambda: tracks(1.0, "fig3.11-single"),
                       "FAIL": lambda: tracks(1.3, "fig3.11-single"),
                       "INCONCLUSIVE": lambda: tracks(1.0, "fig3.11-single", walks=2)},
    "fig3.11-mean": {"PASS": lambda: tracks(1.01, "fig3.11-mean"),
                     "FAIL": lambda: tracks(1.1, "fig3.11-mean"),
                     "INCONCLUSIVE": lambda: tracks(1.01, "fig3.11-mean", walks=2)},
    "E13-linear": {"PASS": lambda: e13("E13-linear"),
                   "FAIL": lambda: e13("E13-linear", small=(-2.0, -2.1, -1.9)),
                   "INCONCLUSIVE": lambda: e13("E13-linear", small=(-1.0, -1.8, -0.6))},
    "E13-plateau": {"PASS": lambda: e13("E13-plateau"),
                    "FAIL": lambda: e13("E13-plateau", large=(-1.0, -0.95, -1.05)),
                    "INCONCLUSIVE": lambda: e13("E13-plateau", large=(0.0, -1.0, -0.5))},
    "E13-adam": {"PASS": lambda: e13("E13-adam"),
                 "FAIL": lambda: e13("E13-adam", adam=(-0.5, -0.6, -0.4)),
                 "INCONCLUSIVE": lambda: e13("E13-adam", adam=(0.5, -0.5, 0.1))},
    "E13-psi": {"PASS": lambda: e13("E13-psi"),
                "FAIL": lambda: e13("E13-psi", directed=(-0.5, -0.6, -0.4)),
                "INCONCLUSIVE": lambda: e13("E13-psi", directed=(0.5, -0.5, 0.1))},
}


def test_a_curve_that_rises_as_much_without_a_drop_is_no_spike():
    """psi_N that jumps by 50 % every few steps: the raw rise after each drop is large, but the
    control step shows the same rise, so the spike claim FAILs."""
    wavy = [0.4 * (1 + 0.5 * (np.arange(T) % 4 == 0)) for _ in range(3)]
    for w in wavy:
        assert ch4.spike_gains(w, DROPS, N)[0] > 0.4
    flat_null = np.full(T, 0.4)
    assert fd.lr_drop_spikes("sgdm", wavy, DROPS, N,
                             null_psi_window=flat_null).finding.verdict == "FAIL"


def test_random_walk_directedness_gains_nothing_from_fewer_steps():
    """psi = 1/sqrt(t) at both batch sizes (a random walk): raw psi at the target rises with B
    because the large batch takes fewer steps, but the claim test against the walk FAILs or is
    undecided, never PASSes."""
    steps_small, steps_large = np.array([400.0, 420, 380]), np.array([100.0, 110, 90])
    found = fd.e13([-1.0] * 3, [0.0] * 3, np.ones(3), np.ones(3) * 2,
                   1 / np.sqrt(steps_small), 1 / np.sqrt(steps_large), steps_small,
                   steps_large)["E13-psi"]
    assert found.finding.verdict != "PASS"
    assert np.allclose(found.values, 0.0)


def test_a_null_too_close_to_one_leaves_the_ratio_claim_na():
    """A null psi_N of 0.8: no psi_N <= 1 is 1.5x above it, so the setting cannot show the
    claim (N/A, not a FAIL by construction)."""
    null = np.full(T, 0.8)
    f = fd.above_random_walk("sgdm", [np.full(T, 0.99)] * 3, N, null_psi_window=null).finding
    assert f.verdict == "N/A" and "cannot show" in f.detail


def test_every_seed_diverged_is_na():
    f = fd.early_phase("adam", [None, None], DROPS[0], N).finding
    assert f.verdict == "N/A" and f.detail
    g = fd.sgdm_above_adam([curve(), None], [None, curve()], DROPS, N).finding
    assert g.verdict == "N/A"


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_cases_name_claims_of_the_chapter(claim_id):
    from lalr_core.chapters.ch04_directedness.claims import CLAIMS
    assert claim_id in CLAIMS
