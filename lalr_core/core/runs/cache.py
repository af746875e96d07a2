"""The cache of units: atomic, checksummed entries, ``cached`` and the active cache of a sweep.

``cached`` holds the unit's file lock (`lalr_core.core.runs.locks`) while it computes, so
processes racing for one unit compute it once: the others wait, then read its entry.
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import importlib
import json
import os
import pathlib
import pickle
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from lalr_core.core import atomic_io, rehearsal
from lalr_core.core.runs import housekeeping
from lalr_core.core.runs.code_hash import code_fingerprint, module_closure
from lalr_core.core.runs.keys import (
    BAD_PREFIX,
    CKPT_PREFIX,
    LOCK_PREFIX,
    META_FILE,
    RESULT_FILE,
    ROOT_ENV,
    TMP_PREFIX,
    UnitKey,
    canonical_params,
    check_name,
    family_unit,
    param_hash,
    running_unit,
    unit_fingerprint,
    unit_modules,
)
from lalr_core.core.runs.locks import unit_lock
from lalr_core.core.runs.threads import entry_matches, fixed_threads, run_threads

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
    """`lalr_core.core.results.provenance.collect()` when that module exists, else None; never raises."""
    try:
        module = importlib.import_module("lalr_core.core.results.provenance")
    except ImportError:
        return None
    collect = getattr(module, "collect", None)
    if collect is None:
        return None
    try:
        return collect()
    except Exception as exc:  # noqa: BLE001 - provenance must never lose a finished run
        return {"error": repr(exc)}


# ---------------------------------------------------------------- the cache


class RunCache:
    """Directory of cached units: ``<root>/<name>/<hash>/{result.pkl,meta.json}``.

    Args:
        root: Cache directory; default ``$LALR_RUNS_ROOT`` or ``<repo>/data/runs``. In a
            rehearsal (`lalr_core.core.rehearsal`) its sibling ``<root>-rehearsal`` instead.
        version: Library version in the key; default ``lalr_core.__version__``.
    """

    def __init__(self, root: str | os.PathLike | None = None, *, version: str | None = None):
        if root is None:
            repo = pathlib.Path(__file__).resolve().parents[3]
            root = os.environ.get(ROOT_ENV) or repo / "data" / "runs"
        self.root = pathlib.Path(root).expanduser().resolve()
        if rehearsal.active():  # a rehearsal never writes into a real cache
            self.root = rehearsal.sibling_root(self.root)
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

    def _unit(self, name: str, params: Mapping, fn: Callable | None) -> UnitKey:
        """The key of unit (`name`, `params`) and its code facts (see the module docstring)."""
        check_name(name)
        fn = fn if fn is not None else family_unit(name)
        if fn is None:
            return UnitKey(name, self._key(params, None), None)
        modules = unit_modules(fn, params)
        code = {"fingerprint": code_fingerprint(modules), "modules": modules,
                "closure": module_closure(modules)}
        return UnitKey(name, self._key(params, code["fingerprint"]), code)

    def path(self, name: str, params: Mapping, *, fn: Callable | None = None) -> pathlib.Path:
        """Return the entry directory of the unit (it may not exist)."""
        return self._entry(self._unit(name, params, fn))

    def _entry(self, unit: UnitKey) -> pathlib.Path:
        return self.root / unit.name / unit.key

    def checkpoint_dir(self, name: str, params: Mapping, *,
                       fn: Callable | None = None) -> pathlib.Path:
        """Create and return the scratch directory for the unit's mid-run checkpoints.

        It lives beside the entry (hidden, so never mistaken for one), shares its key (so a
        code change also discards the checkpoints) and is removed when the final result is put.
        """
        path = self.root / check_name(name) / f"{CKPT_PREFIX}{self._unit(name, params, fn).key}"
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

    def _lookup(self, unit: UnitKey) -> tuple[bool, Any]:
        entry = self._entry(unit)
        if not entry.is_dir():
            return False, None
        try:
            meta = json.loads((entry / META_FILE).read_text(encoding="utf-8"))
            if not entry_matches(meta):  # computed at another thread count: another run
                return False, None
            return True, pickle.loads(housekeeping.verified_result(entry))
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

    def _put(self, unit: UnitKey, params: Mapping, result: Any,
             wall_time_s: float | None, threads: int | None = None) -> pathlib.Path:
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
            "run_threads": run_threads() if threads is None else int(threads),
            "provenance": _provenance(),
        }
        name_dir.mkdir(parents=True, exist_ok=True)
        tmp = atomic_io.temp_dir(name_dir, f"{TMP_PREFIX}{key}-")
        try:
            atomic_io.write_synced(tmp / RESULT_FILE, data)
            text = json.dumps(meta, indent=1, sort_keys=True, default=str)
            atomic_io.write_synced(tmp / META_FILE, text.encode("utf-8"))
            atomic_io.fsync_dir(tmp)
            self._publish(tmp, name_dir / key)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already when published
        shutil.rmtree(name_dir / f"{CKPT_PREFIX}{key}", ignore_errors=True)
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
                old = atomic_io.temp_dir(entry.parent, f"{TMP_PREFIX}old-")
                try:
                    os.replace(entry, old / "entry")  # rename: atomic, no partial state
                except OSError:
                    pass  # a concurrent writer moved it first; retry the rename
                shutil.rmtree(old, ignore_errors=True)
        raise OSError(f"could not publish cache entry {entry}")

    def _move_aside(self, entry: pathlib.Path, exc: Exception) -> None:
        stamp = datetime.datetime.now().strftime("%Y%m%dT%H%M%S%f")
        target = entry.parent / f"{BAD_PREFIX}{entry.name}-{stamp}"
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
        dirs = [self.root / check_name(name)] if name is not None else \
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

    def _lock(self, unit: UnitKey):
        """Context manager holding the unit's lock file ``<name>/.lock-<key>``."""
        name_dir = self.root / unit.name
        name_dir.mkdir(parents=True, exist_ok=True)
        return unit_lock(name_dir / f"{LOCK_PREFIX}{unit.key}", f"{unit.name}/{unit.key}")

    def du(self, *, min_age_s: float = housekeeping.STALE_AFTER_S,
           verify: bool = False) -> dict[str, dict]:
        """Report the cache's size: ``{category: {"count": n, "bytes": b}}`` and ``"total"``.

        Categories (`lalr_core.core.runs.housekeeping.CATEGORIES`): entries, checkpoints of
        unfinished and of finished units, entries moved aside as corrupt, temporaries (stale
        once unchanged for `min_age_s` seconds), lock files (stale when no process holds
        them), and other files. With `verify`, every entry's result is read and checked against
        its checksum: one damaged in place counts as ``damaged``, not as an entry (this reads
        the whole cache).
        """
        report = {c: {"count": 0, "bytes": 0} for c in (*housekeeping.CATEGORIES, "total")}
        for category, _, size in housekeeping.scan(self.root, min_age_s, verify=verify):
            for row in (category, "total"):
                report[row]["count"] += 1
                report[row]["bytes"] += size
        return report

    def prune(self, *, min_age_s: float = housekeeping.STALE_AFTER_S, checkpoints: bool = False,
              dry_run: bool = False, verify: bool = False) -> list[pathlib.Path]:
        """Delete moved-aside entries and stale leftovers; valid entries are never touched.

        Removes corrupt entries, temporaries unchanged for `min_age_s` seconds (younger ones
        may be a live writer's), checkpoints of finished units and lock files no process
        holds. With `checkpoints`, also the checkpoints of unfinished units that no process
        is computing now (a later sweep then starts those units from scratch). With `verify`,
        also the entries damaged in place (their checksum fails; a later lookup would
        recompute them anyway).

        Returns:
            The paths removed (with `dry_run`: that would be removed).
        """
        removable = (*housekeeping.REMOVABLE, *(("checkpoints",) if checkpoints else ()))
        removed = []
        for category, path, _ in list(housekeeping.scan(self.root, min_age_s, verify=verify)):
            if category not in removable or (category == "checkpoints" and housekeeping.in_use(
                    path.parent, path.name[len(CKPT_PREFIX):])):
                continue
            if dry_run or housekeeping.remove(category, path):
                removed.append(path)
        return removed

    def clear(self, name: str | None = None) -> None:
        """Delete every entry, checkpoint and leftover of `name` (or of every name)."""
        if name is not None:
            shutil.rmtree(self.root / check_name(name), ignore_errors=True)
            return
        for name_dir in self._children(self.root):
            if housekeeping.is_name_dir(name_dir):  # never delete a foreign directory
                shutil.rmtree(name_dir, ignore_errors=True)

    @staticmethod
    def _children(path: pathlib.Path) -> list[pathlib.Path]:
        return sorted(p for p in path.iterdir() if p.is_dir()) if path.is_dir() else []



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
        The result: read back from the cache on a hit, else as `fn` returned it. While
        another process computes the same unit, this call waits for it and returns its entry.

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
    with cache._lock(unit):  # one process computes; the others wait here, then read its entry
        if not force:
            hit, result = cache._lookup(unit)  # again: the lock's last holder may have put it
            if hit:
                return result
        start = time.perf_counter()
        # at the fixed thread count, whatever this process's (see `threads`)
        with running_unit(name, fn), fixed_threads() as threads:
            result = fn(dict(params))
        cache._put(unit, params, result, wall_time_s=time.perf_counter() - start,
                   threads=threads)
    return result


ACTIVE_CACHES: list[RunCache] = []  # the cache of the unit being computed in this process


def active_cache() -> RunCache:
    """The cache of the sweep unit running now (so a unit can read other units of the same
    cache, e.g. fine-tuning from a cached pretraining), else the default ``RunCache()``."""
    return ACTIVE_CACHES[-1] if ACTIVE_CACHES else RunCache()
