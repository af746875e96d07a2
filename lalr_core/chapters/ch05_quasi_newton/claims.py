"""Chapter 05's checks as data: each one's claim, the thesis's sentence, the kind and what it is
judged against (`lalr_core.core.results.claims`).

Claim tests (``kind="claim"``) state the thesis's claim in its direction, judged against a
null or a control arm (SGD, a random-direction null, the run with step t's own update left out),
and have synthetic cases in ``tests/test_ch05_quasi_newton_claims.py`` on which they PASS and
FAIL. Sanity checks (``kind="sanity"``) are properties of the algorithms on a known matrix or
identities: they guard the code and are not counted as verdicts. The thesis gives no pass
thresholds: a threshold here is ours (0 for a paired difference: the claimed direction against
the control arm; otherwise the null or the bound named in the text).
"""

from __future__ import annotations

from dataclasses import replace

from lalr_core.chapters.ch05_quasi_newton.quotes import QUOTES
from lalr_core.core.results.claims import DETERMINISTIC, Claim

# Table E.1's accuracies (%) per learning rate, SGDM and QN (also in data/reference/ch05_tableE.csv).
TABLE_E1 = {0.1: (92, 88), 0.05: (92, 87), 0.01: (90, 82)}
# Table E.2's losses at the extreme learning rates: (QN(0.01) - QN(0.1)) - (SGDM(0.01) - SGDM(0.1)).
TABLE_E2_EFFECT = (0.5362 - 0.3574) - (0.3411 - 0.3304)
# App. E.3: the cosine-maximised assignment's mean |cos| (~0.36) against ~1e-3 for random vectors.
E1_SOURCE_COSINE, E1_SOURCE_RANDOM = 0.36, 1e-3

