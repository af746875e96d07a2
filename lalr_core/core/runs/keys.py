"""Cache keys: canonical parameters, the library version and the code a unit depends on."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lalr_core.core.atomic_io import canonical_json, to_canonical
from lalr_core.core.runs.code_hash import code_fingerprint

RESULT_FILE = "result.pkl"
META_FILE = "meta.json"
ROOT_ENV = "LALR_RUNS_ROOT"  # overrides the default root `<repo>/data/runs`
HASH_LEN = 16  # hex characters of sha256 kept as the key (64 bits)
# hidden siblings of the entries: temporaries, checkpoints, quarantined corrupt entries, and
# the lock files of units being computed
TMP_PREFIX, CKPT_PREFIX, BAD_PREFIX, LOCK_PREFIX = ".tmp-", ".ckpt-", ".corrupt-", ".lock-"


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


FAMILIES: dict[str, Callable] = {}  # run family name -> its unit function (register_unit)
RUNNING_UNITS: list[tuple[str, Callable]] = []  # (name, fn) of the units computing in this process


def register_unit(name: str) -> Callable[[Callable], Callable]:
    """Decorator: declare ``fn`` the computation of run family `name`.

    A key of that family computed without an explicit ``fn`` (e.g. ``cache.get(name, params)``
    or a plain ``put``) then includes ``fn``'s code fingerprint, as `sweep` stores it.
    """
    check_name(name)

    def add(fn: Callable) -> Callable:
        old = FAMILIES.get(name)
        if old is not None and old is not fn and qualname(old) != qualname(fn):
            raise ValueError(f"run family {name!r} is already the unit {qualname(old)}")
        FAMILIES[name] = fn
        return fn
    return add


def qualname(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def family_unit(name: str) -> Callable | None:
    """The ``fn`` keys of family `name` default to: registered, else running now, else None."""
    if name in FAMILIES:
        return FAMILIES[name]
    return next((fn for n, fn in reversed(RUNNING_UNITS) if n == name), None)


@contextlib.contextmanager
def running_unit(name: str, fn: Callable) -> Iterator[None]:
    RUNNING_UNITS.append((name, fn))
    try:
        yield
    finally:
        RUNNING_UNITS.pop()


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
            raise ValueError(f"{qualname(fn)}.code_modules failed for these params: "
                             f"{exc!r}") from exc
        if isinstance(more, str) or not all(isinstance(m, str) and m for m in more):
            raise ValueError(f"{qualname(fn)}.code_modules must return module names, "
                             f"got {more!r}")
        modules += list(more)
    return sorted(set(modules))


def unit_fingerprint(fn: Callable, params: Mapping) -> str:
    """``code_fingerprint(unit_modules(fn, params))``: the code part of the unit's key."""
    return code_fingerprint(unit_modules(fn, params))


@dataclasses.dataclass(frozen=True)
class UnitKey:
    """One unit's entry: its key and the code facts recorded in meta.json."""

    name: str
    key: str
    code: dict | None  # {"fingerprint", "modules", "closure"}; None: keyed without code


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name or name.startswith(".") or "/" in name \
            or "\\" in name or name != name.strip():
        raise ValueError(f"run name must be a non-empty str without '/' or leading '.', "
                         f"got {name!r}")
    return name
