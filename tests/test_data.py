"""Tests of lalr_core.core.data on tiny files in the real on-disk formats, read by torchvision."""

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd

from lalr_core.core.data import augmentation as A
from lalr_core.core import data as D

# ----------------------------------------------------------------------------- writers

def _write_cifar(root: Path, name: str, rng: np.random.Generator, per_file: int = 4):
    """CIFAR python pickles (rows: 3072 uint8 in CHW order). Returns {train,test}: (X, y)."""
    cls = D.DATASETS[name].tv_class
    folder = root / cls.base_folder
    folder.mkdir(parents=True)
    K = D.DATASETS[name].num_classes
    label_key = "labels" if name == "cifar10" else "fine_labels"
    out = {}
    for split, files in (("train", cls.train_list), ("test", cls.test_list)):
        Xs, ys = [], []
        for fname, _ in files:
            X = rng.integers(0, 256, size=(per_file, 3072), dtype=np.uint8)
            y = [int(v) for v in rng.integers(0, K, size=per_file)]
            with open(folder / fname, "wb") as f:
                pickle.dump({"data": X, label_key: y, "batch_label": fname}, f)
            Xs.append(X)
            ys += y
        out[split] = (np.concatenate(Xs).reshape(-1, 3, 32, 32), np.array(ys))
    with open(folder / cls.meta["filename"], "wb") as f:
        pickle.dump({cls.meta["key"]: [f"class{k}" for k in range(K)]}, f)
    return out


