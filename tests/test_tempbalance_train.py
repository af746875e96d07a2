"""TempBalance in the training loop: config fields, cache-key compatibility, per-layer groups,
multipliers from the current alphas every epoch (seed 001 ch. 2), and resume."""

import numpy as np
import pandas as pd
import pytest

from lalr_core.models import build_model
from lalr_core.profiles import OMIT_AT_DEFAULT, RunConfig
from lalr_core.train import make_optimizer, train

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

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


def test_key_omits_new_fields_at_their_defaults():
    key = RunConfig(**TINY).key()
    assert not set(OMIT_AT_DEFAULT) & set(key)
    assert RunConfig(**key) == RunConfig(**TINY)  # a key still rebuilds its config
    tb = RunConfig(**TINY, layer_lr="tb_linear", layer_lr_params=(("lr_min_ratio", 0.4),),
                   alpha_xmin="ks").key()
    assert set(OMIT_AT_DEFAULT) - {"augmix"} <= set(tb)
    assert RunConfig(**{**TINY, "augment": True}, augmix=True).key()["augmix"] is True
    assert tb["layer_lr_params"] == (("lr_min_ratio", 0.4),)
    assert RunConfig(**TINY, layer_lr="tb_linear").key()["layer_lr"] == "tb_linear"


@pytest.mark.parametrize("bad, match", [
    (dict(layer_lr="tb_quadratic"), "tb_quadratic"),
    (dict(alpha_xmin="mean"), "mean"),
    (dict(layer_lr="tb_linear", layer_lr_params=(("lr_mid_ratio", 1.0),)), "lr_mid_ratio"),
    (dict(layer_lr_params=(("lr_min_ratio", 0.5),)), "none"),
    (dict(layer_lr="tb_linear", layer_lr_params=(1, 2)), "pairs"),
])
def test_bad_layer_lr_fields_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        RunConfig(**TINY, **bad)


def test_lists_become_hashable_tuples():
    cfg = RunConfig(**TINY, layer_lr="tb_linear", layer_lr_params=[["lr_max_ratio", 2.0]])
    assert cfg.layer_lr_params == (("lr_max_ratio", 2.0),) and hash(cfg)


def test_default_config_has_one_group_without_lr_scale():
    cfg = RunConfig(**TINY)
    model = build_model("basic_cnn", in_channels=1, num_classes=10, image_size=28)
    opt = make_optimizer(cfg, model)
    assert len(opt.param_groups) == 1 and "lr_scale" not in opt.param_groups[0]
    out = train(cfg, progress=False)
    assert "tempbalance" not in out["callbacks"]


def test_layer_groups_skip_stem_and_classifier():
    cfg = RunConfig(**TINY, layer_lr="tb_linear")
    model = build_model("basic_cnn", in_channels=1, num_classes=10, image_size=28)
    groups = make_optimizer(cfg, model).param_groups
    assert [g["layer"] for g in groups] == ["conv2", "conv3", None]
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))


def test_tb_linear_run_allocates_from_alphas_every_epoch():
    cfg = RunConfig(**{**TINY, "epochs": 3}, layer_lr="tb_linear", lr=0.05, schedule="cosine")
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
    cfg = RunConfig(**{**TINY, "epochs": 3}, layer_lr="tb_linear",
                    layer_lr_params=(("lr_min_ratio", 0.8), ("lr_max_ratio", 1.2)))
    full = train(cfg, progress=False)
    tb = full["callbacks"]["tempbalance"]
    assert sorted(tb["lr_scale"].unique()) == pytest.approx([0.8, 1.2])
    # the checkpoint of epoch 2 is left behind; a second call resumes from it (epoch 3 only)
    train(cfg, progress=False, checkpoint_dir=tmp_path, checkpoint_every=2)
    resumed = train(cfg, progress=False, checkpoint_dir=tmp_path, checkpoint_every=2)
    pd.testing.assert_frame_equal(resumed["callbacks"]["tempbalance"], tb)
    pd.testing.assert_frame_equal(resumed["history"].drop(columns="time_s"),
                                  full["history"].drop(columns="time_s"))
