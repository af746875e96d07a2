"""Which parameters form an LALR layer, and the source's per-parameter grouping (bug 3).

Our executable specification (chapter 01). Two groupings:

* ``"module"`` (default): a layer is every ``nn.Linear``, ``nn.Conv*`` and ``nn.Embedding``
  (named by its module) and every other parameter with >= 2 dims (e.g.
  ``MultiheadAttention.in_proj_weight``, a positional-embedding tensor; named by the
  parameter), in ``named_modules`` order. The module's bias and other 1-D parameters follow
  the module's (first) layer; every other parameter (LayerNorm / BatchNorm gains and shifts,
  ...) stays at the global lr. The classifier head and the embeddings are layers (our
  choice); ``exclude`` (shell patterns on layer names) moves layers to the global lr.
* ``"named_param_AW"`` (App. A as written): one group per named parameter, biases included;
  the metrics are listed per parameter whose name contains ``'weight'`` (LayerNorm gains too)
  and zipped with *all* groups, so from the first bias on a weight receives another layer's
  metric and the trailing weight groups none (`aw_assignment`). Groups without a metric keep
  the global lr (the provisional lr the source never sets, bug 4).

A layer's weight becomes a matrix as ``W.reshape(W.shape[0], -1)`` (a conv's ``[c_out,
c_in kh kw]``); a 1-D parameter as ``[1, n]``; a >= 3-D non-module parameter first loses its
leading size-1 dims (``[1, T, d] -> [T, d]``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import pandas as pd
import torch
from torch import nn

from lalr_core.core.models.layers import weight_layers

GROUPINGS = ("module", "named_param_AW")
MODULE_TYPES = (nn.Embedding,)   # layers besides the core's conv / linear (`weight_layers`)


def as_matrix(p: torch.Tensor, squeeze_leading: bool = False) -> torch.Tensor:
    """A detached parameter as a matrix (rules in the module docstring)."""
    p = p.detach()
    if p.ndim == 1:
        return p.reshape(1, -1)
    while squeeze_leading and p.ndim > 2 and p.shape[0] == 1:
        p = p[0]
    return p.reshape(p.shape[0], -1)


def _join(module: str, param: str) -> str:
    return f"{module}.{param}" if module else param


def module_layers(model: nn.Module) -> tuple[list[str], list[list[nn.Parameter]],
                                             list[torch.Tensor], list[nn.Parameter]]:
    """The ``"module"`` rule: ``(names, params, matrices, rest)``, layers in ``named_modules``
    order; a parameter shared by several modules counts once, where it is first met."""
    modules = {**weight_layers(model), **{n: m for n, m in model.named_modules()
                                          if isinstance(m, MODULE_TYPES)}}
    names, params, mats, rest, seen = [], [], [], [], set()
    for mname, module in model.named_modules():
        own = [(n, p) for n, p in module.named_parameters(recurse=False) if id(p) not in seen]
        seen.update(id(p) for _, p in own)
        ownp = dict(own)
        if mname in modules and "weight" in ownp:
            names.append(mname)
            params.append([p for _, p in own])
            mats.append(as_matrix(ownp["weight"]))
            continue
        first = len(names)
        for pname, p in own:
            if p.ndim >= 2 and mname not in modules:
                names.append(_join(mname, pname))
                params.append([p])
                mats.append(as_matrix(p, squeeze_leading=True))
        small = [p for _, p in own if p.ndim < 2 or mname in modules]
        if len(names) > first:
            params[first].extend(small)      # 1-D parameters follow the module's first layer
        else:
            rest.extend(small)
    return names, params, mats, rest


def layer_matrices(model: nn.Module, grouping: str = "module") -> dict[str, torch.Tensor]:
    """``{name: matrix}`` of the layers whose metrics LALR computes, in metric order.

    ``"module"``: the layers of `module_layers`; ``"named_param_AW"``: every named parameter
    whose name contains ``'weight'`` (App. A's "layers").
    """
    check_grouping(grouping)
    if grouping == "module":
        names, _, mats, _ = module_layers(model)
        return dict(zip(names, mats))
    return {n: as_matrix(p) for n, p in model.named_parameters() if "weight" in n}


def check_grouping(grouping: str) -> str:
    if grouping not in GROUPINGS:
        raise ValueError(f"grouping must be one of {GROUPINGS}, got {grouping!r}")
    return grouping


def param_groups(model: nn.Module, lr: float, grouping: str = "module",
                 exclude: tuple[str, ...] = ()) -> list[dict]:
    """Optimiser param groups: one per layer (``"layer"``: its name), then the rest.

    Args:
        model: the network.
        lr: initial lr of every group.
        grouping: ``"module"`` or ``"named_param_AW"`` (module docstring).
        exclude: ``"module"`` only: shell patterns (``fnmatch``) of layer names that keep the
            global lr, e.g. ``("head", "embed*")``.

    Returns:
        ``[{"params", "lr", "layer"}]``; the untagged rest group (``"layer": None``) only if
        non-empty. Every parameter of ``model`` is in exactly one group.

    Raises:
        ValueError: unknown grouping, ``exclude`` with ``"named_param_AW"``, a pattern that
            matches no layer, or no layer left.
    """
    check_grouping(grouping)
    if grouping == "named_param_AW":
        if exclude:
            raise ValueError("exclude applies to grouping='module' only")
        return [{"params": [p], "lr": lr, "layer": n} for n, p in model.named_parameters()]
    names, params, _, rest = module_layers(model)
    if unmatched := [pat for pat in exclude if not any(fnmatchcase(n, pat) for n in names)]:
        raise ValueError(f"exclude pattern(s) {unmatched} match no layer of "
                         f"{type(model).__name__}; layers: {names}")
    groups = []
    for name, ps in zip(names, params):
        if any(fnmatchcase(name, pat) for pat in exclude):
            rest = ps + rest
        else:
            groups.append({"params": ps, "lr": lr, "layer": name})
    if not groups:
        raise ValueError(f"no layer left in {type(model).__name__} (layers {names}, "
                         f"exclude {exclude})")
    if rest:
        groups.append({"params": rest, "lr": lr, "layer": None})
    return groups


def aw_assignment(groups: list[str], metric_layers: list[str]) -> list[tuple[int | None, bool]]:
    """App. A's ``zip(self.param_groups, metrics)``: what each group receives (bug 3).

    Args:
        groups: the groups' parameter names, in order.
        metric_layers: the names whose metrics are listed, in order.

    Returns:
        Per group ``(metric index or None, applied)``: group ``k`` is paired with metric ``k``
        while metrics last; its lr is set only if its name contains ``'weight'``.
    """
    return [(k if k < len(metric_layers) else None,
             k < len(metric_layers) and "weight" in name) for k, name in enumerate(groups)]


def aw_misalignment(model: nn.Module) -> pd.DataFrame:
    """Which metric each parameter gets under ``grouping="named_param_AW"`` (bug 3).

    Returns:
        One row per named parameter: ``param``, ``metric_of`` (the ``'weight'`` parameter whose
        metric it is paired with; None past the end of the metrics), ``applied`` (its lr is
        set from it), ``own`` (applied and ``metric_of == param``).
    """
    groups = [n for n, _ in model.named_parameters()]
    metric_layers = list(layer_matrices(model, "named_param_AW"))
    rows = []
    for name, (k, applied) in zip(groups, aw_assignment(groups, metric_layers)):
        source = None if k is None else metric_layers[k]
        rows.append((name, source, applied, applied and source == name))
    return pd.DataFrame(rows, columns=["param", "metric_of", "applied", "own"])
