"""Seed 001 ch. 2-3 callbacks (`lalr_core.methods.pruning.pruned_start`): final weights, spectral probe,
train -> prune -> finetune through the run cache (oracles: the model object itself,
`spectral.fit_alpha` on the final weights, L1 channel scores recomputed by hand)."""

import math

import numpy as np
import pytest
import torch

from lalr_core.methods import spectra as spectral
from lalr_core.core.data import load_data
from lalr_core.core.runs.units import train_runs
from lalr_core.core.loop.callbacks import FinalWeights
from lalr_core.core.runs.units import pretrained_weights
from lalr_core.methods.pruning.pruned_start import PrunedStart
from lalr_core.methods.spectra.probe import SpectralProbe
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance
from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.runs import ROOT_ENV, RunCache
from lalr_core.core.loop.train import train

# Real sklearn digits (8x8), 64 train samples: two steps per epoch.
TINY = {"dataset": "digits", "n_train": 64, "n_test": 32, "model": "resnet18_mini",
        "batch_size": 32, "epochs": 1, "lr": 0.05, "device": "cpu"}
RATIOS = {"conv1": 0.25, "layer1.0.conv1": 0.5, "layer2.0.conv2": 0.3,
          "layer3.0.shortcut.0": 0.1}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def digits():
    return load_data("digits", n_train=64, n_test=32)


@pytest.fixture
def runs_root(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "runs"))
    return tmp_path / "runs"


class Capture:
    """Keeps the model object and a copy of its weights at train start (after the callbacks
    before it in the list have run)."""

    name = "capture"

    def on_train_start(self, model):
        self.model = model
        self.start = {k: v.detach().clone() for k, v in model.state_dict().items()}



# ----------------------------------------------------------------------------- FinalWeights

def test_final_weights_equal_the_models_final_state(digits):
    fw, cap = FinalWeights(), Capture()
    out = train(RunConfig(**{**TINY, "epochs": 2}), data=digits, callbacks=[cap, fw],
                progress=False)
    got, final = out["callbacks"]["weights"], cap.model.state_dict()
    assert got is fw.result() and set(got) == set(final)
    for k, v in final.items():
        assert got[k].device.type == "cpu" and torch.equal(got[k], v), k
    assert not torch.equal(got["conv1.weight"], cap.start["conv1.weight"])  # it trained
    with torch.no_grad():  # a copy, not a view of the live parameters
        cap.model.conv1.weight.add_(1.0)
    assert not torch.equal(got["conv1.weight"], cap.model.conv1.weight)
    again = FinalWeights()
    again.load_state_dict(fw.state_dict())
    assert again.result() is got


# ----------------------------------------------------------------------------- SpectralProbe

def _expected_rows(state, xmin="ks"):
    model = build_model("resnet18_mini", in_channels=1, num_classes=10, image_size=8)
    model.load_state_dict(state)
    mats = spectral.layer_matrices(model)
    out = {}
    for name, W in mats.items():
        lam = spectral.esd(W)
        out[name] = (spectral.fit_alpha(lam, xmin)["alpha"],
                     spectral.matrix_entropy(lam, tuple(W.shape[-2:])))
    return out


def test_spectral_probe_rows_per_epoch_and_alphas_of_final_weights(digits):
    probe, cap, fw = SpectralProbe(), Capture(), FinalWeights()
    out = train(RunConfig(**{**TINY, "epochs": 2}), data=digits, callbacks=[cap, probe, fw],
                progress=False)
    df = out["callbacks"]["spectral"]
    layers = list(spectral.layer_matrices(cap.model))
    assert list(df.columns) == ["epoch", "layer", "alpha", "entropy"]
    assert sorted(df["epoch"].unique()) == [0, 1, 2]
    for e in (0, 1, 2):
        assert df.loc[df.epoch == e, "layer"].tolist() == layers
    for e, state in ((0, cap.start), (2, fw.result())):
        want = _expected_rows(state)
        rows = df[df.epoch == e].set_index("layer")
        for name, (alpha, entropy) in want.items():
            assert rows.loc[name, "alpha"] == pytest.approx(alpha, rel=1e-9), (e, name)
            assert rows.loc[name, "entropy"] == pytest.approx(entropy, rel=1e-9), (e, name)
    assert np.isfinite(df["alpha"]).all() and df["entropy"].between(0, 1).all()


