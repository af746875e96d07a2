"""The text tasks (`lalr_core.methods.pretrained.text.tasks`, `.mlm`): the masking rule counted, the MLM
loss against an explicit log-softmax, the pretraining as one cached unit, fine-tunings that
start from exactly its encoder (whether or not it was cached), forgetting measured on the
pretraining's own held-out set, and every task trained end to end on tiny sizes."""

import numpy as np
import pytest
import torch

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model, train
from lalr_core.core.runs import RunCache, param_hash
from lalr_core.core.runs.units import pretrained, train_code_modules, train_runs
from lalr_core.methods.pretrained.text import corpus
from lalr_core.methods.pretrained.text.mlm import (
    IGNORE,
    heldout_masked,
    mask_tokens,
    masked_count,
    masked_lm_loss,
)
from lalr_core.methods.pretrained.text.tasks import (
    MLMTask,
    SequenceClassificationTask,
    finetuning_config,
    pretrained_backbone,
    pretrained_mlm_head,
    pretraining_config,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # 2 threads stall on the shared cores
TINY_MLM = dict(epochs=1, batch_size=8, n_corpus=32, n_val=8, n_test=8, device="cpu")
TINY_FT = dict(n_train=32, n_val=16, n_test=16, epochs=1, batch_size=8, device="cpu")


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("LALR_RUNS_ROOT", str(tmp_path / "runs"))
    return tmp_path / "runs"


def test_masking_counts_and_the_80_10_10_rule():
    assert [masked_count(n, 0.15) for n in (15, 47, 3)] == [2, 7, 1]
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(3, 64, (4000, 16), generator=gen)
    x[:, 0] = corpus.CLS
    inputs, targets = mask_tokens(x, 2, gen, "bert")
    chosen = targets != IGNORE
    assert (chosen.sum(1) == 2).all() and not chosen[:, 0].any()
    assert (targets[chosen] == x[chosen]).all() and (inputs[~chosen] == x[~chosen]).all()
    got = inputs[chosen]
    n = chosen.sum().item()  # 8000 predictions: 4 sd of a proportion p is 4 sqrt(p(1-p)/n)
    masked, kept = (got == corpus.MASK).float().mean(), (got == x[chosen]).float().mean()
    assert abs(masked - 0.8) < 4 * (0.16 / n) ** 0.5
    assert abs(kept - (0.1 + 0.1 / 61)) < 4 * (0.09 / n) ** 0.5  # a random token may be it
    assert ((got >= 3) | (got == corpus.MASK)).all()  # never [PAD] or [CLS]
    only_mask, _ = mask_tokens(x, 3, gen, "mask")
    assert ((only_mask == corpus.MASK).sum(1) == 3).all()
    with pytest.raises(ValueError, match="k must"):
        mask_tokens(x, 16, gen)


def test_masked_lm_loss_matches_an_explicit_log_softmax():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 4, 64, generator=gen, dtype=torch.float64)
    targets = torch.full((2, 4), IGNORE)
    targets[0, 1], targets[1, 3], targets[1, 2] = 5, 9, int(logits[1, 2].argmax())
    loss, hits = masked_lm_loss(logits, targets)
    logp = logits.log_softmax(-1)
    expected = -(logp[0, 1, 5] + logp[1, 3, 9] + logp[1, 2, targets[1, 2]]) / 3
    torch.testing.assert_close(loss, expected.float())
    assert hits.item() == 1 + int(logits[0, 1].argmax() == 5) + int(logits[1, 3].argmax() == 9)


def test_heldout_masks_are_fixed_and_count_per_length():
    a, ta = heldout_masked(20, 0, "val", 0.15, "bert")
    b, tb = heldout_masked(20, 0, "val", 0.15, "bert")
    assert torch.equal(a, b) and torch.equal(ta, tb)
    counts = (ta != IGNORE).sum(1)
    assert counts[:10].tolist() == [2] * 10 and counts[10:].tolist() == [7] * 10
    assert ((a == corpus.PAD) == (ta == corpus.PAD)).sum() > 0 and (ta[a == corpus.PAD]
                                                                    == IGNORE).all()


def test_mlm_batches_hold_one_length_each_and_the_run_is_one_cached_unit(cache_root):
    cfg = pretraining_config(**TINY_MLM)
    task = cfg.task
    data = task.load(cfg, torch.device("cpu"))
    seen = []
    for inputs, targets, n in task.batches(cfg, data, torch.Generator().manual_seed(0)):
        assert not (inputs == corpus.PAD).any()  # trimmed to its one length
        assert n == (targets != IGNORE).sum().item() == len(inputs) * masked_count(
            inputs.shape[1] - 1, 0.15)
        seen.append(inputs.shape[1])
    assert sorted(seen) == [16, 16, 48, 48]
    first = pretrained(cfg)
    assert len(RunCache(cache_root).entries("train")) == 1
    assert np.isfinite(first["history"]["train_loss"]).all()
    again = pretrained(cfg)  # read back, not trained again
    assert len(RunCache(cache_root).entries("train")) == 1
    assert again["wall_time_s"] == first["wall_time_s"]
    assert set(pretrained_mlm_head(again)) == {"bias"}


