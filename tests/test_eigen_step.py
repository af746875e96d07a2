"""Algorithm 5 as an optimiser (seed 004 sec. 4.4.4, fig 4.20): `lalr_core.methods.curvature.eigen_step`.

Oracles:

* on a quadratic with a known Hessian, the optimiser's window (its estimate ``lambda_hat``, its
  vector) and step sizes equal `top_eigen`'s window and `algorithm5_step_size` called directly on
  the same gradients, and the parameters move by ``eta g``;
* with ``rule="constant"`` the optimiser equals ``torch.optim.SGD`` bit for bit (with weight
  decay, a parameter without gradient, two param groups), directly and through the shared loop;
* a ``state_dict`` round trip, into an optimiser built with another seed, continues identically
  (window, log, parameters);
* bad settings raise ``ValueError`` naming the setting.
"""

import copy
import io
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.optim import make_optimizer
from lalr_core.core.loop.train import train
from lalr_core.methods.curvature import eigen_step as es
from lalr_core.methods.curvature import top_eigen

pytestmark = pytest.mark.usefixtures("one_thread")


class Quadratic(nn.Module):
    """``L(theta) = 1/2 (theta - theta*)^T H (theta - theta*)``: the gradient is ``H r``."""

    def __init__(self, H: torch.Tensor, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        n = H.shape[0]
        self.H, self.opt = H, torch.randn(n, generator=gen, dtype=H.dtype)
        self.theta = nn.Parameter(torch.randn(n, generator=gen, dtype=H.dtype))

    def forward(self):
        r = self.theta - self.opt
        return 0.5 * r @ (self.H @ r)


def _spd(n: int = 12, seed: int = 0) -> torch.Tensor:
    H = top_eigen.random_gram(n, seed=seed) / n
    return 0.5 * (H + H.T)


@pytest.mark.parametrize("rule", top_eigen.STEP_RULES)
def test_on_a_quadratic_window_and_step_sizes_match_top_eigen(rule):
    H = _spd()
    model = Quadratic(H)
    opt = es.Algorithm5SGD(model.parameters(), lr=0.4, rule=rule, s=5, seed=3)
    ref = top_eigen.TopEigenWindow(H.shape[0], 5, seed=3, dtype=torch.float64)  # same draws
    for _ in range(17):                                      # > 3 windows: wrap-around
        opt.zero_grad()
        model().backward()
        g = model.theta.grad.detach().clone()
        assert torch.allclose(g, H @ (model.theta.detach() - model.opt), atol=1e-12)  # g = H r
        before = model.theta.detach().clone()
        opt.step()
        eta, lam = top_eigen.algorithm5_step_size(ref, g, rule, eta_max=0.4)
        log = opt.step_log().iloc[-1]
        assert log.eta == eta and log.lambda_hat == lam
        assert log.projection == top_eigen.projection_step_size(g, ref.vector, 1.0)
        assert torch.equal(opt.window.vector, ref.vector) and torch.equal(opt.window.S, ref.S)
        assert torch.equal(model.theta.detach(), torch.add(before, g, alpha=-eta))  # theta - eta g
        assert 0 <= eta <= 0.4
    if rule == "eigenvalue":                                 # the clip is min{eta', 2/lambda}
        lams = opt.step_log().lambda_hat.to_numpy()
        assert np.allclose(opt.step_log().eta, np.minimum(0.4, 2 / lams))


def test_the_first_s_steps_are_dominated_by_the_random_window():
    """Algorithm 5 as printed ("Initial random matrix for gradients"): the window starts as
    N(0, 1) columns of norm ~sqrt(p), so until the s-th gradient replaces the last of them
    lambda_hat is of order 1 + sqrt(p/s) whatever the gradients' scale, and the eigenvalue rule's steps are clipped
    below eta'; then lambda_hat falls to the gradients' scale (here ~1e-4) and eta = eta'."""
    s, p = 10, 80
    model = Quadratic(0.1 * _spd(p))
    model.theta.data = model.opt + 1e-3 * torch.randn(p, dtype=torch.float64)  # tiny g = H r
    opt = es.Algorithm5SGD(model.parameters(), lr=1.0, rule="eigenvalue", s=s, seed=0)
    for _ in range(s + 5):
        opt.zero_grad()
        model().backward()
        opt.step()
    log = opt.step_log()
    early, late = log.iloc[1: s // 2], log.iloc[s:]
    assert (early.lambda_hat > 2.0).all() and (early.eta < 1.0).all()
    assert (late.lambda_hat < 1e-2).all() and (late.eta == 1.0).all()


def test_projection_rule_stalls_on_deterministic_gradients():
    """Not in the source, a property of eq. 4.60 worth knowing: with full-batch (deterministic)
    gradients the steps shrink, the window fills with near-copies of g, v -> +-g/||g|| and
    eta = 1 - |cos(g, v)| -> 0: the run stalls (mini-batch noise keeps it moving)."""
    model = Quadratic(_spd())
    opt = es.Algorithm5SGD(model.parameters(), lr=0.4, rule="projection", s=5, seed=3)
    for _ in range(20):
        opt.zero_grad()
        model().backward()
        opt.step()
    eta = opt.step_log().eta.to_numpy()
    assert eta[:3].min() > 0.3 and eta[-3:].max() < 1e-9


def _net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))


def _data(seed=1, n=24):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 5, generator=gen), torch.randint(0, 3, (n,), generator=gen)


def _train(model, opt, steps, x, y, start=0):
    for k in range(start, start + steps):
        i = slice(4 * (k % 6), 4 * (k % 6) + 4)
        opt.zero_grad()
        F.cross_entropy(model(x[i]), y[i]).backward()
        opt.step()


