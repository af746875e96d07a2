"""What a notebook reports to ``make figures``' terminal (`lalr_core.core.progress`).

Oracles: the text the library appends to the progress file, and `follow`'s copy of it."""

import io
import threading

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from lalr_core.core import progress
from lalr_core.core.results.inventory import inventory_count
from lalr_core.core.results.writer import FigureWriter
from lalr_core.core.runs import RunCache, sweep


def double(params: dict) -> int:
    return 2 * params["i"]


def test_saved_items_and_sweeps_report_to_the_progress_file(tmp_path, monkeypatch):
    log = tmp_path / "progress.log"
    monkeypatch.setenv(progress.PROGRESS_ENV, str(log))
    out = FigureWriter("04_directedness", "smoke", "nb.ipynb", root=tmp_path / "figures")
    fig = plt.figure()
    out.savefig(fig, "fig3.7A")
    out.savefig(fig, "fig3.7A")  # saved again: still one item
    out.savefig(fig, "extra_layer_psi")  # ours, not in the sources' inventory
    plt.close(fig)
    assert sweep(double, [{"i": i} for i in range(3)], name="dbl",
                 cache=RunCache(tmp_path / "runs", version="t")) == [0, 2, 4]
    text = log.read_text()
    n = inventory_count("04_directedness")
    assert n == 22
    assert text.count(f"[smoke/04_directedness] saved fig3.7A (1 of {n} items)") == 2
    assert f"saved extra_layer_psi (1 of {n} items, 1 of ours)" in text
    assert "dbl: 100%" in text and "3/3" in text and "computed=3" in text


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    assert progress.stream() is None
    progress.note("nobody listens")  # no error, no file
    assert list(tmp_path.iterdir()) == []


def test_follow_copies_what_is_appended_until_stopped(tmp_path):
    path, sink, stop = tmp_path / "p.log", io.StringIO(), threading.Event()
    follower = threading.Thread(target=progress.follow, args=(path, sink, stop, 0.01))
    follower.start()
    path.write_text("one\n")
    with path.open("a") as f:
        f.write("two\n")
    stop.set()
    follower.join(5)
    assert not follower.is_alive() and sink.getvalue() == "one\ntwo\n"


def test_the_readable_log_keeps_each_bars_final_state_and_the_notes(tmp_path):
    """Oracle: the text a person would read, written out by hand."""
    path, sink, log, stop = tmp_path / "p.live", io.StringIO(), io.StringIO(), threading.Event()
    follower = threading.Thread(target=progress.follow, args=(path, sink, stop, 0.01),
                                kwargs={"log": log})
    follower.start()
    path.write_text("\rtrain 0/2\rtrain 1/2")  # a line split across two appends
    with path.open("a") as f:
        f.write("\x1b[A\rtrain 2/2\r   \nsaved fig1\n\r\n\repochs 3/3")
    stop.set()
    follower.join(5)
    assert not follower.is_alive()
    assert sink.getvalue().endswith("\repochs 3/3")  # the terminal gets every redraw
    assert log.getvalue() == "train 2/2\nsaved fig1\nepochs 3/3\n"
