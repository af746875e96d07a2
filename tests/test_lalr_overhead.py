"""X-L1 (`lalr_core.methods.layer_lr.lalr.overhead`): LALR's metric code runs with autograd off and
never touches ``.grad`` (every torch call recorded by a `TorchFunctionMode`), the timing
table's bookkeeping on a tiny grid, the budget rule, and the fits on constructed tables with
known answers."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from lalr_core.methods.pretrained.text import TinyTFClassifier, TinyTFConfig
from lalr_core.methods.layer_lr.lalr import overhead
from lalr_core.methods.layer_lr.lalr.grouping import layer_matrices
from lalr_core.methods.layer_lr.lalr.metrics import layer_metrics
from lalr_core.methods.layer_lr.lalr.overhead import (
    COLUMNS,
    depth_fit,
    median_time,
    metric_times,
    overhead_table,
    smallest_supported_size,
    torch_threads,
)
from lalr_core.methods.layer_lr.lalr.scaler import LALRScaler

pytestmark = pytest.mark.usefixtures("one_thread")  # 2 threads stall on the shared cores
GRAD_ACCESS = {torch.Tensor.grad.__get__, torch.Tensor.grad.__set__}


class Recorder(TorchFunctionMode):
    """Every torch function / tensor method called, with the grad mode it ran in."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.calls.append((func, torch.is_grad_enabled(), isinstance(out, torch.Tensor)))
        return out


def _model_with_grads():
    torch.manual_seed(0)
    model = TinyTFClassifier(TinyTFConfig(n_blocks=2))
    model(torch.randint(3, 64, (2, 8))).sum().backward()  # every parameter now has a .grad
    return model, {n: p.grad.clone() for n, p in model.named_parameters()}


def _check_no_grad(recorder, model, grads):
    names = {getattr(f, "__name__", str(f)) for f, _, _ in recorder.calls}
    assert not {f for f, _, _ in recorder.calls} & GRAD_ACCESS, "a .grad was read or set"
    assert "backward" not in names and not any("grad" == n for n in names)
    computed = [f for f, enabled, tensor in recorder.calls if tensor and enabled]
    assert not computed, f"tensor ops with autograd on: {computed}"
    assert len(recorder.calls) > 10  # the recorder saw the computation
    for n, p in model.named_parameters():
        assert torch.equal(p.grad, grads[n]), n


def test_metrics_run_under_no_grad_and_never_touch_grad():
    model, grads = _model_with_grads()
    mats = [m.weight for m in model.modules() if isinstance(m, (nn.Linear, nn.Embedding))]
    assert len(mats) == 15 and all(w.requires_grad for w in mats)  # the parameters themselves
    with Recorder() as rec:
        raw = layer_metrics(mats)
    assert all(isinstance(v, np.ndarray) and v.shape == (len(mats),) for v in raw.values())
    _check_no_grad(rec, model, grads)


def test_the_scaler_call_reads_weights_only():
    model, grads = _model_with_grads()
    layers = list(layer_matrices(model))
    with Recorder() as rec:
        scales, extras = LALRScaler()(model, layers)
    assert scales.shape == (len(layers),) and np.isfinite(extras["svd"]).all()
    _check_no_grad(rec, model, grads)


def test_median_time_and_threads(monkeypatch):
    ticks = iter([0.0, 1.0, 1.0, 4.0, 4.0, 6.0])  # durations 1, 3, 2
    monkeypatch.setattr(overhead.time, "perf_counter", lambda: next(ticks))
    assert median_time(lambda: None, 3) == 2.0
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="repeats"):
        median_time(lambda: None, 0)
    with pytest.raises(ValueError, match="threads"), torch_threads(0):
        pass


def test_the_table_on_a_tiny_grid_and_the_budget_rule():
    res = overhead_table(depths=(1, 2), sizes=(16, 8), d_model=16, repeats=1, budget_s=None)
    table = res["table"]
    assert list(table.columns) == list(COLUMNS) and res["dropped_sizes"] == []
    assert table[["n_blocks", "n_train"]].values.tolist() == [[1, 8], [2, 8], [1, 16], [2, 16]]
    assert table["n_layers"].tolist() == [9, 15, 9, 15]  # 6 per block + 2 embeddings + head
    np.testing.assert_allclose(table["r"], table["t_metrics_s"] / table["t_epoch_s"])
    assert (table.drop(columns=["n_blocks", "n_layers", "n_train"]) > 0).all().all()
    cut = overhead_table(depths=(1,), sizes=(8, 16, 32), d_model=16, repeats=1, budget_s=1e-9)
    assert cut["dropped_sizes"] == [16, 32] and cut["table"]["n_train"].tolist() == [8]


def test_metric_times_count_the_layers():
    model = TinyTFClassifier(TinyTFConfig(n_blocks=3, d_model=16, d_ff=32))
    times = metric_times(model, repeats=1)
    assert times["n_layers"] == 6 * 3 + 3
    assert min(times.values()) > 0


def _table(r_of, depths=(2, 4, 8, 16), sizes=(250, 1000, 4000)):
    rows = [{"n_blocks": b, "n_layers": 6 * b + 3, "n_train": n, "r": r_of(6 * b + 3, n)}
            for n in sizes for b in depths]
    return pd.DataFrame(rows)


def test_depth_fit_and_smallest_size_on_known_tables():
    fit = depth_fit(_table(lambda L, n: 1e-4 * L**2 * 1000 / n))
    np.testing.assert_allclose(fit["slope"], 2.0, atol=1e-10)
    np.testing.assert_allclose(fit[["ci_low", "ci_high"]].to_numpy(), 2.0, atol=1e-8)
    rng = np.random.default_rng(0)
    noisy = depth_fit(_table(lambda L, n: 0.02 * L**0.5 * np.exp(0.1 * rng.standard_normal())))
    assert (noisy["ci_low"] < noisy["slope"]).all() and (noisy["slope"] < noisy["ci_high"]).all()
    # r = 20 / n: below 0.05 from n = 400 on; measured sizes 250 / 1000 / 4000
    small = smallest_supported_size(_table(lambda L, n: 20.0 / n))
    assert small["n_train_measured"].tolist() == [1000.0] * 4
    np.testing.assert_allclose(small["n_train_crossing"], 400.0)
    never = smallest_supported_size(_table(lambda L, n: 1.0))
    assert never["n_train_measured"].isna().all()
