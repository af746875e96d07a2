"""Chapter 05b's checks as data (`lalr_core.core.results.claims`): the notes' claims, in the
notes' direction, and the sanity checks that hold by construction.

The notes have no experiments and no numbers: every threshold is ours. Sanity checks here are
identities (G = J^T H_z J is PSD; the damped step's limits; for logistic regression the true
Fisher is the Hessian, so natural gradient is Newton's method and inherits its speed; NG's
invariance to a linear reparameterisation, which holds for any model) and a regression against
a first run's iteration counts. Claim tests have synthetic PASS / FAIL cases in
``tests/test_ch05b_newton_natural_gradient_claims.py``.
"""

from __future__ import annotations

from dataclasses import replace

from lalr_core.chapters.ch05b_newton_natural_gradient.quotes import QUOTES
from lalr_core.core.results.claims import DETERMINISTIC, Claim

_C = [
    Claim("E9-output-space", "GD in output space (its pullback, Gauss–Newton) finds the minimum "
          "easily where parameter-space GD has difficulty: GN needs ≥ 100× fewer iterations to "
          "f < 1e-10", "notes sec. 2.3", quote=QUOTES["E9"], item="E9"),
    Claim("E9-counts", "iteration counts to f < 1e-10 within ×3 of a first run's (GD ≈ 1e4, "
          "Newton 5, GN 2, damped λ=1 40), and H indefinite at (0, 1)", "notes sec. 2.3",
          quote=QUOTES["E9"], item="E9", kind="sanity"),
    Claim("E10-psd", "G is PSD (G = JᵀH_zJ with a convex loss) and H is indefinite at "
          "initialisation", "notes sec. 2.2", quote=QUOTES["E10 residuals"], item="E10",
          kind="sanity"),
    Claim("E10-tanh", "G approximates H once the samples are fitted: for tanh, ‖H−G‖/‖H‖ falls "
          "with the loss (Spearman ρ ≥ 0.8, final < initial/100)", "notes sec. 2.2",
          quote=QUOTES["E10 residuals"], item="E10"),
    Claim("E10-relu", "the notes' statement: for ReLU the Hessian's extra term vanishes "
          "(φ'' = 0), so H = G (relative difference < 1e-6 at every checkpoint)",
          "notes sec. 2.2", quote=QUOTES["E10 relu"], item="E10"),
    Claim("E11-probit", "natural gradient adapts to anisotropic features where its Fisher is "
          "not the Hessian (probit regression): ≥ 100× fewer iterations than GD to the "
          "optimum's loss ± 1e-6", "notes app. A3", quote=QUOTES["E11 speed"], item="E11"),
    Claim("E11-logistic", "logistic regression: NG (true Fisher = Hessian, so Newton's method) "
          "needs ≥ 100× fewer iterations than GD", "notes app. A3",
          quote=QUOTES["E11 speed"], item="E11", kind="sanity"),
    Claim("E11-invariance", "NG is invariant to rescaling the features: the same loss curve, "
          "w = D w' (the Fisher transforms as a metric, for any model)", "notes app. A3",
          quote=QUOTES["E11 invariance"], item="E11", kind="sanity"),
    Claim("E12-limits", "the damped step −(H+λI)⁻¹g is Newton's at λ→0 and −g/λ at λ→∞",
          "notes sec. 2.1", quote=QUOTES["E12"], item="E12", kind="sanity"),
    Claim("E12-saddle", "Newton moves towards the saddle: it ends at the index-1 saddle while GD "
          "and saddle-free Newton end at a minimum, saddle-free first", "notes sec. 3.2, A4",
          quote=QUOTES["E12"], item="E12"),
    Claim("E15-epochs", "larger batches end sharper at equal epochs: λmax(B16) − λmax(B1024) < 0",
          "notes sec. 3.5", quote=QUOTES["E15"], item="E15", threshold=0.0, side="less"),
    Claim("E15-steps", "larger batches end sharper at equal steps: λmax(B16) − λmax(B1024) < 0",
          "notes sec. 3.5", quote=QUOTES["E15"], item="E15", threshold=0.0, side="less"),
]

ONE_NETWORK = ("a 2-16-16-1 MLP trained by full-batch Adam from its own seed on its own 32 "
               "random samples; the notebook trains one per activation (seed 0), so its "
               "verdict is recorded INCONCLUSIVE (1 replicate)")
REPLICATE_NULL = {
    "E9-output-space": (DETERMINISTIC, ("parameter-space GD (lr 2e-3) from the same start "
                                       "(−1.2, 1), full steps: fewer than 100× its iterations")),
    "E10-tanh": (ONE_NETWORK, ("‖H−G‖/‖H‖ not falling with the loss (ρ < 0.8 or final ≥ "
                              "initial/100)")),
    "E10-relu": (ONE_NETWORK, ("H ≠ G: the cross-layer term of ∇²f, nonzero wherever the "
                              "residuals are")),
    "E11-probit": (DETERMINISTIC, ("GD at 1/L on the same fixed sample (seed 0) from w = 0: "
                                  "fewer than 100× its iterations")),
    "E12-saddle": (DETERMINISTIC, ("GD (lr 0.1) from the same start, the control arm: Newton "
                                  "not ending at the saddle or saddle-free not first")),
    "E15-epochs": ("a pair of runs (batch 16, batch 1024) from its own seed",
                   "the large batch's own λmax, paired by seed (difference 0)"),
    "E15-steps": ("a pair of runs (batch 16, batch 1024) from its own seed",
                  "the large batch's own λmax, paired by seed (difference 0)"),
}
_C = [replace(c, replicate=REPLICATE_NULL[c.id][0], null=REPLICATE_NULL[c.id][1])
      if c.kind == "claim" else c for c in _C]

CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
