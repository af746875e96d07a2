"""Chapter 04's claim tests as data: what each tests, where, the source's sentence, and the
threshold and side its interval over seeds is judged against.

Sources: the thesis ``[Tuddenham2026]`` sec. 3.2 (figs 3.7-3.19) and, for E13, the lecture
notes ``[ATDL-notes]`` sec. 3.5. Every threshold is ours (the sources give none; constants of the
package). A claim about directedness is judged against a null: the filtered-noise null (figs
3.12, 3.19 and the spikes of fig 3.7: iid Gaussian gradients of the run's dimension through the
same optimiser's update rule, momentum or Adam's moments, lr schedule and step count, several
null seeds; it replaced the memoryless random walk, which momentum 0.85 alone beats about
2.8-fold at N = 16), the other optimiser (figs 3.12B, 3.19), or the same run at a step without
an lr drop (the spikes of figs 3.7, 3.19). One replicate of a training claim is a network
trained from its own seed (its own initialisation and batch order; no stage is shared between
seeds; SGDM and Adam of one seed share both and are paired). The simulations of figs 1.2, A.1, 3.8-3.10 and 3.13-3.16 and
listings C.2-C.4 check closed forms against Monte Carlo: they are sanity checks, recorded in the
notebook with ``kind="sanity"``.
"""

from __future__ import annotations

import math

from lalr_core.chapters.ch04_directedness import (
    E13_LINEAR_TOL,
    E13_PLATEAU,
    FAR_ABOVE,
    LAYER_SHARE,
    RW_MARGIN,
    SPIKE_GAIN,
)
from lalr_core.core.results.claims import Claim

RUN = ("a network trained from its own seed (own initialisation and batch order; no stage "
       "shared between seeds)")
PAIR = ("an SGDM and an Adam network trained from the same seed (shared initialisation and "
        "batch order), paired; pairs of different seeds independent")
NOISE = ("the filtered-noise null: iid Gaussian gradients of the run's dimension through the "
         "same optimiser's update rule (momentum, or Adam's moments), lr schedule and step "
         "count, mean over null seeds; no signal, no weight decay")
WALK = "a simulated Gaussian random walk (n = 100, its own seed)"

AR_MUCH_BETTER = math.log(0.5)  # fig 3.17: "much better": log(AR / RW objective) below log 1/2
RW_TRACK_TOL = 0.10       # fig 3.11: a single walk's mean relative error from 1/sqrt(t) ...
RW_TRACK_SHARE = 0.9      # ... below RW_TRACK_TOL in at least this share of walks
RW_MEAN_TOL = 0.05        # fig 3.11: the seed-averaged psi within 5 % of 1/sqrt(t)

EARLY_QUOTE = ("during early training, $t < 500$, $\\psi(t)$ is initially high but rapidly "
               "decays, reflecting the optimiser’s transition from large, directional updates "
               "to more curved and noisy dynamics as it begins to explore non-linear regions of "
               "the loss surface.")
SPIKES_QUOTE = ("Additionally, epoch transitions (vertical dashed lines at epochs 100 and 150) "
                "show sharp increases in $\\psi(t)$ coinciding with learning rate drops, as the "
                "optimiser regains alignment and begins more directed movement through the "
                "now-narrower local landscape, before beginning the same pattern of "
                "early-mid-late training again.")
ABOVE_RW_QUOTE = ("Both optimisers show ψ well above the random walk baseline, confirming "
                  "non-trivial alignment in their trajectories; similar to the AR process with "
                  "low noise.")
ABOVE_QUOTE = ("The $\\psi(t)$ metric, figure 3.19, shows that SGDM maintains higher "
               "directional efficiency than Adam throughout training, with smoother decay and "
               "more consistent progress through weight space.")
LARGER_QUOTE = ("Adam exhibits a sharper early drop in ψ , indicating a more quick descent into "
                "a minimum and then less coherent movement, but responds more strongly to "
                "learning rate drops with brief spikes in efficiency.")
FAR_QUOTE = ("Figures 3.12a and 3.12b show the results of this experiment, where we see that "
             "the optimisation is directed for both the SGDM and Adam optimisers demonstrated "
             "by the displacement being much greater in practice than expected from a random "
             "walk.")
MORE_QUOTE = ("SGDM shows a shape more similar to the random walk, specifically, at the start, "
              "where Adam is extremely directed.")
AR_QUOTE = ("We plot the results in figures 3.17a and 3.17b, and we can see that the AR process "
            "is a much better fit than the random walk in terms of the magnitude of the "
            "values, as expected.")
