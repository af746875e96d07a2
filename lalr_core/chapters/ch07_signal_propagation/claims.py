"""Chapter 07's checks as data: what each tests, where, its kind, and the source's sentence.

The notes ``[ATDL-notes]`` are qualitative; the tolerances below are ours, fixed when the
experiments were designed (E1-E8), and the numbers compared are the cited papers' or our own
computations, named in ``where``. Claim tests (``kind="claim"``) test a statement of the notes or
of a paper they cite on random networks; sanity checks (``kind="sanity"``) compare our
mean-field computation with a reference value or an identity: they hold by construction when the
code is right, so they guard the code and are not evidence for the source.
"""

from __future__ import annotations

import math

from lalr_core.core.results.claims import DETERMINISTIC, Claim

QUOTE_PHASES = ("In the $\\sigma_w$-$\\sigma_b$ space, $\\chi=1$ represents the critical line that "
                "separate the unstable, 'chaotic' (it's more like a simple bifurcation instead of "
                "a true chaos) phase and the stable, ordered phase.")
QUOTE_DONG = ("The first paper to this phenomenon [ref](https://proceedings.mlr.press/v139/dong21a/"
              "dong21a.pdf) pointed out a doubly exponential convergence with depth $L$ of the "
              "embedding matrix to a rank-1 matrix.")
QUOTE_LINFORMER = "The time complexity is reduced from $O(n^2)$ to $O(nk)$."

# Tolerances (ours, fixed before the runs; the notes give none).
CRIT_SCHOENHOLZ = 1.76     # [Schoenholz2017]'s critical sigma_w^2 at sigma_b^2 = 0.05 ...
CRIT_TOL = 0.01            # ... within this
# Our reference table of the tanh critical line (adaptive quadrature and 301-node Gauss-Hermite
# agree to 1e-6; an earlier 101-node table had 4.261 at sigma_b^2 = 2): sigma_b^2 -> sigma_w^2.
CRITICAL_TABLE = {0.0: 1.0, 0.01: 1.4242, 0.05: 1.7610, 0.1: 1.9861, 0.5: 2.8432, 1.0: 3.4432,
                  2.0: 4.2664}
TABLE_TOL = 1.5e-4         # the table's printed precision (4 decimals), with rounding
# Our reference depth-scale table at sigma_b^2 = 0.05: sigma_w^2 -> (q*, chi_1, c*, xi_c, xi_q)
DEPTH_TABLE = {1.0: (0.194, 0.759, 1.0, 3.6, 1.75), 1.5: (0.418, 0.939, 1.0, 15.8, 1.68),
               2.5: (1.064, 1.134, 0.447, 11.8, 1.18), 4.0: (2.196, 1.342, 0.165, 7.0, 0.87)}
DEPTH_TOL = (0.0015, 0.0015, 0.0015, 0.15, 0.015)   # printed precision of each column
Q_REL_TOL = 0.05           # E1/E2: empirical q^l within 5 % of the map
C_ABS_TOL = 0.05           # E2: empirical c^l within 0.05 of the map
TRAIN_DEPTH_FACTOR = 6.0   # E3: [Schoenholz2017]'s "trainable up to ~6 xi_c"
SLOPE_REL_TOL = 0.10       # E4: log-gradient slope within 10 % of -log chi_1
FLAT_SLOPE = 0.01          # E4: |slope| below this on the critical line
LENGTH_REL_TOL = 0.15      # E5: log-length slope within 15 % of 1/2 log chi_1
ISOMETRY_VAR = 1e-8        # E6: var lambda of an exact isometry (float rounding)
ORTH_GAIN = 0.1            # E6: orthogonal var below this fraction of the Gaussian's ...
ORTH_THEORY_TOL = 0.5      # ... and within 50 % of the free-probability theory
MEAN_LAMBDA = (0.7, 1.3)   # E6: the mean squared singular value at chi_1 = 1
PURE_RES, PURE_LAYER = 1e-6, 3   # E7: pure attention's residual below this by this layer
SKIP_RES = 0.9             # E7: skip with 1/sqrt(L) keeps the residual above this
LN_RES = 1e-3              # E7: layer norm's residual at the last layer below this
RES_FLOOR = 1e-300         # E7: a residual that underflows to 0 counts as this (log10 finite)
SLOPE_TOL = 0.3            # E7: slope of log(-log res) within this of log 3
CUBIC, CUBIC_TOL = 3.0, 0.5   # E7: exponent of res_{l+1} on res_l
# E7's fit window (res in (floor, ceiling)): float64's floor below; the ceiling was raised from
# 0.5 to 0.9 after the first quick run left only two layers (no exponent); not a threshold
FIT_FLOOR, FIT_CEILING = 1e-12, 0.9
# Issue 33: every claim test on random networks is judged per network (one statistic per seed,
# a t interval over seeds) against the tolerances above, which are unchanged; a statistic of
# the seed-averaged curve (the former E2) shrinks with the seed count, so the count decided it.

