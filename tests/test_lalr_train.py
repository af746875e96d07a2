"""LALR in the training loop (seed 000, our executable specification, X-L9, X-L12, X-L17): the phase of each
epoch, lr = lr_t * scale per group with the optimiser's state untouched, the frozen layer,
recompute='once', the as-written grouping's misalignment, state round trips and resume.

Oracles: explicit weights with known SVD metrics (c * partial identity: every singular value
c), AdamW's state and parameters compared bit for bit before and after an adjustment, a layer
at lr 0 whose weights must not move, and the metric library on the probed weights.
"""

import copy

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import train
from lalr_core.methods.layer_lr.lalr import LALR, LALRScaler, layer_matrices, layer_metrics, scales
from conftest import LRProbe

pytestmark = pytest.mark.usefixtures("one_thread")
TINY = dict(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16,
            model="mlp", optimizer="adamw", lr=1e-3, wd=0.01, batch_size=16, epochs=3,
            device="cpu")
LAYERS = ["net.1", "net.3", "net.5"]   # the MLP's three Linear layers


def three_linear(cs=(1.0, 2.0, 4.0)):
    """Linear(4,5)-ReLU-Linear(5,5)-ReLU-Linear(5,3), weight k = cs[k] * partial identity, so
    every singular value of layer k is cs[k] (raw SVD metric cs[k])."""
    net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 3))
    with torch.no_grad():
        for lin, c in zip(net[::2], cs):
            lin.weight.copy_(c * torch.eye(*lin.weight.shape))
    return net


# ----------------------------------------------------------------------------- config
def test_config_key_round_trip_and_validation():
    cfg = RunConfig(**TINY, methods=(LALR(order=["cs", "svd"], s_min=0.1, exclude=["net.5"]),))
    m = cfg.method("lalr")
    assert m.order == ("cs", "svd") and m.exclude == ("net.5",)
    assert RunConfig(**cfg.key()) == cfg and hash(RunConfig(**cfg.key())) == hash(cfg)
    aw = LALR.as_written()
    assert (aw.grouping, aw.recompute, aw.cs_direction, aw.normalise) == \
        ("named_param_AW", "once", "code", "literal")
    for bad, match in ((dict(order=("svd", "ntk")), "ntk"), (dict(recompute="never"), "recompute"),
                       (dict(cs_direction="up"), "cs_direction"), (dict(s_min=-0.1), "s_min"),
                       (dict(s_min=True), "s_min"), (dict(grouping="layer"), "grouping"),
                       (dict(svd_variant="max"), "svd_variant"), (dict(ce_variant="kl"), "ce"),
                       (dict(cs_variant="pad"), "cs_variant"), (dict(exclude="head"), "exclude"),
                       (dict(grouping="named_param_AW", exclude=("0",)), "exclude")):
        with pytest.raises(ValueError, match=match):
            LALR(**bad)


# ----------------------------------------------------------------------------- scaler alone
def test_adjustment_sets_lr_scale_and_leaves_adamw_state_alone():
    torch.manual_seed(0)
    net = three_linear()
    method = LALR(s_min=0.2)
    opt = torch.optim.AdamW(method.param_groups(net, 0.01), lr=0.01, weight_decay=0.01)
    X, y = torch.randn(8, 4), torch.randn(8, 3)
    for _ in range(2):                                   # populate exp_avg / exp_avg_sq / step
        opt.zero_grad()
        nn.functional.mse_loss(net(X), y).backward()
        opt.step()
    state = copy.deepcopy(opt.state_dict()["state"])
    params = [p.detach().clone() for p in net.parameters()]
    cb = method.callbacks(None)[0]
    cb.on_optimizer(opt)
    cb.on_train_start(net)                               # epoch 0: svd phase
    weights = list(layer_matrices(net).values())
    _, expected = scales(layer_metrics(weights), "svd", s_min=0.2)
    after = opt.state_dict()["state"]
    for k, st in state.items():
        assert all(torch.equal(v, after[k][n]) for n, v in st.items())
    assert all(torch.equal(a, b) for a, b in zip(params, net.parameters()))
    groups = [g for g in opt.param_groups if g["layer"] is not None]
    assert [g["layer"] for g in groups] == ["0", "2", "4"]
    assert [g["lr_scale"] for g in groups] == pytest.approx(expected, rel=1e-12)
    assert all(g["lr"] == 0.01 for g in opt.param_groups)   # the loop sets lr = lr_t * scale
    assert min(expected) == pytest.approx(0.2) and max(expected) == pytest.approx(1.0)


