"""Chapter 03: settings, run plan, the full-batch flows of the theorems and the per-run numbers
(oracles: closed forms, explicit small computations)."""

import math

import numpy as np
import pytest
import torch

from lalr_core.chapters import ch01_lalr, chapter_settings
from lalr_core.chapters import ch03_ntk as nt
from lalr_core.chapters.ch03_ntk import measures as ms
from lalr_core.core.loop.callbacks import FinalWeights
from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.pretrained.text.tasks import finetuning_config
from lalr_core.core.loop.train import initial_model, train
from lalr_core.methods.pretrained.transforms import TransformedTask
from lalr_core.methods.pretrained.proximal import ProximalPull


@pytest.mark.parametrize("bad, name", [
    ({"tasks": ("sent", "sentt")}, "tasks"), ({"lambdas": (1.0,)}, "lambdas"),
    ({"lambdas": (1.0, -1.0)}, "lambdas"), ({"lin_lambdas": (7.0, 0.0)}, "lin_lambdas"),
    ({"ntk_n": 10_000}, "ntk_n"), ({"sigma": 0}, "sigma"), ({"nngp_widths": (64,)}, "nngp_widths"),
    ({"fig_lambda": -1.0}, "fig_lambda"), ({"epochs": 0}, "epochs"), ({"lr": 0}, "lr"),
])
def test_bad_settings_stop_before_any_compute_naming_the_setting(bad, name):
    with pytest.raises(ValueError, match=name):
        chapter_settings("03", "smoke", bad)


@pytest.mark.parametrize("profile", ["smoke", "quick", "paper"])
def test_the_pretraining_is_chapter_01s_cached_unit_and_runs_are_planned(profile):
    s = nt.CHAPTER.settings(profile)
    assert nt.pretraining(s) == ch01_lalr.pretraining(ch01_lalr.CHAPTER.settings(profile))
    table = nt.table_runs(s)
    assert len(table) == len(s.tasks) * len(s.lambdas) * s.seeds
    for (task, lam, seed), cfg in table.items():
        assert (cfg.seed, cfg.lr, cfg.wd, cfg.optimizer) == (seed, s.lr, 0.0, "adamw")
        assert cfg.methods == ((ProximalPull(lam=lam),) if lam > 0 else ())
        assert cfg.task.transform == "lora" and cfg.task.base.dataset == task
    lin = nt.table_runs(s, linearised=True)
    assert all(c.task.transform == "linearise" and c.task.base == table[k].task
               for k, c in lin.items())
    assert len(nt.figure_runs(s)) == (len(s.fig_tasks) + len(nt.LORA_CONFIGS) - 1) * s.seeds
    cfgs, _ = nt.CHAPTER.all_runs(s)
    assert len(cfgs) == len({*table.values(), *lin.values(), *nt.figure_runs(s).values(),
                             *nt.selection_runs(s).values(), *nt.nlp_runs(s).values()})
    assert bool(nt.nlp_runs(s)) == bool(s.nlp_model)


# ----------------------------------------------------------------------------- the flows
def _toy():
    x = torch.linspace(-2, 2, 8, dtype=torch.float64)
    return nt.toy_problem(x, 1.2 * torch.tanh(1.5 * x), (0.5, 0.5))


def test_plain_gradient_descent_matches_a_hand_loop():
    toy, lr = _toy(), 0.01
    flow = nt.gradient_flow(toy, 0.0, lr, 20, mode="none")
    theta = toy.theta0.clone()
    for _ in range(20):
        th = theta.clone().requires_grad_(True)
        theta = theta - lr * torch.autograd.grad(((th[1] * torch.tanh(th[0] * toy_x()) - toy.y) ** 2)
                                                 .sum(), th)[0]
    np.testing.assert_allclose(flow.thetas[-1], theta.numpy(), rtol=1e-12)
    assert flow.t[-1] == pytest.approx(20 * lr) and flow.distance[0] == 0.0


def toy_x():
    return torch.linspace(-2, 2, 8, dtype=torch.float64)


