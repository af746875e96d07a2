"""LoRA adapters (Hu et al. 2021, arXiv:2106.09685) for Linear and Conv2d layers, no ``peft``.

Chapter 03 (the slides ``[KimKim-slides]`` fine-tune with LoRA, ``[Hu2021]``; rank, targets and
trained set are our choices, as the slides give none). A wrapped layer keeps its pretrained weight
``W`` and bias frozen and learns a rank-``r`` update:

    y = base(x) + s * (x A^T) B^T,      s = alpha / r,

with ``A`` of shape `[r, in]` (Kaiming-uniform, as ``nn.Linear``'s own weight init) and ``B``
of shape `[out, r]` (zeros), so at initialisation the model is exactly the pretrained one and
``dy/dA = 0`` (so the NTK at theta_0 comes from ``B`` and the head only). This is the init
of the reference implementation (microsoft/LoRA, ``loralib/layers.py``: ``lora_A``
Kaiming-uniform with ``a = sqrt(5)``, ``lora_B`` zeros), read for the convention, not copied.
The layer acts as the dense layer ``W + s * B A`` (`merge_lora` folds it in).

For ``nn.Conv2d`` (`LoRAConv2d`), ``A`` is a convolution to ``r`` channels with the base's
kernel, stride, padding and dilation, and ``B`` a 1x1 convolution ``r -> out``; the merged
kernel is ``W + s * einsum("or,rikl->oikl", B, A)``. Grouped convolutions (depthwise) and
padding modes other than zeros are refused: their update would not be one dense kernel.

`inject_lora` swaps the named modules of a model for adapters, freezes everything else except
the parameters named in ``train`` (the fresh classifier head) and returns the trainable
names. It is registered as the ``"lora"`` model transform (`lalr_core.methods.pretrained.transforms`)
so a run's task can be "this task's model with LoRA" (the ``"transformed"`` task).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.methods.pretrained.transforms import MODEL_TRANSFORMS

__all__ = ["LoRAAdapter", "LoRAConv2d", "LoRALinear", "inject_lora", "lora_modules", "lora_transform",
           "merge_lora"]

# Chapter 03's TinyTF setting (ours): rank 4 on q_proj and v_proj of every block, alpha 8 (scale 2).
DEFAULT_TARGETS = ("encoder.blocks.*.q_proj", "encoder.blocks.*.v_proj")
DEFAULT_RANK = 4
DEFAULT_ALPHA = 8.0


def _check_rank_alpha(rank, alpha) -> None:
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ValueError(f"LoRA rank must be an int >= 1, got {rank!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) \
            or not math.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"LoRA alpha must be a finite number > 0, got {alpha!r}")


class LoRAAdapter(nn.Module):
    """What both adapters share: the frozen ``base``, ``lora_A``, ``lora_B``, ``rank``,
    ``alpha`` and ``scale``; ``delta_weight()`` is the dense update ``s * B A``."""

    def __init__(self, base: nn.Module, rank: int, alpha: float, a_shape: tuple[int, ...],
                 out: int):
        super().__init__()
        _check_rank_alpha(rank, alpha)
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.rank, self.alpha, self.scale = rank, float(alpha), alpha / rank
        like = {"device": base.weight.device, "dtype": base.weight.dtype}
        self.lora_A = nn.Parameter(torch.empty(a_shape, **like))
        self.lora_B = nn.Parameter(torch.zeros(out, rank, **like))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))  # nn.Linear's init (loralib's)

    def extra_repr(self) -> str:
        return f"rank={self.rank}, alpha={self.alpha:g}"


class LoRALinear(LoRAAdapter):
    """``base(x) + s * (x A^T) B^T`` around a frozen ``nn.Linear`` (module docstring).

    Args:
        base: the layer to adapt; its weight and bias are frozen (``requires_grad=False``).
        rank: ``r >= 1``.
        alpha: the scale's numerator (``s = alpha / r``).

    Raises:
        ValueError: ``base`` is not an ``nn.Linear``, or a bad ``rank`` / ``alpha``.
    """

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        if not isinstance(base, nn.Linear):
            raise ValueError(  # noqa: TRY004 - a setting, as everywhere in the config
                f"LoRALinear wraps an nn.Linear, got {type(base).__name__}")
        super().__init__(base, rank, alpha, (rank, base.in_features), base.out_features)

    def delta_weight(self) -> torch.Tensor:
        """``s * B A``, `[out, in]`: the dense update this adapter adds to ``W``."""
        return self.scale * (self.lora_B @ self.lora_A)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # two thin matmuls, never the dense [out, in] update: the cost is r * (in + out)
        return self.base(x) + self.scale * F.linear(F.linear(x, self.lora_A), self.lora_B)


def _check_conv(base: nn.Conv2d, name: str = "") -> None:
    if base.groups != 1 or base.padding_mode != "zeros":
        raise ValueError(f"LoRA on a Conv2d{f' ({name})' if name else ''} needs groups=1 and "
                         f"padding_mode='zeros' (one dense merged kernel), got "
                         f"groups={base.groups}, padding_mode={base.padding_mode!r}")


class LoRAConv2d(LoRAAdapter):
    """``base(x) + s * B(A(x))`` around a frozen ``nn.Conv2d``: ``A`` a conv to ``r``
    channels with the base's geometry, ``B`` a 1x1 conv (module docstring).

    Args:
        base: the convolution to adapt (groups 1, zero padding); frozen.
        rank: ``r >= 1``.
        alpha: the scale's numerator (``s = alpha / r``).

    Raises:
        ValueError: ``base`` is not an ``nn.Conv2d``, is grouped or pads other than with
            zeros, or a bad ``rank`` / ``alpha``.
    """

    def __init__(self, base: nn.Conv2d, rank: int, alpha: float):
        if not isinstance(base, nn.Conv2d):
            raise ValueError(  # noqa: TRY004 - a setting
                f"LoRAConv2d wraps an nn.Conv2d, got {type(base).__name__}")
        _check_conv(base)
        super().__init__(base, rank, alpha, (rank, base.in_channels, *base.kernel_size),
                         base.out_channels)

    def delta_weight(self) -> torch.Tensor:
        """``s * B A`` as a kernel `[out, in, kh, kw]`."""
        return self.scale * torch.einsum("or,rikl->oikl", self.lora_B, self.lora_A)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = self.base
        h = F.conv2d(x, self.lora_A, None, b.stride, b.padding, b.dilation)  # (N, r, H', W')
        return b(x) + self.scale * F.conv2d(h, self.lora_B[:, :, None, None])


_ADAPTERS = {nn.Linear: LoRALinear, nn.Conv2d: LoRAConv2d}


def lora_modules(model: nn.Module) -> dict[str, LoRAAdapter]:
    """The model's LoRA adapters by qualified name."""
    return {n: m for n, m in model.named_modules() if isinstance(m, LoRAAdapter)}


