"""Tests of `lalr_core.core.runs.code_hash`: which edits change a code fingerprint.

Oracles: a tiny package written into tmp_path (edited between calls), a copy of the real
package edited the same way, and the closures spelled out by hand.
"""

import importlib
import shutil
import textwrap
from pathlib import Path

import pytest

import lalr_core
from lalr_core.core.runs import code_hash
from lalr_core.core.runs.code_hash import code_fingerprint, module_closure

FILES = {
    "__init__.py": '"""Fake package."""\n',
    "a.py": '''
        """Module a: imports b (absolute), c.helper (relative, from a submodule) and, inside a
        function, d (a submodule named in a from-import)."""
        import importlib

        from fake.b import B
        from .c import helper


        def run(x):
            """Docstring of run."""
            from fake import d  # lazy import: still followed
            importlib.import_module("fake.dyn")  # dynamic: not followed
            return B + helper(x) + d.D  # a comment
    ''',
    "b.py": 'B = 1\n',
    "c.py": '''
        def helper(x):
            return 2 * x
    ''',
    "d.py": 'D = 4\n',
    "dyn.py": 'DYN = 5\n',
    "other.py": 'OTHER = 6\n',
    "sub/__init__.py": 'from .. import b  # noqa\n',
    "sub/deep.py": 'from ..c import helper\nfrom . import leaf\n',
    "sub/leaf.py": 'LEAF = 7\n',
}


@pytest.fixture
def fake(tmp_path):
    for rel, text in FILES.items():
        path = tmp_path / "fake" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    code_hash.clear_cache()
    yield tmp_path
    code_hash.clear_cache()


def fp(root, *modules):
    code_hash.clear_cache()  # the files are edited between calls
    return code_fingerprint(modules, package="fake", root=root)


def edit(root, rel, old, new):
    path = root / "fake" / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def test_closure_follows_static_imports_only(fake):
    assert module_closure(["fake.a"], package="fake", root=fake) == \
        ["fake", "fake.a", "fake.b", "fake.c", "fake.d"]  # parents included; dyn, other not
    assert module_closure(["fake.sub.deep"], package="fake", root=fake) == \
        ["fake", "fake.b", "fake.c", "fake.sub", "fake.sub.deep", "fake.sub.leaf"]


def test_docstring_and_comment_edits_keep_the_fingerprint(fake):
    before = fp(fake, "fake.a")
    assert len(before) == 16 and int(before, 16) >= 0
    edit(fake, "a.py", "Docstring of run.", "A longer docstring\n    over two lines.")
    edit(fake, "a.py", "# a comment", "# another comment, longer")
    edit(fake, "a.py", '"""Module a:', '# a new first line\n\n\n"""Module A:')
    edit(fake, "c.py", "def helper(x):\n", "def helper(x):\n    '''New docstring.'''\n\n")
    assert fp(fake, "fake.a") == before


def test_code_edit_changes_the_fingerprint(fake):
    before = fp(fake, "fake.a")
    edit(fake, "a.py", "return B + helper(x)", "return B - helper(x)")
    assert fp(fake, "fake.a") != before


def test_edit_of_an_imported_module_changes_the_importers_fingerprint(fake):
    before = {m: fp(fake, m) for m in ("fake.a", "fake.b", "fake.other", "fake.sub.deep")}
    edit(fake, "c.py", "2 * x", "3 * x")  # a imports c; deep imports c relatively (..c)
    after = {m: fp(fake, m) for m in before}
    assert after["fake.a"] != before["fake.a"]
    assert after["fake.sub.deep"] != before["fake.sub.deep"]
    assert after["fake.b"] == before["fake.b"] and after["fake.other"] == before["fake.other"]
    edit(fake, "d.py", "D = 4", "D = 40")  # imported inside a function only
    assert fp(fake, "fake.a") != after["fake.a"]


def test_edit_of_an_unrelated_or_dynamically_imported_module_keeps_it(fake):
    before = {m: fp(fake, m) for m in ("fake.a", "fake.sub", "fake.sub.deep")}
    edit(fake, "other.py", "6", "60")
    edit(fake, "dyn.py", "5", "50")
    edit(fake, "sub/leaf.py", "7", "70")  # imported by deep, not by its package sub
    after = {m: fp(fake, m) for m in before}
    assert after["fake.a"] == before["fake.a"] and after["fake.sub"] == before["fake.sub"]
    assert after["fake.sub.deep"] != before["fake.sub.deep"]


def test_fingerprint_covers_every_module_given_and_their_parents(fake):
    both = fp(fake, "fake.b", "fake.other")
    assert both == fp(fake, "fake.other", "fake.b", "fake.b")  # a set of names
    assert both != fp(fake, "fake.b")
    edit(fake, "__init__.py", '"""Fake package."""', 'VERSION = "2"')  # runs on every import
    assert fp(fake, "fake.b", "fake.other") != both


def test_results_are_cached_per_process(fake):
    code_hash.clear_cache()
    before = code_fingerprint(["fake.b"], package="fake", root=fake)
    edit(fake, "b.py", "B = 1", "B = 2")
    assert code_fingerprint(["fake.b"], package="fake", root=fake) == before  # not re-read
    code_hash.clear_cache()
    assert code_fingerprint(["fake.b"], package="fake", root=fake) != before


def test_bad_module_names(fake):
    with pytest.raises(ValueError, match="not the str"):
        code_fingerprint("fake.a", package="fake", root=fake)
    with pytest.raises(ValueError, match="fake.missing"):
        fp(fake, "fake.missing")
    outside = fp(fake, "no_such_module_anywhere_xyz")  # outside the package: by name only
    assert outside == fp(fake, "no_such_module_anywhere_xyz") != fp(fake, "fake.b")


