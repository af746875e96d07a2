"""The ``transformers`` fine-tuning task (`lalr_core.methods.pretrained.text.hf`), offline.

Oracles: the tiny data's rule checked on the tensors; the GLUE split protocol on a local
stand-in whose rows name their examples; a tiny BERT / RoBERTa that learns the tiny rule
through the project's loop; the batched, padding-trimmed loss and evaluation against one
full-width forward pass; LALR's layers against the model's own ``nn.Linear`` /
``nn.Embedding`` modules, each group's lr against ``lr_t * scale`` and the layer at scale 0
left bit for bit unchanged by its epoch; the errors without the hub or without the extra.
"""

import contextlib
import importlib.util
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.loop.config import RunConfig
from lalr_core.methods.pretrained.text.hf import CUE, PAD, HFSequenceClassificationTask
from lalr_core.core.loop.train import initial_model, train
from lalr_core.methods.layer_lr.lalr import LALR
from conftest import LRProbe

pytestmark = pytest.mark.usefixtures("one_thread")
needs_nlp = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                               reason="the optional extra 'nlp' is not installed")
TINY = dict(tiny=True, n_train=512, n_val=64, n_test=64, max_length=16)
RUN = dict(optimizer="adamw", lr=3e-3, wd=0.01, batch_size=32, epochs=4, device="cpu")


def tiny_run(model_name="roberta-base", **run) -> RunConfig:
    task = HFSequenceClassificationTask(model_name=model_name, **TINY)
    return RunConfig(task=task, **{**RUN, **run})


def layer_modules(model: nn.Module) -> list[str]:
    """The encoder's layers as we count them: every nn.Linear / nn.Embedding."""
    return [n for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Embedding))]


# ----------------------------------------------------------------------------- config, data
def test_config_key_round_trip_validation_and_unread_fields():
    cfg = tiny_run()
    assert RunConfig(**cfg.key()) == cfg and hash(RunConfig(**cfg.key())) == hash(cfg)
    assert RunConfig(task="hf_text_classification").task == HFSequenceClassificationTask()
    for bad, match in ((dict(dataset="mnli"), "GLUE task"), (dict(n_val=0), "n_val"),
                       (dict(n_train=True), "n_train"), (dict(max_length=1), "max_length"),
                       (dict(model_name=""), "model_name"), (dict(tiny=1), "tiny"),
                       (dict(model_name="gpt2", tiny=True), "tiny=True")):
        with pytest.raises(ValueError, match=match):
            HFSequenceClassificationTask(**bad)
    with pytest.raises(ValueError, match="model"):
        tiny_run(model="mlp").task.build_model(tiny_run(model="mlp"))


def test_tiny_data_follow_the_rule_and_the_seed():
    task = HFSequenceClassificationTask(**{**TINY, "n_test": None})
    data = task.data()
    for split, n in (("train", 512), ("val", 64), ("test", 512)):
        ids, mask, y = data.split(split)
        assert ids.shape == (n, 16) and mask.shape == ids.shape and y.shape == (n,)
        assert torch.equal(mask.bool(), ids != PAD)             # padding only at the right
        assert (mask.sum(1) >= 8).all() and (mask.cummin(1).values == mask).all()
        assert torch.equal(y, (ids == CUE).any(1).long())        # label 1 <=> the cue occurs
        assert 0.35 < y.float().mean() < 0.65
    again = HFSequenceClassificationTask(**TINY).data().split("train")[0]
    other = HFSequenceClassificationTask(**{**TINY, "data_seed": 1}).data().split("train")[0]
    assert torch.equal(again, data.split("train")[0]) and not torch.equal(other, again)
    assert not torch.equal(data.split("val")[0][:8], data.split("train")[0][:8])


