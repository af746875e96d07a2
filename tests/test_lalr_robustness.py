"""X-L8 (`lalr_core.methods.layer_lr.lalr.robustness`): an outlier layer against LALR's min-max scales,
on constructed layers whose raw metrics are known exactly: which scales move (SVD: the others'
only when the outlier is or becomes the min or max; CS: none; CE: all), X-L8's numbers
(mean |Delta scale|, ranges, shrink) by hand, and the falsification rule."""

import numpy as np
import pytest
import torch
from torch import nn

from lalr_core.methods.pretrained.text import TinyTFClassifier, TinyTFConfig
from lalr_core.methods.layer_lr.lalr.grouping import layer_matrices
from lalr_core.methods.layer_lr.lalr.method import LALR
from lalr_core.methods.layer_lr.lalr.robustness import CS_TOL, outlier_robustness

pytestmark = pytest.mark.usefixtures("one_thread")  # 2 threads stall on the shared cores


class Stack(nn.Module):
    """Bias-free linear layers l0, l1, ... with the given weights."""

    def __init__(self, weights):
        super().__init__()
        for k, w in enumerate(weights):
            layer = nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=w.dtype)
            layer.weight.data.copy_(w)
            self.add_module(f"l{k}", layer)


def _diag_stack(means=(1.0, 2.0, 3.0, 4.0)):
    """Layer k = m_k I_3: its raw SVD metric (mean non-zero singular value) is m_k."""
    return Stack([m * torch.eye(3, dtype=torch.float64) for m in means])


def _svd(res):
    layers = res["layers"]
    return layers[layers.phase == "svd"].set_index("layer")


def test_svd_others_move_exactly_when_the_outlier_sets_the_min_or_max():
    # l1 (m = 2) times 10 -> m = (1, 20, 3, 4): the outlier becomes the max
    res = outlier_robustness(_diag_stack(), layer="l1", factor=10.0)
    svd = _svd(res)
    np.testing.assert_allclose(svd["raw_after"], [1, 20, 3, 4])
    u_before, u_after = np.array([0, 1 / 3, 2 / 3, 1]), np.array([0, 1, 2 / 19, 3 / 19])
    np.testing.assert_allclose(svd["scale_before"], 1 - u_before, atol=1e-12)
    np.testing.assert_allclose(svd["scale_after"], 1 - u_after, atol=1e-12)
    row = res["summary"].set_index("phase").loc["svd"]
    others = [0, 2, 3]
    assert row["mean_abs_dscale"] == pytest.approx(np.abs(u_after - u_before)[others].mean())
    assert (row["range_before"], row["range_after"]) == pytest.approx((1.0, 3 / 19))
    assert row["range_shrink"] == pytest.approx(16 / 19) and res["falsified"]
    # a factor that leaves l1 inside (1, 4): min and max unchanged, the others' u too
    inside = outlier_robustness(_diag_stack(), layer="l1", factor=1.2)
    assert inside["summary"].set_index("phase").loc["svd", "max_abs_dscale"] < 1e-12
    assert not inside["falsified"]
    # the outlier already the max (l3) or the min (l0), by a small factor: the others move
    for layer, factor, lo, hi in (("l3", 1.2, 1.0, 4.8), ("l0", 1.2, 1.2, 4.0)):
        svd = _svd(outlier_robustness(_diag_stack(), layer=layer, factor=factor))
        raw = svd["raw_after"].to_numpy()
        np.testing.assert_allclose(svd["scale_after"], 1 - (raw - lo) / (hi - lo), atol=1e-12)


def test_cs_scales_of_every_layer_are_invariant_whatever_the_outliers_rank():
    gen = torch.Generator().manual_seed(0)
    same = [torch.randn(6, 5, generator=gen, dtype=torch.float64) for _ in range(5)]
    mixed = same[:3] + [torch.randn(4, 9, generator=gen, dtype=torch.float64),
                        torch.randn(2, 7, generator=gen, dtype=torch.float64)]
    for weights in (same, mixed):  # whole vectors, and the truncated ones
        model = Stack(weights)
        for layer in ("l0", "l2", "l4"):
            for factor in (1e-3, 10.0, 1e4):
                res = outlier_robustness(model, layer=layer, factor=factor)
                cs = res["layers"][res["layers"].phase == "cs"]
                np.testing.assert_allclose(cs["raw_after"], cs["raw_before"], atol=1e-12)
                assert (cs["scale_after"] - cs["scale_before"]).abs().max() < CS_TOL
                assert res["cs_unchanged"]


def test_ce_moves_the_others_through_the_shared_histogram_bins():
    gen = torch.Generator().manual_seed(1)
    model = Stack([torch.randn(8, 8, generator=gen) for _ in range(4)])
    row = outlier_robustness(model, layer="l2")["summary"].set_index("phase").loc["ce"]
    assert row["max_abs_draw"] > 0.1  # the others' raw CE changes, not only their u


def test_defaults_and_bad_arguments():
    torch.manual_seed(0)
    model = TinyTFClassifier(TinyTFConfig())
    names = list(layer_matrices(model))
    before = {n: p.clone() for n, p in model.state_dict().items()}
    res = outlier_robustness(model)
    assert res["outlier"] == names[len(names) // 2] == "encoder.blocks.0.ff2"
    assert set(res["summary"]["phase"]) == {"svd", "ce", "cs"} and res["cs_unchanged"]
    assert len(res["layers"]) == 3 * len(names)
    assert all(torch.equal(before[n], p) for n, p in model.state_dict().items())  # untouched
    floored = outlier_robustness(model, method=LALR(s_min=0.5))
    assert floored["layers"]["scale_after"].min() >= 0.5
    for kwargs, match in (({"layer": "nope"}, "no LALR layer"), ({"factor": 0}, "factor"),
                          ({"factor": -10.0}, "factor")):
        with pytest.raises(ValueError, match=match):
            outlier_robustness(model, **kwargs)
    with pytest.raises(ValueError, match=">= 3 layers"):
        outlier_robustness(Stack([torch.eye(2), torch.eye(2)]))