def test_constant_rule_equals_torch_sgd_bit_for_bit():
    x, y = _data()
    a, b = _net(), _net()
    b.load_state_dict(a.state_dict())
    a[0].bias.requires_grad_(True)
    frozen_a, frozen_b = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))  # no grad

    def groups(m, extra):
        return [{"params": [*m[0].parameters(), extra], "lr": 0.3},
                {"params": list(m[2].parameters()), "lr": 0.05}]

    mine = es.Algorithm5SGD(groups(a, frozen_a), lr=0.1, rule="constant", s=4,
                            weight_decay=1e-2)
    ref = torch.optim.SGD(groups(b, frozen_b), lr=0.1, weight_decay=1e-2)
    _train(a, mine, 15, x, y)
    _train(b, ref, 15, x, y)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)
    assert torch.equal(frozen_a, frozen_b)
    assert (mine.step_log().eta == 0.3).all() and len(mine.step_log()) == 15
    assert np.isfinite(mine.step_log().lambda_hat).all()     # the window runs and is logged


def test_state_dict_round_trip_continues_identically():
    x, y = _data()
    model = _net()
    opt = es.Algorithm5SGD(model.parameters(), lr=1.0, rule="projection", s=4, seed=5)
    _train(model, opt, 7, x, y)                              # 7 > s: the window has wrapped
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    twin = copy.deepcopy(model)
    _train(model, opt, 6, x, y, start=7)                     # the original goes on
    buf.seek(0)
    saved = torch.load(buf, weights_only=False)
    twin.load_state_dict(saved["model"])
    twin_opt = es.Algorithm5SGD(twin.parameters(), lr=1.0, rule="projection", s=4, seed=99)
    twin_opt.load_state_dict(saved["opt"])
    _train(twin, twin_opt, 6, x, y, start=7)                 # the restored copy goes on
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.equal(p, q)
    assert torch.equal(opt.window.S, twin_opt.window.S)
    assert torch.equal(opt.window.vector, twin_opt.window.vector)
    assert opt.step_log().equals(twin_opt.step_log()) and len(opt.step_log()) == 13
    assert opt.stats == twin_opt.stats == {"steps": 13, "nonfinite_steps": 0}
    other = es.Algorithm5SGD(_net().parameters(), lr=1.0, rule="eigenvalue", s=4)
    with pytest.raises(ValueError, match="rule"):
        other.load_state_dict(saved["opt"])


def test_a_nonfinite_gradient_steps_without_poisoning_the_window():
    model = nn.Linear(3, 2)
    opt = es.Algorithm5SGD(model.parameters(), lr=0.5, rule="eigenvalue", s=3)
    S0 = opt.window.S.clone()
    model(torch.full((1, 3), float("nan"))).sum().backward()
    opt.step()
    assert torch.equal(opt.window.S, S0) and opt.stats["nonfinite_steps"] == 1
    assert math.isnan(opt.step_log().eta.iloc[0])


@pytest.mark.parametrize("kwargs, name", [
    ({"rule": "hessian"}, "rule"), ({"s": 0}, "s"), ({"s": 2.5}, "s"), ({"s": True}, "s"),
    ({"lr": 0.0}, "lr"), ({"lr": float("nan")}, "lr"), ({"weight_decay": -1e-3}, "weight_decay"),
    ({"seed": 1.5}, "seed"),
])
def test_bad_settings_raise_naming_the_setting(kwargs, name):
    with pytest.raises(ValueError, match=name):
        es.Algorithm5SGD(nn.Linear(2, 2).parameters(), **{"lr": 1.0, **kwargs})


def test_registered_optimiser_and_callback_through_the_shared_loop():
    tiny = {"dataset": "fashion_mnist", "synthetic": True, "n_train": 48, "n_val": 0,
            "n_test": 16, "model": "mlp", "width": 0.25, "epochs": 2, "batch_size": 16,
            "lr": 0.05, "wd": 1e-3, "seed": 2, "device": "cpu", "eval_batch_size": 32}
    with pytest.raises(ValueError, match="eta_max"):
        RunConfig(**tiny, optimizer="alg5_sgd", optimizer_params={"eta_max": 1.0})
    bad = RunConfig(**tiny, optimizer="alg5_sgd", optimizer_params={"rule": "newton"})
    with pytest.raises(ValueError, match="rule"):
        make_optimizer(bad, nn.Linear(2, 2))
    const = RunConfig(**tiny, optimizer="alg5_sgd",
                      optimizer_params={"rule": "constant", "s": 4})
    sgd = RunConfig(**tiny, optimizer="sgd")
    out_c = train(const, callbacks=[es.StepSizeLog()], progress=False)
    out_s = train(sgd, progress=False)
    # same seed, same init and batch order (the window's draws use their own generator)
    assert out_c["history"][["train_loss", "test_loss"]].equals(
        out_s["history"][["train_loss", "test_loss"]])
    log = out_c["callbacks"]["alg5_log"]
    assert list(log.columns) == list(es.LOG_COLUMNS) and len(log) == 6  # 48 / 16 x 2 epochs
    assert (log.eta == 0.05).all() and out_c["optimizer_stats"]["steps"] == 6
    proj = RunConfig(**tiny, optimizer="alg5_sgd", optimizer_params={"rule": "projection",
                                                                      "s": 4})
    log_p = train(proj, callbacks=[es.StepSizeLog()], progress=False)["callbacks"]["alg5_log"]
    assert ((log_p.eta > 0) & (log_p.eta <= 0.05)).all()
    with pytest.raises(ValueError, match="alg5_sgd"):
        train(sgd, callbacks=[es.StepSizeLog()], progress=False)
