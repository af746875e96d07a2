"""ImageNet runs (figs 5.7/5.8) on a tiny fake ImageFolder: layout detection, the tasks' run
configs (unknown or bad parameters, key), both optimisers, finite results, the BT schedule,
max_steps, and resume from a per-epoch checkpoint without redoing work."""

import itertools

import numpy as np
import pytest
import torch
from PIL import Image

from lalr_core.chapters.ch06_orthogonal_sgdm import imagenet
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.data import DatasetMissingError
from lalr_core.core.loop.train import train

TINY = dict(batch_size=4, workers=0, device="cpu", crop=32, bf16=False)
# "orth" runs use Newton-Schulz: the SVDs of ResNet-18's 512x4608 gradients take seconds per
# step on CPU; the SVD path itself is checked in tests/test_orthogonal.py
ORTH = {"none": {}, "orth": dict(grad_transform="orth", orth_method="newton_schulz")}
CLASSIFIER = dict(TINY, model="resnet18", epochs=1, max_steps_per_epoch=2)
BARLOW = dict(TINY, batch_size=5, backbone="resnet18", projector=(64, 64), epochs=2,
              warmup_epochs=1, max_steps=1)  # 12 // 5 = 2 steps per epoch; stop inside one


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread: on a shared 2-core machine OpenMP spinning makes 2 threads ~20x
    slower for these tiny batches."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def fake_root(tmp_path, monkeypatch):
    """``<tmp>/imagenet/{train,val}/<wnid>/`` with 2 classes x 6 random 40x40 PNGs."""
    rng = np.random.default_rng(0)
    for split in ("train", "val"):
        for wnid in ("n01440764", "n01443537"):
            folder = tmp_path / "imagenet" / split / wnid
            folder.mkdir(parents=True)
            for i in range(6):
                pixels = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(folder / f"{wnid}_{i}.png")
    monkeypatch.setenv("LALR_DATA_ROOT", str(tmp_path))
    return tmp_path


def test_layout_detection(fake_root, tmp_path_factory, monkeypatch):
    assert imagenet.imagenet_dir() == fake_root / "imagenet"
    assert imagenet.require_imagenet() == fake_root / "imagenet"
    empty = tmp_path_factory.mktemp("empty")
    (empty / "imagenet" / "train" / "n0").mkdir(parents=True)  # no val
    monkeypatch.setenv("LALR_DATA_ROOT", str(empty))
    assert imagenet.imagenet_dir() is None
    with pytest.raises(DatasetMissingError, match=r"imagenet/\{train,val\}/<wnid>"):
        imagenet.require_imagenet()
    with pytest.raises(DatasetMissingError):
        imagenet.train_imagenet_classifier(CLASSIFIER)


def test_loaders_shapes_and_seeded_order(fake_root):
    train, val = imagenet.imagenet_loaders(None, 4, 0, seed=3, crop=32)
    X, y = next(iter(train))
    assert X.shape == (4, 3, 32, 32) and y.dtype == torch.int64
    assert next(iter(val))[0].shape == (4, 3, 32, 32) and len(val.dataset) == 12
    train.sampler.set_epoch(1)
    order = list(train.sampler)
    assert sorted(order) == list(range(12)) and order == list(train.sampler)
    train.sampler.set_epoch(1, skip=8)
    assert list(train.sampler) == order[8:]
    pairs, _ = imagenet.imagenet_loaders(None, 5, 0, two_views=True, crop=32)
    (y1, y2), _ = next(iter(pairs))
    assert y1.shape == y2.shape == (5, 3, 32, 32) and not torch.equal(y1, y2)
    assert len(pairs) == 2  # 12 // 5: the partial batch is dropped


