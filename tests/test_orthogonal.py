"""Orthogonalisation, the optimiser wrapper and LARS against explicit computations."""

import math

import pytest
import torch

from lalr_core.methods.orthogonal import lars
from lalr_core.methods.orthogonal import polar, transform
from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import make_optimizer

SHAPES = [(16, 3, 3, 3), (16, 16, 3, 3), (64, 32, 3, 3), (10, 64), (32, 9), (200, 5)]


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("shape", SHAPES)
def test_svd_gives_orthonormal_rows_or_columns_in_float32(shape):
    G = torch.randn(shape, generator=_gen())
    O = polar.orthogonalise(G, "svd")
    assert O.shape == G.shape and O.dtype == torch.float32
    M = O.flatten(1)
    small = min(M.shape)
    gram = M @ M.T if M.shape[0] <= M.shape[1] else M.T @ M
    torch.testing.assert_close(gram, torch.eye(small), atol=1e-5, rtol=0)


def test_svd_is_the_nearest_orthogonal_matrix():
    """Polar factor oracle: O = G (G^T G)^(-1/2) for full-column-rank G (eq. 5.7)."""
    G = torch.randn(40, 12, generator=_gen(1), dtype=torch.float64)
    evals, evecs = torch.linalg.eigh(G.T @ G)
    expected = G @ evecs @ torch.diag(evals.rsqrt()) @ evecs.T
    torch.testing.assert_close(polar.orthogonalise(G), expected, atol=1e-10, rtol=0)
    # and it beats random orthogonal matrices in Frobenius distance (eq. 5.5)
    for seed in range(5):
        Q, _ = torch.linalg.qr(torch.randn(40, 12, generator=_gen(seed), dtype=torch.float64))
        assert (expected - G).norm() <= (Q - G).norm()


@pytest.mark.parametrize("shape", SHAPES)
def test_newton_schulz_keeps_singular_vectors_and_maps_values_by_the_polynomial(shape):
    G = torch.randn(shape, generator=_gen(2), dtype=torch.float64)
    M = G.flatten(1)
    U, S, Vh = torch.linalg.svd(M, full_matrices=False)
    expected = U @ torch.diag(polar.ns_singular_value_map(S / M.norm())) @ Vh
    got = polar.orthogonalise(G, "newton_schulz").flatten(1)
    torch.testing.assert_close(got, expected, atol=1e-8, rtol=1e-6)


def test_newton_schulz_singular_values_lie_in_the_documented_band():
    for shape in [(16, 144), (64, 576), (576, 64), (10, 64)]:
        G = torch.randn(shape, generator=_gen(3))
        s = torch.linalg.svdvals(polar.orthogonalise(G, "newton_schulz"))
        assert 0.681 <= s.min() and s.max() <= 1.135 + 1e-4, (shape, s.min(), s.max())
    x = torch.linspace(0.01, 1, 1000, dtype=torch.float64)
    band = polar.ns_singular_value_map(x)
    assert 0.681 <= band.min() and band.max() <= 1.135


def test_normalisations_match_hand_computation():
    G = torch.tensor([[3.0, 4.0], [0.0, 2.0]])
    torch.testing.assert_close(polar.normalise(G), G / math.sqrt(29))
    torch.testing.assert_close(polar.component_normalise(G), torch.tensor([[.6, .8], [0., 1.]]))
    assert torch.isnan(polar.component_normalise(torch.tensor([[0.0, 0.0], [1.0, 0.0]]))).any()


def test_bad_inputs_raise_before_compute():
    with pytest.raises(ValueError, match="unknown orthogonalisation method"):
        polar.orthogonalise(torch.randn(3, 3), "qr")
    with pytest.raises(ValueError, match=">= 2 dims"):
        polar.orthogonalise(torch.randn(3), "svd")
    model = build_model("basic_cnn", in_channels=1, image_size=28)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="ndim >= 2"):
        transform.GradientTransform(opt, [model.bn1.weight])
    with pytest.raises(ValueError, match="not held"):
        transform.GradientTransform(opt, [torch.nn.Parameter(torch.randn(3, 3))])
    with pytest.raises(ValueError, match="unknown gradient transform"):
        transform.GradientTransform(opt, [model.conv1.weight], transform="whiten")
    with pytest.raises(ValueError, match="unknown layer rule"):
        transform.transformed_params(model, "dense")
    with pytest.raises(ValueError, match="grad_transform"):
        RunConfig(methods=(transform.GradTransform("orthogonal"),))
    with pytest.raises(ValueError, match="bad settings for method 'grad_transform'"):
        RunConfig(methods=({"kind": "grad_transform", "orth_method": "svd"},))
    with pytest.raises(ValueError, match="orth method"):
        transform.GradTransform("orth", method="qr")


