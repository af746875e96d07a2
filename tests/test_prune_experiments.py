"""Chapter 02b (seed 001 ch. 3): typed settings, run builders and the checks' arithmetic."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from lalr_core.methods.pruning import channel_masks
from lalr_core.chapters import ch02b_htsr_pruning as px
from lalr_core.chapters import chapter, chapter_settings
from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.config import RunConfig

PROFILES = ("smoke", "quick", "paper")


def fake_tables(s, seed=0):
    """``{(role, aug): layer_table}`` with random metrics on the real conv names of each model
    (no pretrained weights needed; the paper models are only built, not run)."""
    rng = np.random.default_rng(seed)
    out = {}
    for role, aug in px.pretrain_pairs(s):
        cfg = px.pretrain_config(s, role, aug)
        with torch.device("meta"):                          # shapes only, no memory
            model = build_model(cfg.model, in_channels=cfg.image_shape[0], num_classes=10,
                                image_size=cfg.image_shape[1])
        convs = channel_masks.prunable_layers(model)
        metrics = pd.DataFrame(rng.uniform(0.5, 5.0, size=(len(convs), len(px.METRICS))),
                               index=list(convs), columns=list(px.METRICS))
        out[(role, aug)] = (metrics, {k: int(c.weight.numel()) for k, (c, _) in convs.items()})
    return out


def test_table_3_1_is_the_source_table():
    assert px.SETTINGS == {"traditional": {"direct": 1, "inverse": 2},
                           "augmix": {"direct": 3, "inverse": 4}}
    t = px.settings_table()
    assert t.loc["Traditional"].tolist() == [1, 2] and t.loc["AugMix"].tolist() == [3, 4]
    assert px.setting("augmix", "inverse") == 4
    with pytest.raises(ValueError):
        px.setting("imgaug", "direct")


def test_ten_metrics_in_three_groups():
    assert len(px.METRICS) == 10 == len(set(px.METRICS))
    assert set(px.SHAPE) == {"alpha", "rand_distance", "stable_rank", "entropy"}


@pytest.mark.parametrize("profile", PROFILES)
def test_settings_validate(profile):
    s = chapter_settings("02b", profile)
    assert set(s.f33_metrics) <= set(px.METRICS)
    assert set(s.te_metrics) <= set(s.f33_metrics)
    assert set(s.grid_metrics) <= set(px.METRICS) and set(s.f33_augs) <= set(px.AUGS)
    assert all(0 <= p < 1 for p in (*s.f33_ratios, *s.vgg_ratios, *s.f326_ratios))
    if profile == "paper":
        assert s.dataset == "cifar100" and s.models["vgg"] == "vgg19_cifar"
        assert s.ft_lr == 0.05 and len(s.vgg_ratios) == 11 and s.f322_ratio == 0.553


def test_unknown_override_raises():
    with pytest.raises(ValueError, match="unknown setting"):
        chapter_settings("02b", "quick", {"no_such_setting": 1})
    with pytest.raises(ValueError, match="unknown profile"):
        chapter_settings("02b", "huge")
    with pytest.raises(ValueError, match=r"known: \[.*'f33_epochs'.*'vgg_ratios'"):
        chapter_settings("02b", "smoke", {"f33_epoch": 3})


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_constructs_and_passes_its_check(profile):
    s = px.PROFILES[profile]
    assert isinstance(s, px.Settings) and chapter("02b").profiles[profile] is s
    s.check()
    assert chapter_settings("02b", profile) == s
    assert set(s.as_dict()) == {f.name for f in dataclasses.fields(px.Settings)}


def test_papermill_overrides_keep_working():
    s = chapter_settings("02b", "smoke", {"f33_epochs": 3, "f33_ratios": [0.5, 0.7],
                                          "seed": None})
    assert s.f33_epochs == 3 and s.f33_ratios == (0.5, 0.7) and s.seed == px.PROFILES["smoke"].seed
    assert px.PROFILES["smoke"].f33_epochs == 2                    # the profile is not touched


_MODELS = dict(px.PROFILES["smoke"].models)


@pytest.mark.parametrize("bad, match", [
    ({"pretrain_lr": 0}, "pretrain_lr"),
    ({"ft_lr": 0.0}, "ft_lr"),
    ({"ft_lr": -0.05}, "ft_lr"),
    ({"pretrain_lr": "fast"}, "pretrain_lr.*number"),
    ({"pretrain_epochs": 0}, "pretrain_epochs"),
    ({"f33_epochs": 0}, "f33_epochs"),
    ({"f33_epochs": "3"}, "f33_epochs.*integer"),
    ({"vgg_epochs": 2.5}, "vgg_epochs.*integer"),
    ({"f322_epochs": 0}, "f322_epochs"),
    ({"f326_epochs": -1}, "f326_epochs"),
    ({"batch_size": 0}, "batch_size"),
    ({"workers": 0}, "workers"),
    ({"n_train": 0}, "n_train"),
    ({"seed": -1}, "seed"),
    ({"wd": -1e-4}, "wd"),
    ({"momentum": 1.0}, "momentum"),
    ({"executor": "slurm"}, "executor"),
    ({"dataset": "imagenet_mini"}, "dataset.*unknown dataset"),
    ({"models": _MODELS | {"vgg": "vgg_huge"}}, "models.*vgg.*unknown model"),
    ({"models": {k: v for k, v in _MODELS.items() if k != "vgg"}}, "models.*vgg"),
    ({"models": "vgg_mini"}, "models.*mapping"),
    ({"f33_augs": ("cutmix",)}, "f33_augs.*augmentations"),
    ({"grid_metrics": ()}, "grid_metrics.*empty"),
    ({"fig31_roles": ("resnet",)}, "fig31_roles"),
    ({"augmix_roles": ("densenet",)}, "augmix_roles.*mobilenet"),
    ({"fig32_roles": ("wrn",)}, "fig32_roles"),
    ({"fig31_sparsity": 1.0}, "fig31_sparsity"),
    ({"f33_ratios": (0.0, 0.5)}, "f33_ratios"),
    ({"f326_ratios": ()}, "f326_ratios"),
    ({"te_ratios": (0.96,)}, "te_ratios"),
    ({"f322_ratio": 1.0}, "f322_ratio"),
    ({"vgg_ratios": (-0.1,)}, "vgg_ratios"),
])
def test_bad_values_stop_at_chapter_settings(bad, match):
    """Each bad value stops where the notebook's first cell resolves its settings."""
    with pytest.raises(ValueError, match=match):
        chapter_settings("02b", "smoke", bad)