# What one independent replicate of each claim test is
NET = "a random network at initialisation (its own seed: weights, and the circle for E5)"
PAIR = ("a Gaussian and an orthogonal random network at initialisation with the same seed "
        "index (each its own draw)")
SAN = "a random self-attention stack with its own random input tokens (its own seed)"
QKV = "a random draw of Q, K, V (its own seed); the pooling projections are fixed"
TIMING = ("one timing run on this machine (fresh random inputs, every n timed in turn, the "
          "median of 5 calls each); runs of one session share the machine's state")
GRID = ("a trainability grid trained from its own seed (initialisation and data order) at the "
        "depths compared")

_C = [
    Claim("E1-critical", "critical σ_w² = 1.76 ± 0.01 at σ_b² = 0.05 and 1 at σ_b² = 0 (tanh)",
          "sec. 1.2; [Schoenholz2017] (1.76)", ("E1",), QUOTE_PHASES, kind="sanity", item="E1",
          replicate=DETERMINISTIC),
    Claim("E1-table", "the critical line equals our reference table (adaptive quadrature) to "
          "its 4 decimals", "ours", ("E1",), kind="sanity", item="E1", replicate=DETERMINISTIC),
    Claim("E1-self-averaging", "a wide random tanh net settles at the theory's q* (within 5 %): "
          "each net's largest relative error over the three phases, over nets",
          "sec. 1.2 (self-averaging)", ("E1",),
          "For DNN with large enough layer width, $\\langle * \\rangle$ can be replaced by the "
          "average over neuron in the same layer, i.e. assuming a self-averaging property.",
          item="E1", threshold=Q_REL_TOL, side="less", unit="relative error", replicate=NET,
          null="the tolerance: a net that does not self-average misses q* by 5 % or more (no "
               "control arm)"),
    Claim("E2", "random nets follow the q- and c-map: q^l within 5 %, c^l within 0.05 at every "
          "layer (each net's largest error over layers and phases, over nets)",
          "sec. 1.2, eqs. 1.2.1-1.2.2", ("E2",),
          "In the ordered phase, the two inputs will end up to be the same over enough layers.",
          replicate=NET,
          null="the tolerances: a net whose worst layer misses the iterated map by 5 % (q) or "
               "0.05 (c) or more (no control arm)"),
    Claim("E3-peak", "ξ_c peaks at the critical σ_w² (within the grid step)", "sec. 1.3",
          ("E3",), "Intuitively, the slower the quantities converge, the further information "
          "propagates along the depth.", kind="sanity", item="E3", replicate=DETERMINISTIC),
    Claim("E3-table", "q*, χ₁, c*, ξ_c, ξ_q equal our reference table (σ_b² = 0.05) to its "
          "precision", "ours", ("E3",), kind="sanity", item="E3", replicate=DETERMINISTIC),
    Claim("E3-6xi", "at equal depth, nets within 6ξ_c train better than nets beyond it "
          "(training accuracy, inside minus beyond, over seeds)", "[Schoenholz2017] (cited "
          "in sec. 1.3; the notes do not make this claim)", ("E3",),
          item="E3", threshold=0.0,
          side="greater", unit="accuracy", replicate=GRID,
          null="no difference at equal depth (within minus beyond = 0): depth alone decides"),
    Claim("E4-ordered", "ordered: the log-gradient slope per layer is −log χ₁ within 10 % "
          "(slope / (−log χ₁) − 1, over seeds)", "sec. 1.3, eq. 1.3.6", ("E4",),
          "In the ordered phase $\\chi < 1$ ... the magnitude of the gradient decreases "
          "exponentially as one backprop towards the first layer", item="E4",
          threshold=SLOPE_REL_TOL, side="within", unit="relative error", replicate=NET,
          null="the tolerance: a slope 10 % or more away from the theory's (no control arm)"),
    Claim("E4-chaotic", "chaotic: the log-gradient slope per layer is −log χ₁ within 10 % "
          "(slope / (−log χ₁) − 1, over seeds)", "sec. 1.3, eq. 1.3.6", ("E4",), item="E4",
          threshold=SLOPE_REL_TOL, side="within", unit="relative error", replicate=NET,
          null="the tolerance: a slope 10 % or more away from the theory's (no control arm)"),
    Claim("E4-critical", "critical: the log-gradient slope per layer is flat (|slope| < 0.01, "
          "over seeds)", "sec. 1.3, eq. 1.3.6", ("E4",),
          "At the critical line $\\chi = 1$, the system reaches a fine balance between "
          "gradient explosion and vanishing.", item="E4", threshold=FLAT_SLOPE, side="within",
          unit="log per layer", replicate=NET,
          null="a gradient that grows or decays by 1 % or more per layer (the ordered and "
               "chaotic arms do, by ~28 %)"),
    Claim("E5", "chaotic: curve length grows like χ₁^{l/2} (slope within 15 % of ½ log χ₁); "
          "ordered: it shrinks (per net, over nets)", "sec. 1.3; [Poole2016]", ("E5",),
          "In the ordered phase $\\chi < 1$, since the fixed point $c^*=1$, the curve will "
          "eventually collapse to a single point (all inputs have maximum correlation).",
          replicate=NET,
          null="a length that does not change with depth (log final / initial = 0), and the "
               "15 % tolerance on the chaotic slope"),
    Claim("E6-linear", "orthogonal linear nets are exact isometries (var λ < 1e-8)",
          "sec. 1.4; [Pennington2017]", ("E6",), kind="sanity", item="E6"),
    Claim("E6-orthogonal", "orthogonal tanh near q* → 0: var λ below a tenth of the Gaussian's "
          "and within 50 % of the theory", "sec. 1.4; [Pennington2017], [Pennington2018]",
          ("E6",), "showed that orthogonal weight initialization is preferred as it produces a "
          "more stable Jacobian spectrum", item="E6", replicate=PAIR,
          null="the Gaussian net of the same seed index (orthogonal / Gaussian variance = 1), "
               "and the 50 % tolerance on the theory"),
    Claim("E6-mean", "at criticality the mean squared singular value lies in [0.7, 1.3]",
          "sec. 1.4 (the mean is χ₁^L = 1)", ("E6",), item="E6", replicate=NET,
          null="the band: a mean outside [0.7, 1.3] (χ₁^L away from 1); no control arm"),
    Claim("E7-pure", "pure attention: res below 1e-6 by layer 3 (log10 res at layer 3 below "
          "-6, over seeds)", "sec. 4.1; [Dong2021]", ("E7",), QUOTE_DONG, item="E7",
          threshold=math.log10(PURE_RES), side="less", unit="log10 res", replicate=SAN,
          null="no collapse: res at layer 3 at or above 1e-6 (the skip stacks keep res ≈ 1)"),
    Claim("E7-skip", "skip with 1/√L branch scaling keeps res ≥ 0.9 at every layer (each "
          "seed's smallest res, over seeds)", "sec. 4.1; [Noci2022]", ("E7",),
          "Skip (or residual) connection (with depth-dependent scaling) is shown to help "
          "approximately preserve the cosine similarity of the tokens", item="E7",
          threshold=SKIP_RES, side="greater", unit="res", replicate=SAN,
          null="the collapse of the pure stack (res below 0.9 within a few layers)"),
    Claim("E7-ln", "layer norm does not prevent the collapse (res < 1e-3 at the last layer: "
          "log10 res below -3, over seeds)", "sec. 4.1; [Dong2021]", ("E7",),
          "Layer norm is shown [ref](https://proceedings.mlr.press/v139/dong21a/dong21a.pdf) "
          "to not useful in avoiding rank collapsing.", item="E7",
          threshold=math.log10(LN_RES), side="less", unit="log10 res", replicate=SAN,
          null="layer norm preventing the collapse: res at the last layer at or above 1e-3"),
    Claim("E7-slope", "slope of log(−log res) over layers ≈ log 3 (± 0.3), as [Dong2021]'s "
          "cubic bound implies (slope − log 3, one fit per seed, over seeds)",
          "sec. 4.1; [Dong2021]", ("E7",), QUOTE_DONG, item="E7", threshold=SLOPE_TOL,
          side="within", unit="log per layer", replicate=SAN,
          null="the tolerance: a slope 0.3 or more away from log 3 (no control arm)"),
    Claim("E7-cubic", "each layer cubes the residual: exponent of log res_{l+1} on log res_l "
          "≈ 3 (± 0.5) (exponent − 3, one fit per seed, over seeds)", "sec. 4.1; [Dong2021]",
          ("E7",), QUOTE_DONG, item="E7", threshold=CUBIC_TOL, side="within", unit="exponent",
          replicate=SAN,
          null="the tolerance: an exponent 0.5 or more away from 3 (1: a single exponential)"),
    Claim("E8-error", "at τ = 1 Linformer's relative error falls as k grows (error at the "
          "largest k minus at the smallest, per draw, over draws)",
          "sec. 4 (appendix); [Wang2020]", ("E8",), QUOTE_LINFORMER, item="E8", threshold=0.0,
          side="less", unit="relative error", replicate=QKV,
          null="an error that does not fall with k (difference = 0)"),
    Claim("E8-time", "Linformer's time grows more slowly with n than exact attention's "
          "(log-log slope, exact minus Linformer, per timing run, over runs)",
          "sec. 4 (appendix); [Wang2020]", ("E8",), QUOTE_LINFORMER, item="E8", threshold=0.0,
          side="greater", unit="log-log slope", replicate=TIMING,
          null="equal growth (exact minus Linformer = 0)"),
]
CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
