"""The ``class_subspace_probe`` callback (seed 004 sec. 4.3.6, app. E.3; figs 4.7-4.9, E.1).

Oracles:

* its per-example and per-class terms equal `quasi_newton`'s metrics on inputs computed
  independently (a per-example loop of ``torch.autograd.grad`` and double backward);
* the class gradients it takes inside the loop's backward equal `quasi_newton.class_gradients`
  on the same batch and weights, batch norm in train mode included;
* sampling all P Hessian columns gives the exact ``u``; a linear model has q^LC = 0;
* a run with and without the callback ends with bit-identical weights and buffers;
* a resumed run has the uninterrupted run's records;
* the E.1 helpers on constructed subspaces.
"""

import math

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.data import load_data
from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.train import train
from lalr_core.methods.class_subspace import assumptions, gradients
from lalr_core.methods.class_subspace import probe as sp

pytestmark = pytest.mark.usefixtures("one_thread")

C = 3
TINY = {"dataset": "digits", "n_train": 128, "n_test": 64, "model": "basic_cnn_nobn",
        "width": 0.25, "optimizer": "sgdm", "lr": 0.05, "momentum": 0.9, "batch_size": 64,
        "seed": 0, "deterministic": True}  # bit-identical reruns on CUDA need deterministic kernels


def _mlp(seed: int = 0, bn: bool = False) -> nn.Module:
    torch.manual_seed(seed)
    layers = [nn.Flatten(), nn.Linear(4, 6)] + ([nn.BatchNorm1d(6)] if bn else []) \
        + [nn.Tanh(), nn.Linear(6, C)]
    return nn.Sequential(*layers).double()


def _batch(n: int = 12, seed: int = 1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=gen, dtype=torch.float64), torch.arange(n) % C


def _hessian_loop(model: nn.Module, x: torch.Tensor, k: int) -> torch.Tensor:
    """The Hessian of logit k of one example by double backward, one row at a time."""
    params = list(model.parameters())
    z = model(x.unsqueeze(0))[0, k]
    g = torch.cat([t.reshape(-1) for t in torch.autograd.grad(z, params, create_graph=True)])
    rows = []
    for i in range(len(g)):
        if not g[i].requires_grad:                      # e.g. the output bias: constant
            rows.append(torch.zeros_like(g))
            continue
        parts = torch.autograd.grad(g[i], params, retain_graph=True, allow_unused=True)
        rows.append(torch.cat([(t if t is not None else torch.zeros_like(p)).reshape(-1)
                               for t, p in zip(parts, params)]))
    return torch.stack(rows)


def _hessian_vectorised(model: nn.Module, x: torch.Tensor, k: int) -> torch.Tensor:
    """The same by ``torch.autograd.functional.hessian`` (vectorised double backward)."""
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def z(theta):
        parts = torch.split(theta, [math.prod(s) for s in shapes])
        values = {n: t.view(s) for n, t, s in zip(names, parts, shapes)}
        return torch.func.functional_call(model, values, (x.unsqueeze(0),))[0, k]

    return torch.autograd.functional.hessian(z, flat, vectorize=True)


# ----------------------------------------------------------------------------- the probes
def test_probe_terms_equal_the_quasi_newton_metrics():
    model, (x, y) = _mlp(), _batch()
    model.eval()
    grads = assumptions.own_logit_gradients(model, x, y)                        # per-example loop
    H = torch.stack([_hessian_loop(model, xi, int(yi)) for xi, yi in zip(x, y)])
    torch.testing.assert_close(sp.own_logit_grads(model, x, y), grads)
    lc = sp.logit_curvature(model, x, y)
    lc["step"], lc["epoch"] = 0, 0
    assert sp.q_lc_by_step(lc)["q_lc"].item() == pytest.approx(assumptions.q_lc(grads, H, y), rel=1e-10)
    P = grads.shape[1]
    assert lc["f"].to_numpy() == pytest.approx((grads.abs().sum(1) / P).numpy(), rel=1e-12)
    sl = sp.same_class_similarity(model, x, y)
    sl["step"], sl["epoch"] = 0, 0
    assert sp.q_sl_by_step(sl)["q_sl"].item() == pytest.approx(assumptions.q_sl(grads, y), rel=1e-10)
    # all P columns, in a random order, give the exact mean off-diagonal entry
    full = sp.logit_curvature(model, x, y, columns=P, generator=torch.Generator().manual_seed(3))
    np.testing.assert_allclose(full["u"], lc["u"], rtol=1e-10)
    part = sp.logit_curvature(model, x, y, columns=5, generator=torch.Generator().manual_seed(3))
    assert (part["u"] > 0).all() and np.allclose(part["f"], lc["f"])