_C = [
    # ---------------------------------------------------------------- fig 4.6 (sec. 4.3.5)
    Claim("fig4.6-accuracy", "QN ends with lower held-out accuracy than SGD (SGD − QN > 0)",
          "sec. 4.3.5, fig 4.6", quote=QUOTES["fig4.6"], item="fig4.6", threshold=0.0,
          side="greater", unit="points"),
    Claim("fig4.6-slower", "QN is slower to improve: its held-out loss averaged over the epochs "
          "is above SGD's (QN − SGD > 0)", "sec. 4.3.5, fig 4.6", quote=QUOTES["fig4.6"],
          item="fig4.6", threshold=0.0, side="greater", unit="nats"),
    Claim("fig4.6-volatile", "QN is more volatile: the spread of its detrended held-out loss "
          "(RMS of the second differences of log loss) is above SGD's (QN − SGD > 0)",
          "sec. 4.3.5, fig 4.6", quote=QUOTES["fig4.6"], item="fig4.6", threshold=0.0,
          side="greater"),
    Claim("fig4.6-diverge", "both methods diverge above lr 0.1: every run of both at the "
          "divergence lr diverges", "sec. 4.3.5", quote=QUOTES["fig4.6 diverge"], item="fig4.6"),
    # ---------------------------------------------------------------- tables E.1 / E.2
    Claim("tableE.1", "SGDM ends more accurate than QN at every learning rate (SGDM − QN > 0)",
          "app. E.1, table E.1", quote=QUOTES["tableE.1"], threshold=0.0, side="greater",
          source_effect=float(min(s - q for s, q in TABLE_E1.values())), unit="points"),
    Claim("tableE.2", "QN's loss degrades more than SGDM's as the learning rate falls",
          "app. E.1, table E.2", quote=QUOTES["tableE.2"], threshold=0.0, side="greater",
          source_effect=round(TABLE_E2_EFFECT, 4), unit="nats"),
    # ---------------------------------------------------------------- figs 4.7-4.9 (one run)
    Claim("fig4.7-small", "q^LC ≪ 1: below 0.1 at every checkpoint (our bound)", "sec. 4.3.6, "
          "fig 4.7", quote=QUOTES["fig4.7 small"], item="fig4.7"),
    Claim("fig4.7-start", "q^LC is highest at initialisation", "sec. 4.3.6, fig 4.7",
          quote=QUOTES["fig4.7 start"], item="fig4.7"),
    Claim("fig4.8-high", "the same-class similarity remains high: q^SL above the random-vector "
          "scale 10/√P at every record", "sec. 4.3.6, fig 4.8", quote=QUOTES["fig4.8"],
          item="fig4.8"),
    Claim("fig4.8-relaxes", "the clustering relaxes during training: q^SL at the end below q^SL "
          "at the start", "sec. 4.3.6, fig 4.8", quote=QUOTES["fig4.8"], item="fig4.8"),
    Claim("fig4.9-overlap", "the class gradients are not orthogonal: the share of batches whose "
          "q^GC is positive exceeds the 1/2 of a sign-symmetric (orthogonal) null",
          "sec. 4.3.6, fig 4.9", quote=QUOTES["fig4.9 overlap"], item="fig4.9", threshold=0.5,
          side="greater", unit="share of batches"),
    Claim("fig4.9-contrast", "logit gradients are closer within a class than class gradients "
          "across classes: mean q^SL > mean q^GC (over pairs)", "sec. 4.3.6, fig 4.9",
          quote=QUOTES["fig4.9 contrast"], item="fig4.9"),
    # ---------------------------------------------------------------- fig E.1 (app. E.3)
    Claim("figE.1-cosine", "class gradients align with the top-C eigenvectors: the assignment's "
          "mean |cos| over the last 20 % of batches exceeds the 99th percentile of random "
          "directions' (excess > 0)", "app. E.3, fig E.1b", quote=QUOTES["figE.1b"],
          item="figE.1", threshold=0.0, side="greater",
          source_effect=E1_SOURCE_COSINE - E1_SOURCE_RANDOM, unit="|cos|"),
    Claim("figE.1-rank", "the rank of [v, e] falls to C: the median over the last 20 % of the "
          "steps is at most C + 2 and below the median over the first 10 %", "app. E.3, "
          "fig E.1a", quote=QUOTES["figE.1a"], item="figE.1"),
    # ---------------------------------------------------------------- fig 4.10 (sec. 4.3.7.1)
    Claim("fig4.10-early", "QN is ahead early at every batch size: SGD's held-out loss minus "
          "QN's > 0 after about one epoch of the smallest batch", "sec. 4.3.7.1, fig 4.10",
          quote=QUOTES["fig4.10 early"], item="fig4.10", threshold=0.0, side="greater",
          unit="nats"),
    Claim("fig4.10-overtakes", "SGD overtakes at every batch size, the full batch included: "
          "QN's final held-out loss minus SGD's > 0 at each", "sec. 4.3.7.1, fig 4.10",
          quote=QUOTES["fig4.10 crossover"], item="fig4.10", threshold=0.0, side="greater",
          unit="nats"),
    Claim("fig4.10-order", "the crossover comes no later (in epochs) for smaller batches "
          "(judged only where every batch size has one)", "sec. 4.3.7.1, fig 4.10",
          quote=QUOTES["fig4.10 smaller"], item="fig4.10"),
    Claim("fig4.10-source-lr", "at the thesis's lr 0.01, SGD overtakes at every batch size "
          "(QN − SGD final held-out loss > 0 at each)", "sec. 4.3.7.1, fig 4.10 (caption's lr)",
          quote=QUOTES["fig4.10 crossover"], item="fig4.10", threshold=0.0, side="greater",
          unit="nats"),
    # ---------------------------------------------------------------- fig 4.11 (one run)
    Claim("fig4.11-large", "a few large eigenvalues dominate: λ_max > 10 × the median of the "
          "top 30", "sec. 4.3.7.2, fig 4.11", quote=QUOTES["fig4.11"], item="fig4.11"),
    Claim("fig4.11-zero", "most eigenvalues are near zero: > 90 % have |λ| < 0.01 λ_max",
          "sec. 4.3.7.2, fig 4.11", quote=QUOTES["fig4.11"], item="fig4.11"),
    # ---------------------------------------------------------------- known matrix (sanity)
    Claim("fig4.12", "power iteration with H converges: |cos φ| > 0.99 at the stop, λ within "
          "1 %", "sec. 4.4.1, fig 4.12", quote=QUOTES["fig4.12"], kind="sanity"),
    Claim("fig4.13", "one gradient per iterate does not converge: late mean |cos φ| < 0.5, the "
          "estimate's coefficient of variation > 0.2", "sec. 4.4.2, fig 4.13",
          quote=QUOTES["fig4.13"], kind="sanity"),
    Claim("fig4.17a", "1000 gradients per iterate converge: |cos φ| > 0.98 over the last 10 "
          "iterates, λ within 5 %", "sec. 4.4.3.3, fig 4.17A", quote=QUOTES["fig4.17a"],
          kind="sanity", item="fig4.17"),
    Claim("fig4.17b", "a rolling window converges but oscillates: late mean |cos φ| > 0.9, "
          "min < 0.97", "sec. 4.4.3.3, fig 4.17B", quote=QUOTES["fig4.17b"], kind="sanity",
          item="fig4.17"),
    Claim("fig4.18", "larger windows give steadier estimates: the late mean |cos φ| rises and "
          "its spread falls with s", "sec. 4.4.3.3, fig 4.18", quote=QUOTES["fig4.18"],
          kind="sanity"),
    # ---------------------------------------------------------------- fig 4.14 (test functions)
    Claim("fig4.14-rastrigin", "Rastrigin: D_t rises steadily (falls on < 10 % of steps) and "
          "the path reaches (0, 0)", "sec. 4.4.3.1, fig 4.14A",
          quote=QUOTES["fig4.14 rastrigin"], item="fig4.14"),
    Claim("fig4.14-rosenbrock", "Rosenbrock: D_t fluctuates (falls on > 20 % of steps) and the "
          "path ends at (1, 1)", "sec. 4.4.3.1, fig 4.14B", quote=QUOTES["fig4.14 rosenbrock"],
          item="fig4.14"),
    # ---------------------------------------------------------------- fig 4.15
    Claim("fig4.15-toward", "the gradient points towards the solution beyond its own step: "
          "median φ_t with step t's own (momentum-carried) update left out of θ_τ − θ_t below "
          "the independent-gradient null's (real − null < 0)",
          "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 negative"], item="fig4.15",
          threshold=0.0, side="less", unit="cos"),
    Claim("fig4.15-few", "few gradients pass the random-vector threshold: |φ_t| ≥ 10/√n for "
          "< 25 % (sanity: the independent-gradient null passes it too)", "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 threshold"],
          item="fig4.15", threshold=0.25, side="less", unit="share", kind="sanity"),
    Claim("fig4.15-rises", "D_t keeps increasing: it does not fall on > 90 % of the steps (sanity: the independent-gradient null passes it too)",
          "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 increasing"], item="fig4.15",
          threshold=0.9, side="greater", unit="share of steps", kind="sanity"),
    Claim("fig4.15-early", "most of D_t is travelled early: D_t(T/4) / D_t(T) above the "
          "independent-gradient null's (real − null > 0)", "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 early"],
          item="fig4.15", threshold=0.0, side="greater", unit="ratio"),
    Claim("fig4.15-spread", "φ_t spreads more at the end: log(sd of the last tenth / sd of the "
          "first tenth) > 0 (sanity: the independent-gradient null passes it too)", "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 spread"],
          item="fig4.15", threshold=0.0, side="greater", unit="log ratio", kind="sanity"),
    # ---------------------------------------------------------------- fig 4.16
    Claim("fig4.16-mean", "larger mini-batches are more cohesive: the mean cos ψ_i rises with "
          "the batch size more than the independent-gradient null's", "sec. 4.4.3.2, fig 4.16", quote=QUOTES["fig4.16"], item="fig4.16",
          threshold=0.0, side="greater", unit="cos"),
    Claim("fig4.16-spread", "larger mini-batches spread less: the within-probe sd of cos ψ_i "
          "falls with the batch size more than the independent-gradient null's", "sec. 4.4.3.2, fig 4.16", quote=QUOTES["fig4.16"],
          item="fig4.16", threshold=0.0, side="greater", unit="cos"),
    Claim("fig4.16-high", "at the smallest mini-batch some gradients have cos ψ_i > 0.9 (in "
          "every seed)",
          "sec. 4.4.3.2, fig 4.16a", quote=QUOTES["fig4.16a"], item="fig4.16"),
    Claim("fig4.16-largest", "at the smallest mini-batch the most aligned gradient of a probe is "
          "its largest one in more than half of the probes (chance: 1/d)",
          "sec. 4.4.3.2, fig 4.16a", quote=QUOTES["fig4.16a"], item="fig4.16", threshold=0.5,
          side="greater", unit="share of probes"),
    Claim("fig4.16-degrades", "cohesion degrades over training: C over the last epoch's probes "
          "minus the first epoch's, beyond the independent-gradient null's change, < 0 at every "
          "batch size", "sec. 4.4.3.2",
          quote=QUOTES["fig4.16 degrades"], item="fig4.16", threshold=0.0, side="less",
          unit="cos"),
    # ---------------------------------------------------------------- fig 4.20 (algorithm 5)
    Claim("fig4.20-clip", "the projection rule limits the step: its mean η is below η′ = 1 "
          "(η = min(η′, 1 − |cos|) ≤ η′ by construction)", "sec. 4.4.4, algorithm 5",
          quote=QUOTES["fig4.20 clip"], item="fig4.20", kind="sanity", threshold=1.0,
          side="less"),
    Claim("fig4.20-premise", "the premise: 0.1 is the better lr for SGD (SGD(1) − SGD(0.1) "
          "final held-out loss > 0)", "sec. 4.4.4, fig 4.20", quote=QUOTES["fig4.20 lower"],
          item="fig4.20", threshold=0.0, side="greater", unit="nats"),
    Claim("fig4.20-projection", "the projection rule ends below SGD at lr 1 (SGD(1) − rule "
          "final held-out loss > 0)", "sec. 4.4.4, fig 4.20", quote=QUOTES["fig4.20 higher"],
          item="fig4.20", threshold=0.0, side="greater", unit="nats"),
    Claim("fig4.20-eigenvalue", "the eigenvalue rule ends below SGD at lr 1 (SGD(1) − rule "
          "final held-out loss > 0)", "sec. 4.4.4, fig 4.20", quote=QUOTES["fig4.20 higher"],
          item="fig4.20", threshold=0.0, side="greater", unit="nats"),
    Claim("fig4.20-early", "SGD at lr 0.1 is best early: every other run's held-out loss after "
          "epoch 1 minus SGD(0.1)'s > 0", "sec. 4.4.4, fig 4.20", quote=QUOTES["fig4.20 lower"],
          item="fig4.20", threshold=0.0, side="greater", unit="nats"),
    Claim("fig4.20-end", "both eigen rules end above SGD at lr 0.1 (rule − SGD(0.1) final "
          "held-out loss > 0)", "sec. 4.4.4, fig 4.20", quote=QUOTES["fig4.20 lower"],
          item="fig4.20", threshold=0.0, side="greater", unit="nats"),
    Claim("fig4.20-window", "the eigenvalue rule's η < 1 while a random column is left in the "
          "window (a property of algorithm 5 as printed)", "sec. 4.4.4, algorithm 5",
          quote=QUOTES["fig4.20 window"], item="fig4.20", kind="sanity"),
    # ---------------------------------------------------------------- appendix H (identities)
    Claim("figH.1", "the ascending eigenvalues of a Wishart matrix follow a t + b t³ (R² > 0.95)",
          "app. H, fig H.1", quote=QUOTES["figH.1"], kind="sanity"),
    Claim("figH.2", "sample cumulants of ‖Hε‖² match κ_n = 2^(n−1)(n−1)! Σλ^(2n) (within 2 %, "
          "5 %, 15 %)", "app. H, fig H.2", quote=QUOTES["figH.2"], kind="sanity"),
]

