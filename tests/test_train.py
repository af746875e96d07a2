"""Training loop: schedules (closed forms), one SGD step vs a hand computation, determinism,
divergence as a result, resume after a kill, and the task protocol's optional hooks (per-step
lr, group lr scales, per-epoch start, max_steps, checkpoints of another run refused)."""

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lalr_core.core.data import load_data
from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.tasks import ImageClassification
from lalr_core.core.loop.train import lr_factor, train
from lalr_core.methods.trajectory import TrajectoryCallback

TINY = dict(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=16, n_test=16, model="mlp",
            batch_size=16, epochs=3, device="cpu", eval_batch_size=32)


def test_lr_schedules():
    multi = RunConfig(**{**TINY, "epochs": 10}, schedule="multistep", milestones=(4, 7), lr_decay=0.1)
    assert [lr_factor(multi, e) for e in (0, 3, 4, 6, 7, 9)] == pytest.approx([1, 1, .1, .1, .01, .01])
    cos = RunConfig(**{**TINY, "epochs": 8}, schedule="cosine")
    for e in range(8):  # seed 001 eq. 2.12
        assert lr_factor(cos, e) == pytest.approx(0.5 * (1 + math.cos((e + 1) * math.pi / 8)))
    assert lr_factor(cos, 7) == pytest.approx(0.0, abs=1e-12)
    tb = cos.replace(schedule="cosine_tb")   # TempBalance's code: eq. 2.12 one epoch later
    assert [lr_factor(tb, e) for e in range(1, 8)] == pytest.approx([lr_factor(cos, e) for e in range(7)])
    assert lr_factor(tb, 0) == 1.0


def test_one_full_batch_sgd_step_matches_hand_computation():
    cfg = RunConfig(**{**TINY, "batch_size": 64, "epochs": 1}, optimizer="sgd", lr=0.3, wd=0.01)
    data = load_data(cfg.dataset, n_train=64, n_val=16, n_test=16, synthetic=True)
    torch.manual_seed(cfg.seed)
    ref = build_model("mlp", in_channels=1, image_size=28)
    loss = F.cross_entropy(ref(data.X_train), data.y_train)
    grads = torch.autograd.grad(loss, list(ref.parameters()))
    expected = [p.detach() - 0.3 * (g + 0.01 * p.detach()) for p, g in zip(ref.parameters(), grads)]
    out = train(cfg, data=data, callbacks=[_Params()], progress=False)
    for got, want in zip(out["callbacks"]["params"], expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert out["history"]["train_loss"].iloc[0] == pytest.approx(loss.item(), rel=1e-5)


class _Params:
    """Records the parameters after training."""
    name = "params"

    def on_train_start(self, model):
        self.model = model

    def result(self):
        return [p.detach().clone() for p in self.model.parameters()]



def test_history_and_determinism():
    cfg = RunConfig(**TINY, augment=True, deterministic=True)
    a, b = train(cfg, progress=False), train(cfg, progress=False)
    assert list(a["history"]["epoch"]) == [1, 2, 3]
    assert {"train_loss", "train_acc", "val_acc", "test_acc", "lr", "time_s"} <= set(a["history"])
    assert len(a["steps"]) == 3 * 4 and not a["diverged"]
    pd_cols = ["train_loss", "val_loss", "test_loss"]
    np.testing.assert_array_equal(a["history"][pd_cols].to_numpy(), b["history"][pd_cols].to_numpy())


def test_the_result_records_the_memory_format_its_sums_came_from():
    """The layout changes the float sums, so the run says which one it trained in: the
    loop's rule (`ImageClassification.channels_last`), channels_last for conv nets."""
    one = {**TINY, "epochs": 1}
    assert train(RunConfig(**one), progress=False)["memory_format"] == "contiguous"  # mlp
    conv = train(RunConfig(**{**one, "model": "basic_cnn"}), progress=False)
    assert conv["memory_format"] == "channels_last"


def test_divergence_is_recorded_not_raised():
    cfg = RunConfig(**{**TINY, "epochs": 5}, optimizer="sgd", lr=1e6)
    out = train(cfg, progress=False)
    assert out["diverged"] and len(out["history"]) < 5


class _Kill(Exception):
    pass


class _KillAt:
    name = "kill"

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, model, row):
        if row["epoch"] == self.epoch:
            raise _Kill



def test_resume_after_kill_gives_the_uninterrupted_result(tmp_path):
    cfg = RunConfig(**{**TINY, "epochs": 4}, augment=True)
    full = train(cfg, callbacks=[TrajectoryCallback(window=5)], progress=False)
    with pytest.raises(_Kill):
        train(cfg, callbacks=[TrajectoryCallback(window=5), _KillAt(3)], progress=False,
              checkpoint_dir=tmp_path, checkpoint_every=2)
    resumed = train(cfg, callbacks=[TrajectoryCallback(window=5), _KillAt(99)], progress=False,
                    checkpoint_dir=tmp_path, checkpoint_every=2)
    np.testing.assert_allclose(resumed["history"]["train_loss"], full["history"]["train_loss"], rtol=1e-6)
    for key in ("ds", "dt", "psi_window"):
        np.testing.assert_allclose(resumed["callbacks"]["trajectory"][key],
                                   full["callbacks"]["trajectory"][key], rtol=1e-6)


