"""Tests of lalr_core.methods.trajectory against closed forms, brute force and Monte Carlo (seed 004
sec. 3.2, App. A, listings C.2-C.4). All simulations are seeded; tolerances are in standard
errors (SE) computed from the thesis's own variance lemmas."""

import math

import numpy as np
import pytest
import torch
from scipy import stats

from lalr_core.methods import trajectory as tj


# ----------------------------------------------------------------------------- helpers
def brute_force(path: np.ndarray, window: int, cols=None):
    """Loop-by-loop eqs. 3.1-3.5 on columns ``cols`` of a ``(T+1, n)`` path."""
    p = path if cols is None else path[:, cols]
    T = len(p) - 1
    step = np.array([np.linalg.norm(p[t] - p[t - 1]) for t in range(1, T + 1)])
    ds = np.array([step[:t].sum() for t in range(1, T + 1)])
    dt = np.array([np.linalg.norm(p[t] - p[0]) for t in range(1, T + 1)])
    lo = [max(t - window, 0) for t in range(1, T + 1)]
    dsw = np.array([step[lo[t - 1]:t].sum() for t in range(1, T + 1)])  # i = t-N+1..t
    dtw = np.array([np.linalg.norm(p[t] - p[lo[t - 1]]) for t in range(1, T + 1)])
    return dict(step_norm=step, ds=ds, dt=dt, psi=dt / ds, ds_window=dsw, dt_window=dtw,
                psi_window=dtw / dsw)


def tiny_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                torch.nn.Linear(4, 2))
    return model


def sgd_steps(model, k, seed):
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(k):
        X = torch.randn(8, 3, generator=gen)
        loss = model(X).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        yield


# ----------------------------------------------------------------------------- G(n), App. A.1
def test_G_special_values_and_chi_mean():
    assert tj.G(1) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-15)
    assert tj.G(2) == pytest.approx(math.sqrt(math.pi) / 2, rel=1e-15)
    assert tj.G(3) == pytest.approx(2 / math.sqrt(math.pi), rel=1e-15)
    n = np.array([1.0, 2.5, 7.0, 99.0, 100.0, 346.0, 1e4])
    # independent oracle: the chi_n mean is sqrt(2) G(n) (Lemma A.3)
    np.testing.assert_allclose(np.sqrt(2) * tj.G(n), stats.chi(n).mean(), rtol=1e-10)
    assert isinstance(tj.G(5.0), float) and tj.G(n).shape == n.shape


def test_G_recurrence_source_typo():
    n = np.arange(3.0, 60.0)
    # correct: Gamma((n+1)/2) = (n-1)/2 Gamma((n-1)/2), Gamma(n/2) = (n-2)/2 Gamma((n-2)/2)
    np.testing.assert_allclose(tj.G(n), (n - 1) / (n - 2) * tj.G(n - 2), rtol=1e-13)
    np.testing.assert_allclose(tj.G(n) * tj.G(n - 1), (n - 1) / 2, rtol=1e-13)
    # the thesis's G(n) = (n-1)/(n-2) G(n-1) (Corollary A.1 proof) is false, e.g. at n = 3
    assert abs(tj.G(3) - 2 * tj.G(2)) > 0.5


def test_G_below_sqrt_half_n_and_gap():
    n = np.arange(4, 400) / 4  # listing C.1 grid, n = 1 .. 99.75
    assert np.all(tj.G(n) < np.sqrt(n / 2))  # Corollary A.5
    assert np.all(np.diff(tj.G(n)) > 0)  # Corollary A.1
    assert 1 - tj.G(100) / math.sqrt(50) < 0.01  # ~0.25%
    assert 1 - tj.G(2) / 1 > 0.1  # visible gap at small n


def test_G_large_n_precision():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for n in [99.5, 100.0, 101.0, 3e5, 2.5e7]:
        exact = mpmath.gamma(mpmath.mpf(n + 1) / 2) / mpmath.gamma(mpmath.mpf(n) / 2)
        assert tj.G(n) == pytest.approx(float(exact), rel=1e-14)
        var = float(n - 2 * exact**2)  # Lemma A.6 with sigma = 1: needs the series at large n
        assert tj.norm_variance(1.0, n) == pytest.approx(var, rel=1e-9)


