"""Chapter 01's settings and run builders (lalr_core.chapters.ch01_lalr): bad values stop
before any compute, every arm is the config it claims to be, U-match's lr is base_lr times the
mean scale LALR applied (oracle: the mean of hand-written tables), and the registered LARS /
LAMB take the papers' steps (oracles: the closed-form first step of each)."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import pytorch_optimizer
import torch
from torch import nn

from lalr_core.chapters import ch01_lalr as cl
from lalr_core.core.loop.config import OPTIMIZERS, RunConfig
from lalr_core.methods.layer_lr.lalr import LALR
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance

SMOKE = cl.CHAPTER.settings("smoke")


# ----------------------------------------------------------------------------- settings
def test_every_profile_constructs_and_quick_is_the_stated_protocol():
    for profile in ("smoke", "quick", "paper"):
        assert isinstance(cl.CHAPTER.settings(profile), cl.Settings)
    q = cl.CHAPTER.settings("quick")
    assert (q.mlm_epochs, q.n_train, q.epochs, q.base_lr, q.batch_size) == (15, 500, 6, 1e-3, 32)
    assert q.seeds >= 5 and q.order_seeds >= 5 and q.tasks == ("sent", "acc")
    assert (q.small_n_train, q.small_epochs) == (200, 12)
    assert cl.CHAPTER.settings("paper").n_train == 1000          # P-LALR's planned size


@pytest.mark.parametrize("overrides, match", [
    ({"base_lr": 0}, "base_lr"), ({"epochs": 0}, "epochs"), ({"epochs": "3"}, "epochs"),
    ({"epochs": 3}, "epochs"), ({"base_lr": "fast"}, "base_lr"), ({"vision_pretrain": "mnist9"}, "vision_pretrain"),
    ({"vision_model": "resnet9000"}, "vision_model"), ({"probe_blocks": 1}, "probe_blocks"),
    ({"overhead_sizes": (0,)}, "overhead_sizes"), ({"e14_steps": 10}, "e14_steps"),
    ({"vision_epochs": 3}, "vision_epochs"), ({"perturb_seeds": 1}, "perturb_seeds"),
    ({"tasks": ["acc"]}, "tasks"), ({"tasks": ["sent", "imdb"]}, "tasks"),
    ({"tasks": ["sent", "sent"]}, "tasks"), ({"seeds": 1}, "seeds"), ({"order_seeds": 0}, "order_seeds"),
    ({"lars_momentum": 1.0}, "lars_momentum"), ({"tb_scheme": "nope"}, "tb_scheme"),
    ({"wd": -0.1}, "wd"), ({"workers": 0}, "workers"), ({"lamb_lr": float("nan")}, "lamb_lr"),
    ({"stability_pp": 0}, "stability_pp"), ({"synthetic": "yes"}, "synthetic"),
])
def test_bad_values_raise_before_any_compute(overrides, match):
    with pytest.raises(ValueError, match=match):
        cl.CHAPTER.settings("quick", overrides)


def test_unknown_override_names_the_known_settings():
    with pytest.raises(ValueError, match="unknown setting 'lr'.*base_lr"):
        cl.CHAPTER.settings("smoke", {"lr": 1e-3})
    with pytest.raises(ValueError, match="unknown profile"):
        cl.CHAPTER.settings("fast")


# ----------------------------------------------------------------------------- arms
def test_each_arm_is_its_config():
    s = SMOKE
    u = cl.finetuning(s, cl.U, "sent", 3)
    assert (u.optimizer, u.lr, u.wd, u.batch_size, u.seed, u.methods) == ("adamw", 1e-3, 0.01, 32, 3, ())
    assert (u.epochs, u.task.n_train, u.task.dataset, u.task.lexicon) == (s.epochs, s.n_train, "sent", "all")
    assert u.task.pretrained == cl.pretraining(s)
    assert cl.finetuning(s, cl.REC, "acc", 0).methods == (LALR(),)
    assert cl.finetuning(s, cl.AW, "acc", 0).methods == (LALR.as_written(),)
    assert cl.finetuning(s, cl.ONCE, "acc", 0).method("lalr").recompute == "once"
    assert cl.finetuning(s, cl.TEXT20, "acc", 0).method("lalr").cs_direction == "text20"
    assert cl.finetuning(s, cl.PARAM_AW, "acc", 0).method("lalr") == LALR(grouping="named_param_AW")
    lars = cl.finetuning(s, cl.LARS, "sent", 0)
    assert (lars.optimizer, lars.lr, lars.momentum, dict(lars.optimizer_params)) == \
        ("lars_po", s.lars_lr, s.lars_momentum, {"eta": s.lars_eta})
    lamb = cl.finetuning(s, cl.LAMB, "sent", 0)
    assert (lamb.optimizer, lamb.lr) == ("lamb", s.lamb_lr)
    assert cl.finetuning(s, cl.TB, "sent", 0).methods == (TempBalance(s.tb_scheme),)
    assert cl.finetuning(s, "cs>svd>ce", "sent", 0).method("lalr").order == ("cs", "svd", "ce")
    assert cl.finetuning(s, "ce-only", "sent", 0).method("lalr").order == ("ce",)
    assert cl.finetuning(s, cl.ORDERS[0], "sent", 0) == cl.finetuning(s, cl.REC, "sent", 0)
    assert cl.finetuning(s, cl.UMATCH, "sent", 0, umatch_lr=4e-4).lr == 4e-4
    small = cl.finetuning(s, cl.U, "sent", 0, "small")
    assert (small.task.n_train, small.epochs) == (s.small_n_train, s.small_epochs)
    assert cl.finetuning(s, cl.U, "sent", 0, "shift").task.lexicon == "shift"
    for bad, match in ((dict(arm="SGD"), "unknown arm"), (dict(arm=cl.UMATCH), "U-match"),
                       (dict(setting="tiny"), "setting"), (dict(setting="small", task="acc"), "SENT")):
        with pytest.raises(ValueError, match=match):
            cl.finetuning(s, **{"arm": cl.U, "task": "sent", "seed": 0, **bad})


def test_plan_sections_and_the_one_callbacks_rule():
    s = SMOKE
    plan = cl.planned_runs(s)
    n_tasks = len(s.tasks)
    per = {sec: sum(r.section == sec for r in plan) for sec in
           ("X-L2", "X-L5", "X-L16", "X-L4", "X-L15", "X-L10", "X-L14", "vision")}
    assert per == {"X-L2": 6 * n_tasks * s.seeds, "X-L5": 9 * n_tasks * s.order_seeds,
                   "X-L16": 3 * n_tasks * s.seeds, "X-L4": 2 * s.seeds, "X-L15": 2 * s.seeds,
                   "X-L10": 2 * s.probe_seeds, "X-L14": 2 * 3 * s.perturb_seeds,
                   "vision": 2 * s.vision_seeds}
    cfgs, cbs = cl.CHAPTER.all_runs(s)
    units = {(r.config, json.dumps(cl.callbacks_for(s, r), sort_keys=True)) for r in plan}
    assert len(cfgs) == len(units)                 # svd>ce>cs == LALR-REC, trained once
    assert len(units) == len(plan) - n_tasks * s.order_seeds
    for run in plan:
        cb = cl.callbacks_for(s, run)
        task = run.config.task.key()
        want = {}
        if run.setting == "vision":
            want = {"transfer_splits": {"task": task}}
        elif run.setting == "perturb":
            want = {"perturb": {"kind": run.arm.split("/")[1], "seed": run.seed}}
        elif run.setting == "probe":
            want = {"layer_diagnostics": {"task": task, "probes": True}}
        else:
            if run.setting in ("main", "small") and run.arm in (*cl.PROBED, cl.ORDERS[0]):
                splits = ["mlm", {"sent": "test_noise", "acc": "test_deep"}[run.task]] \
                    if run.setting == "main" else ["train", "mlm"]
                want["text_splits"] = {"task": task, "splits": splits}
            if run.setting == "main" and run.arm in cl.DIAGNOSED:
                want["layer_diagnostics"] = {"task": task}
        assert cb == want, (run.setting, run.arm)
    secs = cl.section_runs(s)
    assert sum(len(c) for c, _ in secs.values()) == len(plan)


def test_pretrainings_are_trained_first_and_shared():
    s = SMOKE
    pres = cl.pretrainings(s)
    assert pres[0] == cl.pretraining(s) and cl.vision_pretraining(s) in pres
    assert len(pres) == 2                          # smoke: the probe model has the default 2 blocks
    q = cl.CHAPTER.settings("quick")
    assert [p.task.n_blocks for p in cl.pretrainings(q)[:2]] == [2, q.probe_blocks]
    probe = cl.finetuning(q, cl.U, "sent", 0, "probe")
    assert probe.task.n_blocks == q.probe_blocks
    imagenet = cl.CHAPTER.settings("quick", {"vision_pretrain": "imagenet"})
    assert len(cl.pretrainings(imagenet)) == 2 and imagenet.datasets == ("cifar10",)
    assert cl.CHAPTER.settings("paper").datasets == ("cifar100", "cifar10")
    assert s.datasets == ()                        # synthetic


# ----------------------------------------------------------------------------- U-match
def _table(scales_by_epoch, layers=("a", "b", "c")):
    return pd.DataFrame([(e, layer, s) for e, row in enumerate(scales_by_epoch)
                         for layer, s in zip(layers, row)], columns=["epoch", "layer", "lr_scale"])


def test_umatch_lr_is_base_lr_times_the_mean_scale_of_the_used_rows():
    s = SMOKE
    assert s.epochs == 6
    # two seeds; rows of epoch 6 (fitted after the last epoch, never used) must not count
    t0 = _table([[0.0, 0.5, 1.0], [1.0, 1.0, 0.0], [0.2, 0.4, 0.6], [0.0, 0.0, 0.3],
                 [0.3, 0.3, 0.3], [0.6, 0.0, 0.0], [9, 9, 9]])
    t1 = _table([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [0.1, 0.2, 0.3],
                 [0.2, 0.2, 0.2], [1.0, 0.0, 1.0], [9, 9, 9]])
    oracle = (1.5 + 2.0 + 1.2 + 0.3 + 0.9 + 0.6 + 3.0 + 0.0 + 1.5 + 0.6 + 0.6 + 2.0) / 36
    assert cl.mean_lr_scale([t0, t1], 6) == pytest.approx(oracle)
    fake = {("main", cl.REC, "sent"): [{"callbacks": {"lalr": t0}}, {"callbacks": {"lalr": t1}}],
            ("main", cl.U, "sent"): [{}, {}]}
    lrs = cl.umatch_lrs(s, fake)
    assert lrs == {("main", "sent"): pytest.approx(s.base_lr * oracle)}
    runs = cl.umatch_runs(s, lrs)
    assert [(r.arm, r.seed, r.section) for r in runs] == [(cl.UMATCH, k, "X-L2") for k in range(s.seeds)]
    assert all(r.config == cl.finetuning(s, cl.U, "sent", r.seed).__class__(
        **{**cl.finetuning(s, cl.U, "sent", r.seed).key(), "lr": s.base_lr * oracle}) for r in runs)
    with pytest.raises(ValueError, match="no callback rows"):
        cl.mean_lr_scale([t0], 0)


def test_by_arm_orders_by_seed_and_needs_every_result():
    s = SMOKE
    plan = [r for r in cl.planned_runs(s) if r.section == "X-L4"]
    cfgs = [r.config for r in plan][::-1]
    cbs = [cl.callbacks_for(s, r) for r in plan][::-1]
    results = [{"id": c.seed} for c in cfgs]
    got = cl.by_arm(s, plan, cfgs, cbs, results)
    assert [r["id"] for r in got[("small", cl.REC, "sent")]] == list(range(s.seeds))
    with pytest.raises(ValueError, match="no result"):
        cl.by_arm(s, plan, cfgs[1:], cbs[1:], results[1:])


def test_by_arm_tells_apart_runs_that_differ_only_in_callbacks():
    # X-L14's perturbed runs have U's config; the perturbation is a callback
    s = SMOKE
    plan = [r for r in cl.planned_runs(s) if r.setting in ("main", "perturb") and r.task == "sent"
            and r.arm.split("/")[0] == cl.U]
    cfgs, cbs = [r.config for r in plan], [cl.callbacks_for(s, r) for r in plan]
    assert len(set(cfgs)) < len(plan)                       # shared configs ...
    got = cl.by_arm(s, plan, cfgs, cbs, [{"arm": r.arm} for r in plan])
    assert {k[1]: {r["arm"] for r in v} for k, v in got.items()} == {k[1]: {k[1]} for k in got}


# ----------------------------------------------------------------------------- baselines
def _model_and_step(name, cfg, seed=0):
    torch.manual_seed(seed)
    lin = nn.Linear(4, 3)
    opt = OPTIMIZERS[name](lin.parameters(), cfg, **dict(cfg.optimizer_params))
    w0, b0 = lin.weight.detach().clone(), lin.bias.detach().clone()
    lin(torch.randn(8, 4)).pow(2).sum().backward()
    g, gb = lin.weight.grad.clone(), lin.bias.grad.clone()
    opt.step()
    return opt, w0, b0, g, gb, lin


def test_lars_first_step_is_the_papers_rule():
    cfg = RunConfig(optimizer="lars_po", lr=0.1, momentum=0.9, wd=0.01, optimizer_params=(("eta", 0.03),))
    opt, w0, b0, g, gb, lin = _model_and_step("lars_po", cfg)
    assert isinstance(opt, pytorch_optimizer.LARS)
    # You et al. (2017): local lr = eta ||w|| / (||g|| + wd ||w||); first momentum step = the step
    trust = 0.03 * w0.norm() / (g.norm() + 0.01 * w0.norm())
    assert torch.allclose(lin.weight.detach(), w0 - 0.1 * trust * (g + 0.01 * w0), atol=1e-7)
    assert torch.allclose(lin.bias.detach(), b0 - 0.1 * gb, atol=1e-7)   # 1-D: plain SGD step
    with pytest.raises(ValueError, match="eta"):
        OPTIMIZERS["lars_po"](nn.Linear(2, 2).parameters(), cfg, eta=0.0)
    with pytest.raises(ValueError, match="per-layer"):
        OPTIMIZERS["lars_po"]([{"params": list(nn.Linear(2, 2).parameters())}], cfg)


def test_lamb_first_step_is_the_papers_rule():
    # wd = 0: LAMB's trust ratio ||w|| / ||r|| makes each tensor's step exactly lr * ||w||
    cfg = RunConfig(optimizer="lamb", lr=3e-3, wd=0.0)
    opt, w0, b0, g, gb, lin = _model_and_step("lamb", cfg)
    assert isinstance(opt, pytorch_optimizer.Lamb)
    assert float((lin.weight.detach() - w0).norm() / w0.norm()) == pytest.approx(3e-3, rel=1e-5)
    # wd > 0 (Algorithm 2): x - lr ||x|| (r + wd x) / ||r + wd x||, r = m / (sqrt(v) + eps) of
    # the package's moments after one step (m = (1 - b1) g, v = (1 - b2) g^2)
    cfg = RunConfig(optimizer="lamb", lr=3e-3, wd=0.5)
    opt, w0, b0, g, gb, lin = _model_and_step("lamb", cfg)
    r = 0.1 * g / ((1e-3 * g * g).sqrt() + 1e-6) + 0.5 * w0
    want = w0 - 3e-3 * w0.norm() * r / (r.norm() + 1e-6)
    assert torch.allclose(lin.weight.detach(), want, atol=1e-7)
