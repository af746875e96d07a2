"""Chapter 05's settings, run plan and per-run numbers (closed forms on constructed results)."""

import math

import numpy as np
import pandas as pd
import pytest

from lalr_core.chapters import ch05_quasi_newton as qn
from lalr_core.chapters import chapter_settings
from lalr_core.core.loop.config import OPTIMIZERS


@pytest.mark.parametrize("bad, name", [
    ({"dataset": "digitz"}, "dataset"), ({"model": "resnet9000"}, "model"),
    ({"seeds": 1}, "seeds"), ({"table_lrs": (0.01, 0.1)}, "table_lrs"),
    ({"table_lrs": (0.1,)}, "table_lrs"), ({"gamma": 1.0}, "gamma"),
    ({"known_size": 2}, "known_size"), ({"cumulant_samples": 10}, "cumulant_samples"),
    ({"rolling_samples": (100,)}, "rolling_samples"), ({"fig46_wd": -1.0}, "fig46_wd"),
    ({"hessian_examples": 0}, "hessian_examples"), ({"fig46_lr": 0}, "fig46_lr"),
])
def test_bad_settings_stop_before_any_compute_naming_the_setting(bad, name):
    with pytest.raises(ValueError, match=name):
        chapter_settings("05", "smoke", bad)


def test_every_profile_plans_paired_runs():
    for profile in ("smoke", "quick", "paper"):
        s = qn.CHAPTER.settings(profile)
        f46 = qn.fig46_runs(s)
        assert len(f46) == 2 * s.seeds
        for seed in range(s.seeds):                     # pairs differ in the optimiser only
            a, b = f46[("sgd", seed)], f46[(qn.QN, seed)]
            assert (a.seed, a.lr, a.wd, a.momentum, b.momentum) == (seed, s.fig46_lr, s.fig46_wd, 0.0, 0.0)
            assert b.optimizer_params == (("gamma", s.gamma),) and a.optimizer_params == ()
        tab = qn.table_runs(s)
        assert len(tab) == 2 * len(s.table_lrs) * s.seeds
        assert all(c.momentum == (s.table_momentum if arm == "sgdm" else 0.0) and c.wd == 0.0
                   for (arm, lr, seed), c in tab.items())
        cfgs, cbs = qn.CHAPTER.all_runs(s)
        assert len(cfgs) == len({*f46.values(), *qn.fig46_runs(s, s.diverge_lr).values(), *tab.values(),
                                qn.hessian_run(s), *qn.fig410_runs(s).values(),
                                *qn.fig410_runs(s, s.bs_source_lr).values(), *qn.fig420_runs(s).values(),
                                *qn.phi_runs(s).values(), *qn.cohesion_runs(s).values()})
        assert cbs[cfgs.index(qn.hessian_run(s))] == qn.probe_runs(s)["subspace"][1]
        assert "weights" in qn.probe_runs(s)["subspace"][1]
    assert qn.QN in OPTIMIZERS.names()


def _result(losses, acc=0.9, diverged=False):
    hist = pd.DataFrame({"test_loss": losses, "test_acc": [acc] * len(losses)})
    return {"history": hist, "diverged": diverged,
            "final": {"test_loss": losses[-1], "test_acc": acc}}


def test_per_run_numbers():
    r = _result([2.0, 1.0, 1.5, 0.5])
    assert qn.final_loss(r) == 0.5 and qn.final_accuracy(r) == pytest.approx(90.0)
    assert qn.volatility(r) == pytest.approx(np.std([-1.0, 0.5, -1.0], ddof=1))
    assert not qn.diverged(r)
    assert qn.diverged(_result([2.0, 2.5]))                      # above ln 10? no: 2.5 > ln 10
    assert qn.diverged(_result([1.0], diverged=True)) and qn.final_accuracy(
        _result([1.0], diverged=True)) == 10.0
    assert math.isnan(qn.final_loss(_result([1.0], diverged=True)))
    assert qn.per_seed([r, r], qn.final_loss).tolist() == [0.5, 0.5]