def test_G_rejects_nonpositive():
    for bad in (0, -1.0, np.array([1.0, 0.0]), np.nan):
        with pytest.raises(ValueError):
            tj.G(bad)


# ----------------------------------------------------------------------------- listings C.2-C.4
def test_lemma_A3_norm_listing_C4():
    n, count = 346, 1000
    norms = np.linalg.norm(np.random.default_rng(4).standard_normal((count, n)), axis=1)
    var = tj.norm_variance(1.0, n)  # A.8
    assert abs(norms.mean() - np.sqrt(2) * tj.G(n)) < 3 * math.sqrt(var / count)
    assert norms.mean() <= math.sqrt(n)  # A.7
    assert norms.var(ddof=1) == pytest.approx(var, rel=4 * math.sqrt(2 / (count - 1)))
    sq = norms**2  # A.6, A.9
    assert abs(sq.mean() - n) < 3 * math.sqrt(2 * n / count)


def test_lemma_A10_decayed_sum_listing_C2():
    n, lam, k, sigma, count = 1000, 0.3, 100, 1.78, 200
    eps = sigma * np.random.default_rng(2).standard_normal((count, k, n))
    total = np.einsum("k,ckn->cn", lam ** np.arange(k), eps)
    norms = np.linalg.norm(total, axis=1)
    geo = (1 - lam ** (2 * k)) / (1 - lam**2)
    var = geo * tj.norm_variance(sigma, n)  # each entry ~ N(0, sigma^2 geo): Lemma A.6
    expected = tj.decayed_sum_norm_mean(k, lam, sigma, n)
    assert abs(norms.mean() - expected) < 3 * math.sqrt(var / count)
    assert tj.decayed_sum_sq_norm_mean(k, lam, sigma, n) == pytest.approx(sigma**2 * n * geo)
    # limits: lam = 0 is one vector, lam = 1 the plain sum (Lemma A.9)
    one = sigma * math.sqrt(2) * tj.G(n)
    assert tj.decayed_sum_norm_mean(5, 0.0, sigma, n) == pytest.approx(one)
    assert tj.decayed_sum_norm_mean(5, 1.0, sigma, n) == pytest.approx(one * math.sqrt(5))


