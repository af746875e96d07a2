"""ESD, power-law alpha (eqs. 1.5-1.9), HT-SR metrics (eqs. 3.2-3.4), Marchenko-Pastur (1.6)."""

import math
import warnings

import numpy as np
import pytest
import torch
from scipy import integrate
from torch import nn

from lalr_core.methods.spectra import (
    alphas,
    esd,
    esds,
    fit_alpha,
    htsr_metrics,
    layer_matrices,
    marchenko_pastur_pdf,
    matrix_entropy,
    mp_edges,
    rand_distance,
)

PL_RANGE = {"alpha": [1, 20]}      # powerlaw 2.0 clips alpha to [0, 3] by default


pytestmark = pytest.mark.usefixtures("one_thread")


def _pareto(alpha, n, seed):
    # pdf ~ x^-alpha on [1, inf): numpy's shape parameter is alpha - 1
    return np.random.default_rng(seed).pareto(alpha - 1, n) + 1.0


def _powerlaw_fit(x, **kw):
    powerlaw = pytest.importorskip("powerlaw")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return powerlaw.Fit(x, verbose=False, parameter_ranges=PL_RANGE, **kw)


# ---------------------------------------------------------------- alpha MLE vs powerlaw


@pytest.mark.parametrize("alpha", [2, 3, 4])
@pytest.mark.parametrize("n", [100, 1000])
def test_fixed_xmin_alpha_matches_powerlaw(alpha, n):
    x = _pareto(alpha, n, seed=alpha * n)
    ours = fit_alpha(x, xmin="median")
    ref = _powerlaw_fit(x, xmin=ours["xmin"]).power_law
    assert ours["alpha"] == pytest.approx(ref.alpha, rel=0.02)
    fixed = fit_alpha(x, xmin=ours["xmin"])
    assert fixed["alpha"] == pytest.approx(ours["alpha"], rel=1e-12)
    assert fixed["n_tail"] == ours["n_tail"] == n - n // 2


@pytest.mark.parametrize("alpha,n", [(2, 100), (3, 100), (4, 100), (3, 400)])
def test_ks_xmin_matches_powerlaw(alpha, n):
    x = _pareto(alpha, n, seed=alpha * n)
    ours = fit_alpha(x, xmin="ks")
    ref = _powerlaw_fit(x)
    assert ours["xmin"] == pytest.approx(ref.xmin, rel=1e-12)
    assert ours["alpha"] == pytest.approx(ref.power_law.alpha, rel=0.02)
    assert ours["ks_distance"] == pytest.approx(ref.power_law.D, abs=1e-9)


def test_alpha_recovers_truth_and_is_scale_invariant():
    x = _pareto(3, 2000, seed=1)
    for rule in ("median", "ks"):
        a = fit_alpha(x, xmin=rule)["alpha"]
        assert a == pytest.approx(3, abs=0.15)
        assert fit_alpha(7.3 * x, xmin=rule)["alpha"] == pytest.approx(a, rel=1e-10)


def test_median_rule_is_tempbalance_index():
    lam = torch.arange(1.0, 12.0)                       # N = 11 -> i = int(11 / 2) = 5
    out = fit_alpha(lam, xmin="median")
    tail = lam[5:].double()
    assert out["xmin"] == 6.0 and out["n_tail"] == 6
    assert out["alpha"] == pytest.approx(1 + 6 / float(torch.log(tail / 6).sum()))


# ---------------------------------------------------------------- ESD