# ----------------------------------------------------------------------------- figs 4.10 / 4.20
@pytest.mark.parametrize("bad, name", [
    ({"bs_batch_sizes": (337, 1347)}, "bs_batch_sizes"), ({"bs_batch_sizes": (337, 90)}, "bs_batch_sizes"),
    ({"bs_batch_sizes": (1347,)}, "bs_batch_sizes"), ({"bs_dataset": "mnistt"}, "bs_dataset"),
    ({"alg5_model": "resnet2000"}, "alg5_model"), ({"alg5_sgd_lr": 1.0}, "alg5_sgd_lr"),
    ({"bs_seeds": 1}, "bs_seeds"), ({"alg5_sample": 0}, "alg5_sample"), ({"bs_steps": 0}, "bs_steps"),
    ({"alg5_n_train": 0}, "alg5_n_train"),
])
def test_bad_new_settings_name_the_setting(bad, name):
    with pytest.raises(ValueError, match=name):
        chapter_settings("05", "quick", bad)


def test_fig410_and_fig420_plans():
    for profile in ("smoke", "quick", "paper"):
        s = qn.CHAPTER.settings(profile)
        f410 = qn.fig410_runs(s)
        assert len(f410) == 2 * len(s.bs_batch_sizes) * s.bs_seeds
        n = qn.fig410_train_size(s)
        for (arm, bs, seed), c in f410.items():
            steps = c.epochs * math.ceil(n / bs)
            assert s.bs_steps <= steps < s.bs_steps + math.ceil(n / bs)   # comparable step counts
            assert (c.lr, c.momentum, c.wd, c.seed) == (s.bs_lr, 0.0, 0.0, seed)
            twin = f410[("sgd" if arm == qn.QN else qn.QN, bs, seed)]    # pairs differ in the optimiser
            assert (twin.epochs, twin.batch_size, twin.model) == (c.epochs, c.batch_size, c.model)
        assert f410[("sgd", s.bs_batch_sizes[0], 0)].batch_size >= n
        f420 = qn.fig420_runs(s)
        assert len(f420) == 4 * s.alg5_seeds
        assert {(a, lr) for a, lr, _ in f420} == {("sgd", s.alg5_eta_max), ("sgd", s.alg5_sgd_lr),
                                                 ("eigenvalue", s.alg5_eta_max), ("projection", s.alg5_eta_max)}
        for (arm, lr, seed), c in f420.items():
            assert c.optimizer == ("sgd" if arm == "sgd" else qn.ALG5)
            if arm != "sgd":
                assert dict(c.optimizer_params) == {"rule": arm, "s": s.alg5_sample}
        secs = qn.section_runs(s)
        cbs = dict(zip(secs["fig4.20"][0], secs["fig4.20"][1]))
        assert all((cb == {"alg5_log": {}}) == (c.optimizer == qn.ALG5) for c, cb in cbs.items())
    quick = qn.CHAPTER.settings("quick")
    assert quick.bs_batch_sizes[0] == 1347 and qn.fig420_runs(quick)[("sgd", 1.0, 0)].n_train == 1344


def test_crossover_and_loss_after_steps():
    assert qn.crossover_epoch([3, 2, 1, 0.5], [2, 1.5, 1.2, 0.9]) == 3
    assert qn.crossover_epoch([1, 1], [2, 2]) == 1
    assert qn.crossover_epoch([1, 3], [2, 2]) is None
    assert qn.crossover_epoch([3, 1, 3, 1], [2, 2, 2, 2]) == 4
    hist = pd.DataFrame({"step": [4, 8, 12], "test_loss": [2.0, 1.0, 0.5]})
    r = {"history": hist}
    assert qn.loss_after_steps(r, 1) == 2.0 and qn.loss_after_steps(r, 5) == 1.0
    assert qn.loss_after_steps(r, 99) == 0.5
