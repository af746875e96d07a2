"""Atomic file writes and canonical JSON: the one home of both.

Writes: `atomic_write` (and `atomic_write_bytes`, `atomic_write_text`, `atomic_torch_save`)
writes into a hidden sibling ``.<name>.<pid>.<random>.tmp`` created exclusively by this call,
flushes it to disk and renames it over the target. A reader sees the old file or the new one,
never a half; a write that fails leaves the old file as it was (and removes its temporary
file), a killed one at most leaves the hidden temporary file behind. Two processes (or
threads) writing the same path never share a temporary file; the last rename wins.

Checked files: `atomic_write_checked` writes data atomically with its sha256 in a sibling
``<name>.sha256``, and `read_checked` returns the data only when the digest matches, so a
flipped byte is detected (as the run cache's checksums detect it in an entry).

Canonical JSON: `to_canonical` turns parameters into plain JSON values that are equal exactly
when the parameters are (tuples as lists, numpy scalars as Python numbers, enums as their
values, paths as POSIX strings, dataclasses as dicts); `canonical_json` is their key-sorted,
compact text, the payload `lalr_core.core.runs.param_hash` hashes.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
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


# ---------------------------------------------------------------- checked files

CHECKSUM_SUFFIX = ".sha256"  # the digest file of a checked file: ``<name>.sha256`` beside it


def checksum_path(path: str | os.PathLike) -> pathlib.Path:
    """The digest file of the checked file `path`."""
    path = pathlib.Path(path)
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def atomic_write_checked(path: str | os.PathLike, data: bytes) -> pathlib.Path:
    """Write `data` to `path` atomically, with its sha256 in ``<path>.sha256``.

    Two files cannot be renamed in one step, so the digest file goes first and lists the new
    digest and that of the data now on disk (when it verifies): a kill between the two renames
    leaves the previous data, which still verifies, never a pair that fails.

    Returns:
        `path` as a ``Path``.
    """
    path = pathlib.Path(path)
    digests = [hashlib.sha256(data).hexdigest()]
    try:
        old = hashlib.sha256(read_checked(path)).hexdigest()
    except (OSError, ValueError):  # no previous data, or none worth keeping valid
        old = digests[0]
    if old != digests[0]:
        digests.append(old)
    text = json.dumps({"sha256": digests})
    atomic_write_bytes(checksum_path(path), text.encode("utf-8"))
    return atomic_write_bytes(path, data)


def read_checked(path: str | os.PathLike) -> bytes:
    """Return the data of a file written by `atomic_write_checked`.

    Raises:
        OSError: If `path` cannot be read (e.g. ``FileNotFoundError``).
        ValueError: If the digest file is missing or unreadable, or the data's sha256 is not
            in it (the file is damaged).
    """
    path = pathlib.Path(path)
    data = path.read_bytes()
    digest_file = checksum_path(path)
    try:
        digests = json.loads(digest_file.read_text(encoding="utf-8"))["sha256"]
    except FileNotFoundError:
        raise ValueError(f"{path} has no checksum file {digest_file.name}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"unreadable checksum file {digest_file} ({exc!r})") from None
    if not isinstance(digests, list) or hashlib.sha256(data).hexdigest() not in digests:
        raise ValueError(f"checksum of {path} does not match {digest_file.name}")
    return data


def remove_checked(path: str | os.PathLike) -> None:
    """Delete a checked file and its digest file (either may be missing)."""
    pathlib.Path(path).unlink(missing_ok=True)
    checksum_path(path).unlink(missing_ok=True)
