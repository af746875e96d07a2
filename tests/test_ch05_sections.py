"""Chapter 05's per-section numbers (the quantities behind each check), against closed forms and
small explicit computations on constructed results."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from lalr_core.chapters import ch05_quasi_newton as ch05
from lalr_core.core.data import load_data
from lalr_core.core.loop.train import run_model


def _run(test_loss, acc=0.5, diverged=False, steps=None, eta=None, train_loss=None):
    hist = pd.DataFrame({"test_loss": test_loss, "test_acc": [acc] * len(test_loss),
                         "step": steps if steps is not None else range(1, len(test_loss) + 1)})
    res = {"history": hist, "diverged": diverged,
           "final": {"test_loss": test_loss[-1], "test_acc": acc}, "callbacks": {}}
    if eta is not None:
        res["callbacks"]["alg5_log"] = pd.DataFrame({"step": range(1, len(eta) + 1), "eta": eta})
    if train_loss is not None:
        res["steps"] = pd.DataFrame({"loss": train_loss})
    return res


# ----------------------------------------------------------------------------- fig 4.6, tables
def test_divergence_counts_and_arm_summary():
    runs = {("sgd", 0): _run([1.0, 0.5]), ("sgd", 1): _run([1.0, float("nan")], diverged=True),
            ("qn", 0): _run([1.0, 3.0]), ("qn", 1): _run([1.0, 2.0])}
    # a final loss above ln 10 = 2.303 counts as diverged
    assert ch05.divergence_counts(runs, ("sgd", "qn"), [0, 1]) == {"sgd": 1, "qn": 1}
    table = ch05.arm_summary({"A": [_run([2.0, 1.0, 1.5], acc=0.8), _run([2.0, 0.5, 1.0], acc=0.6)]})
    assert table.loc["final loss", "A"] == pytest.approx(1.25)
    assert table.loc["final acc (%)", "A"] == pytest.approx(70.0)
    # epoch-to-epoch changes (-1, 0.5) and (-1.5, 0.5): sds 1.5 / sqrt 2 and 2 / sqrt 2
    assert table.loc["spread of Δloss", "A"] == pytest.approx((1.5 + 2.0) / np.sqrt(2) / 2)


def test_table_e_source_accuracies_and_loss_drop():
    runs = {(arm, lr, s): _run([1.0, loss + s], acc=acc)
            for arm, acc in (("sgdm", 0.9), (ch05.QN, 0.8))
            for lr, loss in ((0.1, 0.3), (0.01, 0.6)) for s in (0, 1)}
    source = pd.DataFrame({"lr": [0.1, 0.1], "arm": ["sgdm", "qn"], "accuracy": [89.0, 85.0],
                           "loss": [0.33, 0.36]})
    t = ch05.table_e(runs, source, (0.1, 0.01), ch05.TABLE_ARMS, [0, 1], ch05.LABELS)
    assert list(t["method"]) == ["SGDM", "quasi-Newton"] * 2
    assert list(t["accuracy (%)"]) == pytest.approx([90.0, 80.0, 90.0, 80.0])
    assert list(t["loss"]) == pytest.approx([0.8, 0.8, 1.1, 1.1])        # mean of loss, loss + 1
    assert list(t["source loss"][:2]) == [0.33, 0.36] and t["source loss"][2:].isna().all()
    assert ch05.source_accuracies(source) == {"lr 0.1": "SGDM 89 vs QN 85"}
    np.testing.assert_allclose(ch05.loss_drop(runs, ch05.QN, 0.1, 0.01, [0, 1]), [0.3, 0.3])


# ----------------------------------------------------------------------------- figs 4.7-4.9
def test_random_scale_and_gc_numbers():
    assert ch05.random_cosine_scale(100) == 1.0 and ch05.random_cosine_scale(1338) == \
        pytest.approx(0.2734, abs=1e-4)
    gc = pd.DataFrame({"q_gc": [0.1, -0.2, np.nan, 0.3], "q_gc_pairs": [0.2, -0.4, 0.9, 0.6]})
    n = ch05.gc_numbers(gc, random_scale=0.5)
    assert n == {"positive": pytest.approx(2 / 3), "batches": 3, "median": pytest.approx(0.1),
                 "median_pairs": pytest.approx(0.4), "above_random": 0.5}


# ----------------------------------------------------------------------------- fig 4.10
def test_mean_curve_and_crossover_order():
    np.testing.assert_allclose(ch05.mean_curve([_run([1.0, 3.0]), _run([3.0, float("nan")])]),
                               [2.0, 3.0])
    assert ch05.crossover_order({1347: 5, 337: 5, 90: 2})   # smaller batch: no later
    assert ch05.crossover_order({1347: 2, 90: 5}) is False   # later for the smaller batch
    # no crossover somewhere: not judged (it is not "infinitely late")
    assert ch05.crossover_order({1347: None, 337: 3, 90: 1}) is None
    assert ch05.crossover_order({1347: 2, 90: None}) is None


def test_fig410_early_steps_and_fig420_arms():
    s = ch05.CHAPTER.settings("smoke")                      # 256 examples, smallest batch 64
    assert ch05.fig410_early_steps(s) == 4
    assert ch05.fig410_early_steps(ch05.CHAPTER.settings("quick")) == 15   # ceil(1347 / 90)
    arms = ch05.fig420_arms(s)
    assert arms == {"SGD lr 1": ("sgd", 1.0), "SGD lr 0.1": ("sgd", 0.1),
                    "eigenvalue-based (η′ 1)": ("eigenvalue", 1.0),
                    "projection-based (η′ 1)": ("projection", 1.0)}
    assert {(a, lr) for a, lr, _ in ch05.fig420_runs(s)} == set(arms.values())


def test_fig420_per_run_numbers():
    r = _run([2.0, 1.0], eta=[0.2, 0.5, 1.0, 0.3], train_loss=[5.0, 4.0, 3.0, 2.5, 3.5, 2.0])
    assert ch05.first_epoch_loss(r) == 2.0
    assert ch05.mean_eta(r) == pytest.approx(0.5)
    assert ch05.max_eta(r, 2) == 0.5 and ch05.max_eta(r, 3) == 1.0
    # second half: 2.5, 3.5, 2.0 -> changes +1, -1.5: sd (ddof 1) = 2.5 / sqrt 2
    assert ch05.train_loss_noise(r) == pytest.approx(2.5 / np.sqrt(2))


# ----------------------------------------------------------------------------- fig 4.16
def test_cohesion_column_and_extremes():
    numbers = {s: pd.DataFrame({"mean_cos": [0.1 + s, 0.2]}, index=pd.Index([4, 32],
                                                                            name="batch_size"))
               for s in (0, 1)}
    np.testing.assert_array_equal(ch05.cohesion_column(numbers, "mean_cos", 4), [0.1, 1.1])
    pts = [pd.DataFrame({"batch_size": [4, 4, 32], "cos": [0.3, 0.95, 0.99]}),
           pd.DataFrame({"batch_size": [4, 4, 4, 32], "cos": [0.2, 0.5, 0.97, 0.1]})]
    results = {s: {"callbacks": {"cohesion_probe": {"points": p}}} for s, p in enumerate(pts)}
    # the first run's 2 points at batch 4, times 2 runs; the largest cos at batch 4 is 0.97
    assert ch05.cohesion_extremes(results, 4) == {"points": 4, "max_cos": 0.97}


# ----------------------------------------------------------------------------- fig 4.11, E.1
def test_spectrum_numbers():
    eig = np.r_[np.full(80, 1e-4), -np.full(10, 2e-3), np.arange(1.0, 11.0)]   # 100 values
    n = ch05.spectrum_numbers(eig, 100, top=30)
    assert n["lam_max"] == 10.0
    np.testing.assert_array_equal(n["top"], np.sort(eig)[-30:])
    assert n["median_top"] == pytest.approx(1e-4)       # 20 at 1e-4, then 1..10
    assert n["small"] == pytest.approx(0.9)             # |λ| < 0.1: all 90 small ones
    # the top 30 of a larger Hessian (Lanczos alone): no share of the whole spectrum
    top = ch05.spectrum_numbers(np.sort(eig)[-30:], 85_898, top=30)
    assert top["small"] is None and top["lam_max"] == 10.0


def test_hessian_spectrum_of_softmax_regression_closed_form():
    torch.manual_seed(0)
    model = nn.Linear(3, 3).double()
    X, y = torch.randn(6, 3, dtype=torch.float64), torch.tensor([0, 1, 2, 0, 1, 2])
    # H = mean_i (diag p_i - p_i p_i^T) kron [x_i; 1][x_i; 1]^T, parameters (W row-major, b)
    H = torch.zeros(12, 12, dtype=torch.float64)
    with torch.no_grad():
        for xi, pi in zip(X, torch.softmax(model(X), 1), strict=True):
            A = torch.diag(pi) - torch.outer(pi, pi)
            H[:9, :9] += torch.kron(A, torch.outer(xi, xi))
            H[:9, 9:] += torch.kron(A, xi[:, None])
            H[9:, :9] += torch.kron(A, xi[None, :])
            H[9:, 9:] += A
    expected = torch.linalg.eigvalsh(H / len(X)).numpy()
    eig, lanczos, n_params = ch05.hessian_spectrum(model, X, y)
    assert n_params == 12
    np.testing.assert_allclose(eig, expected, atol=1e-12)
    np.testing.assert_allclose(lanczos, expected[::-1][:5], rtol=1e-6, atol=1e-10)
    # above the dense limit: no dense matrix, the top eigenvalues by Lanczos alone (ARPACK
    # finds at most P - 1 = 11), ascending, equal to the dense ones
    top, lanczos, _ = ch05.hessian_spectrum(model, X, y, dense_limit=11)
    np.testing.assert_allclose(top, expected[-11:], rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(lanczos, expected[::-1][:5], rtol=1e-6, atol=1e-10)


def test_hessian_problem_is_the_trained_network_on_the_first_examples():
    s = ch05.CHAPTER.settings("smoke")
    cfg = ch05.hessian_run(s)
    weights = {k: v.clone() for k, v in run_model(cfg).state_dict().items()}
    model, X, y = ch05.hessian_problem(cfg, weights, 16)
    data = load_data(cfg.dataset, n_train=cfg.n_train, n_val=0, n_test=cfg.n_test,
                     synthetic=cfg.synthetic, device="cpu")
    assert not model.training and X.dtype == torch.float64 and len(y) == 16
    torch.testing.assert_close(X, data.X_train[:16].double())
    for k, v in model.state_dict().items():
        torch.testing.assert_close(v, weights[k].double())
    assert len(ch05.hessian_problem(cfg, weights, None)[2]) == len(data.y_train)


def test_e1_windows_and_taus():
    early, late = ch05.e1_windows(np.arange(1, 101), 100)
    assert early.sum() == 10 and late.sum() == 20          # steps 1..10 and 81..100
    early, _ = ch05.e1_windows(np.array([50, 60, 90]), 100)
    np.testing.assert_array_equal(early, [True, False, False])   # the first stored step at least
    assert ch05.e1_taus(0.1) == [0.05, 0.1, 0.2] and ch05.e1_taus(0.2) == [0.05, 0.2]


def test_class_subspace_alignment_aligned_then_orthogonal():
    C, P, T = 3, 8, 10
    E = torch.eye(P, dtype=torch.float64)[:C]               # top-C eigenvectors e_1..e_3
    dirs = np.zeros((T, C, P))
    dirs[:5] = np.eye(P)[C:2 * C]                           # first half: orthogonal to span(E)
    dirs[5:] = np.eye(P)[[1, 2, 0]]                         # second half: E's rows, permuted
    counts = np.ones((T, C), dtype=int)
    counts[-1, 2] = 0                                       # class 2 absent from the last batch
    a = ch05.class_subspace_alignment(dirs, counts, np.arange(1, T + 1), E, T, rtol=0.1)
    assert a["taus"] == [0.05, 0.1, 0.2]
    for ranks in a["ranks"].values():
        np.testing.assert_array_equal(ranks, [2 * C] * 5 + [C] * 4 + [C])   # 2C, then C
    np.testing.assert_allclose(a["energy"], [0] * 5 + [1] * 5, atol=1e-12)
    np.testing.assert_allclose(a["hungarian"], [0] * 5 + [1] * 5, atol=1e-12)
    assert a["median_early"][0.1] == 2 * C and a["median_late"][0.1] == C
    assert a["cos_last"] == pytest.approx(1.0)
    np.testing.assert_array_equal(a["classes_last"], [0, 1])
    rows, cols = a["assigned"]
    np.testing.assert_array_equal(cols[np.argsort(rows)], [1, 2])    # class 0 -> e_2, 1 -> e_3
    # the rank falls from 2C to C (the source's claim); the class gradients span the top-C
    # eigenvectors late, far above random directions
    e1 = ch05.fige1(a, np.full(50, 0.1), C, 0.1)
    assert e1.rank.evidence is True and e1.cosine.verdict == "PASS"
    flat = {**a, "median_early": {0.1: 2 * C}, "median_late": {0.1: 2 * C}}
    assert ch05.fige1(flat, np.full(50, 0.1), C, 0.1).rank.evidence is False   # a flat rank


# ----------------------------------------------------------------------------- known matrices
def test_power_iteration_runs_against_eigh():
    pi = ch05.power_iteration_runs(10)
    H = pi["H"]
    w, V = torch.linalg.eigh(H)
    assert pi["lam"] == pytest.approx(float(w[-1]))
    assert abs(float(pi["v"] @ V[:, -1])) == pytest.approx(1.0)
    assert abs(pi["fig4.12"].cos[-1]) > 0.9
    assert ch05.fig417a_samples(10) == 100 and ch05.fig417a_samples(100) == 1000


def test_known_matrix_summaries():
    run = SimpleNamespace(cos=np.r_[np.ones(60), -0.5 * np.ones(50)], iters=110,
                          values=np.array([1.0, 3.0]))
    n = ch05.fig413_numbers(run)
    assert n["mean_cos"] == pytest.approx(0.5) and n["cv"] == pytest.approx(0.5)   # sd 1, mean 2
    n = ch05.fig417a_numbers(SimpleNamespace(cos=np.arange(20.0), values=np.arange(20.0)))
    np.testing.assert_array_equal(n["cos"], np.arange(10.0, 20.0))
    assert n["value"] == pytest.approx(14.5)
    assert ch05.rolling_tail(10_000) == 1000 and ch05.rolling_tail(300) == 150
    assert ch05.middle_window((100, 1000, 10_000)) == 1000 and ch05.middle_window((10, 40)) == 40
    runs = {10: SimpleNamespace(cos=np.array([0.0, 1.0, -0.5])),
            40: SimpleNamespace(cos=np.array([0.0, 0.9, 0.9]))}
    stats = ch05.rolling_stats(runs, 2)
    assert stats.loc[10].to_dict() == pytest.approx({"late mean |cos|": 0.75,
                                                     "late sd |cos|": 0.25, "late min |cos|": 0.5})
    assert ch05.steadier_with_window(stats)                 # 0.75 -> 0.9 up, 0.25 -> 0 down
    assert not ch05.steadier_with_window(stats.iloc[::-1])
    assert ch05.cumulants_within([0.02, 0.05, 0.15])
    assert not ch05.cumulants_within([0.0, 0.051, 0.0])


def test_fig414_numbers_follow_the_path():
    run = ch05.fig414_run("rosenbrock")
    path, dt = run["path"], run["dt"]
    np.testing.assert_allclose(dt, np.linalg.norm(path[1:] - path[0], axis=1))   # D_t, eq. 3.1
    n = run["numbers"]
    assert n["falls on (% of steps)"] == pytest.approx(100 * np.mean(np.diff(dt) < 0))
    assert n["end"] == [1.0, 1.0] and n["D_t final"] == pytest.approx(np.hypot(2.5, 1.5), rel=1e-4)


def test_appendix_h_cumulants_from_the_spectrum():
    h = ch05.appendix_h(500)
    lam = h["eigvals"]
    # kappa_n = 2^(n-1) (n-1)! sum lambda^(2n)
    np.testing.assert_allclose(h["exact"], [np.sum(lam ** 2), 2 * np.sum(lam ** 4),
                                            8 * np.sum(lam ** 6)], rtol=1e-10)
    np.testing.assert_allclose(h["rel"], np.abs(h["sample"] / h["exact"] - 1))
    assert len(h["draws"]) == 500 and h["profile"].r2 > 0.95
