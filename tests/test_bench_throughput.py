"""benchmarks/bench_throughput.py: the split of a profiled step into the FLOP ops and the rest,
which the rows below the target give as their reason."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_throughput as bt  # noqa: E402


def _profiled_ops(model, x) -> set[str]:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        model(x).float().mean().backward()
    return {ev.key for ev in prof.key_averages()}


def test_flop_ops_are_the_convolutions_and_products_only():
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))
    ops = _profiled_ops(net, torch.randn(2, 3, 8, 8))
    flagged = {op for op in ops if bt.is_flop_op(op)}
    assert any("conv" in op for op in flagged) and "aten::convolution_backward" in flagged
    assert flagged & {"aten::addmm", "aten::mm"}
    assert not flagged & {"aten::native_batch_norm", "aten::relu", "aten::threshold_backward",
                          "aten::mean", "aten::add_"}


def _split(model, x):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    return bt.kernel_split(model, opt, (x,), {}, steps=3)


class _Elementwise(torch.nn.Module):
    """A tiny product followed by a lot of elementwise work on a large tensor."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4, bias=False)

    def forward(self, x):
        big = x.repeat(1, 4096)
        for _ in range(8):
            big = torch.tanh(big) * 1.01
        return self.lin(x) + big[:, :4]


def test_the_split_tells_a_product_bound_step_from_an_elementwise_one():
    torch.manual_seed(0)
    with bt.fixed_threads(1):
        dense = _split(torch.nn.Linear(1024, 1024, bias=False), torch.randn(512, 1024))
        elementwise = _split(_Elementwise(), torch.randn(256, 4))
    for s in (dense, elementwise):
        assert 0 < s["flop_ops_s"] <= s["all_ops_s"]
    assert dense["flop_ops_s"] / dense["all_ops_s"] > 0.7
    assert elementwise["flop_ops_s"] / elementwise["all_ops_s"] < 0.1


def test_a_row_below_the_target_names_which_part_is_slow():
    assert "kernels reach 70%" in bt.why_below(0.3, 0.7, 0.55, 0.5)
    slow = bt.why_below(0.2, 0.3, 0.4, 0.5)
    assert "reach only 30%" in slow and "width 0.5" in slow and "40%" in slow
