"""Chapter 01's mechanism quantities (`ch01_lalr.mechanisms`) on constructed run results with
known answers, the gradient-free check of L-C6, and `evidence.rank_correlation` against scipy."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from lalr_core.chapters import ch01_lalr as cl
from lalr_core.chapters.ch01_lalr import mechanics
from lalr_core.chapters.ch01_lalr import mechanisms as mech
from lalr_core.core.results.evidence import Evidence, rank_correlation
from lalr_core.methods.pretrained.text.tinytf import TinyTFClassifier, TinyTFConfig


def _run(losses=None, probes=None, val_acc=None):
    """A fake run result with a layer_diagnostics record."""
    epochs = pd.DataFrame({"epoch": np.arange(len(losses)), "full_train_loss": losses}) \
        if losses is not None else pd.DataFrame()
    rec = {"layers": pd.DataFrame(), "epochs": epochs,
           "probes": probes if probes is not None else pd.DataFrame()}
    hist = pd.DataFrame({"val_acc": val_acc if val_acc is not None else [0.5]})
    return {"callbacks": {"layer_diagnostics": rec}, "history": hist, "diverged": False,
            "final": {"val_acc": float(hist["val_acc"].iloc[-1])}}


def test_one_epoch_gains_read_the_right_epoch_of_the_right_run():
    # each run's loss falls by a distinct amount per epoch: 0-based epoch e of arm a falls by
    # code[a] + e / 10, so every term can be traced to its (arm, epoch)
    code = {"U": 1.0, "svd>ce>cs": 2.0, "svd>cs>ce": 3.0, "ce>svd>cs": 4.0, "cs>svd>ce": 5.0}
    runs = {}
    for arm, c in code.items():
        drops = [c + e / 10 for e in range(6)]
        runs[arm] = [_run(100 - np.concatenate([[0], np.cumsum(drops)]))] * 2
    g = mech.one_epoch_gains(runs)
    want = {"svd": 2.0, "ce": 4.0, "cs": 5.0, "ce|svd": 2.1, "cs|svd": 3.1, "cs|svd,ce": 2.2,
            "u": 1.0, "u|u": 1.1, "u|u,u": 1.2}
    assert list(g.columns) == list(want) and len(g) == 2
    for k, v in want.items():
        assert g[k].tolist() == pytest.approx([v, v]), k


def test_interaction_margins_closed_form():
    g = pd.DataFrame([{"svd": 1.0, "ce": 0.5, "cs": 0.2, "ce|svd": 0.7, "cs|svd": 0.4,
                       "cs|svd,ce": 0.3, "u": 1.0, "u|u": 0.8, "u|u,u": 0.7}])
    raw = mech.interaction_margins(g, adjusted=False).iloc[0]
    adj = mech.interaction_margins(g).iloc[0]
    assert raw["ΔJ_CE(SVD) > ΔJ_CE"] == pytest.approx(0.2)
    assert raw["ΔJ_CS(SVD,CE) > ΔJ_CS(SVD)"] == pytest.approx(-0.1)
    assert raw["ΔJ_CS(SVD) > ΔJ_CS"] == pytest.approx(0.2)
    assert raw["sequence > isolated sum"] == pytest.approx(0.7 + 0.3 - 0.5 - 0.2)
    # the control's later epochs gain 0.2 and 0.1 less: the adjusted margins add those back
    assert adj["ΔJ_CE(SVD) > ΔJ_CE"] == pytest.approx(0.4)
    assert adj["ΔJ_CS(SVD,CE) > ΔJ_CS(SVD)"] == pytest.approx(0.0)
    assert adj["ΔJ_CS(SVD) > ΔJ_CS"] == pytest.approx(0.4)
    assert adj["sequence > isolated sum"] == pytest.approx(0.3 - (0.8 + 0.7 - 2.0))


def test_phase_slowdown_and_decreases():
    drops = [0.5, 0.3, 0.2, 0.1, 0.25, 0.05]
    res = _run(10 - np.concatenate([[0], np.cumsum(drops)]))
    assert mech.decreases(res) == pytest.approx(drops)
    s = mech.phase_slowdown([res]).iloc[0]
    assert (s["svd"], s["ce"], s["cs"]) == pytest.approx((0.4, 0.05, 0.15))
    with pytest.raises(ValueError, match="layer_diagnostics"):
        mech.decreases({"callbacks": {}})


def test_block_probes_leave_the_embedding_point_out_of_the_gap():
    rows = [(0, 0, 0.5), (0, 1, 0.6), (0, 2, 0.9), (1, 0, 0.5), (1, 1, 0.8), (1, 2, 0.85)]
    res = _run(probes=pd.DataFrame(rows, columns=["epoch", "point", "acc"]))
    t = mech.block_probes(res)
    assert t["gap"].tolist() == pytest.approx([0.3, 0.05])
    assert t["worst"].tolist() == pytest.approx([0.6, 0.8])
    assert t["gap_all"].tolist() == pytest.approx([0.4, 0.35])
    assert mech.probe_slope(res, "gap") == pytest.approx(-0.25)


def test_gap_accuracy_pairs_align_epochs():
    rows = [(e, p, a) for e, accs in enumerate([[0.5, 0.6, 0.7], [0.5, 0.6, 0.9],
                                                [0.5, 0.8, 0.85]]) for p, a in enumerate(accs)]
    res = _run(probes=pd.DataFrame(rows, columns=["epoch", "point", "acc"]),
               val_acc=[0.6, 0.7])                      # after epochs 1 and 2
    pairs = mech.gap_accuracy_pairs([res])
    # one pair: epoch 1 -> 2, gap 0.3 -> 0.05, accuracy 0.6 -> 0.7
    assert pairs.to_dict("records") == [pytest.approx({"d_gap": -0.25, "d_val_acc": 0.1})]


def test_perturbation_spread_is_the_sd_over_kinds_per_seed():
    acc = {"noise": [0.9, 0.8], "reinit_layer": [0.7, 0.8], "reinit_embeddings": [0.8, 0.8]}
    runs = {k: [_run(val_acc=[a]) for a in v] for k, v in acc.items()}
    got = mech.perturbation_spread(runs)
    assert got == pytest.approx([100 * np.std([0.9, 0.7, 0.8], ddof=1), 0.0], abs=1e-9)


def test_rank_correlation_matches_scipy_and_covers_its_estimate():
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = -0.6 * x + rng.normal(size=40)
    ev = rank_correlation(x, y, side="less")
    assert ev.estimate == pytest.approx(stats.spearmanr(x, y).statistic)
    assert ev.low < ev.estimate < ev.high and ev.n == 40 and ev.unit == "pair"
    assert ev.verdict == "PASS" and "40 pairs" in ev.text()
    # Bonett-Wright half-width on Fisher's z
    half = 1.959964 * math.sqrt((1 + ev.estimate ** 2 / 2) / 37)
    assert math.atanh(ev.high) - math.atanh(ev.estimate) == pytest.approx(half, rel=1e-5)
    flat = rank_correlation([1, 2, 3], [3, 2, 1])
    assert flat.verdict == "INCONCLUSIVE"                  # n < 4: no interval
    assert Evidence.from_record(ev.as_record()) == ev


def test_metrics_read_weights_only_and_a_control_that_reads_gradients(monkeypatch):
    torch.manual_seed(0)
    model = TinyTFClassifier(TinyTFConfig(), 2)
    got = mechanics.metrics_read_weights_only(model)
    assert got == {"layers": 15, "finite": True, "grads_untouched": True, "graph_nodes": 0}
    assert all(p.grad is None for p in model.parameters())

    class ReadsGradients:                                 # the control: what L-C6 rules out
        def __call__(self, model, layers):
            w = next(model.parameters())
            score = float((w * w).sum() + w.grad.sum())  # builds a graph, reads .grad
            return np.full(len(layers), score), {m: np.zeros(len(layers)) for m in ("svd", "ce", "cs")}

    monkeypatch.setattr(mechanics, "LALRScaler", ReadsGradients)
    bad = mechanics.metrics_read_weights_only(model)
    assert not bad["finite"] and bad["graph_nodes"] > 0


def test_vision_and_perturbed_runs_are_planned_with_their_settings():
    s = cl.CHAPTER.settings("smoke")
    v = cl.finetuning(s, cl.REC, cl.VISION, 1, "vision")
    assert (v.task.name, v.seed, v.epochs, v.n_train) == ("image_transfer", 1, s.vision_epochs,
                                                          s.vision_n_train)
    assert v.task.pretrained == cl.vision_pretraining(s) and v.method("lalr") is not None
    p = cl.finetuning(s, cl.perturbed_arm(cl.REC, "noise"), "sent", 0, "perturb")
    assert p == cl.finetuning(s, cl.REC, "sent", 0)        # the perturbation is a callback
    with pytest.raises(ValueError, match="unknown perturbation"):
        cl.perturbed_arm(cl.U, "shake")
    with pytest.raises(ValueError, match="one task"):
        cl.finetuning(s, cl.U, "sent", 0, "vision")
