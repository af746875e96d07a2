"""Image datasets as device-resident tensors, and their mini-batches.

Serves every chapter that trains on CIFAR-10, CIFAR-100, MNIST, Fashion-MNIST or the sklearn
digits (seed 001's reduced experiments: 8x8 grey images that ship inside scikit-learn).

Flow: ``ensure_dataset`` makes the raw files available (already there -> Debian package ->
torchvision download -> ``apt-get``), else raises ``DatasetMissingError`` saying how to get
them; it never switches silently to other data. ``load_data`` reads the official uint8
arrays through torchvision's dataset objects (``.data``/``.targets``, no per-sample
``__getitem__``), holds a validation set out of the official train split, and normalises
in one vectorised op on the target device. ``iterate_batches`` runs on that device;
augmentation is `lalr_core.augmentation`.

Layout under the data root (default ``<repo>/data/datasets``, or ``$LALR_DATA_ROOT``) is
torchvision's own: ``cifar-10-batches-py/``, ``cifar-100-python/``, ``MNIST/raw/``,
``FashionMNIST/raw/``.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import torchvision.datasets as tvd

# Debian's `dataset-fashion-mnist` installs the four IDX files here, gzipped (see
# spec/machine_measurements.md section 2). Tests point this at a temporary directory.
DEBIAN_FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
DEBIAN_FASHION_MNIST_PACKAGE = "dataset-fashion-mnist"
ROOT_ENV_VAR = "LALR_DATA_ROOT"
SYNTHETIC_SIZES = (512, 128)  # default (n_train, n_test) of synthetic data, samples
_PROBE_TIMEOUT_S = 5.0  # seconds to wait for a TCP connection before calling us offline


@dataclass(frozen=True)
class DatasetSpec:
    """What ``load_data`` needs to know about one dataset.

    ``mean``/``std`` are per-channel constants on the [0, 1] pixel scale.
    """

    tv_class: type | None   # torchvision dataset class (None: read by ``_read_digits``)
    in_channels: int
    image_size: int         # pixels per side (square images)
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    train_size: int         # samples in the official train split
    test_size: int          # samples in the official test split


DATASETS: dict[str, DatasetSpec] = {
    # CIFAR-10 constants as in the sources' code (the std is the often-quoted 0.2023 set).
    "cifar10": DatasetSpec(tvd.CIFAR10, 3, 32, 10, (0.4914, 0.4822, 0.4465),
                           (0.2023, 0.1994, 0.2010), 50_000, 10_000),
    "cifar100": DatasetSpec(tvd.CIFAR100, 3, 32, 100, (0.5071, 0.4865, 0.4409),
                            (0.2673, 0.2564, 0.2762), 50_000, 10_000),
    "mnist": DatasetSpec(tvd.MNIST, 1, 28, 10, (0.1307,), (0.3081,), 60_000, 10_000),
    "fashion_mnist": DatasetSpec(tvd.FashionMNIST, 1, 28, 10, (0.2860,), (0.3530,),
                                 60_000, 10_000),
    # sklearn digits (1797 images, values 0..16 stored as uint8 round(v * 255 / 16)); the
    # "official" split is the digest's stratified 1347/450 (random_state 0); mean/std of its
    # train part (tests/test_data.py recomputes them).
    "digits": DatasetSpec(None, 1, 8, 10, (0.3053,), (0.3758,), 1347, 450),
}
DIGITS_SPLIT_SEED = 0  # seed 001 digest, "D-DIG"


class DatasetMissingError(RuntimeError):
    """The raw files of a dataset are absent and could not be fetched."""


def check_dataset_name(name: str) -> None:
    """Raise unless ``name`` is a key of ``DATASETS``.

    Args:
        name: dataset name.

    Raises:
        ValueError: naming the bad value and the valid ones.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}")


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root: ``root`` if given, else ``$LALR_DATA_ROOT``, else ``<repo>/data/datasets``.

    Args:
        root: explicit root, or None.

    Returns:
        The root as a ``Path`` (not created).
    """
    if root is not None:
        return Path(root)
    if os.environ.get(ROOT_ENV_VAR):
        return Path(os.environ[ROOT_ENV_VAR])
    return Path(__file__).resolve().parent.parent / "data" / "datasets"


# ----------------------------------------------------------------------------- raw files

def _raw_files(name: str, root: Path) -> list[Path]:
    """The files torchvision's ``download=False`` reads for ``name`` under ``root``."""
    cls = DATASETS[name].tv_class
    if issubclass(cls, tvd.CIFAR10):
        names = [f for f, _ in cls.train_list + cls.test_list] + [cls.meta["filename"]]
        return [root / cls.base_folder / f for f in names]
    # MNIST family: resources are .gz names; torchvision reads them decompressed.
    return [root / cls.__name__ / "raw" / Path(f).stem for f, _ in cls.resources]