def test_transformed_params_rules():
    model = build_model("basic_cnn", in_channels=1, image_size=28)
    assert transform.transformed_params(model, "all") == ["conv1.weight", "conv2.weight", "conv3.weight",
                                                "fc.weight"]
    assert transform.transformed_params(model, "conv") == ["conv1.weight", "conv2.weight", "conv3.weight"]
    assert transform.transformed_params(model, "all", prefix="conv2") == ["conv2.weight"]


def _steps(cfg: RunConfig, model, X, y, n=1):
    opt = make_optimizer(cfg, model)
    for _ in range(n):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X), y).backward()
        opt.step()
    return opt


def test_disabled_wrapper_steps_exactly_as_the_plain_optimiser():
    X, y = torch.randn(8, 1, 28, 28, generator=_gen(4)), torch.arange(8) % 10
    for optimizer in ("sgdm", "adam", "adamw"):
        cfg = RunConfig(model="basic_cnn", optimizer=optimizer, lr=0.05, wd=1e-3)
        torch.manual_seed(0)
        a = build_model("basic_cnn", in_channels=1, image_size=28)
        b = build_model("basic_cnn", in_channels=1, image_size=28)
        b.load_state_dict(a.state_dict())
        _steps(cfg, a, X, y, n=2)
        plain = {"sgdm": torch.optim.SGD(b.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3),
                 "adam": torch.optim.Adam(b.parameters(), lr=0.05, weight_decay=1e-3),
                 "adamw": torch.optim.AdamW(b.parameters(), lr=0.05, weight_decay=1e-3)}[optimizer]
        for _ in range(2):
            plain.zero_grad()
            torch.nn.functional.cross_entropy(b(X), y).backward()
            plain.step()
        for pa, pb in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(pa, pb, rtol=0, atol=0)


def test_orth_sgdm_step_matches_eqs_5_8_and_5_9_with_coupled_weight_decay():
    """One step: v = O + wd*theta (buffer initialised to d_p), theta -= lr*v; biases untouched."""
    X, y = torch.randn(8, 1, 28, 28, generator=_gen(5)), torch.arange(8) % 10
    torch.manual_seed(1)
    model = build_model("basic_cnn", in_channels=1, image_size=28)
    ref = {n: p.detach().clone() for n, p in model.named_parameters()}
    loss = torch.nn.functional.cross_entropy(model(X), y)
    grads = dict(zip(ref, torch.autograd.grad(loss, list(model.parameters()))))
    model.zero_grad()
    cfg = RunConfig(model="basic_cnn", optimizer="sgdm", lr=0.1, momentum=0.9, wd=1e-2,
                    methods=(transform.GradTransform("orth", layers="conv"),))
    _steps(cfg, model, X, y)
    for name, p in model.named_parameters():
        g = grads[name]
        if name.startswith("conv") and name.endswith("weight"):
            U, _, Vh = torch.linalg.svd(g.flatten(1), full_matrices=False)
            g = (U @ Vh).reshape(g.shape)
        torch.testing.assert_close(p.detach(), ref[name] - 0.1 * (g + 1e-2 * ref[name]),
                                   atol=1e-6, rtol=1e-5)


def test_grouped_transform_is_per_layer_not_across_layers():
    """Same-shaped tensors are stacked for speed; each must still be orthogonalised alone."""
    a, b = torch.nn.Parameter(torch.zeros(4, 6)), torch.nn.Parameter(torch.zeros(4, 6))
    opt = torch.optim.SGD([a, b], lr=1.0)
    wrapper = transform.GradientTransform(opt, [a, b])
    ga, gb = torch.randn(4, 6, generator=_gen(6)), 100 * torch.randn(4, 6, generator=_gen(7))
    a.grad, b.grad = ga.clone(), gb.clone()
    wrapper.transform_grads()
    torch.testing.assert_close(a.grad, polar.orthogonalise(ga))
    torch.testing.assert_close(b.grad, polar.orthogonalise(gb))