def test_finetuning_starts_from_exactly_the_pretrained_encoder(cache_root):
    pre = pretraining_config(**TINY_MLM)
    cfg = finetuning_config("sent", pretrained=pre, **TINY_FT)
    computed_inside = initial_model(cfg)  # the pretraining is trained here, on the miss
    from_cache = initial_model(cfg)
    weights = pretrained(pre)["callbacks"]["weights"]
    for name, value in from_cache.encoder.state_dict().items():
        assert torch.equal(value, weights[f"encoder.{name}"]), name
    assert set(pretrained_backbone(pre)) == set(from_cache.encoder.state_dict())
    for a, b in zip(computed_inside.state_dict().values(), from_cache.state_dict().values()):
        assert torch.equal(a, b)  # the run's seed is untouched by training the pretraining
    other_seed = initial_model(cfg.replace(seed=1))
    assert not torch.equal(other_seed.head.weight, from_cache.head.weight)
    scratch = initial_model(finetuning_config("sent", **TINY_FT))
    assert not torch.equal(scratch.encoder.tok_emb.weight, from_cache.encoder.tok_emb.weight)


def test_forgetting_at_step_zero_is_the_pretrainings_val_loss(cache_root):
    pre = pretraining_config(**TINY_MLM)
    final = pretrained(pre)["final"]
    cfg = finetuning_config("sent", pretrained=pre, **TINY_FT)
    data = cfg.task.load(cfg, torch.device("cpu"))
    loss, acc = cfg.task.evaluate(cfg, initial_model(cfg), data, "mlm")
    assert loss == pytest.approx(final["val_loss"], rel=1e-6)
    assert acc == pytest.approx(final["val_acc"])


@pytest.mark.parametrize("dataset", corpus.DATASETS)
def test_each_dataset_fine_tunes_end_to_end(dataset):
    cfg = finetuning_config(dataset, **TINY_FT)
    res = train(cfg, progress=False)
    h = res["history"]
    assert len(h) == 1 and np.isfinite(h[["train_loss", "val_loss", "test_loss"]]).all().all()
    assert res["test_correct"].shape == (16,) and res["test_correct"].dtype == bool
    assert res["final"]["test_acc"] == pytest.approx(res["test_correct"].mean())
    data = cfg.task.load(cfg, torch.device("cpu"))
    model = initial_model(cfg)
    ood = "test_deep" if dataset == "acc" else "test_noise"
    assert ood in cfg.task.splits and "mlm" not in cfg.task.splits
    assert cfg.task.correct(cfg, model, data, ood).shape == (16,)


def test_splits_callback_records_ood_and_forgetting_through_the_cache(cache_root):
    pre = pretraining_config(**TINY_MLM)
    cfg = finetuning_config("sent", pretrained=pre, **TINY_FT)
    cb = {"text_splits": {"task": cfg.task.key(), "splits": ["test_noise", "mlm"]}}
    (res,) = train_runs([cfg], callbacks=cb)
    rec = res["callbacks"]["text_splits"]
    assert rec["history"][["epoch", "split"]].values.tolist() == [
        [0, "test_noise"], [0, "mlm"], [1, "test_noise"], [1, "mlm"]]
    assert rec["history"]["loss"].iloc[1] == pytest.approx(
        pretrained(pre)["final"]["val_loss"], rel=1e-6)
    assert rec["correct"]["test_noise"].shape == (16,)
    assert len(RunCache(cache_root).entries("train")) == 2  # the pretraining and this run


def test_configs_round_trip_and_bad_settings_raise():
    pre = pretraining_config(**TINY_MLM)
    cfg = finetuning_config("acc", pretrained=pre, **TINY_FT)
    assert RunConfig(**cfg.key()) == cfg and hash(RunConfig(**cfg.key())) == hash(cfg)
    assert param_hash(cfg.key()) == param_hash(RunConfig(**cfg.key()).key())
    assert cfg.key()["task"]["pretrained"] == pre.key()
    unit = {"run": cfg.key(), "callbacks": {}}
    assert "lalr_core.methods.pretrained.text.tasks" in train_code_modules(unit)
    big = pretraining_config(n_blocks=4, **TINY_MLM)
    assert finetuning_config("sent", pretrained=big).task.n_blocks == 4
    with pytest.raises(ValueError, match="differs"):
        SequenceClassificationTask(pretrained=big)
    with pytest.raises(ValueError, match="text_mlm"):
        SequenceClassificationTask(pretrained=finetuning_config("sent"))
    with pytest.raises(ValueError, match="shift"):
        SequenceClassificationTask(dataset="acc", lexicon="shift")
    with pytest.raises(ValueError, match="mask_rule"):
        MLMTask(mask_rule="span")
    with pytest.raises(ValueError, match="defaults"):
        bad = RunConfig(dataset="mnist", task=SequenceClassificationTask())
        bad.task.load(bad, torch.device("cpu"))


def test_runs_are_bit_identical_at_a_fixed_seed():
    from lalr_core.core.loop.callbacks import FinalWeights

    for cfg in (pretraining_config(**TINY_MLM), finetuning_config("acc", **TINY_FT)):
        first, second = FinalWeights(), FinalWeights()
        a = train(cfg, callbacks=[first], progress=False)
        b = train(cfg, callbacks=[second], progress=False)
        assert a["steps"]["loss"].tolist() == b["steps"]["loss"].tolist()
        assert all(torch.equal(first.state[k], second.state[k]) for k in first.state)
        c = train(cfg.replace(seed=1), progress=False)
        assert c["steps"]["loss"].tolist() != a["steps"]["loss"].tolist()
