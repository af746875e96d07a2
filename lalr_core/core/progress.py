"""Progress of work running inside a notebook, shown in the terminal of ``make figures``.

A papermill kernel's own stdout and stderr go into the executed notebook, not to the terminal.
So the driver names a file in ``$LALR_PROGRESS`` and copies what is appended to it to its
terminal as it arrives (`follow`); the library writes there: the sweeps' bars (which run of how
many, elapsed and estimated time left), a run's own epoch bar, and one line per saved item
(`note`). Without the variable (JupyterLab, tests) bars are ``tqdm.auto``'s widgets and notes
are silent.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import IO, Any

PROGRESS_ENV = "LALR_PROGRESS"
_stream: IO[str] | None = None
_stream_path: str | None = None


def stream() -> IO[str] | None:
    """The progress file of this process (opened once for appending), or None."""
    global _stream, _stream_path
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return None
    if _stream is None or _stream_path != path:
        _stream, _stream_path = open(path, "a", buffering=1), path  # noqa: SIM115 (kept open)
    return _stream


def bar(iterable=None, **kwargs: Any):
    """A tqdm bar: to the progress file when the driver follows one, else ``tqdm.auto``'s."""
    out = stream()
    if out is None:
        from tqdm.auto import tqdm
        return tqdm(iterable, **kwargs)
    from tqdm import tqdm  # plain text: the driver prints the bytes as they come

    return tqdm(iterable, file=out, mininterval=1.0, dynamic_ncols=False, ncols=100, **kwargs)


def note(message: str) -> None:
    """One line in the driver's terminal (nothing without a progress file)."""
    out = stream()
    if out is not None:
        out.write(f"{message}\n")


def follow(path: Path, sink: IO[str], stop: threading.Event, poll_s: float = 0.2) -> None:
    """Copy what is appended to ``path`` to ``sink`` until ``stop`` is set (then drain)."""
    offset = 0
    while True:
        stopping = stop.is_set()
        with contextlib.suppress(FileNotFoundError):
            with open(path, encoding="utf-8", errors="replace") as f:
                f.seek(offset)
                chunk = f.read()
                offset = f.tell()
            if chunk:
                sink.write(chunk)
                sink.flush()
        if stopping:
            return
        time.sleep(poll_s)