@pytest.mark.parametrize("shape", [(30, 7), (7, 30), (12, 12)])
def test_esd_smaller_gram_matches_literal_wtw(shape):
    W = torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    N = max(shape)
    literal = torch.linalg.eigvalsh(W.T @ W / N)        # (m, m), eq. after 1.6
    k = min(shape)
    ours = esd(W, normalize=True)
    assert ours.dtype == torch.float64 and ours.shape == (k,)
    assert torch.all(ours[1:] >= ours[:-1])
    torch.testing.assert_close(ours, literal[-k:], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(esd(W), ours * N)


def test_esd_of_conv_kernel_flatten_and_slices():
    conv = nn.Conv2d(6, 4, 3)
    mats = layer_matrices(nn.Sequential(conv), conv="flatten")
    W = conv.weight.detach().double().reshape(4, -1)               # (4, 54)
    literal = torch.linalg.eigvalsh(W.T @ W)[-4:]
    torch.testing.assert_close(esd(mats["0"]), literal, rtol=1e-9, atol=1e-12)
    sl = layer_matrices(nn.Sequential(conv), conv="slices", conv_norm=0.5)["0"]
    assert sl.shape == (9, 4, 6)
    Wk = (conv.weight.detach() * 0.5**0.5).double()                 # scaled as stored (fp32)
    pooled = torch.cat([torch.linalg.svdvals(Wk[:, :, i, j])
                        for i in range(3) for j in range(3)]) ** 2
    torch.testing.assert_close(esd(sl), torch.sort(pooled).values, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("conv", ["flatten", "slices"])
def test_esds_batched_equals_per_layer(conv):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Conv2d(8, 8, 3), nn.Conv2d(8, 8, 3),
                          nn.Flatten(), nn.Linear(20, 8), nn.Linear(8, 8), nn.Linear(8, 8))
    mats = layer_matrices(model, conv=conv)
    batched = esds(model, conv=conv)
    assert list(batched) == list(mats) == ["0", "1", "2", "4", "5", "6"]
    for name, W in mats.items():
        torch.testing.assert_close(batched[name], esd(W))
    df = alphas(model, xmin="median", conv=conv)
    assert list(df.index) == list(mats) and np.isfinite(df["alpha"]).all()


def test_default_conv_is_tempbalance_and_weightwatcher_kernel_slices():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Conv2d(8, 6, 3), nn.Flatten(), nn.Linear(24, 5))
    mats, sl = layer_matrices(model), layer_matrices(model, conv="slices")
    assert [tuple(W.shape) for W in mats.values()] == [(9, 8, 3), (9, 6, 8), (5, 24)]
    assert all(torch.equal(mats[k], sl[k]) for k in sl)
    for k, lam in esds(model).items():
        assert torch.equal(lam, esds(model, conv="slices")[k])
    assert alphas(model).equals(alphas(model, conv="slices"))
    assert htsr_metrics(model).equals(htsr_metrics(model, conv="slices"))
    assert not alphas(model).equals(alphas(model, conv="flatten"))


# ---------------------------------------------------------------- Marchenko-Pastur