def test_the_pretraining_section_is_a_fixed_list_at_smoke():
    s = chapter_settings("02b", "smoke")
    cfgs, cbs = chapter("02b").runs(s, "pretraining")
    assert [(c.model, c.augmix) for c in cfgs] == [
        ("densenet10_mini", True), ("wrn10_1", True), ("mobilenetv2_mini", True),
        ("densenet10_mini", False), ("wrn10_1", False), ("mobilenetv2_mini", False),
        ("vgg_mini", False)]
    common = dict(dataset="digits", n_train=256, augment=True, optimizer="sgdm", lr=0.1,
                  momentum=0.9, wd=5e-4, batch_size=64, epochs=2, schedule="cosine", seed=0)
    assert all(c == c.replace(**common) for c in cfgs)
    spectral = {"xmin": "ks", "conv": "flatten", "every": 1}
    assert cbs == [{"weights": {}, "spectral": spectral}] * 2 + [{"weights": {}}] + \
        [{"weights": {}, "spectral": spectral}] * 2 + [{"weights": {}}] * 2
    assert (cfgs, cbs) == px.pretrain_runs(s) == chapter("02b").all_runs(s)


@pytest.mark.parametrize("profile", PROFILES)
def test_builders_yield_valid_configs(profile):
    s = chapter_settings("02b", profile)   # paper too: its full grids (budgets are cheap)
    cfgs, cbs = px.pretrain_runs(s)
    assert len(cfgs) == len(px.pretrain_pairs(s)) and cfgs[0].augmix  # AugMix (slow) first
    assert all(isinstance(c, RunConfig) and c.augment and c.schedule == "cosine" for c in cfgs)
    plan = px.finetune_plan(s, fake_tables(s))
    for name, specs in plan.items():
        for x in specs:
            cfg, cb = x["cfg"], x["callbacks"]
            assert isinstance(cfg, RunConfig) and not cfg.augmix and cfg.lr == s.ft_lr
            assert RunConfig(**cfg.key()) == cfg                         # round-trips as a key
            assert cb["pruned_start"]["pretrained"] == px.pretrain_unit(s, x["role"], x["aug"])
            assert all(0 <= r < 1 for r in cb["pruned_start"]["ratios"].values())
    n33 = (len(s.f33_ratios) + len(s.f33_aug_ratios)) * (1 + 2 * len(s.f33_metrics)) + \
        len(set(s.curve_ratios) - set(s.f33_ratios)) + len(set(s.curve_ratios) - set(s.f33_aug_ratios))
    assert len(plan["fig3.3"]) == n33
    # the uniform curve of each sweep: its targets and the curve's, each once
    for aug, swept in (("traditional", s.f33_ratios), ("augmix", s.f33_aug_ratios)):
        Ps = [x["P"] for x in plan["fig3.3"] if x["aug"] == aug and x["metric"] == px.UNIFORM]
        assert sorted(Ps) == sorted(set(swept) | set(s.curve_ratios))
    assert len(plan["vgg"]) == 2 * len(s.vgg_ratios) * s.vgg_seeds
    # finetuning seeds change the data order only: same masks, the first seed the pretraining's
    by_seed = {}
    for x in plan["vgg"]:
        by_seed.setdefault(x["cfg"].seed, []).append((x["P"], x["layer_lr"], x["callbacks"]))
    assert sorted(by_seed) == [s.seed + k for k in range(s.vgg_seeds)]
    assert all(v == by_seed[s.seed] for v in by_seed.values())
    assert {x["layer_lr"] for x in plan["fig3.22"]} == {"none", "eq2.13"}
    cfgs, _ = px.all_finetunes(plan)
    assert cfgs[0].epochs == max(c.epochs for c in cfgs)


