"""The pull toward theta_0 (`lalr_core.methods.pretrained.proximal`; the slides' split step and selective pull):
against a twin optimiser that gives theta~ exactly, the wrapped step is theta~ when
c = g . (theta~ - theta_0) < 0 and theta_0 + (1 - lr lambda)(theta~ - theta_0) when c >= 0,
with SGD and AdamW; lambda = 0 is the inner optimiser bit for bit; theta_0 survives a
state-dict round trip; the full-batch step against hand-computed cases; the errors."""

import copy

import pytest
import torch
from torch import nn

from lalr_core.core.loop.config import METHODS, RunConfig
from lalr_core.methods.pretrained.proximal import (
    ProximalPull,
    ProximalPullOptimizer,
    proximal_gd_step,
)

OPTIMISERS = {
    "sgdm": lambda ps: torch.optim.SGD(ps, lr=0.3, momentum=0.9),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.01),
}


def _problem(seed=0):
    """A float64 least-squares model (weight, bias, a frozen scale) and 20 minibatches."""
    g = torch.Generator().manual_seed(seed)
    w = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)
    X = torch.randn(20, 8, 4, generator=g, dtype=torch.float64)
    y = X @ w + 0.5 * torch.randn(20, 8, generator=g, dtype=torch.float64)
    torch.manual_seed(seed)
    model = nn.Linear(4, 1).double()
    with torch.no_grad():  # near the optimum: minibatch noise gives c of both signs
        model.weight.copy_(w + 0.3 * torch.randn(1, 4, generator=g))
    model.frozen = nn.Parameter(torch.ones(3, dtype=torch.float64), requires_grad=False)
    return model, list(zip(X, y))


def _grads(model, Xb, yb):
    model.zero_grad(set_to_none=True)
    ((model(Xb).squeeze(1) - yb) ** 2).mean().backward()


def _twin_of(model, make):
    twin = nn.Linear(4, 1).double()
    twin.load_state_dict(model.state_dict(), strict=False)
    return twin, make(list(twin.parameters()))


@pytest.mark.parametrize("opt", sorted(OPTIMISERS))
def test_selective_step_is_theta_tilde_or_the_pull_as_c_says(opt):
    model, batches = _problem()
    params = [model.weight, model.bias]
    wrapped = ProximalPullOptimizer(OPTIMISERS[opt](list(model.parameters())), lam=2.0)
    twin, twin_opt = _twin_of(model, OPTIMISERS[opt])  # same state: gives theta~ exactly
    theta0 = [p.detach().clone() for p in params]
    k = wrapped.param_groups[0]["lr"] * 2.0
    branches = []
    for Xb, yb in batches:
        with torch.no_grad():
            for t, p in zip(twin.parameters(), params):
                t.copy_(p)
        _grads(model, Xb, yb)
        _grads(twin, Xb, yb)
        g = [p.grad.clone() for p in params]
        twin_opt.step()
        tilde = [t.detach().clone() for t in twin.parameters()]
        c = sum((gi * (ti - t0)).sum() for gi, ti, t0 in zip(g, tilde, theta0))
        wrapped.step()
        if c < 0:
            assert all(torch.equal(p, t) for p, t in zip(params, tilde))
        else:
            for p, t, t0 in zip(params, tilde, theta0):
                torch.testing.assert_close(p.detach(), t0 + (1 - k) * (t - t0),
                                           rtol=1e-12, atol=1e-14)
        branches.append(bool(c >= 0))
    assert 0 < sum(branches) < len(branches)  # both branches were exercised
    assert wrapped.stats["proximal_pulls"] == sum(branches)
    assert wrapped.stats["proximal_steps"] == len(batches)
    assert torch.equal(model.frozen, torch.ones(3, dtype=torch.float64))


@pytest.mark.parametrize("opt", sorted(OPTIMISERS))
def test_lambda_zero_is_exactly_the_inner_optimiser(opt):
    model, batches = _problem()
    plain, _ = _problem()
    wrapped = ProximalPullOptimizer(OPTIMISERS[opt](list(model.parameters())), lam=0.0)
    inner = OPTIMISERS[opt](list(plain.parameters()))
    for Xb, yb in batches:
        for m, o in ((model, wrapped), (plain, inner)):
            _grads(m, Xb, yb)
            o.step()
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), plain.parameters()))
    assert not torch.equal(model.weight, _problem()[0].weight)  # it did move


def test_always_mode_pulls_every_step_and_lr_lambda_is_clamped_at_one():
    model, batches = _problem()
    theta0 = [p.detach().clone() for p in (model.weight, model.bias)]
    wrapped = ProximalPullOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), lam=50.0,
                                    mode="always")  # lr * lam = 5 -> 1: back to theta_0
    for Xb, yb in batches[:3]:
        _grads(model, Xb, yb)
        wrapped.step()
        for p, t0 in zip((model.weight, model.bias), theta0):
            torch.testing.assert_close(p.detach(), t0, rtol=0, atol=1e-15)
    assert wrapped.stats == {"proximal_steps": 3, "proximal_pulls": 3}


def test_parameters_without_a_gradient_are_untouched():
    model, batches = _problem()
    wrapped = ProximalPullOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), lam=1.0,
                                    mode="always")
    _grads(model, *batches[0])
    wrapped.step()
    bias = model.bias.detach().clone()
    with torch.no_grad():
        model.bias.add_(1.0)  # moved away from theta_0, but gets no gradient next step
    model.zero_grad(set_to_none=True)
    (model.weight.sum() ** 2).backward()
    wrapped.step()
    assert torch.equal(model.bias, bias + 1.0)