def _present(name: str, root: Path) -> bool:
    return all(p.is_file() for p in _raw_files(name, root))


def _install_from_debian(root: Path, debian_dir: Path) -> bool:
    """Gunzip Debian's Fashion-MNIST files into ``root/FashionMNIST/raw`` (atomically).

    Returns:
        True when all four files were there and are now in place.
    """
    targets = _raw_files("fashion_mnist", root)
    sources = [debian_dir / (t.name + ".gz") for t in targets]
    if not all(s.is_file() for s in sources):
        return False
    targets[0].parent.mkdir(parents=True, exist_ok=True)
    for src, dst in zip(sources, targets, strict=True):
        # Temp file in the same folder, then rename: a crash never leaves a half file.
        fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=dst.name + ".", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out, gzip.open(src, "rb") as inp:
                shutil.copyfileobj(inp, out, length=1 << 20)
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return True


def _debian_step(root: Path, debian: Path, notes: list[str]) -> bool:
    """``_install_from_debian``, noting an unreadable (e.g. truncated) package file."""
    try:
        return _install_from_debian(root, debian)
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
        notes.append(f"the Debian files in {debian} are unreadable: {exc}")
        return False


def _online(url: str) -> bool:
    """A quick TCP probe so that an offline machine fails in seconds, not minutes."""
    if any(os.environ.get(v) for v in ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY")):
        return True  # the probe cannot see through a proxy; let urllib try
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=_PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def _try_download(name: str, root: Path) -> str | None:
    """Run torchvision's ``download=True``; return None on success, else why it failed."""
    cls = DATASETS[name].tv_class
    url = cls.url if issubclass(cls, tvd.CIFAR10) else cls.mirrors[0]
    if not _online(url):
        return f"no connection to {urllib.parse.urlsplit(url).hostname}"
    try:
        cls(str(root), train=False, download=True)  # fetches both splits' files
    except (OSError, RuntimeError, ValueError, EOFError, tarfile.TarError) as exc:
        return f"download failed: {exc}"
    return None


def _try_apt() -> str | None:
    """``apt-get install`` the Debian Fashion-MNIST package; None on success, else why not."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "not running as root, so apt-get was not tried"
    if shutil.which("apt-get") is None:
        return "apt-get not found"
    cmd = ["apt-get", "install", "-y", DEBIAN_FASHION_MNIST_PACKAGE]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{' '.join(cmd)} failed: {exc}"
    if proc.returncode != 0:
        return f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}"
    return None


def _how_to_get(name: str, root: Path) -> str:
    cls = DATASETS[name].tv_class
    online = "Online: it is downloaded automatically (load_data(download=True) / ensure_dataset)."
    if name == "fashion_mnist":
        return (f"{online} Offline (Debian/Ubuntu): `apt-get install -y "
                f"{DEBIAN_FASHION_MNIST_PACKAGE}`; its files in {DEBIAN_FASHION_MNIST_DIR} are "
                f"then gunzipped into {root / 'FashionMNIST' / 'raw'} automatically.")
    if issubclass(cls, tvd.CIFAR10):
        return (f"{online} Offline: copy {cls.filename} (from {cls.url}) and extract it under "
                f"{root}, so that {root / cls.base_folder} holds "
                f"{', '.join(p.name for p in _raw_files(name, root))}.")
    return (f"{online} Offline: put the four decompressed IDX files "
            f"({', '.join(p.name for p in _raw_files(name, root))}) in "
            f"{root / cls.__name__ / 'raw'}.")


def ensure_dataset(name: str, root: str | os.PathLike | None = None, *,
                   allow_download: bool = True, allow_apt: bool = True,
                   debian_dir: str | os.PathLike | None = None) -> Path:
    """Make the raw files of ``name`` available under the data root.

    Tries, in order: (1) already present; (2) Fashion-MNIST only: gunzip the Debian
    package's files; (3) torchvision download (skipped within seconds when offline);
    (4) Fashion-MNIST only, as root: ``apt-get install -y dataset-fashion-mnist``, then (2).

    Args:
        name: a key of ``DATASETS``.
        root: data root; see ``data_root``.
        allow_download: whether step (3) may run.
        allow_apt: whether step (4) may run.
        debian_dir: where the Debian package keeps its files; default
            ``DEBIAN_FASHION_MNIST_DIR``.

    Returns:
        The data root.

    Raises:
        ValueError: unknown ``name``.
        DatasetMissingError: every step failed; the message says how to get the data.
    """
    check_dataset_name(name)
    root = data_root(root)
    if DATASETS[name].tv_class is None:  # digits ship inside scikit-learn
        _sklearn_digits()
        return root
    debian = Path(debian_dir) if debian_dir is not None else DEBIAN_FASHION_MNIST_DIR
    if _present(name, root):
        return root
    is_fmnist, notes = name == "fashion_mnist", []
    if is_fmnist and _debian_step(root, debian, notes):
        return root
    if allow_download:
        why = _try_download(name, root)
        if why is None and _present(name, root):
            return root
        notes.append(why or "download finished but files are missing")
    if is_fmnist and allow_apt:
        why = _try_apt()
        if why is None and _debian_step(root, debian, notes):
            return root
        notes.append(why or f"apt-get succeeded but {debian} has no files")
    tried = f" Tried: {'; '.join(notes)}." if notes else ""
    raise DatasetMissingError(f"dataset {name!r} not found under {root}.{tried} "
                              f"{_how_to_get(name, root)}")


# ----------------------------------------------------------------------------- tensors

@dataclass
class ImageData:
    """Train/validation/test tensors of one dataset on one device.

    ``X_*`` are float32 ``[N, C, H, W]``, normalised per channel; ``y_*`` are int64 ``[N]``.
    """

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_val: torch.Tensor
    y_val: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    name: str
    num_classes: int
    in_channels: int
    image_size: int
    synthetic: bool = False

    _TENSORS = ("X_train", "y_train", "X_val", "y_val", "X_test", "y_test")

    def to(self, device: str | torch.device) -> ImageData:
        """Move every tensor.

        Args:
            device: target device.

        Returns:
            A new ``ImageData`` on ``device`` (this one is unchanged).
        """
        return dataclasses.replace(self, **{k: getattr(self, k).to(device) for k in self._TENSORS})

    @property
    def device(self) -> torch.device:
        """The device of the tensors."""
        return self.X_train.device

    def summary(self) -> dict[str, Any]:
        """Sizes and identity, for logs and provenance.

        Returns:
            ``{"name", "synthetic", "num_classes", "in_channels", "image_size", "n_train",
            "n_val", "n_test", "device"}``.
        """
        return {"name": self.name, "synthetic": self.synthetic, "num_classes": self.num_classes,
                "in_channels": self.in_channels, "image_size": self.image_size,
                "n_train": len(self.y_train), "n_val": len(self.y_val),
                "n_test": len(self.y_test), "device": str(self.device)}


def _check_count(label: str, value: Any, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{label} must be a non-negative int{' or None' if allow_none else ''}, "
                         f"got {value!r}")


def _check_sizes(n_train: int | None, n_val: int, n_test: int | None,
                 train_avail: int, test_avail: int) -> None:
    """Raise ValueError when the requested sizes exceed what the splits hold."""
    if n_val + (n_train or 0) > train_avail or (n_train is None and n_val >= train_avail):
        raise ValueError(f"n_train={n_train} + n_val={n_val} needs more than the {train_avail} "
                         "samples of the train split (n_train=None takes the rest, at least 1)")
    if n_test is not None and n_test > test_avail:
        raise ValueError(f"n_test={n_test} exceeds the {test_avail} samples of the test split")


def _split_indices(train_avail: int, test_avail: int, n_train: int | None, n_val: int,
                   n_test: int | None, split_seed: int) -> tuple[torch.Tensor, ...]:
    """Sorted train/val/test indices.

    Val is the first ``n_val`` of one seeded permutation and train the next ``n_train``, so
    val does not depend on ``n_train`` and train sets are nested as ``n_train`` grows.
    """
    gen = torch.Generator().manual_seed(split_seed)
    perm = torch.randperm(train_avail, generator=gen)
    stop = train_avail if n_train is None else n_val + n_train
    idx_val, idx_train = perm[:n_val], perm[n_val:stop]
    test_perm = torch.randperm(test_avail, generator=gen)  # drawn after perm: seed-determined
    idx_test = torch.arange(test_avail) if n_test is None else test_perm[:n_test]
    return idx_train.sort().values, idx_val.sort().values, idx_test.sort().values


def _sklearn_digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:
        raise DatasetMissingError("dataset 'digits' needs scikit-learn (it ships the images): "
                                  "pip install scikit-learn") from exc
    return load_digits


def _read_digits(train: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The digest's D-DIG split: stratified 1347 train / 450 test, ``random_state=0``."""
    from sklearn.model_selection import train_test_split
    digits = _sklearn_digits()()
    X = torch.from_numpy((digits.images * 255.0 / 16.0).round()).to(torch.uint8).unsqueeze(1)
    y = torch.from_numpy(digits.target).to(torch.int64)
    i_tr, i_te = train_test_split(range(len(y)), test_size=DATASETS["digits"].test_size,
                                  stratify=y.numpy(), random_state=DIGITS_SPLIT_SEED)
    idx = torch.tensor(sorted(i_tr if train else i_te))
    return X[idx], y[idx]


def _read_split(name: str, root: Path, train: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Official split as uint8 ``[N, C, H, W]`` and int64 ``[N]``, via torchvision."""
    if DATASETS[name].tv_class is None:
        return _read_digits(train)
    try:
        ds = DATASETS[name].tv_class(str(root), train=train, download=False)
    except RuntimeError as exc:  # torchvision: "Dataset not found or corrupted"
        raise DatasetMissingError(f"dataset {name!r} under {root} is missing or corrupted "
                                  f"({exc}); delete it and retry. {_how_to_get(name, root)}"
                                  ) from exc
    data = torch.as_tensor(ds.data)
    X = data.permute(0, 3, 1, 2) if data.ndim == 4 else data.unsqueeze(1)  # NHWC/NHW -> NCHW
    return X, torch.as_tensor(ds.targets, dtype=torch.int64)


def normalise(X: torch.Tensor, name: str) -> torch.Tensor:
    """Map uint8 pixels to float32 ``(X / 255 - mean) / std`` with ``DATASETS[name]``'s constants.

    Args:
        X: uint8 images ``[N, C, H, W]``.
        name: a key of ``DATASETS``.

    Returns:
        float32 ``[N, C, H, W]`` on ``X``'s device.
    """
    spec = DATASETS[name]
    mean = torch.tensor(spec.mean, device=X.device).view(1, -1, 1, 1)
    std = torch.tensor(spec.std, device=X.device).view(1, -1, 1, 1)
    return (X.float().div_(255.0) - mean).div_(std)


def _synthetic(name: str, n_train: int, n_val: int, n_test: int, seed: int,
               device: torch.device) -> ImageData:
    """Class-dependent smooth mean patterns plus unit Gaussian noise, in memory."""
    spec = DATASETS[name]
    C, S, K = spec.in_channels, spec.image_size, spec.num_classes
    g = torch.Generator().manual_seed(seed * 4)
    # Patterns drawn on a 4x4 grid and upsampled: low-frequency, so a CNN can pick them up.
    patterns = 0.5 * F.interpolate(torch.randn(K, C, 4, 4, generator=g), size=(S, S),
                                   mode="bilinear", align_corners=False)

    def draw(n: int, offset: int) -> tuple[torch.Tensor, torch.Tensor]:
        gs = torch.Generator().manual_seed(seed * 4 + offset)  # one stream per split
        y = torch.randint(0, K, (n,), generator=gs)
        X = patterns[y] + torch.randn(n, C, S, S, generator=gs)
        return X.to(device), y.to(device)

    (Xtr, ytr), (Xv, yv), (Xte, yte) = draw(n_train, 1), draw(n_val, 2), draw(n_test, 3)
    return ImageData(Xtr, ytr, Xv, yv, Xte, yte, name, K, C, S, synthetic=True)


def load_data(name: str, *, root: str | os.PathLike | None = None, n_train: int | None = None,
              n_val: int = 0, n_test: int | None = None, split_seed: int = 0,
              synthetic: bool = False, device: str | torch.device = "cpu",
              download: bool = True) -> ImageData:
    """Load a dataset as normalised tensors on ``device``.

    Validation is held out of the official train split (the sources use 40k/10k on
    CIFAR-10: ``n_val=10000``, ``n_train=None``); the test set is the official one.

    Args:
        name: a key of ``DATASETS``.
        root: data root; see ``data_root``.
        n_train: train samples; None = all not held out (synthetic: 512).
        n_val: validation samples drawn from the train split.
        n_test: test samples, the first of a seeded permutation; None = all (synthetic: 128).
        split_seed: seed of the split permutations (and of synthetic data).
        synthetic: generate data of the real shapes and classes in memory; no disk access.
        device: where the tensors live.
        download: whether missing data may be downloaded (torchvision or apt-get).

    Returns:
        The ``ImageData``.

    Raises:
        ValueError: unknown name, negative sizes, or sizes larger than the splits.
        DatasetMissingError: real data absent and not obtainable.
    """
    check_dataset_name(name)
    for label, value, none_ok in (("n_train", n_train, True), ("n_val", n_val, False),
                                  ("n_test", n_test, True), ("split_seed", split_seed, False)):
        _check_count(label, value, allow_none=none_ok)
    spec, device = DATASETS[name], torch.device(device)
    _check_sizes(n_train, n_val, n_test, spec.train_size, spec.test_size)
    if synthetic:
        n_tr, n_te = SYNTHETIC_SIZES
        return _synthetic(name, n_tr if n_train is None else n_train, n_val,
                          n_te if n_test is None else n_test, split_seed, device)
    root = ensure_dataset(name, root, allow_download=download, allow_apt=download)
    X_all, y_all = _read_split(name, root, train=True)
    X_tst, y_tst = _read_split(name, root, train=False)
    _check_sizes(n_train, n_val, n_test, len(y_all), len(y_tst))  # actual files may be smaller
    i_tr, i_val, i_te = _split_indices(len(y_all), len(y_tst), n_train, n_val, n_test, split_seed)

    def take(X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # Index the uint8 array first (4x less to copy), normalise on the device.
        return normalise(X[idx].to(device), name).contiguous(), y[idx].to(device)

    return ImageData(*take(X_all, y_all, i_tr), *take(X_all, y_all, i_val),
                     *take(X_tst, y_tst, i_te), name, spec.num_classes, spec.in_channels,
                     spec.image_size, synthetic=False)


# ----------------------------------------------------------------------------- batches

def _generator_for(generator: torch.Generator | None, device: torch.device) -> torch.Generator:
    """``generator``, or a fresh OS-seeded one (never the global RNG)."""
    if generator is not None:
        return generator
    gen = torch.Generator(device=device)
    gen.seed()
    return gen


def num_batches(n: int, batch_size: int, drop_last: bool = False) -> int:
    """Batches per pass over ``n`` samples.

    Args:
        n: samples.
        batch_size: samples per batch.
        drop_last: whether the final incomplete batch is skipped.

    Returns:
        ``n // batch_size`` if ``drop_last`` else ``ceil(n / batch_size)``.

    Raises:
        ValueError: ``batch_size`` not positive.
    """
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return n // batch_size if drop_last else -(-n // batch_size)


def iterate_batches(X: torch.Tensor, y: torch.Tensor, batch_size: int, *, shuffle: bool = True,
                    generator: torch.Generator | None = None,
                    drop_last: bool = False) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(Xb, yb)`` minibatches covering each sample once per pass.

    Args:
        X: inputs ``[N, ...]``.
        y: labels ``[N]``.
        batch_size: samples per batch (the last one may be smaller unless ``drop_last``).
        shuffle: random order (``index_select``) instead of contiguous views.
        generator: source of the order; its device is used; None = fresh, non-reproducible.
        drop_last: skip the final incomplete batch.

    Yields:
        ``(Xb, yb)`` with ``Xb`` ``[B, ...]`` and ``yb`` ``[B]``.

    Raises:
        ValueError: mismatched lengths or non-positive ``batch_size``.
    """
    N = len(X)
    if len(y) != N:
        raise ValueError(f"X and y differ in length: {N} vs {len(y)}")
    count = num_batches(N, batch_size, drop_last)
    if not shuffle:
        for b in range(count):
            yield X[b * batch_size:(b + 1) * batch_size], y[b * batch_size:(b + 1) * batch_size]
        return
    gen = _generator_for(generator, X.device)
    perm = torch.randperm(N, generator=gen, device=gen.device).to(X.device)
    for b in range(count):
        idx = perm[b * batch_size:(b + 1) * batch_size]
        yield X.index_select(0, idx), y.index_select(0, idx)
