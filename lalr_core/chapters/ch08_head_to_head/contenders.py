"""Chapter 08's contenders: each method of the sources (and Muon) as ``RunConfig`` changes,
built from the collection's one implementation of it, and the centre of its lr trials.

Every contender tunes only its learning rate (the one hyper-parameter every source says to
tune); its others are its authors' defaults or the collection's earlier choice:

* ``sgdm``: ``torch.optim.SGD``, momentum 0.9, L2 weight decay;
* ``adamw``: ``torch.optim.AdamW``, betas (0.9, 0.999), decoupled decay;
* ``lars``: ``pytorch_optimizer.LARS`` (You et al. 2017), trust coefficient ``lars_eta``
  (chapter 01's pilot on TinyTF: 3e-2), momentum 0.9 (`lalr_core.methods.layer_lr.trust_ratio`);
* ``lamb``: ``pytorch_optimizer.Lamb`` in the paper's form (You et al. 2020; same module);
* ``tempbalance``: TempBalance (chapter 02, ``[Ye2023]``) on SGDM, scheme ``tb_scheme``;
* ``lalr``: LALR (chapter 01, our executable specification `LALR()`) on AdamW;
* ``orth_svd`` / ``orth_ns``: Orthogonal-SGDM (chapter 06, ``[Tuddenham2026]`` ch. 5) with
  the exact polar factor (SVD) or 5 Newton-Schulz steps, on SGDM;
* ``muon``: Muon (Jordan et al. 2024, `lalr_core.methods.orthogonal.muon`): hidden matrices
  by Muon (momentum 0.95, Nesterov), the rest by AdamW at lr x 0.015 (its defaults' ratio);
  one lr scales both.

``CENTRES``: the centre of each contender's lr trials, the sources' values where they give
one: SGDM and Orthogonal-SGDM 0.05 (the thesis's table 5.1 gives both the same lr), TempBalance
on SGDM's (its multipliers are relative to the base lr), AdamW and LALR 1e-3 (chapter 01's
base lr; Adam's default), LARS 0.1 and LAMB 6e-3 (chapter 01's pilot on TinyTF, its comment
beside ``_BASELINES``), Muon 0.02 (its authors' default).
"""

from __future__ import annotations

from typing import Any

from lalr_core.methods.layer_lr.lalr import LALR
from lalr_core.methods.layer_lr.tempbalance.callback import TempBalance
from lalr_core.methods.orthogonal.muon import MuonSplit
from lalr_core.methods.orthogonal.transform import GradTransform

CONTENDERS = ("sgdm", "adamw", "lars", "lamb", "tempbalance", "lalr", "orth_svd", "orth_ns",
              "muon")
LABELS = {"sgdm": "SGDM", "adamw": "AdamW", "lars": "LARS", "lamb": "LAMB",
          "tempbalance": "TempBalance (SGDM)", "lalr": "LALR (AdamW)",
          "orth_svd": "Orth-SGDM (SVD)", "orth_ns": "Orth-SGDM (NS)", "muon": "Muon"}
# The optimiser each contender changes, where it is a method on top of one (its control).
CONTROL = {"tempbalance": "sgdm", "lalr": "adamw", "orth_svd": "sgdm", "orth_ns": "sgdm",
           "muon": "adamw"}
_LRS = {"sgdm": 0.05, "adamw": 1e-3, "lars": 0.1, "lamb": 6e-3, "tempbalance": 0.05,
        "lalr": 1e-3, "orth_svd": 0.05, "orth_ns": 0.05, "muon": 0.02}
CENTRES = {"image": dict(_LRS), "text": dict(_LRS)}


def check_contender(name: str) -> str:
    """``name`` if it is a contender, else ``ValueError`` listing them."""
    if name not in CONTENDERS:
        raise ValueError(f"unknown contender {name!r}; choose one of {', '.join(CONTENDERS)}")
    return name


def changes(name: str, lr: float, *, momentum: float, lars_eta: float,
            tb_scheme: str) -> dict[str, Any]:
    """The ``RunConfig`` changes of contender ``name`` at ``lr`` (module docstring)."""
    check_contender(name)
    sgdm = dict(optimizer="sgdm", lr=lr, momentum=momentum)
    adamw = dict(optimizer="adamw", lr=lr)
    return {
        "sgdm": sgdm,
        "adamw": adamw,
        "lars": dict(optimizer="lars_po", lr=lr, momentum=momentum,
                     optimizer_params=(("eta", lars_eta),)),
        "lamb": dict(optimizer="lamb", lr=lr),
        "tempbalance": dict(sgdm, methods=(TempBalance(tb_scheme),)),
        "lalr": dict(adamw, methods=(LALR(),)),
        "orth_svd": dict(sgdm, methods=(GradTransform("orth", method="svd"),)),
        "orth_ns": dict(sgdm, methods=(GradTransform("orth", method="newton_schulz"),)),
        "muon": dict(optimizer="muon", lr=lr, methods=(MuonSplit(),)),
    }[name]
