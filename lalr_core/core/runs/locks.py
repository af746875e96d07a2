"""Per-unit file locks: one process computes a unit, the others wait for it and reuse its entry.

The lock is ``fcntl.flock`` on ``<root>/<name>/.lock-<key>``. The kernel releases it when its
holder dies, also by SIGKILL, so a dead holder never blocks anyone: no stale-lock detection is
needed. The holder writes ``<pid> <host>`` into the file (for the waiters' message) and deletes
it on release; a lock file left without a holder is a killed process's, harmless, and removed
by `RunCache.prune`.

Limits: flock is per host on some network file systems (NFS before v4, several FUSE mounts),
so Ray workers on different nodes may then compute a unit twice; the atomic publication of
entries keeps that to wasted work, never a broken entry. Without ``fcntl`` (Windows) the lock
does nothing. A forked child of the holder shares its lock until it exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import socket
import threading
import time
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no locking
    fcntl = None

log = logging.getLogger("lalr_core.core.runs")

POLL_S = 0.1  # seconds between attempts to take a held lock
NOTICE_AFTER_S = 10.0  # seconds of waiting before the first "waiting for" line
NOTICE_EVERY_S = 300.0  # seconds between further lines while the wait goes on
_HELD = threading.local()  # lock paths this thread holds: re-entry would wait for itself


@contextlib.contextmanager
def unit_lock(path: pathlib.Path, label: str) -> Iterator[None]:
    """Hold the lock file `path` (created if needed) for the block; `label` names the unit.

    Raises:
        RuntimeError: If this thread already holds it (a unit computing itself).
    """
    held = getattr(_HELD, "paths", None)
    if held is None:
        held = _HELD.paths = set()
    if path in held:
        raise RuntimeError(f"unit {label} is already being computed by this thread")
    if fcntl is None:
        yield
        return
    fd = _acquire(path, label)
    held.add(path)
    try:
        yield
    finally:
        held.discard(path)
        release(path, fd)


def try_lock(path: pathlib.Path) -> int | None:
    """Take the lock file `path` without waiting: its descriptor, or None when held or gone."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    if _lock_nb(fd) and _is_current(fd, path):
        return fd
    os.close(fd)
    return None


def release(path: pathlib.Path, fd: int) -> None:
    """Delete the lock file while still holding it, then let go (closing releases the lock)."""
    try:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _acquire(path: pathlib.Path, label: str) -> int:
    start = time.monotonic()
    notice = start + NOTICE_AFTER_S
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            while not _lock_nb(fd):
                now = time.monotonic()
                if now >= notice:
                    log.warning("waiting for %s computed by %s (%.0f s so far)", label,
                                _holder(fd), now - start)
                    notice = now + NOTICE_EVERY_S
                time.sleep(POLL_S)
            if _is_current(fd, path):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder deleted that file on release: lock the one there now


def _lock_nb(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _is_current(fd: int, path: pathlib.Path) -> bool:
    """Whether `fd` is still the file at `path` (not one a releasing holder deleted)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _holder(fd: int) -> str:
    """``pid N on host`` as the holder wrote it (``another process`` before it has)."""
    fields = os.pread(fd, 256, 0).decode(errors="replace").split()
    return f"pid {fields[0]} on {fields[1]}" if len(fields) == 2 else "another process"