ONE_RUN = ("one network trained from its own seed (the probed run: fig 4.11's CNN at smoke / "
           "quick, fig 4.6's SGD run of seed 0 at paper); the chapter has one such run, so its "
           "verdict is recorded INCONCLUSIVE (1 replicate)")
SEED = "a run (or a pair of runs, paired by seed) trained from its own seed"
INDEPENDENT_GRADIENTS = ("the independent-gradient null of the same seed: the same optimiser "
                         "and steps driven by gradients of the run's own norms in uniformly "
                         "random directions (`numbers.random_walk_phi`, "
                         "`numbers.independent_cohesion`), paired by seed")
REPLICATE_NULL = {
    "fig4.6-accuracy": (SEED, "the control arm SGD, paired by seed (difference 0)"),
    "fig4.6-slower": (SEED, "the control arm SGD, paired by seed (difference 0)"),
    "fig4.6-volatile": (SEED, "the control arm SGD, paired by seed (difference 0)"),
    "fig4.6-diverge": (SEED + "; the bool holds in every one of the seeds",
                       "a run that stays below the initial loss ln 10 at the divergence lr"),
    "tableE.1": (SEED, "the control arm SGDM, paired by seed (difference 0)"),
    "tableE.2": (SEED, "SGDM's own degradation from the high to the low lr, paired by seed"),
    "fig4.7-small": (ONE_RUN, "our bound 0.1 (q^LC of order 1: the logit curvature not small)"),
    "fig4.7-start": (ONE_RUN, "the start no higher than a later checkpoint"),
    "fig4.8-high": (ONE_RUN, "the random-vector scale 10/√P (app. A.1.4)"),
    "fig4.8-relaxes": (ONE_RUN, "q^SL at the end no lower than at the start"),
    "fig4.9-overlap": (ONE_RUN + "; its batches are not replicates",
                       "a sign-symmetric (orthogonal) q^GC: share 1/2"),
    "fig4.9-contrast": (ONE_RUN, "mean q^SL no higher than the mean q^GC over pairs"),
    "figE.1-cosine": (ONE_RUN + "; its batches are not replicates",
                      ("random directions against the same eigenvectors (their 99th "
                      "percentile)")),
    "figE.1-rank": (ONE_RUN, "the rank staying at 2C (no intersection) or not falling"),
    "fig4.10-early": (SEED, "the control arm SGD, paired by seed (difference 0)"),
    "fig4.10-overtakes": (SEED, "the control arm SGD, paired by seed (difference 0)"),
    "fig4.10-order": (SEED + "; the order holds in every seed's crossovers",
                      "a crossover later for a smaller batch in some seed"),
    "fig4.10-source-lr": (SEED, "the control arm SGD, paired by seed (difference 0)"),
    "fig4.11-large": (ONE_RUN, "a flat top spectrum: λ_max within 10 × the top-30 median"),
    "fig4.11-zero": (ONE_RUN, "a spectrum with ≤ 90 % of |λ| below 0.01 λ_max"),
    "fig4.14-rastrigin": (DETERMINISTIC, ("a path whose D_t falls on ≥ 10 % of the steps or "
                                         "misses (0, 0) (fixed start, lr, exact gradients)")),
    "fig4.14-rosenbrock": (DETERMINISTIC, ("a path whose D_t falls on ≤ 20 % of the steps or "
                                          "misses (1, 1) (fixed start, lr, exact gradients)")),
    "fig4.15-toward": (SEED, INDEPENDENT_GRADIENTS + " (its median is 0 by symmetry)"),
    "fig4.15-early": (SEED, INDEPENDENT_GRADIENTS),
    "fig4.16-mean": (SEED, INDEPENDENT_GRADIENTS + " (the gradients' norms alone make the "
                                                   "mean rise with the batch size)"),
    "fig4.16-spread": (SEED, INDEPENDENT_GRADIENTS),
    "fig4.16-degrades": (SEED, INDEPENDENT_GRADIENTS),
    "fig4.16-high": (SEED + "; the bool holds in every seed",
                     ("equal gradient norms, where cos ψ_i ≈ 1/√d (the independent-gradient "
                     "null with the run's norms, the thesis's own mechanism, is shown beside)")),
    "fig4.16-largest": (SEED, ("norms unrelated to the alignment: share 1/d < 1/2 (the "
                              "independent-gradient null with the run's norms, the thesis's own "
                              "mechanism, gives ≈ 1 and is shown beside)")),
    "fig4.20-premise": (SEED, "SGD at lr 0.1, paired by seed (difference 0)"),
    "fig4.20-projection": (SEED, "SGD at lr 1, the control arm, paired by seed"),
    "fig4.20-eigenvalue": (SEED, "SGD at lr 1, the control arm, paired by seed"),
    "fig4.20-early": (SEED, "SGD at lr 0.1, the control arm, paired by seed"),
    "fig4.20-end": (SEED, "SGD at lr 0.1, the control arm, paired by seed"),
}
_C = [replace(c, replicate=REPLICATE_NULL[c.id][0], null=REPLICATE_NULL[c.id][1])
      if c.kind == "claim" else c for c in _C]

CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
