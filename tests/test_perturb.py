"""Initial perturbations of a pretrained start (`lalr_core.methods.pretrained.perturb`, X-L14).

Oracles: the noise's RMS against 0.05 x RMS(W) (the sampling error of a Gaussian RMS,
1 / sqrt(2n)), bitwise equality of every tensor a perturbation must not touch, the re-drawn
block against a fresh TinyTF block drawn under the same seed, the pretrained encoder loaded
from the cache (the perturbation lands on it, after the task loaded it), the global RNG state,
and the cache key of two settings.
"""

import math

import pytest
import torch

from lalr_core.core.runs import param_hash
from lalr_core.methods.pretrained.text.tasks import (
    finetuning_config,
    pretrained_backbone,
    pretraining_config,
)
from lalr_core.methods.pretrained.text.tinytf import (
    EncoderBlock,
    TinyTFClassifier,
    TinyTFConfig,
    init_weights,
)
from lalr_core.core.loop.train import initial_model, train
from lalr_core.methods.layer_lr.lalr.diagnostics import LayerDiagnostics
from lalr_core.methods.pretrained.perturb import InitialPerturbation, reinit_block

pytestmark = pytest.mark.usefixtures("one_thread")
CFG = TinyTFConfig(d_model=32, n_blocks=2)


def trained_like(seed=0):
    """A TinyTF classifier with non-trivial weights (LayerNorm gains and biases moved)."""
    torch.manual_seed(seed)
    model = TinyTFClassifier(CFG)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def apply(model, **spec):
    cb = InitialPerturbation(**spec)
    cb.on_train_start(model)
    return cb.result()


def test_noise_std_is_a_twentieth_of_each_tensors_rms_and_spares_the_head():
    model = trained_like()
    before, rng = state(model), torch.get_rng_state()
    table = apply(model, kind="noise", seed=3).set_index("param")
    assert torch.equal(torch.get_rng_state(), rng)                   # global RNG untouched
    for name, p in model.named_parameters():
        change = p.detach() - before[name]
        if not name.startswith("encoder."):
            assert torch.equal(change, torch.zeros_like(change)), name
            continue
        n, rms = p.numel(), before[name].pow(2).mean().sqrt().item()
        got = change.pow(2).mean().sqrt().item()
        assert table.loc[name, "rms_change"] == pytest.approx(got, rel=1e-6)
        assert abs(got / (0.05 * rms) - 1) < 4 / math.sqrt(2 * n), name   # 4 sampling sd
        assert abs(change.mean().item()) < 4 * 0.05 * rms / math.sqrt(n)
    a, b, c = trained_like(), trained_like(), trained_like()
    apply(a, kind="noise", seed=3), apply(b, kind="noise", seed=3), apply(c, kind="noise", seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.encoder.tok_emb.weight, c.encoder.tok_emb.weight)
    all_params = trained_like()
    apply(all_params, kind="noise", prefix="")
    assert not torch.equal(all_params.head.weight, trained_like().head.weight)


def test_reinit_layer_changes_only_that_block_and_draws_the_models_own_init():
    for block in (0, 1):
        model = trained_like()
        before = state(model)
        apply(model, kind="reinit_layer", block=block, seed=7)
        inside = f"encoder.blocks.{block}."
        for name, value in model.state_dict().items():
            assert torch.equal(value, before[name]) != name.startswith(inside), name
        torch.manual_seed(7)
        fresh = EncoderBlock(CFG)
        init_weights(fresh, CFG.init_std)
        for name, value in fresh.state_dict().items():
            assert torch.equal(model.encoder.blocks[block].state_dict()[name], value), name
    blk = model.encoder.blocks[1]
    assert (blk.ln1.weight == 1).all() and (blk.q_proj.bias == 0).all()
    assert blk.ff1.weight.std().item() == pytest.approx(CFG.init_std, rel=0.1)
    with pytest.raises(ValueError, match="block must be"):
        reinit_block(model, 2)
    with pytest.raises(ValueError, match="TinyTF"):
        apply(torch.nn.Linear(3, 3), kind="reinit_layer")


