"""Progress of work running inside a notebook, shown in the terminal of ``make figures``.

A papermill kernel's own stdout and stderr go into the executed notebook, not to the terminal.
So the driver names a file in ``$LALR_PROGRESS`` and copies what is appended to it to its
terminal as it arrives (`follow`); the library writes there: the sweeps' bars (which run of how
many, elapsed and estimated time left), a run's own epoch bar, and one line per saved item
(`note`). Without the variable (JupyterLab, tests) bars are ``tqdm.auto``'s widgets and notes
are silent. That file holds every redraw of every bar; `follow` also keeps a readable log of
it (`LineLog`): one line per bar's final state and per note.
"""

from __future__ import annotations

import contextlib
import os
import re
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


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # tqdm's cursor moves between nested bars


class LineLog:
    """Text with carriage-return redraws, as a person would read it: of each line, its last
    non-blank frame (a bar's final state), without terminal escape codes.

    Example:
        >>> import io
        >>> out = io.StringIO(); log = LineLog(out)
        >>> log.write("\\rrun 0/2\\rrun 1/2"); log.write("\\rrun 2/2\\r \\nsaved fig1\\n")
        >>> out.getvalue()
        'run 2/2\\nsaved fig1\\n'
    """

    def __init__(self, sink: IO[str]):
        self.sink, self.pending = sink, ""

    def write(self, chunk: str) -> None:
        *lines, self.pending = (self.pending + chunk).split("\n")
        for line in lines:
            frames = [f.rstrip() for f in _ANSI.sub("", line).split("\r")]
            kept = [f for f in frames if f.strip()]
            if kept:
                self.sink.write(kept[-1] + "\n")
        self.sink.flush()

    def close(self) -> None:
        """Write what is left of an unterminated last line."""
        if self.pending:
            self.write("\n")


def follow(path: Path, sink: IO[str], stop: threading.Event, poll_s: float = 0.2,
           log: IO[str] | None = None) -> None:
    """Copy what is appended to ``path`` to ``sink`` until ``stop`` is set (then drain); with
    ``log``, also write it there as `LineLog` lines."""
    lines = LineLog(log) if log is not None else None
    offset = 0
    while True:
        stopping = stop.is_set()
        with contextlib.suppress(FileNotFoundError):
            # newline="": keep the bars' carriage returns (they redraw in place)
            with open(path, encoding="utf-8", errors="replace", newline="") as f:
                f.seek(offset)
                chunk = f.read()
                offset = f.tell()
            if chunk:
                sink.write(chunk)
                sink.flush()
                if lines is not None:
                    lines.write(chunk)
        if stopping:
            if lines is not None:
                lines.close()
            return
        time.sleep(poll_s)
