"""NTK, linearisation and the kernel theory of seed 002. Oracles: a per-sample autograd loop for
the Jacobian, the primal ridge problem solved by ``torch.linalg.lstsq``, scipy's matrix power
for ``K^{-1/2}``, explicit inverses, closed forms, and training the original model where the
linearisation is exact."""

import copy
import math

import numpy as np
import pytest
import scipy.linalg
import torch
from torch import nn

from lalr_core.core.models.networks import build_model
from lalr_core.methods.pretrained.text.tinytf import TinyTFClassifier, TinyTFConfig
from lalr_core.methods.ntk import empirical as ntk
from lalr_core.methods.ntk import theory as nt

pytestmark = [pytest.mark.usefixtures("one_thread"),
              # torch's jvp decompositions use the deprecated torch.jit.script on first use
              pytest.mark.filterwarnings("ignore:.*torch.jit.script:FutureWarning")]
F64 = torch.float64


def margin(logits):
    return logits[:, 1] - logits[:, 0]


def _close(a, b, rtol=1e-9):
    scale = float(torch.as_tensor(b).detach().abs().max())
    torch.testing.assert_close(torch.as_tensor(a), torch.as_tensor(b), rtol=rtol,
                               atol=rtol * scale)


# ----------------------------------------------------------------------------- tiny models
def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 3)).double()


def _cnn(seed=0):
    """BasicCNN with 4 channels on 8x8 images; batch norm with non-trivial running statistics,
    left in train mode, so a kernel taken in train mode would differ."""
    torch.manual_seed(seed)
    model = build_model("basic_cnn", in_channels=1, num_classes=3, width=0.125,
                        image_size=8).double()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
    return model.train()


def _tinytf(seed=0, lora_like=False):
    torch.manual_seed(seed)
    cfg = TinyTFConfig(vocab_size=11, max_len=6, d_model=4, n_heads=2, n_blocks=1, d_ff=8)
    model = TinyTFClassifier(cfg, num_classes=2).double()
    for p in model.parameters():           # larger than the 0.02 init, so no term is negligible
        p.data.normal_(0, 0.5)
    if lora_like:                          # only the head and the q/v projections train
        for n, p in model.named_parameters():
            p.requires_grad_(n.startswith("head") or "q_proj" in n or "v_proj" in n)
    return model


