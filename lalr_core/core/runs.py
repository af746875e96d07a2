"""Cached runs and resumable sweeps.

A training run (or any expensive computation) is one cached unit ``fn(params)``. Its key is a
hash of the resolved parameters, the library version and the fingerprint of the code the unit
depends on (`lalr_core.core.code_hash.code_fingerprint` of ``fn.__module__`` plus the modules
``fn.code_modules(params)`` names, closed over their imports; docstrings and comments do not
count). So a fix to the code a unit ran invalidates its entries, and nothing else's. The entry
is a directory ``<root>/<name>/<hash>/`` holding ``result.pkl`` and ``meta.json`` (which records
the parameters, the code fingerprint and its modules). Entries are written into a hidden
temporary directory and renamed into place, so a killed writer never leaves a half entry that
looks complete, and a corrupt entry is detected by its checksum and recomputed. Sweeps go
through one executor interface (sequential, local processes, or Ray) and share the cache, so a
killed sweep resumes and loses at most the units that were in flight.

Every method that computes a key (`RunCache.key`, ``path``, ``checkpoint_dir``, ``lookup``,
``get``, ``put``) takes the unit's ``fn``; without it, the ``fn`` of the run family ``name``
is used: the one declared with `register_unit` (``"train"`` is `lalr_core.core.units.
train_unit`), else the one of the unit of that family running now in this process, else none
(the key is then the parameters and version only, as a plain ``put`` stores it).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import datetime
import hashlib
import importlib
import json
import multiprocessing
import os
import pathlib
import pickle
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from lalr_core.core import atomic_io
from lalr_core.core.atomic_io import canonical_json, to_canonical
from lalr_core.core.code_hash import code_fingerprint, module_closure

RESULT_FILE = "result.pkl"
META_FILE = "meta.json"
ROOT_ENV = "LALR_RUNS_ROOT"  # overrides the default root `<repo>/data/runs`
HASH_LEN = 16  # hex characters of sha256 kept as the key (64 bits)
_TMP, _CKPT, _BAD = ".tmp-", ".ckpt-", ".corrupt-"  # hidden siblings of the entries


# ---------------------------------------------------------------- parameter hashing


def canonical_params(params: Mapping) -> dict:
    """Return `params` as plain JSON values (tuples as lists, numpy scalars as Python numbers).

    Raises:
        ValueError: If `params` is not a mapping, or a value cannot be serialised (the message
            names its key, e.g. ``optim.betas[1]``).
    """
    if not isinstance(params, Mapping):
        raise ValueError(f"params must be a Mapping, got {type(params).__name__}")
    return to_canonical(params)


def param_hash(params: Mapping, *, version: str | None = None, code: str | None = None) -> str:
    """Hash resolved parameters, the library version and a code fingerprint into a cache key.

    The payload is canonical JSON (sorted keys, compact separators, floats by ``repr``), so the
    key does not depend on key order, and a tuple hashes like the equal list. ``1`` and ``1.0``
    give different keys (a miss, never a wrong hit).

    Args:
        params: Mapping from str to JSON-like values, numpy scalars, paths, enums, dataclasses.
        version: Library version mixed into the key; default ``lalr_core.__version__``.
        code: Code fingerprint mixed into the key (`unit_fingerprint`); None leaves it out,
            giving the parameter hash alone (a figure sidecar's ``param_hash``).

    Returns:
        The first 16 hex characters of the sha256 of the payload.

    Raises:
        ValueError: If a value cannot be serialised (the message names the key).
    """
    if version is None:
        version = importlib.import_module("lalr_core").__version__
    payload = {"params": canonical_params(params), "version": str(version)}
    if code is not None:
        payload["code"] = str(code)
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:HASH_LEN]


# ---------------------------------------------------------------- the code a unit depends on


_FAMILIES: dict[str, Callable] = {}  # run family name -> its unit function (register_unit)
_RUNNING: list[tuple[str, Callable]] = []  # (name, fn) of the units computing in this process


def register_unit(name: str) -> Callable[[Callable], Callable]:
    """Decorator: declare ``fn`` the computation of run family `name`.

    A key of that family computed without an explicit ``fn`` (e.g. ``cache.get(name, params)``
    or a plain ``put``) then includes ``fn``'s code fingerprint, as `sweep` stores it.
    """
    _check_name(name)

    def add(fn: Callable) -> Callable:
        old = _FAMILIES.get(name)
        if old is not None and old is not fn and _qualname(old) != _qualname(fn):
            raise ValueError(f"run family {name!r} is already the unit {_qualname(old)}")
        _FAMILIES[name] = fn
        return fn
    return add


def _qualname(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def family_unit(name: str) -> Callable | None:
    """The ``fn`` keys of family `name` default to: registered, else running now, else None."""
    if name in _FAMILIES:
        return _FAMILIES[name]
    return next((fn for n, fn in reversed(_RUNNING) if n == name), None)


@contextlib.contextmanager
def _running(name: str, fn: Callable) -> Iterator[None]:
    _RUNNING.append((name, fn))
    try:
        yield
    finally:
        _RUNNING.pop()


def unit_modules(fn: Callable, params: Mapping) -> list[str]:
    """The modules whose code the unit ``fn(params)`` depends on, sorted.

    ``fn.__module__``, plus ``fn.code_modules(params)`` when ``fn`` has that attribute (a
    callable returning module names, e.g. the plug-ins named in `params`).

    Raises:
        ValueError: If ``fn.code_modules`` fails or returns something other than names.
    """
    target = getattr(fn, "func", fn)  # a functools.partial counts as its function
    modules = [m for m in (getattr(target, "__module__", None),) if m]
    extra = getattr(fn, "code_modules", None)
    if extra is not None:
        try:
            more = extra(dict(params))
        except Exception as exc:
            raise ValueError(f"{_qualname(fn)}.code_modules failed for these params: "
                             f"{exc!r}") from exc
        if isinstance(more, str) or not all(isinstance(m, str) and m for m in more):
            raise ValueError(f"{_qualname(fn)}.code_modules must return module names, "
                             f"got {more!r}")
        modules += list(more)
    return sorted(set(modules))


def unit_fingerprint(fn: Callable, params: Mapping) -> str:
    """``code_fingerprint(unit_modules(fn, params))``: the code part of the unit's key."""
    return code_fingerprint(unit_modules(fn, params))


@dataclasses.dataclass(frozen=True)
class _Unit:
    """One unit's entry: its key and the code facts recorded in meta.json."""

    name: str
    key: str
    code: dict | None  # {"fingerprint", "modules", "closure"}; None: keyed without code


# ---------------------------------------------------------------- file helpers


def _to_cpu(value: Any) -> Any:
    """Detach torch tensors (also inside dicts, lists, tuples) and move them to the CPU."""
    torch = sys.modules.get("torch")  # no torch imported means no tensor can be in `value`
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):  # a copy keeps the type (a state_dict is an OrderedDict)
        out = copy.copy(value)
        out.update((k, _to_cpu(v)) for k, v in value.items())
        return out
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_to_cpu(v) for v in value)
    return value


