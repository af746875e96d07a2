"""Layer grouping: ``layer_groups`` and ``LayerLR`` (one param group per layer).

``layer_groups`` decides which parameters form one layer; ``LayerLR`` writes allocated lrs into
the optimiser's param groups by parameter identity.

Part of `lalr_core.methods.layer_lr.tempbalance` (its docstring states the conventions).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from lalr_core.core.models.layers import weight_layers
from lalr_core.methods.layer_lr.tempbalance.allocation import allocate

NORM_TYPES = (nn.modules.batchnorm._NormBase, nn.GroupNorm, nn.LayerNorm)  # BN and InstanceNorm


# ----------------------------------------------------------------------------- param groups
NORM_RULES = ("order", "name")


def layer_groups(model: nn.Module, skip_first: bool = False, skip_last: bool = False,
                 norms: str = "order"
                 ) -> tuple[list[str], list[list[nn.Parameter]], list[nn.Parameter]]:
    """Split a model's parameters into layers (the units that get one lr each) and the rest.

    Rule, in ``model.named_modules()`` registration order:

    * every conv / linear module (`layers.weight_layers`) starts a layer, named by its module name,
      holding its own weight and bias;
    * a norm module (BatchNorm, InstanceNorm, GroupNorm, LayerNorm) joins a layer by
      ``norms``:

      - ``"order"``: the *most recent* conv / linear layer; a norm met before any goes to the
        rest. Pre-norm models (a norm registered *before* its Linear) are therefore tied to
        the previous layer -- check ``names`` for such models.
      - ``"name"``: the layer named like the norm with ``bn`` replaced by ``conv``
        (``layer1.0.bn2`` -> ``layer1.0.conv2``), else the rest. This is the default
        (``batchnorm_type='name'``) of the TempBalance authors' ``Tempbalance`` class
        (YefanZhou/TempBalance, tempbalance.py): a ResNet's shortcut BN (``shortcut.1``) and
        every BN inside an ``nn.Sequential`` (VGG's ``features.1``) keep the global lr.
        (Their ``'order'`` option ties a BN only to a conv right before it; ours also ties
        a second norm in a row -- no model here has one.)
    * parameters of any other module go to the rest; ``skip_first`` / ``skip_last`` move the
      first / last layer (and its norms) to the rest, as TempBalance and seed 001 (its §1.4 text)
      exclude the stem conv and the classifier;
    * a parameter shared by several modules is counted once, where it is first met.

    Args:
        model: any ``nn.Module``.
        skip_first: move the first conv / linear layer to the rest.
        skip_last: move the last conv / linear layer to the rest.
        norms: ``"order"`` or ``"name"``: how a norm module finds its layer (above).

    Returns:
        ``(names, params, rest)``: layer names, each layer's parameters, and the rest.

    Raises:
        ValueError: if no layer is left.
    """
    if norms not in NORM_RULES:
        raise ValueError(f"norms must be one of {NORM_RULES}, got {norms!r}")
    names, params, rest, seen = [], [], [], set()
    layers = weight_layers(model)
    tied: dict[str, list[nn.Parameter]] = {}      # "name" rule: conv name -> its norms' params
    for name, module in model.named_modules():
        own = [p for p in module.parameters(recurse=False) if id(p) not in seen]
        seen.update(id(p) for p in own)
        if name in layers:
            names.append(name)
            params.append(own)
        elif isinstance(module, NORM_TYPES) and norms == "order" and params:
            params[-1].extend(own)
        elif isinstance(module, NORM_TYPES) and norms == "name" \
                and name.replace("bn", "conv") in layers:
            tied.setdefault(name.replace("bn", "conv"), []).extend(own)
        else:
            rest.extend(own)
    for i, name in enumerate(names):                # a pre-activation BN may precede its conv
        params[i].extend(tied.get(name, []))
    lo, hi = int(skip_first), len(names) - int(skip_last)
    if hi - lo < 1:
        raise ValueError(f"no conv / linear layer left in {type(model).__name__} "
                         f"({len(names)} found, skip_first={skip_first}, skip_last={skip_last})")
    rest = [p for ps in params[:lo] + params[hi:] for p in ps] + rest
    return names[lo:hi], params[lo:hi], rest


class LayerLR:
    """One param group per layer, and per-layer lrs written into them by parameter identity.

    The schedule gives the global ``lr_t``; an allocation scheme turns it into per-layer lrs;
    `apply` writes them into ``group["lr"]``. Works with any torch optimiser (hyper-parameters
    live in param groups). Use a schedule you evaluate yourself (e.g. eq. 2.12) or a closed-form
    scheduler (``LambdaLR``) and call `apply` after ``scheduler.step()``; recursive schedulers
    (``CosineAnnealingLR``'s chainable form) would compound the per-layer factors.

    Args:
        model: the network; layers follow `layer_groups`.
        skip_first: stem layer gets the default lr, not an allocated one.
        skip_last: classifier gets the default lr, not an allocated one.
        norms: how norm modules join layers (`layer_groups`).

    Example:
        >>> net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
        >>> ll = LayerLR(net)
        >>> opt = torch.optim.SGD(ll.param_groups(lr=0.1), lr=0.1)
        >>> ll.apply(opt, [0.05, 0.2])
        >>> [g["lr"] for g in opt.param_groups]
        [0.05, 0.2]
    """

    def __init__(self, model: nn.Module, skip_first: bool = False, skip_last: bool = False,
                 norms: str = "order"):
        self.names, self.params, self.rest = layer_groups(model, skip_first, skip_last, norms)
        self._owner = {id(p): i for i, ps in enumerate(self.params) for p in ps}

    @property
    def n_layers(self) -> int:
        """Number of layers that get an allocated lr (= length of the alphas / lrs)."""
        return len(self.names)

    def param_groups(self, lr: float) -> list[dict]:
        """Param groups for an optimiser: one per layer (``"layer"``: name), then the rest.

        Args:
            lr: initial lr of every group.

        Returns:
            List of dicts ``{"params", "lr", "layer"}``; the rest group (``"layer": None``) is
            present only if non-empty.
        """
        groups = [{"params": ps, "lr": lr, "layer": n} for n, ps in zip(self.names, self.params)]
        if self.rest:
            groups.append({"params": self.rest, "lr": lr, "layer": None})
        return groups

    def _group_layers(self, optimizer: torch.optim.Optimizer) -> list[int]:
        """Layer index of each param group (-1 for rest); ValueError if a group mixes layers."""
        owners = []
        for k, group in enumerate(optimizer.param_groups):
            idx = {self._owner.get(id(p), -1) for p in group["params"]}
            if len(idx) != 1:
                raise ValueError(f"param group {k} mixes layers "
                                 f"{sorted(self.names[i] if i >= 0 else 'rest' for i in idx)}")
            owners.append(idx.pop())
        if missing := set(range(self.n_layers)) - set(owners):
            raise ValueError(f"optimizer has no group for layer(s) "
                             f"{[self.names[i] for i in sorted(missing)]}")
        return owners

    def apply(self, optimizer: torch.optim.Optimizer, lrs, default_lr: float | None = None
              ) -> None:
        """Set ``group["lr"]`` of every group to its layer's lr (matched by parameter identity).

        Args:
            optimizer: any torch optimiser whose groups each hold parameters of one layer (or
                only rest parameters), e.g. built from `param_groups`; group order is free.
            lrs: `[n_layers]` non-negative finite lrs, in ``names`` order (from `allocate`).
            default_lr: lr for rest groups (usually lr_t); ``None`` leaves them unchanged.

        Raises:
            ValueError: wrong length or bad values of ``lrs`` / ``default_lr``, a group mixing
                layers, or a layer without a group. Nothing is changed when it raises.
        """
        lrs = np.asarray(lrs.detach().cpu() if isinstance(lrs, torch.Tensor) else lrs,
                         dtype=np.float64)
        if lrs.shape != (self.n_layers,):
            raise ValueError(f"lrs must have shape ({self.n_layers},), got {lrs.shape}")
        if not np.all(np.isfinite(lrs)) or np.any(lrs < 0):
            raise ValueError(f"lrs must be finite and >= 0, got {lrs}")
        if default_lr is not None and not (np.isfinite(default_lr) and default_lr >= 0):
            raise ValueError(f"default_lr must be finite and >= 0, got {default_lr}")
        for group, i in zip(optimizer.param_groups, self._group_layers(optimizer)):
            if i >= 0:
                group["lr"] = float(lrs[i])
            elif default_lr is not None:
                group["lr"] = float(default_lr)

    def step(self, optimizer: torch.optim.Optimizer, alphas, lr_t: float,
             scheme: str = "eq2.13", **params) -> np.ndarray:
        """`allocate` then `apply`, rest groups getting ``lr_t``; call once per epoch.

        Args:
            optimizer: as in `apply`.
            alphas: `[n_layers]` alphas of the layers ``names``, in that order, or a
                ``{name: alpha}`` dict / Series (e.g. ``spectral.alphas(model)["alpha"]``),
                aligned by name; extra names are ignored.
            lr_t: the schedule's global lr at this step.
            scheme: a key of ``SCHEMES``.
            **params: the scheme's keyword arguments.

        Returns:
            `[n_layers]` float64 lrs that were written.

        Raises:
            ValueError: wrong number of alphas, a missing layer name, or any error of
                `allocate` / `apply`.
        """
        if isinstance(alphas, (dict, pd.Series)):
            alphas = pd.Series(alphas)
            if missing := [n for n in self.names if n not in alphas.index]:
                raise ValueError(f"no alpha for layer(s) {missing}")
            alphas = alphas.loc[self.names].to_numpy(dtype=np.float64)
        if tuple(np.shape(alphas)) != (self.n_layers,):
            raise ValueError(f"alphas must have shape ({self.n_layers},), "
                             f"got {tuple(np.shape(alphas))}")
        lrs = allocate(alphas, lr_t, scheme, **params)
        self.apply(optimizer, lrs, default_lr=lr_t)
        return lrs
