r"""Algorithm 5 as an optimiser: SGD whose step size comes from the top Hessian eigenpair
estimated from the last ``s`` gradients (chapter 05, fig 4.20).

Source: `[Tuddenham2026]` (M. Tuddenham, PhD thesis, University of Southampton, 2026; see
REFERENCES.md), sec. 4.4.4 and algorithm 5. Each step the optimiser

1. flattens this mini-batch's gradient ``g = grad L(theta_i)`` (the raw loss gradient the loop
   left in the parameters' ``.grad``; a parameter without a gradient counts as zeros);
2. inserts it into the rolling window (`top_eigen.TopEigenWindow`: ``S_{i mod s} <- g``,
   ``v <- S S^T v``, ``lambda_hat = sqrt(||S S^T v|| / s)``, ``v <- v / ||v||``);
3. sets the step size by the run's ``rule``:

   * ``"eigenvalue"``: ``eta = min{eta', 2 / lambda_hat}`` (`top_eigen.eigenvalue_step_size`);
   * ``"projection"``: ``eta = min{eta', 1 - |g^T v| / ||g||}`` (eq. 4.60,
     `top_eigen.projection_step_size`);
   * ``"constant"``: ``eta = eta'`` -- plain SGD through the same code (a control: it equals
     ``torch.optim.SGD`` bit for bit, and the window is still updated and logged);

4. steps ``theta <- theta - eta (g + wd theta)`` (implied by the algorithm, which stops at
   ``eta``).

``eta'``, the step-size limit of algorithm 5, is the param group's ``lr``: the source trains
"using a learning rate -- or learning rate bound -- of 1", so a run of fig 4.20's eigen methods
is a ``RunConfig`` with ``lr=1`` (and an lr schedule scales the bound). Every step's
``eta``, ``lambda_hat`` and projection step ``1 - |cos(g, v)|`` (whatever the rule) go to the
optimiser's log (`Algorithm5SGD.step_log`), which survives ``state_dict`` /
``load_state_dict`` with the window; the callback ``"alg5_log"`` (`StepSizeLog`) puts it in a
run's result as ``result["callbacks"]["alg5_log"]``.

Choices where the source is silent (it states no batch size, momentum, weight decay or
schedule for fig 4.20), each named where it is made:

* the window stores the raw loss gradient; weight decay (coupled, as torch's SGD) enters the
  step only;
* no momentum (algorithm 5 has none; the run's ``momentum`` is ignored, as for ``"sgd"``);
* the window's buffers are in the parameters' dtype (float32 for training: ResNet-20 at
  ``s = 250`` holds 270 MB) on their device, seeded by the run's seed from a generator of its
  own, so the global RNG (initialisation, batch order) is the same as an SGD run's of that seed;
* the random initial ``S`` and ``v`` are kept as printed ("Initial random matrix for
  gradients"), as they are part of the method the thesis ran: for the first ``s`` steps the
  noise columns, of norm ``~sqrt(p)`` each, dominate ``lambda_hat``;
* with several param groups each takes ``min`` against its own ``lr``; the log holds group 0's
  ``eta``;
* a non-finite gradient (a diverging run) is not put in the window (it would poison it for
  ``s`` steps); the step is taken at ``eta'`` and logged as NaN, and the loop flags the
  divergence from the loss.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import torch

from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.core.loop.config import OPTIMIZERS
from lalr_core.methods.curvature.top_eigen import (
    ALG5_SAMPLE,
    STEP_RULES,
    TopEigenWindow,
    eigenvalue_step_size,
    projection_step_size,
)

RULES = (*STEP_RULES, "constant")   # "eigenvalue", "projection" (algorithm 5), "constant"
LOG_COLUMNS = ("step", "eta", "lambda_hat", "projection")


def _check_rule(rule) -> str:
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    return rule


def _check_sample(s) -> int:
    if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
        raise ValueError(f"s (the window's sample size) must be an integer >= 1, got {s!r}")
    return int(s)


def _check_nonneg(x, name: str, positive: bool = False) -> float:
    ok = (not isinstance(x, bool) and isinstance(x, (int, float, np.floating, np.integer))
          and math.isfinite(x) and (x > 0 if positive else x >= 0))
    if not ok:
        raise ValueError(f"{name} must be a finite number {'>' if positive else '>='} 0, "
                         f"got {x!r}")
    return float(x)


class Algorithm5SGD(torch.optim.Optimizer):
    """SGD with algorithm 5's step size (see the module docstring).

    Args:
        params: parameters or param groups.
        lr: ``eta'``, the step-size limit (fig 4.20: 1); > 0.
        rule: ``"eigenvalue"``, ``"projection"`` or ``"constant"``.
        s: the window's sample size (the source: 250 on ResNet-20; chapter 05's digits: 50).
        weight_decay: coupled L2, added to the step's direction only (>= 0).
        seed: seed of the window's initial ``v`` and ``S`` (``N(0, 1)``, algorithm 5).

    ``stats`` (reported by the loop as ``optimizer_stats``) counts ``steps`` and
    ``nonfinite_steps``.

    Raises:
        ValueError: a bad ``lr``, ``rule``, ``s``, ``weight_decay`` or ``seed``, or no
            parameters.
    """

    def __init__(self, params: Iterable, lr: float = 1.0, *, rule: str = "eigenvalue",
                 s: int = ALG5_SAMPLE, weight_decay: float = 0.0, seed: int = 0):
        lr = _check_nonneg(lr, "lr", positive=True)
        weight_decay = _check_nonneg(weight_decay, "weight_decay")
        self.rule, self.s = _check_rule(rule), _check_sample(s)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be an int, got {seed!r}")  # noqa: TRY004 - a setting
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay})
        self._params = [p for g in self.param_groups for p in g["params"]]
        if not self._params:
            raise ValueError("Algorithm5SGD needs at least one parameter")
        first = self._params[0]
        self.window = TopEigenWindow(sum(p.numel() for p in self._params), self.s,
                                     seed=int(seed), dtype=first.dtype, device=first.device)
        self._log: dict[str, list] = {c: [] for c in LOG_COLUMNS}
        self.stats = {"steps": 0, "nonfinite_steps": 0}

    # -- the step --------------------------------------------------------------------------
    def _flat_grad(self) -> torch.Tensor:
        w = self.window.S
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p))
                          .reshape(-1).to(w.device, w.dtype) for p in self._params])

    def _eta(self, lr: float, lam: float, proj: float) -> float:
        """The step size of one group whose limit ``eta'`` is ``lr``."""
        if self.rule == "constant" or lr == 0.0:   # lr 0: a schedule's last epoch (cosine)
            return lr
        if self.rule == "eigenvalue":
            return eigenvalue_step_size(lam, lr)
        return min(lr, proj)  # = projection_step_size(g, v, lr); proj computed once below

    @torch.no_grad()
    def step(self, closure=None):
        """One step of algorithm 5 on the gradients in ``.grad`` (see the module docstring)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        g = self._flat_grad()
        finite = bool(torch.isfinite(g).all())
        if finite:
            lam = self.window.update(g)
            # 1 - |cos(g, v)|, the projection step unclipped (its clip is at 1 anyway)
            proj = projection_step_size(g, self.window.vector, 1.0)
        else:  # a diverging run: keep the window clean, step at eta', log NaN
            lam = proj = float("nan")
            self.stats["nonfinite_steps"] += 1
        etas = [self._eta(group["lr"], lam, proj) if finite else group["lr"]
                for group in self.param_groups]
        for group, eta in zip(self.param_groups, etas):
            wd = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad if wd == 0 else p.grad.add(p, alpha=wd)  # as torch.optim.SGD
                p.add_(d, alpha=-eta)
        self.stats["steps"] += 1
        row = (self.stats["steps"], etas[0] if finite else float("nan"), lam, proj)
        for c, v in zip(LOG_COLUMNS, row):
            self._log[c].append(v)
        return loss

    # -- the log ---------------------------------------------------------------------------
    def step_log(self):
        """The per-step log as a DataFrame: ``step`` (1-based), ``eta`` (the step size taken,
        group 0), ``lambda_hat`` and ``projection`` (``1 - |cos(g, v)|``, for every rule);
        NaN on a step whose gradient was not finite."""
        import pandas as pd  # late: keeps the module light for worker start-up

        return pd.DataFrame({c: list(v) for c, v in self._log.items()},
                            columns=list(LOG_COLUMNS))

    # -- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        out = super().state_dict()
        w = self.window
        out["alg5"] = {"rule": self.rule, "s": self.s, "S": w.S.clone(),
                       "vector": w.vector.clone(), "t": w.t, "value": w.value,
                       "log": {c: list(v) for c, v in self._log.items()},
                       "stats": dict(self.stats)}
        return out

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        mine = state_dict.pop("alg5", None)
        if mine is None:
            raise ValueError("not an Algorithm5SGD state: no 'alg5' entry")
        if mine["rule"] != self.rule or mine["s"] != self.s:
            raise ValueError(f"the state is of rule {mine['rule']!r} with s = {mine['s']}, this "
                             f"optimiser has rule {self.rule!r} with s = {self.s}")
        if tuple(mine["S"].shape) != tuple(self.window.S.shape):
            raise ValueError(f"the state's window has shape {tuple(mine['S'].shape)}, this "
                             f"optimiser's {tuple(self.window.S.shape)}")
        super().load_state_dict(state_dict)
        w = self.window
        w.S = mine["S"].to(w.S.device, w.S.dtype).clone()
        w.vector = mine["vector"].to(w.vector.device, w.vector.dtype).clone()
        w.t, w.value = int(mine["t"]), float(mine["value"])
        self._log = {c: list(mine["log"][c]) for c in LOG_COLUMNS}
        self.stats.update(mine["stats"])


@OPTIMIZERS.register("alg5_sgd")
def alg5_sgd(params, cfg, rule: str = "eigenvalue", s: int = ALG5_SAMPLE) -> Algorithm5SGD:
    """`Algorithm5SGD` with ``eta' = cfg.lr``, coupled ``cfg.wd`` and the window seeded by
    ``cfg.seed``; ``rule`` and ``s`` from ``cfg.optimizer_params``."""
    return Algorithm5SGD(params, lr=cfg.lr, rule=rule, s=s, weight_decay=cfg.wd, seed=cfg.seed)


@CALLBACKS.register("alg5_log")
class StepSizeLog:
    """Result: the run's `Algorithm5SGD.step_log` (a DataFrame, one row per step).

    It reads the optimiser's own log, which the optimiser's ``state_dict`` carries through a
    resumed run, so the callback has no state of its own.

    Raises:
        ValueError: the run's optimiser is not an `Algorithm5SGD` (``"alg5_sgd"``).
    """

    name = "alg5_log"

    def __init__(self):
        self.optimizer: Algorithm5SGD | None = None

    def on_optimizer(self, optimizer) -> None:
        if not isinstance(optimizer, Algorithm5SGD):
            raise ValueError(  # noqa: TRY004 - a setting of the run, like the others
                f"callback 'alg5_log' needs the optimiser 'alg5_sgd', got "
                f"{type(optimizer).__name__}")
        self.optimizer = optimizer

    def result(self):
        return None if self.optimizer is None else self.optimizer.step_log()
