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

from lalr_core.chapters.ch05_quasi_newton.quotes import QUOTES
from lalr_core.core.results.claims import Claim

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
          "median φ_t < 0 with step t's own (momentum-carried) update left out of θ_τ − θ_t",
          "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 negative"], item="fig4.15",
          threshold=0.0, side="less", unit="cos"),
    Claim("fig4.15-few", "few gradients pass the random-vector threshold: |φ_t| ≥ 10/√n for "
          "< 25 %", "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 threshold"],
          item="fig4.15", threshold=0.25, side="less", unit="share"),
    Claim("fig4.15-rises", "D_t keeps increasing: it does not fall on > 90 % of the steps",
          "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 increasing"], item="fig4.15",
          threshold=0.9, side="greater", unit="share of steps"),
    Claim("fig4.15-early", "most of D_t is travelled early: D_t(T/4) / D_t(T) > 0.5, a random "
          "walk's √(1/4)", "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 early"],
          item="fig4.15", threshold=0.5, side="greater", unit="ratio"),
    Claim("fig4.15-spread", "φ_t spreads more at the end: log(sd of the last tenth / sd of the "
          "first tenth) > 0", "sec. 4.4.3.1, fig 4.15", quote=QUOTES["fig4.15 spread"],
          item="fig4.15", threshold=0.0, side="greater", unit="log ratio"),
    # ---------------------------------------------------------------- fig 4.16
    Claim("fig4.16-mean", "larger mini-batches are more cohesive: the mean cos ψ_i rises with "
          "the batch size", "sec. 4.4.3.2, fig 4.16", quote=QUOTES["fig4.16"], item="fig4.16",
          threshold=0.0, side="greater", unit="cos"),
    Claim("fig4.16-spread", "larger mini-batches spread less: the within-probe sd of cos ψ_i "
          "falls with the batch size", "sec. 4.4.3.2, fig 4.16", quote=QUOTES["fig4.16"],
          item="fig4.16", threshold=0.0, side="greater", unit="cos"),
    Claim("fig4.16-high", "at the smallest mini-batch some gradients have cos ψ_i > 0.9",
          "sec. 4.4.3.2, fig 4.16a", quote=QUOTES["fig4.16a"], item="fig4.16"),
    Claim("fig4.16-largest", "at the smallest mini-batch the most aligned gradient of a probe is "
          "its largest one in more than half of the probes (chance: 1/d)",
          "sec. 4.4.3.2, fig 4.16a", quote=QUOTES["fig4.16a"], item="fig4.16", threshold=0.5,
          side="greater", unit="share of probes"),
    Claim("fig4.16-degrades", "cohesion degrades over training: C over the last epoch's probes "
          "below the first epoch's, at every batch size", "sec. 4.4.3.2",
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

CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