def test_bad_parameters_raise(fake_root):
    with pytest.raises(ValueError, match="unknown parameters"):
        imagenet.train_imagenet_classifier({**CLASSIFIER, "learning_rate": 0.1})
    with pytest.raises(ValueError, match="grad_transform"):
        imagenet.train_imagenet_classifier({**CLASSIFIER, "grad_transform": "muon"})
    with pytest.raises(ValueError, match="orth_method"):
        imagenet.classifier_config({**CLASSIFIER, "orth_method": "qr"})
    with pytest.raises(ValueError, match="unknown torchvision model"):
        imagenet.train_imagenet_classifier({**CLASSIFIER, "model": "vit"})
    with pytest.raises(ValueError, match="max_steps_per_epoch"):
        imagenet.classifier_config({**CLASSIFIER, "max_steps_per_epoch": 0})
    with pytest.raises(ValueError, match="warmup_epochs"):
        imagenet.train_imagenet_barlow_twins({**BARLOW, "warmup_epochs": 2})
    with pytest.raises(ValueError, match="ResNet"):
        imagenet.barlow_twins_config({**BARLOW, "backbone": "densenet121"})
    with pytest.raises(ValueError, match="max_steps"):
        imagenet.barlow_twins_config({**BARLOW, "max_steps": 0})
    # the tasks read the folder: in-memory data settings are refused, not ignored
    cfg = imagenet.classifier_config(CLASSIFIER)
    with pytest.raises(ValueError, match="synthetic"):
        train(cfg.replace(synthetic=True), progress=False)
    with pytest.raises(ValueError, match="per-step lr schedule"):  # BT's schedule is its own
        train(imagenet.barlow_twins_config(BARLOW).replace(schedule="cosine"), progress=False)


def test_run_configs_and_their_keys():
    cfg = imagenet.classifier_config({**CLASSIFIER, "grad_transform": "orth"})
    assert (cfg.model, cfg.optimizer, cfg.lr, cfg.momentum, cfg.wd, cfg.schedule) == \
        ("resnet18_tv", "sgdm", 1e-2, 0.9, 5e-4, "constant")
    assert cfg.task == imagenet.ImageNetClassifierTask(crop=32, max_steps_per_epoch=2)
    gt = cfg.method("grad_transform")
    assert (gt.transform, gt.method, gt.layers, gt.prefix) == ("orth", "svd", "all", "")
    assert imagenet.classifier_config(CLASSIFIER).methods == ()  # SGDM: no method
    # loader processes and the data folder do not change the run (nor its key)
    moved = imagenet.classifier_config({**CLASSIFIER, "workers": 3, "root": "/elsewhere"})
    assert moved == imagenet.classifier_config(CLASSIFIER)
    assert moved.key() == imagenet.classifier_config(CLASSIFIER).key()
    assert "workers" not in moved.key()["task"] and "root" not in moved.key()["task"]
    assert RunConfig(**cfg.key()) == cfg  # the key rebuilds the run
    bt = imagenet.barlow_twins_config({**BARLOW, "projector": [64, 64], "grad_transform": "orth"})
    assert (bt.model, bt.optimizer, bt.lr, dict(bt.optimizer_params)) == \
        ("resnet18_tv", "lars", 0.2, {"eta": 1e-3})
    assert bt.task.projector == (64, 64) and bt.task.lr_biases == 4.8e-3
    assert bt.method("grad_transform").prefix == "trunk."
    assert RunConfig(**bt.key()) == bt


def test_bt_lr_schedule():
    total, warmup = 100, 10
    lrs = [imagenet.bt_lr(s, total, warmup, 1024) for s in range(total + 1)]
    assert lrs[0] == 0 and lrs[5] == pytest.approx(2.0) and lrs[10] == pytest.approx(4.0)
    assert max(lrs) == pytest.approx(4.0)  # peak = batch_size / 256
    assert lrs[55] == pytest.approx(4.0 * (0.5 + 0.5e-3))  # half-way through the cosine
    assert lrs[-1] == pytest.approx(4.0e-3)  # 1/1000 of the peak
    assert all(a >= b for a, b in itertools.pairwise(lrs[10:]))


class _Optimizer:
    """Keeps the run's optimiser (to check which weights are transformed, and its groups)."""

    name = "optimizer"

    def on_optimizer(self, optimizer):
        self.optimizer = optimizer



