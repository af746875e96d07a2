"""Quasi-Newton in the class-gradient subspace (seed 004 ch. 4.3, appendix E.3).

Oracles:

* class gradients against per-class and per-example loops of plain ``torch.autograd.grad``
  (float64);
* the exact identity linking them to the batch gradient (eqs. 4.22-4.23);
* the step on a quadratic equals the closed-form Newton step in the subspace plus gradient
  descent outside it;
* the optimiser's step, driven by ``loss.backward()`` alone, matches eq. 4.33 computed by hand,
  including the EMA/RMS smoothing of eqs. 4.34/4.35;
* the metrics on inputs with known values;
* principal angles against scipy;
* a short run through the shared training loop.
"""

import io
import math

import numpy as np
import pytest
import scipy.linalg
import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.optim import make_optimizer
from lalr_core.core.loop.train import train
from lalr_core.methods.class_subspace import assumptions, gradients, optimizer

pytestmark = pytest.mark.usefixtures("one_thread")

C = 3


def _net(bn: bool = False, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    layers = [nn.Linear(4, 6)] + ([nn.BatchNorm1d(6)] if bn else []) + [nn.Tanh(), nn.Linear(6, C)]
    return nn.Sequential(*layers).double()


def _batch(n: int = 10, seed: int = 1, labels=None):
    n = len(labels) if labels is not None else n
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=gen, dtype=torch.float64)
    y = torch.tensor(labels) if labels is not None else torch.arange(n) % C
    return x, y


def _flat(tensors) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


# ----------------------------------------------------------------------------- class gradients
def test_class_gradients_match_a_per_example_loop_of_autograd_grad():
    model, (x, y) = _net(), _batch()
    params = list(model.parameters())
    G, counts = gradients.class_gradients(model, x, y)
    for k in range(C):                            # eq. 4.34: mean of grad z_k over B_k
        rows = [_flat(torch.autograd.grad(model(x[m:m + 1])[0, k], params))
                for m in range(len(y)) if y[m] == k]
        torch.testing.assert_close(G[k], torch.stack(rows).mean(0), rtol=1e-12, atol=1e-14)
    assert counts.tolist() == [4, 3, 3]


def test_class_gradients_with_batchnorm_in_train_mode_match_a_per_class_loop():
    model, (x, y) = _net(bn=True), _batch(labels=[0, 0, 2, 2, 0, 2, 2, 0])  # class 1 absent
    params = list(model.parameters())
    G, counts = gradients.class_gradients(model, x, y)
    z = model(x)
    for k in (0, 2):
        want = _flat(torch.autograd.grad(z[y == k, k].mean(), params, retain_graph=True))
        torch.testing.assert_close(G[k], want, rtol=1e-12, atol=1e-14)
    assert counts.tolist() == [4, 0, 4] and not G[1].any()


def test_class_gradients_relate_to_the_batch_gradient_by_eq_4_22():
    # Class gradients are mean logit gradients, not per-class loss gradients, so they do not
    # sum to g. From (4.22): g = grad mean_mu LSE(z^mu) - sum_k (|B_k|/|B|) c_k.
    model, (x, y) = _net(), _batch(n=11)
    params = list(model.parameters())
    G, counts = gradients.class_gradients(model, x, y)
    z = model(x)
    g = _flat(torch.autograd.grad(F.cross_entropy(z, y), params, retain_graph=True))
    lse = _flat(torch.autograd.grad(torch.logsumexp(z, 1).mean(), params, retain_graph=True))
    weighted = (counts.double() / len(y)) @ G
    torch.testing.assert_close(g, lse - weighted, rtol=1e-12, atol=1e-14)
    correct_logit = _flat(torch.autograd.grad(z.gather(1, y[:, None]).mean(), params))
    torch.testing.assert_close(weighted, correct_logit, rtol=1e-12, atol=1e-14)
    assert not torch.allclose(G.sum(0), g)        # the plain sum is not the gradient