def _adaptable(model: nn.Module) -> dict[str, nn.Module]:
    """Linear / Conv2d modules by name, outside existing adapters (not the model itself)."""
    inside = tuple(f"{n}." for n in lora_modules(model))
    return {n: m for n, m in model.named_modules()
            if n and type(m) in _ADAPTERS and not n.startswith(inside)}


def _as_names(value, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, Sequence) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{what} must be a name or a sequence of names, got {value!r}")
    return tuple(value)


def _set_module(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent), leaf, module)


def inject_lora(model: nn.Module, targets: str | Sequence[str], rank: int = DEFAULT_RANK,
                alpha: float = DEFAULT_ALPHA, *, train: str | Sequence[str] = ("head",)
                ) -> list[str]:
    """Replace the target Linear / Conv2d modules by LoRA adapters and freeze the rest.

    Only exact ``nn.Linear`` / ``nn.Conv2d`` modules are adapted, not subclasses: e.g.
    ``nn.MultiheadAttention.out_proj`` is a Linear subclass whose weight the attention reads
    directly, never calling its forward, so an adapter there would silently do nothing. After
    the call the trainable parameters are every adapter's ``lora_A`` / ``lora_B`` and the
    parameters named by ``train``; all others have ``requires_grad=False``.

    Args:
        model: changed in place.
        targets: qualified module names or ``fnmatch`` patterns
            (``"encoder.blocks.*.q_proj"``); each must match at least one module.
        rank: ``r >= 1``.
        alpha: ``s = alpha / r``.
        train: prefixes of parameters kept trainable (a dotted prefix: ``"head"`` matches
            ``head.weight``, not ``heads.0.weight``); each must match a parameter. ``()``
            trains the adapters only.

    Returns:
        The trainable parameter names, in ``model.named_parameters()`` order.

    Raises:
        ValueError: a target that matches no adaptable module (the message lists them), a
            target that is already an adapter, a ``train`` prefix that names no parameter,
            or a bad ``rank`` / ``alpha`` / grouped conv. Nothing is changed then.
    """
    targets, train = _as_names(targets, "targets"), _as_names(train, "train")
    _check_rank_alpha(rank, alpha)
    if not targets:
        raise ValueError("targets must name at least one module")
    done = lora_modules(model)
    if hit := [t for t in targets if any(fnmatch.fnmatchcase(n, t) for n in done)]:
        raise ValueError(f"targets {hit} already have LoRA adapters")
    found = _adaptable(model)
    chosen: dict[str, nn.Module] = {}
    for t in targets:
        matches = [n for n in found if fnmatch.fnmatchcase(n, t)]  # an exact name matches too
        if not matches:
            raise ValueError(f"LoRA target {t!r} matches no Linear/Conv2d module of "
                             f"{type(model).__name__}; available: {sorted(found)}")
        chosen.update((n, found[n]) for n in matches)
    names = [n for n, _ in model.named_parameters()]
    if missing := [p for p in train if not any(n == p or n.startswith(p + ".") for n in names)]:
        raise ValueError(f"train prefixes {missing} name no parameter of "
                         f"{type(model).__name__}")
    for n, m in chosen.items():
        if isinstance(m, nn.Conv2d):
            _check_conv(m, n)
    adapters = {n: _ADAPTERS[type(m)](m, rank, alpha) for n, m in chosen.items()}
    for n, adapter in adapters.items():
        _set_module(model, n, adapter)
    lora = {f"{n}.{p}" for n in lora_modules(model) for p in ("lora_A", "lora_B")}
    trainable = []
    for n, p in model.named_parameters():
        keep = n in lora or any(n == t or n.startswith(t + ".") for t in train)
        p.requires_grad_(keep)
        if keep:
            trainable.append(n)
    return trainable