def _idx_bytes(arr: np.ndarray) -> bytes:
    """IDX ubyte format: magic 0x08<ndim> then big-endian int32 dims, then the bytes."""
    header = struct.pack(">I", 0x0800 + arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.astype(np.uint8).tobytes()


def _write_idx(folder: Path, rng: np.random.Generator, n_train: int, n_test: int,
               gz: bool = False):
    """The four MNIST-family IDX files (gzipped with suffix .gz if ``gz``)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for prefix, split, n in (("train", "train", n_train), ("t10k", "test", n_test)):
        X = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 10, size=n, dtype=np.uint8)
        for kind, arr, dims in (("images", X, 3), ("labels", y, 1)):
            name = f"{prefix}-{kind}-idx{dims}-ubyte"
            raw = _idx_bytes(arr)
            if gz:
                (folder / (name + ".gz")).write_bytes(gzip.compress(raw))
            else:
                (folder / name).write_bytes(raw)
        out[split] = (X[:, None], y.astype(np.int64))
    return out


def _unnormalise(X: torch.Tensor, name: str) -> np.ndarray:
    spec = D.DATASETS[name]
    mean = torch.tensor(spec.mean).view(1, -1, 1, 1)
    std = torch.tensor(spec.std).view(1, -1, 1, 1)
    pix = (X.double() * std.double() + mean.double()) * 255.0
    assert (pix - pix.round()).abs().max() < 1e-3  # float32 normalisation is near-exact
    return pix.round().to(torch.int64).numpy()


@pytest.fixture(autouse=True)
def _isolate(monkeypatch, tmp_path):
    """Never see this machine's Debian package or data root."""
    monkeypatch.setattr(D, "DEBIAN_FASHION_MNIST_DIR", tmp_path / "no-debian")
    monkeypatch.delenv(D.ROOT_ENV_VAR, raising=False)


@pytest.fixture
def no_cifar_md5(monkeypatch):
    """Tiny files cannot match the official MD5 sums; let torchvision check existence only."""
    for cls in (tvd.CIFAR10, tvd.CIFAR100):
        monkeypatch.setattr(cls, "train_list", [[f, None] for f, _ in cls.train_list])
        monkeypatch.setattr(cls, "test_list", [[f, None] for f, _ in cls.test_list])
        monkeypatch.setattr(cls, "meta", {**cls.meta, "md5": None})


@pytest.fixture
def mnist_root(tmp_path):
    rng = np.random.default_rng(0)
    return tmp_path, _write_idx(tmp_path / "MNIST" / "raw", rng, n_train=60, n_test=20)


# ----------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("name", ["cifar10", "cifar100"])
def test_cifar_round_trip(tmp_path, no_cifar_md5, name):
    ref = _write_cifar(tmp_path, name, np.random.default_rng(1))
    d = D.load_data(name, root=tmp_path, download=False)
    for X, y, split in ((d.X_train, d.y_train, "train"), (d.X_test, d.y_test, "test")):
        assert X.dtype == torch.float32 and y.dtype == torch.int64
        assert X.shape == (len(ref[split][1]), 3, 32, 32)
        np.testing.assert_array_equal(_unnormalise(X, name), ref[split][0])
        np.testing.assert_array_equal(y.numpy(), ref[split][1])
    assert d.num_classes == D.DATASETS[name].num_classes and not d.synthetic


def test_mnist_round_trip(mnist_root):
    root, ref = mnist_root
    d = D.load_data("mnist", root=root, download=False)
    np.testing.assert_array_equal(_unnormalise(d.X_train, "mnist"), ref["train"][0])
    np.testing.assert_array_equal(d.y_train.numpy(), ref["train"][1])
    np.testing.assert_array_equal(_unnormalise(d.X_test, "mnist"), ref["test"][0])
    assert (d.in_channels, d.image_size, len(d.y_val)) == (1, 28, 0)


def test_fashion_mnist_from_debian_gz(tmp_path, monkeypatch):
    debian = tmp_path / "debian"
    ref = _write_idx(debian, np.random.default_rng(2), n_train=30, n_test=10, gz=True)
    monkeypatch.setattr(D, "DEBIAN_FASHION_MNIST_DIR", debian)
    root = tmp_path / "root"
    d = D.load_data("fashion_mnist", root=root, download=False)
    raw = sorted(p.name for p in (root / "FashionMNIST" / "raw").iterdir())
    assert raw == sorted(f.name[:-3] for f in debian.iterdir())  # no .part leftovers
    np.testing.assert_array_equal(_unnormalise(d.X_train, "fashion_mnist"), ref["train"][0])
    np.testing.assert_array_equal(d.y_test.numpy(), ref["test"][1])


def test_ensure_dataset_explicit_debian_dir_and_present(tmp_path):
    debian = tmp_path / "deb"
    _write_idx(debian, np.random.default_rng(3), 5, 5, gz=True)
    root = tmp_path / "r"
    assert D.ensure_dataset("fashion_mnist", root, allow_download=False, allow_apt=False,
                            debian_dir=debian) == root
    for f in debian.iterdir():
        f.unlink()  # second call: already present, the Debian files are not needed
    assert D.ensure_dataset("fashion_mnist", root, allow_download=False, allow_apt=False,
                            debian_dir=debian) == root


# ----------------------------------------------------------------------------- splits

def test_split_sizes_disjoint_deterministic(mnist_root):
    root, ref = mnist_root
    a = D.load_data("mnist", root=root, n_train=30, n_val=12, n_test=7, split_seed=5,
                    download=False)
    b = D.load_data("mnist", root=root, n_train=30, n_val=12, n_test=7, split_seed=5,
                    download=False)
    assert a.summary()["n_train"] == 30 and a.summary()["n_val"] == 12
    assert a.summary()["n_test"] == 7
    for k in ("X_train", "X_val", "X_test", "y_train", "y_val", "y_test"):
        assert torch.equal(getattr(a, k), getattr(b, k))
    # Identify samples by their pixels: train and val are disjoint parts of the train split.
    rows = {bytes(x) for x in ref["train"][0]}
    tr = {bytes(x) for x in _unnormalise(a.X_train, "mnist").astype(np.uint8)}
    va = {bytes(x) for x in _unnormalise(a.X_val, "mnist").astype(np.uint8)}
    te = {bytes(x) for x in _unnormalise(a.X_test, "mnist").astype(np.uint8)}
    assert tr <= rows and va <= rows and not tr & va and len(tr | va) == 42
    assert te <= {bytes(x) for x in ref["test"][0]}


def test_val_independent_of_n_train_and_seed_matters(mnist_root):
    root, _ = mnist_root
    base = D.load_data("mnist", root=root, n_train=10, n_val=15, download=False)
    rest = D.load_data("mnist", root=root, n_train=None, n_val=15, download=False)
    other = D.load_data("mnist", root=root, n_train=10, n_val=15, split_seed=1, download=False)
    assert torch.equal(base.X_val, rest.X_val) and torch.equal(base.y_val, rest.y_val)
    assert len(rest.y_train) == 60 - 15
    assert not torch.equal(base.X_val, other.X_val)
    # Growing n_train keeps the smaller train set inside the larger one.
    small = {bytes(x.numpy()) for x in base.X_train}
    assert small <= {bytes(x.numpy()) for x in rest.X_train}


def test_sizes_exceeding_the_files(mnist_root):
    root, _ = mnist_root
    with pytest.raises(ValueError, match="n_train=50 \\+ n_val=20.*60"):
        D.load_data("mnist", root=root, n_train=50, n_val=20, download=False)
    with pytest.raises(ValueError, match="n_test=21.*20"):
        D.load_data("mnist", root=root, n_test=21, download=False)


@pytest.mark.parametrize("kwargs", [dict(n_train=-1), dict(n_val=-3), dict(n_test=1.5),
                                    dict(n_val=None), dict(split_seed=-1),
                                    dict(n_train=50_000, n_val=10_001), dict(n_val=60_000),
                                    dict(n_test=10_001)])
def test_bad_sizes_raise_before_any_work(tmp_path, kwargs):
    empty = tmp_path / "empty"  # no data: a DatasetMissingError would mean work was done
    with pytest.raises(ValueError):
        D.load_data("mnist", root=empty, download=False, **kwargs)
    assert not empty.exists()


def test_bad_name():
    with pytest.raises(ValueError, match="cifar10.*fashion_mnist|fashion_mnist.*cifar10"):
        D.load_data("imagenet", synthetic=True)
    with pytest.raises(ValueError, match="'svhn'"):
        D.ensure_dataset("svhn", allow_download=False, allow_apt=False)


# ----------------------------------------------------------------------------- missing data

@pytest.mark.parametrize("name, fix", [("cifar10", "cifar-10-python.tar.gz"),
                                       ("cifar100", "cifar-100-python"),
                                       ("mnist", "train-images-idx3-ubyte"),
                                       ("fashion_mnist",
                                        "apt-get install -y dataset-fashion-mnist")])
def test_missing_data_names_the_fix(tmp_path, name, fix):
    with pytest.raises(D.DatasetMissingError) as info:
        D.ensure_dataset(name, tmp_path, allow_download=False, allow_apt=False)
    msg = str(info.value)
    assert name in msg and str(tmp_path) in msg and fix in msg
    with pytest.raises(D.DatasetMissingError):
        D.load_data(name, root=tmp_path, download=False)


def test_offline_download_fails_fast_with_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "_online", lambda url: False)
    with pytest.raises(D.DatasetMissingError, match="no connection"):
        D.ensure_dataset("mnist", tmp_path, allow_download=True, allow_apt=False)


