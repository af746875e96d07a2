"""The rehearsal (`lalr_core.core.rehearsal`): the profile's grid with smoke's lengths, one
training run per shape, synthetic data where the real data is absent, a separate run cache,
and every output marked; nothing written into the real cache or the real figures."""

import dataclasses
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from lalr_core.chapters import CHAPTERS, chapter
from lalr_core.core import rehearsal
from lalr_core.core.data import load_data
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.results.report import build_report
from lalr_core.core.results.writer import REHEARSAL_MARK, FigureWriter
from lalr_core.core.runs import ROOT_ENV, RunCache
from lalr_core.core.runs.chapter import Chapter, ChapterSettings
from lalr_core.core.runs.units import train_runs
from lalr_core.driver import main as driver_main

TINY = {"dataset": "digits", "n_train": 64, "n_test": 32, "model": "mlp", "batch_size": 32,
        "epochs": 1, "lr": 0.05, "device": "cpu"}


@pytest.fixture
def rehearsing(monkeypatch):
    monkeypatch.setenv(rehearsal.REHEARSE_ENV, "1")


def _unit(**run):
    return {"run": RunConfig(**{**TINY, **run}).key(), "callbacks": {}}


def test_shape_key_ignores_seeds_and_optimiser_settings_only():
    base = rehearsal.shape_key(_unit())
    assert rehearsal.shape_key(_unit(seed=3, lr=0.2, wd=1e-3, momentum=0.5)) == base
    assert rehearsal.shape_key(_unit(width=0.5)) != base          # another model shape
    assert rehearsal.shape_key(_unit(optimizer="adam")) != base    # another optimiser
    assert rehearsal.shape_key(_unit(epochs=2)) != base            # another run length
    assert rehearsal.shape_key({**_unit(), "callbacks": {"weights": {}}}) != base


def test_a_units_shape_drops_only_the_callback_arguments_named_not_shape():
    from lalr_core.core.runs.units import rehearsal_shape

    def pruned(ratios, importance="l1"):
        spec = {"pretrained": _unit(), "ratios": ratios, "importance": importance}
        return {**_unit(), "callbacks": {"pruned_start": spec}}

    base = rehearsal_shape(pruned({"conv1": 0.5}))
    assert rehearsal_shape(pruned({"conv1": 0.1})) == base         # masks keep the shapes
    assert rehearsal.shape_key(pruned({"conv1": 0.1})) != rehearsal.shape_key(pruned({"conv1": 0.5}))
    assert rehearsal_shape(pruned({"conv1": 0.5}, "me_prune")) != base
    assert rehearsal_shape({**_unit(), "callbacks": {"trajectory": {"window": 3}}}) != \
        rehearsal_shape({**_unit(), "callbacks": {"trajectory": {"window": 4}}})


def test_sibling_root_is_beside_the_real_cache_and_idempotent(tmp_path):
    side = rehearsal.sibling_root(tmp_path / "runs")
    assert side == tmp_path / "runs-rehearsal"
    assert rehearsal.sibling_root(side) == side


def test_a_rehearsal_never_opens_the_real_cache(tmp_path, monkeypatch, rehearsing):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "runs"))
    assert RunCache().root == (tmp_path / "runs-rehearsal").resolve()
    assert RunCache(tmp_path / "other").root == (tmp_path / "other-rehearsal").resolve()


def test_train_runs_trains_one_run_per_shape_and_keeps_each_runs_config(tmp_path, monkeypatch,
                                                                        rehearsing):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "runs"))
    configs = [RunConfig(**{**TINY, "seed": s, "lr": lr}) for s in (0, 1) for lr in (0.05, 0.1)]
    configs.append(RunConfig(**{**TINY, "optimizer": "adam", "lr": 1e-3}))
    results = train_runs(configs)
    assert [r["config"] for r in results] == [c.key() for c in configs]
    assert len(list((tmp_path / "runs-rehearsal" / "train").iterdir())) == 2  # two shapes
    assert not (tmp_path / "runs").exists()
    shared = [r["history"] for r in results[:4]]
    assert all(h is shared[0] for h in shared)                     # one result, four runs