def test_labels_are_recovered_from_the_logit_gradient_and_other_losses_refused():
    z = torch.randn(6, C, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([2, 0, 1, 1, 0, 2])
    dz, = torch.autograd.grad(F.cross_entropy(z, y), z)
    assert gradients.labels_from_logit_grad(z, dz).tolist() == y.tolist()
    for loss in (F.cross_entropy(z, y, reduction="sum"),
                 F.cross_entropy(z, y, label_smoothing=0.2)):
        dz, = torch.autograd.grad(loss, z)
        with pytest.raises(ValueError, match="mean cross-entropy"):
            gradients.labels_from_logit_grad(z, dz)



def test_a_diverged_batch_is_let_through_for_the_loop_to_record():
    """NaN logits (a run the rehearsal of chapter 05's paper grid drove to divergence) are no
    evidence of a wrong loss: the step goes on and the loop records the divergence."""
    z = torch.full((4, C), float("nan"), dtype=torch.float64)
    assert gradients.labels_from_logit_grad(z, torch.zeros_like(z)).shape == (4,)


# ----------------------------------------------------------------------------- the step
def test_step_on_a_quadratic_is_newton_in_the_subspace_and_gd_outside():
    gen = torch.Generator().manual_seed(0)
    P, eta = 8, 0.05
    Q, _ = torch.linalg.qr(torch.randn(P, P, generator=gen, dtype=torch.float64))
    V, W = Q[:, :C].T, Q[:, C:].T                            # orthonormal v_k, complement
    lam = torch.tensor([40.0, 7.0, 0.3], dtype=torch.float64)
    mu = torch.linspace(0.1, 2.0, P - C, dtype=torch.float64)
    H = V.T @ torch.diag(lam) @ V + W.T @ torch.diag(mu) @ W
    theta_star = torch.randn(P, generator=gen, dtype=torch.float64)
    theta = torch.randn(P, generator=gen, dtype=torch.float64)
    g = H @ (theta - theta_star)                            # eq. 4.15 gradient
    G = torch.tensor([2.0, 0.5, 3.0], dtype=torch.float64)[:, None] * V  # only directions count
    new = theta - optimizer.qn_direction(g, G, lam, eta)
    torch.testing.assert_close(V @ (new - theta_star), torch.zeros(C, dtype=torch.float64),
                               atol=1e-12, rtol=0)          # Newton (4.31): exact in the span
    torch.testing.assert_close(W @ (new - theta_star),      # SGD on P g (4.32), eq. 4.18
                               (1 - eta * mu) * (W @ (theta - theta_star)), rtol=1e-12, atol=1e-12)
    pinv = V.T @ torch.diag(1 / lam) @ V                    # eq. 4.30
    proj = torch.eye(P, dtype=torch.float64) - V.T @ V
    torch.testing.assert_close(new, theta - pinv @ g - eta * proj @ g, rtol=1e-12, atol=1e-12)
    # a class not seen yet (zero row) adds nothing: plain SGD
    torch.testing.assert_close(optimizer.qn_direction(g, torch.zeros_like(G), lam, eta), eta * g)


def _hand_step(model, x, y, eta, m_prev=None, r_prev=None, t_prev=None, gamma=optimizer.GAMMA, wd=0.0):
    """Eq. 4.33 with (4.34)/(4.35), from per-class autograd.grad loops (float64)."""
    params = list(model.parameters())
    z = model(x)
    g = _flat(torch.autograd.grad(F.cross_entropy(z, y), params, retain_graph=True))
    g = g + wd * _flat(params).detach()
    p = torch.softmax(z.detach(), 1)
    m = torch.zeros(C, g.numel(), dtype=g.dtype) if m_prev is None else m_prev.clone()
    r = torch.zeros(C, dtype=g.dtype) if r_prev is None else r_prev.clone()
    t = torch.zeros(C, dtype=torch.long) if t_prev is None else t_prev.clone()
    for k in y.unique().tolist():
        c = _flat(torch.autograd.grad(z[y == k, k].mean(), params, retain_graph=True))
        lam_b = (p[:, k] * (1 - p[:, k])).mean() * c.dot(c)
        m[k] = gamma * m[k] + (1 - gamma) * c
        r[k] = gamma * r[k] + (1 - gamma) * lam_b**2
        t[k] += 1
    lam = torch.where(t > 0, torch.sqrt(r / (1 - gamma ** t.clamp(min=1).double())), 1.0)
    d = eta * g
    for k in range(C):
        if t[k]:
            v = m[k] / m[k].norm()
            d = d + (1 / lam[k] - eta) * v.dot(g) * v
    return _flat(params).detach() - d, m, r, t, lam


def _train_step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)                     # what the loop's task does
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def test_optimizer_steps_match_eq_4_33_with_the_smoothing_of_eqs_4_34_4_35():
    model, eta, wd = _net(bn=True), 0.1, 1e-2
    opt = optimizer.QuasiNewtonClassSubspace(model.parameters(), lr=eta, weight_decay=wd)  # finds it
    batches = [_batch(seed=1), _batch(seed=2, labels=[0, 2, 2, 0, 0, 2]), _batch(seed=3)]
    m = r = t = None
    for x, y in batches:                                    # class 1 is absent from batch 2
        ref = _net(bn=True)
        ref.load_state_dict(model.state_dict())
        want, m, r, t, lam = _hand_step(ref, x, y, eta, m, r, t, wd=wd)
        _train_step(model, opt, x, y)
        torch.testing.assert_close(_flat(model.parameters()).detach(), want, rtol=1e-10, atol=1e-12)
    assert t.tolist() == [3, 2, 3]
    torch.testing.assert_close(opt.eigenvalues().double(), lam, rtol=1e-6, atol=0)
    bias = (1 - optimizer.GAMMA ** t.double())[:, None]
    torch.testing.assert_close(opt.class_gradient_estimates(), m / bias, rtol=1e-10, atol=1e-12)
    assert opt.stats == {"steps": 3, "class_backward_passes": 8}