def test_corrupted_cifar_is_reported(tmp_path):
    _write_cifar(tmp_path, "cifar10", np.random.default_rng(4), per_file=1)
    # Files exist, but the real MD5 check fails on them.
    with pytest.raises(D.DatasetMissingError, match="corrupted"):
        D.load_data("cifar10", root=tmp_path, download=False)


def test_data_root_resolution(tmp_path, monkeypatch):
    # D is the package lalr_core/core/data/: its __init__.py is three levels below the repo
    assert D.data_root() == Path(D.__file__).resolve().parents[3] / "data" / "datasets"
    monkeypatch.setenv(D.ROOT_ENV_VAR, str(tmp_path / "env"))
    assert D.data_root() == tmp_path / "env"
    assert D.data_root(tmp_path / "arg") == tmp_path / "arg"


# ----------------------------------------------------------------------------- synthetic

@pytest.mark.parametrize("name", sorted(D.DATASETS))
def test_synthetic_shapes_no_disk(monkeypatch, tmp_path, name):
    def boom(*args, **kwargs):
        raise AssertionError("synthetic data touched the disk")

    monkeypatch.setattr(D, "ensure_dataset", boom)
    monkeypatch.setattr(D, "_read_split", boom)
    spec = D.DATASETS[name]
    d = D.load_data(name, synthetic=True, n_val=16, root=tmp_path / "nowhere")
    C, S = spec.in_channels, spec.image_size
    assert d.X_train.shape == (512, C, S, S) and d.X_val.shape == (16, C, S, S)
    assert d.X_test.shape == (128, C, S, S) and d.y_train.dtype == torch.int64
    assert int(d.y_train.max()) < spec.num_classes and d.synthetic
    again = D.load_data(name, synthetic=True, n_val=16)
    assert torch.equal(d.X_train, again.X_train) and not (tmp_path / "nowhere").exists()