def _inputs(kind, n=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    if kind == "mlp":
        return torch.randn(n, 3, generator=g, dtype=F64)
    if kind == "cnn":
        return torch.randn(n, 1, 8, 8, generator=g, dtype=F64)
    tokens = torch.randint(1, 11, (n, 6), generator=g)
    tokens[1::2, 4:] = 0                    # padding on every other sequence
    return tokens


MODELS = {"mlp": _mlp, "cnn": _cnn, "tinytf": _tinytf}


def loop_jacobian(model, X, names=None, output=None):
    """The oracle: one ``torch.autograd.grad`` per sample and output, eval mode. `[n, C, P]`."""
    named = dict(model.named_parameters())
    names = names or [n for n, p in named.items() if p.requires_grad]
    params = [named[n] for n in names]
    mode = model.training
    model.eval()
    rows = []
    for x in X:
        out = model(x[None])
        out = (output(out) if output else out).reshape(-1)
        rows.append(torch.stack([
            torch.cat([g.reshape(-1) for g in torch.autograd.grad(o, params, retain_graph=True,
                                                                  allow_unused=False)])
            for o in out]))
    model.train(mode)
    return torch.stack(rows)


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("kind", ["mlp", "cnn", "tinytf"])
def test_ntk_methods_equal_per_sample_loop(kind):
    model, X = MODELS[kind](), _inputs(kind)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    modes = [m.training for m in model.modules()]
    J = loop_jacobian(model, X)                                   # (n, C, P)
    K_blocks = torch.einsum("iaP,jbP->ijab", J, J)
    for method in ("jacobian", "ntvp"):
        K = ntk.empirical_ntk(model, X, chunk=3, method=method, blocks=True)   # chunks 3, 3, 1
        assert K.shape == (7, 7, 3 if kind != "tinytf" else 2, 3 if kind != "tinytf" else 2)
        _close(K, K_blocks)
        _close(ntk.empirical_ntk(model, X, chunk=4, method=method),
               K_blocks.diagonal(dim1=2, dim2=3).sum(-1))
    # the scalar logit margin (chapter 03's choice)
    Jm = loop_jacobian(model, X, output=margin)[:, 0]
    for method in ("jacobian", "ntvp"):
        _close(ntk.empirical_ntk(model, X, output=margin, chunk=2, method=method), Jm @ Jm.T)
    # the model is untouched: same mode, same parameters and running statistics
    assert [m.training for m in model.modules()] == modes and model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k


def test_lora_like_subset_on_tinytf_and_per_sample_jacobian():
    model, X = _tinytf(lora_like=True), _inputs("tinytf", n=5)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert len(names) == 6                                        # head, q_proj, v_proj
    J = loop_jacobian(model, X, names, output=margin)[:, 0]
    Jours = ntk.per_sample_jacobian(model, X, output=margin, chunk=2)
    assert Jours.shape == (5, sum(p.numel() for p in model.parameters() if p.requires_grad))
    _close(Jours, J)
    _close(ntk.empirical_ntk(model, X, output=margin, method="ntvp"), J @ J.T)
    assert ntk.per_sample_jacobian(model, X).shape == (5, 2, Jours.shape[1])


def test_float64_on_request_leaves_float32_model_alone():
    model32, X = _cnn().float(), _inputs("cnn").float()
    K = ntk.empirical_ntk(model32, X, dtype=F64)
    assert K.dtype == F64 and next(model32.parameters()).dtype == torch.float32
    J = loop_jacobian(copy.deepcopy(model32).double(), X.double())   # the float64 oracle
    _close(K, torch.einsum("iaP,jaP->ij", J, J))
    assert ntk.empirical_ntk(model32, X).dtype == torch.float32


def test_parameter_subset_kernels_add_up():
    model, X = _cnn(), _inputs("cnn")
    names = [n for n, _ in model.named_parameters()]
    A = [n for n in names if n.startswith("conv")]
    K_all = ntk.empirical_ntk(model, X)
    K_A = ntk.empirical_ntk(model, X, params=A)
    K_B = ntk.empirical_ntk(model, X, params=lambda n: not n.startswith("conv"))
    _close(K_A + K_B, K_all)
    assert float((K_A - K_all).abs().max()) > 1e-3 * float(K_all.abs().max())
    # a frozen parameter can still be named (a candidate layer's kernel S)
    model.fc.weight.requires_grad_(False)
    S = ntk.empirical_ntk(model, X, params=["fc.weight"])
    J = loop_jacobian(_cnn(), X, ["fc.weight"])
    _close(S, torch.einsum("iaP,jaP->ij", J, J))


def test_jacobian_norm_is_spectral_norm_of_stacked_jacobian():
    model, X = _mlp(), _inputs("mlp")
    J = loop_jacobian(model, X)
    expected = float(torch.linalg.matrix_norm(J.reshape(-1, J.shape[-1]), ord=2))
    assert math.isclose(ntk.jacobian_norm(model, X), expected, rel_tol=1e-9)
    Jm = loop_jacobian(model, X, output=margin)[:, 0]
    assert math.isclose(ntk.jacobian_norm(model, X, output=margin, method="ntvp"),
                        float(torch.linalg.matrix_norm(Jm, ord=2)), rel_tol=1e-9)


# ----------------------------------------------------------------------------- linearisation
def _perturb(lin, direction, eps):
    with torch.no_grad():
        for t, t0, d in zip(lin.theta, lin.theta0().values(), direction):
            t.copy_(t0 + eps * d)


def test_linearised_model_matches_first_order_taylor_expansion():
    model, X = _mlp(), _inputs("mlp")
    lin = ntk.LinearisedModel(model)
    assert [p.shape for p in lin.parameters()] == [p.shape for p in model.parameters()]
    _close(lin(X), model(X))                                      # f_lin = f at theta0
    g = torch.Generator().manual_seed(3)
    direction = [torch.randn(p.shape, generator=g, dtype=F64) for p in model.parameters()]
    J = loop_jacobian(model, X)                                   # (n, C, P)
    v = torch.cat([d.reshape(-1) for d in direction])
    errors = []
    for eps in (1e-2, 5e-3):
        _perturb(lin, direction, eps)
        _close(lin(X), model(X) + eps * J @ v)                    # exactly linear in theta
        moved = {n: p + eps * d for (n, p), d in zip(model.named_parameters(), direction)}
        f_moved = torch.func.functional_call(model, moved, (X,))
        errors.append(float((lin(X) - f_moved).detach().abs().max()))
        # taylor_remainder: f_theta_t - f_lin(theta_t), the same quantity
        model_t = _mlp()
        model_t.load_state_dict(moved)
        _close(ntk.taylor_remainder(model_t, ntk.snapshot_params(model), X), f_moved - lin(X))
    assert 3.5 < errors[0] / errors[1] < 4.5                       # O(eps^2)


def test_linearised_model_keeps_frozen_parameters_and_eval_mode():
    model, X = _cnn(), _inputs("cnn")
    model.conv1.weight.requires_grad_(False)
    lin = ntk.LinearisedModel(model).train()
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert lin.param_names == names and len(list(lin.parameters())) == len(names)
    assert not lin.base.training and lin.training
    lin(X).sum().backward()
    assert all(p.grad is not None for p in lin.parameters())
    with torch.no_grad():
        model.eval()
        _close(lin(X), model(X))                                  # eval-mode function
    lin = lin.float()
    assert lin(X.float()).dtype == torch.float32


def test_taylor_remainder_is_zero_for_linear_model():
    torch.manual_seed(0)
    model, X = nn.Linear(4, 3).double(), torch.randn(6, 4, dtype=F64)
    theta0 = ntk.snapshot_params(model)
    with torch.no_grad():
        model.weight.add_(torch.randn(3, 4, dtype=F64))
        model.bias.add_(1.0)
    r = ntk.taylor_remainder(model, theta0, X)
    assert r.shape == (6, 3) and float(r.abs().max()) < 1e-12
    # but not for the MLP, and only the moved parameters need a theta0
    mlp = _mlp()
    theta0 = ntk.snapshot_params(mlp, ["0.weight"])
    with torch.no_grad():
        mlp[0].weight.add_(0.3)
    assert float(ntk.taylor_remainder(mlp, theta0, _inputs("mlp")).abs().max()) > 1e-4


class _FixedFeatures(nn.Module):
    """Exactly linear in its trainable parameters: a frozen tanh layer, then a linear head."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.features = nn.Linear(3, 6).double().requires_grad_(False)
        self.head = nn.Linear(6, 4).double()

    def forward(self, x):
        return self.head(torch.tanh(self.features(x)))


def test_training_linearised_model_reproduces_trajectory_of_linear_model():
    model = _FixedFeatures()
    lin = ntk.LinearisedModel(model)
    g = torch.Generator().manual_seed(5)
    X, y = torch.randn(16, 3, generator=g, dtype=F64), torch.randint(0, 4, (16,), generator=g)
    opts = [torch.optim.SGD(m.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-2)
            for m in (model, lin)]
    for step in range(6):
        for m, opt in zip((model, lin), opts):
            batch = slice(4 * (step % 4), 4 * (step % 4) + 4)
            opt.zero_grad()
            nn.functional.cross_entropy(m(X[batch]), y[batch]).backward()
            opt.step()
    trained = dict(model.named_parameters())
    for n, t in zip(lin.param_names, lin.theta):
        _close(t, trained[n], rtol=1e-12)
    assert float((trained["head.weight"] - lin.theta0()["head.weight"]).detach().abs().max()) > 0.05
    _close(lin(X), model(X), rtol=1e-12)


# ----------------------------------------------------------------------------- kernel ridge
def _psd(n=6, rank=None, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(n, rank or n, generator=g, dtype=F64)
    return scale * A @ A.T


@pytest.mark.parametrize("lam", [0.1, 1.0, 10.0])
def test_kernel_ridge_equals_primal_ridge_on_linear_model(lam):
    """Linear model, so the linearisation is exact: the sum-loss minimiser of
    ||f(x*) - y*||^2 + (lam/2)||theta - theta0||^2 from lstsq equals KRR with sigma = lam/2."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1).double()
    g = torch.Generator().manual_seed(1)
    X, y = torch.randn(8, 3, generator=g, dtype=F64), torch.randn(8, generator=g, dtype=F64)
    out = lambda z: z[:, 0]
    Phi = ntk.per_sample_jacobian(model, X, output=out)                      # (n, P) = [x, 1]
    _close(Phi, torch.cat([X, torch.ones(8, 1, dtype=F64)], 1))
    y_tilde = y - out(model(X)).detach()
    sigma = lam / 2
    A = torch.cat([Phi, math.sqrt(sigma) * torch.eye(4, dtype=F64)])        # primal, stacked
    w = torch.linalg.lstsq(A, torch.cat([y_tilde, torch.zeros(4, dtype=F64)])).solution
    krr = nt.kernel_ridge(ntk.empirical_ntk(model, X, output=out), y_tilde, sigma)
    _close(krr.fit, Phi @ w)
    _close(krr.residual, y_tilde - Phi @ w)
    assert math.isclose(krr.risk, float((y_tilde - Phi @ w).pow(2).mean()), rel_tol=1e-9)
    X_new = torch.randn(3, 3, generator=g, dtype=F64)
    Phi_new = torch.cat([X_new, torch.ones(3, 1, dtype=F64)], 1)
    _close(krr.predict(Phi_new @ Phi.T), Phi_new @ w)


@pytest.mark.parametrize("sigma", [0.05, 0.5, 5.0])
@pytest.mark.parametrize("rank", [6, 3])
def test_theorem5_bounds_and_condition_number(sigma, rank):
    K = _psd(rank=rank)
    y = torch.randn(6, generator=torch.Generator().manual_seed(2), dtype=F64)
    I6 = torch.eye(6, dtype=F64)
    R_direct = float(((I6 - K @ torch.linalg.inv(K + sigma * I6)) @ y).pow(2).sum()) / 6
    R = nt.krr_risk(K, y, sigma)
    assert math.isclose(R, R_direct, rel_tol=1e-9)
    lower, upper = nt.risk_bounds(K, y, sigma)
    assert lower * (1 - 1e-10) <= R <= upper * (1 + 1e-10)
    assert lower < upper
    kappa = nt.regularised_condition_number(K, sigma)
    assert math.isclose(kappa, np.linalg.cond((K + sigma * I6).numpy()), rel_tol=1e-8)
    # multi-column targets: columns are independent problems
    Y = torch.stack([y, 2 * y], 1)
    assert math.isclose(nt.krr_risk(K, Y, sigma), 5 * R, rel_tol=1e-9)


# ----------------------------------------------------------------------------- Theorems 6, 7
def test_eta_matches_scipy_and_closed_forms():
    K, S = _psd(seed=0), _psd(rank=2, seed=1)
    root = scipy.linalg.fractional_matrix_power(K.numpy(), -0.5).real
    assert math.isclose(nt.eta(K, S), np.linalg.norm(root @ S.numpy() @ root, 2), rel_tol=1e-6)
    assert math.isclose(nt.eta(K, K), 1.0, rel_tol=1e-8)                 # K^-1/2 K K^-1/2 = I
    assert math.isclose(nt.eta(K, 0.3 * K), 0.3, rel_tol=1e-8)
    assert nt.eta(K, torch.zeros(6, 6, dtype=F64)) == 0.0


@pytest.mark.parametrize("scale", [1e-3, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("rank", [6, 4])
def test_theorem6_sandwich_holds(scale, rank):
    for seed in range(5):
        K, S = _psd(rank=rank, seed=seed), _psd(rank=2, seed=seed + 10, scale=scale)
        sw = nt.eigenvalue_sandwich(K, S)
        assert sw.holds, (seed, sw.eta)
        assert math.isclose(sw.eta, nt.eta(K, S), rel_tol=1e-12)
        _close(sw.eig_KS, torch.linalg.eigvalsh(K + S))
    # eta is the least constant with K + S <= (1 + eta) K in the Loewner order
    K, S = _psd(seed=1), _psd(seed=2)
    e = nt.eta(K, S)
    gap = lambda c: float(torch.linalg.eigvalsh(K + S - c * K)[-1])
    assert abs(gap(1 + e)) < 1e-8 * float(torch.linalg.eigvalsh(K + S)[-1])
    assert gap(1 + 0.99 * e) > 0


def test_theorem7_inequalities_hold_where_eta_below_one():
    n_vacuous = 0
    for seed in range(20):
        K = _psd(seed=seed)
        S = _psd(rank=2, seed=seed + 50, scale=10.0 ** (seed % 4 - 3))   # 1e-3 .. 1
        y = torch.randn(6, generator=torch.Generator().manual_seed(seed), dtype=F64)
        rr = nt.risk_ratio_bounds(K, S, y, 0.5)
        if rr.vacuous:
            n_vacuous += 1
            assert rr.eta >= 1 and rr.holds is None and math.isinf(rr.a)
            continue
        assert rr.holds and rr.lower <= rr.ratio <= rr.upper
        assert rr.upper >= 1 and rr.ratio <= 1 + 1e-12               # adding S never hurts
        assert math.isclose(rr.ratio, math.sqrt(nt.krr_risk(K + S, y, 0.5)
                                                / nt.krr_risk(K, y, 0.5)), rel_tol=1e-12)
    assert 0 < n_vacuous < 20


def test_layer_candidates_ranked_by_rule():
    K = _psd(seed=0)
    lam, U = torch.linalg.eigh(K)
    u_min = U[:, :1]
    candidates = {"tiny": 1e-3 * K, "scale_up": 3 * K,        # lifts lambda_min to lambda_2:
                  "fills_weak_direction": float(lam[1] - lam[0]) * u_min @ u_min.T}
    rows = nt.rank_layer_candidates(K, candidates, sigma=0.5)
    assert [r["name"] for r in rows] == ["fills_weak_direction", "scale_up", "tiny"]
    assert [r["verdict"] for r in rows] == ["worth tuning", "worsens conditioning",
                                            "not worth adding"]
    assert rows[0]["kappa_ratio"] < 1 < rows[1]["kappa_ratio"]
    assert math.isclose(rows[1]["eta"], 3.0, rel_tol=1e-8)


# ----------------------------------------------------------------------------- Theorems 2-4
def test_theorem2_to_4_bounds_closed_forms():
    L, Lg, r0 = 2.0, 0.5, 3.0
    assert math.isclose(nt.distance_bound(L, r0, 0.0, 1.5), 2 * L * r0 * 1.5)
    assert math.isclose(nt.distance_bound(L, r0, 1e-9, 1.5), 2 * L * r0 * 1.5, rel_tol=1e-8)
    assert math.isclose(nt.distance_bound(L, r0, 2.0, 1e3), 2 * L * r0 / 2.0)
    t = np.linspace(0, 5, 11)
    d = nt.distance_bound(L, r0, 0.7, t)
    assert d.shape == t.shape and np.all(np.diff(d) > 0)
    # Theorem 3, the formula and its lam -> 0 limit
    lam, tt = 0.8, 2.0
    b = 2 * L ** 2 * r0 * (4 / lam * Lg * r0 + 1)
    assert math.isclose(nt.linearisation_bound(L, Lg, r0, lam, tt),
                        b * (tt - (1 - math.exp(-lam * tt)) / lam), rel_tol=1e-12)
    limit = nt.linearisation_bound(L, Lg, r0, 0.0, tt)
    assert math.isclose(limit, 4 * L ** 2 * Lg * r0 ** 2 * tt ** 2)
    for small in (1e-6, 1e-3):                                   # series and expm1 branches
        assert math.isclose(nt.linearisation_bound(L, Lg, r0, small, tt), limit, rel_tol=1e-2)
    # Theorem 4: threshold, exit time where the distance bound reaches r, the in-ball bound
    r = 1.5
    lam_o = nt.lambda_threshold(L, r0, r)
    assert math.isclose(lam_o, 2 * r0 * L / r)
    assert math.isclose(nt.distance_bound(L, r0, lam_o, 1e6), r)
    for lam in (0.0, 0.3 * lam_o, 0.9 * lam_o):
        t_exit = nt.exit_time_bound(lam, lam_o)
        assert math.isclose(nt.distance_bound(L, r0, lam, t_exit), r, rel_tol=1e-9)
    assert nt.exit_time_bound(lam_o, lam_o) == math.inf
    assert math.isclose(nt.linearisation_bound_in_ball(L, Lg, r0, r, 2.0),
                        2 * L * r0 * (2 * r * Lg + L) * 2.0)


# ----------------------------------------------------------------------------- bad input
_M, _X, _K = _mlp(), _inputs("mlp"), _psd()
BAD = {
    "unknown name": lambda: ntk.empirical_ntk(_M, _X, params=["nope.weight"]),
    "name as string": lambda: ntk.empirical_ntk(_M, _X, params="0.weight"),
    "repeated name": lambda: ntk.empirical_ntk(_M, _X, params=["0.weight", "0.weight"]),
    "empty selection": lambda: ntk.empirical_ntk(_M, _X, params=[]),
    "unknown method": lambda: ntk.empirical_ntk(_M, _X, method="svd"),
    "chunk 0": lambda: ntk.empirical_ntk(_M, _X, chunk=0),
    "integer dtype": lambda: ntk.empirical_ntk(_M, _X, dtype=torch.int64),
    "output drops batch": lambda: ntk.empirical_ntk(_M, _X, output=lambda z: z.sum()),
    "no samples": lambda: ntk.empirical_ntk(_M, _X[:0]),
    "not a module": lambda: ntk.empirical_ntk("model", _X),
    "non-square K": lambda: nt.kernel_ridge(_K[:, :5], torch.ones(6), 0.5),
    "negative sigma": lambda: nt.kernel_ridge(_K, torch.ones(6), -0.1),
    "targets length": lambda: nt.kernel_ridge(_K, torch.ones(5), 0.5),
    "singular K + 0 I": lambda: nt.kernel_ridge(_psd(rank=3), torch.ones(6), 0.0),
    "asymmetric K": lambda: nt.kernel_ridge(_K + torch.triu(torch.ones(6, 6, dtype=F64), 1),
                                             torch.ones(6), 0.5),
    "K not PSD": lambda: nt.regularised_condition_number(-_K, 0.5),
    "nan sigma": lambda: nt.regularised_condition_number(_K, float("nan")),
    "S shape": lambda: nt.eta(_K, _psd(n=5)),
    "c below kappa": lambda: nt.risk_ratio_bounds(_K, 0.01 * _K, torch.ones(6), 0.5, c=1.0),
    "no candidates": lambda: nt.rank_layer_candidates(_K, {}, 0.5),
    "negative time": lambda: nt.distance_bound(1.0, 1.0, 0.5, -1.0),
    "zero radius": lambda: nt.lambda_threshold(1.0, 1.0, 0.0),
    "theta0 shape": lambda: ntk.taylor_remainder(_M, {"0.weight": torch.zeros(2, 2)}, _X),
    "theta0 name": lambda: ntk.taylor_remainder(_M, {"nope": torch.zeros(2)}, _X),
    "linearise unknown": lambda: ntk.LinearisedModel(_M, params=["nope"]),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_input_raises_value_error(case):
    with pytest.raises(ValueError):
        BAD[case]()


def test_linearised_model_refuses_tied_parameters():
    emb = nn.Embedding(5, 3).double()
    head = nn.Linear(3, 5, bias=False).double()
    head.weight = emb.weight
    with pytest.raises(ValueError, match="tied"):
        ntk.LinearisedModel(nn.Sequential(emb, head))
