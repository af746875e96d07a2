"""WeightWatcher's convention (`alphas(model, **WW_CONVENTION)`), the KS scan and the threaded
ESD: against WeightWatcher 0.7.7 when installed, else against explicit per-candidate loops."""

import contextlib
import io
import logging
import math

import numpy as np
import pytest
import torch
from torch import nn

from lalr_core.methods.spectra import WW_CONVENTION, alphas, esds, fit_alpha, layer_matrices
from lalr_core.methods.spectra import power_law as pl
from lalr_core.methods.spectra.matrices import worker_pool

pytestmark = pytest.mark.usefixtures("one_thread")


def _spectrum(kind, n, seed):
    g = np.random.default_rng(seed)
    if kind == "pareto":
        return g.pareto(2.0, n) + 1.0
    if kind == "mp":                                       # Gram of a Gaussian, MP bulk
        X = g.standard_normal((n, 2 * n))
        return np.linalg.eigvalsh(X @ X.T)
    if kind == "ties":                                     # repeated values, the top too
        return np.round(g.pareto(2.5, n) + 1.0, 1)
    raise ValueError(kind)


# ---------------------------------------------------------------- oracles: explicit loops


def _ks_loop(x, i, alpha):
    """KS distance of the tail ``x[i:]`` (sorted) to the power law with this alpha, one by one."""
    tail = x[i:]
    n = len(tail)
    if not alpha > 1:
        return 1.0
    return max(abs(1 - (tail[k] / tail[0]) ** (1 - alpha) - k / n) for k in range(n))


def _ww_loop(x):
    """Rule "ww" for N >= 20: every index but the last a candidate, plain MLE, first min D."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    N, fits = len(x), []
    for i in range(N - 1):
        n = N - i
        with np.errstate(divide="ignore"):
            alpha = 1 + n / np.sum(np.log(x[i:] / x[i]))
        fits.append((_ks_loop(x, i, alpha) if np.isfinite(alpha) else (n - 1) / n, alpha, i))
    D, alpha, i = min(fits, key=lambda f: f[0])          # first minimum
    return alpha, x[i], N - i, D


def _ww_small_n_loop(x):
    """Rule "ww" for N < 20: tails of >= 8 values, bias-corrected MLE, first min D."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    N, best = len(x), None
    for i in range(N - 1):
        n, s = N - i, float(np.sum(np.log(x[i:] / x[i])))
        ok = n >= 8 and s > 1e-12
        D = _ks_loop(x, i, 1 + (n - 1) / s) if ok else 1.0
        if best is None or D < best[0]:
            best = (D, 1 + (n - 1) / s if ok else 0.0, i)
    D, alpha, i = best
    if D == 1.0:                                          # no tail qualified: all of it
        s = float(np.sum(np.log(x / x[0])))
        alpha, i = (1 + (N - 1) / s, 0) if s > 1e-12 else (0.0, 0)
        D = _ks_loop(x, 0, alpha) if s > 1e-12 else 1.0
    return alpha, x[i], N - i, D


# ---------------------------------------------------------------- suffix sums, KS scan


@pytest.mark.parametrize("kind", ["pareto", "mp", "ties"])
def test_all_candidate_alphas_from_suffix_sums_match_the_loop(kind):
    x = np.sort(_spectrum(kind, 300, seed=1))
    logs = torch.from_numpy(x).log()
    idx = torch.arange(len(x) - 1)
    got = pl._mle(logs, idx, logs[idx]).numpy()
    with np.errstate(divide="ignore"):
        want = np.array([1 + (len(x) - i) / np.sum(np.log(x[i:] / x[i]))
                         for i in range(len(x) - 1)])
    finite = np.isfinite(want)
    assert np.array_equal(finite, np.isfinite(got))                # inf: a tail of equal values
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-10)


def test_ks_distances_match_the_loop_on_a_closed_form():
    # x = 2^k: ln(x_k / x_0) = k ln 2, so alpha = 1 + n / (ln 2 n (n - 1) / 2)
    x = 2.0 ** np.arange(6)
    logs = torch.from_numpy(x).log()
    idx = torch.arange(5)
    alpha = pl._mle(logs, idx, logs[idx])
    n = 6 - idx.double()
    torch.testing.assert_close(alpha, 1 + 2 / (math.log(2) * (n - 1)))
    D = pl._ks_distances(logs, idx, logs[idx], alpha)
    want = [_ks_loop(x, i, float(a)) for i, a in zip(range(5), alpha)]
    np.testing.assert_allclose(D.numpy(), want, rtol=1e-13)


