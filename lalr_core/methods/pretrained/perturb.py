"""Initial perturbations of a pretrained start, as a training callback (chapter 01, X-L14).

Chapter 01's experiment X-L14 (ours; claim L-C24, "Robustness to Initialization"): the fine-tuning starts from
the pretrained weights changed in one of three ways, and the spread of the final accuracy
across the perturbations is compared between arms. The ``"perturb"`` callback applies one
perturbation in ``on_train_start``, i.e. after the task built the model with the pretrained
weights (`lalr_core.core.loop.train.train` builds the model, then the optimiser, then calls the
callbacks' ``on_train_start``) and before any step; its settings are its constructor's
arguments, so they are part of the run's cache key:

* ``"noise"``: every parameter whose name starts with ``prefix`` (default the pretrained
  encoder; the classifier head is new anyway) gets ``W += N(0, (scale * RMS(W))^2)``
  elementwise, ``RMS(W) = sqrt(mean W^2)`` of that tensor, ``scale = 0.05``;
* ``"reinit_layer"``: TinyTF's encoder block ``block`` (0-based; X-L14 re-initialises the first, 0)
  gets fresh weights from the model's own init (a new block: LayerNorms 1 / 0, then
  `lalr_core.methods.pretrained.text.tinytf.init_weights`: weights ~ N(0, init_std^2), biases 0);
* ``"reinit_embeddings"``: the token and positional embeddings, the same way.

Every draw comes from ``seed`` alone (CPU generator, the global RNG untouched), so a
perturbation is the same on every device and in every process. List ``"perturb"`` first in a
run's callbacks: a callback that records in its own ``on_train_start`` before it (e.g.
``"text_splits"``) would see the unperturbed start (``"layer_diagnostics"`` takes its
epoch-0 record later and sees the perturbed one in any order; LALR's own callback always runs
after the caller's).
"""

from __future__ import annotations

import math

import pandas as pd
import torch
from torch import nn

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.methods.pretrained.text.tinytf import TinyTFEncoder, init_weights

PERTURBATIONS = ("noise", "reinit_layer", "reinit_embeddings")
NOISE_SCALE = 0.05   # X-L14 (our setting): std 0.05 * RMS(W) per tensor


def rms(t: torch.Tensor) -> float:
    """``sqrt(mean(t^2))`` (0 for an empty tensor)."""
    return float(t.detach().double().pow(2).mean().sqrt()) if t.numel() else 0.0


@torch.no_grad()
def add_relative_noise(named_params, scale: float = NOISE_SCALE, seed: int = 0) -> None:
    """In place: ``p += N(0, (scale * RMS(p))^2)`` elementwise, for every ``(name, p)``.

    The noise is drawn on the CPU in float32 from one generator seeded ``seed``, in the
    given order, then moved to each parameter's device and dtype.
    """
    gen = torch.Generator().manual_seed(seed)
    for _, p in named_params:
        noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
        p.add_((noise * (scale * rms(p))).to(device=p.device, dtype=p.dtype))


def tinytf_encoder(model: nn.Module) -> TinyTFEncoder:
    """The model's TinyTF encoder (``model`` itself or ``model.encoder``).

    Raises:
        ValueError: the model has none.
    """
    encoder = model if isinstance(model, TinyTFEncoder) else getattr(model, "encoder", None)
    if not isinstance(encoder, TinyTFEncoder):
        raise ValueError(f"reinit perturbations need a TinyTF model (an encoder attribute of "
                         f"type TinyTFEncoder), got {type(model).__name__}")
    return encoder


@torch.no_grad()
def _load_fresh(pairs, std: float, seed: int) -> None:
    """Each ``target`` of ``[(target, make)]`` takes the state of a ``make()`` initialised by
    `init_weights`, all drawn in order from one RNG seeded ``seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fresh = []
        for _, make in pairs:
            fresh.append(make())
            init_weights(fresh[-1], std)
    for (target, _), module in zip(pairs, fresh):
        target.load_state_dict(module.state_dict())


def reinit_block(model: nn.Module, block: int = 0, seed: int = 0) -> None:
    """Re-initialise TinyTF encoder block ``block`` (0-based) as the model's init does."""
    encoder = tinytf_encoder(model)
    n = len(encoder.blocks)
    if isinstance(block, bool) or not isinstance(block, int) or not 0 <= block < n:
        raise ValueError(f"block must be an int in [0, {n}), got {block!r}")
    target = encoder.blocks[block]
    _load_fresh([(target, lambda: type(target)(encoder.cfg))], encoder.cfg.init_std, seed)


def reinit_embeddings(model: nn.Module, seed: int = 0) -> None:
    """Re-initialise TinyTF's token and positional embeddings as the model's init does."""
    encoder = tinytf_encoder(model)
    pairs = [(e, lambda e=e: nn.Embedding(e.num_embeddings, e.embedding_dim))
             for e in (encoder.tok_emb, encoder.pos_emb)]
    _load_fresh(pairs, encoder.cfg.init_std, seed)


@CALLBACKS.register("perturb")
class InitialPerturbation:
    """Perturb the run's starting weights once, before the first step (module docstring).

    Args:
        kind: ``"noise"``, ``"reinit_layer"`` or ``"reinit_embeddings"``.
        seed: the perturbation's draws (e.g. the run's seed).
        scale: ``"noise"``: std relative to each tensor's RMS.
        block: ``"reinit_layer"``: the 0-based encoder block.
        prefix: ``"noise"``: parameters whose names start with it ("" = all).

    Result: DataFrame ``param, rms_before, rms_change`` (RMS of the change), one row per
    parameter of the model.
    """

    name = "perturb"

    def __init__(self, kind: str, seed: int = 0, scale: float = NOISE_SCALE, block: int = 0,
                 prefix: str = "encoder."):
        if kind not in PERTURBATIONS:
            raise ValueError(f"kind must be one of {PERTURBATIONS}, got {kind!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an int >= 0, got {seed!r}")
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) \
                or not math.isfinite(scale) or scale <= 0:
            raise ValueError(f"scale must be a finite number > 0, got {scale!r}")
        if isinstance(block, bool) or not isinstance(block, int) or block < 0:
            raise ValueError(f"block must be an int >= 0, got {block!r}")
        if not isinstance(prefix, str):
            raise ValueError(f"prefix must be a string, got {prefix!r}")
        self.kind, self.seed, self.scale = kind, seed, float(scale)
        self.block, self.prefix = block, prefix
        self.rows: list[tuple] = []

    @torch.no_grad()
    def on_train_start(self, model: nn.Module) -> None:
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        if self.kind == "noise":
            chosen = [(n, p) for n, p in model.named_parameters() if n.startswith(self.prefix)]
            if not chosen:
                raise ValueError(f"no parameter of {type(model).__name__} starts with "
                                 f"{self.prefix!r}")
            add_relative_noise(chosen, self.scale, self.seed)
        elif self.kind == "reinit_layer":
            reinit_block(model, self.block, self.seed)
        else:
            reinit_embeddings(model, self.seed)
        # on a resume the loop then loads the checkpoint's weights over these; the rows
        # are the same because the draws depend on the seed alone
        self.rows = [(n, rms(before[n]), rms(p - before[n]))
                     for n, p in model.named_parameters()]

    def result(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["param", "rms_before", "rms_change"])