def test_spectral_probe_every_and_resume_state():
    model = build_model("resnet18_mini", in_channels=1, num_classes=10, image_size=8)
    probe = SpectralProbe(xmin="median", every=2)
    probe.on_train_start(model)
    for e in (1, 2, 3, 4):
        probe.on_epoch_end(model, {"epoch": e})
    assert probe.result()["epoch"].unique().tolist() == [0, 2, 4]
    resumed = SpectralProbe(xmin="median", every=2)
    resumed.load_state_dict(probe.state_dict())
    resumed.on_train_start(model)  # a resumed run must not record epoch 0 twice
    assert resumed.result().equals(probe.result())
    alphas = spectral.alphas(model, xmin="median")["alpha"]
    first = probe.result().query("epoch == 0").set_index("layer")["alpha"]
    assert np.allclose(first.loc[alphas.index].to_numpy(), alphas.to_numpy(), rtol=1e-12)


# ----------------------------------------------------------------------------- PrunedStart

def _l1_pruned_channels(W: torch.Tensor, ratio: float) -> set[int]:
    n = math.floor(ratio * W.shape[0])
    scores = W.abs().reshape(W.shape[0], -1).sum(1)
    return set(torch.argsort(scores)[:n].tolist())


def _zero_channels(W: torch.Tensor) -> set[int]:
    return set(torch.nonzero((W.reshape(W.shape[0], -1) == 0).all(1)).flatten().tolist())


def _bn_of(conv: str) -> str:
    return {"conv1": "bn1", "layer1.0.conv1": "layer1.0.bn1", "layer2.0.conv2": "layer2.0.bn2",
            "layer3.0.shortcut.0": "layer3.0.shortcut.1"}[conv]


def test_train_prune_finetune_keeps_masks(runs_root, digits):
    pre_cfg = RunConfig(**TINY)
    pre_spec = {"run": pre_cfg.key(), "callbacks": {"weights": {}}}
    [pre] = train_runs([pre_cfg], callbacks={"weights": {}})
    pre_w = pre["callbacks"]["weights"]
    assert (runs_root / "train").is_dir()  # the env var's cache, not data/runs
    assert all(torch.equal(pretrained_weights(pre_spec)[k], v) for k, v in pre_w.items())
    expected = {name: _l1_pruned_channels(pre_w[f"{name}.weight"], r) for name, r in RATIOS.items()}

    # Start state: the pretrained weights with the lowest-L1 channels (and their BN) zeroed.
    cap = Capture()
    train(RunConfig(**TINY), data=digits, progress=False,
          callbacks=[PrunedStart(pre_spec, RATIOS), cap])
    for k, v in pre_w.items():
        conv = k.rsplit(".", 1)[0]
        name = next((c for c in RATIOS if conv in (c, _bn_of(c))), None)
        if name is None or k.endswith(("running_mean", "running_var", "num_batches_tracked")):
            assert torch.equal(cap.start[k], v), k
        else:
            keep = torch.ones(v.shape[0], dtype=v.dtype)
            keep[sorted(expected[name])] = 0
            assert torch.equal(cap.start[k], v * keep.view(-1, *[1] * (v.dim() - 1))), k

    # Through the cache: momentum + weight decay, 2 epochs; the masked channels stay exactly 0.
    ft_cfg = RunConfig(**{**TINY, "epochs": 2, "wd": 5e-4})
    [ft] = train_runs([ft_cfg], callbacks={"pruned_start": {"pretrained": pre_spec,
                                                            "ratios": RATIOS},
                                           "weights": {}})
    w = ft["callbacks"]["weights"]
    for name in RATIOS:
        assert _zero_channels(w[f"{name}.weight"]) == expected[name], name
        for p in ("weight", "bias"):
            bn = w[f"{_bn_of(name)}.{p}"]
            assert torch.all(bn[sorted(expected[name])] == 0), (name, p)
    assert not torch.equal(w["layer1.0.conv2.weight"], pre_w["layer1.0.conv2.weight"])
    c_out = {n: pre_w[f"{n}.weight"].shape[0] for n in RATIOS}
    fan = {n: pre_w[f"{n}.weight"][0].numel() for n in RATIOS}
    sp = ft["callbacks"]["pruned_start"]
    assert sp["ratios"] == RATIOS
    assert sp["sparsity"]["channels"] == pytest.approx(
        sum(math.floor(r * c_out[n]) for n, r in RATIOS.items()) / sum(c_out.values()), abs=1e-12)
    assert sp["sparsity"]["params"] == pytest.approx(
        sum(math.floor(r * c_out[n]) * fan[n] for n, r in RATIOS.items())
        / sum(c_out[n] * fan[n] for n in RATIOS), rel=1e-6)  # channel_masks.sparsity: float32

    # TempBalance eq. 2.13 on the pruned model: alphas finite; epoch-0 alphas are those of the
    # pruned start weights (TempBalance runs after PrunedStart). zeros="drop", as chapter 02b
    # fine-tunes: the masked channels' zeros are not counted (spectral's default).
    tb_cfg = RunConfig(**TINY, methods=(TempBalance("eq2.13", zeros="drop"),))
    [tb] = train_runs([tb_cfg], callbacks={"pruned_start": {"pretrained": pre_spec,
                                                            "ratios": RATIOS}})
    df = tb["callbacks"]["tempbalance"]
    assert len(df) and np.isfinite(df["alpha"]).all() and np.isfinite(df["lr_scale"]).all()
    assert sorted(df["epoch"].unique()) == [0, 1]
    model = build_model("resnet18_mini", in_channels=1, num_classes=10, image_size=8)
    model.load_state_dict(cap.start)
    want = spectral.alphas(model, xmin="median", conv="slices")["alpha"]
    got = df[df.epoch == 0].set_index("layer")["alpha"]
    assert np.allclose(got.to_numpy(), want.loc[got.index].to_numpy(), rtol=1e-9)


