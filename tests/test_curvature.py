"""Curvature operators: oracles are explicit float64 Hessians of tiny models, numpy's eigh and
known spectra (issue 14, library item "curvature as linear operators")."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.func import functional_call

from lalr_core.methods.curvature import operators as cv
from lalr_core.methods.curvature import top_eigen

pytestmark = [pytest.mark.usefixtures("one_thread"),
              # torch's jvp decompositions use the deprecated torch.jit.script on first use
              pytest.mark.filterwarnings("ignore:.*torch.jit.script:FutureWarning")]
RTOL = 1e-6


def _mlp(seed: int = 0, bn: bool = False) -> nn.Module:
    torch.manual_seed(seed)
    layers = [nn.Linear(3, 4)] + ([nn.BatchNorm1d(4)] if bn else []) + [nn.Tanh(), nn.Linear(4, 2)]
    model = nn.Sequential(*layers).double()
    if bn:     # non-trivial running statistics, so eval and train mode differ
        model[1].running_mean.normal_()
        model[1].running_var.uniform_(0.5, 2.0)
    return model


def _data(loss: str, n: int = 10, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 3, generator=g, dtype=torch.float64)
    y = (torch.randint(0, 2, (n,), generator=g) if loss == "ce"
         else torch.randn(n, 2, generator=g, dtype=torch.float64))
    return X, y


def _loss(name: str) -> nn.Module:
    return nn.CrossEntropyLoss() if name == "ce" else nn.MSELoss()


def _batches(X, y, size: int = 4):
    """Unequal batches (4, 4, 2), so a wrong mean weighting would show."""
    return list(zip(X.split(size), y.split(size)))


def explicit_hessian(model, loss_fn, X, y, train: bool = False) -> torch.Tensor:
    """``torch.autograd.functional.hessian`` of the loss on the flattened parameters."""
    named = list(model.named_parameters())
    sizes = [p.numel() for _, p in named]
    theta = torch.cat([p.detach().reshape(-1) for _, p in named])
    buffers = dict(model.named_buffers())

    def f(t):
        ps = {n: c.reshape(p.shape) for (n, p), c in zip(named, t.split(sizes))}
        bufs = {n: b.clone() for n, b in buffers.items()}
        return loss_fn(functional_call(model, {**ps, **bufs}, (X,)), y)

    mode = model.training
    model.train(train)
    try:
        return torch.autograd.functional.hessian(f, theta)
    finally:
        model.train(mode)


def _close(a, b, rtol=RTOL):
    scale = float(torch.as_tensor(b).abs().max())
    torch.testing.assert_close(torch.as_tensor(a), torch.as_tensor(b), rtol=rtol, atol=rtol * scale)


# ----------------------------------------------------------------------------- HVP oracles
@pytest.mark.parametrize("loss", ["ce", "mse"])
def test_hessian_operator_and_hvp_match_explicit_hessian(loss):
    model, loss_fn = _mlp(), _loss(loss)
    X, y = _data(loss)
    H = explicit_hessian(model, loss_fn, X, y)
    assert H.shape == (26, 26)
    op = cv.curvature_operator(model, loss_fn, _batches(X, y), "hessian")
    _close(cv.dense_matrix(op), H)
    hvp = cv.hvp_function(model, loss_fn, X, y)
    V = torch.randn(26, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    for v in V.T:
        _close(hvp(v), H @ v)
        _close(hvp(v), op @ v)                         # ours against curvlinops
    assert hvp.matvecs == 6
    _close(hvp.loss, loss_fn(model(X), y).detach())


def test_operator_is_eval_mode_and_hvp_train_mode_sees_batch_statistics():
    """Batch norm: the operator is the eval-mode Hessian even when the model is in train mode;
    hvp_function(train=True) is the train-mode batch Hessian and leaves the running stats alone."""
    model, loss_fn = _mlp(bn=True), _loss("ce")
    X, y = _data("ce")
    H_eval = explicit_hessian(model, loss_fn, X, y, train=False)
    H_train = explicit_hessian(model, loss_fn, X, y, train=True)
    assert not torch.allclose(H_eval, H_train, rtol=1e-3)
    stats = {n: b.clone() for n, b in model.named_buffers()}
    model.train()
    op = cv.curvature_operator(model, loss_fn, _batches(X, y))
    _close(cv.dense_matrix(op), H_eval)
    v = torch.randn(op.shape[0], dtype=torch.float64)
    _close(cv.hvp_function(model, loss_fn, X, y)(v), op @ v)
    hvp = cv.hvp_function(model, loss_fn, X, y, train=True)
    _close(hvp(v), H_train @ v)
    assert model.training and model[1].training
    for n, b in model.named_buffers():
        assert torch.equal(b, stats[n]), n


def test_ggn_equals_hessian_for_linear_model_with_squared_loss():
    torch.manual_seed(0)
    model, loss_fn = nn.Linear(3, 2).double(), _loss("mse")
    X, y = _data("mse")
    H = explicit_hessian(model, loss_fn, X, y)
    G = cv.dense_matrix(cv.curvature_operator(model, loss_fn, _batches(X, y), "ggn"))
    _close(G, H)
    # the weight block is 2/(N C) (I_2 kron X^T X)
    _close(H[:6, :6], 2 / (10 * 2) * torch.kron(torch.eye(2, dtype=torch.float64), X.T @ X))
    # not true for the tanh MLP with cross-entropy, where the GGN is PSD and the Hessian is not
    model, loss_fn = _mlp(), _loss("ce")
    X, y = _data("ce")
    G = cv.dense_matrix(cv.curvature_operator(model, loss_fn, _batches(X, y), "ggn"))
    H = explicit_hessian(model, loss_fn, X, y)
    assert (G - H).abs().max() > 1e-3 * H.abs().max()
    assert torch.linalg.eigvalsh(G).min() > -1e-12


def test_empirical_fisher_is_mean_outer_product_of_sample_gradients():
    model, loss_fn = _mlp(), _loss("ce")
    X, y = _data("ce")
    grads = []
    for xi, yi in zip(X, y):
        model.zero_grad()
        loss_fn(model(xi[None]), yi[None]).backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]))
    Gs = torch.stack(grads)
    E = cv.dense_matrix(cv.curvature_operator(model, loss_fn, _batches(X, y), "ef"))
    _close(E, Gs.T @ Gs / len(X))


def test_float32_model_casts_data_and_keeps_its_dtype():
    model, loss_fn = _mlp().float(), _loss("mse")
    X, y = _data("mse")                                         # float64 data
    op = cv.curvature_operator(model, loss_fn, (X, y))          # one (X, y) batch
    assert op.dtype == torch.float32 and op.device == torch.device("cpu")
    pairs = cv.top_eigenpairs(op, 2, tol=1e-5)
    assert pairs.vectors.dtype == torch.float32 and pairs.values.dtype == torch.float64
    H = explicit_hessian(model.double(), loss_fn, X, y)
    _close(pairs.values, torch.linalg.eigvalsh(H).flip(0)[:2], rtol=1e-4)


# ----------------------------------------------------------------------------- eigen-solvers
@pytest.mark.parametrize("which", ["LA", "LM"])
def test_eigsh_top_k_matches_eigh_of_explicit_matrix(which):
    model, loss_fn = _mlp(), _loss("ce")
    X, y = _data("ce")
    op = cv.curvature_operator(model, loss_fn, _batches(X, y))
    lam, vec = np.linalg.eigh(explicit_hessian(model, loss_fn, X, y).numpy())
    order = np.argsort(-(lam if which == "LA" else np.abs(lam)))[:3]
    pairs = cv.top_eigenpairs(op, 3, which=which)
    np.testing.assert_allclose(pairs.values.numpy(), lam[order], rtol=RTOL)
    cos = np.abs(np.sum(pairs.vectors.numpy() * vec[:, order], axis=0))
    np.testing.assert_allclose(cos, 1.0, atol=1e-6)
    assert pairs.matvecs > 0 and list(pairs.values) == sorted(pairs.values, reverse=True, key=(
        (lambda x: x) if which == "LA" else abs))
    again = cv.top_eigenpairs(op, 3, which=which)
    assert torch.equal(again.values, pairs.values)              # seeded start vector


def _gap_matrix(n: int = 200, seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """Symmetric matrix with lambda_1 = 1, lambda_2 = 0.98 (small gap), the rest in [0, 0.9]."""
    rng = np.random.default_rng(seed)
    lam = np.concatenate([[1.0, 0.98], rng.uniform(0.0, 0.9, n - 2)])
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    A = (Q * lam) @ Q.T
    return torch.from_numpy((A + A.T) / 2), lam


def test_power_iteration_finds_largest_magnitude_eigenvalue_of_a_model_hessian():
    """top_eigen.power_iteration (the one implementation) on a curvlinops operator: the signed
    Rayleigh quotient with the relative stop rule finds the eigenpair of largest |lambda|, one
    counted product per iterate; the listing's norm estimate finds its magnitude."""
    model, loss_fn = _mlp(), _loss("ce")
    X, y = _data("ce")
    H = explicit_hessian(model, loss_fn, X, y)
    lam, vec = torch.linalg.eigh(H)
    i = int(lam.abs().argmax())
    seen = []
    op = cv.CountingOperator(cv.curvature_operator(model, loss_fn, _batches(X, y)))
    res = top_eigen.power_iteration(op, estimate="rayleigh", rtol=1e-12, iters=2000,
                             callback=lambda t, v, lam_t: seen.append(t))
    assert res.converged and seen == list(range(1, res.iters + 1))
    assert op.count == res.iters == len(res.values)
    assert math.isclose(res.value, float(lam[i]), rel_tol=RTOL)
    assert abs(float(res.vector @ vec[:, i])) > 1 - 1e-6
    norm = top_eigen.power_iteration(op, estimate="norm", rtol=1e-12, iters=2000, reference=vec[:, i])
    assert math.isclose(norm.value, abs(float(lam[i])), rel_tol=RTOL)
    assert abs(norm.cos[-1]) > 1 - 1e-6


