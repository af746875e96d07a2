"""Where a result came from: git commit, dirty flag, library versions and device.

Every saved figure, table and check carries this record (DESIGN.md, "Runs, cache and
provenance"). Provenance comes from git and the installed packages, never from
``sys.argv`` (under papermill that is the kernel launcher). Nothing here records the
host name.

Git and environment look-ups are cached per process: a notebook saves many figures and
each one asks. Pass ``refresh=True`` to look again (e.g. after a commit mid-session).
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

_GIT_TIMEOUT_S = 10.0  # seconds; a hung git (network mount) must not hang a notebook
_VERSIONED_PACKAGES = ("torch", "torchvision", "numpy", "matplotlib")
RESERVED_KEYS = ("commit", "dirty", "environment", "torch_threads", "timestamp_utc")


def repo_root() -> Path:
    """The repository root: the parent of the ``lalr_core`` package directory.

    Returns:
        Absolute path of the directory that holds ``lalr_core/``.
    """
    return Path(__file__).resolve().parents[3]


def run_git(repo: Path, *args: str) -> str | None:
    """Run ``git -C repo *args``; return stripped stdout, or ``None`` on any failure."""
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},  # read-only: take no index lock
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip()


@functools.lru_cache(maxsize=16)
def _git_info_cached(repo: str) -> tuple[str, bool | None]:
    path = Path(repo)
    if run_git(path, "rev-parse", "--is-inside-work-tree") != "true":
        return "unknown", None
    commit = run_git(path, "rev-parse", "HEAD") or "unknown"  # "unknown": no commit yet
    status = run_git(path, "status", "--porcelain")
    dirty = None if status is None else bool(status)
    return commit, dirty


def git_info(repo: str | os.PathLike | None = None, *, refresh: bool = False) -> dict:
    """Commit hash and dirty flag of the working tree that holds ``repo``.

    Args:
        repo: any directory inside the repository; defaults to :func:`repo_root`.
        refresh: drop the per-process cache and ask git again.

    Returns:
        ``{"commit": str, "dirty": bool | None}``. Outside a git repository, without
        git, or before the first commit, ``commit`` is ``"unknown"``; ``dirty`` is
        ``None`` when it cannot be told (untracked files count as dirty).
    """
    if refresh:
        _git_info_cached.cache_clear()
    path = Path(repo) if repo is not None else repo_root()
    commit, dirty = _git_info_cached(str(path.resolve()))
    return {"commit": commit, "dirty": dirty}


def package_versions(*names: str) -> dict[str, str | None]:
    """Installed version of each named distribution (``None`` where it is not installed)."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def device_info() -> dict:
    """The machine's compute devices (no host name): ``cpu`` (model), ``cpu_capability`` (the
    vector instruction set torch's kernels use: AVX2, AVX512, ...), ``arch``, ``cores``,
    ``gpus`` (every visible CUDA device's name; none on a CPU-only machine), ``cuda``."""
    import torch  # local: keep `import lalr_core.core.provenance` light

    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] \
        if torch.cuda.is_available() else []
    return {"cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "arch": platform.machine() or "unknown",
            "cores": os.cpu_count(), "gpus": gpus,
            "cuda": torch.version.cuda if gpus else None}


def _device_description() -> str:
    """CPU description plus every visible CUDA device's name (no host name)."""
    d = device_info()
    cpu = f"cpu: {d['cpu']} ({d['arch']}), {d['cores']} cores"  # threads: torch_threads
    return f"{cpu}; cuda {d['cuda']}: " + ", ".join(d["gpus"]) if d["gpus"] else cpu


@functools.lru_cache(maxsize=1)
def _environment_cached() -> tuple[tuple[str, object], ...]:
    from lalr_core import __version__

    info: dict[str, object] = {
        "lalr_core": __version__,
        "python": platform.python_version(),
        **package_versions(*_VERSIONED_PACKAGES),
        "platform": f"{platform.system()} {platform.release()}",
        "device": _device_description(),
    }
    return tuple(info.items())


def environment_info(*, refresh: bool = False) -> dict:
    """Library versions and the compute device, without the host name.

    Args:
        refresh: drop the per-process cache and look again.

    Returns:
        dict with keys ``lalr_core``, ``python``, ``torch``, ``torchvision``, ``numpy``,
        ``matplotlib`` (version strings, ``None`` if not installed), ``platform`` (OS and
        kernel release) and ``device`` (CPU, and CUDA version and device names if any).
    """
    if refresh:
        _environment_cached.cache_clear()
    return dict(_environment_cached())


def _torch_threads() -> int | None:
    """Torch's current intra-op thread count, if torch is already imported (else None)."""
    torch = sys.modules.get("torch")
    return None if torch is None else int(torch.get_num_threads())


def utc_timestamp() -> str:
    """Now, in UTC, ISO 8601 to the second (e.g. ``2026-03-01T12:00:00+00:00``)."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()


def provenance(**extra) -> dict:
    """One provenance record: git, environment, UTC time stamp and ``extra`` fields.

    Args:
        **extra: further JSON-serialisable fields (notebook, profile, ...).

    Returns:
        ``{"commit", "dirty", "environment", "torch_threads", "timestamp_utc", **extra}``.
        ``torch_threads`` is read now, not cached: on a CPU, a run's floating-point sums
        (hence its weights, to ~1e-3 after a few epochs) depend on torch's intra-op thread
        count, which the cache key leaves out by design (the same run at another thread count
        is the same experiment); the record says which count produced an entry.

    Raises:
        ValueError: if an ``extra`` key would overwrite one of :data:`RESERVED_KEYS`.
    """
    clash = sorted(set(extra) & set(RESERVED_KEYS))
    if clash:
        raise ValueError(f"provenance(): extra keys {clash} are reserved")
    return {
        **git_info(),
        "environment": environment_info(),
        "torch_threads": _torch_threads(),
        "timestamp_utc": utc_timestamp(),
        **extra,
    }


def compute_environment() -> dict:
    """What a check's numbers were computed on, short: torch's version, the CPU model, the
    instruction set torch's CPU kernels use (two machines of one model name can differ in it,
    and with it in the float sums) and cores, the GPUs, this process's torch threads and the units' fixed thread count
    (`lalr_core.core.runs.threads`)."""
    from lalr_core.core.runs.threads import run_threads

    d = device_info()
    return {"torch": package_versions("torch").get("torch"), "cpu": d["cpu"],
            "cpu_capability": d["cpu_capability"], "cores": d["cores"], "gpus": d["gpus"], "torch_threads": _torch_threads(),
            "run_threads": run_threads()}


def collect() -> dict:
    """:func:`provenance` with no extra fields (the hook ``lalr_core.core.runs`` looks for)."""
    return provenance()
