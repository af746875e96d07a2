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
