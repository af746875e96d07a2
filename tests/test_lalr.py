"""LALR's metrics, normalisation, scale rules, phases and grouping (seed 000, our executable specification).

Oracles: matrices built with known singular values (U diag(s) V^T) and numpy's SVD / rank;
numpy histograms, softmaxes and per-pair Python loops for CE and CS; closed forms (CE(p, p)
= H(p), cosine invariance under scaling, explicit min-max values); a hand-listed grouping.
"""

import doctest

import numpy as np
import pytest
import torch
from torch import nn

from lalr_core.methods.layer_lr import lalr
from lalr_core.methods.layer_lr.lalr import (
    aw_misalignment,
    ce_metric,
    cross_entropy_matrix,
    cs_metric,
    floor_scale,
    grouping,
    layer_matrices,
    layer_metrics,
    method,
    metrics,
    minmax,
    module_layers,
    param_groups,
    phase_of,
    phase_scale,
    scales,
    schedule,
    singular_values,
    svd_metric,
    weight_distributions,
)

pytestmark = pytest.mark.usefixtures("one_thread")
EPS = 1e-8


def with_singular_values(m, n, s, seed=0):
    """`[m, n]` float64 ``U diag(s) V^T`` with random orthogonal U, V (s padded with zeros)."""
    g = torch.Generator().manual_seed(seed)
    U, _ = torch.linalg.qr(torch.randn(m, m, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
    S = torch.zeros(m, n, dtype=torch.float64)
    S[range(len(s)), range(len(s))] = torch.tensor(s, dtype=torch.float64)
    return U @ S @ V.T


def random_layers(shapes, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=g, dtype=dtype) * (k + 1) * 0.1
            for k, s in enumerate(shapes)]


# ----------------------------------------------------------------------------- references
def ref_distributions(ws, variant, bins=64, eps=None):
    """numpy: one distribution per layer, built independently of the library."""
    eps = EPS if eps is None else eps
    arrs = [w.numpy().ravel() for w in ws]
    if variant == "hist":
        lo, hi = min(a.min() for a in arrs), max(a.max() for a in arrs)
        P = [np.histogram(a, bins=bins, range=(lo, hi))[0] / a.size for a in arrs]
    else:
        n = min(a.size for a in arrs)
        if variant == "softmax_trunc":
            P = [np.exp(a[:n] - a[:n].max()) / np.exp(a[:n] - a[:n].max()).sum() for a in arrs]
        else:
            P = [np.abs(a[:n]) / np.abs(a[:n]).sum() for a in arrs]
    return [(p + eps) / (p + eps).sum() for p in P]


def ref_ce(ws, variant, bins=64, eps=None):
    """Per-pair loop: mean over j != i of -sum p_i log p_j."""
    P = ref_distributions(ws, variant, bins, eps)
    L = len(P)
    return np.array([sum(-(P[i] * np.log(P[j])).sum() for j in range(L) if j != i) / (L - 1)
                     for i in range(L)])


def ref_cs(ws, variant):
    """Per-pair loop of the CS rule: same-numel partners (whole vectors), else all partners
    truncated to the common minimum length."""
    arrs = [w.numpy().ravel() for w in ws]
    n = min(a.size for a in arrs)

    def cos(a, b):
        return a @ b / np.linalg.norm(a) / np.linalg.norm(b)

    out = []
    for i, a in enumerate(arrs):
        same = [j for j, b in enumerate(arrs) if j != i and b.size == a.size]
        if variant == "same_numel_else_trunc" and same:
            out.append(np.mean([cos(a, arrs[j]) for j in same]))
        else:
            out.append(np.mean([cos(a[:n], arrs[j][:n]) for j in range(len(arrs)) if j != i]))
    return np.array(out)


# ----------------------------------------------------------------------------- SVD
def test_svd_variants_on_known_singular_values():
    s = [5.0, 3.0, 2.0, 0.0, 0.0]           # rank 3 of 5
    ws = [with_singular_values(5, 7, s, seed=1), with_singular_values(7, 5, s, seed=2),
          with_singular_values(5, 7, [4.0, 4.0, 1.0, 1.0, 0.5], seed=3)]   # batched: same shape
    assert svd_metric(ws) == pytest.approx([10 / 3, 10 / 3, 10.5 / 5], rel=1e-12)
    assert svd_metric(ws, "all_mean") == pytest.approx([2.0, 2.0, 2.1], rel=1e-12)
    assert svd_metric(ws, "top_Lminus1") == pytest.approx([2.5, 2.5, 2.5], rel=1e-12)
    for w, sv in zip(ws, singular_values(ws)):    # numpy's SVD and rank rule
        ref = np.linalg.svd(w.numpy(), compute_uv=False)
        assert sv.numpy() == pytest.approx(ref, abs=1e-12)
        r = np.linalg.matrix_rank(w.numpy())
        assert metrics.numerical_rank(sv, tuple(w.shape), torch.float64) == r


def test_float32_and_wide_matrices():
    """A wide matrix goes to LAPACK transposed; float32 uses float32's rank tolerance."""
    ws = [w.float() for w in [with_singular_values(6, 40, [9.0, 4.0, 1.0, 0.1, 0.0, 0.0]),
                              with_singular_values(40, 6, [2.0] * 6)]]
    assert svd_metric(ws) == pytest.approx([14.1 / 4, 2.0], rel=1e-5)  # the zeros are rank-cut
    assert svd_metric(ws, "all_mean") == pytest.approx([14.1 / 6, 2.0], rel=1e-5)


def test_svd_rejects_what_it_cannot_measure():
    with pytest.raises(ValueError, match="bug 5"):
        svd_metric([torch.ones(1, 4), torch.eye(3)], "top_Lminus1")
    with pytest.raises(ValueError, match=r"\[out, in\] matrix"):
        svd_metric([torch.ones(4)])
    with pytest.raises(ValueError, match="svd_variant"):
        svd_metric([torch.eye(2)], "mean")
    assert svd_metric([torch.zeros(3, 3)]).tolist() == [0.0]         # rank 0


# ----------------------------------------------------------------------------- CE
@pytest.mark.parametrize("variant", metrics.CE_VARIANTS)
def test_ce_equals_the_per_pair_loop(variant):
    ws = random_layers([(8, 6), (6, 8), (5, 4), (3, 3), (10, 10)])
    assert ce_metric(ws, variant) == pytest.approx(ref_ce(ws, variant), rel=1e-10)


def test_ce_bins_and_eps_are_the_open_choices():
    ws = random_layers([(8, 6), (6, 8), (5, 4)])
    coarse = ce_metric(ws, "hist", bins=16, eps=1e-3)
    assert coarse == pytest.approx(ref_ce(ws, "hist", 16, 1e-3), rel=1e-10)
    assert not np.allclose(coarse, ce_metric(ws))
    assert lalr.layer_metrics(ws, ce_bins=16, ce_eps=1e-3)["ce"] == pytest.approx(coarse)
    for bad in ({"ce_bins": 1}, {"ce_bins": 2.5}, {"ce_eps": 0.0}, {"ce_eps": 1.0}):
        with pytest.raises(ValueError, match="ce_"):
            lalr.LALR(**bad)
    assert lalr.LALR(ce_bins=16, ce_eps=1e-3).scaler().ce_choices == {"ce_bins": 16, "ce_eps": 1e-3}
    assert lalr.LALR() == lalr.LALR(ce_bins=metrics.CE_BINS, ce_eps=metrics.CE_EPS)


def test_ce_of_identical_layers_is_their_entropy():
    a, b = random_layers([(16, 16), (16, 16)], seed=3)
    ws = [a, a.clone(), b]
    P = weight_distributions(ws)
    assert P.shape == (3, metrics.CE_BINS) and P.sum(1).numpy() == pytest.approx(1.0)
    C = cross_entropy_matrix(P)
    p0 = ref_distributions(ws, "hist")[0]
    entropy = -(p0 * np.log(p0)).sum()
    assert float(C[0, 1]) == pytest.approx(entropy, rel=1e-12)
    assert float(C[0, 0]) == pytest.approx(entropy, rel=1e-12)
    m = ce_metric(ws)
    assert m[0] == pytest.approx(m[1], rel=1e-14)
    assert m[0] == pytest.approx((entropy + float(C[0, 2])) / 2, rel=1e-12)
    assert (np.diag(C.numpy()) <= C.numpy().min(axis=1) + 1e-12).all()  # Gibbs: H(p) <= CE(p,q)


# ----------------------------------------------------------------------------- CS
@pytest.mark.parametrize("variant", metrics.CS_VARIANTS)
def test_cs_equals_the_per_pair_loop_and_ignores_scale(variant):
    ws = random_layers([(8, 6), (6, 8), (8, 6), (5, 4), (3, 3)])   # numel 48 x3, 20, 9
    ws[2] = ws[2] + 0.5 * ws[0]                                    # correlated with layer 0
    m = cs_metric(ws, variant)
    assert m == pytest.approx(ref_cs(ws, variant), rel=1e-10, abs=1e-14)
    scaled = [w * c for w, c in zip(ws, [7.3, 1.0, 0.01, 250.0, 1.0])]
    assert cs_metric(scaled, variant) == pytest.approx(m, rel=1e-12, abs=1e-14)


def test_cs_same_numel_uses_whole_vectors():
    a, b = random_layers([(4, 5), (2, 3)], seed=4)
    ws = [a, a.clone() * 3.0, b]           # a's twin: cosine 1; b has no same-numel partner
    m = cs_metric(ws)
    assert m[:2] == pytest.approx([1.0, 1.0], rel=1e-14)
    flat = [w.reshape(-1)[:6].numpy() for w in ws]                 # b: truncated to 6
    cos = [flat[2] @ f / np.linalg.norm(flat[2]) / np.linalg.norm(f) for f in flat[:2]]
    assert m[2] == pytest.approx(np.mean(cos), rel=1e-12)


# ----------------------------------------------------------------------------- all three
def test_identical_layers_give_equal_metrics_and_the_guarded_half():
    w = random_layers([(6, 6)], seed=5)[0]
    raw = layer_metrics([w, w.clone(), w.clone()])
    for m in ("svd", "ce", "cs"):
        assert np.ptp(raw[m]) < 1e-12
        u, s = scales(raw, m)
        assert u.tolist() == [0.5] * 3 and s.tolist() == [0.5] * 3
        u, s = scales(raw, m, normalise="literal")
        assert np.isnan(u).all() and np.isnan(s).all()             # bug 7 as written
    assert raw["cs"] == pytest.approx([1.0] * 3)


def test_one_layer_has_no_pairwise_metric():
    raw = layer_metrics([torch.eye(3, dtype=torch.float64) * 2])
    assert raw["svd"].tolist() == [2.0] and np.isnan(raw["ce"]).all() and np.isnan(raw["cs"]).all()
    for m in ("svd", "ce", "cs"):
        assert scales(raw, m)[1].tolist() == [0.5]


def test_metrics_never_build_a_graph(monkeypatch):
    seen = []
    for mod, fn in ((torch.linalg, "svdvals"), (torch, "histc")):
        orig = getattr(mod, fn)

        def spy(*a, _orig=orig, **k):
            seen.append(torch.is_grad_enabled())
            return _orig(*a, **k)
        monkeypatch.setattr(mod, fn, spy)
    net = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    raw = layer_metrics(list(layer_matrices(net).values()))
    assert seen and not any(seen)
    assert all(p.grad is None for p in net.parameters()) and np.isfinite(raw["svd"]).all()


# ----------------------------------------------------------------------------- schedule
def test_minmax_guarded_and_literal():
    assert minmax([2.0, 4.0, 3.0]).tolist() == [0.0, 1.0, 0.5]
    assert minmax([1.0, 1.0 + 1e-13]).tolist() == [0.5, 0.5]          # spread < 1e-12
    assert minmax([1.0, 1.0 + 1e-9]).tolist() == pytest.approx([0.0, 1.0])
    assert np.isnan(minmax([1.0, 1.0], guarded=False)).all()
    assert np.isnan(minmax([3.0], guarded=False)).all() and minmax([3.0]).tolist() == [0.5]
    with pytest.raises(ValueError, match="non-empty 1-D"):
        minmax([])


def test_scale_rules_floor_and_phases():
    u = np.array([0.0, 0.25, 1.0])
    assert phase_scale(u, "svd").tolist() == [1.0, 0.75, 0.0]
    assert phase_scale(u, "ce").tolist() == [1.0, 0.75, 0.0]
    assert phase_scale(u, "cs").tolist() == [0.0, 0.25, 1.0]
    assert phase_scale(u, "cs", "text20").tolist() == [1.0, 0.75, 0.0]
    assert floor_scale([0.0, 0.5, 1.0], 0.2).tolist() == pytest.approx([0.2, 0.6, 1.0])
    assert [phase_of(e) for e in range(7)] == ["svd", "ce", "cs", "svd", "ce", "cs", "svd"]
    assert [phase_of(e, ("cs", "svd", "ce")) for e in range(4)] == ["cs", "svd", "ce", "cs"]
    assert [phase_of(e, ("svd",)) for e in range(3)] == ["svd"] * 3
    raw = {"svd": np.array([1.0, 2.0, 3.0]), "ce": np.array([3.0, 1.0, 2.0]),
           "cs": np.array([0.1, 0.3, 0.2])}
    assert scales(raw, "ce", s_min=0.5)[1].tolist() == pytest.approx([0.5, 1.0, 0.75])
    assert scales(raw, "cs")[1].tolist() == pytest.approx([0.0, 1.0, 0.5])
    for bad, match in ((lambda: phase_of(0, ("svd", "fisher")), "fisher"),
                       (lambda: phase_of(0, "svd"), "non-empty tuple"),
                       (lambda: phase_scale(u, "cs", "paper"), "cs_direction"),
                       (lambda: floor_scale(u, 1.5), "s_min"),
                       (lambda: scales(raw, "svd", normalise="robust"), "normalise")):
        with pytest.raises(ValueError, match=match):
            bad()


# ----------------------------------------------------------------------------- grouping
class Block(nn.Module):
    """Embedding, positional tensor, attention, LayerNorm, conv and a classifier head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 8)
        self.pos = nn.Parameter(torch.zeros(1, 5, 8))
        self.attn = nn.MultiheadAttention(8, 2)
        self.norm = nn.LayerNorm(8)
        self.conv = nn.Conv1d(8, 4, 3)
        self.head = nn.Linear(4, 2)
        self.head_tied = nn.Linear(8, 11, bias=False)
        self.head_tied.weight = self.embed.weight            # tied to the embedding


def test_module_rule_lists_the_layers_and_their_params():
    net = Block()
    names, params, mats, rest = module_layers(net)
    # the root's own parameter (pos) comes first: named_modules starts with the root
    assert names == ["pos", "embed", "attn.in_proj_weight", "attn.out_proj", "conv", "head"]
    assert [tuple(m.shape) for m in mats] == [(5, 8), (11, 8), (24, 8), (8, 8), (4, 24), (2, 4)]
    by_id = {id(p): k for k, ps in enumerate(params) for p in ps}
    assert by_id[id(net.attn.in_proj_bias)] == 2                  # follows in_proj_weight
    assert by_id[id(net.conv.bias)] == 4 and by_id[id(net.head.bias)] == 5
    assert by_id[id(net.head_tied.weight)] == 1                   # tied: counted once, at embed
    assert {id(p) for p in rest} == {id(net.norm.weight), id(net.norm.bias)}
    every = [id(p) for ps in params for p in ps] + [id(p) for p in rest]
    assert sorted(every) == sorted(id(p) for p in net.parameters())   # each exactly once


def test_param_groups_exclude_and_cover_every_parameter():
    net = Block()
    groups = param_groups(net, 0.1, exclude=("head", "embed"))
    assert [g["layer"] for g in groups] == ["pos", "attn.in_proj_weight", "attn.out_proj",
                                            "conv", None]
    assert {id(p) for p in groups[-1]["params"]} == {id(p) for p in (
        net.head.weight, net.head.bias, net.embed.weight, net.norm.weight, net.norm.bias)}
    assert all(g["lr"] == 0.1 for g in groups)
    assert sum(len(g["params"]) for g in groups) == len(list(net.parameters()))
    with pytest.raises(ValueError, match="match no layer"):
        param_groups(net, 0.1, exclude=("classifier",))
    with pytest.raises(ValueError, match="grouping"):
        param_groups(net, 0.1, grouping="layer")
    aw = param_groups(net, 0.1, grouping="named_param_AW")
    assert [g["layer"] for g in aw] == [n for n, _ in net.named_parameters()]


def test_as_written_grouping_gives_weights_another_layers_metric():
    """Bug 3 on Linear-ReLU-Linear-ReLU-Linear with biases: 0.bias swallows 2.weight's metric,
    2.weight gets 4.weight's, and 4.weight (with both trailing biases) gets none."""
    net = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 5), nn.ReLU(), nn.Linear(5, 3))
    table = aw_misalignment(net)
    assert table["param"].tolist() == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight",
                                       "4.bias"]
    assert table["metric_of"][:3].tolist() == ["0.weight", "2.weight", "4.weight"]
    assert table["metric_of"][3:].isna().all()                   # zip stopped: no metric
    assert table["applied"].tolist() == [True, False, True, False, False, False]
    assert table["own"].tolist() == [True, False, False, False, False, False]
    assert list(layer_matrices(net, "named_param_AW")) == ["0.weight", "2.weight", "4.weight"]
    assert list(layer_matrices(net)) == ["0", "2", "4"]


def test_docstring_examples():
    for mod in (lalr, metrics, schedule, grouping, method):
        assert doctest.testmod(mod).failed == 0