def test_the_selective_pull_never_raises_the_loss_and_the_pull_shrinks_the_distance():
    toy = _toy()
    flows = {lam: nt.gradient_flow(toy, lam, 0.01, 300, mode="selective", rtol=1e-12)
             for lam in (1.0, 10.0)}
    plain = nt.gradient_flow(toy, 0.0, 0.01, 300, mode="none", rtol=1e-12)
    assert all(f.increases == 0 for f in flows.values()) and plain.increases == 0
    # the selective pull acts only where moving away from theta_0 would raise the loss, so it
    # never ends farther than plain GD; the always-on pull shrinks the distance with lambda
    assert plain.distance[-1] >= flows[1.0].distance[-1] >= flows[10.0].distance[-1]
    always = {lam: nt.gradient_flow(toy, lam, 0.01, 300, mode="always") for lam in (1.0, 10.0)}
    assert all(f.pulled[1:].all() for f in always.values())   # [0]: the start, no step
    assert plain.distance[-1] > always[1.0].distance[-1] > always[10.0].distance[-1]


def test_the_linearised_problem_is_exact_for_a_linear_model_and_tangent_at_theta0():
    A = torch.randn(5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    lin = nt.Problem(lambda th: A @ th, torch.ones(3, dtype=torch.float64),
                     torch.zeros(5, dtype=torch.float64))
    theta = torch.tensor([0.3, -2.0, 1.0], dtype=torch.float64)
    assert torch.allclose(lin.linearised().f(theta), A @ theta)
    toy = _toy()
    tl, eps = toy.linearised(), torch.tensor([1e-4, -2e-4], dtype=torch.float64)
    assert torch.allclose(tl.f(toy.theta0), toy.f(toy.theta0))
    gap = (toy.f(toy.theta0 + eps) - tl.f(toy.theta0 + eps)).abs().max()
    assert gap < 1e-6                                             # second order in eps


def test_lipschitz_estimate_is_the_jacobian_norm_on_a_linear_model():
    A = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    prob = nt.Problem(lambda th: A @ th, torch.zeros(6, dtype=torch.float64),
                      torch.ones(4, dtype=torch.float64))
    lip_f, lip_g = nt.lipschitz_estimates(prob, np.random.default_rng(0).standard_normal((3, 6)))
    assert lip_f == pytest.approx(float(torch.linalg.matrix_norm(A, 2))) and lip_g == 0.0


def test_stable_lr_is_half_over_2_lambda_max_plus_lambda_or_the_default():
    toy = _toy()
    J0 = toy.jacobian(toy.theta0)
    lam_max = float(torch.linalg.eigvalsh(J0 @ J0.T)[-1])
    assert nt.stable_lr(toy, 10.0, default=1.0) == pytest.approx(0.5 / (2 * lam_max + 10.0))
    assert nt.stable_lr(toy, 10.0, default=1e-9) == 1e-9


def test_flow_mode_is_checked():
    with pytest.raises(ValueError, match="mode"):
        nt.gradient_flow(_toy(), 1.0, 0.01, 5, mode="sometimes")


# ----------------------------------------------------------------------------- per-run numbers
def test_table_numbers_of_a_tiny_run():
    pre = RunConfig(**{**ch01_lalr.pretraining(ch01_lalr.CHAPTER.settings("smoke")).key(),
                       "epochs": 1})
    cfg = finetuning_config("sent", pretrained=pre, epochs=1, lr=1e-2, wd=0.0, n_train=32,
                            n_val=16, n_test=16)
    task = TransformedTask(base=cfg.task, transform="lora", options={
        "targets": ("encoder.blocks.*.q_proj",), "rank": 2, "alpha": 4.0, "train": ("head",)})
    cfg = cfg.replace(task=task, methods=(ProximalPull(lam=1.0),))
    res = train(cfg, callbacks=[FinalWeights()], progress=False)
    data = cfg.task.base.data()
    got = ms.table_numbers(cfg, res, data)
    model, start = ms.final_model(cfg, res), ms.theta0(cfg)
    moved = dict(model.named_parameters())
    assert got["distance"] == pytest.approx(math.sqrt(sum(float(((moved[n] - t) ** 2).sum())
                                                          for n, t in start.items())))
    assert got["distance"] > 0 and got["kl"] >= 0 and got["lin_error"] >= 0
    assert got["accuracy"] == pytest.approx(100 * res["final"]["val_acc"])
    # the initial weights are at distance 0
    assert ms.distance(cfg, {"callbacks": {"weights": initial_model(cfg).state_dict()}}) == 0.0
    K = ms.ntk_at_init(cfg, data.split("train")[0][:6])
    assert K.shape == (6, 6) and torch.allclose(K, K.T)
