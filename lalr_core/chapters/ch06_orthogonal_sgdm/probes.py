"""Training-loop probes of chapter 06 (seed 004 sec. 5.5 and app. I), as `train` callbacks.

Each probe watches named modules or parameters, keeps small records (never the trajectory),
and returns plain DataFrames / arrays from ``result()`` so figures are drawn from the cache:

* `FilterCosineProbe` -- figs 5.10/5.11: five-number summary of the |cos| set between the
  filters' *weights* of a layer, every ``every`` batches (eq. 5.10 and the author's code use weights; the captions say gradients);
* `RepresentationProbe` -- fig 5.12: ``E[R_l]`` of post-ReLU block outputs on the first
  ``samples`` samples of every ``every``-th training batch (as the author's code does);
* `ZeroGradProbe` -- fig 5.13: number of exactly-zero (and ``|g| <= eps``) entries of a layer's
  raw gradient per batch, the "temporarily disabled parameters" (``eps`` = 1e-4 is the author's code's);
* `SymmetryProbe` -- figs I.1/I.2: per-filter ``phi_t`` and ``phi_t(pi)`` (eqs. 4.56, I.8).

Hooks: ``on_train_start(model)``, ``on_backward(model)`` (raw gradients, before clipping and
orthogonalisation), ``on_step(model)`` (after the optimiser step), ``result()``,
``state_dict()``/``load_state_dict()`` for checkpoints.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.methods.similarity.cosine_sets import (
    channel_similarity,
    five_numbers,
    pairwise_abs_cos,
    rowwise_cos,
)


def _module(model: torch.nn.Module, name: str) -> torch.nn.Module:
    modules = dict(model.named_modules())
    if name not in modules:
        raise ValueError(f"model has no module {name!r}; e.g. "
                         f"{[n for n, m in modules.items() if isinstance(m, torch.nn.Conv2d)][:8]}")
    return modules[name]


def _weight(model: torch.nn.Module, name: str) -> torch.Tensor:
    w = getattr(_module(model, name), "weight", None)
    if w is None or w.ndim < 2:
        raise ValueError(f"module {name!r} has no matrix-like weight")
    return w


def _check_every(every) -> int:
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be an int >= 1, got {every!r}")
    return every


class _Probe:
    """Step counting and the checkpoint contract shared by the probes."""

    name = "probe"

    def __init__(self, every: int = 1):
        self.every = _check_every(every)
        self.step = 0
        self.records: list = []

    def state_dict(self) -> dict:
        return {"step": self.step, "records": list(self.records)}

    def load_state_dict(self, state: dict) -> None:
        self.step, self.records = state["step"], list(state["records"])


@CALLBACKS.register("filter_cos")
class FilterCosineProbe(_Probe):
    """|cos| between filter weights of ``layers``, summarised every ``every`` batches.

    ``result()``: DataFrame with columns ``step, layer, min, q1, median, q3, max, mean,
    n_pairs, fan_in``; step 0 is the initialisation.
    """

    name = "filter_cos"

    def __init__(self, layers: list[str], every: int = 10):
        super().__init__(every)
        self.layers = list(layers)

    def _record(self, model) -> None:
        for name in self.layers:
            w = _weight(model, name)
            values = pairwise_abs_cos(w)
            self.records.append({"step": self.step, "layer": name, **five_numbers(values.cpu()),
                                 "n_pairs": len(values), "fan_in": w[0].numel()})

    def on_train_start(self, model) -> None:
        if self.step == 0 and not self.records:
            self._record(model)

    def on_step(self, model) -> None:
        self.step += 1
        if self.step % self.every == 0:
            self._record(model)

    def result(self) -> pd.DataFrame:
        return pd.DataFrame(self.records)


@CALLBACKS.register("representations")
class RepresentationProbe(_Probe):
    """``E[R_l]`` of named modules' post-ReLU outputs on the first ``samples`` samples of every
    ``every``-th training batch (batch 0 included), captured by forward hooks during the
    ordinary training forward pass (no extra forward, BN statistics untouched).

    ``result()``: DataFrame ``step, layer, sample, similarity``.
    """

    name = "representations"

    def __init__(self, modules: list[str], every: int = 10, samples: int = 10,
                 post_relu: bool = True):
        super().__init__(every)
        self.modules, self.samples, self.post_relu = list(modules), int(samples), post_relu
        self._handles: list = []

    def on_train_start(self, model) -> None:
        for h in self._handles:
            h.remove()
        self._handles = [_module(model, name).register_forward_hook(self._hook(name))
                         for name in self.modules]

    def _hook(self, name: str):
        def capture(module, inputs, output):
            if not module.training or self.step % self.every:
                return
            h = output[: self.samples].detach()
            sims = channel_similarity(F.relu(h) if self.post_relu else h).cpu().numpy()
            self.records += [(self.step, name, i, float(s)) for i, s in enumerate(sims)]
        return capture

    def on_step(self, model) -> None:
        self.step += 1

    def result(self) -> pd.DataFrame:
        for h in self._handles:
            h.remove()
        self._handles = []
        return pd.DataFrame(self.records, columns=["step", "layer", "sample", "similarity"])


@CALLBACKS.register("zero_grad")
class ZeroGradProbe(_Probe):
    """Entries of a layer's raw weight gradient that are exactly 0 / at most ``eps``, per batch.

    Counted on the device and synchronised once per epoch. ``result()``: DataFrame
    ``step, zero, below_eps`` plus ``numel``.
    """

    name = "zero_grad"

    def __init__(self, layer: str, eps: float = 1e-4):
        super().__init__(1)
        self.layer, self.eps = layer, float(eps)
        self._pending: list[torch.Tensor] = []

    def on_backward(self, model) -> None:
        g = _weight(model, self.layer).grad
        self.numel = g.numel()
        self._pending.append(torch.stack([(g == 0).sum(), (g.abs() <= self.eps).sum()]))

    def on_step(self, model) -> None:
        self.step += 1

    def on_epoch_end(self, model, row) -> None:
        if self._pending:
            counts = torch.stack(self._pending).cpu().numpy()
            first = self.step - len(counts) + 1
            self.records += [(first + i, int(z), int(e)) for i, (z, e) in enumerate(counts)]
            self._pending = []

    def result(self) -> pd.DataFrame:
        self.on_epoch_end(None, None)
        df = pd.DataFrame(self.records, columns=["step", "zero", "below_eps"])
        df.attrs["numel"] = getattr(self, "numel", None)
        return df


@CALLBACKS.register("symmetry")
class SymmetryProbe(_Probe):
    """Per-filter ``phi_t = S_cos(theta_tau - theta_t, g_t)`` and
    ``phi_t(pi) = S_cos(pi theta_tau - theta_t, g_t)`` of one layer (eqs. 4.56, I.8).

    Keeps ``theta_t`` and the raw gradient ``g_t`` of the layer every ``every`` batches (on the
    CPU), and ``theta_tau`` = the weights after the last step. ``pi`` permutes the output
    channels (filters) of ``theta_tau`` and is redrawn for every kept batch (our choice; the thesis does not say).
    ``result()``: dict with ``steps`` ``[T]``, ``phi`` and ``phi_perm`` ``[T, N_l]``, ``fan_in``.

    The null of the own update: ``theta_t`` is kept *before* step ``t``, so ``theta_tau -
    theta_t`` contains ``-lr g_t`` itself (and, under momentum ``beta``, its echo in the next
    steps, weight ``beta^k`` after ``k`` steps), which pushes ``phi_t`` below 0 whatever the
    rest of the trajectory does. With ``skip = k > 0`` (a multiple of ``every``) ``result()``
    also has ``steps_ahead`` ``[T']``, ``phi_ahead = S_cos(theta_tau - theta_{t+k}, g_t)`` and
    ``phi_perm_ahead = S_cos(pi theta_tau - theta_{t+k}, g_t)`` ``[T', N_l]`` (``pi`` the same
    as batch ``t``'s), for the kept batches ``t`` whose ``t + k`` was kept too, and ``skip``:
    the direction to the solution from where ``g_t``'s own step has (nearly) played out.
    """

    name = "symmetry"

    def __init__(self, layer: str, every: int = 1, seed: int = 0, skip: int = 0):
        super().__init__(every)
        if isinstance(skip, bool) or not isinstance(skip, int) or skip < 0 or skip % every:
            raise ValueError(f"skip must be an int >= 0 and a multiple of every = {every}, "
                             f"got {skip!r}")
        self.layer, self.seed, self.skip = layer, seed, skip
        self.final: torch.Tensor | None = None

    def on_backward(self, model) -> None:
        if self.step % self.every == 0:
            w = _weight(model, self.layer)
            self.records.append((self.step, w.detach().cpu().clone(), w.grad.detach().cpu().clone()))

    def on_step(self, model) -> None:
        self.step += 1

    def on_epoch_end(self, model, row) -> None:
        self.final = _weight(model, self.layer).detach().cpu().clone()

    def state_dict(self) -> dict:
        return {**super().state_dict(), "final": self.final}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.final = state["final"]

    def result(self) -> dict[str, np.ndarray]:
        if self.final is None or not self.records:
            raise RuntimeError("SymmetryProbe has no recorded batches or final weights")
        gen = torch.Generator().manual_seed(self.seed)
        theta_at = {step: theta for step, theta, _ in self.records}
        steps, phi, phi_perm, ahead = [], [], [], ([], [], [])
        for step, theta, grad in self.records:
            perm = torch.randperm(len(self.final), generator=gen)
            steps.append(step)
            phi.append(rowwise_cos(self.final - theta, grad).numpy())
            phi_perm.append(rowwise_cos(self.final[perm] - theta, grad).numpy())
            later = theta_at.get(step + self.skip) if self.skip else None
            if later is not None:
                ahead[0].append(step)
                ahead[1].append(rowwise_cos(self.final - later, grad).numpy())
                ahead[2].append(rowwise_cos(self.final[perm] - later, grad).numpy())
        out = {"steps": np.array(steps), "phi": np.stack(phi), "phi_perm": np.stack(phi_perm),
               "fan_in": int(self.final[0].numel())}
        if self.skip:
            n = len(self.final)
            out |= {"skip": self.skip, "steps_ahead": np.array(ahead[0], dtype=int),
                    "phi_ahead": np.stack(ahead[1]) if ahead[1] else np.empty((0, n)),
                    "phi_perm_ahead": np.stack(ahead[2]) if ahead[2] else np.empty((0, n))}
        return out
