r"""Gradient probes inside a training run: one layer's per-filter weights and gradients every step
(fig 4.15's temporal consistency) and mini-batch gradient cohesion at frozen weights (fig 4.16).

Chapter 05, seed 004 (the thesis ``[Tuddenham2026]``, see REFERENCES.md) sec. 4.4.3.1-4.4.3.2.
Two callbacks of the
one training loop (`lalr_core.core.loop.train`), registered in ``CALLBACKS``:

* ``"filter_gradients"`` (`FilterGradients`): before every optimiser step (the loop's
  ``on_backward``), the weight ``theta_t`` of one layer (named by a setting, e.g. ``"conv2"`` or
  ``"layer1.0.conv1"``) and its raw mini-batch gradient ``grad_t`` (before clipping and any
  gradient transform), float32 on the CPU; at the end ``phi_t = S_cos(theta_tau - theta_t,
  grad_t)`` per filter (eq. 4.56, `gradient_statistics.temporal_consistency`) against the final weights
  ``theta_tau``. The total distance ``D_t`` that fig 4.15 overlays is chapter 04's
  (`lalr_core.methods.trajectory`, callback ``"trajectory"``): run it beside this one.
* ``"cohesion_probe"`` (`CohesionProbe`): at fixed steps (``per_epoch`` evenly spaced in each
  epoch, or given ``steps``), with the weights frozen, ``d`` mini-batch gradients of all
  trainable parameters for each probe batch size, and per gradient ``cos psi_i = cos(g_i, mu)``
  and ``||g_i||`` with the cohesion ``C`` of eq. 4.58 (`gradient_statistics.gradient_cohesion`).

Neither changes the training: a run with them gives bit-identical weights to one without
(tested). `FilterGradients` only copies tensors. `CohesionProbe` draws its batches through the
run's own task (``task.batches`` / ``task.loss``: same data, augmentation and loss) with a
generator of its own, seeded per probe (`probe_seed`), inside ``torch.random.fork_rng`` (so a
dropout or any use of the global RNG in the probe's forward passes leaves the run's RNG as it
was); it takes gradients with ``torch.autograd.grad`` (no parameter's ``.grad`` is touched),
restores every buffer (batch-norm running statistics and counters) and the train/eval mode.

Choices where the source is silent (ours):

* ``grad_t`` is the raw mini-batch gradient of the loss (weight decay, momentum and clipping are
  not in it); a filter is one output channel's weight (the bias is not part of it); ``theta_tau``
  is the weights after the last step.
* The probe's gradients are taken in train mode by default (``mode="train"``): batch
  statistics, i.e. the gradient a training step with that batch size would take; the running
  statistics are restored afterwards, so the probe batches never enter them. ``mode="eval"``
  uses the running statistics instead (the gradient of the network as evaluated).
* The ``d`` batches of one probe size are drawn as the training draws its batches: consecutive
  batches of a fresh shuffle of the training split (and of a new shuffle when one runs out),
  keeping only full batches; so they are disjoint when ``d * batch_size`` does not exceed the
  training split. Each probe's generator is seeded from ``(seed, step, batch_size)`` alone, so
  a probe's batches do not depend on earlier probes (a resumed run probes the same batches).
* ``per_epoch`` probes sit after steps ``round(k K / m)``, ``k = 1..m``, of each epoch of ``K``
  steps (the last one after the epoch's last step); with ``K < m`` there are ``K`` per epoch.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.validation import check_int
from lalr_core.methods.curvature.gradient_statistics import (
    COHESION_D,
    gradient_cohesion,
    temporal_consistency,
)

PROBE_BATCHES = (4, 32, 256)   # our reduced fig 4.16 (the source does not state them)
PROBES_PER_EPOCH = 25          # fig 4.16's caption: "sampled 25 times per epoch"
MODES = ("train", "eval")      # the probe's batch-norm mode (see the module docstring)
_MAX_PASSES = 1000             # shuffles tried for d full batches before giving up


def layer_weight(model: nn.Module, layer: str) -> nn.Parameter:
    """The ``weight`` parameter of module ``layer`` (e.g. ``"conv2"``, ``"layer1.0.conv1"``).

    Raises:
        ValueError: no such module, or one without a trainable ``weight`` of >= 2 dims (one
            row per filter / output unit); the message lists the candidates.
    """
    modules = dict(model.named_modules())
    candidates = [n for n, m in modules.items() if n and isinstance(getattr(m, "weight", None),
                                                                     nn.Parameter)
                  and m.weight.ndim >= 2]
    module = modules.get(layer) if layer else None
    weight = getattr(module, "weight", None)
    if not isinstance(weight, nn.Parameter) or weight.ndim < 2 or not weight.requires_grad:
        raise ValueError(f"layer {layer!r} is not a module with a trainable weight of >= 2 dims; "
                         f"choose one of {candidates}")
    return weight


def _copy(t: torch.Tensor) -> torch.Tensor:
    """A float32 CPU copy, contiguous (channels_last weights included)."""
    return t.detach().to("cpu", torch.float32, copy=True).contiguous()


# ----------------------------------------------------------------------------- fig 4.15
@CALLBACKS.register("filter_gradients")
class FilterGradients:
    """One layer's weights and raw gradients before every ``every``-th step; ``phi_t`` at the end.

    Memory: ``2 x numel(weight) x 4`` bytes per recorded step on the CPU (fig 4.15's reduced
    layer, 32 x 288: 74 kB a step, 47 MB for 645 steps; ResNet-18's ``layer1.0.conv1``, 64 x
    576: 295 kB a step, so a 200-epoch CIFAR run needs ``every`` of 20 or more). The result
    holds only per-filter numbers unless ``keep``.

    Args:
        layer: the module whose ``weight`` is recorded (`layer_weight`).
        every: record steps ``1, 1 + every, 1 + 2 every, ...`` (1: every step).
        keep: also return the recorded tensors (tests, small layers).

    Result (``result["callbacks"]["filter_gradients"]``), a dict:

    * ``layer``, ``n`` (the filter dimension, ``in_channels x k x k``: the ``10/sqrt(n)``
      threshold's), ``filters``;
    * ``step`` ``(T,)``: the step ``t`` (1-based) whose gradient each record holds, taken at
      the weights ``theta_{t-1}`` before that step;
    * ``phi`` ``(T, F)`` float64: eq. 4.56 per filter (NaN where ``theta_t = theta_tau``);
    * ``dist`` ``(T, F)``: ``||theta_tau - theta_t||`` per filter; ``grad_norm`` ``(T, F)``;
    * ``epoch_end_step``: ``{epoch: last step of that epoch}``;
    * with ``keep``: ``weights``, ``grads`` ``(T, F, ...)`` and ``final``.
    """

    name = "filter_gradients"

    def __init__(self, layer: str, every: int = 1, keep: bool = False):
        if not isinstance(layer, str) or not layer:
            raise ValueError(f"layer must be a module name, got {layer!r}")
        if not isinstance(keep, bool):
            raise ValueError(f"keep must be true or false, got {keep!r}")  # noqa: TRY004
        self.layer, self.every, self.keep = layer, check_int(every, "every"), keep
        self._param: nn.Parameter | None = None
        self.t = 0
        self.steps: list[int] = []
        self.weights: list[torch.Tensor] = []
        self.grads: list[torch.Tensor] = []
        self.final: torch.Tensor | None = None
        self.epoch_end_step: dict[int, int] = {}

    def on_train_start(self, model: nn.Module) -> None:
        self._param = layer_weight(model, self.layer)

    def on_backward(self, model: nn.Module) -> None:
        self.t += 1
        if (self.t - 1) % self.every:
            return
        p = self._param
        if p.grad is None:
            raise RuntimeError(f"layer {self.layer!r} has no gradient at step {self.t}")
        self.steps.append(self.t)
        self.weights.append(_copy(p))
        self.grads.append(_copy(p.grad))

    def on_epoch_end(self, model: nn.Module, row: dict) -> None:
        self.final = _copy(self._param)           # theta_tau once the last epoch has ended
        self.epoch_end_step[int(row["epoch"])] = self.t

    def result(self) -> dict[str, Any]:
        out: dict[str, Any] = {"layer": self.layer, "step": np.asarray(self.steps, dtype=int),
                               "epoch_end_step": dict(self.epoch_end_step)}
        if not self.steps or self.final is None:
            return {**out, "n": None, "filters": None, "phi": np.zeros((0, 0)),
                    "dist": np.zeros((0, 0)), "grad_norm": np.zeros((0, 0))}
        W, G = torch.stack(self.weights), torch.stack(self.grads)
        F_ = W.shape[1]
        out.update(n=int(np.prod(W.shape[2:])) if W.ndim > 2 else 1, filters=int(F_),
                   phi=temporal_consistency(W, G, self.final, per_filter=True).numpy(),
                   dist=(self.final.double().unsqueeze(0) - W.double()).reshape(len(W), F_, -1)
                   .norm(dim=-1).numpy(),
                   grad_norm=G.double().reshape(len(G), F_, -1).norm(dim=-1).numpy())
        if self.keep:
            out.update(weights=W, grads=G, final=self.final.clone())
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "every": self.every, "t": self.t, "steps": list(self.steps),
                "weights": torch.stack(self.weights) if self.weights else None,
                "grads": torch.stack(self.grads) if self.grads else None,
                "final": self.final, "epoch_end_step": dict(self.epoch_end_step)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if (state["layer"], state["every"]) != (self.layer, self.every):
            raise ValueError(f"state of layer {state['layer']!r} every {state['every']} does not "
                             f"match layer {self.layer!r} every {self.every}")
        self.t, self.steps = int(state["t"]), list(state["steps"])
        self.weights = [] if state["weights"] is None else list(state["weights"].unbind(0))
        self.grads = [] if state["grads"] is None else list(state["grads"].unbind(0))
        self.final, self.epoch_end_step = state["final"], dict(state["epoch_end_step"])


# ----------------------------------------------------------------------------- fig 4.16
def probe_seed(seed: int, step: int, batch_size: int) -> int:
    """The seed of the generator that draws probe ``(step, batch_size)``'s batches."""
    return (int(seed) * 1_000_003 + int(step) * 10_007 + int(batch_size)) % (2 ** 62)


def probe_positions(steps_per_epoch: int, per_epoch: int) -> list[int]:
    """The 1-based steps of an epoch of ``steps_per_epoch`` steps after which a probe runs:
    ``round(k K / m)`` for ``k = 1..m`` (unique; ``min(K, m)`` of them, the last = ``K``)."""
    K, m = check_int(steps_per_epoch, "steps_per_epoch"), check_int(per_epoch, "per_epoch")
    return sorted({max(1, int(np.floor(k * K / m + 0.5))) for k in range(1, m + 1)})


def probe_batches(cfg: RunConfig, data, batch_size: int, d: int,
                  generator: torch.Generator) -> list:
    """``d`` full training batches of ``batch_size`` drawn by the run's task (its shuffle,
    augmentation and batch format) from ``generator``: consecutive batches of one shuffle, then
    of the next. A batch's size is read from its last element (the labels of
    ``(X, y)``); a batch of another size (an epoch's remainder) is skipped.

    Raises:
        ValueError: no full batch in a shuffle (``batch_size`` above the training split).
    """
    task, sized = cfg.task, dataclasses.replace(cfg, batch_size=batch_size)
    out: list = []
    for _ in range(_MAX_PASSES):
        found = False
        for batch in task.batches(sized, data, generator):
            if len(batch[-1]) == batch_size:
                out.append(batch)
                found = True
                if len(out) == d:
                    return out
        if not found:
            raise ValueError(f"probe batch size {batch_size} exceeds the training split: no "
                             "full batch")
    raise RuntimeError("unreachable")  # pragma: no cover


def flat_gradients(model: nn.Module, cfg: RunConfig, batches: Sequence, generator: torch.Generator,
                   params: Sequence[torch.Tensor] | None = None
                   ) -> tuple[torch.Tensor, np.ndarray]:
    """Each batch's gradient of the task's loss w.r.t. ``params`` (default: every trainable
    parameter, ``named_parameters`` order), flattened: ``(len(batches), P)`` float32, and the
    batches' losses ``(len(batches),)``; taken with ``torch.autograd.grad`` at the model's
    current mode and weights (no ``.grad`` is touched)."""
    params = [p for p in model.parameters() if p.requires_grad] if params is None else params
    device = params[0].device
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) \
        if cfg.bf16 and device.type == "cuda" else contextlib.nullcontext()
    rows, losses = [], []
    for batch in batches:
        loss = cfg.task.loss(model, batch, autocast, generator)[0]
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        rows.append(torch.cat([(torch.zeros_like(p) if g is None else g).detach().float()
                               .reshape(-1) for p, g in zip(params, grads)]))
        losses.append(loss.detach())
    return torch.stack(rows), torch.stack(losses).double().cpu().numpy()


