"""ImageNet runs (figs 5.7/5.8) on a tiny fake ImageFolder: layout detection, both optimisers,
finite results, the BT schedule, and resume from a checkpoint without redoing work."""

import itertools

import numpy as np
import pytest
import torch
from PIL import Image

from lalr_core.chapters.ch06_orthogonal_sgdm import imagenet
from lalr_core.core.data import DatasetMissingError

TINY = dict(batch_size=4, workers=0, device="cpu", crop=32, bf16=False)
# "orth" runs use Newton-Schulz: the SVDs of ResNet-18's 512x4608 gradients take seconds per
# step on CPU; the SVD path itself is checked in tests/test_orthogonal.py
ORTH = {"none": {}, "orth": dict(grad_transform="orth", orth_method="newton_schulz")}
CLASSIFIER = dict(TINY, model="resnet18", epochs=1, max_steps_per_epoch=2)
BARLOW = dict(TINY, batch_size=5, backbone="resnet18", projector=(64, 64), epochs=2,
              warmup_epochs=1, max_steps=1)  # 12 // 5 = 2 steps per epoch


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
    with pytest.raises(ValueError, match="unknown torchvision model"):
        imagenet.train_imagenet_classifier({**CLASSIFIER, "model": "vit"})
    with pytest.raises(ValueError, match="warmup_epochs"):
        imagenet.train_imagenet_barlow_twins({**BARLOW, "warmup_epochs": 2})


def test_bt_lr_schedule():
    total, warmup = 100, 10
    lrs = [imagenet.bt_lr(s, total, warmup, 1024) for s in range(total + 1)]
    assert lrs[0] == 0 and lrs[5] == pytest.approx(2.0) and lrs[10] == pytest.approx(4.0)
    assert max(lrs) == pytest.approx(4.0)  # peak = batch_size / 256
    assert lrs[55] == pytest.approx(4.0 * (0.5 + 0.5e-3))  # half-way through the cosine
    assert lrs[-1] == pytest.approx(4.0e-3)  # 1/1000 of the peak
    assert all(a >= b for a, b in itertools.pairwise(lrs[10:]))


def _record_wrappers(monkeypatch) -> list:
    """Keep every GradientTransform the runs build (to check which weights are transformed)."""
    made, cls = [], imagenet.GradientTransform
    monkeypatch.setattr(imagenet, "GradientTransform", lambda *a, **k: made.append(cls(*a, **k))
                        or made[-1])
    return made


@pytest.mark.parametrize("transform", ["none", "orth"])
def test_classifier_runs_and_resumes(fake_root, tmp_path, monkeypatch, transform):
    params = dict(CLASSIFIER, **ORTH[transform])
    ckpt = tmp_path / f"ckpt_{transform}"
    made = _record_wrappers(monkeypatch)
    out = imagenet.train_imagenet_classifier(params, checkpoint_dir=ckpt, progress=False)
    # Orth-SGDM: ResNet-18's 20 conv weights and the classifier; SGDM: none
    assert len(made[0].params) == {"none": 0, "orth": 21}[transform]
    h = out["history"]
    assert list(h.columns) == ["epoch", "step", "train_loss", "val_loss", "val_acc", "time_s"]
    assert len(h) == 1 and h["step"].iloc[0] == 2
    assert np.isfinite(h[["train_loss", "val_loss", "val_acc", "time_s"]].to_numpy()).all()
    assert 0 <= out["final"]["val_acc"] <= 1 and not out["diverged"]
    assert (ckpt / "checkpoint.pt").exists()
    # the finished epoch is read back, not retrained (its wall time would differ)
    again = imagenet.train_imagenet_classifier(params, checkpoint_dir=ckpt, progress=False)
    assert again["history"].equals(h)
    if transform == "orth":
        return
    # extending `epochs` trains only the new epoch
    more = imagenet.train_imagenet_classifier({**params, "epochs": 2}, checkpoint_dir=ckpt,
                                              progress=False)
    assert list(more["history"]["epoch"]) == [1, 2] and more["history"].iloc[:1].equals(h)
    with pytest.raises(ValueError, match="lr"):
        imagenet.train_imagenet_classifier({**params, "lr": 0.5}, checkpoint_dir=ckpt)


@pytest.mark.parametrize("transform", ["none", "orth"])
def test_barlow_twins_runs_and_resumes(fake_root, tmp_path, monkeypatch, transform):
    params = dict(BARLOW, **ORTH[transform])
    ckpt = tmp_path / f"bt_{transform}"
    made = _record_wrappers(monkeypatch)
    out = imagenet.train_imagenet_barlow_twins(params, checkpoint_dir=ckpt, progress=False)
    # Orth-LARS: the trunk's 20 conv weights only, not the projector's dense layers
    assert len(made[0].params) == {"none": 0, "orth": 20}[transform]
    assert all(p.ndim == 4 for p in made[0].params)
    assert made[0].param_groups[1]["exclude"] and made[0].param_groups[1]["lr_scale"] == 4.8e-3
    s = out["steps"]
    assert list(s.columns) == ["step", "epoch", "loss", "lr"] and list(s["step"]) == [1]
    assert np.isfinite(s["loss"]).all() and (s["loss"] > 0).all()
    assert s["lr"].iloc[0] == 0.0  # the warm-up starts at 0
    assert out["steps_per_epoch"] == 2 and not out["diverged"]
    if transform == "orth":  # resuming does not depend on the transform; keep the test short
        return
    calls = []
    loss_fn = imagenet.barlow_twins_loss
    monkeypatch.setattr(imagenet, "barlow_twins_loss", lambda *a: calls.append(1) or loss_fn(*a))
    again = imagenet.train_imagenet_barlow_twins({**params, "max_steps": 3}, checkpoint_dir=ckpt,
                                                 progress=False)
    assert len(calls) == 2  # resumed mid-epoch at step 2: step 1 is not redone
    a = again["steps"]
    assert list(a["step"]) == [1, 2, 3] and list(a["epoch"]) == [1, 1, 2]
    assert a.iloc[:1].equals(s) and np.isfinite(a["loss"]).all()
    # warm-up over epoch 1 (2 steps), then the cosine: lr of the weights = 0.2 * bt_lr
    want = [0.2 * imagenet.bt_lr(i, 4, 2, 5) for i in range(3)]
    np.testing.assert_allclose(a["lr"], want)
    assert want[1] == pytest.approx(0.2 * 5 / 256 / 2)
