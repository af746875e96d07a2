"""The vision transfer setting (`lalr_core.methods.pretrained.vision`): the head rule against a forward
hook, class subsets traced back to the real loader's images, the pretraining as one cached
unit, fine-tunings that start from exactly its trunk with a seeded fresh head, forgetting at
step 0 equal to the pretraining's own test metrics, the dataset-change path, and the ImageNet
weights failing clearly offline (sockets blocked: nothing is downloaded)."""

import socket
import struct

import numpy as np
import pytest
import torch

from lalr_core.chapters.ch01_lalr.transfer import finetuning_config, pretraining_config
from lalr_core.core.data import DATASETS, ROOT_ENV_VAR, load_data
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model
from lalr_core.core.models.networks import build_model
from lalr_core.core.runs import RunCache, param_hash
from lalr_core.core.runs.units import pretrained, train_code_modules, train_runs
from lalr_core.methods.pretrained.vision import (
    ClassSubsetTask,
    PretrainedWeightsUnavailable,
    TransferTask,
    WithHead,
    head_keys,
    head_name,
    imagenet_resnet18_weights,
    pretrained_head,
    subset_images,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # 2 threads stall on the shared cores
TINY = {"synthetic": True, "n_train": 64, "n_val": 16, "n_test": 32, "epochs": 1,
        "batch_size": 32, "device": "cpu"}
TINY_FT = {"n_train": 48, "n_val": 16, "n_test": 24, "epochs": 2, "batch_size": 16,
           "device": "cpu"}


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("LALR_RUNS_ROOT", str(tmp_path / "runs"))
    return tmp_path / "runs"


# ----------------------------------------------------------------------------- the head
@pytest.mark.parametrize("name, expected", [
    ("basic_cnn", "fc"), ("basic_cnn_skip", "fc"), ("mlp", "net.5"), ("resnet8", "fc"),
    ("resnet9", "fc"), ("resnet18_tv", "fc"), ("mobilenetv2_cifar", "linear")])
def test_the_head_is_the_module_whose_output_is_the_models(name, expected):
    model = build_model(name, in_channels=3, num_classes=7, image_size=32).eval()
    assert head_name(model) == expected
    seen = {}
    module = dict(model.named_modules())[expected]
    module.register_forward_hook(lambda m, i, o: seen.setdefault("out", o))
    out = model(torch.randn(2, 3, 32, 32))
    assert torch.equal(out, seen["out"])  # the head's output is the model's
    assert sorted(head_keys(model)) == sorted(k for k in model.state_dict()
                                              if k.startswith(expected + "."))


def test_a_model_without_a_linear_head_is_refused():
    with pytest.raises(ValueError, match="no classifier head"):
        head_name(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()))


def test_with_head_swaps_only_the_head():
    model = build_model("basic_cnn", in_channels=1, num_classes=3, image_size=28).eval()
    W, b = torch.randn(5, 512), torch.randn(5)
    x = torch.randn(4, 1, 28, 28)
    features = model.blocks(x)[-1].flatten(1)
    torch.testing.assert_close(WithHead(model, {"weight": W, "bias": b})(x),
                               features @ W.T + b)
    assert model.fc.weight.shape == (3, 512)  # the model itself is unchanged