def test_synthetic_is_learnable():
    d = D.load_data("cifar10", synthetic=True)
    means = torch.stack([d.X_train[d.y_train == k].mean(0) for k in range(10)])  # (10, C, H, W)
    dist = torch.cdist(d.X_test.flatten(1), means.flatten(1))
    acc = (dist.argmin(1) == d.y_test).float().mean().item()
    assert acc > 0.5  # chance is 0.1


def test_image_data_to_and_summary():
    d = D.load_data("mnist", synthetic=True, n_train=8, n_test=4)
    e = d.to("cpu")
    assert e is not d and e.summary() == {**d.summary()}
    assert d.summary()["n_train"] == 8 and d.summary()["device"] == "cpu"


# ----------------------------------------------------------------------------- augment

def _images(N=6, C=2, H=5, W=7):
    return torch.arange(1, N * C * H * W + 1, dtype=torch.float32).view(N, C, H, W)


def test_augment_flip_only():
    X = _images(N=40)
    out = A.augment(X, crop_pad=0, flip=True, generator=torch.Generator().manual_seed(0))
    same = (out == X).flatten(1).all(1)
    flipped = (out == torch.flip(X, dims=[-1])).flatten(1).all(1)
    assert bool((same ^ flipped).all())  # each sample: exactly one (no image is symmetric)
    assert 0 < int(flipped.sum()) < 40


def test_augment_crop_is_a_window_of_the_padded_image():
    X, p = _images(N=30), 2
    out = A.augment(X, crop_pad=p, flip=False, generator=torch.Generator().manual_seed(1))
    Xp = torch.nn.functional.pad(X, (p, p, p, p))
    H, W = X.shape[-2:]
    offsets = set()
    for n in range(len(X)):
        hits = [(i, j) for i in range(2 * p + 1) for j in range(2 * p + 1)
                if torch.equal(out[n], Xp[n, :, i:i + H, j:j + W])]
        assert len(hits) == 1
        offsets.add(hits[0])
    assert len(offsets) > 5  # offsets do vary across samples


def test_augment_crop_and_flip_and_determinism():
    X, p = _images(N=20), 1
    g = lambda: torch.Generator().manual_seed(7)  # noqa: E731
    out = A.augment(X, crop_pad=p, generator=g())
    assert out.shape == X.shape and out.dtype == X.dtype
    assert torch.equal(out, A.augment(X, crop_pad=p, generator=g()))
    Xp = torch.nn.functional.pad(X, (p, p, p, p))
    H, W = X.shape[-2:]
    for n in range(len(X)):
        wins = [Xp[n, :, i:i + H, j:j + W] for i in range(3) for j in range(3)]
        assert any(torch.equal(out[n], w) or torch.equal(out[n], w.flip(-1)) for w in wins)
    assert A.augment(X, crop_pad=0, flip=False) is X


@pytest.mark.parametrize("bad", [dict(crop_pad=-1), dict(crop_pad=1.0)])
def test_augment_bad_args(bad):
    with pytest.raises(ValueError):
        A.augment(_images(), **bad)
    with pytest.raises(ValueError, match="shape"):
        A.augment(torch.zeros(3, 4, 4))


# ----------------------------------------------------------------------------- batches