@pytest.mark.parametrize("G", [2, 7, 64])
def test_ks_bounds_bracket_the_exact_distance(G):
    x = np.sort(_spectrum("mp", 200, seed=2))
    logs = torch.from_numpy(x).log()
    idx = torch.arange(199)
    alpha = pl._mle(logs, idx, logs[idx])
    lo, hi = pl._ks_bounds(logs, idx, alpha, G)
    exact = pl._ks_distances(logs, idx, logs[idx], alpha)
    assert (lo <= exact + 1e-15).all() and (exact <= hi + 1e-15).all()
    short = (200 - idx) <= G                                       # every tail point visited
    torch.testing.assert_close(lo[short], exact[short], rtol=0, atol=1e-15)


@pytest.mark.parametrize("kind,n", [("pareto", 2000), ("mp", 1500), ("ties", 1200)])
@pytest.mark.parametrize("grid,chunk", [(64, 2**21), (4, 2**10)])    # many levels, tiny blocks
def test_ks_scan_finds_the_exact_first_minimum(kind, n, grid, chunk, monkeypatch):
    monkeypatch.setattr(pl, "KS_GRID", grid)
    monkeypatch.setattr(pl, "KS_CHUNK", chunk)
    x = np.sort(_spectrum(kind, n, seed=3))
    logs = torch.from_numpy(x).log()
    idx = torch.arange(n - 1)
    alpha = pl._mle(logs, idx, logs[idx])
    ok = torch.isfinite(alpha)
    m = (n - idx).double()                                         # tail sizes
    exact = torch.where(ok, pl._ks_distances(logs, idx, logs[idx], alpha), (m - 1) / m)
    scan = pl._ks_scan(logs, idx, alpha)
    best = int(torch.argmin(exact))
    assert int(torch.argmin(scan)) == best and float(scan[best]) == pytest.approx(
        float(exact[best]), abs=1e-15)
    assert (scan <= exact + 1e-15).all()                           # lower bounds elsewhere
    pruned = (scan - exact).abs() > 1e-15
    assert (scan[pruned] > exact[best]).all()


def test_ks_scan_conventions_for_alpha_at_most_1_and_inf():
    # a tail of equal values has alpha = inf, F = 0 on it and D = (n - 1) / n (WW's value)
    logs = torch.tensor([1.0, 2.0, 4.0, 4.0, 4.0]).log()
    idx = torch.tensor([0, 1, 2])
    D = pl._ks_scan(logs, idx, torch.tensor([0.5, 1.0, math.inf], dtype=torch.float64))
    torch.testing.assert_close(D, torch.tensor([1.0, 1.0, 2 / 3], dtype=torch.float64))


# ---------------------------------------------------------------- the rules


@pytest.mark.parametrize("x", [_spectrum("pareto", 400, seed=4), _spectrum("mp", 400, seed=4),
                               _spectrum("ties", 400, seed=4),
                               np.r_[np.arange(1.0, 30.0) ** 1.5, 200.0, 200.0, 200.0]])
def test_ww_rule_matches_the_loop(x):
    got = fit_alpha(x, xmin="ww")
    alpha, xmin, n_tail, D = _ww_loop(x)
    assert got["n_tail"] == n_tail and got["xmin"] == pytest.approx(xmin, rel=1e-14)
    assert got["alpha"] == pytest.approx(alpha, rel=1e-10)
    assert got["ks_distance"] == pytest.approx(D, abs=1e-12)


@pytest.mark.parametrize("x", [
    _spectrum("pareto", 12, seed=5), _spectrum("mp", 19, seed=6),    # tails of >= 8
    np.array([1.0, 1.5, 2.0, 4.0, 9.0]),                               # N < 8: all of it
    np.full(10, 3.0),                                                  # s = 0: WW's alpha 0
])
def test_ww_rule_below_20_eigenvalues_is_wws_small_n_fit(x):
    got = fit_alpha(x, xmin="ww")
    alpha, xmin, n_tail, D = _ww_small_n_loop(x)
    assert got["n_tail"] == n_tail and got["xmin"] == pytest.approx(xmin, rel=1e-14)
    assert got["alpha"] == pytest.approx(alpha, rel=1e-10)
    assert got["ks_distance"] == pytest.approx(D, abs=1e-12)


@pytest.mark.parametrize("kind,n", [("pareto", 500), ("mp", 800), ("ties", 600)])
def test_ks_rule_equals_the_dense_scan_of_every_candidate(kind, n):
    # the KS rule before the branch and bound: D of every unique value below the max, dense
    x = _spectrum(kind, n, seed=7)
    lam = torch.sort(torch.from_numpy(x)).values
    logs = lam.log()
    idx = pl._ks_candidates(lam)
    alpha = pl._mle(logs, idx, logs[idx])
    D = pl._ks_distances(logs, idx, logs[idx], alpha)
    b = int(torch.argmin(D))
    got = fit_alpha(x, xmin="ks")
    assert got["alpha"] == float(alpha[b]) and got["n_tail"] == n - int(idx[b])
    assert got["ks_distance"] == pytest.approx(float(D[b]), abs=1e-15)


