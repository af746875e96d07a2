"""Oracles for `lalr_core.methods.trajectory.batch_scaling` (seed 003, E13; chapter 04)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from lalr_core.methods.trajectory import batch_scaling as bs
from lalr_core.methods import trajectory as tj

TASK = bs.Task(d=4, width=8, n_eval=256)


def test_the_teacher_is_exactly_learnable():
    f_star = bs.teacher(TASK)
    X, y = bs.eval_set(TASK, f_star)
    assert float(bs.relative_error(f_star, X, y)) == 0.0
    # without label noise the teacher is a stationary point of every batch's loss
    Xb = torch.randn(1, 1, 64, TASK.d, generator=torch.Generator().manual_seed(3))
    params = [p.clone().requires_grad_(True) for p in f_star]
    loss = ((bs.forward(params, Xb) - bs.forward(f_star, Xb)) ** 2).mean()
    assert all(float(g.abs().max()) == 0.0 for g in torch.autograd.grad(loss, params))
    # a fresh student is far from it: the relative error is of order 1
    student = bs.init_mlp((1, 1), TASK.d, TASK.width, torch.Generator().manual_seed(1))
    assert 0.2 < float(bs.relative_error(student, X, y)) < 5


def test_adam_update_matches_torch_adam():
    torch.manual_seed(0)
    w = torch.randn(5, dtype=torch.float64)
    ref = w.clone().requires_grad_(True)
    opt = torch.optim.Adam([ref], lr=0.1, betas=(0.8, 0.95), eps=1e-6)
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    for t in range(1, 6):
        g = torch.randn(5, dtype=torch.float64)
        ref.grad = g.clone()
        opt.step()
        w -= 0.1 * bs.adam_update(g, m, v, t, (0.8, 0.95), 1e-6)
        torch.testing.assert_close(w, ref.detach(), rtol=1e-12, atol=1e-12)


def test_adams_first_step_moves_every_coordinate_by_lr():
    r = bs.train_grid(TASK, 16, [1e-3, 1e-2], [0], steps=1, optimizer="adam", target=None,
                      eps=0.0, keep_path=True)
    moved = np.abs(r.path[1] - r.path[0])                      # [S, L, P]
    np.testing.assert_allclose(moved[0, 0], 1e-3, rtol=1e-4)
    np.testing.assert_allclose(moved[0, 1], 1e-2, rtol=1e-4)
    np.testing.assert_allclose(r.step_over_lr, 1.0, rtol=1e-6)
    # one step is a straight path: psi = 1
    np.testing.assert_allclose(r.psi_end, 1.0, rtol=1e-6)


def test_the_grid_equals_each_run_alone_and_psi_is_the_trajectory_modules():
    kw = {"steps": 40, "target": None, "keep_path": True}
    grid = bs.train_grid(TASK, 8, [0.05, 0.2], [0, 1], **kw)
    for i, s in enumerate((0, 1)):
        for j, lr in enumerate((0.05, 0.2)):
            alone = bs.train_grid(TASK, 8, [lr], [s], **kw)
            np.testing.assert_allclose(grid.path[:, i, j], alone.path[:, 0, 0], atol=1e-5)
            ref = tj.path_metrics(grid.path[:, i, j].astype(np.float64))["psi"]
            assert grid.psi_end[i, j] == pytest.approx(ref[-1], rel=1e-6)
    # a seed's runs share their initialisation
    np.testing.assert_array_equal(grid.path[0, 0, 0], grid.path[0, 0, 1])
    assert not np.array_equal(grid.path[0, 0, 0], grid.path[0, 1, 0])


def test_seeds_reproduce():
    a = bs.sweep(TASK, [8, 32], [0.05, 0.2], [0, 1], steps=300, target=0.3)
    b = bs.sweep(TASK, [8, 32], [0.05, 0.2], [0, 1], steps=300, target=0.3)
    pd.testing.assert_frame_equal(a, b)
    assert np.isfinite(a["steps_to_target"]).any()


def test_a_diverging_run_is_nan_and_leaves_the_others_alone():
    kw = {"steps": 30, "target": None}
    grid = bs.train_grid(TASK, 8, [0.1, 1e4], [0], **kw)
    alone = bs.train_grid(TASK, 8, [0.1], [0], **kw)
    assert grid.diverged.tolist() == [[False, True]]
    assert np.isnan([grid.psi_end[0, 1], grid.error_end[0, 1], grid.step_over_lr[0, 1]]).all()
    assert grid.error_end[0, 0] == pytest.approx(alone.error_end[0, 0], rel=1e-5)


def test_steps_to_target_is_at_the_target_and_psi_at_that_step():
    r = bs.train_grid(TASK, 32, [0.2], [0], steps=2000, target=0.2, keep_path=True)
    t = int(r.steps_to_target[0, 0])
    f_star = bs.teacher(TASK)
    X, y = bs.eval_set(TASK, f_star)
    shapes = [p.shape[2:] for p in bs.init_mlp((1, 1), TASK.d, TASK.width, torch.Generator())]

    def unflat(row):
        out, k = [], 0
        for sh in shapes:
            n = math.prod(sh)
            out.append(torch.from_numpy(row[k:k + n].copy()).reshape(1, 1, *sh))
            k += n
        return out

    err = [float(bs.relative_error(unflat(r.path[k, 0, 0]), X, y)) for k in (t - 1, t)]
    assert err[1] <= 0.2 < err[0]   # t <= 32: every step is evaluated
    ref = tj.path_metrics(r.path[:, 0, 0].astype(np.float64))["psi"][t - 1]
    assert r.psi_at_target[0, 0] == pytest.approx(ref, rel=1e-6)


def test_larger_batches_need_fewer_steps():
    # The linear-scaling regime on the task itself: with label noise the median steps to the
    # target fall with B (a factor 8 apart, so the seeds' spread cannot reverse them).
    task = bs.Task()
    runs = bs.sweep(task, [8, 64, 512], [0.05, 0.1, 0.2, 0.4], range(3), steps=3000, target=0.1)
    best = bs.best_lr(runs).groupby("batch")["steps_to_target"].median()
    assert best.notna().all() and best.is_monotonic_decreasing, best.to_dict()
    assert best[8] > 3 * best[512]


def test_best_lr_and_slopes():
    runs = pd.DataFrame({"batch": [8] * 3 + [16] * 3, "seed": 0, "lr": [0.1, 0.2, 0.4] * 2,
                         "steps_to_target": [50, 40, np.nan, 30, 30, 20],
                         "psi_at_target": [0.1, 0.2, np.nan, 0.3, 0.4, 0.5]})
    best = bs.best_lr(runs)
    assert best[["lr", "steps_to_target", "psi_at_target"]].values.tolist() == [
        [0.2, 40, 0.2], [0.4, 20, 0.5]]
    B = np.array([8, 16, 32, 64])
    assert bs.loglog_slope(B, 100 / B) == pytest.approx(-1.0)
    assert bs.loglog_slope(B, np.full(4, 7.0)) == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(bs.loglog_slope([8, 16], [np.nan, 3.0]))
    table = pd.DataFrame({"batch": np.tile(B, 2), "seed": np.repeat([0, 1], 4),
                          "steps_to_target": np.r_[800 / B, 50 + 0 * B]})
    np.testing.assert_allclose(bs.slopes_per_seed(table, [8, 16, 32]), [-1.0, 0.0], atol=1e-12)


def test_evaluation_schedule():
    steps = [t for t in range(1, 5000) if bs.due(t)]
    assert steps[:32] == list(range(1, 33))
    # a run that arrives just after an evaluated step is seen at the next one: at most 1/32 late
    prev, gaps = np.array(steps[:-1]), np.diff(steps)
    assert ((gaps - 1) / (prev + 1) <= 1 / 32).all()


@pytest.mark.parametrize("kw, match", [
    ({"batch": 0}, "batch"), ({"lrs": [0.1, -1]}, "lrs"), ({"seeds": [0, 0]}, "seeds"),
    ({"steps": 0}, "steps"), ({"optimizer": "lbfgs"}, "optimizer"), ({"target": 0}, "target"),
    ({"stop_factor": 0.5}, "stop_factor"),
])
def test_bad_arguments_raise(kw, match):
    args = {"batch": 8, "lrs": [0.1], "seeds": [0], "steps": 5, **kw}
    with pytest.raises(ValueError, match=match):
        bs.train_grid(TASK, args.pop("batch"), args.pop("lrs"), args.pop("seeds"), **args)
    with pytest.raises(ValueError, match="width"):
        bs.Task(width=0)