def test_param_groups_use_their_own_lr_and_share_the_newton_part():
    model, (x, y) = _net(), _batch()
    first, rest = list(model[0].parameters()), list(model[2].parameters())
    opt = optimizer.QuasiNewtonClassSubspace([{"params": first, "lr": 0.1}, {"params": rest}],
                                      lr=0.02, model=model)
    params = first + rest
    G, _ = gradients.class_gradients(model, x, y, params)          # t = 1: c = c^B, lambda = lambda^B
    z = model(x)
    lam = optimizer.batch_eigenvalues(torch.softmax(z.detach(), 1), G)
    g = _flat(torch.autograd.grad(F.cross_entropy(z, y), params))
    cut = sum(p.numel() for p in first)
    d = torch.cat([optimizer.qn_direction(g, G, lam, 0.1)[:cut], optimizer.qn_direction(g, G, lam, 0.02)[cut:]])
    want = _flat(params).detach() - d
    _train_step(model, opt, x, y)
    torch.testing.assert_close(_flat(params).detach(), want, rtol=1e-10, atol=1e-12)


def test_first_step_before_any_class_is_seen_uses_lambda_init_and_state_round_trips():
    model, (x, y) = _net(), _batch()
    opt = optimizer.QuasiNewtonClassSubspace(model.parameters(), lr=0.1, model=model)
    assert opt.eigenvalues() is None
    _train_step(model, opt, x, y)
    buffer = io.BytesIO()                                   # as the loop's checkpoint
    torch.save(opt.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=False)
    twin = _net()
    twin.load_state_dict(model.state_dict())
    opt2 = optimizer.QuasiNewtonClassSubspace(twin.parameters(), lr=0.1, model=twin)
    opt2.load_state_dict(state)
    x2, y2 = _batch(seed=5)
    _train_step(model, opt, x2, y2)
    _train_step(twin, opt2, x2, y2)
    torch.testing.assert_close(_flat(twin.parameters()), _flat(model.parameters()), rtol=0, atol=0)
    assert opt2.stats["steps"] == 2


def test_step_without_class_gradients_and_bad_settings_raise():
    model = _net()
    opt = optimizer.QuasiNewtonClassSubspace(model.parameters(), lr=0.1, model=model)
    with pytest.raises(RuntimeError, match="no class gradients"):
        opt.step()
    for kwargs, name in (({"lr": 0.0}, "lr"), ({"lr": 0.1, "gamma": 1.0}, "gamma"),
                         ({"lr": 0.1, "gamma": 0.0}, "gamma"), ({"lr": float("nan")}, "lr"),
                         ({"lr": 0.1, "weight_decay": -1.0}, "weight_decay")):
        with pytest.raises(ValueError, match=name):
            optimizer.QuasiNewtonClassSubspace(model.parameters(), **kwargs)
    with pytest.raises(ValueError, match="does not hold"):
        opt.attach(_net(seed=3))
    x, y = _batch()                                         # a sum-reduced loss is refused
    F.cross_entropy(model(x), y, reduction="sum").backward()
    with pytest.raises(ValueError, match="mean cross-entropy"):
        opt.step()
    tiny = {"dataset": "fashion_mnist", "synthetic": True, "n_train": 64, "model": "mlp",
            "device": "cpu"}
    with pytest.raises(ValueError, match="momentum_decay"):
        RunConfig(**tiny, optimizer="qn_class_subspace", optimizer_params={"momentum_decay": 0.9})
    bad = RunConfig(**tiny, optimizer="qn_class_subspace", optimizer_params={"gamma": 1.5})
    with pytest.raises(ValueError, match="gamma"):
        make_optimizer(bad, nn.Linear(2, 2))


def test_trains_through_the_shared_loop():
    cfg = RunConfig(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16,
                    model="mlp", optimizer="qn_class_subspace", epochs=2, batch_size=16,
                    lr=0.01, device="cpu", eval_batch_size=32,
                    optimizer_params={"gamma": optimizer.GAMMA})
    out = train(cfg, progress=False)
    assert not out["diverged"] and len(out["history"]) == 2
    assert np.isfinite(out["history"][["train_loss", "val_loss"]].to_numpy()).all()
    assert out["optimizer_stats"]["steps"] == 8
    assert out["optimizer_stats"]["class_backward_passes"] >= 8  # C VJPs per step (E.2)