SHAPE_QUOTE = ("We check the match of shape of the total Euclidian distance for a random walk "
               "by setting $\\gamma = 0$ for our minimisation equation (3.15) and find, figure "
               "3.18 that curve of the total Euclidian distance is better fit by a random walk.")
PSI_QUOTE = ("Additionally, we plot the expected directedness measure, $\\psi(t) \\approx "
             "\\frac{1}{\\sqrt{t}}$, in figure 3.11 showing that the value of ψ is indeed "
             "$\\frac{1}{\\sqrt{t}}$ and that it tracks his value accurately, even from the "
             "beginning.")
E13_RUN = ("a seed of the E13 grid: its own student initialisation and batch stream (the "
           "teacher task is fixed)")
NOTES = "[ATDL-notes] sec. 3.5 (table, footnotes * and **); our reading and thresholds (E13)"

_C = []
for _panel, _name in (("A", "SGDM"), ("B", "Adam")):
    _C += [
        Claim(f"fig3.7{_panel}-early", f"{_name}: early phase: psi is high (> 0.8 at batch 5) "
              "and decays before the first drop", "§3.2.3, fig 3.7", quote=EARLY_QUOTE,
              item=f"fig3.7{_panel}", threshold=0.0, side="greater", unit="psi",
              replicate=RUN, null=f"a path with no early decay (margin <= 0); {NOISE} has "
              "margin <= 0 (psi_N flat after N), shown beside it"),
        Claim(f"fig3.7{_panel}-spikes", f"{_name}: psi_N rises sharply after each lr drop: by "
              f"more than {100 * SPIKE_GAIN:g} %-points beyond its rise at a step without a "
              "drop and beyond the filtered-noise null's rise at that drop (the smaller over "
              "the drops)", "§3.2.3, fig 3.7", quote=SPIKES_QUOTE,
              item=f"fig3.7{_panel}", threshold=100 * SPIKE_GAIN, side="greater",
              unit="%-points", replicate=RUN,
              null=f"the same run at a control step N before the drop, and {NOISE} at the "
                   "same drop (subtracted)"),
        Claim(f"fig3.19{_panel}-rw", f"{_name}'s psi_N stays well above the filtered-noise "
              f"null's psi_N (noise through the same optimiser; smallest ratio > "
              f"{RW_MARGIN:g})", "§3.2.3, fig 3.19",
              quote=ABOVE_RW_QUOTE, item=f"fig3.19{_panel}", threshold=RW_MARGIN,
              side="greater", unit="x filtered-noise null", replicate=RUN,
              null=f"{NOISE} (not the random walk's 1/sqrt(N), which momentum alone beats)"),
        Claim(f"fig3.12{_panel}", f"{_name}: the final D_t is far above the fitted "
              f"filtered-noise null's (> {FAR_ABOVE:g}x): directed", "§3.2.5, fig 3.12",
              quote=FAR_QUOTE, item=f"fig3.12{_panel}", threshold=FAR_ABOVE, side="greater",
              unit="x filtered-noise null", replicate=RUN,
              null=f"{NOISE}, scaled to the run's D_s, D_t by eq. 3.15 (as the thesis fits the "
                   "random walk's sigma)"),
        Claim(f"fig3.17{_panel}", f"{_name}: the AR fit's objective (eq. 3.15) is much lower "
              "than the random walk's (log ratio below log 1/2; the AR contains the random "
              "walk, so 'lower' alone holds by construction)", "§3.2.7, fig 3.17",
              quote=AR_QUOTE, item=f"fig3.17{_panel}", threshold=AR_MUCH_BETTER, side="less",
              unit="log ratio", replicate=RUN,
              null="the random-walk fit of the same run (nested in the AR: ratio <= 1 by "
                   "construction, hence the threshold log 1/2)"),
    ]