def test_budgets_never_exceed_the_target():
    s = chapter_settings("02b", "smoke")
    table = fake_tables(s, seed=3)[("densenet", "traditional")]
    sizes = pd.Series(table[1], dtype=float)
    grid = px.budget_grid(table, (0.3, 0.5, 0.7, 0.85))
    for (metric, rule, P), g in grid.groupby(["metric", "rule", "P"]):
        mean = float((g.set_index("layer")["ratio"] * sizes).sum() / sizes.sum())
        assert mean <= P + 1e-9 and mean >= P - 0.02, (metric, rule, P, mean)
        if metric == px.UNIFORM:
            assert (g["ratio"] == P).all()
    corr = px.rule_correlations(grid)
    assert (corr["corr"].dropna() < 0).all()                 # direct vs inverse mirror images


def test_unknown_metric_raises():
    s = chapter_settings("02b", "smoke")
    table = fake_tables(s)[("densenet", "traditional")]
    with pytest.raises(ValueError, match="unknown metric"):
        px.ratios_for(table, "temperature", 0.5)


def test_rebound_detector():
    assert px.rebound([1.0, 0.9, 0.8, 0.85, 0.86])           # dip then +7.5 %
    assert not px.rebound([1.0, 0.9, 0.8, 0.81, 0.805])     # rise of 1.25 % < 2 %
    assert not px.rebound([1.0, 0.9, 0.8, 0.7])             # minimum at the end
    assert not px.rebound([0.5, 0.9, 1.0])                  # minimum at the start
    assert not px.rebound([1.0, 0.5])


def test_ranks_and_zscore():
    v = {"a": 3.0, "b": 1.0, "c": 2.0, "d": 5.0}
    assert px.ranks_of(v, ["b", "d"]) == {"b": 1, "d": 4}
    assert px.max_abs_zscore([1, 1, 1]) == 0.0
    x = np.r_[np.zeros(9), 10.0]
    assert px.max_abs_zscore(x) == pytest.approx(9 / np.sqrt(10))


def test_lr_extremes_and_shift():
    tb = pd.DataFrame({"epoch": [0] * 4 + [1] * 4, "layer": list("abcd") * 2,
                       "lr_scale": [1.5, 0.5, 1.1, 0.9, 1.0, 1.0, 1.0, 3.0]})
    inc, dec = px.lr_extremes(tb, 2)
    assert inc == ["a", "c"] and dec == ["b", "d"]
    assert px.largest_lr_shift(tb, 1) == ["d"]