def test_a_linear_model_has_no_logit_curvature():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, C)).double()
    x, y = _batch()
    lc = sp.logit_curvature(model, x, y)
    assert (lc["u"] == 0).all() and (lc["ratio"] == 0).all() and (lc["f"] > 0).all()
    sampled = sp.logit_curvature(model, x, y, columns=4, generator=torch.Generator())
    assert (sampled["ratio"] == 0).all()


@pytest.mark.parametrize("bn", [False, True])
def test_class_gradients_from_the_loops_backward_equal_class_gradients(bn):
    model, (x, y) = _mlp(bn=bn), _batch(n=9)
    y[y == 2] = 0                                       # class 2 absent from this batch
    probe = sp.ClassSubspaceProbe({"dataset": "digits"}, sl_every=0, store_every=1)
    probe.on_train_start(model)
    probe.started = True                                # no start-of-run probes here
    state = {k: v.clone() for k, v in model.state_dict().items()}
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    probe.on_backward(model)
    model.load_state_dict(state)                         # the BN statistics of that forward
    G, counts = gradients.class_gradients(model, x, y)         # train mode, as the loop's forward
    present = counts > 0
    step, epoch, classes, q_print, q_pairs = probe.gc_rows[-1]
    assert (step, epoch, classes) == (1, 1, 2)
    assert q_print == pytest.approx(assumptions.q_gc(G[present]), rel=1e-12)
    assert q_pairs == pytest.approx(assumptions.q_gc(G[present], printed=False), rel=1e-12)
    V = probe.dirs[-1]
    expect = (G / G.norm(dim=1, keepdim=True).clamp_min(1e-300)).float()
    torch.testing.assert_close(V, expect)
    assert probe.dir_counts[-1].tolist() == counts.tolist() and V[2].abs().sum() == 0
    # the loss's own gradient is untouched by the extra VJPs
    twin = _mlp(bn=bn)
    ref = torch.autograd.grad(F.cross_entropy(twin(x), y), list(twin.parameters()))
    for p, r in zip(model.parameters(), ref, strict=True):
        assert torch.equal(p.grad, r)


def test_a_loss_that_is_not_cross_entropy_gives_a_nan_row():
    model, (x, _) = _mlp(), _batch()
    probe = sp.ClassSubspaceProbe({"dataset": "digits"}, sl_every=0)
    probe.on_train_start(model)
    probe.started = True
    (model(x) ** 2).mean().backward()
    probe.on_backward(model)
    assert probe.missed == 1 and math.isnan(probe.gc_rows[-1][3]) and not probe.dirs


# ----------------------------------------------------------------------------- in the loop
def _spec(cfg, **kw):
    return dict(data=sp.data_spec(cfg), lc_every_epochs=1, lc_per_class=1, sl_every=1,
                sl_per_class=3, **kw)