def _provenance() -> Any:
    """`lalr_core.core.provenance.collect()` when that module exists, else None; never raises."""
    try:
        module = importlib.import_module("lalr_core.core.provenance")
    except ImportError:
        return None
    collect = getattr(module, "collect", None)
    if collect is None:
        return None
    try:
        return collect()
    except Exception as exc:  # noqa: BLE001 - provenance must never lose a finished run
        return {"error": repr(exc)}


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name or name.startswith(".") or "/" in name \
            or "\\" in name or name != name.strip():
        raise ValueError(f"run name must be a non-empty str without '/' or leading '.', "
                         f"got {name!r}")
    return name


# ---------------------------------------------------------------- the cache


class RunCache:
    """Directory of cached units: ``<root>/<name>/<hash>/{result.pkl,meta.json}``.

    Args:
        root: Cache directory; default ``$LALR_RUNS_ROOT`` or ``<repo>/data/runs``.
        version: Library version in the key; default ``lalr_core.__version__``.
    """

    def __init__(self, root: str | os.PathLike | None = None, *, version: str | None = None):
        if root is None:
            repo = pathlib.Path(__file__).resolve().parents[2]
            root = os.environ.get(ROOT_ENV) or repo / "data" / "runs"
        self.root = pathlib.Path(root).expanduser().resolve()
        self.version = str(version or importlib.import_module("lalr_core").__version__)

    def __repr__(self) -> str:
        return f"RunCache(root={str(self.root)!r}, version={self.version!r})"

    def key(self, params: Mapping, *, fn: Callable | None = None,
            name: str | None = None) -> str:
        """Return the unit's cache key under this cache's version.

        Args:
            params: The unit's resolved parameters.
            fn: The unit's function (its code fingerprint joins the key); default the
                `family_unit` of `name`, if `name` is given.
            name: The run family.
        """
        if name is not None:
            return self._unit(name, params, fn).key
        return self._key(params, None if fn is None else unit_fingerprint(fn, params))

    def _key(self, params: Mapping, fingerprint: str | None) -> str:
        return param_hash(params, version=self.version, code=fingerprint)

    def _unit(self, name: str, params: Mapping, fn: Callable | None) -> _Unit:
        """The key of unit (`name`, `params`) and its code facts (see the module docstring)."""
        _check_name(name)
        fn = fn if fn is not None else family_unit(name)
        if fn is None:
            return _Unit(name, self._key(params, None), None)
        modules = unit_modules(fn, params)
        code = {"fingerprint": code_fingerprint(modules), "modules": modules,
                "closure": module_closure(modules)}
        return _Unit(name, self._key(params, code["fingerprint"]), code)

    def path(self, name: str, params: Mapping, *, fn: Callable | None = None) -> pathlib.Path:
        """Return the entry directory of the unit (it may not exist)."""
        return self._entry(self._unit(name, params, fn))

    def _entry(self, unit: _Unit) -> pathlib.Path:
        return self.root / unit.name / unit.key

    def checkpoint_dir(self, name: str, params: Mapping, *,
                       fn: Callable | None = None) -> pathlib.Path:
        """Create and return the scratch directory for the unit's mid-run checkpoints.

        It lives beside the entry (hidden, so never mistaken for one), shares its key (so a
        code change also discards the checkpoints) and is removed when the final result is put.
        """
        path = self.root / _check_name(name) / f"{_CKPT}{self._unit(name, params, fn).key}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def lookup(self, name: str, params: Mapping, *,
               fn: Callable | None = None) -> tuple[bool, Any]:
        """Return ``(True, result)`` for a valid entry, else ``(False, None)``.

        Unlike `get`, this tells a cached ``None`` result from a miss. A corrupt, truncated
        or unreadable entry is moved aside (a warning names it) and counts as a miss. Pass the
        unit's `fn` (or rely on `family_unit`) to find what `sweep` or `cached` stored.
        """
        return self._lookup(self._unit(name, params, fn))

    def _lookup(self, unit: _Unit) -> tuple[bool, Any]:
        entry = self._entry(unit)
        if not entry.is_dir():
            return False, None
        try:
            meta = json.loads((entry / META_FILE).read_text(encoding="utf-8"))
            data = (entry / RESULT_FILE).read_bytes()
            if hashlib.sha256(data).hexdigest() != meta["result_sha256"]:
                raise ValueError("checksum of result.pkl does not match meta.json")
            if meta["hash"] != entry.name:
                raise ValueError(f"meta.json hash {meta['hash']!r} is not the entry's")
            return True, pickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - any failure to read back: recompute
            self._move_aside(entry, exc)
            return False, None

    def get(self, name: str, params: Mapping, *, fn: Callable | None = None) -> Any:
        """Return the cached result of the unit, or None when absent or corrupt."""
        return self.lookup(name, params, fn=fn)[1]

    def put(self, name: str, params: Mapping, result: Any,
            wall_time_s: float | None = None, *, fn: Callable | None = None) -> pathlib.Path:
        """Store `result` atomically as the unit's entry, replacing any previous one.

        Args:
            name: Run family, e.g. ``"ch03_lalr"``; the directory under the root.
            params: The unit's resolved parameters (hashed into the key, kept in meta.json).
            result: Picklable result; torch tensors are detached and moved to the CPU.
            wall_time_s: Seconds the computation took, recorded in meta.json.
            fn: The unit's function, whose code fingerprint joins the key and meta.json;
                default `family_unit` of `name` (none: the key has no code part).

        Returns:
            The entry directory.
        """
        return self._put(self._unit(name, params, fn), params, result, wall_time_s)

    def _put(self, unit: _Unit, params: Mapping, result: Any,
             wall_time_s: float | None) -> pathlib.Path:
        params_json = canonical_params(params)
        key, name_dir = unit.key, self.root / unit.name
        data = pickle.dumps(_to_cpu(result), protocol=pickle.HIGHEST_PROTOCOL)
        code = unit.code or {}
        meta = {
            "name": unit.name, "hash": key, "version": self.version, "params": params_json,
            "param_hash": self._key(params, None),  # what a figure sidecar records
            "code_fingerprint": code.get("fingerprint"), "code_modules": code.get("modules"),
            "code_closure": code.get("closure"),
            "result_sha256": hashlib.sha256(data).hexdigest(), "result_bytes": len(data),
            "created": datetime.datetime.now(datetime.UTC).isoformat(),
            "wall_time_s": None if wall_time_s is None else float(wall_time_s),
            "provenance": _provenance(),
        }
        name_dir.mkdir(parents=True, exist_ok=True)
        tmp = atomic_io.temp_dir(name_dir, f"{_TMP}{key}-")
        try:
            atomic_io.write_synced(tmp / RESULT_FILE, data)
            text = json.dumps(meta, indent=1, sort_keys=True, default=str)
            atomic_io.write_synced(tmp / META_FILE, text.encode("utf-8"))
            atomic_io.fsync_dir(tmp)
            self._publish(tmp, name_dir / key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already when published
        shutil.rmtree(name_dir / f"{_CKPT}{key}", ignore_errors=True)
        return name_dir / key

    def _publish(self, tmp: pathlib.Path, entry: pathlib.Path) -> None:
        """Rename the finished `tmp` onto `entry`, moving an old entry out of the way first."""
        for _ in range(3):
            try:
                os.rename(tmp, entry)
                atomic_io.fsync_dir(entry.parent)
                return
            except OSError:
                if not entry.exists():
                    raise
                old = atomic_io.temp_dir(entry.parent, f"{_TMP}old-")
                try:
                    os.replace(entry, old / "entry")  # rename: atomic, no partial state
                except OSError:
                    pass  # a concurrent writer moved it first; retry the rename
                shutil.rmtree(old, ignore_errors=True)
        raise OSError(f"could not publish cache entry {entry}")

    def _move_aside(self, entry: pathlib.Path, exc: Exception) -> None:
        stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S%f")
        target = entry.parent / f"{_BAD}{entry.name}-{stamp}"
        try:
            os.rename(entry, target)
        except OSError:
            shutil.rmtree(entry, ignore_errors=True)
        warnings.warn(f"corrupt cache entry {entry} ({exc!r}) moved to {target.name}; "
                      "it will be recomputed", RuntimeWarning, stacklevel=3)

    def entries(self, name: str | None = None) -> list[dict]:
        """Return the meta.json of every readable entry (of `name`, or all), oldest first.

        Each dict gains ``"path"``, the entry directory. Checksums are not verified here.
        """
        dirs = [self.root / _check_name(name)] if name is not None else \
            sorted(p for p in self._children(self.root) if not p.name.startswith("."))
        metas = []
        for name_dir in dirs:
            for entry in self._children(name_dir):
                if entry.name.startswith("."):
                    continue
                try:
                    meta = json.loads((entry / META_FILE).read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                metas.append({**meta, "path": str(entry)})
        return sorted(metas, key=lambda m: (str(m.get("created")), m["path"]))

    def clear(self, name: str | None = None) -> None:
        """Delete every entry, checkpoint and leftover of `name` (or of every name)."""
        if name is not None:
            shutil.rmtree(self.root / _check_name(name), ignore_errors=True)
            return
        for name_dir in self._children(self.root):
            if self._looks_like_name_dir(name_dir):  # never delete a foreign directory
                shutil.rmtree(name_dir, ignore_errors=True)

    @staticmethod
    def _children(path: pathlib.Path) -> list[pathlib.Path]:
        return sorted(p for p in path.iterdir() if p.is_dir()) if path.is_dir() else []

    @staticmethod
    def _looks_like_name_dir(path: pathlib.Path) -> bool:
        hexdigits = set("0123456789abcdef")
        return all(
            p.name.startswith((_TMP, _CKPT, _BAD))
            or (len(p.name) == HASH_LEN and set(p.name) <= hexdigits)
            for p in path.iterdir()
        )


def cached(fn: Callable[[dict], Any], params: Mapping, *, name: str,
           cache: RunCache | None = None, force: bool = False) -> Any:
    """Return the cached result of ``fn(params)``, computing and storing it on a miss.

    Args:
        fn: The unit's computation; it gets a plain ``dict`` copy of `params`. Its code
            (``fn.__module__`` and, if ``fn`` has it, ``fn.code_modules(params)``, closed
            over their imports) is part of the key.
        params: Resolved parameters; they, the library version and the code form the key.
        name: Run family (directory under the cache root).
        cache: Cache to use; default ``RunCache()``.
        force: Recompute and overwrite even if a valid entry exists.

    Returns:
        The result: read back from the cache on a hit, else as `fn` returned it.

    Raises:
        ValueError: If `params` cannot be hashed, or ``fn.code_modules`` fails. Whatever `fn`
            raises propagates, and then nothing is stored.
    """
    cache = cache if cache is not None else RunCache()
    unit = cache._unit(name, params, fn)  # validates name, params and code before any compute
    if not force:
        hit, result = cache._lookup(unit)
        if hit:
            return result
    start = time.perf_counter()
    with _running(name, fn):  # a checkpoint_dir(name, params) inside gets this unit's key
        result = fn(dict(params))
    cache._put(unit, params, result, wall_time_s=time.perf_counter() - start)
    return result


# ---------------------------------------------------------------- executors


_ACTIVE: list[RunCache] = []  # the cache of the unit being computed in this process


def active_cache() -> RunCache:
    """The cache of the sweep unit running now (so a unit can read other units of the same
    cache, e.g. fine-tuning from a cached pretraining), else the default ``RunCache()``."""
    return _ACTIVE[-1] if _ACTIVE else RunCache()


def _run_unit(fn: Callable[[dict], Any], params: dict, name: str, root: str,
              version: str) -> Any:
    """Compute one sweep unit and write its own entry (runs in a worker)."""
    cache = RunCache(root, version=version)
    _ACTIVE.append(cache)
    try:
        return cached(fn, params, name=name, cache=cache)
    finally:
        _ACTIVE.pop()


def _init_worker(threads: int) -> None:
    """Process-pool initializer: split the machine's cores between the workers."""
    import torch  # lazy: only worker processes pay for it

    torch.set_num_threads(max(1, threads))


class LocalExecutor:
    """Run tasks in this process (``workers=1``) or in a spawn-context process pool.

    Args:
        workers: Number of processes; 1 runs sequentially here.
        threads: Torch threads per worker process; default usable cores ``// workers``.
    """

    def __init__(self, workers: int = 1, threads: int | None = None):
        self.workers = workers
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count() or 1  # the cores this process may use, not the machine's
        self.threads = threads or max(1, cores // workers)

    def map(self, task: Callable, arg_tuples: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        """Run ``task(*args)`` for every tuple; the first error propagates.

        Yields:
            ``(position in arg_tuples, result)``, in completion order.
        """
        if self.workers == 1 or len(arg_tuples) <= 1:
            for i, args in enumerate(arg_tuples):
                yield i, task(*args)
            return
        context = multiprocessing.get_context("spawn")  # fork is unsafe once torch has threads
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=min(self.workers, len(arg_tuples)), mp_context=context,
            initializer=_init_worker, initargs=(self.threads,),
        ) as pool:
            futures = {pool.submit(task, *args): i for i, args in enumerate(arg_tuples)}
            try:
                for future in concurrent.futures.as_completed(futures):
                    yield futures[future], future.result()
            except BaseException:  # also on interrupt: in-flight units finish and are saved
                pool.shutdown(wait=True, cancel_futures=True)
                raise


class RayExecutor:
    """Run tasks as Ray remote tasks (``pip install -e .[distributed]``).

    The cache root must be on a file system that every Ray node sees. Ray is started locally
    unless it is already initialised (``ray.init(address=...)`` to join a cluster).

    Args:
        gpus_per_task: GPUs Ray reserves per task (fractions allowed).
        threads: CPUs Ray reserves per task; default 1.
    """

    def __init__(self, gpus_per_task: float = 0, threads: int | None = None):
        try:
            import ray
        except ImportError as exc:
            raise ImportError(
                "executor='ray' needs Ray: pip install -e .[distributed]") from exc
        self.ray = ray
        self.gpus_per_task = gpus_per_task
        self.threads = threads or 1

    def map(self, task: Callable, arg_tuples: Sequence[tuple]) -> Iterator[tuple[int, Any]]:
        """Run ``task(*args)`` for every tuple; the first error propagates.

        Yields:
            ``(position in arg_tuples, result)``, in completion order.
        """
        ray = self.ray
        if not ray.is_initialized():
            ray.init()
        remote = ray.remote(num_cpus=self.threads, num_gpus=self.gpus_per_task)(task)
        refs = {remote.remote(*args): i for i, args in enumerate(arg_tuples)}
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield refs[done[0]], ray.get(done[0])
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise


# ---------------------------------------------------------------- sweeps


def _check_sweep_args(fn: Callable, executor: str, workers: Any, threads: Any,
                      gpus_per_task: Any) -> None:
    """Raise ValueError for a bad sweep configuration, before any compute."""
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    for label, value in (("workers", workers), ("threads", threads)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"{label} must be an int >= 1, got {value!r}")
    if isinstance(gpus_per_task, bool) or not isinstance(gpus_per_task, (int, float)) \
            or not gpus_per_task >= 0:
        raise ValueError(f"gpus_per_task must be a number >= 0, got {gpus_per_task!r}")
    if not callable(fn):
        raise ValueError(f"fn must be callable, got {fn!r}")
    if executor == "local" and workers > 1:
        main = sys.modules.get("__main__")
        if getattr(fn, "__module__", None) == "__main__" and not hasattr(main, "__file__"):
            raise ValueError(f"fn {fn!r} is defined in a notebook or REPL, which spawned worker "
                             "processes cannot import; move it into a module or use workers=1")
        try:
            pickle.dumps(fn)
        except Exception as exc:
            raise ValueError(f"fn {fn!r} cannot be pickled for worker processes ({exc}); "
                             "use a module-level function or workers=1") from exc


def sweep(fn: Callable[[dict], Any], param_list: Sequence[Mapping], *, name: str,
          executor: str = "local", workers: int = 1, cache: RunCache | None = None,
          progress: bool = True, threads: int | None = None,
          gpus_per_task: float = 0) -> list[Any]:
    """Run ``fn`` over a grid of parameters, reusing finished units and computing the rest.

    Each unit is written to the cache by whoever computes it, as soon as it finishes, so a
    killed sweep resumes losing at most the units in flight. Equal parameter sets are computed
    once. A unit's key includes the fingerprint of its code (see `cached`), so units computed
    by code that has changed since are computed again.

    Args:
        fn: The unit's computation, ``fn(params: dict) -> result``; module-level (picklable)
            when ``workers > 1`` or with Ray. An attribute ``fn.code_modules(params) ->
            list[str]`` names modules beyond ``fn.__module__`` whose code the unit depends on.
        param_list: One mapping of resolved parameters per unit.
        name: Run family (directory under the cache root).
        executor: ``"local"`` (this process, or a process pool) or ``"ray"``.
        workers: Local processes; 1 computes sequentially in this process.
        cache: Cache to use; default ``RunCache()``.
        progress: Show a ``tqdm.auto`` bar, one tick per finished unit.
        threads: Torch threads per local worker process (default ``cpu_count // workers``;
            ignored when ``workers == 1``), or CPUs per Ray task (default 1).
        gpus_per_task: GPUs Ray reserves per task; ignored by the local executor.

    Returns:
        The results, in the order of `param_list`.

    Raises:
        ValueError: For an unknown executor, ``workers < 1``, a `fn` that worker processes
            cannot load, or unhashable parameters; all before any compute.
        ImportError: For ``executor="ray"`` when Ray is not installed.
    """
    _check_sweep_args(fn, executor, workers, threads, gpus_per_task)
    cache = cache if cache is not None else RunCache()
    if isinstance(param_list, Mapping) or not all(isinstance(p, Mapping) for p in param_list):
        raise ValueError("param_list must be a sequence of mappings")
    param_list = [dict(p) for p in param_list]
    units = [cache._unit(name, p, fn) for p in param_list]  # validates everything up front
    keys = [u.key for u in units]
    runner = LocalExecutor(workers, threads) if executor == "local" else \
        RayExecutor(gpus_per_task, threads)
    from tqdm.auto import tqdm  # lazy: keeps import of this module light

    results: dict[str, Any] = {}
    for unit in units:
        if unit.key not in results:
            hit, result = cache._lookup(unit)
            if hit:
                results[unit.key] = result
    by_key = dict(zip(keys, param_list, strict=True))
    todo = [k for k in by_key if k not in results]  # unique, in order of first appearance
    n_cached = sum(k in results for k in keys)
    with tqdm(total=len(keys), desc=name, disable=not progress) as bar:
        bar.update(n_cached)
        bar.set_postfix(cached=n_cached, computed=0)
        args = [(fn, by_key[k], name, str(cache.root), cache.version) for k in todo]
        for n_done, (i, result) in enumerate(runner.map(_run_unit, args), start=1):
            results[todo[i]] = result
            bar.update(keys.count(todo[i]))
            bar.set_postfix(cached=n_cached, computed=n_done)
    return [results[k] for k in keys]