def test_gaussian_esd_inside_mp_edges_and_follows_pdf():
    W = torch.randn(400, 1000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    lam = esd(W, normalize=True)
    y = 0.4
    a, b = mp_edges(y)
    assert lam.min() > a * 0.9 and lam.max() < b * 1.03
    hist, edges = np.histogram(lam.numpy(), bins=20, range=(a, b), density=True)
    mids = torch.as_tensor(0.5 * (edges[1:] + edges[:-1]))
    pdf = marchenko_pastur_pdf(mids, y).numpy()
    assert np.abs(hist - pdf).sum() * (edges[1] - edges[0]) < 0.1      # L1 distance


@pytest.mark.parametrize("y,s2", [(0.1, 1.0), (0.5, 2.0), (1.0, 0.3)])
def test_mp_pdf_integrates_to_one(y, s2):
    a, b = mp_edges(y, s2)
    total, _ = integrate.quad(lambda x: float(marchenko_pastur_pdf(x, y, s2)), a, b, limit=200)
    assert total == pytest.approx(1.0, abs=1e-6)
    assert float(marchenko_pastur_pdf(b * 1.01, y, s2)) == 0.0


# ---------------------------------------------------------------- HT-SR metrics


def test_metrics_on_diagonal_matrix_closed_forms():
    s = torch.tensor([4.0, 3.0, 2.0, 1.0, 0.5, 0.25, 0.125, 0.1], dtype=torch.float64)
    W = torch.zeros(8, 12, dtype=torch.float64)
    W[range(8), range(8)] = s
    df = htsr_metrics({"d": W}, xmin="median")
    row = df.loc["d"]
    lam = s**2
    a = fit_alpha(lam, xmin="median")["alpha"]
    assert row["stable_rank"] == pytest.approx(float(lam.sum() / lam.max()))           # eq. 3.4
    p = lam / lam.sum()
    assert row["entropy"] == pytest.approx(float(-(p * p.log()).sum() / math.log(8)))  # eq. 3.2
    assert row["norm"] == pytest.approx(float(lam.sum()))
    assert row["log_norm"] == pytest.approx(math.log10(float(lam.sum())))
    assert row["log_frobenius_norm"] == pytest.approx(math.log10(float(torch.linalg.norm(W))))
    assert row["spectral_norm"] == pytest.approx(16.0)
    assert row["log_spectral_norm"] == pytest.approx(math.log10(16.0))
    assert row["alpha"] == pytest.approx(a)
    assert row["alpha_weighted"] == pytest.approx(a * math.log10(16.0))
    assert row["log_alpha_norm"] == pytest.approx(math.log10(float((lam**a).sum())))
    assert 0.0 <= row["rand_distance"] <= math.log(2)


def test_entropy_limits_and_rand_distance_of_random_matrix():
    assert matrix_entropy(torch.ones(5, dtype=torch.float64), (5, 5)) == pytest.approx(1.0)
    assert matrix_entropy(torch.tensor([3.0, 0.0, 0.0]), (3, 3)) == 0.0
    g = torch.Generator().manual_seed(0)
    iid = torch.randn(60, 120, generator=g, dtype=torch.float64)
    low_rank = torch.randn(60, 2, generator=g, dtype=torch.float64) @ torch.randn(
        2, 120, generator=g, dtype=torch.float64) + 0.01 * iid
    assert rand_distance(iid) < rand_distance(low_rank)


@pytest.mark.parametrize("conv", ["flatten", "slices"])
def test_htsr_metrics_on_model_has_all_columns(conv):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Flatten(), nn.Linear(64, 32))
    df = htsr_metrics(model, xmin="ks", conv=conv)
    cols = {"alpha", "rand_distance", "stable_rank", "entropy", "norm", "log_norm",
            "log_frobenius_norm", "spectral_norm", "log_spectral_norm", "alpha_weighted",
            "log_alpha_norm"}
    assert cols <= set(df.columns) and list(df.index) == ["0", "2"]
    assert np.isfinite(df[sorted(cols)].to_numpy(dtype=float)).all()


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs_raise_value_error():
    with pytest.raises(ValueError, match="weight matrix"):
        esd(torch.ones(5))
    with pytest.raises(ValueError, match="1-D"):
        fit_alpha(torch.ones(3, 3))
    with pytest.raises(ValueError, match="xmin must be one of"):
        fit_alpha(torch.arange(1.0, 10.0), xmin="mean")
    with pytest.raises(ValueError, match="empty tail"):
        fit_alpha(torch.arange(1.0, 10.0), xmin=100.0)
    with pytest.raises(ValueError, match="conv must be"):
        layer_matrices(nn.Linear(2, 2), conv="unfold")
    with pytest.raises(ValueError, match="ratio"):
        mp_edges(1.5)
    with pytest.raises(ValueError, match="nn.Module or a dict"):
        esds([torch.ones(2, 2)])


# ----------------------------------------------------------------------------- numerical rank
# `_gram_eigvals` sets eigenvalues within rounding of 0 to exactly 0 (pruned, zero-row layers).

def _with_zero_rows(n, m, rows, seed=0):
    W = np.random.default_rng(seed).standard_normal((n, m))
    W[rows] = 0.0
    return W


@pytest.mark.parametrize("n, m, rows", [(20, 50, [0, 7, 13]), (32, 32, [1, 2, 30, 31]),
                                        (40, 100, list(range(0, 40, 4)))])