# ----------------------------------------------------------------------------- metrics (4.3.6)
def test_q_gc_on_orthogonal_and_identical_class_gradients():
    eye = torch.eye(4, 6, dtype=torch.float64) * torch.tensor([1.0, 2.0, 3.0, 4.0])[:, None]
    assert assumptions.q_gc(eye) == pytest.approx(0.0, abs=1e-15)
    same = torch.ones(4, 6, dtype=torch.float64) * torch.tensor([1.0, 2.0, 3.0, 4.0])[:, None]
    assert assumptions.q_gc(same) == pytest.approx(0.5)            # eq. 4.41 as printed: half the mean
    assert assumptions.q_gc(same, printed=False) == pytest.approx(1.0)
    three = torch.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], dtype=torch.float64)
    pair_mean = (2 * math.sqrt(0.5) + 0.0) / 3            # cos 45, 45, 90 degrees
    assert assumptions.q_gc(three, printed=False) == pytest.approx(pair_mean)
    with pytest.raises(ValueError):
        assumptions.q_gc(torch.zeros(3, 4))


def test_q_sl_on_constructed_logit_gradients():
    grads = torch.tensor([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0],   # class 0: cos 1
                          [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]],  # class 1
                         dtype=torch.float64)
    labels = torch.tensor([0, 0, 7, 1, 1, 1])              # class 7 has one example: left out
    c1 = (0.0 + 0.0 + math.sqrt(0.5)) * 2 / 6              # ordered pairs of class 1
    assert assumptions.q_sl(grads, labels) == pytest.approx((1.0 + c1) / 2)
    with pytest.raises(ValueError):
        assumptions.q_sl(grads[:2], torch.tensor([0, 1]))


def test_q_lc_uses_the_strict_upper_triangle():
    g = torch.tensor([[1.0, -1.0, 2.0]], dtype=torch.float64)  # f = 4/3
    H = torch.tensor([[[9.0, 0.5, -1.0], [0.5, 9.0, 0.0], [-1.0, 0.0, 9.0]]], dtype=torch.float64)
    u = 2 / (3 * 2) * 1.5                                     # the diagonal 9s are not counted
    assert assumptions.q_lc(g, H, torch.tensor([0])) == pytest.approx(u / (4 / 3) ** 2)
    two = assumptions.q_lc(torch.cat([g, g, 2 * g]), torch.cat([H, H, H]), torch.tensor([0, 0, 1]))
    assert two == pytest.approx((u / (4 / 3) ** 2 + u / (8 / 3) ** 2) / 2)  # mean of class means


def test_q_lc_is_zero_for_a_linear_model_and_q_sl_is_one_when_inputs_coincide():
    model = nn.Linear(3, C, bias=False).double()             # logits linear in theta: no curvature
    x = torch.randn(4, 3, dtype=torch.float64)
    x[1] = 2 * x[0]
    y = torch.tensor([0, 0, 1, 2])
    grads = assumptions.own_logit_gradients(model, x, y)
    P = grads.shape[1]
    assert assumptions.q_lc(grads, torch.zeros(4, P, P, dtype=torch.float64), y) == 0.0
    assert assumptions.q_sl(grads, y) == pytest.approx(1.0)           # class 0: parallel gradients


# ----------------------------------------------------------------------------- E.3
def test_principal_angles_match_scipy():
    gen = torch.Generator().manual_seed(4)
    A = torch.randn(3, 12, generator=gen, dtype=torch.float64)
    B = torch.randn(4, 12, generator=gen, dtype=torch.float64)
    B[0] = A[0] + 0.01 * B[0]                               # one small angle
    want = np.sort(scipy.linalg.subspace_angles(A.T.numpy(), B.T.numpy()))
    np.testing.assert_allclose(assumptions.principal_angles(A, B).numpy(), want, rtol=1e-6, atol=1e-9)


def test_subspace_rank_and_assignment_on_known_subspaces():
    eye = torch.eye(8, dtype=torch.float64)
    V = eye[:3] * torch.tensor([[1.0], [5.0], [0.2]])
    gen = torch.Generator().manual_seed(2)
    R, _ = torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64, generator=gen))
    assert assumptions.subspace_rank(V, R @ eye[:3]) == 3              # same span: C
    assert assumptions.subspace_rank(V, eye[3:6]) == 6                 # no intersection: 2C
    assert assumptions.subspace_rank(V, torch.stack([eye[0], eye[1], eye[5]])) == 4
    E = torch.stack([-eye[2], eye[0], eye[1]])                # permuted, one sign flipped
    mean, S = assumptions.assignment_cosine(V, E)
    assert mean == pytest.approx(1.0) and S.shape == (3, 3)
    with pytest.raises(ValueError, match="rtol"):
        assumptions.subspace_rank(V, E, rtol=0)
