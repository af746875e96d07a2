"""The cache's leftovers: what a size report counts and what ``prune`` may delete.

Besides entries, a run family's directory holds hidden siblings (`lalr_core.core.runs.keys`):
entries moved aside as corrupt (never read again), temporary directories and files of writers
(a killed writer's stay behind), checkpoints of unfinished units (kept: a sweep resumes from
them) or of finished ones (left when a process died between publishing and deleting them), and
lock files (a killed holder's stays, unlocked). A temporary counts as stale once nothing in it
changed for ``min_age_s``: age, unlike a pid, also holds for writers on other hosts. With
``verify``, every entry's result is read and checked against the checksum in its meta.json: an
entry damaged in place (a truncated or altered result) is ``damaged``, which ``prune`` removes.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import pickletools
import re
import shutil
import time
from collections.abc import Iterator

from lalr_core.core.runs.keys import (
    BAD_PREFIX,
    CKPT_PREFIX,
    HASH_LEN,
    LOCK_PREFIX,
    META_FILE,
    RESULT_FILE,
    TMP_PREFIX,
)
from lalr_core.core.runs.locks import release, try_lock

# the report's rows; prune deletes the REMOVABLE ones
CATEGORIES = ("entries", "damaged", "checkpoints", "finished_checkpoints", "corrupt", "temp",
              "stale_temp", "locks", "stale_locks", "other")
REMOVABLE = ("damaged", "finished_checkpoints", "corrupt", "stale_temp", "stale_locks")
STALE_AFTER_S = 3600.0  # a temporary unchanged this long is a dead writer's
_ATOMIC_TMP = re.compile(r"^\..+\.\d+\.[0-9a-f]+\.tmp$")  # `atomic_io.temp_file` names
_HEX = set("0123456789abcdef")


def size_and_age(path: pathlib.Path) -> tuple[int, float]:
    """Bytes of the files under `path` and seconds since anything in it last changed."""
    total, newest = 0, 0.0
    for p in [path, *(path.rglob("*") if path.is_dir() else ())]:
        try:
            st = p.lstat()
        except FileNotFoundError:  # removed while we looked
            continue
        total += st.st_size if not p.is_dir() else 0
        newest = max(newest, st.st_mtime)
    return total, time.time() - newest


def verified_result(entry: pathlib.Path) -> bytes:
    """The pickled result of cache `entry`, read and checked against its meta.json.

    Raises:
        OSError, ValueError, KeyError: a missing or unreadable file, a checksum that does not
            match, or a meta.json that names another entry.
    """
    meta = json.loads((entry / META_FILE).read_text(encoding="utf-8"))
    data = (entry / RESULT_FILE).read_bytes()
    if hashlib.sha256(data).hexdigest() != meta["result_sha256"]:
        raise ValueError("checksum of result.pkl does not match meta.json")
    if meta["hash"] != entry.name:
        raise ValueError(f"meta.json hash {meta['hash']!r} is not the entry's")
    return data


def is_damaged(entry: pathlib.Path) -> bool:
    """Whether `entry` fails `verified_result`, or its result is not a well-formed pickle
    (read opcode by opcode, nothing built)."""
    try:
        for _ in pickletools.genops(verified_result(entry)):
            pass
    except Exception:  # noqa: BLE001 - any failure to read it back is damage
        return True
    return False


def is_name_dir(path: pathlib.Path) -> bool:
    """Whether `path` holds only what a run family holds (never touch a foreign directory)."""
    return all(p.name.startswith((TMP_PREFIX, CKPT_PREFIX, BAD_PREFIX, LOCK_PREFIX))
               or (len(p.name) == HASH_LEN and set(p.name) <= _HEX) for p in path.iterdir())


def scan(root: pathlib.Path, min_age_s: float = STALE_AFTER_S, *, verify: bool = False
         ) -> Iterator[tuple[str, pathlib.Path, int]]:
    """Yield ``(category, path, bytes)`` for everything in the run families under `root`
    (`verify`: read every entry's result and check its checksum, ``damaged`` if it fails).

    A kept checkpoint directory's stale temporary files are yielded on their own, and their
    bytes are not counted again in the directory's.
    """
    if not root.is_dir():
        return
    for name_dir in sorted(root.iterdir()):
        if not name_dir.is_dir() or name_dir.name.startswith(".") or not is_name_dir(name_dir):
            continue
        for path in sorted(name_dir.iterdir()):
            yield from _classify(name_dir, path, min_age_s, verify)


def _classify(name_dir: pathlib.Path, path: pathlib.Path, min_age_s: float, verify: bool
              ) -> Iterator[tuple[str, pathlib.Path, int]]:
    name = path.name
    size, age = size_and_age(path)
    if name.startswith(BAD_PREFIX):
        yield "corrupt", path, size
    elif name.startswith(TMP_PREFIX) or _ATOMIC_TMP.match(name):
        yield ("stale_temp" if age > min_age_s else "temp"), path, size
    elif name.startswith(LOCK_PREFIX):
        yield ("stale_locks" if _unheld(path) else "locks"), path, size
    elif name.startswith(CKPT_PREFIX):
        key = name[len(CKPT_PREFIX):]
        if (name_dir / key).is_dir() and not in_use(name_dir, key):
            yield "finished_checkpoints", path, size
            return
        for tmp in sorted(path.glob(".*.tmp")):  # a killed checkpoint writer's
            tmp_size, tmp_age = size_and_age(tmp)
            if _ATOMIC_TMP.match(tmp.name) and tmp_age > min_age_s:
                size -= tmp_size
                yield "stale_temp", tmp, tmp_size
        yield "checkpoints", path, size
    elif len(name) == HASH_LEN and path.is_dir():
        yield ("damaged" if verify and is_damaged(path) else "entries"), path, size
    else:
        yield "other", path, size


def in_use(name_dir: pathlib.Path, key: str) -> bool:
    """Whether a process holds the lock of unit `key` now (it may be writing checkpoints)."""
    lock = name_dir / f"{LOCK_PREFIX}{key}"
    return lock.exists() and not _unheld(lock)


def _unheld(lock: pathlib.Path) -> bool:
    fd = try_lock(lock)
    if fd is None:
        return False
    os.close(fd)  # only looked: the file stays
    return True


def remove(category: str, path: pathlib.Path) -> bool:
    """Delete one leftover of `category`; False when it was gone or became busy."""
    if category == "stale_locks":
        fd = try_lock(path)
        if fd is None:
            return False
        release(path, fd)  # deletes it while holding it: no waiter can be fooled
        return True
    if not path.exists():
        return False
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    return True