def test_run_table_keeps_each_runs_test_predictions():
    specs = [dict(section="s", role="densenet", aug="traditional", metric=m, rule=r, P=0.5,
                  layer_lr="none", epochs=1, cfg=RunConfig(dataset="digits", seed=3))
             for m, r in (("uniform", "uniform"), ("entropy", "direct"), ("norm", "inverse"))]
    res = [{"final": {"test_acc": a, "train_acc": a}, "diverged": d, "wall_time_s": 1.0,
            "test_correct": None if d else [True, False, True],
            "callbacks": {"pruned_start": {"sparsity": {"params": sp, "channels": sp}}}}
           for a, sp, d in ((0.80, 0.5, False), (0.85, 0.48, False), (0.70, 0.51, True))]
    t = px.run_table(specs, res, remaining_fn=None)
    assert t["over_pruned"].tolist() == [False, False, True]
    assert t["setting"].tolist() == [0, 1, 2]
    assert t["remaining"].tolist() == pytest.approx([0.5, 0.52, 0.49])
    assert t["test_correct"][0].tolist() == [True, False, True] and t["test_correct"][2] is None
    assert t["seed"].tolist() == [3, 3, 3] and t["test_acc"][1] == pytest.approx(85.0)


def test_transition_layers_and_fig31():
    model = build_model("densenet10_mini", in_channels=1, num_classes=10, image_size=8)
    assert px.transition_layers(model) == ["features.2.conv", "features.5.conv"]
    torch.manual_seed(0)
    t = px.fig31_table(model, 0.8)
    assert (t["uniform"] == 0.8).all() and len(t) == len(channel_masks.prunable_layers(model))
    assert t["erk"].corr(t["size"], method="spearman") > 0.5


@pytest.mark.parametrize("bad, match", [
    ({"f33_metrics": ("alpha", "beta")}, "unknown metrics"),
    ({"rules": ("sideways",)}, "rules"),
    ({"importance": "random"}, "importance"),
    ({"te_roles": ("resnet",)}, "roles"),
    ({"grid_ratios": (0.5, 1.5)}, "grid_ratios"),
    ({"vgg_ratios": (0.0, 1.0)}, "vgg_ratios"),
])
def test_bad_settings_fail_before_any_compute(bad, match):
    with pytest.raises(ValueError, match=match):
        chapter_settings("02b", "smoke", bad)


def test_slimmed_remaining_rebuilds_the_runs_start(tmp_path, monkeypatch):
    from lalr_core.methods.pruning.channel_masks import prune_channels, slimmed_parameters
    from lalr_core.core.runs.units import train_runs
    from lalr_core.core.runs import ROOT_ENV
    from lalr_core.core.loop.train import initial_model

    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "runs"))
    pre = RunConfig(dataset="digits", n_train=64, n_test=32, model="densenet10_mini",
                    batch_size=32, epochs=1, device="cpu")
    train_runs([pre], callbacks={"weights": {}})
    unit = {"run": pre.key(), "callbacks": {"weights": {}}}
    ratios = {"features.0.conv": 0.5, "features.2.conv": 0.5}
    spec = {"cfg": pre.replace(seed=1), "callbacks": {"pruned_start": {
        "pretrained": unit, "ratios": ratios, "importance": "me_prune"}}}
    model = initial_model(pre)
    model.load_state_dict(train_runs([pre], callbacks={"weights": {}})[0]["callbacks"]["weights"])
    pruned, masks = prune_channels(model, ratios, "me_prune")
    want = slimmed_parameters(pruned, masks, (1, 8, 8))["remaining"]
    assert px.slimmed_remaining(spec) == pytest.approx(want)
    # the transition conv's pruned outputs also remove inputs of every later dense layer
    zeroed = sum(m.eq(0).sum().item() for k, m in masks.items() if k.endswith("conv.weight"))
    masked_only = 1 - zeroed / sum(p.numel() for p in model.parameters() if p.dim() == 4)
    assert want < masked_only
