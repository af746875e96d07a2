"""Chapter-06 probes recorded during real training runs."""

import numpy as np

from lalr_core.chapters.ch06_orthogonal_sgdm.probes import FilterCosineProbe, RepresentationProbe, SymmetryProbe, ZeroGradProbe
from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.orthogonal.transform import GradTransform
from lalr_core.core.loop.train import train

TINY = dict(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16,
            model="basic_cnn", batch_size=16, epochs=2, device="cpu", lr=0.01)


def test_probes_record_during_training():
    probes = [FilterCosineProbe(["conv2"], every=2), RepresentationProbe(["bn1", "bn3"], every=2),
              ZeroGradProbe("conv2"), SymmetryProbe("conv2", every=1, seed=3)]
    out = train(RunConfig(**TINY, methods=(GradTransform("orth"),)), callbacks=probes, progress=False)
    cb = out["callbacks"]
    steps = 2 * 64 // 16
    assert list(cb["filter_cos"]["step"]) == [0, 2, 4, 6, 8]
    assert cb["filter_cos"]["n_pairs"].iloc[0] == 32 * 31 // 2 and cb["filter_cos"]["fan_in"].iloc[0] == 288
    assert set(cb["representations"]["step"]) == {0, 2, 4, 6} and set(cb["representations"]["layer"]) == {"bn1", "bn3"}
    assert len(cb["representations"]) == 4 * 2 * 10   # 4 sampled batches x 2 layers x 10 samples
    assert list(cb["zero_grad"]["step"]) == list(range(1, steps + 1))
    assert (cb["zero_grad"]["below_eps"] >= cb["zero_grad"]["zero"]).all()
    sym = cb["symmetry"]
    assert sym["phi"].shape == (steps, 32) == sym["phi_perm"].shape and sym["fan_in"] == 288
    assert np.all(np.abs(sym["phi"]) <= 1 + 1e-9)


def test_symmetry_probe_last_sgd_step_points_at_the_solution():
    """Plain SGD (no momentum, no wd): theta_tau - theta_{tau-1} = -lr * g, so phi = -1."""
    out = train(RunConfig(**TINY, optimizer="sgd", wd=0.0), callbacks=[SymmetryProbe("conv2")],
                progress=False)
    np.testing.assert_allclose(out["callbacks"]["symmetry"]["phi"][-1], -1.0, atol=1e-6)


def test_symmetry_probe_own_update_null_leaves_step_t_out():
    """Plain SGD: phi from theta_t is -1 on the last batch (its own step is all of theta_tau -
    theta_t); phi_ahead with skip k starts from theta_{t+k}, so g_t's step is not in it."""
    steps = 2 * 64 // 16
    out = train(RunConfig(**TINY, optimizer="sgd", wd=0.0),
                callbacks=[SymmetryProbe("conv2", skip=2)], progress=False)
    sym = out["callbacks"]["symmetry"]
    assert sym["skip"] == 2 and list(sym["steps_ahead"]) == list(range(steps - 2))
    assert sym["phi_ahead"].shape == (steps - 2, 32) == sym["phi_perm_ahead"].shape
    assert np.all(np.abs(sym["phi_ahead"]) <= 1 + 1e-9)
    # the batch two before the end: theta_tau - theta_{t+2} is the last two steps' updates,
    # without g_t's own; so phi_ahead there is not the -1 of the own-update identity
    assert not np.allclose(sym["phi_ahead"][-1], -1.0, atol=1e-3)
    assert "phi_ahead" not in train(RunConfig(**TINY), callbacks=[SymmetryProbe("conv2")],
                                    progress=False)["callbacks"]["symmetry"]


def test_symmetry_probe_skip_must_be_a_multiple_of_every():
    import pytest

    with pytest.raises(ValueError, match="multiple of every"):
        SymmetryProbe("conv2", every=2, skip=3)
