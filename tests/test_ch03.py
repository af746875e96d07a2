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
from lalr_core.core.loop.train import initial_model, train
from lalr_core.methods.pretrained.proximal import ProximalPull
from lalr_core.methods.pretrained.text.tasks import finetuning_config
from lalr_core.methods.pretrained.transforms import TransformedTask


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
    assert len(table) == len(s.tasks) * len(s.lambdas) * s.t1_seeds
    for (task, lam, seed), cfg in table.items():
        assert (cfg.seed, cfg.lr, cfg.wd, cfg.optimizer) == (seed, s.lr, 0.0, "adamw")
        assert cfg.methods == ((ProximalPull(lam=lam),) if lam > 0 else ())
        assert cfg.task.transform == "lora" and cfg.task.base.dataset == task
    lin = nt.table_runs(s, linearised=True)
    assert len(lin) == len(s.tasks) * len(s.lin_lambdas) * s.t1_seeds
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


# ----------------------------------------------------------------------------- issue 25
def test_the_minimiser_of_a_linear_problem_is_kernel_ridge_regression():
    from lalr_core.methods.ntk import theory as th
    g = torch.Generator().manual_seed(3)
    A = torch.randn(5, 9, dtype=torch.float64, generator=g)
    theta0 = torch.randn(9, dtype=torch.float64, generator=g)
    y = torch.randn(5, dtype=torch.float64, generator=g)
    lin = nt.Problem(lambda th_: A @ th_, theta0, y)
    for lam in (0.1, 2.0, 40.0):
        m = nt.regularised_minimiser(lin, lam)
        krr = th.kernel_ridge(A @ A.T, y - A @ theta0, lam / 2)
        np.testing.assert_allclose(m.f, (A @ theta0 + krr.fit).numpy(), rtol=1e-9, atol=1e-10)
        assert m.grad_ratio < 1e-6 and m.iterations <= 3


def test_the_minimiser_of_the_toy_is_stationary_and_moves_less_with_a_stronger_pull():
    toy = _toy()
    dist = {}
    for lam in (0.5, 5.0):
        m = nt.regularised_minimiser(toy, lam, tol=1e-10)
        th_ = torch.as_tensor(m.theta).requires_grad_(True)
        obj = toy.loss(th_) + 0.5 * lam * ((th_ - toy.theta0) ** 2).sum()
        grad = torch.autograd.grad(obj, th_)[0]
        assert float(grad.norm()) < 1e-5 and m.grad_ratio < 1e-6
        dist[lam] = float(np.linalg.norm(m.theta - toy.theta0.numpy()))
    assert dist[5.0] < dist[0.5]
    with pytest.raises(ValueError, match="lam"):
        nt.regularised_minimiser(toy, 0.0)


def test_from_the_perturbed_start_the_selective_pull_acts_and_pulls_counts_every_step():
    toy = _toy()
    start = nt.perturbed_start(toy, 1.0)
    # at radius 1 the toy's loss has passed a ridge (it falls again away from theta_0): halved
    assert float(torch.linalg.vector_norm(start - toy.theta0)) == pytest.approx(0.5)
    # uphill: above the loss at theta_0, and still rising away from it
    assert float(toy.loss(start)) > float(toy.loss(toy.theta0))
    assert float(toy.grad(start) @ (start - toy.theta0)) > 0
    from_0 = nt.gradient_flow(toy, 10.0, 0.01, 200, mode="selective", rtol=1e-12)
    moved = nt.gradient_flow(toy, 10.0, 0.01, 200, mode="selective", rtol=1e-12, start=start,
                             log_every=7)
    assert from_0.pulls == 0                      # from theta_0 the pull never acts here
    assert moved.pulls > 0 and moved.increases == 0
    assert moved.pulls >= int(moved.pulled.sum())  # pulled: logged steps only
    assert moved.distance[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="shape"):
        nt.gradient_flow(toy, 1.0, 0.01, 3, start=torch.zeros(3, dtype=torch.float64))


