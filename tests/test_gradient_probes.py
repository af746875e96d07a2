"""Gradient probes of chapter 05 (`lalr_core.methods.curvature.gradient_probes`; figs 4.15, 4.16).

Oracles: the recorded weights and gradients equal the ``.grad`` of training steps run by hand
(same batches, same optimiser), ``phi_t`` equals a cosine computed by hand on them; a probe's
gradients equal ``.grad`` of hand-drawn batches at the snapshot weights (train and eval mode),
and its ``cos psi_i`` / ``||g_i||`` / ``C`` equal `gradient_statistics.gradient_cohesion` on those
gradients and an explicit numpy computation; a run with the callbacks gives bit-identical
weights, buffers and losses to one without; a probe leaves the global RNG, buffers, ``.grad``
and the train/eval mode as they were; a resumed run gives the uninterrupted results.
"""

import contextlib
import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from lalr_core.core.loop.callbacks import CALLBACKS, FinalWeights
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model, make_optimizer, train
from lalr_core.methods.curvature.gradient_probes import (
    CohesionProbe,
    FilterGradients,
    layer_weight,
    probe_batches,
    probe_positions,
    probe_seed,
)
from lalr_core.methods.curvature.gradient_statistics import gradient_cohesion
from lalr_core.methods.trajectory import TrajectoryCallback

pytestmark = pytest.mark.usefixtures("one_thread")
TINY = {"dataset": "digits", "n_train": 96, "n_val": 0, "n_test": 32, "model": "basic_cnn",
        "width": 0.5, "optimizer": "sgdm", "lr": 0.05, "momentum": 0.9, "batch_size": 16,
        "device": "cpu"}


def _cfg(**changes) -> RunConfig:
    return RunConfig(**{**TINY, "epochs": 2, **changes})


def _model(cfg: RunConfig, state=None) -> nn.Module:
    model = initial_model(cfg)
    if cfg.task.channels_last(cfg):
        model = model.to(memory_format=torch.channels_last)   # as the loop does
    if state is not None:
        model.load_state_dict(state)
    return model


class Snapshot:
    """The model's state after the optimiser step of ``step`` (placed before the probe)."""

    name = "snapshot"

    def __init__(self, step):
        self.step, self.t, self.state = step, 0, None

    def on_step(self, model):
        self.t += 1
        if self.t == self.step:
            self.state = {k: v.detach().clone() for k, v in model.state_dict().items()}


def _flat_grad(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters() if p.requires_grad])


