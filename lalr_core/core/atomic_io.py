"""Atomic file writes and canonical JSON: the one home of both.

Writes: `atomic_write` (and `atomic_write_bytes`, `atomic_write_text`, `atomic_torch_save`)
writes into a hidden sibling ``.<name>.<pid>.<random>.tmp`` created exclusively by this call,
flushes it to disk and renames it over the target. A reader sees the old file or the new one,
never a half; a write that fails leaves the old file as it was (and removes its temporary
file), a killed one at most leaves the hidden temporary file behind. Two processes (or
threads) writing the same path never share a temporary file; the last rename wins.

Canonical JSON: `to_canonical` turns parameters into plain JSON values that are equal exactly
when the parameters are (tuples as lists, numpy scalars as Python numbers, enums as their
values, paths as POSIX strings, dataclasses as dicts); `canonical_json` is their key-sorted,
compact text, the payload `lalr_core.core.runs.param_hash` hashes.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import pathlib
import secrets
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

# ---------------------------------------------------------------- canonical JSON


def to_canonical(value: Any, key: str = "") -> Any:
    """Convert `value` to a JSON-able form that is equal exactly when the values are.

    Args:
        value: JSON-like values, numpy scalars and arrays, paths, enums, dataclasses, torch
            dtypes and devices; mappings need str keys.
        key: Where `value` sits (e.g. ``optim.betas``), for the error message.

    Raises:
        ValueError: If a value cannot be converted (the message names its key).
    """
    if isinstance(value, enum.Enum):
        return to_canonical(value.value, key)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)  # json writes float.__repr__, the shortest round-trip form
    if isinstance(value, pathlib.PurePath):
        return value.as_posix()
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        return to_canonical(value.tolist() if getattr(value, "ndim", 0) else value.item(), key)
    if type(value).__module__ == "torch" and type(value).__name__ in ("dtype", "device"):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"parameter keys must be str, got {k!r} in {key or 'params'}")
            out[k] = to_canonical(v, f"{key}.{k}" if key else k)
        return out
    if isinstance(value, (list, tuple)):
        return [to_canonical(v, f"{key}[{i}]") for i, v in enumerate(value)]
    raise ValueError(
        f"parameter {key or 'params'!r} is not serialisable for hashing: "
        f"{type(value).__name__} {value!r}"
    )


def canonical_json(obj: Any) -> str:
    """Key-sorted, whitespace-free JSON of ``to_canonical(obj)`` (floats by ``repr``).

    Raises:
        ValueError: If a value cannot be converted (see `to_canonical`).
    """
    return json.dumps(to_canonical(obj), sort_keys=True, separators=(",", ":"), allow_nan=True)


# ---------------------------------------------------------------- low-level helpers


def write_synced(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` (not atomically) and flush it to disk."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def fsync_dir(path: str | os.PathLike) -> None:
    """Flush a directory's entries to disk where the platform allows it."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # not every platform can open a directory; the renames stay atomic
        pass


def temp_dir(parent: str | os.PathLike, prefix: str) -> pathlib.Path:
    """Create a new directory ``<parent>/<prefix><pid>-<random>`` (exclusively) and return it."""
    return pathlib.Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))


def temp_file(path: str | os.PathLike) -> pathlib.Path:
    """Create an empty hidden sibling ``.<name>.<pid>.<random>.tmp`` of `path` and return it.

    The file is created exclusively (``O_EXCL``), so no other writer has the same one; its
    mode follows the umask like a plain ``open``.
    """
    path = pathlib.Path(path)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name beside {path}")


def _fsync_file(path: pathlib.Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- atomic writers


def atomic_write(path: str | os.PathLike, write: Callable[[pathlib.Path], Any]) -> pathlib.Path:
    """Call ``write(tmp)`` on a fresh temporary sibling of `path`, then rename it onto `path`.

    The parent directory is created if needed. If `write` raises (or anything before the
    rename does), the temporary file is removed and `path` is untouched.

    Returns:
        `path` as a ``Path``.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_file(path)
    try:
        write(tmp)
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> pathlib.Path:
    """Write `data` to `path` atomically."""
    data = bytes(data)
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def atomic_write_text(path: str | os.PathLike, text: str) -> pathlib.Path:
    """Write `text` (UTF-8, no newline translation) to `path` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_torch_save(obj: Any, path: str | os.PathLike) -> pathlib.Path:
    """``torch.save(obj, path)`` atomically: a kill leaves the previous file intact."""
    import torch  # lazy: this module is imported where torch is not needed

    return atomic_write(path, lambda tmp: torch.save(obj, tmp))