@needs_nlp
def test_glue_protocol_on_a_local_stand_in(monkeypatch, tmp_path):
    """GLUE's train split gives val (first n_val of a data_seed permutation) and train (the
    next n_train), GLUE's validation split our test (its first n_test). Sentence i of the
    stand-in is the word ``s<i>`` 1 + i % 3 times, so every row of the tensors names its
    example (word id = i + 4 in a word-level BERT vocabulary)."""
    import datasets
    import transformers

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"s{i}" for i in range(50)]
    (tmp_path / "vocab.txt").write_text("\n".join(words))
    tokenizer = transformers.BertTokenizer(str(tmp_path / "vocab.txt"))

    def part(rows):
        return datasets.Dataset.from_dict({"sentence": [" ".join([f"s{i}"] * (1 + i % 3))
                                                        for i in rows],
                                           "label": [i % 2 for i in rows]})
    glue = datasets.DatasetDict(train=part(range(40)), validation=part(range(40, 50)))
    monkeypatch.setattr(datasets, "load_dataset", lambda name, task: glue)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda name: tokenizer)

    task = HFSequenceClassificationTask(model_name="any/id", n_train=20, n_val=8, n_test=5,
                                        max_length=4, data_seed=3)
    order = np.random.default_rng(3).permutation(40)
    expected = {"val": order[:8], "train": order[8:28], "test": np.arange(40, 45)}
    data = task.data()
    for split, rows in expected.items():
        ids, mask, y = data.split(split)
        assert ids[:, 1].numpy().tolist() == (rows + 4).tolist()
        assert y.numpy().tolist() == (rows % 2).tolist()
        assert mask.sum(1).numpy().tolist() == np.minimum(3 + rows % 3, 4).tolist()  # truncated
        assert torch.equal(mask.bool(), ids != 0)
    everything = HFSequenceClassificationTask(model_name="any/id", n_val=8, data_seed=3).data()
    assert len(everything.split("train")[2]) == 32 and len(everything.split("test")[2]) == 10
    with pytest.raises(ValueError, match="40 train and 10 validation"):
        HFSequenceClassificationTask(model_name="any/id", n_train=33, n_val=8).data()


# ----------------------------------------------------------------------------- training
@needs_nlp
@pytest.mark.parametrize("family", ["roberta-base", "bert-base-uncased"])
def test_tiny_encoder_learns_the_rule_in_the_loop(family):
    cfg = tiny_run(family)
    task = cfg.task
    model = initial_model(cfg)
    assert type(model).__name__.lower().startswith(task.tiny_family)
    out = train(cfg, progress=False)
    h = out["history"]
    assert not out["diverged"]
    assert h["train_loss"].iloc[-1] < 0.3 * h["train_loss"].iloc[0]   # ln 2 at the start
    assert h["val_acc"].iloc[-1] >= 0.95 and h["test_acc"].iloc[-1] >= 0.95
    hits = out["test_correct"]
    assert hits.dtype == bool and hits.shape == (64,)
    assert hits.mean() == pytest.approx(out["final"]["test_acc"])


@needs_nlp
def test_trimmed_batches_give_the_full_width_loss_and_evaluation():
    cfg = tiny_run(eval_batch_size=7, batch_size=7)
    task, model = cfg.task, initial_model(cfg)
    with torch.no_grad():   # weights far from HF's init (std 0.02), so every token counts
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    data = task.data()
    ids, mask, y = data.split("val")
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits
    loss, acc = task.evaluate(cfg, model, data, "val")
    assert loss == pytest.approx(F.cross_entropy(logits, y).item(), rel=1e-5)
    assert acc == (logits.argmax(1) == y).float().mean().item()
    assert np.array_equal(task.correct(cfg, model, data, "val"),
                          (logits.argmax(1) == y).numpy())
    assert model.training is False   # evaluate restores the mode it found
    epoch = list(task.batches(cfg, data, torch.Generator().manual_seed(0)))
    assert all(b[0].shape[1] == b[1].sum(1).max() for b in epoch)  # cut to the longest
    ids_b, mask_b, y_b = next(b for b in epoch if b[0].shape[1] < 16)
    width = ids_b.shape[1]
    with torch.no_grad():
        step, hits, n = task.loss(model, (ids_b, mask_b, y_b), contextlib.nullcontext(), None)
        full = model(input_ids=F.pad(ids_b, (0, 16 - width), value=PAD),
                     attention_mask=F.pad(mask_b, (0, 16 - width))).logits
    assert step.item() == pytest.approx(F.cross_entropy(full, y_b).item(), rel=1e-5)
    assert (hits.item(), n) == ((full.argmax(1) == y_b).sum().item(), 7)