def test_without_rehearsal_every_run_is_trained(tmp_path, monkeypatch):
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "runs"))
    train_runs([RunConfig(**{**TINY, "seed": s}) for s in (0, 1)])
    assert len(list((tmp_path / "runs" / "train").iterdir())) == 2


def test_absent_data_is_drawn_synthetic_only_in_a_rehearsal(tmp_path, monkeypatch):
    from lalr_core.core.data import DatasetMissingError

    with pytest.raises(DatasetMissingError):
        load_data("cifar10", root=tmp_path, n_train=8, n_test=4, download=False)
    monkeypatch.setenv(rehearsal.REHEARSE_ENV, "1")
    data = load_data("cifar10", root=tmp_path, n_train=8, n_test=4, download=False)
    assert data.synthetic and tuple(data.X_train.shape) == (8, 3, 32, 32)
    assert not any(tmp_path.iterdir())                             # nothing fetched or written


@pytest.mark.parametrize("cid", sorted(CHAPTERS))
@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_rehearsed_settings_take_smokes_lengths_and_keep_the_grid(cid, profile, monkeypatch):
    ch = chapter(cid)
    real = ch.settings(profile)
    monkeypatch.setenv(rehearsal.REHEARSE_ENV, "1")
    rehearsed = ch.settings(profile)                               # the settings' checks hold
    smoke = ch.profiles["smoke"]
    for f in dataclasses.fields(real):
        want = getattr(smoke if f.name in ch.rehearsal else real, f.name)
        want = ch.rehearsal_values.get(f.name, want)
        assert getattr(rehearsed, f.name) == want, f.name
    assert ch.settings(profile, {"seeds": None} if hasattr(real, "seeds") else None)


def test_chapter_refuses_a_rehearsal_of_unknown_settings():
    @dataclasses.dataclass(frozen=True)
    class S(ChapterSettings):
        epochs: int

    with pytest.raises(ValueError, match="unknown settings"):
        Chapter(id="99", title="t", profiles={p: S(epochs=1) for p in ("smoke", "quick", "paper")},
                rehearsal=("epoch",))


def test_rehearsal_outputs_are_marked_and_the_report_says_so(tmp_path, monkeypatch, rehearsing):
    out = FigureWriter("04_directedness", "paper", "04_directedness.ipynb", root=tmp_path)
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    paths = out.savefig(fig, "fig3.8")
    assert any(t.get_text() == REHEARSAL_MARK for t in fig.texts)
    plt.close(fig)
    assert json.loads(paths["json"].read_text())["rehearsal"] is True
    record = out.check("fig3.8", "a sanity check", True, kind="sanity")
    assert record["rehearsal"] is True
    report = build_report("paper", root=tmp_path).read_text()
    assert "(REHEARSAL)" in report.splitlines()[0]
    assert "**PASS (rehearsal)**" in report
    page = (tmp_path / "paper" / "04_directedness.md").read_text()
    assert "**Rehearsal: no number on this page is a result**" in page


def test_outside_a_rehearsal_nothing_is_marked(tmp_path):
    out = FigureWriter("04_directedness", "paper", "04_directedness.ipynb", root=tmp_path)
    fig = plt.figure()
    paths = out.savefig(fig, "fig3.8")
    plt.close(fig)
    assert not fig.texts and "rehearsal" not in json.loads(paths["json"].read_text())
    assert "rehearsal" not in out.check("fig3.8", "a sanity check", True, kind="sanity")
    assert "REHEARSAL" not in build_report("paper", root=tmp_path).read_text()


def test_driver_refuses_a_rehearsal_with_the_data_step(capsys):
    assert driver_main(["--profile", "paper", "--chapters", "07", "--rehearse",
                        "--data-only"]) == 2
    assert "--rehearse needs no data step" in capsys.readouterr().err


def test_a_rehearsal_loads_at_most_its_caps_of_examples(tmp_path, rehearsing):
    data = load_data("cifar10", root=tmp_path, n_val=1000, download=False)
    assert [len(y) for y in (data.y_train, data.y_val, data.y_test)] == \
        [rehearsal.SPLIT_CAP, rehearsal.EVAL_CAP, rehearsal.EVAL_CAP]
    small = load_data("cifar10", root=tmp_path, n_train=8, n_test=4, download=False)
    assert (len(small.y_train), len(small.y_val), len(small.y_test)) == (8, 0, 4)