def test_cosine_theorems_listing_C3():
    n, count = 3, 20000
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, count, n))
    cos = np.sum(x * y, 1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    assert abs(cos.mean()) < 3 * math.sqrt(1 / n / count)  # Theorem A.11
    # Theorem A.12; cos^2 ~ Beta(1/2, (n-1)/2) gives the SE of the mean of cos^2
    se = math.sqrt(stats.beta(0.5, (n - 1) / 2).var() / count)
    assert abs(np.mean(cos**2) - 1 / n) < 4 * se
    assert tj.cos_threshold(1e4) == pytest.approx(0.1)  # A.20
    k = tj.cos_threshold(100, p=0.5)  # Chebyshev bound A.18 holds empirically
    x, y = rng.standard_normal((2, 2000, 100))
    cos = np.sum(x * y, 1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    assert np.mean(np.abs(cos) >= k) <= 0.5


# ----------------------------------------------------------------------------- PathMetrics
@pytest.mark.parametrize("segments", [
    {"a": slice(0, 3), "b": slice(3, 7)},
    {"b": slice(5, 7), "a": slice(1, 3)},  # unordered, entries 0, 3, 4 uncovered
])
def test_path_metrics_brute_force(segments):
    path = np.random.default_rng(0).standard_normal((13, 7)).cumsum(0)
    N = 4
    res = tj.path_metrics(path, window=N, segments=segments)
    ref = brute_force(path, N)
    for key, val in ref.items():
        np.testing.assert_allclose(res[key], val, rtol=1e-12, err_msg=key)
    assert res["layer_names"] == list(segments)
    for j, sl in enumerate(segments.values()):
        ref = brute_force(path, N, cols=sl)
        for key in ("ds", "dt", "psi", "psi_window", "ds_window", "dt_window"):
            np.testing.assert_allclose(res["layer_" + key][:, j], ref[key], rtol=1e-12,
                                       err_msg=key)
    # t <= N: the truncated window equals the global metric
    np.testing.assert_allclose(res["psi_window"][:N], res["psi"][:N])
    assert not np.allclose(res["psi_window"][N:], res["psi"][N:])


def test_window_one_and_default_window():
    path = np.random.default_rng(1).standard_normal((6, 3))
    res = tj.path_metrics(path, window=1)
    np.testing.assert_allclose(res["psi_window"], 1.0)  # one step is always straight
    res = tj.path_metrics(path)  # N = T
    np.testing.assert_array_equal(res["psi_window"], res["psi"])


def test_straight_line_psi_one():
    v = np.random.default_rng(5).standard_normal(20)
    speeds = np.array([0.0, 1.0, 0.5, 3.0, 2.0, 0.1, 4.0, 1.0])
    path = 2.0 + np.cumsum(speeds)[:, None] * v  # monotone progress along v
    res = tj.path_metrics(path, window=3, segments={"x": slice(0, 10), "y": slice(10, 20)})
    np.testing.assert_allclose(res["psi"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(res["psi_window"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(res["layer_psi"], 1.0, rtol=1e-12)


def test_zero_motion_gives_nan():
    path = np.zeros((4, 3))
    path[2:, 0] = 1.0  # moves once, at step 2
    res = tj.path_metrics(path, window=1, segments={"moving": slice(0, 1), "still": slice(1, 3)})
    assert np.isnan(res["psi"][0]) and res["psi"][1] == 1.0
    assert np.isnan(res["psi_window"][2])  # window 1 at t = 3: no step
    assert np.all(np.isnan(res["layer_psi"][:, 1]))


def test_result_empty_and_no_segments():
    pm = tj.PathMetrics(torch.zeros(3), 5)
    res = pm.result()
    assert res["ds"].shape == (0,) and "layer_ds" not in res


def test_state_dict_split_resume_identical():
    path = torch.from_numpy(np.random.default_rng(7).standard_normal((30, 9)).cumsum(0))
    seg = {"a": slice(0, 4), "b": slice(4, 9)}
    full = tj.PathMetrics(path[0], 6, seg)
    for row in path[1:]:
        full.update(row)
    first = tj.PathMetrics(path[0], 6, seg)
    for row in path[1:12]:
        first.update(row)
    state = first.state_dict()
    second = tj.PathMetrics(path[5], 6, seg)  # wrong start: overwritten by the state
    second.load_state_dict(state)
    third = tj.PathMetrics.from_state_dict(state)
    for pm in (second, third):
        for row in path[12:]:
            pm.update(row)
        a, b = full.result(), pm.result()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    with pytest.raises(ValueError):
        tj.PathMetrics(path[0], 5, seg).load_state_dict(state)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    path = torch.from_numpy(np.random.default_rng(9).standard_normal((25, 40)).cumsum(0))
    seg = {"a": slice(0, 15), "b": slice(20, 40)}
    pms = [tj.PathMetrics(path[0].to(dev), 6, seg) for dev in ("cpu", "cuda")]
    for row in path[1:]:
        for pm in pms:
            pm.update(row.to(pm._ring.device))
    cpu, gpu = pms[0].result(), pms[1].result()
    assert gpu.pop("layer_names") == cpu.pop("layer_names")
    for key in cpu:
        np.testing.assert_allclose(gpu[key], cpu[key], rtol=1e-12, err_msg=key)
    state = pms[1].state_dict()  # a CUDA run resumes on the CPU and vice versa
    assert all(v.device.type == "cpu" for v in state.values() if isinstance(v, torch.Tensor))
    tj.PathMetrics.from_state_dict(state, device="cpu").update(path[0])


def test_float32_params_close_to_float64():
    path = np.random.default_rng(8).standard_normal((20, 50)).cumsum(0).astype(np.float32)
    pm = tj.PathMetrics(torch.from_numpy(path[0]), 5)
    for row in path[1:]:
        pm.update(torch.from_numpy(row))
    ref = brute_force(path.astype(np.float64), 5)
    np.testing.assert_allclose(pm.result()["psi_window"], ref["psi_window"], rtol=1e-10)


def test_path_metrics_bad_inputs():
    with pytest.raises(ValueError):
        tj.PathMetrics(torch.zeros(3), 0)
    with pytest.raises(ValueError):
        tj.PathMetrics(torch.zeros(3), 2.5)
    with pytest.raises(ValueError):
        tj.PathMetrics(torch.zeros(2, 3), 2)
    with pytest.raises(ValueError):
        tj.PathMetrics(torch.zeros(4), 2, {"a": slice(0, 3), "b": slice(2, 4)})  # overlap
    with pytest.raises(ValueError):
        tj.PathMetrics(torch.zeros(4), 2, {"a": slice(0, 5)})
    with pytest.raises(ValueError):
        tj.PathMetrics(torch.zeros(4), 2, {"a": slice(0, 4, 2)})
    pm = tj.PathMetrics(torch.zeros(4), 2)
    with pytest.raises(ValueError):
        pm.update(torch.zeros(5))
    with pytest.raises(ValueError):
        pm.update(torch.zeros(2, 2))
    with pytest.raises(ValueError):
        tj.path_metrics(np.zeros(5))


# ----------------------------------------------------------------------------- callback
def test_callback_matches_flat_parameters_and_excludes_buffers():
    model = tiny_model()
    model[0].bias.requires_grad_(False)  # frozen: excluded
    names = [nm for nm, p in model.named_parameters() if p.requires_grad]
    cb = tj.TrajectoryCallback(window=3, dtype="float64", device="cpu")
    cb.on_train_start(model)
    flats = [torch.cat([p.detach().reshape(-1) for nm, p in model.named_parameters()
                        if p.requires_grad]).double().numpy()]
    for _ in sgd_steps(model, 7, seed=0):
        cb.on_step(model)
        flats.append(torch.cat([p.detach().reshape(-1) for nm, p in model.named_parameters()
                                if p.requires_grad]).double().numpy())
    res = cb.result()
    n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert cb.metrics.n == n_params  # BN running stats (buffers) are not in theta
    assert res["layer_names"] == names
    path = np.stack(flats)
    np.testing.assert_allclose(res["psi_window"], brute_force(path, 3)["psi_window"], rtol=1e-6)
    w = model[3].weight  # last layer weight, its own segment
    start = sum(p.numel() for nm, p in model.named_parameters()
                if p.requires_grad and names.index(nm) < names.index("3.weight"))
    ref = brute_force(path, 3, cols=slice(start, start + w.numel()))
    np.testing.assert_allclose(res["layer_dt"][:, names.index("3.weight")], ref["dt"], rtol=1e-6)


def test_callback_resume_identical():
    def run(split):
        model, cb = tiny_model(), tj.TrajectoryCallback(window=4, per_layer=True)
        cb.on_train_start(model)
        for i, _ in enumerate(sgd_steps(model, 10, seed=1)):
            cb.on_step(model)
            if i + 1 == split:  # checkpoint and restart with a fresh callback
                state = cb.state_dict()
                cb = tj.TrajectoryCallback(window=4, per_layer=True)
                cb.on_train_start(tiny_model())  # train.py calls this before loading
                cb.load_state_dict(state)
        return cb.result()

    a, b = run(split=None), run(split=6)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    cb = tj.TrajectoryCallback(window=4)
    with pytest.raises(RuntimeError):
        cb.on_step(tiny_model())
    with pytest.raises(ValueError):
        cb.load_state_dict({"window": 5, "per_layer": True, "metrics": None})
    with pytest.raises(ValueError):
        tj.TrajectoryCallback(window=4, dtype="int64")
    with pytest.raises(ValueError):
        tj.TrajectoryCallback(window=0)


# ----------------------------------------------------------------------------- random walk
def test_rw_monte_carlo_against_closed_forms():
    """R independent walks as R segments of one vector: per-segment metrics are per walk."""
    R, n, T, sigma, N = 400, 20, 30, 0.7, 10
    walks = tj.simulate_rw(R * n, T, sigma, seed=11)
    res = tj.path_metrics(walks, window=N,
                          segments={f"w{r}": slice(r * n, (r + 1) * n) for r in range(R)})
    t = np.arange(1, T + 1)
    var = t * tj.norm_variance(sigma, n)  # Lemmas A.14, A.15 (exact for independent steps)
    for key, expected in (("layer_ds", tj.rw_expected_ds(t, sigma, n)),
                          ("layer_dt", tj.rw_expected_dt(t, sigma, n))):
        z = (res[key].mean(1) - expected) / np.sqrt(var / R)
        assert np.all(np.abs(z) < 4.5), (key, z)
        np.testing.assert_allclose(res[key].var(1, ddof=1), var, rtol=4 * math.sqrt(2 / R))
    psi = res["layer_psi_window"].mean(1)  # eq. 3.14 on the window: ~ 1/sqrt(min(t, N))
    np.testing.assert_allclose(psi, tj.rw_expected_psi_window(t, N), rtol=0.06)
    assert np.allclose(tj.rw_expected_ds(t, sigma, n) / tj.rw_expected_dt(t, sigma, n), np.sqrt(t))


def test_simulate_rw_shape_and_seed():
    a = tj.simulate_rw(5, 100, 0.3, theta0=np.arange(5.0), seed=1)
    assert a.shape == (101, 5) and np.array_equal(a[0], np.arange(5.0))
    assert np.array_equal(a, tj.simulate_rw(5, 100, 0.3, theta0=np.arange(5.0), seed=1))
    assert np.diff(a, axis=0).std() == pytest.approx(0.3, rel=0.1)
    for bad in (dict(sigma=0.0), dict(sigma=-1.0), dict(T=-1)):
        kw = dict(n=3, T=5, sigma=1.0) | bad
        with pytest.raises(ValueError):
            tj.simulate_rw(**kw)


# ----------------------------------------------------------------------------- AR(1)
def test_ar_fig_3_15_below_and_near_jensen_bound():
    n, T, alpha, sigma = 100, 1000, 0.98, 0.05
    path = tj.simulate_ar(n, T, alpha, sigma, theta0=1.0, mu=0.5, seed=0)
    res = tj.path_metrics(path)
    d = math.sqrt(n) * 0.5
    bound_ds = tj.ar_expected_ds(T, alpha, sigma, n, d)
    assert 0.98 * bound_ds < res["ds"][-1] < bound_ds
    bound_dt = tj.ar_expected_dt(T, alpha, sigma, n, d)
    assert abs(res["dt"][-1] / bound_dt - 1) < 0.1


def test_ar_mean_reversion_matches_eq_3_18():
    n, T, alpha, sigma = 4000, 60, 0.9, 0.2
    path = tj.simulate_ar(n, T, alpha, sigma, theta0=3.0, mu=1.0, seed=6)
    t = np.arange(T + 1)
    mean = 1.0 + alpha**t * 2.0  # E[theta_t] from eq. 3.18, coordinates are i.i.d. replicas
    se = sigma * np.sqrt((1 - alpha ** (2 * t)) / (1 - alpha**2)) / math.sqrt(n)
    assert np.all(np.abs(path.mean(1) - mean) <= 4.5 * se + 1e-12)


def test_ar_bounds_dominate_monte_carlo_mean():
    R, n, T, alpha, sigma = 200, 10, 40, 0.8, 0.3
    paths = tj.simulate_ar(R * n, T, alpha, sigma, theta0=0.0, mu=0.4, seed=9)
    res = tj.path_metrics(paths, segments={f"r{r}": slice(r * n, (r + 1) * n) for r in range(R)})
    t, d = np.arange(1, T + 1), 0.4 * math.sqrt(n)
    se_ds = res["layer_ds"].std(1, ddof=1) / math.sqrt(R)
    se_dt = res["layer_dt"].std(1, ddof=1) / math.sqrt(R)
    assert np.all(res["layer_ds"].mean(1) < tj.ar_expected_ds(t, alpha, sigma, n, d) + 3 * se_ds)
    assert np.all(res["layer_dt"].mean(1) < tj.ar_expected_dt(t, alpha, sigma, n, d) + 3 * se_dt)


def test_ar_limits():
    t, sigma, n, d = np.arange(1, 50), 0.3, 40, 2.0
    lim_ds, lim_dt = tj.ar_limit_ds(t, sigma, n, d), tj.ar_limit_dt(t, sigma, n, d)
    np.testing.assert_allclose(tj.ar_expected_ds(t, 0.0, sigma, n, d), lim_ds)
    np.testing.assert_allclose(tj.ar_expected_dt(t, 0.0, sigma, n, d), lim_dt)
    np.testing.assert_allclose(tj.ar_expected_ds(t, 1e-9, sigma, n, d), lim_ds, rtol=1e-8)
    np.testing.assert_allclose(tj.ar_expected_dt(t, 1e-9, sigma, n, d), lim_dt, rtol=1e-8)
    np.testing.assert_allclose(tj.ar_limit_ds(t, sigma, n, d),
                               math.sqrt(d**2 + sigma**2 * n) + (t - 1) * sigma * math.sqrt(2 * n))
    # alpha -> 1: the AR is a random walk; the Jensen bounds become t sigma sqrt(n), sigma sqrt(n t)
    a = 1 - 1e-10
    np.testing.assert_allclose(tj.ar_expected_ds(t, a, sigma, n, d), t * sigma * math.sqrt(n),
                               rtol=1e-6)
    np.testing.assert_allclose(tj.ar_expected_dt(t, a, sigma, n, d), sigma * np.sqrt(n * t),
                               rtol=1e-6)
    # t can be any order for the cumulative D_s
    np.testing.assert_allclose(tj.ar_expected_ds([5, 2], 0.5, sigma, n, d),
                               tj.ar_expected_ds(np.arange(1, 6), 0.5, sigma, n, d)[[4, 1]])


@pytest.mark.parametrize("kwargs", [dict(alpha=1.0), dict(alpha=-0.1), dict(sigma=0.0),
                                    dict(sigma=-1.0), dict(d=-1.0), dict(n=0)])
def test_ar_bad_inputs(kwargs):
    kw = dict(alpha=0.5, sigma=1.0, n=10, d=1.0) | kwargs
    for fn in (tj.ar_expected_ds, tj.ar_expected_dt):
        with pytest.raises(ValueError):
            fn(np.arange(1, 4), **kw)
    if set(kwargs) <= {"alpha", "sigma"}:
        with pytest.raises(ValueError):
            tj.simulate_ar(3, 5, kw["alpha"], kw["sigma"], 0.0, 1.0)


def test_closed_form_bad_inputs():
    with pytest.raises(ValueError):
        tj.rw_expected_ds(np.array([0, 1]), 1.0, 10)
    with pytest.raises(ValueError):
        tj.rw_expected_dt([1, 2], -1.0, 10)
    with pytest.raises(ValueError):
        tj.rw_expected_psi_window([1, 2], 0)
    with pytest.raises(ValueError):
        tj.ar_expected_ds([1.5], 0.5, 1.0, 10, 1.0)
    with pytest.raises(ValueError):
        tj.cos_threshold(10, p=0.0)
    np.testing.assert_allclose(tj.rw_expected_psi_window([1, 4, 9, 100], 16), [1, 0.5, 1 / 3, 0.25])


# ----------------------------------------------------------------------------- fits
def test_balanced_gamma_and_objective():
    ds, dt = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 1.0])
    g = tj.balanced_gamma(ds, dt)
    assert g == pytest.approx(2.25 / (14 + 2.25))
    assert g * np.sum(ds**2) == pytest.approx((1 - g) * np.sum(dt**2))  # equal weights (our gamma)
    assert tj.fit_objective(ds, dt, ds, dt, 0.3) == 0
    assert tj.fit_objective(ds, dt, ds + 1, dt, 0.3) == pytest.approx(0.3 * 3)
    assert tj.fit_objective(ds, dt, ds + 1, dt + 2, 0.0) == pytest.approx(12)


def test_fit_rw_recovers_sigma_and_matches_lstsq():
    n, T, sigma = 50, 200, 0.3
    res = tj.path_metrics(tj.simulate_rw(n, T, sigma, seed=3))
    gamma = tj.balanced_gamma(res["ds"], res["dt"])
    fit = tj.fit_rw(res["ds"], res["dt"], n, gamma)
    assert fit["sigma"] == pytest.approx(sigma, rel=0.05)
    # independent least squares on the two stacked linear models
    t = np.arange(1, T + 1)
    A = np.concatenate([math.sqrt(gamma) * tj.rw_expected_ds(t, 1, n),
                        math.sqrt(1 - gamma) * tj.rw_expected_dt(t, 1, n)])
    y = np.concatenate([math.sqrt(gamma) * res["ds"], math.sqrt(1 - gamma) * res["dt"]])
    sigma_ls = np.linalg.lstsq(A[:, None], y, rcond=None)[0][0]
    assert fit["sigma"] == pytest.approx(sigma_ls, rel=1e-8)
    assert fit["sigma_lstsq"] == pytest.approx(sigma_ls, rel=1e-12)
    assert fit["objective"] == pytest.approx(
        tj.fit_objective(res["ds"], res["dt"], fit["ds_fit"], fit["dt_fit"], gamma), rel=1e-12)
    # gamma = 0 fits D_t only (Fig 3.18)
    fit0 = tj.fit_rw(res["ds"], res["dt"], n, 0.0)
    b = tj.rw_expected_dt(t, 1, n)
    assert fit0["sigma"] == pytest.approx(b @ res["dt"] / (b @ b), rel=1e-8)


def test_fit_rw_large_scale_well_conditioned():
    n, T, sigma = 3e5, 8000, 2e-4  # a ResNet-20-sized problem (expected curves only)
    t = np.arange(1, T + 1)
    ds, dt = tj.rw_expected_ds(t, sigma, n), 3 * tj.rw_expected_dt(t, sigma, n)
    fit = tj.fit_rw(ds, dt, n, tj.balanced_gamma(ds, dt))
    assert fit["success"] and fit["sigma"] == pytest.approx(fit["sigma_lstsq"], rel=1e-8)


def test_fit_ar_recovers_parameters_from_expected_curves():
    t, n = np.arange(1, 1001), 100
    alpha, sigma, d = 0.98, 0.05, 5.0
    ds, dt = tj.ar_expected_ds(t, alpha, sigma, n, d), tj.ar_expected_dt(t, alpha, sigma, n, d)
    gamma = tj.balanced_gamma(ds, dt)
    fit = tj.fit_ar(ds, dt, n, gamma)
    assert fit["alpha"] == pytest.approx(alpha, rel=0.01)
    assert fit["sigma"] == pytest.approx(sigma, rel=0.05)
    assert fit["d"] == pytest.approx(d, rel=0.05)
    rw = tj.fit_rw(ds, dt, n, gamma)
    assert fit["objective"] < 1e-3 * rw["objective"]
    assert fit["objective"] == pytest.approx(
        tj.fit_objective(ds, dt, fit["ds_fit"], fit["dt_fit"], gamma), rel=1e-9)
    fit2 = tj.fit_ar(ds, dt, n, gamma, init={"alpha": 0.9, "sigma": 0.1, "d": 1.0})
    assert fit2["alpha"] == pytest.approx(alpha, rel=0.01)
    with pytest.raises(ValueError):
        tj.fit_ar(ds, dt, n, gamma, init={"beta": 0.5})
    with pytest.raises(ValueError):
        tj.fit_ar(ds, dt, n, gamma, init={"alpha": 1.5})


def test_fit_bad_inputs():
    ds, dt = np.arange(1.0, 6.0), np.ones(5)
    with pytest.raises(ValueError):
        tj.fit_rw(ds, dt[:4], 10, 0.5)
    with pytest.raises(ValueError):
        tj.fit_ar(ds[None], dt[None], 10, 0.5)
    with pytest.raises(ValueError):
        tj.fit_rw(ds, dt, 10, 1.5)
    with pytest.raises(ValueError):
        tj.fit_rw(ds, dt, 0, 0.5)
    with pytest.raises(ValueError):
        tj.fit_rw(np.zeros(5), np.zeros(5), 10, 0.5)
    with pytest.raises(ValueError):
        tj.fit_objective(ds, dt, ds, dt[:3], 0.5)
    with pytest.raises(ValueError):
        tj.balanced_gamma(ds, [np.nan] * 5)