@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_iterate_batches_covers_each_index_once(shuffle, drop_last):
    N, B = 23, 5
    X, y = torch.arange(N).float().view(N, 1, 1, 1) * 10, torch.arange(N)
    batches = list(D.iterate_batches(X, y, B, shuffle=shuffle, drop_last=drop_last,
                                     generator=torch.Generator().manual_seed(0)))
    assert len(batches) == D.num_batches(N, B, drop_last) == (4 if drop_last else 5)
    seen = torch.cat([yb for _, yb in batches])
    for Xb, yb in batches:
        assert torch.equal(Xb.flatten(), yb.float() * 10)
    if drop_last:
        assert len(seen) == 20 and len(set(seen.tolist())) == 20
    else:
        assert sorted(seen.tolist()) == list(range(N))
    assert (seen.tolist() != list(range(len(seen)))) == shuffle


def test_num_batches_and_bad_args():
    assert [D.num_batches(n, 4) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    assert [D.num_batches(n, 4, drop_last=True) for n in (3, 4, 9)] == [0, 1, 2]
    with pytest.raises(ValueError):
        D.num_batches(3, 0)
    with pytest.raises(ValueError, match="3 vs 2"):
        list(D.iterate_batches(torch.zeros(3, 1), torch.zeros(2), 2))


def test_truncated_debian_file_leaves_no_partial_output(tmp_path):
    debian = tmp_path / "deb"
    _write_idx(debian, np.random.default_rng(5), 5, 5, gz=True)
    big = debian / "train-images-idx3-ubyte.gz"
    big.write_bytes(big.read_bytes()[:-20])  # truncated download
    root = tmp_path / "r"
    with pytest.raises(D.DatasetMissingError, match="unreadable"):
        D.ensure_dataset("fashion_mnist", root, allow_download=False, allow_apt=False,
                         debian_dir=debian)
    raw = root / "FashionMNIST" / "raw"
    assert "train-images-idx3-ubyte" not in {p.name for p in raw.iterdir()}
    assert not [p for p in raw.iterdir() if p.suffix == ".part"]


# ----------------------------------------------------------------------------- digits (sklearn)
# Independent oracle: sklearn's own split and images, not lalr_core's reader.

def _sklearn_digits_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    i_tr, i_te = train_test_split(range(len(digits.target)), test_size=450,
                                  stratify=digits.target, random_state=0)
    return digits, np.sort(i_tr), np.sort(i_te)


def test_digits_is_sklearns_stratified_split_with_uint8_pixels(tmp_path):
    digits, i_tr, i_te = _sklearn_digits_split()
    d = D.load_data("digits", root=tmp_path / "nowhere")
    assert D.DATASETS["digits"].tv_class is None
    assert (d.num_classes, d.in_channels, d.image_size) == (10, 1, 8)
    assert d.X_train.shape == (1347, 1, 8, 8) and d.X_test.shape == (450, 1, 8, 8)
    assert d.X_val.shape == (0, 1, 8, 8) and d.X_train.dtype == torch.float32
    assert len(set(i_tr) | set(i_te)) == 1797 and not set(i_tr) & set(i_te)
    for X, y, idx in ((d.X_train, d.y_train, i_tr), (d.X_test, d.y_test, i_te)):
        np.testing.assert_array_equal(y.numpy(), digits.target[idx])
        images = digits.images[idx]                                     # float 0..16
        assert set(np.unique(images)) <= set(range(17))
        want = np.floor(images * 255 / 16 + 0.5).astype(np.int64)     # round half up
        np.testing.assert_array_equal(_unnormalise(X, "digits")[:, 0], want)
    assert _unnormalise(d.X_train, "digits").max() == 255  # 16 -> 255
    # stratified: every class holds 25% (+-1) of its images in the test split
    counts = np.bincount(digits.target, minlength=10)
    assert np.all(np.abs(np.bincount(d.y_test.numpy(), minlength=10) - 0.25 * counts) <= 1)
    assert not (tmp_path / "nowhere").exists()  # nothing written


def test_digits_constants_are_the_train_split_pixel_stats():
    digits, i_tr, _ = _sklearn_digits_split()
    pix = np.round(digits.images[i_tr] * 255 / 16) / 255.0
    spec = D.DATASETS["digits"]
    assert (spec.train_size, spec.test_size, spec.num_classes) == (1347, 450, 10)
    assert abs(pix.mean() - spec.mean[0]) < 5e-4 and abs(pix.std() - spec.std[0]) < 5e-4
    d = D.load_data("digits")
    assert abs(float(d.X_train.mean())) < 5e-3 and abs(float(d.X_train.std()) - 1) < 5e-3


def test_digits_n_val_holds_out_from_train():
    full = D.load_data("digits")
    d = D.load_data("digits", n_val=100)
    assert len(d.y_val) == 100 and len(d.y_train) == 1247 and len(d.y_test) == 450
    def key(X, y):
        pix = _unnormalise(X, "digits").astype(np.uint8).reshape(len(y), -1)
        return [row.tobytes() + bytes([label]) for row, label in zip(pix, y.tolist())]

    from collections import Counter
    assert Counter(key(d.X_train, d.y_train)) + Counter(key(d.X_val, d.y_val)) == \
        Counter(key(full.X_train, full.y_train))
    assert torch.equal(d.X_test, full.X_test)
    small = D.load_data("digits", n_train=64, n_val=100, n_test=32)
    assert torch.equal(small.X_val, d.X_val) and len(small.y_train) == 64
    with pytest.raises(ValueError):
        D.load_data("digits", n_train=1300, n_val=100)


def test_ensure_digits_needs_no_files(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("digits must not download or install anything")

    monkeypatch.setattr(D.subprocess, "run", boom)  # no apt-get
    monkeypatch.setattr(D.socket, "create_connection", boom)  # no network
    assert D.ensure_dataset("digits", tmp_path / "empty") == tmp_path / "empty"
    assert not (tmp_path / "empty").exists()


def test_digits_without_sklearn_raises_dataset_missing(tmp_path, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # import fails
    with pytest.raises(D.DatasetMissingError, match="scikit-learn"):
        D.ensure_dataset("digits", tmp_path)
    with pytest.raises(D.DatasetMissingError, match="digits"):
        D.load_data("digits", root=tmp_path)
    d = D.load_data("digits", synthetic=True, n_train=8, n_test=4)  # synthetic needs no sklearn
    assert d.X_train.shape == (8, 1, 8, 8)


# ----------------------------------------------------------------------------- augmix

def _digits_batch(n=12):
    return D.load_data("digits", n_train=n, n_test=1).X_train


def test_crop_pad_for():
    assert A.crop_pad_for(32) == 4 and A.crop_pad_for(8) == 1 and A.crop_pad_for(28) == 3
    assert A.crop_pad_for(4) == 1 and A.crop_pad_for(64) == 8


def test_augmix_shape_dtype_reproducible_and_uint8_pixels():
    X = _digits_batch()
    out = A.augmix(X, "digits", generator=torch.Generator().manual_seed(3))
    assert out.shape == X.shape and out.dtype == X.dtype and out.device == X.device
    again = A.augmix(X, "digits", generator=torch.Generator().manual_seed(3))
    other = A.augmix(X, "digits", generator=torch.Generator().manual_seed(4))
    assert torch.equal(out, again) and not torch.equal(out, other)
    assert not torch.equal(out, X)
    pix = _unnormalise(out, "digits")          # asserts integer pixels within float32 rounding
    assert pix.min() >= 0 and pix.max() <= 255
    x64 = A.augmix(X.double(), "digits", generator=torch.Generator().manual_seed(3))
    assert x64.dtype == torch.float64 and x64.shape == X.shape


def test_augmix_draws_per_sample_and_leaves_global_rng_alone():
    X = _digits_batch(1).expand(16, -1, -1, -1).contiguous()  # 16 copies of one image
    torch.manual_seed(123)
    before = torch.get_rng_state()
    out = A.augmix(X, "digits", generator=torch.Generator().manual_seed(0))
    A.augmix(X, "digits")  # generator=None: a fresh one, still not the global RNG
    assert torch.equal(torch.get_rng_state(), before)
    assert len({bytes(o.numpy()) for o in out}) > 1  # not one op chain shared by the batch
    with pytest.raises(ValueError):
        A.augmix(X[0], "digits")