# ----------------------------------------------------------------------------- fig 4.15
def test_recorded_weights_and_gradients_are_those_of_hand_run_steps():
    cfg = _cfg()
    fg, fg2 = FilterGradients("conv2", keep=True), FilterGradients("conv2", every=2, keep=True)
    res = train(cfg, callbacks=[fg, fg2, FinalWeights()], progress=False)
    out, out2 = fg.result(), fg2.result()      # (one result per name: read both directly)
    T = len(res["steps"])
    assert T == 2 * 6 and out["step"].tolist() == list(range(1, T + 1))
    assert out["epoch_end_step"] == {1: 6, 2: 12}
    assert (out["layer"], out["n"], out["filters"]) == ("conv2", 16 * 9, 16)
    # two training steps by hand: same batches (the run's generator), same optimiser
    model = _model(cfg)
    data = cfg.task.load(cfg, torch.device("cpu"))
    opt = make_optimizer(cfg, model)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    batches = cfg.task.batches(cfg, data, gen)
    for k in range(2):
        loss = cfg.task.loss(model, next(batches), contextlib.nullcontext(), gen)[0]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        assert torch.equal(out["weights"][k], model.conv2.weight.detach().contiguous())
        assert torch.equal(out["grads"][k], model.conv2.weight.grad.contiguous())
        opt.step()
    final = res["callbacks"]["weights"]["conv2.weight"]
    assert torch.equal(out["final"], final.contiguous())
    # phi_t (eq. 4.56) per filter, by hand in numpy
    W, G = (x.double().numpy().reshape(T, 16, -1) for x in (out["weights"], out["grads"]))
    F = out["final"].double().numpy().reshape(16, -1)
    diff = F[None] - W
    cos = (diff * G).sum(-1) / (np.linalg.norm(diff, axis=-1) * np.linalg.norm(G, axis=-1))
    np.testing.assert_allclose(out["phi"], cos, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out["dist"], np.linalg.norm(diff, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(out["grad_norm"], np.linalg.norm(G, axis=-1), rtol=1e-12)
    assert out["phi"].shape == (T, 16) and np.isfinite(out["phi"]).all()
    # every = 2: steps 1, 3, 5, ..., the same records
    assert out2["step"].tolist() == list(range(1, T + 1, 2))
    assert torch.equal(out2["grads"], out["grads"][::2])
    np.testing.assert_array_equal(out2["phi"], out["phi"][::2])


# ----------------------------------------------------------------------------- fig 4.16
def _hand_gradients(cfg, state, step, b, d, mode="train"):
    """``d`` gradients by hand: the probe's batches, ``loss.backward()``, ``.grad``."""
    model = _model(cfg, state)
    model.train(mode == "train")
    data = cfg.task.load(cfg, torch.device("cpu"))
    gen = torch.Generator().manual_seed(probe_seed(0, step, b))
    sized, rows = dataclasses.replace(cfg, batch_size=b), []
    while len(rows) < d:
        for X, y in cfg.task.batches(sized, data, gen):
            if len(y) == b and len(rows) < d:
                model.zero_grad(set_to_none=True)
                nn.functional.cross_entropy(model(X), y).backward()
                rows.append(_flat_grad(model).clone())
    return torch.stack(rows)


def test_cohesion_equals_gradient_cohesion_on_hand_drawn_gradients():
    cfg = _cfg(epochs=1)
    snap = Snapshot(step=2)
    probe = CohesionProbe(cfg.key(), batch_sizes=(4, 64), d=3, steps=(2,), keep=True)
    res = train(cfg, callbacks=[snap, probe], progress=False)
    out = res["callbacks"]["cohesion_probe"]
    pts, prb = out["points"], out["probes"]
    assert (out["steps_per_epoch"], out["d"], out["mode"]) == (6, 3, "train")
    assert sorted(out["grads"]) == [(2, 4), (2, 64)] and len(pts) == 6 and len(prb) == 2
    assert out["num_parameters"] == sum(p.numel() for p in initial_model(cfg).parameters())
    for b in (4, 64):   # 64: one full batch per shuffle of the 96 examples, three shuffles
        G = out["grads"][(2, b)]
        hand = _hand_gradients(cfg, snap.state, 2, b, 3)
        torch.testing.assert_close(G, hand, rtol=1e-5, atol=1e-7)
        coh = gradient_cohesion(G)
        rows = pts[pts.batch_size == b].sort_values("i")
        np.testing.assert_allclose(rows["cos"], coh.cos.numpy(), rtol=1e-12)
        np.testing.assert_allclose(rows["norm"], coh.norms.numpy(), rtol=1e-12)
        assert prb[prb.batch_size == b]["cohesion"].item() == pytest.approx(float(coh.value))
        g = G.double().numpy()                       # eq. 4.58 in numpy: mean of cos(g_i, mu)
        mu = g.mean(0)
        cos = g @ mu / (np.linalg.norm(g, axis=1) * np.linalg.norm(mu))
        np.testing.assert_allclose(rows["cos"], cos, rtol=1e-9)
        assert rows["epoch"].tolist() == [2 / 6] * 3
    # eval mode, called directly on the snapshot weights: the running statistics' gradients
    model = _model(cfg, snap.state)
    direct = CohesionProbe(cfg.key(), batch_sizes=(4,), d=3, steps=(2,), mode="eval", keep=True)
    direct.on_train_start(model)
    direct.probe(model, 2)
    torch.testing.assert_close(direct.result()["grads"][(2, 4)],
                               _hand_gradients(cfg, snap.state, 2, 4, 3, mode="eval"),
                               rtol=1e-5, atol=1e-7)


def test_probe_positions_and_batches():
    assert probe_positions(43, 25)[-1] == 43 and len(probe_positions(43, 25)) == 25
    assert probe_positions(3, 25) == [1, 2, 3]
    assert probe_positions(10, 2) == [5, 10]
    cfg = _cfg()
    data = cfg.task.load(cfg, torch.device("cpu"))
    got = probe_batches(cfg, data, 16, 10, torch.Generator().manual_seed(0))
    assert len(got) == 10 and all(len(y) == 16 for _, y in got)
    first = torch.cat([y for _, y in got[:6]])   # one shuffle: 6 disjoint batches of 16
    assert len(first) == 96
    with pytest.raises(ValueError, match="exceeds the training split"):
        probe_batches(cfg, data, 97, 2, torch.Generator().manual_seed(0))


def test_probe_leaves_rng_buffers_grads_and_mode_unchanged():
    cfg = _cfg()
    model = _model(cfg)
    probe = CohesionProbe(cfg.key(), batch_sizes=(4, 16), d=2, steps=(1,))
    probe.on_train_start(model)
    for p in model.parameters():
        p.grad = torch.full_like(p, 0.5)
    buffers = {k: v.clone() for k, v in model.named_buffers()}
    rng = torch.get_rng_state()
    for training in (True, False):
        model.train(training)
        probe.probe(model, 1)
        assert model.training is training
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(v, buffers[k]) for k, v in model.named_buffers())
    assert all(torch.equal(p.grad, torch.full_like(p, 0.5)) for p in model.parameters())
    # a dropout in the probe's forward passes draws from a fork of the global RNG
    drop = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.Dropout(0.5), nn.Linear(16, 10))
    probe = CohesionProbe(cfg.key(), batch_sizes=(8,), d=2, steps=(1,))
    probe.on_train_start(drop)
    rng = torch.get_rng_state()                    # (building the layers drew from it)
    probe.probe(drop, 1)
    assert torch.equal(torch.get_rng_state(), rng)


