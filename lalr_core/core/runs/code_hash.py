"""Fingerprints of the source code a cached unit depends on.

`code_fingerprint(modules)` closes the given modules over their static imports of the package
(``import lalr_core.x``, ``from lalr_core.x import y`` where ``y`` may be a submodule, relative
imports, also those inside functions; the parent packages of every module, whose
``__init__`` runs on import, are included) and hashes the closure's sources with docstrings
dropped. The hash is taken of a dump of each module's syntax tree (`canonical_dump`), so
comments, docstrings, blank lines and formatting do not count, while any change to the code
does. The dump leaves out empty and absent fields, so it does not depend on the Python
version: ``ast.dump`` does (3.12 added ``type_params=[]`` to every function and class), and a
run computed on a GPU machine with another Python must hit the cache it is copied into. Dynamic imports
(``importlib.import_module``, the plug-in discovery of `lalr_core.core.loop.registry`) are not
followed: a unit names the plug-ins it uses itself (``code_modules``, see
`lalr_core.core.runs`).

Results are cached per process: a process that fingerprinted a module keeps that fingerprint
after the file is edited (as it keeps the code it imported); `clear_cache` forgets them.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import os
import pathlib
import sys
from collections.abc import Iterable

PACKAGE = "lalr_core"
_ROOT = pathlib.Path(__file__).resolve().parents[3]  # the directory holding lalr_core/
FINGERPRINT_LEN = 16  # hex characters of sha256 kept


def code_fingerprint(modules: Iterable[str], *, package: str = PACKAGE,
                     root: str | os.PathLike | None = None) -> str:
    """Hash the code of `modules` and of every module of `package` they import (transitively).

    Args:
        modules: Dotted module names. Names in `package` must exist under `root`; others
            (a test module, ``__main__``) are read from their file when Python knows it, else
            count by name only.
        package: The package whose imports are followed (default ``lalr_core``).
        root: The directory holding `package` (default: where this ``lalr_core`` lives).

    Returns:
        16 hex characters of the sha256 of the closure's module names and code digests.

    Raises:
        ValueError: If `modules` is a str, or names a module of `package` that does not exist.
    """
    names = _names(modules)
    closure = _closure(names, package, _root(root))
    text = json.dumps(closure, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_LEN]


def module_closure(modules: Iterable[str], *, package: str = PACKAGE,
                   root: str | os.PathLike | None = None) -> list[str]:
    """The sorted module names `code_fingerprint` hashes for `modules`."""
    return [name for name, _ in _closure(_names(modules), package, _root(root))]


def clear_cache() -> None:
    """Forget the fingerprints of this process (re-read the sources on the next call)."""
    _closure.cache_clear()
    _module_info.cache_clear()


# ---------------------------------------------------------------- internals


def _names(modules: Iterable[str]) -> tuple[str, ...]:
    if isinstance(modules, str):
        raise ValueError(  # noqa: TRY004 - a bad argument value, like the others here
            f"modules must be an iterable of module names, not the str {modules!r}")
    names = tuple(sorted(set(modules)))
    bad = [m for m in names if not isinstance(m, str) or not m]
    if bad:
        raise ValueError(f"module names must be non-empty str, got {bad!r}")
    return names


def _root(root: str | os.PathLike | None) -> str:
    return str(_ROOT if root is None else pathlib.Path(root).resolve())


def _in_package(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _package_file(name: str, root: str) -> tuple[pathlib.Path, bool] | None:
    """``(source file, is a package)`` of module `name` under `root`, or None."""
    base = pathlib.Path(root, *name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py", True
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py"), False
    return None


def _outside_file(name: str) -> tuple[pathlib.Path, bool] | None:
    """``(source file, is a package)`` of a module outside the package, if Python knows it."""
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None) if module is not None else None
    if origin is None and module is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
    if not origin or not str(origin).endswith(".py") or not os.path.isfile(origin):
        return None  # e.g. __main__ of a notebook kernel: no source file
    path = pathlib.Path(origin)
    return path, path.name == "__init__.py"


def canonical_dump(node: ast.AST | list | object) -> str:
    """``ast.dump`` without the fields that are None or empty lists (nor node positions):
    the same text on every Python version for code every version parses alike."""
    if isinstance(node, ast.AST):
        fields = ((name, getattr(node, name, None)) for name in node._fields)
        return type(node).__name__ + "(" + ", ".join(
            f"{name}={canonical_dump(value)}" for name, value in fields
            if value is not None and value != []) + ")"
    if isinstance(node, list):
        return "[" + ", ".join(canonical_dump(x) for x in node) + "]"
    return repr(node)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:]
    return tree


def _imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """Module names (and `from` names that may be submodules) imported anywhere in `tree`."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = here[: len(here) - node.level + 1] if node.level > 1 else list(here)
                if node.level - 1 > len(here) or not parts:
                    continue  # beyond the top-level package: not ours
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


@functools.cache
def _module_info(name: str, package: str, root: str) -> tuple[str, tuple[str, ...]]:
    """``(code digest, modules of the package it imports)``; digest "" when no source."""
    ours = _in_package(name, package)
    found = _package_file(name, root) if ours else _outside_file(name)
    if found is None:
        if ours:
            raise ValueError(f"module {name!r} not found under {root}")
        return "", ()
    path, is_package = found
    tree = _strip_docstrings(ast.parse(path.read_bytes(), filename=str(path)))
    digest = hashlib.sha256(canonical_dump(tree).encode("utf-8")).hexdigest()
    imports = sorted(
        m for m in _imported(tree, name, is_package)
        if _in_package(m, package) and _package_file(m, root) is not None
    )
    return digest, tuple(imports)


def _parents(name: str, package: str) -> list[str]:
    """The packages whose ``__init__`` runs when `name` is imported (within `package`)."""
    parts = name.split(".")
    return [p for p in (".".join(parts[:i]) for i in range(1, len(parts)))
            if _in_package(p, package)]


@functools.cache
def _closure(names: tuple[str, ...], package: str, root: str) -> tuple[tuple[str, str], ...]:
    """Sorted ``(module, digest)`` of `names` and everything of `package` they import."""
    digests: dict[str, str] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in digests:
            continue
        digest, imports = _module_info(name, package, root)
        digests[name] = digest
        todo.extend(imports)
        todo.extend(_parents(name, package))
    return tuple(sorted(digests.items()))