def test_missing_pretrained_run_raises_lookup_error_naming_it(runs_root):
    ghost = RunConfig(**{**TINY, "seed": 987654321})
    spec = {"run": ghost.key(), "callbacks": {"weights": {}}}
    with pytest.raises(LookupError, match="987654321"):
        train_runs([RunConfig(**TINY)],
                   callbacks={"pruned_start": {"pretrained": spec, "ratios": RATIOS}})
    # In the cache but trained without the weights callback: also a LookupError.
    RunCache().put("train", {"run": ghost.key(), "callbacks": {}}, {"callbacks": {}})
    with pytest.raises(LookupError, match="weights"):
        pretrained_weights({"run": ghost.key(), "callbacks": {}})


def test_pruned_start_finds_pretrained_run_in_a_custom_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "default-root"))
    cache = RunCache(tmp_path / "custom")
    pre_cfg = RunConfig(**TINY)
    train_runs([pre_cfg], callbacks={"weights": {}}, cache=cache)
    spec = {"run": pre_cfg.key(), "callbacks": {"weights": {}}}
    res = train_runs([RunConfig(**{**TINY, "seed": 1})], cache=cache,
                     callbacks={"pruned_start": {"pretrained": spec, "ratios": RATIOS}})[0]
    assert res["callbacks"]["pruned_start"]["sparsity"]["channels"] > 0
    assert not (tmp_path / "default-root").exists()   # nothing read from or written there


# ----------------------------------------------------------------------------- AugMix in the image task

def test_augmix_needs_augment_and_trains_on_digits(monkeypatch):
    import lalr_core.core.loop.tasks as T
    with pytest.raises(ValueError, match="augment"):
        RunConfig(dataset="digits", augmix=True, augment=False)
    calls = []
    real_augment, real_augmix = T.augment, T.augmix

    def augment(X, **kw):
        calls.append(("augment", kw["crop_pad"]))
        return real_augment(X, **kw)

    def augmix(X, name, **kw):
        calls.append(("augmix", name))
        return real_augmix(X, name, **kw)

    monkeypatch.setattr(T, "augment", augment)
    monkeypatch.setattr(T, "augmix", augmix)
    cfg = RunConfig(**{**TINY, "augment": True, "augmix": True})
    out = train(cfg, progress=False)
    assert len(out["history"]) == 1 and not out["diverged"] and len(out["steps"]) == 2
    assert np.isfinite(out["final"]["train_loss"]) and out["config"]["augmix"] is True
    assert calls == [("augment", 1), ("augmix", "digits")] * 2  # crop pad 1 px on 8 px
