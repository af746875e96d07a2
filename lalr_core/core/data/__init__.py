"""Image datasets as device-resident tensors, and their mini-batches.

Serves every chapter that trains on CIFAR-10, CIFAR-100, MNIST, Fashion-MNIST or the sklearn
digits (seed 001's reduced experiments: 8x8 grey images that ship inside scikit-learn).

Flow: ``ensure_dataset`` makes the raw files available (already there -> Debian package ->
torchvision download -> ``apt-get``, the last only when asked), else raises
``DatasetMissingError`` saying how to get them; it never switches silently to other data. A
library call never installs system packages: only the driver's data step (``make data``,
``make figures``) passes ``allow_apt=True``, and says so before it runs apt-get. ``load_data`` reads the official uint8
arrays through torchvision's dataset objects (``.data``/``.targets``, no per-sample
``__getitem__``), holds a validation set out of the official train split, and normalises
in one vectorised op on the target device. ``iterate_batches`` runs on that device;
augmentation is `lalr_core.core.data.augmentation`.

Layout under the data root (default ``<repo>/data/datasets``, or ``$LALR_DATA_ROOT``) is
torchvision's own: ``cifar-10-batches-py/``, ``cifar-100-python/``, ``MNIST/raw/``,
``FashionMNIST/raw/``.

The package: ``specs`` (``DATASETS``, names, the data root, ``DatasetMissingError``),
``tensors`` (``ImageData``, ``normalise``, the split checks and indices), ``synthetic``
(in-memory data of the real shapes) and ``batches`` (``iterate_batches``). This module holds
the real-data path -- raw files (present, Debian Fashion-MNIST, torchvision download,
``apt-get``), the readers (torchvision files, sklearn digits) and ``load_data`` -- and
re-exports the rest. That path stays here rather than in a submodule so that its seams
(``DEBIAN_FASHION_MNIST_DIR``, ``_online``, ``ensure_dataset``, ``_read_split``) are looked
up in this namespace: patching ``lalr_core.core.data.<name>``, as tests/test_data.py does,
still takes effect.
"""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import urllib.parse
from pathlib import Path

import torch
import torchvision.datasets as tvd

from lalr_core.core import rehearsal
from lalr_core.core.data.batches import generator_for, iterate_batches, num_batches
from lalr_core.core.data.specs import (
    DATASETS,
    DIGITS_SPLIT_SEED,
    ROOT_ENV_VAR,
    DatasetMissingError,
    DatasetSpec,
    check_dataset_name,
    data_root,
)
from lalr_core.core.data.synthetic import SYNTHETIC_SIZES, synthetic_data
from lalr_core.core.data.tensors import (
    ImageData,
    check_count,
    check_sizes,
    normalise,
    split_indices,
)

__all__ = [
    "DATASETS", "DEBIAN_FASHION_MNIST_DIR", "DEBIAN_FASHION_MNIST_PACKAGE", "DIGITS_SPLIT_SEED",
    "ROOT_ENV_VAR", "SYNTHETIC_SIZES", "DatasetMissingError", "DatasetSpec", "ImageData",
    "check_count", "check_dataset_name", "check_sizes", "data_root", "ensure_dataset",
    "generator_for", "iterate_batches", "load_data", "normalise", "num_batches",
    "split_indices", "synthetic_data",
]

# Debian's `dataset-fashion-mnist` installs the four IDX files here, gzipped. Tests point
# this at a temporary directory.
DEBIAN_FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
DEBIAN_FASHION_MNIST_PACKAGE = "dataset-fashion-mnist"
_PROBE_TIMEOUT_S = 5.0  # seconds to wait for a TCP connection before calling us offline


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
                   allow_download: bool = True, allow_apt: bool = False,
                   debian_dir: str | os.PathLike | None = None) -> Path:
    """Make the raw files of ``name`` available under the data root.

    Tries, in order: (1) already present; (2) Fashion-MNIST only: gunzip the Debian
    package's files; (3) torchvision download (skipped within seconds when offline);
    (4) Fashion-MNIST only, as root: ``apt-get install -y dataset-fashion-mnist``, then (2).

    Args:
        name: a key of ``DATASETS``.
        root: data root; see ``data_root``.
        allow_download: whether step (3) may run.
        allow_apt: whether step (4) may run (never by default: installing a system package
            is for an explicit data step, not a side effect of a library call).
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


# ----------------------------------------------------------------------------- readers

def _sklearn_digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:
        raise DatasetMissingError("dataset 'digits' needs scikit-learn (it ships the images): "
                                  "pip install scikit-learn") from exc
    return load_digits


def _read_digits(train: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The collection's digits split (ours): stratified 1347 train / 450 test, ``random_state=0``."""
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
        download: whether missing data may be downloaded by torchvision (never apt-get:
            see ``ensure_dataset``).

    Returns:
        The ``ImageData``.

    Raises:
        ValueError: unknown name, negative sizes, or sizes larger than the splits.
        DatasetMissingError: real data absent and not obtainable (in a rehearsal,
            `lalr_core.core.rehearsal`, absent data is drawn synthetic instead, and the splits
            are cut to ``rehearsal.SPLIT_CAP`` / ``EVAL_CAP`` examples).
    """
    check_dataset_name(name)
    for label, value, none_ok in (("n_train", n_train, True), ("n_val", n_val, False),
                                  ("n_test", n_test, True), ("split_seed", split_seed, False)):
        check_count(label, value, allow_none=none_ok)
    spec, device = DATASETS[name], torch.device(device)
    check_sizes(n_train, n_val, n_test, spec.train_size, spec.test_size)
    if rehearsal.active():  # "the whole split" is a length too: a few batches rehearse it
        n_train = min(spec.train_size - n_val if n_train is None else n_train,
                      rehearsal.SPLIT_CAP)
        n_val = min(n_val, rehearsal.EVAL_CAP)
        n_test = min(spec.test_size if n_test is None else n_test, rehearsal.EVAL_CAP)
    if not synthetic and rehearsal.active() and DATASETS[name].tv_class is not None \
            and not _present(name, data_root(root)):
        synthetic = True  # a rehearsal needs the shapes, not the data (see core.rehearsal)
    if synthetic:
        n_tr, n_te = SYNTHETIC_SIZES
        return synthetic_data(name, n_tr if n_train is None else n_train, n_val,
                              n_te if n_test is None else n_test, split_seed, device)
    root = ensure_dataset(name, root, allow_download=download)
    X_all, y_all = _read_split(name, root, train=True)
    X_tst, y_tst = _read_split(name, root, train=False)
    check_sizes(n_train, n_val, n_test, len(y_all), len(y_tst))  # actual files may be smaller
    i_tr, i_val, i_te = split_indices(len(y_all), len(y_tst), n_train, n_val, n_test, split_seed)

    def take(X: torch.Tensor, y: torch.Tensor, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # Index the uint8 array first (4x less to copy), normalise on the device.
        return normalise(X[idx].to(device), name).contiguous(), y[idx].to(device)

    return ImageData(*take(X_all, y_all, i_tr), *take(X_all, y_all, i_val),
                     *take(X_tst, y_tst, i_te), name, spec.num_classes, spec.in_channels,
                     spec.image_size, synthetic=False)