def test_phase_order_and_single_metric_schedules():
    net = three_linear()
    for order, phases in ((("svd", "ce", "cs"), ["svd", "ce", "cs", "svd", "ce"]),
                          (("cs", "svd"), ["cs", "svd", "cs", "svd", "cs"]),
                          (("ce",), ["ce"] * 5)):
        scaler = LALRScaler(order)
        for _ in range(5):
            scaler(net, ["0", "2", "4"])
        assert [r["phase"] for r in scaler.log] == phases


def test_recompute_once_freezes_the_metrics_of_the_first_call():
    once, every = LALRScaler(recompute="once"), LALRScaler()
    outs = {"once": [], "every": []}
    for epoch in range(4):
        net = three_linear(cs=(1.0 + epoch, 2.0, 4.0 - 0.5 * epoch))   # training moved them
        for key, sc in (("once", once), ("every", every)):
            outs[key].append(sc(net, ["0", "2", "4"]))
    for s, extras in outs["once"]:
        assert extras["svd"].tolist() == pytest.approx([1.0, 2.0, 4.0], rel=1e-12)
    assert outs["once"][0][0].tolist() == outs["once"][3][0].tolist()   # both svd epochs
    assert [r["recomputed"] for r in once.log] == [True, False, False, False]
    assert outs["every"][3][1]["svd"].tolist() == pytest.approx([4.0, 2.0, 2.5], rel=1e-12)
    assert outs["every"][0][0].tolist() != outs["every"][3][0].tolist()


def test_state_dict_round_trip_continues_the_schedule():
    net = three_linear()
    a = LALRScaler(recompute="once")
    for _ in range(2):
        a(net, ["0", "2", "4"])
    b = LALRScaler(recompute="once")
    b(three_linear(cs=(9.0, 1.0, 1.0)), ["0", "2", "4"])          # overwritten by the load
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    later = three_linear(cs=(3.0, 3.0, 1.0))
    (sa, ea), (sb, eb) = a(later, ["0", "2", "4"]), b(later, ["0", "2", "4"])
    assert a.log[-1]["phase"] == b.log[-1]["phase"] == "cs"
    assert sa.tolist() == sb.tolist() and ea["svd"].tolist() == eb["svd"].tolist() == [1, 2, 4]


def test_as_written_scaler_zips_metrics_over_all_groups():
    """Bug 3 with known metrics: raw SVD [1, 2, 4] -> u [0, 1/3, 1] -> scale 1 - u; 2.weight
    trains at 4.weight's scale 0 (frozen) instead of its own 2/3; 4.weight keeps lr_t."""
    net = three_linear()
    cb = LALR.as_written().callbacks(None)[0]
    opt = torch.optim.AdamW(LALR.as_written().param_groups(net, 1e-3), lr=1e-3)
    cb.on_optimizer(opt)
    cb.on_train_start(net)
    got = {g["layer"]: g["lr_scale"] for g in opt.param_groups}
    assert got == pytest.approx({"0.weight": 1.0, "0.bias": 1.0, "2.weight": 0.0, "2.bias": 1.0,
                                 "4.weight": 1.0, "4.bias": 1.0})
    table = cb.result()
    assert table["metric_of"][:3].tolist() == ["0.weight", "2.weight", "4.weight"]
    assert table["metric_of"][3:].isna().all() and (table["phase"] == "svd").all()
    assert table["svd"][:3].tolist() == pytest.approx([1.0, 2.0, 4.0])


def test_literal_normaliser_gives_nan_on_identical_layers_guarded_gives_half():
    net = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    with torch.no_grad():
        net[1].weight.copy_(net[0].weight)
        net[1].bias.copy_(net[0].bias)
    s_lit, _ = LALRScaler(normalise="literal")(net, ["0", "1"])
    s_grd, e = LALRScaler()(net, ["0", "1"])
    assert np.isnan(s_lit).all() and s_grd.tolist() == [0.5, 0.5] and e["u"].tolist() == [0.5] * 2