def test_reinit_embeddings_changes_only_the_embeddings():
    model = trained_like()
    before = state(model)
    apply(model, kind="reinit_embeddings", seed=1)
    for name, value in model.state_dict().items():
        assert torch.equal(value, before[name]) != ("_emb." in name), name
    for emb in (model.encoder.tok_emb, model.encoder.pos_emb):
        assert emb.weight.std().item() == pytest.approx(CFG.init_std, rel=0.1)
        assert abs(emb.weight.mean().item()) < 4 * CFG.init_std / math.sqrt(emb.weight.numel())
    again = trained_like()
    apply(again, kind="reinit_embeddings", seed=1)
    assert torch.equal(again.encoder.pos_emb.weight, model.encoder.pos_emb.weight)


def test_settings_are_validated_and_part_of_the_cache_key():
    for bad, match in ((dict(kind="dropout"), "kind"), (dict(kind="noise", seed=-1), "seed"),
                       (dict(kind="noise", scale=0.0), "scale"),
                       (dict(kind="noise", block=True), "block"),
                       (dict(kind="noise", prefix=None), "prefix")):
        with pytest.raises(ValueError, match=match):
            InitialPerturbation(**bad)
    with pytest.raises(ValueError, match="starts with"):
        apply(trained_like(), kind="noise", prefix="decoder.")
    run = finetuning_config("sent", n_train=8, epochs=1, device="cpu").key()
    keys = {param_hash({"run": run, "callbacks": {"perturb": {"kind": "noise", "seed": s}}})
            for s in (0, 1)}
    assert len(keys) == 2


def test_in_the_loop_the_noise_lands_on_the_pretrained_encoder(tmp_path, monkeypatch):
    monkeypatch.setenv("LALR_RUNS_ROOT", str(tmp_path / "runs"))
    pre = pretraining_config(epochs=1, batch_size=8, n_corpus=32, n_val=8, n_test=8,
                             device="cpu")
    cfg = finetuning_config("sent", pretrained=pre, n_train=16, n_val=8, n_test=8, epochs=1,
                            batch_size=8, device="cpu")
    backbone = pretrained_backbone(pre)                   # trained into the cache here
    tables = []
    for order in ("perturb first", "diagnostics first"):
        perturb = InitialPerturbation("noise", seed=0)
        diag = LayerDiagnostics(task=cfg.task.key())
        cbs = [perturb, diag] if order == "perturb first" else [diag, perturb]
        tables.append(train(cfg, callbacks=cbs, progress=False)["callbacks"])
    start = tables[0]["layer_diagnostics"]["layers"]
    start = start[start["epoch"] == 0].set_index("layer")["fro_norm"]
    expected = initial_model(cfg)                         # the pretrained start, perturbed
    InitialPerturbation("noise", seed=0).on_train_start(expected)
    for name in ("tok_emb", "blocks.1.ff2"):
        W = backbone[f"{name}.weight"]
        row = tables[0]["perturb"].set_index("param").loc[f"encoder.{name}.weight"]
        assert row["rms_before"] == pytest.approx(W.pow(2).mean().sqrt().item(), rel=1e-6)
        assert row["rms_change"] / row["rms_before"] == pytest.approx(0.05, rel=0.15)
        # epoch 0 of the diagnostics is the perturbed start, not the pretrained weights
        W_start = expected.get_parameter(f"encoder.{name}.weight").detach()
        assert not torch.equal(W_start, W)
        assert start[f"encoder.{name}"] == pytest.approx(W_start.norm().item(), rel=1e-6)
    for part in ("layers", "epochs"):                     # the callbacks' order does not matter
        a = tables[0]["layer_diagnostics"][part].drop(columns="seconds", errors="ignore")
        b = tables[1]["layer_diagnostics"][part].drop(columns="seconds", errors="ignore")
        assert a.equals(b)
