"""Named plug-ins: how methods and chapters extend the core without the core importing them.

The training loop looks up optimisers, tasks, method sub-configs and callbacks by name in a
`Registry`. Methods and chapters register theirs when their module is imported; a name that is
not registered yet triggers one discovery pass that imports every module of the plug-in
packages, so a worker process that unpickled only a core function still finds every plug-in.

The core names no plug-in package: the packages are declared as entry points of the group
``lalr_core.plugins`` (this project's pyproject.toml declares ``lalr_core.methods`` and
``lalr_core.chapters``), so an extension installed beside the project adds its own package the
same way, without an edit here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any

PLUGIN_GROUP = "lalr_core.plugins"
_discovered = False


def plugin_packages() -> list[str]:
    """The module names declared in the ``lalr_core.plugins`` entry-point group, sorted.

    Raises:
        LookupError: none is declared (the project is not installed: ``pip install -e .``).
    """
    names = sorted(ep.value for ep in entry_points(group=PLUGIN_GROUP))
    if not names:
        raise LookupError(f"no plug-in package is declared in the entry-point group "
                          f"{PLUGIN_GROUP!r}: install the project (`make env`, or "
                          f"`pip install -e .`) so the methods and chapters can register")
    return names


def discover() -> None:
    """Import every module of the plug-in packages once (registers their plug-ins)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for package in plugin_packages():
        pkg = importlib.import_module(package)
        for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), prefix=package + "."):
            importlib.import_module(info.name)


class Registry:
    """Name -> object, filled by the ``register`` decorator.

    Example:
        >>> SHAPES = Registry("shape")
        >>> @SHAPES.register("square")
        ... def square(x): return x * x
        >>> SHAPES["square"](3)
        9
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, Any] = {}

    def register(self, name: str) -> Callable[[Any], Any]:
        def add(obj: Any) -> Any:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            return obj
        return add

    def __contains__(self, name: str) -> bool:
        if name not in self._items:
            discover()
        return name in self._items

    def __getitem__(self, name: str) -> Any:
        if name not in self:
            raise ValueError(f"unknown {self.kind} {name!r}; "
                             f"choose one of {', '.join(self.names())}")
        return self._items[name]

    def names(self) -> list[str]:
        discover()
        return sorted(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