# ----------------------------------------------------------------------------- class subsets
def _write_mnist(folder, n_train, n_test, seed=0):
    """MNIST IDX files whose image i carries i in its first two pixels."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        X = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        X[:, 0, 0], X[:, 0, 1] = np.arange(n) % 256, np.arange(n) // 256
        y = rng.integers(0, 10, size=n, dtype=np.uint8)
        for kind, arr in (("images", X), ("labels", y)):
            header = struct.pack(">I", 0x0800 + arr.ndim) + struct.pack(f">{arr.ndim}I",
                                                                       *arr.shape)
            (folder / f"{prefix}-{kind}-idx{arr.ndim}-ubyte").write_bytes(header + arr.tobytes())
    return y  # the test labels


def _index_of(X):
    """The image index encoded in the first two pixels (undoing the normalisation)."""
    spec = DATASETS["mnist"]
    pix = ((X[:, 0, 0, :2].double() * spec.std[0] + spec.mean[0]) * 255).round().long()
    return (pix[:, 0] + 256 * pix[:, 1]).numpy()


def test_a_class_subset_holds_those_classes_relabelled_in_the_given_order(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv(ROOT_ENV_VAR, str(tmp_path))
    _write_mnist(tmp_path / "MNIST" / "raw", n_train=300, n_test=100)
    full = load_data("mnist", download=False)  # the core's loader: the oracle
    classes = (7, 2, 5)
    cfg = RunConfig(dataset="mnist", model="basic_cnn", n_train=20, n_val=6, n_test=9,
                    split_seed=3, task=ClassSubsetTask(classes=classes))
    data = cfg.task.load(cfg, torch.device("cpu"))
    assert data.num_classes == 3 and cfg.task.build_model(cfg).fc.out_features == 3
    for X, y, pool_y in ((data.X_train, data.y_train, full.y_train),
                         (data.X_val, data.y_val, full.y_train),
                         (data.X_test, data.y_test, full.y_test)):
        idx = _index_of(X)
        assert [classes[k] for k in y.tolist()] == pool_y[idx].tolist()
    train_idx, val_idx = set(_index_of(data.X_train)), set(_index_of(data.X_val))
    assert len(train_idx) == 20 and len(val_idx) == 6 and not train_idx & val_idx
    n_kept = int(np.isin(full.y_test.numpy(), classes).sum())
    every = subset_images(cfg.replace(n_test=None), classes)
    assert len(every.y_test) == n_kept  # None: every test image of those classes
    again = subset_images(cfg, classes)
    assert torch.equal(again.X_train, data.X_train)  # seeded
    with pytest.raises(ValueError, match="n_train"):
        subset_images(cfg.replace(n_train=n_kept * 10), classes)
    with pytest.raises(ValueError, match="out of range"):
        subset_images(cfg, (3, 10))


def test_synthetic_subsets_and_bad_classes():
    cfg = pretraining_config(classes=(9, 0), **TINY)
    data = cfg.task.load(cfg, torch.device("cpu"))
    assert (len(data.y_train), len(data.y_val), len(data.y_test)) == (64, 16, 32)
    assert set(data.y_train.tolist()) == {0, 1}
    for bad in ((1,), (1, 1), (0, -1), "01", (0, 1.0)):
        with pytest.raises(ValueError, match="classes"):
            ClassSubsetTask(classes=bad)


# ----------------------------------------------------------------------------- transfer
def test_finetuning_starts_from_exactly_the_pretrained_trunk(cache_root):
    pre = pretraining_config(**TINY)
    cfg = finetuning_config(pre, seed=0, **TINY_FT)
    assert cfg.task.classes == (5, 6, 7, 8, 9)
    model = initial_model(cfg)  # the pretraining is trained here, on the miss
    assert len(RunCache(cache_root).entries("train")) == 1
    weights = pretrained(pre)["callbacks"]["weights"]
    for name, value in model.state_dict().items():
        if not name.startswith("fc."):
            assert torch.equal(value, weights[name]), name
    assert not torch.equal(model.fc.weight, weights["fc.weight"])  # a fresh head
    again = initial_model(cfg)  # from the cache now: the same model, the same head
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                 again.state_dict().values()))
    other = initial_model(cfg.replace(seed=1))
    assert not torch.equal(other.fc.weight, model.fc.weight)
    assert torch.equal(other.conv1.weight, model.conv1.weight)
    assert set(pretrained_head(pre)) == {"weight", "bias"}


def test_forgetting_is_recorded_from_the_pretrainings_own_test_metrics(cache_root):
    pre = pretraining_config(**TINY)
    final = pretrained(pre)["final"]
    cfg = finetuning_config(pre, **TINY_FT)
    data = cfg.task.load(cfg, torch.device("cpu"))
    loss, acc = cfg.task.evaluate(cfg, initial_model(cfg), data, "pretrain")
    assert loss == pytest.approx(final["test_loss"], rel=1e-5)
    assert acc == pytest.approx(final["test_acc"])
    (res,) = train_runs([cfg], callbacks={"transfer_splits": {"task": cfg.task.key()}})
    rec = res["callbacks"]["transfer_splits"]
    assert rec["history"][["epoch", "split"]].values.tolist() == [
        [0, "pretrain"], [1, "pretrain"], [2, "pretrain"]]
    assert rec["history"]["acc"].iloc[0] == pytest.approx(final["test_acc"])
    assert rec["correct"]["pretrain"].shape == (32,)
    assert len(RunCache(cache_root).entries("train")) == 2  # the pretraining and this run
    assert res["test_correct"].shape == (24,)


def test_a_dataset_change_keeps_the_trunk_and_refuses_other_shapes(cache_root):
    pre = pretraining_config("cifar100", None, **TINY)
    cfg = finetuning_config(pre, dataset="cifar10", **TINY_FT)
    assert cfg.task.classes is None
    model = initial_model(cfg)
    assert model.fc.out_features == 10 and pretrained_head(pre)["weight"].shape[0] == 100
    X, y, head = cfg.task.forgetting_split()
    assert X.shape[1:] == (3, 32, 32) and int(y.max()) < 100 and head["weight"].shape[0] == 100
    with pytest.raises(ValueError, match="shape"):
        bad = finetuning_config(pre, dataset="fashion_mnist", **TINY_FT)
        bad.task.build_model(bad)
    with pytest.raises(ValueError, match="differs"):
        bad = finetuning_config(pre, dataset="cifar10", model="resnet8", **TINY_FT)
        bad.task.build_model(bad)


def test_configs_round_trip_and_bad_settings_raise():
    pre = pretraining_config(**TINY)
    cfg = finetuning_config(pre, **TINY_FT)
    assert RunConfig(**cfg.key()) == cfg
    assert param_hash(cfg.key()) == param_hash(RunConfig(**cfg.key()).key())
    assert cfg.key()["task"]["pretrained"] == pre.key()
    assert "lalr_core.methods.pretrained.vision" in train_code_modules({"run": cfg.key(),
                                                               "callbacks": {}})
    assert cfg.task.splits == ("train", "val", "test", "pretrain")
    with pytest.raises(ValueError, match="image_subset"):
        TransferTask(pretrained=cfg)  # a fine-tuning is no pretraining
    with pytest.raises(ValueError, match="pretrained must"):
        TransferTask(pretrained=3)
    with pytest.raises(ValueError, match="transfer_splits needs"):
        from lalr_core.methods.pretrained.vision import TransferSplitProbe
        TransferSplitProbe(TransferTask().key())
    with pytest.raises(ValueError, match="unknown split"):
        data = cfg.task.load(cfg, torch.device("cpu"))
        TransferTask().evaluate(cfg, initial_model(cfg), data, "pretrain")


# ----------------------------------------------------------------------------- ImageNet
@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty torch hub cache and no network at all."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    for var in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(var, raising=False)

    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_imagenet_weights_fail_clearly_offline(offline, tmp_path):
    with pytest.raises(PretrainedWeightsUnavailable, match="could not be downloaded") as err:
        imagenet_resnet18_weights()
    assert str(tmp_path / "torch") in str(err.value) and "resnet18" in str(err.value)
    cfg = finetuning_config("imagenet", synthetic=True, **TINY_FT)
    assert (cfg.dataset, cfg.model, cfg.task.splits) == ("cifar10", "resnet18_tv",
                                                         ("train", "val", "test"))
    with pytest.raises(PretrainedWeightsUnavailable):
        initial_model(cfg)
    with pytest.raises(ValueError, match="resnet18_tv"):
        bad = cfg.replace(model="basic_cnn")
        bad.task.build_model(bad)


def test_the_imagenet_path_loads_every_trunk_tensor(monkeypatch):
    """torchvision's weights stood in by a seeded untrained ResNet-18 (nothing downloaded);
    its BN step counters dropped, as an older checkpoint may lack them."""
    import torchvision

    from lalr_core.methods.pretrained import vision as transfer

    torch.manual_seed(5)
    source = torchvision.models.resnet18(weights=None).state_dict()  # 1000-way fc
    stored = {k: v for k, v in source.items() if not k.endswith("num_batches_tracked")}
    monkeypatch.setattr(transfer, "imagenet_resnet18_weights", lambda: dict(stored))
    cfg = finetuning_config("imagenet", synthetic=True, **TINY_FT)
    model = initial_model(cfg)
    assert model.fc.out_features == 10
    for name, value in stored.items():
        if not name.startswith("fc."):
            assert torch.equal(model.state_dict()[name], value), name
    monkeypatch.setattr(transfer, "imagenet_resnet18_weights",
                        lambda: {**stored, "extra.weight": torch.zeros(1)})
    with pytest.raises(ValueError, match="unexpected \\['extra.weight'\\]"):
        initial_model(cfg)
