"""Chapter 03's per-run quantities: the four rows of table T-002-1, the separately trained
linearised model's gap (Theorem 3's quantity), and the NTK at theta_0 of a run's trainable set
(or of its LoRA factors alone); for the source's own setting (a Hugging Face encoder with
LoRA) the same rows and kappa through `TokensAndMask` and `looped_jacobian`.

Every quantity is over the run's trainable parameters (LoRA A, B and the head; our choice),
with theta_0 = their values at initialisation (`lalr_core.core.loop.train.initial_model`, the
run's seed) and theta_t = the run's final weights (callback ``"weights"``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import initial_model
from lalr_core.methods.ntk import empirical as ntk
from lalr_core.methods.ntk import theory as th


def margin(logits: torch.Tensor) -> torch.Tensor:
    """The scalar function of the theory for two classes: ``z_1 - z_0`` (our choice)."""
    return logits[:, 1] - logits[:, 0]


def final_model(cfg: RunConfig, result: Mapping) -> nn.Module:
    """The run's model with its final weights (eval mode)."""
    model = initial_model(cfg)
    model.load_state_dict(result["callbacks"]["weights"])
    return model.eval()


def theta0(cfg: RunConfig) -> dict[str, torch.Tensor]:
    """The trainable parameters at initialisation (name -> tensor)."""
    return ntk.snapshot_params(initial_model(cfg))


@torch.no_grad()
def logits(model: nn.Module, inputs: torch.Tensor, batch: int = 500) -> torch.Tensor:
    model.eval()
    return torch.cat([model(inputs[i:i + batch]) for i in range(0, len(inputs), batch)])


def _distance(model: nn.Module, start: Mapping[str, torch.Tensor]) -> float:
    moved = dict(model.named_parameters())
    return float(torch.sqrt(sum(((moved[n].detach() - t0) ** 2).sum()
                                for n, t0 in start.items())))


def distance(cfg: RunConfig, result: Mapping) -> float:
    """``||theta_t - theta_0||_2`` over the run's trainable parameters."""
    return _distance(final_model(cfg, result), theta0(cfg))


def table_numbers(cfg: RunConfig, result: Mapping, data) -> dict[str, float]:
    """Table T-002-1's rows for one run.

    * ``distance``: ``||theta_t - theta_0||_2`` over the trainable parameters;
    * ``lin_error``: ``||f_theta_t(x*) - [f_theta_0(x*) + J_0 (theta_t - theta_0)]||_2`` over
      the logit vectors of every training input (the slides' table, row 2), and ``lin_error_rms`` (/ sqrt n);
    * ``kl``: mean over validation examples of KL(softmax f_theta_t || softmax f-bar_theta_t),
      f-bar the same first-order expansion (our reading of the slides' "KL Divergence"; natural log);
    * ``accuracy``: validation accuracy of f_theta_t, in %.
    """
    model, start = final_model(cfg, result), theta0(cfg)
    X, _ = data.split("train")
    rem = ntk.taylor_remainder(model, start, X)
    Xv, yv = data.split("val")
    f_t = logits(model, Xv).double()
    f_bar = f_t - ntk.taylor_remainder(model, start, Xv).double()
    kl = F.kl_div(F.log_softmax(f_bar, 1), F.log_softmax(f_t, 1), log_target=True,
                  reduction="batchmean")
    return {"distance": _distance(model, start), "lin_error": float(torch.linalg.vector_norm(rem)),
            "lin_error_rms": float(torch.linalg.vector_norm(rem) / np.sqrt(len(X))),
            "kl": float(kl), "accuracy": 100 * float((f_t.argmax(1) == yv).float().mean())}


def linearised_gap(cfg: RunConfig, result: Mapping, lin_cfg: RunConfig, lin_result: Mapping,
                   data) -> float:
    """``||f_theta_t(x*) - f-bar_theta-bar_t(x*)||_2`` on the training inputs: the fine-tuned
    model against its linearised model trained separately from the same theta_0 with the same
    optimiser, seed and data order (Theorem 3's quantity)."""
    X, _ = data.split("train")
    return float(torch.linalg.vector_norm(logits(final_model(cfg, result), X)
                                          - logits(final_model(lin_cfg, lin_result), X)))


def ntk_at_init(cfg: RunConfig, inputs: torch.Tensor, params=None) -> torch.Tensor:
    """The margin NTK ``K = J J^T`` (float64) at the run's theta_0 on ``inputs``, over the
    trainable parameters (or ``params``, `lalr_core.methods.ntk.empirical.ntk_params`)."""
    return ntk.empirical_ntk(initial_model(cfg), inputs, params=params, output=margin,
                             dtype=torch.float64)


def lora_names(model: nn.Module) -> list[str]:
    """The trainable LoRA factors (A, B) of ``model``: its trainable set without the head."""
    return [n for n, p in model.named_parameters() if p.requires_grad and ".lora_" in n]