def test_state_dict_keeps_theta0_across_a_resume():
    model, batches = _problem()
    a = ProximalPullOptimizer(torch.optim.AdamW(model.parameters(), lr=0.05), lam=2.0)
    for Xb, yb in batches[:10]:
        _grads(model, Xb, yb)
        a.step()
    state = copy.deepcopy(a.state_dict())  # as saved: no tensor shared with a
    # a resumed process: same weights, a wrapper built on them (its own theta_0 differs)
    resumed, _ = _problem()
    resumed.load_state_dict(model.state_dict())
    b = ProximalPullOptimizer(torch.optim.AdamW(resumed.parameters(), lr=0.05), lam=2.0)
    assert not torch.equal(b.theta0[0], a.theta0[0])
    b.load_state_dict(state)
    assert all(torch.equal(x, y) for x, y in zip(a.theta0, b.theta0))
    assert b.stats == a.stats
    for Xb, yb in batches[10:]:
        for m, o in ((model, a), (resumed, b)):
            _grads(m, Xb, yb)
            o.step()
    assert all(torch.equal(x, y) for x, y in zip(model.parameters(), resumed.parameters()))
    assert b.stats == a.stats and b.stats["proximal_pulls"] > 0
    with pytest.raises(ValueError, match="proximal"):
        b.load_state_dict(a.optimizer.state_dict())
    other = ProximalPullOptimizer(torch.optim.SGD(nn.Linear(3, 1).parameters(), lr=0.1), lam=1)
    with pytest.raises(ValueError, match="shapes"):
        other.load_state_dict(state)


def test_full_batch_step_against_hand_computed_cases():
    theta0, theta = torch.tensor([0.0, 0.0]), torch.tensor([1.0, 2.0])
    # g points away from theta_0: theta~ = (0.9, 1.8), c = g . theta~ = 4.5 >= 0 -> pulled
    g = torch.tensor([1.0, 2.0])
    step = proximal_gd_step(theta, g, theta0, 0.1, 2.0, condition="previous_gradient")
    assert step.pulled and step.c == pytest.approx(4.5)
    torch.testing.assert_close(step.params, 0.8 * torch.tensor([0.9, 1.8]))
    # g points toward theta_0's far side: theta~ = (1.1, 2.2), c = -5.5 < 0 -> theta~ exactly
    step = proximal_gd_step(theta, -g, theta0, 0.1, 2.0, condition="previous_gradient")
    assert not step.pulled and torch.equal(step.params, theta + 0.1 * g)
    # exact condition: the gradient at theta~ decides (R = ||theta - m||^2 / 2 has grad
    # theta - m); with m = (2, 4) it is theta~ - m = (-1.1, -2.2), c < 0 though g . d > 0
    m = torch.tensor([2.0, 4.0])
    step = proximal_gd_step([theta], [g], [theta0], 0.1, 2.0, mode="selective",
                            condition="exact", grad_fn=lambda ps: [ps[0] - m])
    assert not step.pulled and step.c == pytest.approx(-1.1 * 0.9 - 2.2 * 1.8)
    assert isinstance(step.params, list) and torch.equal(step.params[0], theta - 0.1 * g)
    step = proximal_gd_step(theta, -g, theta0, 0.1, 2.0, mode="always")
    assert step.pulled and step.c is None
    torch.testing.assert_close(step.params, 0.8 * torch.tensor([1.1, 2.2]))


def test_settings_and_errors():
    assert METHODS["proximal_pull"] is ProximalPull
    assert ProximalPull(lam=10) == ProximalPull(lam=10.0)
    assert ProximalPull(lam=10).key() == {"kind": "proximal_pull", "lam": 10.0,
                                          "mode": "selective", "condition": "previous_gradient"}
    cfg = RunConfig(model="mlp", methods=(ProximalPull(lam=0.5, mode="always"),))
    assert RunConfig(**cfg.key()) == cfg
    for bad in (-1.0, float("nan"), True, "1"):
        with pytest.raises(ValueError, match="lam"):
            ProximalPull(lam=bad)
    with pytest.raises(ValueError, match="mode"):
        ProximalPull(mode="sometimes")
    with pytest.raises(ValueError, match="condition"):
        ProximalPull(condition="exact")  # needs an extra backward the loop does not do
    with pytest.raises(ValueError, match="grad_fn"):
        proximal_gd_step(torch.ones(2), torch.ones(2), torch.zeros(2), 0.1, 1.0)
    with pytest.raises(ValueError, match="lam"):
        proximal_gd_step(torch.ones(2), torch.ones(2), torch.zeros(2), 0.1, -1.0,
                         condition="previous_gradient")
    with pytest.raises(ValueError, match="shapes"):
        proximal_gd_step(torch.ones(2), torch.ones(3), torch.zeros(2), 0.1, 1.0,
                         condition="previous_gradient")
    frozen = nn.Linear(2, 1).requires_grad_(False)
    with pytest.raises(ValueError, match="trainable"):
        ProximalPullOptimizer(torch.optim.SGD(frozen.parameters(), lr=0.1), lam=1.0)
