"""The ``"transformed"`` task (`lalr_core.methods.pretrained.transforms`): its key holds the base's
and rebuilds (also from JSON and pickle), it delegates every hook the base has and no other,
its model is the base's transformed; a tiny LoRA fine-tuning with the proximal pull trains
end to end through the shared loop (only LoRA and head parameters change, lambda = 10 stays
closer to theta_0 than lambda = 0), through the run cache, and resumes from a checkpoint."""

import json
import pickle
from dataclasses import dataclass

import pytest
import numpy as np
import torch

from lalr_core.core.loop.callbacks import FinalWeights
from lalr_core.core.loop.config import TASKS, RunConfig, TaskConfig
from lalr_core.core.runs import RunCache, param_hash
from lalr_core.methods.pretrained.text.tasks import finetuning_config
from lalr_core.core.loop.train import initial_model, train
from lalr_core.core.runs.units import train_runs
from lalr_core.methods.pretrained.lora import lora_modules
from lalr_core.methods.pretrained.transforms import (
    MODEL_TRANSFORMS,
    TransformedTask,
    apply_transform,
)
from lalr_core.methods.pretrained.proximal import ProximalPull

pytestmark = pytest.mark.usefixtures("one_thread")  # 2 threads stall on the shared cores
TINY_FT = {"n_train": 32, "n_val": 16, "n_test": 16, "batch_size": 8, "device": "cpu",
           "d_model": 16, "d_ff": 32}
TARGETS = ("encoder.blocks.*.q_proj", "encoder.blocks.*.v_proj")
LORA = {"targets": TARGETS, "rank": 2, "alpha": 4.0}


def _cfg(lam=0.0, mode="selective", epochs=2, **lora):
    # lr 1e-2 (not chapter 03's 1e-3) so 8 tiny steps move the adapters measurably; wd 0 as in chapter 03
    base = finetuning_config("sent", epochs=epochs, lr=1e-2, wd=0.0, **TINY_FT)
    task = TransformedTask(base=base.task, transform="lora", options={**LORA, **lora})
    return base.replace(task=task, methods=(ProximalPull(lam=lam, mode=mode),))


@dataclass(frozen=True)
class _Bare(TaskConfig):
    """A base task with only the required hooks and one optional one (not registered)."""

    name = "bare"
    eval_at_start = False

    def start_epoch(self, cfg, data, epoch):
        return ("started", epoch)

    def build_model(self, cfg):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(3, 2))


def test_key_holds_the_base_and_rebuilds_from_json_and_pickle():
    cfg = _cfg()
    key = cfg.key()
    assert key["task"]["kind"] == "transformed"
    assert key["task"]["base"] == cfg.task.base.key()
    assert key["task"]["options"] == (("alpha", 4.0), ("rank", 2), ("targets", TARGETS))
    assert RunConfig(**key) == cfg and hash(RunConfig(**key)) == hash(cfg)
    from_json = RunConfig(**json.loads(json.dumps(key)))  # tuples come back as lists
    assert from_json == cfg and param_hash(from_json.key()) == param_hash(key)
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    other = finetuning_config("acc", epochs=2, lr=1e-2, wd=0.0, **TINY_FT)
    moved = cfg.replace(task=TransformedTask(base=other.task, transform="lora", options=LORA))
    assert param_hash(moved.key()) != param_hash(key)  # another base: another cache entry
    assert param_hash(_cfg(rank=3).key()) != param_hash(key)
    nested = TransformedTask(base=cfg.task.key(), transform="lora",
                             options={"targets": "encoder.blocks.0.ff1", "train": ()})
    assert TASKS[nested.key()["kind"]](**{k: v for k, v in nested.key().items()
                                          if k != "kind"}) == nested
    assert {"lalr_core.methods.pretrained.text.tasks", "lalr_core.methods.pretrained.lora"} <= set(nested.code_modules)
    # the cache's code fingerprint reaches the modules found by name (an edit of lora.py
    # recomputes LoRA runs)
    from lalr_core.core.runs.units import train_code_modules
    found = train_code_modules({"run": cfg.key(), "callbacks": {}})
    assert {"lalr_core.methods.pretrained.text.tasks", "lalr_core.methods.pretrained.lora",
            "lalr_core.methods.pretrained.transforms"} <= set(found)