def lora_ntk_at_init(cfg: RunConfig, inputs: torch.Tensor) -> torch.Tensor:
    """`ntk_at_init` over the LoRA factors only (the head excluded): at theta_0 the head's
    kernel is the same for every LoRA placement (B = 0 leaves the features unchanged), so it
    dominates kappa without telling placements apart (fig (b))."""
    return ntk_at_init(cfg, inputs, params=lora_names(initial_model(cfg)))


# ----------------------------------------------------------------------------- HF encoders
class TokensAndMask(nn.Module):
    """A Hugging Face sequence classifier as a function of one tensor: ``x[:, 0]`` the token
    ids, ``x[:, 1]`` the attention mask -> logits. `lalr_core.methods.ntk.empirical`'s kernels,
    Jacobians and Taylor remainders take one input tensor; through this wrapper they run on
    the source's own model (parameter names get the prefix ``hf.``). Attention runs in the
    library's "eager" form: its fused kernels have no forward-mode derivative (``jvp``)."""

    def __init__(self, hf: nn.Module):
        super().__init__()
        if hasattr(hf, "set_attn_implementation"):
            hf.set_attn_implementation("eager")
        else:
            hf.config._attn_implementation = "eager"
        self.hf = hf

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hf(input_ids=x[:, 0], attention_mask=x[:, 1]).logits


def _stacked(data, split: str) -> tuple[torch.Tensor, torch.Tensor]:
    ids, mask, y = data.split(split)
    return torch.stack([ids, mask], 1), y


def nlp_numbers(cfg: RunConfig, result: Mapping, data, *, ntk_n: int = 0,
                sigma: float = 0.5) -> dict[str, float]:
    """Table T-002-1's rows (as `table_numbers`) for a run of the source's own setting (a
    Hugging Face encoder with LoRA, `runs.nlp_finetuning`): every quantity over the trainable
    parameters only (LoRA A, B and the classifier), so the linearisation error and KL need
    one ``jvp`` at theta_0 with tangent theta_t - theta_0, and kappa the per-sample Jacobian of
    the margin on ``ntk_n`` training inputs, both over those parameters, not the encoder's
    frozen weights. ``ntk_n > 0`` adds ``kappa`` (LoRA and head) and ``kappa_lora`` at
    theta_0 (sigma as fig (b))."""
    start = {f"hf.{n}": t for n, t in theta0(cfg).items()}
    model = TokensAndMask(final_model(cfg, result))
    X, _ = _stacked(data, "train")
    rem = ntk.taylor_remainder(model, start, X)
    Xv, yv = _stacked(data, "val")
    f_t = logits(model, Xv).double()
    f_bar = f_t - ntk.taylor_remainder(model, start, Xv).double()
    kl = F.kl_div(F.log_softmax(f_bar, 1), F.log_softmax(f_t, 1), log_target=True,
                  reduction="batchmean")
    out = {"distance": _distance(model, start),
           "lin_error": float(torch.linalg.vector_norm(rem)),
           "lin_error_rms": float(torch.linalg.vector_norm(rem) / np.sqrt(len(X))),
           "kl": float(kl), "accuracy": 100 * float((f_t.argmax(1) == yv).float().mean())}
    if ntk_n:
        model0 = TokensAndMask(initial_model(cfg))
        J = looped_jacobian(model0, X[:ntk_n], list(start))
        lora = torch.tensor([".lora_" in n for n in start for _ in
                             range(start[n].numel())])
        for key, cols in (("kappa", slice(None)), ("kappa_lora", lora)):
            Jc = J[:, cols]
            out[key] = th.regularised_condition_number(Jc @ Jc.T, sigma)
    return out


def looped_jacobian(model: nn.Module, inputs: torch.Tensor, names: list[str],
                    output=margin) -> torch.Tensor:
    """The per-sample Jacobian ``J`` (n, P) of ``output(model(x))`` over the parameters
    ``names`` (in that order; float64, eval mode), one backward pass per sample: for models
    whose forward has data-dependent branches that ``vmap`` refuses (the Hugging Face
    encoders' attention masks). ``J J^T`` is `empirical_ntk`'s kernel."""
    was = model.training
    model.eval()
    try:
        named = dict(model.named_parameters())
        params = {n: named[n].detach().double().requires_grad_(True) for n in names}
        rest = {n: p.detach().double() for n, p in named.items() if n not in params}
        rest.update({n: b.detach().double() if b.is_floating_point() else b.detach()
                     for n, b in model.named_buffers()})
        rows = []
        inputs = inputs.double() if inputs.is_floating_point() else inputs
        for i in range(len(inputs)):
            value = output(functional_call(model, (params, rest), (inputs[i:i + 1],)))[0]
            grads = torch.autograd.grad(value, list(params.values()), allow_unused=True)
            rows.append(torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1)
                                   for g, p in zip(grads, params.values())]))
    finally:
        model.train(was)
    return torch.stack(rows)