# ----------------------------------------------------------------------------- LALR
@needs_nlp
def test_lalr_groups_every_linear_and_embedding_and_sets_lr_t_times_scale():
    cfg = tiny_run(schedule="cosine_tb", methods=(LALR(),))   # lr_t > 0 and varying
    model = initial_model(cfg)
    layers = layer_modules(model)
    groups = cfg.method("lalr").param_groups(model, cfg.lr)
    names = dict(model.named_parameters())
    owner = {id(p): n for n, p in names.items()}
    assert [g["layer"] for g in groups] == layers + [None]
    for g in groups[:-1]:   # a layer's group: its module's weight and bias
        assert sorted(owner[id(p)] for p in g["params"]) == sorted(
            n for n in names if n.rsplit(".", 1)[0] == g["layer"])
    assert all("LayerNorm" in owner[id(p)] for p in groups[-1]["params"])   # the rest
    assert not [n for n, p in names.items() if p.ndim >= 2 and n.rsplit(".", 1)[0] not in layers]

    probe = LRProbe()
    out = train(cfg, callbacks=[probe], progress=False)
    table = out["callbacks"]["lalr"]
    assert table.groupby("epoch")["layer"].apply(list).tolist() == [layers] * (cfg.epochs + 1)
    assert table.groupby("epoch")["phase"].first().tolist() == ["svd", "ce", "cs", "svd", "ce"]
    assert np.isfinite(table[["svd", "ce", "cs"]].to_numpy()).all()   # 1-row token types too
    scale = table.set_index(["epoch", "layer"])["lr_scale"]
    assert len(probe.lrs) == cfg.epochs * len(layers)
    for epoch, lr_t, layer, lr in probe.lrs:
        assert lr == pytest.approx(lr_t * scale[(epoch - 1, layer)], rel=1e-12)
    for e in range(cfg.epochs):   # s_min = 0: the layer at scale 0 did not move in epoch e
        at = table[table["epoch"] == e]
        assert at["lr_scale"].min() == 0.0 and at["lr_scale"].max() == 1.0
        frozen = at[at["lr_scale"] == 0.0]["layer"].tolist()
        before, after = probe.weights[e], probe.weights[e + 1]
        for layer in frozen:
            for k in (k for k in before if k.rsplit(".", 1)[0] == layer):
                assert torch.equal(before[k], after[k]), (e, k)
        moving = at[at["lr_scale"] == 1.0]["layer"].iloc[0]
        assert not torch.equal(before[f"{moving}.weight"], after[f"{moving}.weight"])


# ----------------------------------------------------------------------------- errors
@pytest.fixture
def offline(monkeypatch):
    """HF_HUB_OFFLINE=1, also for the libraries already imported (they read it on import)."""
    import huggingface_hub.constants
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    if "datasets" in sys.modules:
        monkeypatch.setattr(sys.modules["datasets"].config, "HF_HUB_OFFLINE", True)


@needs_nlp
def test_offline_hub_raises_a_clear_error(offline):
    task = HFSequenceClassificationTask(model_name="lalr-core-tests/absent-model", n_val=8)
    cfg = RunConfig(task=task, device="cpu")
    with pytest.raises(OSError, match="'lalr-core-tests/absent-model'.*must be online"):
        task.build_model(cfg)
    with pytest.raises(OSError, match="must be online"):   # GLUE, or the tokenizer if cached
        task.load(cfg, torch.device("cpu"))


def test_without_transformers_the_task_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.setitem(sys.modules, "datasets", None)
    cfg = tiny_run()
    with pytest.raises(ModuleNotFoundError, match=r"pip install -e '\.\[nlp\]'"):
        cfg.task.build_model(cfg)
    with pytest.raises(ModuleNotFoundError, match=r"pip install -e '\.\[nlp\]'"):
        HFSequenceClassificationTask(n_val=8).load(RunConfig(), torch.device("cpu"))


def test_the_library_imports_and_registers_the_task_without_transformers():
    code = ("import sys; sys.modules['transformers'] = sys.modules['datasets'] = None\n"
            "import lalr_core, lalr_core.methods.pretrained.text, lalr_core.methods.pretrained.text.hf\n"
            "from lalr_core.core.loop.config import TASKS\n"
            "assert 'hf_text_classification' in TASKS.names()\n"
            "print(TASKS['hf_text_classification']().model_name)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "roberta-base", done.stderr
