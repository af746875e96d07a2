"""TempBalance in the training loop: config fields, cache-key compatibility, per-layer groups,
multipliers from the current alphas every epoch (seed 001 ch. 2), and resume."""

import numpy as np
import pandas as pd
import pytest

from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import make_optimizer, train
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance

TINY = dict(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16,
            model="basic_cnn", batch_size=16, epochs=2, device="cpu")


class GroupLRs:
    """Records every tagged group's lr of the epoch that just ended (runs before TempBalance)."""

    name = "group_lrs"

    def __init__(self):
        self.rows = []

    def on_optimizer(self, optimizer):
        self.optimizer = optimizer

    def on_epoch_end(self, model, row):
        self.rows += [(row["epoch"], row["lr"], g["layer"], g["lr"])
                      for g in self.optimizer.param_groups if g.get("layer") is not None]

    def result(self):
        return self.rows



def test_key_rebuilds_the_config_with_its_methods():
    cfg = RunConfig(**TINY, methods=(TempBalance("tb_linear", (("lr_min_ratio", 0.4),), "ks"),))
    key = cfg.key()
    assert key["methods"] == [{"kind": "tempbalance", "scheme": "tb_linear",
                               "params": (("lr_min_ratio", 0.4),), "xmin": "ks",
                               "min_eigs": 0, "zeros": "keep", "norms": "name"}]
    assert RunConfig(**key) == cfg and hash(RunConfig(**key)) == hash(cfg)
    assert RunConfig(**TINY).key()["methods"] == []


@pytest.mark.parametrize("bad, match", [
    (dict(scheme="tb_quadratic"), "tb_quadratic"),
    (dict(xmin="mean"), "mean"),
    (dict(scheme="tb_linear", params=(("lr_mid_ratio", 1.0),)), "lr_mid_ratio"),
    (dict(scheme="tb_linear", params=(1, 2)), "pairs"),
])
def test_bad_tempbalance_settings_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        RunConfig(**TINY, methods=(TempBalance(**bad),))


def test_bad_methods_raise():
    with pytest.raises(ValueError, match="unknown method 'lalr9'"):
        RunConfig(**TINY, methods=({"kind": "lalr9"},))
    with pytest.raises(ValueError, match="once"):
        RunConfig(**TINY, methods=(TempBalance(), TempBalance("eq2.13")))
    with pytest.raises(ValueError, match="tuple of MethodConfig"):
        RunConfig(**TINY, methods=TempBalance())


def test_lists_become_hashable_tuples():
    cfg = RunConfig(**TINY, methods=[TempBalance("tb_linear", [["lr_max_ratio", 2.0]])])
    assert cfg.method("tempbalance").params == (("lr_max_ratio", 2.0),) and hash(cfg)
    assert TempBalance("tb_linear", {"lr_max_ratio": 2.0}) == cfg.method("tempbalance")


def test_default_config_has_one_group_without_lr_scale():
    cfg = RunConfig(**TINY)
    model = build_model("basic_cnn", in_channels=1, num_classes=10, image_size=28)
    opt = make_optimizer(cfg, model)
    assert len(opt.param_groups) == 1 and "lr_scale" not in opt.param_groups[0]
    out = train(cfg, progress=False)
    assert "tempbalance" not in out["callbacks"]


def test_layer_groups_skip_stem_and_classifier():
    cfg = RunConfig(**TINY, methods=(TempBalance(),))
    model = build_model("basic_cnn", in_channels=1, num_classes=10, image_size=28)
    groups = make_optimizer(cfg, model).param_groups
    assert [g["layer"] for g in groups] == ["conv2", "conv3", None]
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))


def test_tb_linear_run_allocates_from_alphas_every_epoch():
    cfg = RunConfig(**{**TINY, "epochs": 3}, methods=(TempBalance(),), lr=0.05,
                    schedule="cosine")
    probe = GroupLRs()
    out = train(cfg, callbacks=[probe], progress=False)
    tb = out["callbacks"]["tempbalance"]
    assert list(tb.columns) == ["epoch", "layer", "alpha", "lr_scale"]
    # alphas of every layer at the start (epoch 0) and after every epoch
    assert sorted(map(tuple, tb[["epoch", "layer"]].to_numpy())) == \
        [(e, n) for e in range(cfg.epochs + 1) for n in ("conv2", "conv3")]
    assert np.isfinite(tb["alpha"]).all() and (tb["alpha"] > 1).all()
    # every layer group trained at lr_t times the multiplier fitted before that epoch
    scale = tb.set_index(["epoch", "layer"])["lr_scale"]
    assert len(probe.rows) == cfg.epochs * 2
    for epoch, lr_t, layer, lr in probe.rows:
        assert lr == pytest.approx(lr_t * scale[(epoch - 1, layer)], rel=1e-12)
    # tb_linear: the larger alpha gets the larger lr, ends at lr_min_ratio / lr_max_ratio
    for _, at in tb.groupby("epoch"):
        order_a, order_s = np.argsort(at["alpha"].to_numpy()), np.argsort(at["lr_scale"].to_numpy())
        assert (order_a == order_s).all()
        assert sorted(at["lr_scale"]) == pytest.approx([0.5, 1.5])