# ---------------------------------------------------------------- ESD by threads, conv_norm


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 16, 3), nn.Conv2d(16, 32, 3), nn.Conv2d(32, 32, 3),
                         nn.Conv2d(32, 8, 1), nn.Flatten(), nn.Linear(72, 40), nn.Linear(40, 40))


@pytest.mark.parametrize("conv", ["slices", "flatten"])
def test_threaded_esds_equal_batched(conv):
    model = _model()
    with torch.no_grad():
        model[2].weight[[2, 5]] = 0.0                              # rank-deficient slices
    a, b = esds(model, conv=conv), esds(model, conv=conv, method="threads")
    assert list(a) == list(b)
    for k in a:
        assert torch.equal(a[k] == 0, b[k] == 0)                   # same exact zeros
        torch.testing.assert_close(b[k], a[k], rtol=0, atol=1e-13 * float(a[k].max()))
    mats = {"tall": torch.randn(50, 20, dtype=torch.float64), "stack": torch.randn(2, 3, 6, 9)}
    for k, lam in esds(mats, normalize=True, method="threads").items():
        torch.testing.assert_close(lam, esds(mats, normalize=True)[k], rtol=1e-12, atol=1e-14)


def test_threaded_esds_reject_bad_input_and_restore_threads():
    n = torch.get_num_threads()
    with pytest.raises(ValueError, match="non-finite"):
        esds({"w": torch.tensor([[1.0, float("nan")], [0.0, 1.0]])}, method="threads")
    with pytest.raises(ValueError, match="method must be"):
        esds({"w": torch.ones(2, 2)}, method="serial")
    with worker_pool() as pool:
        assert pool.submit(torch.get_num_threads).result() == 1
    assert torch.get_num_threads() == n


def test_ww_convention_scales_conv_eigenvalues_only_and_threads_change_nothing():
    model = _model()
    base = alphas(model, xmin="ww", eig_floor=1e-5)
    ww = alphas(model, **WW_CONVENTION)
    batched = alphas(model, **{**WW_CONVENTION, "method": "batched"})
    assert list(ww.index) == list(base.index) == list(layer_matrices(model))
    np.testing.assert_allclose(ww["alpha"], batched["alpha"], rtol=1e-10)
    conv = [k for k, W in layer_matrices(model).items() if W.ndim == 3]
    lin = [k for k in base.index if k not in conv]
    np.testing.assert_allclose(ww.loc[lin, "alpha"], base.loc[lin, "alpha"], rtol=1e-12)
    # no eigenvalue is near the floor here, so the same tails: x_min halves, alpha stays
    np.testing.assert_allclose(ww.loc[conv, "xmin"], 0.5 * base.loc[conv, "xmin"], rtol=1e-12)
    np.testing.assert_allclose(ww.loc[conv, "alpha"], base.loc[conv, "alpha"], rtol=1e-10)
    with pytest.raises(ValueError, match="conv_norm"):
        alphas(model, conv_norm=0.0)


# ---------------------------------------------------------------- WeightWatcher 0.7.7 itself


def test_alphas_equal_weightwatcher_analyze_on_resnet18():
    ww = pytest.importorskip("weightwatcher")
    torchvision = pytest.importorskip("torchvision")
    if torch.cuda.is_available():
        pytest.skip("with CUDA, WeightWatcher 0.7.7 casts weights to float16 (another ESD)")
    logging.getLogger("weightwatcher").setLevel(logging.ERROR)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=10).eval()
    ours = alphas(model, **WW_CONVENTION)
    with contextlib.redirect_stdout(io.StringIO()):
        theirs = ww.WeightWatcher(model=model).analyze().set_index("longname")
    assert sorted(theirs.index) == sorted(ours.index)              # 20 convs + fc
    theirs = theirs.loc[ours.index]
    big = (theirs["num_evals"] >= 50).to_numpy()
    assert big.sum() == 20 and (ours["n_eigs"] == theirs["num_evals"]).all()
    np.testing.assert_allclose(ours["alpha"][big], theirs["alpha"][big], rtol=1e-6)
    np.testing.assert_allclose(ours["xmin"], theirs["xmin"], rtol=1e-6)
    np.testing.assert_allclose(ours["ks_distance"], theirs["D"], rtol=1e-6)
    np.testing.assert_allclose(ours["alpha"], theirs["alpha"], rtol=1e-6)  # fc: small N