def test_non_finite_weights_keep_lr_t():
    net = three_linear()
    with torch.no_grad():
        net[2].weight[0, 0] = float("nan")
    s, extras = LALRScaler()(net, ["0", "2", "4"])
    assert s.tolist() == [1.0, 1.0, 1.0] and np.isnan(extras["svd"]).all()


def test_unknown_layer_raises():
    with pytest.raises(ValueError, match="no LALR layer"):
        LALRScaler()(three_linear(), ["0", "classifier"])


# ----------------------------------------------------------------------------- the loop
def test_run_cycles_phases_and_trains_each_group_at_lr_t_times_its_scale():
    cfg = RunConfig(**TINY, schedule="cosine_tb", methods=(LALR(),))  # lr_t > 0 every epoch
    probe = LRProbe()
    out = train(cfg, callbacks=[probe], progress=False)
    table = out["callbacks"]["lalr"]
    assert list(table.columns) == ["epoch", "layer", "phase", "svd", "ce", "cs", "u",
                                   "metric_time_s", "lr_scale"]
    assert table.groupby("epoch")["phase"].first().tolist() == ["svd", "ce", "cs", "svd"]
    assert table.groupby("epoch")["layer"].apply(list).tolist() == [LAYERS] * 4
    scale = table.set_index(["epoch", "layer"])["lr_scale"]
    assert len(probe.lrs) == 3 * 3
    for epoch, lr_t, layer, lr in probe.lrs:          # lr_t follows the cosine schedule
        assert lr == pytest.approx(lr_t * scale[(epoch - 1, layer)], rel=1e-12)
    for e, at in table.groupby("epoch"):               # min-max, s_min = 0: one frozen layer
        assert min(at["lr_scale"]) == 0.0 and max(at["lr_scale"]) == 1.0
        assert (at["metric_time_s"] > 0).all()
    for e in range(3):                                 # the frozen layer did not move in epoch e
        frozen = table[(table["epoch"] == e) & (table["lr_scale"] == 0.0)]["layer"].item()
        before, after = probe.weights[e], probe.weights[e + 1]
        for k in (f"{frozen}.weight", f"{frozen}.bias"):
            assert torch.equal(before[k], after[k]), (e, k)
        moving = [n for n in LAYERS if n != frozen]
        assert not torch.equal(before[f"{moving[0]}.weight"], after[f"{moving[0]}.weight"])
    for e in range(4):                                 # the table's metrics are the probed weights'
        w = [probe.weights[e][f"{n}.weight"] for n in LAYERS]
        raw = layer_metrics(w)
        at = table[table["epoch"] == e]
        for m in ("svd", "ce", "cs"):
            assert at[m].to_numpy() == pytest.approx(raw[m], rel=1e-9)


def test_run_with_floor_and_resume(tmp_path):
    cfg = RunConfig(**{**TINY, "epochs": 3}, methods=(LALR(s_min=0.25, recompute="once"),))
    full = train(cfg, progress=False)
    table = full["callbacks"]["lalr"]
    assert table["lr_scale"].min() == pytest.approx(0.25) and table["lr_scale"].max() == 1.0
    assert (table[table["epoch"] > 0]["metric_time_s"] == 0).all()         # metrics once
    by_epoch = table.set_index(["epoch", "layer"])["lr_scale"]
    assert by_epoch[0].tolist() == by_epoch[3].tolist()                    # both svd epochs
    # a checkpoint of epoch 2 is left behind; a second call resumes from it (epoch 3 only,
    # in phase cs, with the metrics of the first call kept in the scaler's state)
    train(cfg, progress=False, checkpoint_dir=tmp_path, checkpoint_every=2)
    resumed = train(cfg, progress=False, checkpoint_dir=tmp_path, checkpoint_every=2)
    assert len(resumed["steps"]) == len(full["steps"])
    pd.testing.assert_frame_equal(resumed["callbacks"]["lalr"].drop(columns="metric_time_s"),
                                  table.drop(columns="metric_time_s"))
    pd.testing.assert_frame_equal(resumed["history"].drop(columns="time_s"),
                                  full["history"].drop(columns="time_s"))