def test_svd_failure_falls_back_per_tensor_and_continues(monkeypatch):
    params = [torch.nn.Parameter(torch.zeros(4, 6)) for _ in range(3)]
    opt = torch.optim.SGD(params, lr=1.0)
    wrapper = transform.GradientTransform(opt, params)
    grads = [torch.randn(4, 6, generator=_gen(i)) for i in range(3)]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    real_svd, calls = torch.linalg.svd, {"n": 0}

    def flaky(M, full_matrices=True):
        calls["n"] += 1
        if M.ndim == 3 or torch.equal(M.float().mT, grads[1]):  # batched call and tensor 1 fail
            raise torch.linalg.LinAlgError("did not converge")
        return real_svd(M, full_matrices=full_matrices)

    monkeypatch.setattr(torch.linalg, "svd", flaky)
    with pytest.warns(RuntimeWarning, match="Newton-Schulz"):
        wrapper.transform_grads()
    monkeypatch.setattr(torch.linalg, "svd", real_svd)
    torch.testing.assert_close(params[0].grad, polar.orthogonalise(grads[0]))
    torch.testing.assert_close(params[2].grad, polar.orthogonalise(grads[2]))  # not skipped
    torch.testing.assert_close(params[1].grad, polar.newton_schulz(grads[1]))
    assert wrapper.stats["svd_fallbacks"] == 1 and wrapper.stats["skipped_tensors"] == 0


def test_lars_step_matches_hand_computation():
    w = torch.nn.Parameter(torch.tensor([[3.0, 4.0]]))
    b = torch.nn.Parameter(torch.tensor([1.0]))
    opt = lars.LARS([{"params": [w]}, {"params": [b], "exclude": True}], lr=0.5, momentum=0.9,
                    wd=0.1, eta=0.01)
    w.grad, b.grad = torch.tensor([[1.0, 0.0]]), torch.tensor([2.0])
    opt.step()
    d = torch.tensor([[1.3, 0.4]])
    expected_w = torch.tensor([[3.0, 4.0]]) - 0.5 * d * 0.01 * 5.0 / d.norm()
    torch.testing.assert_close(w.detach(), expected_w)
    torch.testing.assert_close(b.detach(), torch.tensor([0.0]))  # excluded: plain momentum SGD
    with pytest.raises(ValueError):
        lars.LARS([w], lr=-1)


# ----------------------------------------------------------------------------- null space
def _ce_classifier(C=10, d=64, B=256, seed=8, dtype=torch.float64):
    """A random linear classifier, its cross-entropy weight gradient by autograd, and the
    closed form (softmax(Z) - onehot(y))^T H / B of the same gradient."""
    g = _gen(seed)
    H = torch.randn(B, d, generator=g, dtype=dtype)
    W = torch.nn.Parameter(0.1 * torch.randn(C, d, generator=g, dtype=dtype))
    b = torch.nn.Parameter(torch.randn(C, generator=g, dtype=dtype))
    y = torch.randint(0, C, (B,), generator=g)
    torch.nn.functional.cross_entropy(H @ W.T + b, y).backward()
    R = torch.softmax(H @ W.detach().T + b.detach(), 1) - torch.nn.functional.one_hot(y, C)
    return W.grad, R.T @ H / B


def _previous_svd_polar(M):
    """The behaviour before the null rule existed: thin SVD of the tall side, U @ Vh."""
    if M.shape[-2] < M.shape[-1]:
        return _previous_svd_polar(M.mT).mT
    U, _, Vh = torch.linalg.svd(M, full_matrices=False)
    return U @ Vh


def _centred(O):
    return O - O.mean(-2, keepdim=True)


def test_ce_classifier_gradient_has_rows_summing_to_zero_and_rank_at_most_c_minus_1():
    G, closed = _ce_classifier()
    torch.testing.assert_close(G, closed, atol=1e-14, rtol=0)     # the closed form
    assert G.sum(0).abs().max() < 1e-15                           # 1^T G = 0 (softmax rows)
    assert torch.linalg.matrix_rank(G) == G.shape[0] - 1
    S = torch.linalg.svdvals(G)
    assert S[-1] / S[0] < 1e-14 < polar.null_tolerance(G)


def test_complete_has_unit_singular_values_and_is_the_sources_call():
    G, _ = _ce_classifier()
    O = polar.svd_polar(G, "complete")
    torch.testing.assert_close(torch.linalg.svdvals(O), torch.ones(10, dtype=G.dtype))
    U, _, Vh = torch.linalg.svd(G, full_matrices=False)           # orth_optim's call, as laid out
    assert torch.equal(O, U @ Vh)
    N = O - polar.svd_polar(G, "drop")                             # the completed direction:
    torch.testing.assert_close(N, N.mean(0, keepdim=True).expand_as(N))   # one common row
    torch.testing.assert_close(N.norm(), torch.tensor(1.0, dtype=G.dtype))  # of unit size
    torch.testing.assert_close(G @ N[0], torch.zeros(10, dtype=G.dtype), atol=1e-14, rtol=0)