def test_power_iteration_needs_more_matvecs_than_eigsh_on_a_small_gap():
    A, _ = _gap_matrix()
    rtol = 1e-8
    pairs = cv.top_eigenpairs(A, 1, tol=rtol)
    assert abs(float(pairs.values[0]) - 1.0) <= rtol
    op = cv.CountingOperator(A)
    res = top_eigen.power_iteration(op, estimate="rayleigh", rtol=1e-14, iters=3000)
    assert op.count == res.iters == len(res.values)
    cost = cv.matvecs_to_tolerance(res.values, 1.0, rtol)
    assert cost is not None and math.isclose(res.value, 1.0, rel_tol=1e-10)
    # (0.98)^(2t) <= 1e-8 needs t ~ 450 for the Rayleigh quotient; Lanczos needs far fewer
    assert cost > 3 * pairs.matvecs, (cost, pairs.matvecs)


def test_matvecs_to_tolerance():
    assert cv.matvecs_to_tolerance([0.5, 0.9, 0.999, 1.0], 1.0, 1e-2) == 3
    assert cv.matvecs_to_tolerance([0.5, 0.9], 1.0, 1e-2) is None


# ----------------------------------------------------------------------------- trace, density
def test_hutchinson_trace_within_standard_errors_of_exact_trace():
    model, loss_fn = _mlp(), _loss("ce")
    X, y = _data("ce")
    exact = float(explicit_hessian(model, loss_fn, X, y).trace())
    op = cv.curvature_operator(model, loss_fn, _batches(X, y))
    state = torch.random.get_rng_state()
    est = cv.trace_estimate(op, 200, batch=10, seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)     # global RNG untouched
    assert est.matvecs == 200 and est.groups == 20 and est.stderr > 0
    assert abs(est.value - exact) <= 4 * est.stderr, (est, exact)
    # the error bar is calibrated: a Gaussian probe has variance 2 ||A||_F^2
    A, lam = _gap_matrix(60)
    est = cv.trace_estimate(A, 1000, batch=50, distribution="normal")
    assert abs(est.value - lam.sum()) <= 4 * est.stderr
    ratio = est.stderr / math.sqrt(2 * float((A**2).sum()) / 1000)
    assert 0.6 < ratio < 1.6, ratio          # 20 batch means: ~16% relative noise on stderr