_C += [
    Claim("fig3.19-order", "SGDM's psi_N is above Adam's throughout training (in every lr "
          "phase; the smallest phase gap)", "§3.2.3, fig 3.19", quote=ABOVE_QUOTE,
          item="fig3.19A", threshold=0.0, side="greater", unit="psi", replicate=PAIR,
          null="Adam's run of the same seed (paired); the filtered-noise nulls' gap is "
               "negative (noise through Adam's filters is the more directed), shown beside it"),
    Claim("fig3.19-spikes", "Adam's spikes after the lr drops (beyond a step without a drop) "
          "are larger than SGDM's", "§3.2.3, fig 3.19", quote=LARGER_QUOTE, item="fig3.19B",
          threshold=0.0, side="greater", unit="%-points", replicate=PAIR,
          null="SGDM's controlled spike in the same seed (paired); the filtered-noise nulls "
               "give Adam the smaller spike, shown beside it"),
    Claim("extra_layer_psi", f"most weight tensors (> {100 * LAYER_SHARE:g} %) show the lr-drop "
          "spike too, beyond the control step and the filtered-noise null's rise (our claim, "
          "not the thesis's)", "ours, on fig 3.7",
          threshold=LAYER_SHARE, side="greater", unit="share of tensors", replicate=RUN,
          null=f"each tensor at the control step N before the drop, and {NOISE} (SGDM's; "
               "its whole-vector rise at the drop, subtracted)"),
    Claim("fig3.12B-start", "Adam is more directed than SGDM at the start (psi at batch 20), "
          "beyond the filtered-noise nulls' gap there", "§3.2.5, fig 3.12", quote=MORE_QUOTE,
          item="fig3.12B", threshold=0.0, side="greater", unit="psi", replicate=PAIR,
          null="SGDM's run of the same seed (paired), plus the filtered-noise nulls' gap at "
               "batch 20 (Adam's minus SGDM's, subtracted)"),
    Claim("fig3.18", "the random walk fitted with gamma = 0 follows the shape of D_t better "
          "than the fig 3.17 AR fit (squared error after scaling each to D_t)",
          "§3.2.7, fig 3.18", quote=SHAPE_QUOTE, threshold=0.0, side="less",
          unit="log ratio", replicate=RUN,
          null="the fig 3.17 AR fit's D_t shape on the same run (log ratio 0: equal fits)"),
    Claim("fig3.11-single", "a single walk's psi tracks 1/sqrt(t) from the start: mean relative "
          f"error < {100 * RW_TRACK_TOL:g}% in at least {100 * RW_TRACK_SHARE:g}% of walks",
          "§3.2.4, fig 3.11", quote=PSI_QUOTE, item="fig3.11", replicate=WALK,
          null="a walk whose psi is off 1/sqrt(t) by more than the tolerance; the bool holds "
               "over every simulated walk (replicates = sim_seeds)"),
    Claim("fig3.11-mean", f"the seed-averaged psi tracks 1/sqrt(t) within {100 * RW_MEAN_TOL:g}%",
          "§3.2.4, fig 3.11", quote=PSI_QUOTE, item="fig3.11", replicate=WALK,
          null="the closed form 1/sqrt(t) (eq. 3.14) off by more than the tolerance; the mean "
               "is over sim_seeds independent walks (replicates = sim_seeds)"),
    Claim("E13-linear", f"steps-to-target ∝ 1/B at small B: log-log slope within "
          f"±{E13_LINEAR_TOL:g} of -1 (judged on slope + 1)", NOTES,
          quote="|# weight update required| more | less |", item="E13",
          threshold=E13_LINEAR_TOL, side="within", unit="slope", replicate=E13_RUN,
          null="any other scaling: a slope off -1 by more than the tolerance"),
    Claim("E13-plateau", f"then a plateau (maximal data parallelism): slope on the largest B "
          f"above {E13_PLATEAU:g}", NOTES,
          quote="the benefit of larger batch size to parallelism plateau for large enough "
                "batch size (called **maximal data parallelism**)", item="E13",
          threshold=E13_PLATEAU, side="greater", unit="slope", replicate=E13_RUN,
          null="continued linear scaling (slope -1, below the threshold)"),
    Claim("E13-adam", "Adam's effective step grows with B: mean |Δθ|/η at the largest B above "
          "the smallest", NOTES,
          quote="larger batch sizes increase the effective learning rate (batch empirical FIM "
                "inversely proportional batch size)", item="E13", threshold=0.0,
          side="greater", unit="|Δθ|/η", replicate=E13_RUN,
          null="Adam's mean |Δθ|/η at the smallest batch of the same seed (paired)"),
    Claim("E13-psi", "ψ rises with B beyond the random walk's rise from fewer steps: ψ√t at "
          "the target (fastest lr; ψ in units of a walk's 1/√t) larger at the largest B than at "
          "the smallest", NOTES, quote="|gradient| noisy | less noisy |", item="E13",
          threshold=0.0, side="greater", unit="log ratio", replicate=E13_RUN,
          null="a random walk with each run's number of steps (psi sqrt(t) equal at both B; "
               "plain SGD has no momentum filter)"),
]
CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