def test_drop_is_the_limit_of_newton_schulz_on_a_rank_deficient_matrix():
    """Cubic Newton-Schulz ``X <- 1.5 X - 0.5 X X^T X`` maps 0 to 0 and every other singular
    value of the spectrally normalised matrix to 1; the float null value (~1e-16 relative)
    grows only x1.5 per step, so after 40 steps it is ~1e-9 while the others have converged.
    (Run for ~90 steps it would reach 1: an unbounded iteration completes from rounding noise.)"""
    G, _ = _ce_classifier()
    X = G / torch.linalg.matrix_norm(G, 2)                        # spectral norm 1
    for _ in range(40):
        X = 1.5 * X - 0.5 * X @ X.T @ X
    drop = polar.svd_polar(G, "drop")
    torch.testing.assert_close(drop, X, atol=1e-8, rtol=0)
    s = torch.linalg.svdvals(drop)
    torch.testing.assert_close(s, torch.tensor([1.0] * 9 + [0.0], dtype=G.dtype), atol=1e-12,
                               rtol=0)
    ns = polar.newton_schulz(G)                                    # Muon's quintic: no null part
    assert ns.sum(0).norm() / ns.norm() < 1e-12
    assert torch.equal(polar.orthogonalise(G, "svd", null="drop"), drop)


@pytest.mark.parametrize("shape", SHAPES)
def test_on_full_rank_matrices_both_rules_are_u_vt_and_the_previous_behaviour(shape):
    G = torch.randn(shape, generator=_gen(9)).flatten(1)
    U, _, Vh = torch.linalg.svd(G.double(), full_matrices=False)
    for null in polar.NULL_RULES:
        torch.testing.assert_close(polar.svd_polar(G, null), (U @ Vh).float(), atol=2e-5, rtol=0)
    assert torch.equal(polar.svd_polar(G), _previous_svd_polar(G))  # default: bit for bit


def test_default_changes_only_the_completed_direction_of_the_previous_behaviour():
    G, _ = _ce_classifier()
    new, old = polar.orthogonalise(G), _previous_svd_polar(G)
    torch.testing.assert_close(_centred(new), _centred(old), atol=1e-12, rtol=0)
    assert (new - old).abs().max() > 1e-3      # the arbitrary direction: another completion


def test_batched_complete_recomputes_only_deficient_matrices_alone():
    G, _ = _ce_classifier(d=64)
    F = torch.randn(10, 64, generator=_gen(10), dtype=torch.float64)
    Z = torch.zeros(10, 64, dtype=torch.float64)
    out = polar.svd_polar(torch.stack([G, F, Z]), "complete")
    for M, O in zip((G, F, Z), out):
        U, _, Vh = torch.linalg.svd(M, full_matrices=False)
        assert torch.equal(O, U @ Vh) if M is not F else torch.equal(O, _previous_svd_polar(M))
    assert torch.equal(polar.svd_polar(Z, "drop"), Z)                # nothing to keep


def test_wrapper_drops_the_classifiers_null_direction():
    G, _ = _ce_classifier(dtype=torch.float32)
    W = torch.nn.Parameter(torch.zeros_like(G))
    wrapper = transform.GradientTransform(torch.optim.SGD([W], lr=1.0), [W], null="drop")
    W.grad = G.clone()
    wrapper.transform_grads()
    assert W.grad.sum(0).norm() < 1e-5 and "null='drop'" in repr(wrapper)
    W.grad = G.clone()
    transform.GradientTransform(torch.optim.SGD([W], lr=1.0), [W]).transform_grads()
    torch.testing.assert_close(W.grad.sum(0).norm(), torch.tensor(10 ** 0.5), atol=1e-4, rtol=0)


def test_null_rule_is_resolved_into_the_config_and_checked():
    assert transform.GradTransform("orth").null == "complete"              # the source's
    assert transform.GradTransform("orth") == transform.GradTransform("orth", null="complete")
    assert transform.GradTransform("orth", method="newton_schulz").null == "drop"
    assert transform.GradTransform("orth", null="drop").key()["null"] == "drop"
    assert transform.GradTransform("norm").null is None
    with pytest.raises(ValueError, match="cannot complete"):
        transform.GradTransform("orth", method="newton_schulz", null="complete")
    with pytest.raises(ValueError, match="null-space rule"):
        transform.GradTransform("orth", null="zero")
    with pytest.raises(ValueError, match="transform 'orth' only"):
        transform.GradTransform("norm", null="drop")
    with pytest.raises(ValueError, match="null_rtol"):
        transform.GradTransform("orth", null_rtol=2.0)
    with pytest.raises(ValueError, match="null-space rule"):
        polar.svd_polar(torch.eye(3), "zero")