@pytest.mark.parametrize("transform", ["none", "orth"])
def test_classifier_runs_and_resumes(fake_root, tmp_path, transform):
    params = dict(CLASSIFIER, **ORTH[transform])
    ckpt = tmp_path / f"ckpt_{transform}"
    kept = _Optimizer()
    out = train(imagenet.classifier_config(params), callbacks=[kept], checkpoint_dir=ckpt,
                checkpoint_every=1, progress=False)
    # Orth-SGDM: ResNet-18's 20 conv weights and the classifier; SGDM: torch's SGD alone
    if transform == "orth":
        assert len(kept.optimizer.params) == 21
    else:
        assert isinstance(kept.optimizer, torch.optim.SGD)
    h = out["history"]
    assert {"epoch", "step", "train_loss", "val_loss", "val_acc", "time_s"} <= set(h.columns)
    assert len(h) == 1 and h["step"].iloc[0] == 2 and list(out["steps"]["step"]) == [1, 2]
    assert np.isfinite(h[["train_loss", "val_loss", "val_acc", "time_s"]].to_numpy()).all()
    assert h["test_acc"].isna().all()  # ImageNet's held-out labels are its validation split
    assert 0 <= out["final"]["val_acc"] <= 1 and not out["diverged"]
    assert (ckpt / "checkpoint.pt").exists()
    # the finished epoch is read back, not retrained (its wall time would differ); the data
    # folder may be named differently
    again = imagenet.train_imagenet_classifier({**params, "root": str(fake_root)},
                                               checkpoint_dir=ckpt, progress=False)
    assert again["history"].equals(h)
    if transform == "orth":
        return
    # extending `epochs` trains only the new epoch
    more = imagenet.train_imagenet_classifier({**params, "epochs": 2}, checkpoint_dir=ckpt,
                                              progress=False)
    assert list(more["history"]["epoch"]) == [1, 2] and more["history"].iloc[:1].equals(h)
    with pytest.raises(ValueError, match=r"other values of \['lr'\]"):
        imagenet.train_imagenet_classifier({**params, "lr": 0.5}, checkpoint_dir=ckpt)


@pytest.mark.parametrize("transform", ["none", "orth"])
def test_barlow_twins_runs_and_resumes(fake_root, tmp_path, monkeypatch, transform):
    params = dict(BARLOW, **ORTH[transform])
    ckpt = tmp_path / f"bt_{transform}"
    kept = _Optimizer()
    cfg = imagenet.barlow_twins_config(params)
    out = train(cfg, callbacks=[kept], checkpoint_dir=ckpt, checkpoint_every=1, progress=False)
    # Orth-LARS: the trunk's 20 conv weights only, not the projector's dense layers
    if transform == "orth":
        assert len(kept.optimizer.params) == 20
        assert all(p.ndim == 4 for p in kept.optimizer.params)
    groups = kept.optimizer.param_groups  # weights at cfg.lr, biases and BN at lr_biases
    assert groups[0]["lr_scale"] == 1.0 and groups[1]["exclude"]
    assert cfg.lr * groups[1]["lr_scale"] == 4.8e-3
    s = out["steps"]
    assert list(s.columns) == ["step", "epoch", "lr", "loss"] and list(s["step"]) == [1]
    assert np.isfinite(s["loss"]).all() and (s["loss"] > 0).all()
    assert s["lr"].iloc[0] == 0.0  # the warm-up starts at 0
    assert len(out["history"]) == 1 and not out["diverged"]
    assert not (ckpt / "checkpoint.pt").exists()  # max_steps stopped inside the first epoch
    if transform == "orth":  # resuming does not depend on the transform; keep the test short
        return
    two = imagenet.train_imagenet_barlow_twins({**params, "max_steps": 2}, checkpoint_dir=ckpt,
                                               progress=False)
    assert two["steps"].iloc[:1].equals(s) and (ckpt / "checkpoint.pt").exists()
    calls = []
    loss_fn = imagenet.barlow_twins_loss
    monkeypatch.setattr(imagenet, "barlow_twins_loss", lambda *a: calls.append(1) or loss_fn(*a))
    again = imagenet.train_imagenet_barlow_twins({**params, "max_steps": 3}, checkpoint_dir=ckpt,
                                                 progress=False)
    assert len(calls) == 1  # resumed after the checkpointed first epoch: steps 1, 2 not redone
    a = again["steps"]
    assert list(a["step"]) == [1, 2, 3] and list(a["epoch"]) == [1, 1, 2]
    assert a.iloc[:2].equals(two["steps"]) and np.isfinite(a["loss"]).all()
    # warm-up over epoch 1 (2 steps), then the cosine: lr of the weights = 0.2 * bt_lr
    want = [0.2 * imagenet.bt_lr(i, 4, 2, 5) for i in range(3)]
    np.testing.assert_allclose(a["lr"], want)
    assert want[1] == pytest.approx(0.2 * 5 / 256 / 2)
    with pytest.raises(ValueError, match=r"other values of \['task.lambd'\]"):
        imagenet.train_imagenet_barlow_twins({**params, "lambd": 0.1}, checkpoint_dir=ckpt)