def test_training_is_bit_identical_with_and_without_the_probes():
    cfg = _cfg()
    plain = train(cfg, callbacks=[FinalWeights()], progress=False)
    probed = train(cfg, callbacks=[FilterGradients("conv2"), TrajectoryCallback(window=1),
                                   CohesionProbe(cfg.key(), batch_sizes=(4, 16), d=3,
                                                 per_epoch=3), FinalWeights()], progress=False)
    a, b = plain["callbacks"]["weights"], probed["callbacks"]["weights"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # buffers too
    pd.testing.assert_frame_equal(plain["steps"], probed["steps"])
    assert len(probed["callbacks"]["cohesion_probe"]["probes"]) == 2 * 3 * 2


def test_resumed_run_gives_the_uninterrupted_results(tmp_path):
    cfg = _cfg(epochs=3)

    def callbacks():
        return [FilterGradients("conv2"), CohesionProbe(cfg.key(), batch_sizes=(4,), d=2,
                                                        per_epoch=2)]

    full = train(cfg, callbacks=callbacks(), progress=False)
    train(cfg, callbacks=callbacks(), progress=False, checkpoint_dir=tmp_path,
          checkpoint_every=2)                          # leaves the checkpoint of epoch 2
    resumed = train(cfg, callbacks=callbacks(), progress=False, checkpoint_dir=tmp_path,
                    checkpoint_every=2)
    a, b = full["callbacks"], resumed["callbacks"]
    for key in ("step", "phi", "dist", "grad_norm"):
        np.testing.assert_array_equal(a["filter_gradients"][key], b["filter_gradients"][key])
    assert a["filter_gradients"]["epoch_end_step"] == b["filter_gradients"]["epoch_end_step"]
    for key in ("points", "probes"):
        pd.testing.assert_frame_equal(a["cohesion_probe"][key], b["cohesion_probe"][key])
    assert len(b["cohesion_probe"]["probes"]) == 3 * 2


def test_settings_are_validated():
    assert CALLBACKS["filter_gradients"] is FilterGradients
    assert CALLBACKS["cohesion_probe"] is CohesionProbe
    cfg = _cfg()
    with pytest.raises(ValueError, match="conv2"):
        layer_weight(initial_model(cfg), "conv9")
    with pytest.raises(ValueError, match="every"):
        FilterGradients("conv2", every=0)
    for bad, match in (({"mode": "test"}, "mode"), ({"d": 1}, "d must"),
                       ({"batch_sizes": ()}, "batch_sizes"), ({"batch_sizes": (4, 4)}, "repeat"),
                       ({"per_epoch": 0}, "per_epoch")):
        with pytest.raises(ValueError, match=match):
            CohesionProbe(cfg.key(), **bad)
    with pytest.raises(ValueError, match="run"):
        CohesionProbe("digits")
