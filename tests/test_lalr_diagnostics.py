"""Per-layer diagnostics of chapter 01 (`lalr_core.methods.layer_lr.lalr.diagnostics`, `.analysis`).

Oracles: matrices with known singular values (effective rank, mean, Frobenius norm), a
histogram that is uniform over the 64 shared bins (entropy ln 64) or a point mass (0), cosines
of +-scaled copies, a known manual weight change and known gradients fed to the hooks, the full
train loss recomputed by hand from the per-epoch weights, sklearn's RidgeClassifier, a
linearly separable set (accuracy 1) and random labels (chance), the constant [CLS] embedding
(probe accuracy = the majority-class rate), an uninterrupted run against a resumed one, and
analysis tables built by hand with known terciles, Spearman coefficients and ratios.
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from sklearn.linear_model import RidgeClassifier
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.pretrained.text.tasks import finetuning_config
from lalr_core.core.loop.train import initial_model, train
from lalr_core.methods.layer_lr.lalr import LALR, layer_matrices, layer_metrics
from lalr_core.methods.layer_lr.lalr.analysis import uniform_table
from lalr_core.methods.layer_lr.lalr import analysis as A
from lalr_core.methods.layer_lr.lalr.diagnostics import (
    LayerDiagnostics,
    cls_states,
    effective_rank,
    ridge_probe_accuracy,
    weight_diagnostics,
)

pytestmark = pytest.mark.usefixtures("one_thread")
TINY_FT = dict(n_train=32, n_val=16, n_test=16, batch_size=8, device="cpu")


class Snapshots:
    """The weights at the start (first on_backward: after every on_train_start) and after
    every epoch."""

    name = "snapshots"

    def __init__(self):
        self.states = []

    def on_backward(self, model):
        if not self.states:
            self.states.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    def on_epoch_end(self, model, row):
        self.states.append({k: v.detach().clone() for k, v in model.state_dict().items()})


# ----------------------------------------------------------------------------- weight metrics
def test_rank_norm_and_mean_singular_value_of_known_matrices():
    Q1, _ = torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64, generator=torch.Generator()
                                        .manual_seed(0)))
    Q2, _ = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64, generator=torch.Generator()
                                        .manual_seed(1)))
    s = torch.tensor([3.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    W = Q1[:, :4] @ torch.diag(s) @ Q2.T                               # singular values s
    out = weight_diagnostics([W, 2.0 * torch.eye(5, 3, dtype=torch.float64)])
    p = np.array([0.75, 0.25])
    assert out["eff_rank"][0] == pytest.approx(math.exp(-(p * np.log(p)).sum()), rel=1e-9)
    assert out["eff_rank"][1] == pytest.approx(3.0, rel=1e-12)          # three equal values
    assert out["mean_sv"].tolist() == pytest.approx([1.0, 2.0], rel=1e-9)
    assert out["fro_norm"].tolist() == pytest.approx([math.sqrt(10), math.sqrt(12)], rel=1e-12)
    assert effective_rank(torch.zeros(3)) == 0.0


def test_raw_metrics_are_lalrs():
    ws = [torch.randn(6, 4, generator=torch.Generator().manual_seed(k)) * (k + 1)
          for k in range(3)]
    out, raw = weight_diagnostics(ws), layer_metrics(ws)
    assert out["raw_svd"] == pytest.approx(raw["svd"], rel=1e-6)
    assert out["raw_ce"] == pytest.approx(raw["ce"], rel=1e-6)
    assert out["mean_cs"] == pytest.approx(raw["cs"], rel=1e-6)


def test_histogram_entropy_and_mean_cosine():
    lo, hi = -1.0, 1.0
    width = (hi - lo) / 64
    centres = lo + width * (torch.arange(64) + 0.5)
    spread = torch.cat([centres, torch.tensor([lo, hi])])[None].repeat(2, 1)   # (2, 66)
    spread = spread.reshape(12, 11)
    point = torch.full((12, 11), 0.3)                                          # one bin
    out = weight_diagnostics([spread, point])
    # spread: bins 1..62 hold 2/132, bins 0 and 63 hold 4/132 (the ends) -> known entropy
    q = np.array([4] + [2] * 62 + [4]) / 132
    assert out["hist_entropy"][0] == pytest.approx(-(q * np.log(q)).sum(), abs=1e-5)
    assert out["hist_entropy"][1] == pytest.approx(0.0, abs=1e-4)
    a = torch.randn(4, 5, generator=torch.Generator().manual_seed(2))
    cs = weight_diagnostics([a, 2 * a, -a])["mean_cs"]                 # cosines +1, -1, -1
    assert cs.tolist() == pytest.approx([0.0, 0.0, -1.0], abs=1e-6)
    bad = weight_diagnostics([a, a * float("nan")])
    assert np.isnan(bad["eff_rank"]).all() and np.isfinite(bad["fro_norm"][0])


def test_known_weight_change_and_gradients_through_the_hooks():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    cb = LayerDiagnostics(train_loss=False)
    W0 = net[0].weight.detach().clone()
    grads = [(torch.full((3, 4), 0.5), torch.full((2, 3), 2.0)),     # norms sqrt(3), sqrt(24)
             (torch.full((3, 4), 1.0), torch.zeros(2, 3))]            # norms sqrt(12), 0
    for g0, g2 in grads:
        net[0].weight.grad, net[2].weight.grad = g0.clone(), g2.clone()
        cb.on_backward(net)                        # the first call records epoch 0
    delta = torch.zeros(3, 4)
    delta[1, 2], delta[0, 0] = 3.0, -4.0                                # ||delta||_F = 5
    with torch.no_grad():
        net[0].weight += delta
    cb.on_epoch_end(net, {"epoch": 1})
    table = cb.result()["layers"].set_index(["epoch", "layer"])
    assert list(cb.result()["layers"]["layer"][:2]) == ["0", "2"]
    assert table.loc[(1, "0"), "update_norm"] == pytest.approx(5.0, rel=1e-6)
    assert table.loc[(1, "0"), "rel_update"] == pytest.approx(5.0 / float(W0.norm()), rel=1e-6)
    assert table.loc[(1, "2"), "update_norm"] == 0.0
    assert table.loc[(1, "0"), "grad_norm"] == pytest.approx((3 ** .5 + 12 ** .5) / 2, rel=1e-6)
    assert table.loc[(1, "2"), "grad_norm"] == pytest.approx(24 ** .5 / 2, rel=1e-6)
    assert np.isnan(table.loc[(0, "0"), "rel_update"]) and np.isnan(table.loc[(0, "0"),
                                                                              "grad_norm"])
    epochs = cb.result()["epochs"]
    assert epochs["epoch"].tolist() == [0, 1] and epochs["full_train_loss"].isna().all()


# ----------------------------------------------------------------------------- ridge probe
def test_ridge_probe_matches_sklearn_and_its_limits():
    rng = np.random.default_rng(0)
    X, Xv = rng.normal(size=(300, 8)) * [1, 10, .1, 1, 1, 1, 1, 1], rng.normal(size=(200, 8))
    w = rng.normal(size=(8, 3))
    y, yv = (X @ w + rng.normal(size=(300, 3))).argmax(1), (Xv @ w).argmax(1)
    mu, sd = X.mean(0), X.std(0)
    for alpha in (0.1, 1.0, 50.0):                      # 3 classes, standardised features
        ref = RidgeClassifier(alpha=alpha).fit((X - mu) / sd, y).score((Xv - mu) / sd, yv)
        assert ridge_probe_accuracy(X, y, Xv, yv, alpha) == pytest.approx(ref, abs=1e-12)
    yb, ybv = (X[:, 0] > 0).astype(int), (Xv[:, 0] > 0).astype(int)   # binary
    ref = RidgeClassifier(alpha=1.0).fit((X - mu) / sd, yb).score((Xv - mu) / sd, ybv)
    assert ridge_probe_accuracy(X, yb, Xv, ybv) == pytest.approx(ref, abs=1e-12)
    centres = np.array([[2.0, 0, 0], [-2.0, 0, 0]])                  # two separated clusters
    labels, labels_v = rng.integers(0, 2, 200), rng.integers(0, 2, 200)
    Xs = centres[labels] + 0.3 * rng.normal(size=(200, 3))
    Xsv = centres[labels_v] + 0.3 * rng.normal(size=(200, 3))
    assert ridge_probe_accuracy(Xs, labels, Xsv, labels_v) == 1.0
    const = np.ones((50, 2)) * [0.1, 3.0]                            # constant features
    y_const = np.r_[np.zeros(20), np.ones(30)]
    assert ridge_probe_accuracy(const, y_const, const[:10], y_const[:10]) == 0.0  # majority 1
    Xr, Xrv = rng.normal(size=(500, 8)), rng.normal(size=(4000, 8))
    chance = ridge_probe_accuracy(Xr, rng.integers(0, 2, 500), Xrv, rng.integers(0, 2, 4000))
    assert abs(chance - 0.5) < 4 * math.sqrt(0.25 / 4000)
    assert math.isnan(ridge_probe_accuracy(X * np.nan, y, Xv, yv))
    with pytest.raises(ValueError, match="alpha"):
        ridge_probe_accuracy(X, y, Xv, yv, alpha=0)
    with pytest.raises(ValueError, match="need X_train"):
        ridge_probe_accuracy(X, y[:5], Xv, yv)


# ----------------------------------------------------------------------------- in the loop
def test_run_tables_equal_explicit_computations_on_the_weights_of_each_epoch():
    cfg = finetuning_config("sent", epochs=2, methods=(LALR(),), **TINY_FT)
    diag, snaps = LayerDiagnostics(task=cfg.task.key(), probes=True), Snapshots()
    res = train(cfg, callbacks=[diag, snaps], progress=False)
    out, lalr = res["callbacks"]["layer_diagnostics"], res["callbacks"]["lalr"]
    layers, epochs, probes = out["layers"], out["epochs"], out["probes"]
    assert epochs["epoch"].tolist() == [0, 1, 2] and len(snaps.states) == 3
    for e in range(3):                   # same layers, same order as LALR's module grouping
        assert layers[layers["epoch"] == e]["layer"].tolist() == \
            lalr[lalr["epoch"] == e]["layer"].tolist()
    data = cfg.task.data("cpu")
    X, y = data.split("train")
    Xv, yv = data.split("val")
    model = initial_model(cfg)
    for e, state in enumerate(snaps.states):
        model.load_state_dict(state)
        model.eval()
        with torch.no_grad():
            logits = model(X)
        J = F.cross_entropy(logits, y).item()
        assert epochs["full_train_loss"][e] == pytest.approx(J, rel=1e-5)
        assert epochs["full_train_acc"][e] == pytest.approx((logits.argmax(1) == y).float()
                                                            .mean().item())
        at = layers[layers["epoch"] == e]
        expect = weight_diagnostics(list(layer_matrices(model).values()))
        for c in ("fro_norm", "eff_rank", "mean_sv", "hist_entropy", "mean_cs", "raw_svd",
                  "raw_ce"):
            assert at[c].to_numpy() == pytest.approx(expect[c], rel=1e-6, abs=1e-9), c
        if e:
            prev = snaps.states[e - 1]["encoder.blocks.1.ff2.weight"]
            now = state["encoder.blocks.1.ff2.weight"]
            row = at[at["layer"] == "encoder.blocks.1.ff2"]
            assert row["rel_update"].item() == pytest.approx(
                float((now - prev).norm() / prev.norm()), rel=1e-5)
    # the [CLS] state after the embedding is the same for every sequence: that probe predicts
    # the train subset's majority class
    majority = int(y.float().mean() > 0.5)
    assert (probes[probes["point"] == 0]["acc"] == (yv == majority).float().mean().item()).all()
    assert len(probes) == 3 * (cfg.task.n_blocks + 1)
    last = probes[probes["epoch"] == 2]["acc"].to_numpy()
    states_t, states_v = cls_states(model.encoder, X), cls_states(model.encoder, Xv)
    for k in range(1, cfg.task.n_blocks + 1):
        mu, sd = states_t[k].mean(0), states_t[k].std(0)
        ref = RidgeClassifier(alpha=1.0).fit((states_t[k] - mu) / sd, y.numpy())
        assert last[k] == pytest.approx(ref.score((states_v[k] - mu) / sd, yv.numpy()))
    assert epochs["probe_gap"][2] == pytest.approx(last.max() - last.min())
    # the null of X-L7 / X-L12: LALR's rule applied to the diagnostics' raw metrics gives the
    # scales LALR set from the same weights (here LALR trained, so they must agree)
    null = uniform_table(layers)
    assert null["epoch"].tolist() == lalr["epoch"].tolist()
    assert null["phase"].tolist() == lalr["phase"].tolist()
    for m in ("svd", "ce", "cs"):
        assert null[m].to_numpy() == pytest.approx(lalr[m].to_numpy(), rel=1e-5, abs=1e-9), m
    assert null["lr_scale"].to_numpy() == pytest.approx(lalr["lr_scale"].to_numpy(), abs=1e-5)


def test_resumed_run_gives_the_uninterrupted_tables(tmp_path):
    cfg = finetuning_config("sent", epochs=3, methods=(LALR(),), **TINY_FT)
    spec = dict(task=cfg.task.key(), probes=True)
    full = train(cfg, callbacks=[LayerDiagnostics(**spec)], progress=False)
    train(cfg, callbacks=[LayerDiagnostics(**spec)], progress=False, checkpoint_dir=tmp_path,
          checkpoint_every=2)                      # leaves the checkpoint of epoch 2
    resumed = train(cfg, callbacks=[LayerDiagnostics(**spec)], progress=False,
                    checkpoint_dir=tmp_path, checkpoint_every=2)
    assert len(resumed["steps"]) == len(full["steps"])
    a, b = full["callbacks"]["layer_diagnostics"], resumed["callbacks"]["layer_diagnostics"]
    pd.testing.assert_frame_equal(a["layers"], b["layers"])
    pd.testing.assert_frame_equal(a["probes"], b["probes"])
    pd.testing.assert_frame_equal(a["epochs"].drop(columns="seconds"),
                                  b["epochs"].drop(columns="seconds"))
    assert b["layers"]["grad_norm"][b["layers"]["epoch"] == 3].notna().all()


def test_settings_are_validated():
    image = RunConfig(dataset="fashion_mnist", synthetic=True, model="mlp").task.key()
    text = finetuning_config("sent", **TINY_FT).task.key()
    with pytest.raises(ValueError, match="need the run's task"):
        LayerDiagnostics()
    with pytest.raises(ValueError, match="cannot evaluate its train split"):
        LayerDiagnostics(task=image)
    with pytest.raises(ValueError, match="text_classification"):
        LayerDiagnostics(task=image, train_loss=False, probes=True)
    for bad, match in ((dict(probes=1), "probes"), (dict(ridge_alpha=0.0), "ridge_alpha"),
                       (dict(probe_train=1), "probe_train"), (dict(batch_size=0), "batch")):
        with pytest.raises(ValueError, match=match):
            LayerDiagnostics(task=text, **bad)
    assert LayerDiagnostics(train_loss=False).task is None


# ----------------------------------------------------------------------------- analysis
def _tables(scales, d_eff, rel, phases=("svd", "ce")):
    """diag / lalr tables of L layers over len(scales) epochs with known per-epoch values:
    epoch e moves eff_rank by d_eff[e][l] and has rel_update rel[e][l]."""
    L = len(scales[0])
    names = [f"l{i}" for i in range(L)]
    rows, eff = [], np.zeros(L)
    for e in range(len(scales) + 1):
        if e:
            eff = eff + np.asarray(d_eff[e - 1])
        for i, n in enumerate(names):
            rows.append({"epoch": e, "position": i, "layer": n, "fro_norm": 1.0,
                         "update_norm": np.nan if e == 0 else 2 * rel[e - 1][i],
                         "rel_update": np.nan if e == 0 else rel[e - 1][i],
                         "eff_rank": eff[i], "mean_sv": 1.0, "hist_entropy": -eff[i],
                         "mean_cs": 0.0, "grad_norm": np.nan if e == 0 else 1.0})
    lalr = [{"epoch": e, "layer": n, "phase": phases[e % len(phases)], "svd": 0.0, "ce": 0.0,
             "cs": 0.0, "lr_scale": s[i]} for e, s in enumerate(list(scales) + [[0.5] * L])
            for i, n in enumerate(names)]
    return pd.DataFrame(rows), pd.DataFrame(lalr)


def test_epoch_changes_terciles_and_spearman_on_known_tables():
    scales = [[0.0, 1.0, 0.2, 0.8, 0.5, 0.4], [1.0, 0.0, 0.5, 0.5, 0.3, 0.9]]
    d_eff = [[1, 9, 2, 8, 5, 4], [0, 0, 0, 0, 0, 6]]
    rel = [[0.0, 0.1, 0.02, 0.08, 0.05, 0.04], [0.3, 0.1, 0.2, 0.5, 0.4, 0.6]]
    diag, lalr = _tables(scales, d_eff, rel)
    ch = A.epoch_changes(diag, lalr)
    assert ch["epoch"].unique().tolist() == [0, 1]           # LALR's unused last row dropped
    assert ch[ch["epoch"] == 0]["d_eff_rank"].tolist() == d_eff[0]
    assert ch[ch["epoch"] == 1]["rel_update"].tolist() == rel[1]
    assert ch[ch["epoch"] == 1]["update_norm"].tolist() == pytest.approx(2 * np.array(rel[1]))
    t = A.tercile_deltas(diag, lalr).set_index("epoch")
    # epoch 0: k = 2; bottom scales {0.0, 0.2} -> d 1, 2; top {0.8, 1.0} -> d 8, 9
    assert t.loc[0, "k"] == 2 and t.loc[0, "phase"] == "svd"
    assert t.loc[0, "eff_rank_diff"] == pytest.approx(8.5 - 1.5)
    assert t.loc[0, "hist_entropy_diff"] == pytest.approx(-(8.5 - 1.5))
    # epoch 1: bottom {0.0 (l1), 0.3 (l4)} -> 0, 0; top {0.9 (l5), 1.0 (l0)} -> 6, 0
    assert t.loc[1, "eff_rank_top"] == pytest.approx(3.0) and t.loc[1, "eff_rank_bottom"] == 0
    rho = A.update_scale_spearman(diag, lalr).set_index("epoch")
    assert rho.loc[0, "rho"] == pytest.approx(1.0)         # rel_update = scale / 10
    ranks_s, ranks_r = np.array([6, 1, 3.5, 3.5, 2, 5]), np.array([3, 1, 2, 5, 4, 6])
    expect = np.corrcoef(ranks_s, ranks_r)[0, 1]            # Spearman = Pearson of the ranks
    assert rho.loc[1, "rho"] == pytest.approx(expect) and rho.loc[1, "n"] == 6
    flat, flat_lalr = _tables([[0.5] * 6], [d_eff[0]], [rel[0]])
    assert np.isnan(A.update_scale_spearman(flat, flat_lalr)["rho"][0])   # a uniform run
    means = A.mean_changes(diag)
    assert means["eff_rank"].tolist() == pytest.approx([29 / 6, 1.0])


def test_early_late_ratios_and_scale_excess():
    scales = [[1.0, 0.8, 0.0, 0.2]] * 2
    diag, lalr = _tables(scales, [[0] * 4] * 2, [[4.0, 2.0, 1.0, 1.0], [4.0, 2.0, 1.0, 3.0]])
    # update_norm = 2 * rel: early (l0, l1) mean over both epochs 6, late (l3) mean 4
    assert A.early_late_ratio(diag, ["l0", "l1"], ["l3"]) == pytest.approx(6.0 / 4.0)
    uniform, _ = _tables(scales, [[0] * 4] * 2, [[1.0] * 4] * 2)
    assert A.ratio_of_ratios(diag, uniform, ["l0", "l1"], ["l3"]) == pytest.approx(1.5)
    # per epoch: mean scale of l0, l1 = 0.9; median of all = 0.5 -> excess 0.4
    assert A.scale_above_median(lalr, ["l[01]"]) == pytest.approx(0.4)
    assert A.tinytf_early_late(4) == (("encoder.tok_emb", "encoder.pos_emb",
                                       "encoder.blocks.0.*"), ("encoder.blocks.3.*",))
    with pytest.raises(ValueError, match="match no layer"):
        A.early_late_ratio(diag, ["encoder.*"], ["l3"])
    with pytest.raises(ValueError, match="lacks columns"):
        A.early_late_ratio(diag.drop(columns="update_norm"), ["l0"], ["l3"])


def test_loss_spread_and_probe_slope_tables():
    epochs = pd.DataFrame({"epoch": [0, 1, 2, 3], "full_train_loss": [0.7, 0.5, 0.45, 0.3],
                           "probe_gap": [0.4, 0.35, 0.3, 0.25]})
    dec = A.loss_decreases(epochs)
    assert dec["decrease"].tolist() == pytest.approx([0.2, 0.05, 0.15])
    assert A.probe_gap_slope(epochs) == pytest.approx(-0.05)
    lalr = pd.DataFrame([{"epoch": e, "layer": f"l{i}", "phase": ("svd", "ce", "cs")[e % 3],
                          "svd": (e + 1) * i, "ce": 10.0 * i, "cs": -i * (e + 1) ** 2}
                         for e in range(4) for i in range(3)])
    spread = A.metric_spread(lalr).set_index("epoch")
    assert spread["spread_svd"].tolist() == [2, 4, 6, 8]
    assert spread["spread_phase"].tolist() == [2, 20, 18, 8]        # svd, ce, cs, svd
    pairs = A.spread_loss_changes(lalr, epochs)
    # epoch 0 (svd): 4 - 2; epoch 1 (ce): 20 - 20; epoch 2 (cs): 32 - 18
    assert pairs["spread_change"].tolist() == [2, 0, 14]
    assert pairs["loss_decrease"].tolist() == pytest.approx([0.2, 0.05, 0.15])
