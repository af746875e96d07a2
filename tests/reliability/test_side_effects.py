"""Issue 10, item 7: a library call never installs system packages."""

import pytest

import lalr_core.core.data as D


def _no_fashion_mnist_anywhere(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(D, "DEBIAN_FASHION_MNIST_DIR", tmp_path / "no-debian")
    monkeypatch.setattr(D, "_online", lambda url: False)
    monkeypatch.setattr(D, "_try_apt", lambda: calls.append("apt-get") or "stubbed")
    return calls


def test_load_data_never_runs_apt_get(tmp_path, monkeypatch):
    calls = _no_fashion_mnist_anywhere(tmp_path, monkeypatch)
    with pytest.raises(D.DatasetMissingError, match="apt-get install -y"):  # names the fix
        D.load_data("fashion_mnist", root=tmp_path / "data", download=True)
    with pytest.raises(D.DatasetMissingError):
        D.ensure_dataset("fashion_mnist", tmp_path / "data")
    assert calls == []


def test_the_explicit_data_step_may_run_apt_get(tmp_path, monkeypatch):
    calls = _no_fashion_mnist_anywhere(tmp_path, monkeypatch)
    with pytest.raises(D.DatasetMissingError, match="stubbed"):
        D.ensure_dataset("fashion_mnist", tmp_path / "data", allow_apt=True)
    assert calls == ["apt-get"]


def test_driver_data_step_is_the_one_that_may_run_apt_get(monkeypatch):
    from lalr_core import driver
    calls = []
    monkeypatch.setattr(driver, "ensure_dataset", lambda name, **kw: calls.append((name, kw)))
    driver.prepare_data(["04"], "quick")
    assert calls and all(kw == {"allow_apt": True} for _, kw in calls)
    calls.clear()
    assert driver.main(["--profile", "quick", "--chapters", "04", "--data-only"]) == 0
    assert calls                                   # the data step ran, and nothing else


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_train_runs_rejects_bad_workers(workers):
    from lalr_core.core.loop.config import RunConfig
    from lalr_core.core.runs.units import train_runs
    with pytest.raises(ValueError, match="workers"):
        train_runs([RunConfig(synthetic=True, epochs=1)], workers=workers)