def test_hooks_are_the_bases_and_the_no_op_defaults_where_the_base_has_none():
    cfg = _cfg()
    task = cfg.task
    assert task.splits == task.base.splits and task.eval_at_start
    assert not task.channels_last(cfg)
    data = task.load(cfg, torch.device("cpu"))
    model = initial_model(cfg)
    assert task.evaluate(cfg, model, data, "val") == task.base.evaluate(cfg, model, data, "val")
    hits = task.correct(cfg, model, data, "test")
    assert hits is not None and np.array_equal(np.asarray(hits),
                                               np.asarray(task.base.correct(cfg, model, data, "test")))
    bare = TransformedTask(base=_Bare(), transform="lora", options={"targets": "0", "train": ()})
    assert bare.correct(None, None, None, "test") is None  # TaskConfig's defaults
    assert bare.max_steps is None and bare.step_lr_factor is None
    assert bare.start_epoch(None, None, 3) == ("started", 3)
    assert bare.resume_free == ()
    built = bare.build_model(None)
    assert list(lora_modules(built)) == ["0"]
    assert [n for n, p in built.named_parameters() if p.requires_grad] == ["0.lora_A",
                                                                           "0.lora_B"]


def test_the_model_is_the_bases_with_lora_at_initialisation():
    cfg = _cfg()
    plain = finetuning_config("sent", epochs=2, lr=1e-2, wd=0.0, **TINY_FT)
    model, base = initial_model(cfg), initial_model(plain)
    assert sorted(lora_modules(model)) == [f"encoder.blocks.{b}.{m}" for b in (0, 1)
                                           for m in ("q_proj", "v_proj")]
    X = cfg.task.load(cfg, torch.device("cpu")).split("val")[0]
    with torch.no_grad():
        assert torch.equal(model(X), base(X))  # same seeded init; B = 0


def test_bad_settings_raise_before_training():
    base = finetuning_config("sent", **TINY_FT).task
    with pytest.raises(ValueError, match="lora"):  # lists the registered transforms
        TransformedTask(base=base, transform="sparsify")
    with pytest.raises(ValueError, match="rnak"):
        TransformedTask(base=base, transform="lora", options={"rnak": 2})
    with pytest.raises(ValueError, match="rank"):
        TransformedTask(base=base, transform="lora", options={"rank": 0})
    with pytest.raises(ValueError, match="option"):
        TransformedTask(base=base, transform="lora", options={"targets": {"q": 1}})
    with pytest.raises(ValueError, match="unknown task"):
        TransformedTask(base="no_such_task", transform="lora")
    unmatched = _cfg(targets=("encoder.blocks.*.query",))
    with pytest.raises(ValueError, match=r"available: \[.*q_proj"):
        train(unmatched, progress=False)
    assert "lora" in MODEL_TRANSFORMS.names()
    with pytest.raises(ValueError, match="model transform"):
        apply_transform(torch.nn.Linear(2, 2), "sparsify")


def _distance_and_changed(cfg):
    start = initial_model(cfg)
    res = train(cfg, callbacks=[FinalWeights()], progress=False)
    final, s0 = res["callbacks"]["weights"], start.state_dict()
    changed = sorted(k for k in final if not torch.equal(final[k], s0[k]))
    trainable = sorted(n for n, p in start.named_parameters() if p.requires_grad)
    dist = float(sum(((final[k] - s0[k]) ** 2).sum() for k in trainable).sqrt())
    return res, changed, trainable, dist


def test_lora_fine_tuning_with_the_pull_trains_only_adapters_and_head():
    res0, changed, trainable, d0 = _distance_and_changed(_cfg(lam=0.0))
    assert changed == trainable  # every LoRA A/B and the head, nothing of the backbone
    assert all(".lora_" in n or n.startswith("head.") for n in trainable)
    assert res0["optimizer_stats"] == {"proximal_steps": 8, "proximal_pulls": 0}
    res_a, changed_a, _, d_always = _distance_and_changed(_cfg(lam=10.0, mode="always"))
    res_s, changed_s, _, d_sel = _distance_and_changed(_cfg(lam=10.0))
    assert changed_a == changed_s == trainable
    assert d_always < d_sel < d0  # lr * lambda = 0.1 per pull; selective pulls some steps
    assert res_a["optimizer_stats"]["proximal_pulls"] == 8
    assert 0 < res_s["optimizer_stats"]["proximal_pulls"] < 8


def test_a_resumed_run_gives_the_uninterrupted_results(tmp_path):
    cfg = _cfg(lam=10.0, epochs=3)
    full = train(cfg, callbacks=[FinalWeights()], progress=False)
    train(cfg, callbacks=[FinalWeights()], progress=False, checkpoint_dir=tmp_path,
          checkpoint_every=2)                                   # leaves epoch 2's checkpoint
    resumed = train(cfg, callbacks=[FinalWeights()], progress=False, checkpoint_dir=tmp_path,
                    checkpoint_every=2)
    a, b = full["callbacks"]["weights"], resumed["callbacks"]["weights"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed["optimizer_stats"] == full["optimizer_stats"]
    assert full["optimizer_stats"]["proximal_steps"] == 12


def test_runs_through_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LALR_RUNS_ROOT", str(tmp_path / "runs"))
    (res,) = train_runs([_cfg(lam=1.0, epochs=1)])
    assert res["config"]["task"]["kind"] == "transformed"
    assert len(RunCache(tmp_path / "runs").entries("train")) == 1