def test_the_probe_does_not_change_training_and_records_match_direct_calls():
    cfg = RunConfig(**{**TINY, "model": "basic_cnn"}, epochs=2)          # with batch norm
    from lalr_core.core.loop.callbacks import FinalWeights
    plain = train(cfg, callbacks=[FinalWeights()], progress=False)
    probed = train(cfg, callbacks=[FinalWeights(), sp.ClassSubspaceProbe(**_spec(cfg))],
                   progress=False)
    a, b = plain["callbacks"]["weights"], probed["callbacks"]["weights"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # bit-identical
    assert plain["steps"]["loss"].tolist() == probed["steps"]["loss"].tolist()
    out = probed["callbacks"][sp.NAME]
    steps = len(probed["steps"])
    assert out["gc"]["step"].tolist() == list(range(1, steps + 1)) and out["missed_steps"] == 0
    assert out["directions"].shape == (steps, 10, out["num_parameters"])
    assert sorted(out["lc"]["step"].unique()) == [0, steps // 2, steps]
    assert out["sl"]["step"].nunique() == steps + 1
    # the last records, recomputed from the final weights with quasi_newton's functions
    model = build_model("basic_cnn", in_channels=1, num_classes=10, width=0.25, image_size=8)
    model.load_state_dict(b)
    model = model.double().eval()
    d = load_data("digits", n_train=128, n_test=64)
    idx = torch.tensor(out["probe"]["lc"])
    X, y = d.X_train[idx].double(), d.y_train[idx]
    assert y.tolist() == list(range(10))                 # the first example of each class
    grads = assumptions.own_logit_gradients(model, X, y)
    H = torch.stack([_hessian_vectorised(model, xi, int(yi)) for xi, yi in zip(X, y)])
    last = sp.q_lc_by_step(out["lc"]).iloc[-1]
    assert last["step"] == steps and last["q_lc"] == pytest.approx(assumptions.q_lc(grads, H, y), rel=1e-8)
    idx = torch.tensor(out["probe"]["sl"])
    X, y = d.X_train[idx].double(), d.y_train[idx]
    last = sp.q_sl_by_step(out["sl"]).iloc[-1]
    ref = assumptions.q_sl(assumptions.own_logit_gradients(model, X, y), y)
    assert last["q_sl"] == pytest.approx(ref, rel=1e-8)


def test_a_resumed_run_has_the_uninterrupted_records(tmp_path):
    cfg = RunConfig(**TINY, epochs=3)
    spec = _spec(cfg, lc_columns=50, store_every=2, store_first=1)  # columns: seeded per step
    full = train(cfg, callbacks=[sp.ClassSubspaceProbe(**spec)], progress=False)
    train(cfg, callbacks=[sp.ClassSubspaceProbe(**spec)], progress=False,
          checkpoint_dir=tmp_path, checkpoint_every=2)   # leaves the checkpoint of epoch 2
    resumed = train(cfg, callbacks=[sp.ClassSubspaceProbe(**spec)], progress=False,
                    checkpoint_dir=tmp_path, checkpoint_every=2)
    a, b = full["callbacks"][sp.NAME], resumed["callbacks"][sp.NAME]
    for key in ("lc", "sl", "gc"):
        pd.testing.assert_frame_equal(a[key], b[key])
    np.testing.assert_array_equal(a["directions"], b["directions"])
    np.testing.assert_array_equal(a["direction_steps"], b["direction_steps"])
    np.testing.assert_array_equal(a["direction_counts"], b["direction_counts"])
    assert a["lc"]["step"].nunique() == 4 and a["direction_steps"].tolist() == [1, 2, 4, 6]


# ----------------------------------------------------------------------------- E.1 helpers
def test_rank_and_assignment_series_on_constructed_subspaces():
    gen = torch.Generator().manual_seed(0)
    P, k = 200, 4
    E = torch.linalg.qr(torch.randn(P, k, generator=gen, dtype=torch.float64)).Q.T
    inside = torch.randn(k, k, generator=gen, dtype=torch.float64) @ E     # same span
    outside = torch.randn(k, P, generator=gen, dtype=torch.float64)
    dirs = np.stack([inside.numpy(), outside.numpy(), inside.numpy()]).astype(np.float32)
    counts = np.array([[3] * k, [3] * k, [3, 3, 0, 3]])
    dirs[2, 2] = 0
    ranks = sp.rank_series(dirs, counts, E)
    assert ranks.tolist() == [k, 2 * k, k]
    energy = sp.span_energy_series(dirs, counts, E)
    assert energy[0] == pytest.approx(1.0, abs=1e-6) and energy[2] == pytest.approx(1.0, abs=1e-6)
    assert 0 < energy[1] < 0.2                          # about k / P = 0.02 for random rows
    cos = sp.assignment_series(dirs, counts, E)
    assert cos[1] == pytest.approx(assumptions.assignment_cosine(outside, E)[0], rel=1e-5)
    vals, vecs = sp.top_hessian_eigenvectors(_mlp(), *_batch(), k=3)
    assert vecs.shape == (3, sum(p.numel() for p in _mlp().parameters()))
    assert torch.all(vals[:-1] >= vals[1:])


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="data"):
        sp.ClassSubspaceProbe({"n_train": 3})
    with pytest.raises(ValueError, match="sl_per_class"):
        sp.ClassSubspaceProbe({"dataset": "digits"}, sl_per_class=1)
    with pytest.raises(ValueError, match="dtype"):
        sp.ClassSubspaceProbe({"dataset": "digits"}, dtype="half")
    model, (x, y) = _mlp(), _batch()
    with pytest.raises(ValueError, match="columns"):
        sp.logit_curvature(model, x, y, columns=0)
    assert sp.probe_indices(torch.tensor([2, 0, 2, 1, 0, 2]), 2, 3).tolist() == [1, 4, 3, 0, 2]