def test_esd_zero_rows_give_exact_zeros_and_svd_squared_rest(n, m, rows):
    W = _with_zero_rows(n, m, rows)
    lam = esd(torch.from_numpy(W)).numpy()
    k = min(n, m) - np.linalg.matrix_rank(W)
    assert k == len(rows) and lam.shape == (min(n, m),)
    assert np.count_nonzero(lam == 0.0) == k and np.all(lam[:k] == 0.0) and np.all(lam[k:] > 0)
    sv2 = np.sort(np.linalg.svd(W, compute_uv=False) ** 2)[k:]
    np.testing.assert_allclose(lam[k:], sv2, rtol=1e-10)
    # a scaled copy: the tolerance is relative, so the same zeros
    assert np.count_nonzero(esd(torch.from_numpy(W * 1e-6)).numpy() == 0) == k


def test_esd_zero_columns_of_a_tall_matrix_and_zero_rows_that_do_not_cut_the_rank():
    W = _with_zero_rows(50, 20, [3, 4, 5])              # tall 50 x 20, zero rows: full rank
    lam = esd(torch.from_numpy(W)).numpy()
    assert np.linalg.matrix_rank(W) == 20 and np.all(lam > 0)
    Wc = _with_zero_rows(20, 50, [2, 9], seed=1).T     # tall 50 x 20 with 2 zero columns
    lam = esd(torch.from_numpy(Wc)).numpy()
    assert np.count_nonzero(lam == 0) == 20 - np.linalg.matrix_rank(Wc) == 2


def test_esd_full_rank_random_matrix_has_no_zeros_and_conv_slices_per_slice_tolerance():
    W = torch.from_numpy(np.random.default_rng(2).standard_normal((30, 70)))
    assert (esd(W) > 0).all()
    # slices: a pruned conv [c_out, c_in, 3, 3] with 3 zero output channels -> 3 zeros per
    # kernel position; an all-zero slice (x1e-8 scale of another) stays a zero
    conv = nn.Conv2d(12, 10, 3, bias=False).double()
    with torch.no_grad():
        conv.weight[[0, 4, 9]] = 0.0
    S = layer_matrices(conv, conv="slices")[""]                          # (9, 10, 12)
    lam = esd(S)
    assert lam.numel() == 9 * 10 and int((lam == 0).sum()) == 9 * 3
    ref = np.concatenate([np.linalg.svd(s, compute_uv=False) ** 2 for s in S.numpy()])
    np.testing.assert_allclose(np.sort(lam.numpy())[27:], np.sort(ref)[27:], rtol=1e-10)
    stack = torch.stack([S[0], S[1] * 1e-8, torch.zeros_like(S[0])])
    lam = esd(stack)
    assert int((lam == 0).sum()) == 3 + 3 + 10   # small slice keeps its own non-zeros