def test_gradient_clipping_bounds_the_first_step():
    base = dict(**{**TINY, "epochs": 1, "batch_size": 64}, optimizer="sgd", lr=1.0)
    clipped = train(RunConfig(**base, clip_grad_norm=1e-3), callbacks=[TrajectoryCallback(1)], progress=False)
    step = clipped["callbacks"]["trajectory"]["step_norm"][0]
    assert step == pytest.approx(1e-3, rel=1e-4)  # lr 1 times a gradient of norm exactly 1e-3


# ----------------------------------------------------------------------------- task hooks
STARTED: list[int] = []


@dataclass(frozen=True)
class _Scheduled(ImageClassification):
    """Image classification with every optional hook of the task protocol: a per-step lr ramp,
    a group lr_scale, max_steps (free to change on resume) and a record of start_epoch."""

    name = "scheduled_test"
    resume_free = ("task.max_steps",)
    max_steps: int | None = None
    note: str = field(default="", compare=False)  # not part of the run

    def start_epoch(self, cfg, data, epoch):
        STARTED.append(epoch)

    def configure_optimizer(self, cfg, optimizer):
        optimizer.param_groups[0]["lr_scale"] = 0.5

    def step_lr_factor(self, cfg, data, step):
        return (step + 1) / 10


class _GroupLrs:
    """Records the first group's lr at every step."""

    name = "group_lrs"

    def __init__(self):
        self.lrs = []

    def on_optimizer(self, optimizer):
        self.optimizer = optimizer

    def on_step(self, model):
        self.lrs.append(self.optimizer.param_groups[0]["lr"])

    def result(self):
        return self.lrs



def test_task_hooks_step_schedule_and_epochs():
    STARTED.clear()
    cfg = RunConfig(**{**TINY, "epochs": 2}, lr=0.1, task=_Scheduled())
    out = train(cfg, callbacks=[_GroupLrs()], progress=False)
    assert STARTED == [0, 1]  # 0-based epochs, once each
    factors = [(k + 1) / 10 for k in range(8)]  # 4 steps per epoch
    assert list(out["steps"]["lr"]) == [0.1 * f for f in factors]
    assert out["callbacks"]["group_lrs"] == [f * (0.1 * 0.5) for f in factors]
    assert list(out["history"]["lr"]) == [0.1 * factors[0], 0.1 * factors[4]]
    with pytest.raises(ValueError, match="per-step lr schedule"):
        train(cfg.replace(schedule="cosine"), progress=False)


def test_task_max_steps_cut_epoch_and_resume(tmp_path):
    base = RunConfig(**{**TINY, "epochs": 3}, task=_Scheduled(max_steps=6))
    cut = train(base, progress=False, checkpoint_dir=tmp_path, checkpoint_every=1)
    h = cut["history"]
    assert list(h["step"]) == [4, 6] and len(cut["steps"]) == 6  # epoch 2 cut after 2 steps
    assert np.isfinite(h["val_loss"].iloc[-1])  # the run's last epoch is evaluated
    ckpt = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert ckpt["state"]["epoch"] == 1  # the cut epoch is not checkpointed
    # more steps resume from epoch 1's checkpoint and match the uninterrupted run exactly;
    # a field outside the key (compare=False) may differ too
    longer = base.replace(task=_Scheduled(max_steps=10, note="resumed"))
    resumed = train(longer, progress=False, checkpoint_dir=tmp_path, checkpoint_every=1)
    full = train(longer, progress=False)
    np.testing.assert_array_equal(resumed["steps"].to_numpy(), full["steps"].to_numpy())
    assert list(full["history"]["step"]) == [4, 8, 10]
    with pytest.raises(ValueError, match=r"other values of \['lr'\]"):
        train(longer.replace(lr=0.5), progress=False, checkpoint_dir=tmp_path)


def test_plugin_key_leaves_out_fields_outside_comparison():
    a, b = _Scheduled(max_steps=3, note="a"), _Scheduled(max_steps=3, note="b")
    assert a == b and hash(a) == hash(b)
    assert a.key() == {"kind": "scheduled_test", "max_steps": 3}


def test_result_keeps_per_example_test_correctness_matching_the_accuracy():
    from lalr_core.core.loop.config import RunConfig
    from lalr_core.core.loop.train import train
    cfg = RunConfig(synthetic=True, epochs=1, n_train=64, n_test=50, batch_size=32,
                    model="mlp", width=0.25)
    res = train(cfg, progress=False)
    hits = res["test_correct"]
    assert hits.dtype == bool and hits.shape == (50,)
    assert hits.mean() == pytest.approx(res["final"]["test_acc"])


def test_image_task_evaluates_the_named_split_and_refuses_others():
    cfg = RunConfig(dataset="fashion_mnist", synthetic=True, n_train=64, n_val=32, n_test=48,
                    model="mlp")
    task = ImageClassification()
    data = task.load(cfg, "cpu")
    model = build_model("mlp", in_channels=1, image_size=28).eval()
    for split, n in (("train", 64), ("val", 32), ("test", 48)):
        X, y = getattr(data, f"X_{split}"), getattr(data, f"y_{split}")
        assert len(X) == n
        with torch.no_grad():
            logits = model(X)
        loss, acc = task.evaluate(cfg, model, data, split)
        assert loss == pytest.approx(F.cross_entropy(logits, y).item(), rel=1e-5)
        assert task.correct(cfg, model, data, split).tolist() == (logits.argmax(1) == y).tolist()
    with pytest.raises(ValueError, match="unknown split 'tests'"):
        task.evaluate(cfg, model, data, "tests")
