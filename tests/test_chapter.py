"""`lalr_core.core.runs.chapter`: typed settings (coercion, ranges, overrides) and the chapter's
run registry (sections, de-duplicated union ordered by run cost), against explicit oracles."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

import pytest

from lalr_core.core.runs.chapter import Chapter, ChapterSettings, positive
from lalr_core.core.loop.config import PROFILES, RunConfig


@dataclass(frozen=True)
class Typed(ChapterSettings):
    """One field per supported annotation."""

    n: int
    x: float
    flag: bool
    name: str
    steps: tuple[int, ...]
    pair: tuple[float, float]
    bare: tuple
    table: dict
    maybe: int | None
    old_style: Optional[float]
    either: int | str
    anything: Any


GOOD = dict(n=3, x=0.5, flag=True, name="a", steps=(1, 2), pair=(0.9, 0.99), bare=(1, "b"),
            table={"k": 1}, maybe=None, old_style=None, either=4, anything=object)


def typed(**changes) -> Typed:
    return Typed(**{**GOOD, **changes})


def test_good_values_are_kept():
    s = typed()
    assert s.as_dict() == GOOD
    assert [f.name for f in dataclasses.fields(s)] == list(GOOD)


@pytest.mark.parametrize("field, value, expected", [
    ("n", 0, 0), ("n", -7, -7),
    ("x", 2, 2), ("x", 1e-3, 1e-3),               # an int is a number
    ("flag", False, False),
    ("name", "", ""),
    ("steps", [4, 5, 6], (4, 5, 6)),              # lists become tuples, any length
    ("steps", (), ()),
    ("pair", [0.1, 1], (0.1, 1)),
    ("bare", [1, [2]], (1, [2])),                 # bare tuple: items unchecked
    ("table", {"a": {"b": 2}}, {"a": {"b": 2}}),
    ("maybe", 5, 5), ("maybe", None, None),
    ("old_style", 0.25, 0.25), ("old_style", 1, 1),
    ("either", 1, 1), ("either", "one", "one"),
    ("anything", None, None), ("anything", [1], [1]),
])
def test_coercion_accepts(field, value, expected):
    got = getattr(typed(**{field: value}), field)
    assert got == expected and type(got) is type(expected)


def test_list_and_mapping_inputs_are_copied():
    table = {"a": 1}
    s = typed(table=table, steps=[1])
    table["b"] = 2
    assert s.table == {"a": 1} and s.steps == (1,)


@pytest.mark.parametrize("field, value, match", [
    ("n", "3", "'n' must be an integer, got '3'"),
    ("n", 3.0, "'n' must be an integer"),
    ("n", True, "'n' must be an integer, got True"),   # bool is not an int here
    ("n", None, "'n' must be an integer"),
    ("x", "0.1", "'x' must be a number, got '0.1'"),
    ("x", False, "'x' must be a number"),              # nor a number
    ("x", None, "'x' must be a number"),
    ("flag", 1, "'flag' must be true or false, got 1"),  # and 1 is not a bool
    ("flag", "true", "'flag' must be true or false"),
    ("name", 3, "'name' must be a string"),
    ("steps", 3, "'steps' must be a list, got 3"),
    ("steps", "12", "'steps' must be a list"),
    ("steps", [1, "2"], "'steps\\[1\\]' must be an integer"),
    ("steps", [1, True], "'steps\\[1\\]' must be an integer"),
    ("pair", [0.9], "'pair' must have 2 items"),
    ("pair", [0.9, 0.99, 0.999], "'pair' must have 2 items"),
    ("pair", [0.9, "x"], "'pair\\[1\\]' must be a number"),
    ("bare", {"a": 1}, "'bare' must be a list"),
    ("table", [("a", 1)], "'table' must be a mapping"),
    ("maybe", "5", "'maybe' must be an integer, got '5'"),  # X | None: X's own message
    ("maybe", 5.0, "'maybe' must be an integer"),
    ("old_style", "x", "'old_style' must be a number"),
    ("either", 1.5, "'either' must be one of"),
])
def test_coercion_rejects(field, value, match):
    with pytest.raises(ValueError, match=match):
        typed(**{field: value})


def test_unsupported_annotation_raises_type_error():
    @dataclass(frozen=True)
    class Listed(ChapterSettings):
        items: list[int]

    with pytest.raises(TypeError, match="unsupported annotation"):
        Listed(items=[1])


@dataclass(frozen=True)
class Ranged(ChapterSettings):
    lr: float
    epochs: int
    seeds: tuple[int, ...]
    n: int | None

    def check(self) -> None:
        positive(self, "lr", "epochs", "seeds")
        positive(self, "n", allow_none=True)


def ranged(**changes) -> Ranged:
    return Ranged(**{**dict(lr=0.1, epochs=2, seeds=(1, 2), n=None), **changes})


@pytest.mark.parametrize("changes, match", [
    (dict(lr=0.0), "'lr' must be positive, got 0.0"),
    (dict(lr=-1), "'lr' must be positive"),
    (dict(epochs=0), "'epochs' must be positive"),
    (dict(seeds=(1, 0)), "'seeds' must be positive, got \\(1, 0\\)"),
    (dict(n=0), "'n' must be positive"),
])
def test_positive_and_check_run_on_construction(changes, match):
    with pytest.raises(ValueError, match=match):
        ranged(**changes)


def test_positive():
    s = ranged(n=4, seeds=(3,))
    positive(s, "lr", "epochs", "seeds", "n")
    positive(ranged(), "n", allow_none=True)
    with pytest.raises(ValueError, match="'n' must be positive, got None"):
        positive(ranged(), "n")
    positive(ranged(seeds=()), "seeds")  # no item to reject


def test_with_overrides_none_keeps_and_unknown_raises():
    s = ranged(n=3)
    assert s.with_overrides(None) == s and s.with_overrides({}) == s
    t = s.with_overrides({"lr": None, "epochs": 5, "seeds": [2, 3], "n": None})
    assert (t.lr, t.epochs, t.seeds, t.n) == (0.1, 5, (2, 3), 3)
    assert (s.epochs, s.seeds) == (2, (1, 2))  # the original is unchanged
    assert isinstance(t, Ranged)
    with pytest.raises(ValueError, match=r"unknown setting 'lrr' for this chapter; "
                                         r"known: \['epochs', 'lr', 'n', 'seeds'\]"):
        s.with_overrides({"lrr": 0.2})
    with pytest.raises(ValueError, match="unknown setting 'lrr'"):
        s.with_overrides({"lrr": None})  # unknown even when it would keep the value
    with pytest.raises(ValueError, match="'epochs' must be an integer, got '5'"):
        s.with_overrides({"epochs": "5"})
    with pytest.raises(ValueError, match="'lr' must be positive"):
        s.with_overrides({"lr": 0})


def test_settings_are_frozen_and_hashable():
    s = ranged()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.lr = 1.0
    assert hash(s) == hash(ranged()) and s == ranged() and s != ranged(lr=0.2)


# --- Chapter ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Small(ChapterSettings):
    epochs: int


SMALL = {p: Small(epochs=e) for p, e in zip(PROFILES, (1, 2, 3))}


def cfg(**kw) -> RunConfig:
    return RunConfig(dataset="fashion_mnist", model="basic_cnn", **kw)


def test_chapter_rejects_a_missing_or_unknown_profile():
    with pytest.raises(ValueError, match="chapter x must define profiles"):
        Chapter(id="x", title="t", profiles={"smoke": SMALL["smoke"], "quick": SMALL["quick"]})
    with pytest.raises(ValueError, match="must define profiles"):
        Chapter(id="x", title="t", profiles={**SMALL, "full": SMALL["paper"]})
    with pytest.raises(ValueError, match="must define profiles"):
        Chapter(id="x", title="t", profiles={})


def test_chapter_settings_resolves_profile_and_overrides():
    ch = Chapter(id="x", title="t", profiles=SMALL)
    assert ch.settings("quick") == Small(epochs=2)
    assert ch.settings("paper", {"epochs": 9}) == Small(epochs=9)
    assert ch.settings("smoke", {"epochs": None}) == Small(epochs=1)
    with pytest.raises(ValueError, match="unknown profile 'full'"):
        ch.settings("full")
    with pytest.raises(ValueError, match="unknown setting 'epoch'"):
        ch.settings("smoke", {"epoch": 2})


def test_chapter_without_sections():
    ch = Chapter(id="x", title="t", profiles=SMALL)
    with pytest.raises(ValueError, match="chapter x has no sections of training runs"):
        ch.runs(SMALL["smoke"], "a")
    with pytest.raises(ValueError, match="has no sections"):
        ch.all_runs(SMALL["smoke"])


A, B, C, D = cfg(epochs=2), cfg(epochs=5), cfg(epochs=3), cfg(epochs=5, lr=0.2)
CB1 = {"trajectory": {"window": 4, "per_layer": True}}
CB1_REORDERED = {"trajectory": {"per_layer": True, "window": 4}}
CB2 = {"trajectory": {"window": 8}}


def sections(s):
    return {
        "first": ([A, B, A], [CB1, {}, CB2]),
        "second": ([cfg(epochs=2), C, B, D], [CB1_REORDERED, CB1, {}, {}]),
    }


def test_runs_of_a_section():
    ch = Chapter(id="x", title="t", profiles=SMALL, sections=sections)
    assert ch.runs(SMALL["smoke"], "second") == sections(None)["second"]
    with pytest.raises(ValueError, match=r"unknown section 'third'; known: \['first', 'second'\]"):
        ch.runs(SMALL["smoke"], "third")


def test_all_runs_deduplicates_and_orders_by_default_cost():
    ch = Chapter(id="x", title="t", profiles=SMALL, sections=sections)
    configs, callbacks = ch.all_runs(SMALL["smoke"])
    # unique (config, callbacks) in first-seen order: (A, CB1), (B, {}), (A, CB2), (C, CB1),
    # (D, {}); (A, CB1_REORDERED) and the second (B, {}) are repeats. Epochs descending, ties in
    # first-seen order.
    assert configs == [B, D, C, A, A]
    assert callbacks == [{}, {}, CB1, CB1, CB2]


def test_all_runs_orders_by_the_given_cost():
    ch = Chapter(id="x", title="t", profiles=SMALL, sections=sections,
                 run_cost=lambda c: c.lr * 100 - c.epochs)
    configs, callbacks = ch.all_runs(SMALL["smoke"])
    # costs: A 8, B 5, A 8, C 7, D 15
    assert configs == [D, A, A, C, B]
    assert callbacks == [{}, CB1, CB2, CB1, {}]


def test_all_runs_passes_the_settings_to_the_sections():
    seen = []

    def by_settings(s):
        seen.append(s)
        return {"only": ([cfg(epochs=s.epochs)] * 2, [{}, {}])}

    ch = Chapter(id="x", title="t", profiles=SMALL, sections=by_settings)
    s = ch.settings("paper", {"epochs": 4})
    assert ch.all_runs(s) == ([cfg(epochs=4)], [{}])
    assert seen == [s]


def test_sections_with_mismatched_callbacks_raise():
    ch = Chapter(id="x", title="t", profiles=SMALL,
                 sections=lambda s: {"bad": ([A, B], [{}])})
    with pytest.raises(ValueError):
        ch.all_runs(SMALL["smoke"])