@CALLBACKS.register("cohesion_probe")
class CohesionProbe:
    """Gradient cohesion (eq. 4.58) at frozen weights, for several mini-batch sizes.

    Args:
        run: the run's configuration, ``cfg.key()`` (its task gives the data, the batches and
            the loss; it must be the run this callback is attached to).
        batch_sizes: probe mini-batch sizes (our reduction: 4, 32, 256).
        d: gradients per probe and batch size (fig 4.16: 10).
        per_epoch: probes per epoch (fig 4.16: 25), evenly spaced (`probe_positions`); or
        steps: the global 1-based steps after which to probe (then ``per_epoch`` is unused).
        mode: ``"train"`` (batch statistics; the buffers are restored) or ``"eval"``.
        seed: of the probes' batch draws (`probe_seed`).
        keep: also return every probe's ``(d, P)`` gradient stack (tests, small models).

    Result (``result["callbacks"]["cohesion_probe"]``), a dict:

    * ``points``: DataFrame ``step, epoch, batch_size, i, cos, norm``: one row per gradient
      ``g_i`` (``cos`` = ``cos psi_i``, ``norm`` = ``||g_i||``), ``epoch`` = step / steps per
      epoch (fractional);
    * ``probes``: DataFrame ``step, epoch, batch_size, cohesion, loss``: ``C`` and the mean
      loss of the ``d`` batches;
    * ``steps_per_epoch``, ``mode``, ``d``, ``num_parameters``; with ``keep``: ``grads``,
      ``{(step, batch_size): (d, P) tensor}``.
    """

    name = "cohesion_probe"

    def __init__(self, run: Mapping[str, Any], batch_sizes: Sequence[int] = PROBE_BATCHES,
                 d: int = COHESION_D, per_epoch: int = PROBES_PER_EPOCH,
                 steps: Sequence[int] | None = None, mode: str = "train", seed: int = 0,
                 keep: bool = False):
        if not isinstance(run, Mapping):
            raise ValueError(  # noqa: TRY004 - a bad setting, like the others
                f"run must be the run's cfg.key() mapping, got {type(run).__name__}")
        self.cfg = RunConfig(**run)
        if isinstance(batch_sizes, (str, bytes)) or not len(batch_sizes):
            raise ValueError(f"batch_sizes must list >= 1 size, got {batch_sizes!r}")
        self.batch_sizes = tuple(check_int(b, "batch_sizes") for b in batch_sizes)
        if len(set(self.batch_sizes)) != len(self.batch_sizes):
            raise ValueError(f"batch_sizes repeat a size: {self.batch_sizes}")
        self.d = check_int(d, "d", 2)
        self.per_epoch = check_int(per_epoch, "per_epoch")
        self.steps = None if steps is None else \
            tuple(sorted({check_int(s, "steps") for s in steps}))
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not isinstance(keep, bool):
            raise ValueError(f"keep must be true or false, got {keep!r}")  # noqa: TRY004
        self.mode, self.seed, self.keep = mode, check_int(seed, "seed", 0), keep
        self.t = 0
        self.steps_per_epoch: int | None = None
        self.num_parameters: int | None = None
        self._data = None
        self._device: torch.device | None = None
        self.point_rows: list[tuple] = []
        self.probe_rows: list[tuple] = []
        self.kept: dict[tuple[int, int], torch.Tensor] = {}

    # ------------------------------------------------------------------ set-up
    def _generator(self, seed: int) -> torch.Generator:
        return torch.Generator(device=self._device).manual_seed(seed)

    def _fork(self):
        devices = [self._device.index or 0] if self._device.type == "cuda" else []
        return torch.random.fork_rng(devices=devices)

    def on_train_start(self, model: nn.Module) -> None:
        self._device = next(model.parameters()).device
        with self._fork():
            self._data = self.cfg.task.load(self.cfg, self._device).to(self._device)
            # steps of one epoch, counted on the task's own batches (own generator)
            self.steps_per_epoch = sum(1 for _ in self.cfg.task.batches(
                self.cfg, self._data, self._generator(self.seed)))
        if not self.steps_per_epoch:
            raise ValueError("the run's task yields no training batch")
        self._at = set(probe_positions(self.steps_per_epoch, self.per_epoch))
        self.num_parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)

    def _due(self, t: int) -> bool:
        if self.steps is not None:
            return t in self.steps
        return ((t - 1) % self.steps_per_epoch) + 1 in self._at

    # ------------------------------------------------------------------ hooks
    def on_step(self, model: nn.Module) -> None:
        self.t += 1
        if self._due(self.t):
            self.probe(model, self.t)

    def probe(self, model: nn.Module, step: int) -> None:
        """Run one probe at the model's current weights and record it under ``step``."""
        params = [p for p in model.parameters() if p.requires_grad]
        buffers = [(b, b.detach().clone()) for b in model.buffers()]
        was_training = model.training
        epoch = step / self.steps_per_epoch
        with self._fork():
            try:
                model.train(self.mode == "train")
                for b in self.batch_sizes:
                    gen = self._generator(probe_seed(self.seed, step, b))
                    batches = probe_batches(self.cfg, self._data, b, self.d, gen)
                    G, losses = flat_gradients(model, self.cfg, batches, gen, params)
                    loss = float(losses.mean())
                    coh = gradient_cohesion(G)
                    cos, norms = coh.cos.cpu().numpy(), coh.norms.cpu().numpy()
                    self.point_rows += [(step, epoch, b, i, float(c), float(n))
                                        for i, (c, n) in enumerate(zip(cos, norms))]
                    self.probe_rows.append((step, epoch, b, float(coh.value), loss))
                    if self.keep:
                        self.kept[(step, b)] = G.cpu()
            finally:
                model.train(was_training)
                with torch.no_grad():
                    for buf, saved in buffers:
                        buf.copy_(saved)

    # ------------------------------------------------------------------ result and state
    def result(self) -> dict[str, Any]:
        out = {"points": pd.DataFrame(self.point_rows,
                                      columns=["step", "epoch", "batch_size", "i", "cos", "norm"]),
               "probes": pd.DataFrame(self.probe_rows,
                                      columns=["step", "epoch", "batch_size", "cohesion", "loss"]),
               "steps_per_epoch": self.steps_per_epoch, "mode": self.mode, "d": self.d,
               "num_parameters": self.num_parameters}
        if self.keep:
            out["grads"] = dict(self.kept)
        return out

    def state_dict(self) -> dict[str, Any]:
        return {"t": self.t, "point_rows": list(self.point_rows),
                "probe_rows": list(self.probe_rows), "kept": dict(self.kept)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.t = int(state["t"])
        self.point_rows, self.probe_rows = list(state["point_rows"]), list(state["probe_rows"])
        self.kept = dict(state["kept"])