def test_the_looped_jacobian_gives_the_empirical_ntk():
    from lalr_core.methods.ntk import empirical as ntk
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    X = torch.randn(6, 3)
    names = ["0.weight", "2.weight", "2.bias"]
    J = ms.looped_jacobian(net, X, names)
    K = ntk.empirical_ntk(net, X, params=names, output=ms.margin, dtype=torch.float64)
    assert J.shape == (6, 15 + 10 + 2)
    torch.testing.assert_close(J @ J.T, K, rtol=1e-10, atol=1e-12)


def test_table_t1_picks_the_best_lambda_on_validation_and_judges_it_on_test():
    import pandas as pd

    from lalr_core.chapters.ch03_ntk import findings as it
    rows = pd.DataFrame([{"lam": lam, "seed": s, "distance": 5 - lam / 100, "lin_error": 1.0,
                          "kl": 1.0, "pulls": 5,
                          "accuracy": {0.0: 80, 1.0: 90, 2.0: 85, 50.0: 70}[lam],
                          "test_accuracy": {0.0: 80, 1.0: 84 + s, 2.0: 95, 50.0: 70 + s}[lam]}
                         for lam in (0.0, 1.0, 2.0, 50.0) for s in range(3)])
    r = it.table_t1(rows, "sent")
    assert r.best_lam == 1.0 and r.strongest == 50.0          # not 2.0, the test set's best
    assert r.accuracy.evidence.estimate == pytest.approx(14.0)


needs_nlp = pytest.mark.skipif(not all(map(__import__("importlib").util.find_spec,
                                           ("transformers",))),
                               reason="the optional extra 'nlp' is not installed")


@needs_nlp
def test_the_source_setting_numbers_run_over_lora_and_head_only_on_a_tiny_model():
    from lalr_core.chapters.ch03_ntk.runs import nlp_finetuning
    s = nt.CHAPTER.settings("smoke", {"nlp_epochs": 1, "n_train": 16, "n_val": 8,
                                      "n_test": 8})
    cfg = nlp_finetuning(s, "sst2", 1.0, 0)
    res = train(cfg, callbacks=[FinalWeights()], progress=False)
    data = cfg.task.base.data()
    got = ms.nlp_numbers(cfg, res, data, ntk_n=4, sigma=0.5)
    assert got["distance"] > 0 and got["kl"] >= 0 and got["kappa"] >= 1 \
        and got["kappa_lora"] >= 1
    # oracle: the margin's Taylor remainder from the looped Jacobian over the same parameters
    start = {f"hf.{n}": t for n, t in ms.theta0(cfg).items()}
    assert any(".lora_" in n for n in start) and any("classifier" in n for n in start)
    assert all(".lora_" in n or "classifier" in n for n in start)   # not the encoder
    X, _ = ms._stacked(data, "train")
    model0 = ms.TokensAndMask(initial_model(cfg))
    model_t = ms.TokensAndMask(ms.final_model(cfg, res))
    J = ms.looped_jacobian(model0, X[:4], list(start))
    delta = torch.cat([(dict(model_t.named_parameters())[n].detach().double() - t.double())
                       .reshape(-1) for n, t in start.items()])
    m_t = ms.margin(ms.logits(model_t, X[:4]).double())
    m_0 = ms.margin(ms.logits(model0, X[:4]).double())
    from lalr_core.methods.ntk import empirical as ntk
    rem = ntk.taylor_remainder(model_t, start, X[:4]).double()
    torch.testing.assert_close(rem[:, 1] - rem[:, 0], m_t - m_0 - J @ delta, rtol=1e-4,
                               atol=1e-5)


@needs_nlp
def test_the_source_setting_offline_stops_with_an_error_naming_the_model(monkeypatch):
    import huggingface_hub.constants

    from lalr_core.chapters.ch03_ntk.runs import nlp_finetuning
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    s = nt.CHAPTER.settings("paper", {"nlp_model": "lalr-core-tests/absent-model"})
    cfg = nlp_finetuning(s, "sst2", 1.0, 0)
    with pytest.raises(OSError, match="absent-model"):
        initial_model(cfg)
