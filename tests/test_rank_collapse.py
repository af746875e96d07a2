"""Tests of lalr_core.methods.signal.rank_collapse (seed 003 sec. 4.1-4.2; E7, E8): the residual
``res(X)`` and its norms, random SAN stacks (Dong, Cordonnier & Loukas 2021; Noci et al. 2022),
the path count, and Linformer (Wang et al. 2020)."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import optimize

from lalr_core.methods.signal import linformer, rank_collapse


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ----------------------------------------------------------------------------- residual
def test_residual_zero_only_for_identical_rows():
    """Identical rows (``1 x^T``) give res = 0 in both norms; a rank-1 ``a b^T`` with unequal
    ``a`` does not (res measures token uniformity, not rank)."""
    x = rand(1, 7)
    X = x.expand(5, 7).clone()
    assert torch.all(rank_collapse.residual(X).abs() < 1e-15)
    for norm in rank_collapse.NORMS:
        assert rank_collapse.relative_residual(X, norm) < 1e-15
    a, b = torch.arange(1.0, 6.0, dtype=torch.float64)[:, None], rand(1, 7, seed=1)
    assert rank_collapse.relative_residual(a * b) > 0.3


def test_residual_invariant_to_a_constant_row():
    X, v = rand(3, 6, 5), rand(1, 5, seed=1)
    torch.testing.assert_close(rank_collapse.residual(X + 100 * v), rank_collapse.residual(X), rtol=0, atol=1e-12)


def test_minimiser_is_the_mean_for_frobenius_and_a_bounded_proxy_for_l1inf():
    """scipy's minimiser of ``||X - 1 x^T||_F^2`` is the token mean; for Dong et al.'s composite
    norm the mean is within ``2 (1 - 1/n)`` of the minimum (module docstring)."""
    X = rand(6, 3, seed=2).numpy()
    n = X.shape[0]
    fro = optimize.minimize(lambda x: np.sum((X - x) ** 2), np.ones(3))
    np.testing.assert_allclose(fro.x, X.mean(0), atol=1e-6)

    def l1inf(x):
        A = np.abs(X - x)
        return math.sqrt(A.sum(0).max() * A.sum(1).max())
    best = optimize.minimize(l1inf, X.mean(0), method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000}).fun
    proxy = float(rank_collapse.matrix_norm(rank_collapse.residual(torch.from_numpy(X)), "l1inf"))
    assert proxy == pytest.approx(l1inf(X.mean(0)))
    assert best <= proxy + 1e-12 and proxy <= 2 * (1 - 1 / n) * best


def test_norms_match_numpy():
    X = rand(6, 4, seed=3)
    A = X.numpy()
    expect = math.sqrt(np.linalg.norm(A, 1) * np.linalg.norm(A, np.inf))
    assert float(rank_collapse.matrix_norm(X, "l1inf")) == pytest.approx(expect)
    assert float(rank_collapse.matrix_norm(X)) == pytest.approx(np.linalg.norm(A))


def test_token_cosine_and_gram_sum_match_loops():
    X = rand(5, 3, seed=4).numpy()
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    cos = [U[i] @ U[j] for i in range(5) for j in range(5) if i != j]
    assert float(rank_collapse.token_cosine(torch.from_numpy(X))) == pytest.approx(np.mean(cos))
    C = sum(X[i] @ X[j] for i in range(5) for j in range(5))
    assert float(rank_collapse.token_sum_sq(torch.from_numpy(X))) == pytest.approx(C)


def test_layer_norm_is_scale_invariant():
    X = rand(2, 4, 16)
    Y = rank_collapse.layer_norm(X)
    for c in (1e-3, 7.0, 1e3):
        torch.testing.assert_close(rank_collapse.layer_norm(c * X), Y, rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(Y.mean(-1), torch.zeros(2, 4, dtype=X.dtype), atol=1e-12, rtol=0)
    torch.testing.assert_close(Y.var(-1, unbiased=False), torch.ones(2, 4, dtype=X.dtype))


# ----------------------------------------------------------------------------- collapse
def test_one_layer_is_cubic_in_the_residual():
    """``X = 1 x^T + eps R``: res(SA(X)) shrinks 1000x when eps shrinks 10x (the cube behind
    the doubly exponential rate)."""
    S, H, d, n = 1, 4, 16, 8
    W_Q, W_K = rand(S, H, d, 4, seed=1) / 4, rand(S, H, d, 4, seed=2) / 4
    W_V = rand(S, H, d, d, seed=3) / 8
    x, R = 3 * rand(1, 1, d, seed=4), rand(1, n, d, seed=5)
    out = [rank_collapse.matrix_norm(rank_collapse.residual(rank_collapse.attention_layer(x + e * R, W_Q, W_K, W_V)))
           for e in (1e-2, 1e-3)]
    assert float(out[1] / out[0]) == pytest.approx(1e-3, rel=0.05)


def test_pure_attention_collapses_and_skip_does_not(one_thread):
    """At tau = 1: pure attention falls monotonically to < 1e-6 by layer 4 (chapter 07's check:
    < 1e-6 by layer 3 on its draws); +MLP and +LN collapse too; skip keeps the relative residual
    > 0.05 at layer 10 and the 1/sqrt(L) scaling keeps it > 0.9 at L = 32."""
    cur = rank_collapse.collapse_curves(("pure", "mlp", "ln", "skip"), depth=10, seeds=6)
    pure = cur["pure"].geomean
    above = pure > 1e-13
    assert np.all(np.diff(pure[above]) < 0) and above.sum() >= 4
    assert pure[4] < 1e-6 and np.all(cur["pure"].res[:, 4] < 1e-4)
    assert cur["mlp"].geomean[5] < 1e-6 and cur["ln"].geomean[6] < 1e-6
    assert np.all(cur["pure"].cosine[:, -1] > 1 - 1e-9)
    assert cur["skip"].geomean[10] > 0.05
    scaled = rank_collapse.run_san("skip_scaled", depth=32, seeds=4)
    assert scaled.geomean[-1] > 0.9 and scaled.cosine.mean(0)[-1] < 0.2


def test_same_seed_gives_variants_the_same_draws():
    a, b = rank_collapse.run_san("pure", depth=2, seeds=2), rank_collapse.run_san("ln", depth=2, seeds=2)
    np.testing.assert_array_equal(a.res[:, 0], b.res[:, 0])
    assert a.res.shape == (2, 3) and not np.array_equal(a.res[:, 1], b.res[:, 1])


def test_doubly_exponential_fit(one_thread):
    """Oracle: ``r_l = exp(-u0 3^l)`` gives slope log 3 and exponent 3; the pure SAN's
    regression of log r_{l+1} on log r_l gives ~3."""
    r = np.exp(-0.1 * 3.0 ** np.arange(6))
    fit = rank_collapse.doubly_exponential_fit(r, floor=1e-30)
    assert fit.slope == pytest.approx(rank_collapse.LOG3) and fit.exponent == pytest.approx(3.0)
    np.testing.assert_array_equal(fit.layers, [2, 3, 4, 5])
    pure = rank_collapse.run_san("pure", depth=8, seeds=6, temperature=2.0).geomean
    fit = rank_collapse.doubly_exponential_fit(pure)
    assert 2.6 < fit.exponent < 3.4 and fit.slope > 1.0


def test_path_count_against_enumeration_and_generating_function():
    """Enumerate paths (each layer: skip or one of H heads) and compare with ``C(L, l) H^l``;
    the counts are the coefficients of ``(1 + H t)^L``; pure SAN: H^L paths of length L."""
    L, H = 4, 3
    counts = np.zeros(L + 1, dtype=int)
    for path in itertools.product(range(H + 1), repeat=L):   # 0 = skip
        counts[sum(p > 0 for p in path)] += 1
    assert [rank_collapse.path_count(L, m, H) for m in range(L + 1)] == counts.tolist()
    poly = np.polynomial.polynomial.polypow([1, H], L)
    np.testing.assert_array_equal(counts, poly)
    assert [rank_collapse.path_count(L, m, H, skip=False) for m in range(L + 1)] == [0] * L + [H ** L]
    assert sum(rank_collapse.path_count(6, m, 4) for m in range(7)) == 5 ** 6


def test_gram_growth_formula_and_monte_carlo(one_thread):
    """Noci et al.: ``E[C(X^L)]/C(X) = (1 + a^2)^L`` per branch; scaled by 1/sqrt(L) it tends to
    ``e^(a1^2 + a2^2)`` (not the notes' ``e^(a1/sqrt L + a2/sqrt L)``). With uniform attention
    (tau = 0) the skip stack's token sum is ``s (I + a W)`` per layer, so the Monte Carlo mean
    must match within 4 standard errors."""
    assert rank_collapse.gram_growth(3, 0.5, 2.0) == pytest.approx(1.25 ** 3 * 5.0 ** 3)
    lim = rank_collapse.gram_growth(10 ** 7, 0.7, 1.2, scaled=True)
    assert lim == pytest.approx(math.exp(0.49 + 1.44), rel=1e-6)
    assert abs(lim - math.exp((0.7 + 1.2) / math.sqrt(10 ** 7))) > 1
    for variant, expect in (("skip", rank_collapse.gram_growth(4, 0.8, 0.0)),
                            ("skip_scaled", rank_collapse.gram_growth(4, 0.8, 0.0, scaled=True))):
        tr = rank_collapse.run_san(variant, n=8, d=16, heads=1, depth=4, seeds=1000, temperature=0.0,
                        alpha=0.8)
        ratio = tr.gram[:, -1] / tr.gram[:, 0]
        se = ratio.std(ddof=1) / math.sqrt(ratio.size)
        assert abs(ratio.mean() - expect) < 4 * se, (variant, ratio.mean(), expect, se)


# ----------------------------------------------------------------------------- Linformer
def test_linformer_is_exact_for_identity_and_permutations():
    """k = n with E = F = I (or one permutation for both) is exact attention; E = I with
    F = a permutation Pi gives ``P Pi V`` (catches swapping E and F)."""
    Q, K, V = rand(2, 12, 8, seed=1), rand(2, 12, 8, seed=2), rand(2, 12, 5, seed=3)
    exact = linformer.softmax_attention(Q, K, V, 1.5)
    I12 = linformer.projection(12, 12, "identity")
    torch.testing.assert_close(linformer.linformer_attention(Q, K, V, I12, I12, 1.5), exact)
    Pi = I12[torch.randperm(12, generator=torch.Generator().manual_seed(0))]
    torch.testing.assert_close(linformer.linformer_attention(Q, K, V, Pi, Pi, 1.5), exact)
    torch.testing.assert_close(linformer.linformer_attention(Q, K, V, I12, Pi, 1.5),
                               linformer.attention_matrix(Q, K, 1.5) @ Pi @ V)
    pool = linformer.projection(12, 3)   # uniform attention: pooling is exact
    torch.testing.assert_close(linformer.linformer_attention(Q, K, V, pool, pool, 0.0),
                               V.mean(-2, keepdim=True).expand(2, 12, 5))


def test_linformer_error_falls_with_k(one_thread):
    """Pooled projections: the error falls with k and is 0 at k = n; higher temperature gives a
    larger error; the singular energy of P rises to 1 and uniform attention is rank 1."""
    r = linformer.linformer_errors(n=128, d=16, ks=(8, 32, 64, 128), temperatures=(0.0, 0.5, 2.0),
                            seeds=3)
    assert np.all(np.diff(r.linformer[1:], axis=1) < 0) and np.all(r.linformer[:, -1] < 1e-12)
    assert np.all(r.linformer[0] < 1e-12) and np.all(np.diff(r.linformer[1:, 0]) > 0)
    assert np.all(np.diff(r.best_rank_k[1:], axis=1) < 0)
    assert r.energy.shape == (3, 128) and np.allclose(r.energy[:, -1], 1.0)
    assert np.all(np.diff(r.energy, axis=1) >= -1e-12) and r.energy[0, 0] == pytest.approx(1.0)
    assert r.energy[1, 0] > r.energy[2, 0]   # lower temperature: more skewed spectrum


def test_singular_energy_matches_numpy():
    P = linformer.attention_matrix(rand(6, 4, seed=1), rand(6, 4, seed=2), 2.0)
    s2 = np.linalg.svd(P.numpy(), compute_uv=False) ** 2
    np.testing.assert_allclose(linformer.singular_energy(P).numpy(), np.cumsum(s2) / s2.sum())


def test_attention_timing_shape():
    t = linformer.attention_timing((64, 128), k=16, d=8, repeats=1)
    assert t.shape == (2, 2) and np.all(t > 0)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("call", [
    lambda: rank_collapse.residual(torch.ones(5)),
    lambda: rank_collapse.residual(torch.ones(3, 4, dtype=torch.int64)),
    lambda: rank_collapse.matrix_norm(torch.ones(3, 4), "nuc"),
    lambda: rank_collapse.token_cosine(torch.ones(1, 4)),
    lambda: rank_collapse.layer_norm(torch.ones(3, 4), eps=-1.0),
    lambda: rank_collapse.path_count(3, 4, 2),
    lambda: rank_collapse.path_count(3, 1, 0),
    lambda: rank_collapse.gram_growth(0),
    lambda: rank_collapse.run_san("attention"),
    lambda: rank_collapse.run_san("pure", d=30, heads=4),
    lambda: rank_collapse.run_san("pure", temperature=-1.0),
    lambda: rank_collapse.run_san("pure", depth=0),
    lambda: rank_collapse.run_san("pure", dtype=torch.int32),
    lambda: rank_collapse.collapse_curves(("pure", "bogus")),
    lambda: rank_collapse.doubly_exponential_fit([0.9, 0.8, 1e-20]),
    lambda: rank_collapse.doubly_exponential_fit([[0.1, 0.01]]),
    lambda: rank_collapse.doubly_exponential_fit([0.1, 0.01], ceiling=2.0),
    lambda: linformer.projection(10, 3, "pool"),
    lambda: linformer.projection(10, 5, "identity"),
    lambda: linformer.projection(10, 5, "random"),
    lambda: linformer.linformer_attention(torch.ones(4, 2), torch.ones(4, 2), torch.ones(4, 3),
                                   torch.ones(2, 5), torch.ones(2, 5)),
    lambda: linformer.softmax_attention(torch.ones(4, 2), torch.ones(4, 3), torch.ones(4, 3)),
    lambda: linformer.linformer_errors(n=64, ks=(48,)),
    lambda: linformer.linformer_errors(n=64, ks=(), temperatures=(1.0,)),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()