@torch.no_grad()
def merge_lora(model: nn.Module) -> nn.Module:
    """Fold every adapter into its base layer: ``W <- W + s * B A`` (in place).

    The adapters are replaced by their base modules (a plain Linear / Conv2d holding the
    merged weight, frozen as before), so the model has its original module names and state
    dict keys and computes the same outputs (up to rounding: one dense matmul instead of
    three thin ones).

    Returns:
        ``model`` (or the merged base layer when ``model`` is itself an adapter).
    """
    if isinstance(model, LoRAAdapter):
        model.base.weight.add_(model.delta_weight())
        return model.base
    for name, adapter in lora_modules(model).items():
        # deepest first is not needed: adapters never nest (inject_lora refuses it)
        adapter.base.weight.add_(adapter.delta_weight())
        _set_module(model, name, adapter.base)
    return model


def _check_lora_options(targets=DEFAULT_TARGETS, rank=DEFAULT_RANK, alpha=DEFAULT_ALPHA,
                        train=("head",)) -> None:
    """The checks of `inject_lora` that need no model (run when a task is built)."""
    _as_names(train, "train")
    _check_rank_alpha(rank, alpha)
    if not _as_names(targets, "targets"):
        raise ValueError("targets must name at least one module")


@MODEL_TRANSFORMS.register("lora")
def lora_transform(model: nn.Module, targets: str | Sequence[str] = DEFAULT_TARGETS,
                   rank: int = DEFAULT_RANK, alpha: float = DEFAULT_ALPHA,
                   train: str | Sequence[str] = ("head",)) -> nn.Module:
    """The ``"lora"`` model transform: `inject_lora` with chapter 03's defaults; returns ``model``."""
    inject_lora(model, targets, rank, alpha, train=train)
    return model


lora_transform.validate = _check_lora_options  # type: ignore[attr-defined]