def test_spectral_density_puts_mass_on_the_clusters():
    rng = np.random.default_rng(0)
    lam = np.concatenate([rng.normal(1.0, 0.01, 40), rng.normal(10.0, 0.01, 40)])
    Q, _ = np.linalg.qr(rng.standard_normal((80, 80)))
    A = torch.from_numpy((Q * lam) @ Q.T)
    A = (A + A.T) / 2
    sd = cv.spectral_density(A, ncv=30, num_repeats=4, num_points=2048)
    x, p = sd.lam.numpy(), sd.density.numpy()
    assert sd.boundaries[0] == pytest.approx(lam.min(), rel=1e-2)
    assert sd.boundaries[1] == pytest.approx(lam.max(), rel=1e-2)
    assert np.all(p >= 0) and np.trapezoid(p, x) == pytest.approx(1.0, abs=1e-2)
    low = np.trapezoid(np.where(x < 5.5, p, 0.0), x)
    assert 0.3 < low < 0.7
    assert p[np.abs(x - 5.5).argmin()] < 1e-3 * p.max()
    assert sd.matvecs >= 4 * 30


# ----------------------------------------------------------------------------- bad input
def test_bad_input_raises_value_error():
    model, X, y = _mlp(), *_data("ce")
    data, ce = _batches(X, y), _loss("ce")
    other = nn.Linear(2, 2).double()
    A, _ = _gap_matrix(20)
    bad = [
        lambda: cv.curvature_operator(model, ce, data, "fisher"),
        lambda: cv.curvature_operator(model, nn.CrossEntropyLoss(reduction="none"), data),
        lambda: cv.curvature_operator(model, ce, data, params=list(other.parameters())),
        lambda: cv.curvature_operator(model, ce, iter(data)),
        lambda: cv.curvature_operator(model, ce, []),
        lambda: cv.curvature_operator(model, nn.L1Loss(), _batches(*_data("mse")), "ef"),
        lambda: cv.curvature_operator("not a model", ce, data),
        lambda: cv.top_eigenpairs(A, 20),
        lambda: cv.top_eigenpairs(A, 0),
        lambda: cv.top_eigenpairs(A, 1, which="SA"),
        lambda: cv.top_eigenpairs(A + torch.triu(torch.ones(20, 20, dtype=A.dtype), 1), 1),
        lambda: cv.top_eigenpairs(torch.ones(3, 4), 1),
        lambda: top_eigen.power_iteration(A, rtol=0.0),
        lambda: top_eigen.power_iteration(A, estimate="quotient"),
        lambda: top_eigen.power_iteration(cv.as_operator(A), iters=0),
        lambda: cv.trace_estimate(A, 25, batch=10),
        lambda: cv.trace_estimate(A, 40, batch=20),
        lambda: cv.trace_estimate(A, 10, batch=10),
        lambda: cv.trace_estimate(A, 20, distribution="uniform"),
        lambda: cv.spectral_density(A, ncv=21),
        lambda: cv.spectral_density(A, ncv=10, kappa=1.0),
        lambda: cv.spectral_density(A, ncv=10, boundaries=(1.0, 0.0)),
        lambda: cv.hvp_function(model, ce, X, y)(torch.ones(3, dtype=torch.float64)),
        lambda: cv.hvp_function(model, nn.CrossEntropyLoss(reduction="none"), X, y),
        lambda: cv.matvecs_to_tolerance([1.0], 0.0, 1e-3),
    ]
    for i, call in enumerate(bad):
        with pytest.raises(ValueError):
            call()
            pytest.fail(f"bad input #{i} was accepted")


def test_dense_hessian_equals_the_curvlinops_matrix_and_keeps_the_modes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2)).double()
    X, y = torch.randn(6, 3, dtype=torch.float64), torch.tensor([0, 1, 1, 0, 1, 0])
    model.train()
    dense = cv.dense_hessian(model, nn.CrossEntropyLoss(), X, y)
    ref = cv.dense_matrix(cv.curvature_operator(model, nn.CrossEntropyLoss(), [(X, y)]))
    torch.testing.assert_close(dense, ref, rtol=1e-9, atol=1e-12)
    assert model.training and model[1].training           # modes restored