def test_layer_lr_params_and_resume(tmp_path):
    cfg = RunConfig(**{**TINY, "epochs": 3}, methods=(
        TempBalance("tb_linear", (("lr_min_ratio", 0.8), ("lr_max_ratio", 1.2))),))
    full = train(cfg, progress=False)
    tb = full["callbacks"]["tempbalance"]
    assert sorted(tb["lr_scale"].unique()) == pytest.approx([0.8, 1.2])
    # the checkpoint of epoch 2 is left behind; a second call resumes from it (epoch 3 only)
    train(cfg, progress=False, checkpoint_dir=tmp_path, checkpoint_every=2)
    resumed = train(cfg, progress=False, checkpoint_dir=tmp_path, checkpoint_every=2)
    pd.testing.assert_frame_equal(resumed["callbacks"]["tempbalance"], tb)
    pd.testing.assert_frame_equal(resumed["history"].drop(columns="time_s"),
                                  full["history"].drop(columns="time_s"))


def test_one_output_head_and_small_layers_do_not_stop_tempbalance():
    """The skipped classifier is never fitted (a 1-output head has one eigenvalue), and a layer
    under min_eigs keeps lr_t with a NaN alpha, the others are allocated among themselves."""
    from lalr_core.methods.layer_lr.tempbalance.callback import TempBalanceCallback
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(20, 30), torch.nn.Linear(30, 30),
                              torch.nn.Linear(30, 4), torch.nn.Linear(4, 1))
    cfg = RunConfig(**TINY, methods=(TempBalance("eq2.13"),))
    opt = make_optimizer(cfg, net)
    assert [g["layer"] for g in opt.param_groups] == ["1", "2", None]
    cb = TempBalanceCallback("eq2.13", min_eigs=10)
    cb.on_optimizer(opt)
    cb.on_train_start(net)  # raised "need >= 2 eigenvalues" when every layer was fitted
    rows = cb.result().set_index("layer")
    assert np.isnan(rows.loc["2", "alpha"]) and rows.loc["2", "lr_scale"] == 1.0
    assert np.isfinite(rows.loc["1", "alpha"]) and rows.loc["1", "lr_scale"] == pytest.approx(1.0)
    full = TempBalanceCallback("eq2.13")
    full.on_optimizer(opt)
    full.on_train_start(net)
    assert np.isfinite(full.result()["alpha"]).all()


def test_callback_counts_a_rank_deficient_layer_as_tempbalance_does():
    """TempBalance's net_esd_estimator keeps numerical zeros (filter_zeros=False), so a
    rank-10 layer's median x_min is a zero and its alpha the limit 1; dropping the zeros
    (spectral's default) would fit a 5-value tail of the 10 non-zero eigenvalues instead."""
    from lalr_core.methods import spectra as spectral
    from lalr_core.methods.layer_lr.tempbalance.callback import TempBalanceCallback
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(8, 150), torch.nn.Linear(150, 200),
                              torch.nn.Linear(200, 150), torch.nn.Linear(150, 3)).double()
    with torch.no_grad():  # layer "1": a 200 x 150 weight of rank 10
        net[1].weight.copy_(torch.randn(200, 10, generator=g, dtype=torch.float64)
                            @ torch.randn(10, 150, generator=g, dtype=torch.float64))
    cfg = RunConfig(**TINY, methods=(TempBalance("eq2.13"),))
    opt = make_optimizer(cfg, net)
    cb = TempBalanceCallback("eq2.13")
    cb.on_optimizer(opt)
    cb.on_train_start(net)
    rows = cb.result().set_index("layer")
    lam = spectral.esd(net[1].weight.detach())
    assert int((lam == 0).sum()) == 140
    assert rows.loc["1", "alpha"] == 1.0                                   # TempBalance's count
    assert spectral.fit_alpha(lam, "median")["alpha"] > 3                  # the other count
    full_rank = spectral.fit_alpha(spectral.esd(net[2].weight.detach()), "median")["alpha"]
    assert rows.loc["2", "alpha"] == full_rank         # identical counts on a full-rank layer


def test_tempbalance_param_groups_follow_the_authors_bn_rule_by_default():
    net = build_model("resnet18_mini", in_channels=1, num_classes=10, width=0.25, image_size=8)
    shortcut_bn = dict(net.named_modules())["layer2.0.shortcut.1"].weight
    def group_of(method):
        groups = method.param_groups(net, 0.1)
        return next(g["layer"] for g in groups if any(p is shortcut_bn for p in g["params"]))
    assert group_of(TempBalance()) is None                    # keeps the global lr
    assert group_of(TempBalance(norms="order")) == "layer2.0.shortcut.0"
    with pytest.raises(ValueError, match="norms"):
        TempBalance(norms="nearest")
