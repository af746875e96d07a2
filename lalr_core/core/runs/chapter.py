"""The chapter object: a notebook's typed settings per profile and its registry of runs.

Each chapter module (`lalr_core.chapters`) defines

* a frozen `ChapterSettings` subclass: one typed, documented field per setting, checked on
  construction (types, and ranges in ``check``), so a bad override stops before any compute;
* ``PROFILES``: one instance per profile (smoke / quick / paper);
* ``CHAPTER = Chapter(...)``: the id, the profiles, the sections' runs (section -> configs
  and one callbacks spec each) and a rough run cost, from which `Chapter.all_runs` gives the
  union of every section's runs, longest first, for one sweep.

A notebook then reads: ``S = CHAPTER.settings(profile, overrides)`` -> ``train_runs`` ->
plot -> check.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lalr_core.core import rehearsal
from lalr_core.core.loop.config import PROFILES, RunConfig, check_profile
from lalr_core.core.runs.units import train_runs

Sections = dict[str, tuple[list[RunConfig], list[dict]]]


def _coerce(name: str, value: Any, hint: Any) -> Any:
    """``value`` checked against the annotation ``hint`` (lists become tuples), or raise."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        errors = []
        for a in rest:
            try:
                return _coerce(name, value, a)
            except ValueError as e:
                errors.append(str(e))
        raise ValueError(errors[0] if len(errors) == 1 else
                         f"setting {name!r} must be one of {hint}, got {value!r}")
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError(f"setting {name!r} must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"setting {name!r} must be an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"setting {name!r} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"setting {name!r} must be a finite number, got {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise ValueError(f"setting {name!r} must be a string, got {value!r}")
        return value
    if origin is tuple or hint is tuple:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"setting {name!r} must be a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(f"{name}[{i}]", v, args[0]) for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise ValueError(f"setting {name!r} must have {len(args)} items, got {value!r}")
        return tuple(_coerce(f"{name}[{i}]", v, a) for i, (v, a) in enumerate(zip(value, args))) \
            if args else tuple(value)
    if origin is dict or hint is dict:
        if not isinstance(value, Mapping):
            raise ValueError(f"setting {name!r} must be a mapping, got {value!r}")
        return dict(value)
    raise TypeError(f"setting {name!r}: unsupported annotation {hint!r}")


def positive(settings: ChapterSettings, *names: str, allow_none: bool = False) -> None:
    """Raise ``ValueError`` unless every named setting is > 0 (None allowed if asked)."""
    for name in names:
        value = getattr(settings, name)
        if value is None and allow_none:
            continue
        items = value if isinstance(value, tuple) else (value,)
        if any(v is None or v <= 0 for v in items):
            raise ValueError(f"setting {name!r} must be positive, got {value!r}")


def check_names(settings: ChapterSettings, name: str, check: Callable[[str], Any]) -> None:
    """Run a registry's name ``check`` (e.g. `lalr_core.core.models.networks.check_model_name`) on
    setting ``name`` (a name, a tuple of names, or a dict's keys and string values); its
    ``ValueError`` is re-raised with the setting's name in front."""
    value = getattr(settings, name)
    if isinstance(value, Mapping):
        items = [*value, *(v for v in value.values() if isinstance(v, str))]
    else:
        items = value if isinstance(value, tuple) else (value,)
    for item in items:
        try:
            check(item)
        except ValueError as e:
            raise ValueError(f"setting {name!r}: {e}") from None


@dataclass(frozen=True)
class ChapterSettings:
    """Base of a chapter's settings: a frozen dataclass whose annotations are enforced.

    Subclasses declare one field per setting (``int``, ``float``, ``bool``, ``str``,
    ``tuple[...]``, ``dict``, ``X | None``) and may add range checks in ``check``.
    """

    def __post_init__(self):
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, _coerce(f.name, getattr(self, f.name), hints[f.name]))
        self.check()

    def check(self) -> None:
        """Chapter-specific range checks (raise ``ValueError``); none by default."""

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> ChapterSettings:
        """A checked copy with ``overrides`` applied; ``None`` values keep the profile's value
        (papermill passes every parameter). Unknown names raise ``ValueError``."""
        if overrides is not None and not isinstance(overrides, Mapping):
            raise ValueError(f"overrides must be a mapping of setting names to values (e.g. "
                             f"{{'epochs': 2}}) or None, got {overrides!r}")
        known = [f.name for f in dataclasses.fields(self)]
        changes = {}
        for name, value in (overrides or {}).items():
            if name not in known:
                raise ValueError(f"unknown setting {name!r} for this chapter; "
                                 f"known: {sorted(known)}")
            if value is not None:
                changes[name] = value
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class Chapter:
    """One notebook's chapter.

    Args:
        id: the notebook's number (``"02b"``).
        title: one line, for listings.
        profiles: profile -> settings.
        sections: settings -> {section: (configs, one callbacks spec per config)}; None if the
            chapter trains no networks through the shared loop.
        run_cost: a rough relative cost of a run, to start the longest first.
        rehearsal: the settings that set lengths (epochs, steps, example counts, windows,
            milestones, sample sizes): a rehearsal (`lalr_core.core.rehearsal`) takes them from
            the smoke profile and keeps the rest of the profile's grid.
        rehearsal_values: lengths a rehearsal sets below smoke's (applied after
            ``rehearsal``), where the grid's models are so wide that smoke's lengths take
            minutes a run on a CPU.
    """

    id: str
    title: str
    profiles: Mapping[str, ChapterSettings]
    sections: Callable[[Any], Sections] | None = None
    run_cost: Callable[[RunConfig], float] = lambda cfg: float(cfg.epochs)
    rehearsal: tuple[str, ...] = ()
    rehearsal_values: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if sorted(self.profiles) != sorted(PROFILES):
            raise ValueError(f"chapter {self.id} must define profiles {PROFILES}, "
                             f"got {sorted(self.profiles)}")
        known = {f.name for f in dataclasses.fields(self.profiles["smoke"])}
        if unknown := sorted((set(self.rehearsal) | set(self.rehearsal_values)) - known):
            raise ValueError(f"chapter {self.id}: rehearsal names unknown settings {unknown}")

    def settings(self, profile: str, overrides: Mapping[str, Any] | None = None):
        """The checked settings of ``profile`` with ``overrides`` (``ValueError`` on bad input);
        in a rehearsal, with the ``rehearsal`` settings (lengths) of the smoke profile."""
        settings = self.profiles[check_profile(profile)]
        if rehearsal.active():
            settings = self.rehearsed(settings)
        return settings.with_overrides(overrides)

    def rehearsed(self, settings):
        """``settings`` with the lengths (``rehearsal``) of the smoke profile and the
        ``rehearsal_values``, checked."""
        smoke = self.profiles["smoke"]
        return dataclasses.replace(settings, **{**{n: getattr(smoke, n) for n in self.rehearsal},
                                                **self.rehearsal_values})

    def runs(self, settings, section: str) -> tuple[list[RunConfig], list[dict]]:
        """The configs and callbacks specs of one section."""
        sections = self._sections(settings)
        if section not in sections:
            raise ValueError(f"unknown section {section!r}; known: {sorted(sections)}")
        return sections[section]

    def train(self, settings, section: str | None = None) -> tuple[list[RunConfig], list[dict]]:
        """Train one section's runs (every section's once, longest first, when ``section`` is
        None) through the cached, resumable sweep; returns ``(configs, results)`` in order.

        The settings' ``workers`` and ``executor`` are used where the chapter has them (one
        process and ``$LALR_EXECUTOR`` otherwise).
        """
        configs, callbacks = self.all_runs(settings) if section is None else \
            self.runs(settings, section)
        results = train_runs(configs, callbacks=callbacks,
                             workers=getattr(settings, "workers", 1),
                             executor=getattr(settings, "executor", None))
        return configs, results

    def all_runs(self, settings) -> tuple[list[RunConfig], list[dict]]:
        """Every section's runs once (same config and callbacks = one run), longest first."""
        seen: dict[tuple[RunConfig, str], dict] = {}
        for configs, callbacks in self._sections(settings).values():
            for cfg, cb in zip(configs, callbacks, strict=True):
                seen.setdefault((cfg, json.dumps(cb, sort_keys=True, default=str)), cb)
        pairs = sorted(((c, cb) for (c, _), cb in seen.items()), key=lambda p: -self.run_cost(p[0]))
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def _sections(self, settings) -> Sections:
        if self.sections is None:
            raise ValueError(f"chapter {self.id} has no sections of training runs")
        elsewhere = placed_elsewhere(self.id)
        return {name: runs for name, runs in self.sections(settings).items()
                if name not in elsewhere}


SKIP_ENV = "LALR_SKIP_SECTIONS"  # JSON {"04": ["fig3.7"], ...}: sections placed elsewhere


def placed_elsewhere(chapter_id: str) -> set[str]:
    """The sections of ``chapter_id`` that ``make figures`` placed on another machine
    (`lalr_core.placement`: their notebook cells are not run here, nor their runs trained)."""
    return set(json.loads(os.environ.get(SKIP_ENV) or "{}").get(chapter_id, ()))