# ---------------------------------------------------------------- the real package


def test_real_units_closure_excludes_methods():
    closure = module_closure(["lalr_core.core.runs.units"])
    assert "lalr_core.core.loop.train" in closure and "lalr_core.core.loop.callbacks" in closure
    assert not any(m.startswith(("lalr_core.methods", "lalr_core.chapters")) for m in closure)


def _module_file(name):
    """Path of module `name`'s source relative to the directory holding lalr_core/."""
    root = Path(lalr_core.__file__).resolve().parents[1]
    return Path(importlib.import_module(name).__file__).resolve().relative_to(root)


def test_train_unit_code_modules_name_the_runs_plugins():
    from lalr_core.core.loop.callbacks import CALLBACKS
    from lalr_core.core.loop.config import RunConfig
    from lalr_core.core.runs import unit_fingerprint, unit_modules
    from lalr_core.core.runs.units import train_unit
    from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance

    traj_module = CALLBACKS["trajectory"].__module__  # the module defining the callback
    assert traj_module.startswith("lalr_core.methods.trajectory")
    plain = {"run": RunConfig().key(), "callbacks": {"weights": {}}}
    traj = {"run": RunConfig().key(), "callbacks": {"trajectory": {"window": 5}}}
    tb = {"run": RunConfig(methods=(TempBalance(),)).key(), "callbacks": {}}
    core = ["lalr_core.core.loop.optim", "lalr_core.core.loop.schedules", "lalr_core.core.loop.tasks",
            "lalr_core.core.runs.units"]  # sgdm, the schedule, the task
    assert unit_modules(train_unit, plain) == sorted(["lalr_core.core.loop.callbacks", *core])
    assert unit_modules(train_unit, traj) == sorted([*core, traj_module])
    assert TempBalance.__module__ in unit_modules(train_unit, tb)
    assert unit_fingerprint(train_unit, traj) != unit_fingerprint(train_unit, plain)
    prune = CALLBACKS["pruned_start"].__module__
    finetune = {"run": RunConfig(seed=1).key(),
                "callbacks": {"pruned_start": {"pretrained": {**tb, "callbacks": {"weights": {}}},
                                               "ratios": {"conv1": 0.5}}}}
    assert unit_modules(train_unit, finetune) == sorted(  # the pretraining's code counts too
        {"lalr_core.core.loop.callbacks", *core, prune, TempBalance.__module__})
    # a chapter's task and a method's optimiser factory count too (Barlow Twins with LARS)
    from lalr_core.chapters.ch06_orthogonal_sgdm.unsupervised import BarlowTwinsTask
    from lalr_core.methods.orthogonal.lars import lars
    bt = {"run": RunConfig(optimizer="lars", epochs=1, task=BarlowTwinsTask()).key(),
          "callbacks": {}}
    assert {BarlowTwinsTask.__module__, lars.__module__} <= set(unit_modules(train_unit, bt))
    assert unit_fingerprint(train_unit, plain) == \
        unit_fingerprint(train_unit, {**plain, "run": RunConfig(lr=0.3).key()})


def test_a_fix_to_a_method_invalidates_only_its_runs(tmp_path):
    """On a copy of the real package: edit the trajectory callback's module, then train.py."""
    from lalr_core.core.loop.callbacks import CALLBACKS

    traj_module = CALLBACKS["trajectory"].__module__
    shutil.copytree(Path(lalr_core.__file__).parent, tmp_path / "lalr_core",
                    ignore=shutil.ignore_patterns("__pycache__"))

    def prints():
        code_hash.clear_cache()
        base = ["lalr_core.core.runs.units", "lalr_core.core.loop.callbacks"]
        return (code_fingerprint(base, root=tmp_path),
                code_fingerprint([*base, traj_module], root=tmp_path))

    def append(module, text):
        with open(tmp_path / _module_file(module), "a") as fh:
            fh.write(text)

    plain, traj = prints()
    append(traj_module, "\n# a comment\n")
    assert prints() == (plain, traj)
    append(traj_module, "\n_FIXED = True\n")
    plain2, traj2 = prints()
    assert plain2 == plain and traj2 != traj
    append("lalr_core.core.loop.train", "\n_FIXED = True\n")
    plain3, traj3 = prints()
    assert plain3 != plain2 and traj3 != traj2
    code_hash.clear_cache()


def test_dump_does_not_depend_on_the_python_version():
    """Python 3.12's syntax trees carry an empty ``type_params`` on every function and class,
    which ``ast.dump`` writes; the fingerprint's dump leaves empty and absent fields out, so a
    run computed under 3.12 (a GPU machine's Python) hits a 3.11 cache. Oracle: the same tree
    with that field added by hand, and the dump spelled out for a one-liner."""
    import ast

    source = "class A:\n    def f(self, x=None):\n        return x\n"
    plain = ast.parse(source)
    with_field = ast.parse(source)
    for node in ast.walk(with_field):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            node.type_params = []
            node._fields = (*type(node)._fields, "type_params")  # as 3.12 declares it
    assert code_hash.canonical_dump(with_field) == code_hash.canonical_dump(plain)
    assert code_hash.canonical_dump(ast.parse("x = None")) == (
        "Module(body=[Assign(targets=[Name(id='x', ctx=Load())], value=Constant())])"
        .replace("Load", "Store"))
    assert code_hash.canonical_dump(ast.parse("x = 1")) != code_hash.canonical_dump(
        ast.parse("x = 2"))