@pytest.mark.parametrize("xmin", ["median", "ks"])
def test_fit_alpha_of_pruned_matrix_equals_matrix_without_zero_rows(xmin):
    rows = [1, 5, 6, 20, 33, 34, 35]
    W = _with_zero_rows(48, 120, rows, seed=3)
    kept = np.delete(W, rows, axis=0)
    lam_p, lam_k = esd(torch.from_numpy(W)), esd(torch.from_numpy(kept))
    assert int((lam_p == 0).sum()) == len(rows) and lam_k.numel() == 48 - len(rows)
    fp, fk = fit_alpha(lam_p, xmin), fit_alpha(lam_k, xmin)
    assert fp["n_tail"] == fk["n_tail"]
    assert fp["alpha"] == pytest.approx(fk["alpha"], rel=1e-9)
    assert fp["xmin"] == pytest.approx(fk["xmin"], rel=1e-9)
    # TempBalance's count (eig_floor=None) keeps the 7 zeros in the median rule's N = 48
    tb = fit_alpha(lam_p, xmin, eig_floor=None)
    assert tb["n_tail"] == (48 - 48 // 2 if xmin == "median" else fp["n_tail"])


# ----------------------------------------------------------------------------- median-rule count
# TempBalance's convention (YefanZhou/TempBalance tempbalance.py `net_esd_estimator`,
# pl_fitting="median", default filter_zeros=False): N = every eigenvalue of the layer, zeros
# included; x_min = eigs[int(N / xmin_pos)]; alpha = 1 + n / (sum log eigs[i:] - n log x_min).

def _tempbalance_median(eigs, xmin_pos=2):
    """TempBalance's median-rule estimator restated literally in numpy (the oracle)."""
    eigs = np.sort(np.asarray(eigs, dtype=np.float64))
    N = len(eigs)
    i = int(N / xmin_pos)
    n = float(N - i)
    with np.errstate(divide="ignore", invalid="ignore"):   # entries below x_min are not used
        log_eigs = np.log(eigs)
    return 1 + n / (np.sum(log_eigs[i:]) - n * log_eigs[i]), eigs[i], N - i


def _rank10():
    g = np.random.default_rng(1)
    return g.standard_normal((200, 10)) @ g.standard_normal((10, 150))      # 200 x 150, rank 10


def test_median_rule_with_tempbalance_count_matches_tempbalance_on_rank_10_matrix():
    W = _rank10()
    lam = np.linalg.eigvalsh(W.T @ W)       # 150 eigenvalues of W^T W, 140 of them rounding
    assert np.linalg.matrix_rank(W) == 10 and lam.shape == (150,)
    assert 0 < np.count_nonzero(lam <= 0) < 75 and lam[75] > 0   # x_min lies in the noise
    want, want_xmin, want_n = _tempbalance_median(lam)
    got = fit_alpha(torch.from_numpy(lam), "median", eig_floor=None)
    assert got["n_tail"] == want_n == 75 and got["xmin"] == pytest.approx(want_xmin, rel=1e-12)
    assert got["alpha"] == pytest.approx(want, rel=1e-12)
    # the default count drops the eigenvalues <= 0 first, so N is smaller
    assert fit_alpha(torch.from_numpy(lam), "median")["n_tail"] < 75


def test_median_rule_on_exact_zeros_of_esd_tempbalance_count_gives_the_limit_alpha_1():
    W = _rank10()
    lam = esd(torch.from_numpy(W))
    assert lam.numel() == 150 and int((lam == 0).sum()) == 140
    # the default (eig_floor=0) counts the 10 non-zero eigenvalues: a 5-value tail
    assert fit_alpha(lam, "median")["n_tail"] == 5
    tb = fit_alpha(lam, "median", eig_floor=None)
    assert tb == {"alpha": 1.0, "xmin": 0.0, "n_tail": 75, "ks_distance": 1.0}
    assert alphas({"w": torch.from_numpy(W)}, eig_floor=None).loc["w", "alpha"] == 1.0
    # TempBalance's own value reads the rounding noise at x_min: near 1, nearer for less noise
    a64 = _tempbalance_median(np.linalg.svd(W, compute_uv=False) ** 2)[0]
    a32 = _tempbalance_median(np.linalg.svd(W.astype(np.float32), compute_uv=False)
                              .astype(np.float64) ** 2)[0]
    assert 1.0 < a64 < a32 < 1.25


def test_full_rank_alpha_is_unchanged_and_equal_under_both_counts():
    W = torch.from_numpy(np.random.default_rng(7).standard_normal((200, 150)))
    lam = esd(W)
    assert (lam > 0).all()
    old = fit_alpha(lam, "median")
    # `fit_alpha(esd(W))["alpha"]` of this W computed by the code before the eig_floor=None
    # option existed (lalr_core.methods.spectra, one thread), hard-coded: must not move
    assert old["alpha"] == 2.352717030486675 and old["n_tail"] == 75
    assert fit_alpha(lam, "median", eig_floor=None) == old                 # bit-identical
    assert alphas({"w": W}, eig_floor=None).loc["w", "alpha"] == old["alpha"]
    assert old["alpha"] == pytest.approx(_tempbalance_median(lam.numpy())[0], rel=1e-12)
