"""Chapter 04's claim tests as data: what each tests, where, the source's sentence, and the
threshold and side its interval over seeds is judged against.

Sources: the thesis ``[Tuddenham2026]`` sec. 3.2 (figs 3.7-3.19) and, for E13, the lecture
notes ``[ATDL-notes]`` sec. 3.5. Every threshold is ours (the sources give none; constants of the
package). A claim about directedness is judged against a null: the random walk (figs 3.12,
3.19), the other optimiser (figs 3.12B, 3.19), or the same run at a step without an lr drop
(the spikes of figs 3.7, 3.19). The simulations of figs 1.2, A.1, 3.8-3.10 and 3.13-3.16 and
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
NOTES = "[ATDL-notes] sec. 3.5 (table, footnotes * and **); our reading and thresholds (E13)"

_C = []
for _panel, _name in (("A", "SGDM"), ("B", "Adam")):
    _C += [
        Claim(f"fig3.7{_panel}-early", f"{_name}: early phase: psi is high (> 0.8 at batch 5) "
              "and decays before the first drop", "§3.2.3, fig 3.7", quote=EARLY_QUOTE,
              item=f"fig3.7{_panel}", threshold=0.0, side="greater", unit="psi"),
        Claim(f"fig3.7{_panel}-spikes", f"{_name}: psi_N rises sharply after each lr drop: by "
              f"more than {100 * SPIKE_GAIN:g} %-points beyond its rise at a step without a "
              "drop (the smaller over the drops)", "§3.2.3, fig 3.7", quote=SPIKES_QUOTE,
              item=f"fig3.7{_panel}", threshold=100 * SPIKE_GAIN, side="greater",
              unit="%-points"),
        Claim(f"fig3.19{_panel}-rw", f"{_name}'s psi_N stays well above the random-walk "
              f"baseline 1/sqrt(N) (smallest ratio > {RW_MARGIN:g})", "§3.2.3, fig 3.19",
              quote=ABOVE_RW_QUOTE, item=f"fig3.19{_panel}", threshold=RW_MARGIN,
              side="greater", unit="x random walk"),
        Claim(f"fig3.12{_panel}", f"{_name}: the final D_t is far above the fitted random "
              f"walk's (> {FAR_ABOVE:g}x): directed", "§3.2.5, fig 3.12", quote=FAR_QUOTE,
              item=f"fig3.12{_panel}", threshold=FAR_ABOVE, side="greater",
              unit="x random walk"),
        Claim(f"fig3.17{_panel}", f"{_name}: the AR fit's objective (eq. 3.15) is much lower "
              "than the random walk's (log ratio below log 1/2; the AR contains the random "
              "walk, so 'lower' alone holds by construction)", "§3.2.7, fig 3.17",
              quote=AR_QUOTE, item=f"fig3.17{_panel}", threshold=AR_MUCH_BETTER, side="less",
              unit="log ratio"),
    ]
_C += [
    Claim("fig3.19-order", "SGDM's psi_N is above Adam's throughout training (in every lr "
          "phase; the smallest phase gap)", "§3.2.3, fig 3.19", quote=ABOVE_QUOTE,
          item="fig3.19A", threshold=0.0, side="greater", unit="psi"),
    Claim("fig3.19-spikes", "Adam's spikes after the lr drops (beyond a step without a drop) "
          "are larger than SGDM's", "§3.2.3, fig 3.19", quote=LARGER_QUOTE, item="fig3.19B",
          threshold=0.0, side="greater", unit="%-points"),
    Claim("extra_layer_psi", f"most weight tensors (> {100 * LAYER_SHARE:g} %) show the lr-drop "
          "spike too (our claim, not the thesis's)", "ours, on fig 3.7",
          threshold=LAYER_SHARE, side="greater", unit="share of tensors"),
    Claim("fig3.12B-start", "Adam is more directed than SGDM at the start (psi at batch 20)",
          "§3.2.5, fig 3.12", quote=MORE_QUOTE, item="fig3.12B", threshold=0.0,
          side="greater", unit="psi"),
    Claim("fig3.18", "the random walk fitted with gamma = 0 follows the shape of D_t better "
          "than the fig 3.17 AR fit (squared error after scaling each to D_t)",
          "§3.2.7, fig 3.18", quote=SHAPE_QUOTE, threshold=0.0, side="less",
          unit="log ratio"),
    Claim("fig3.11-single", "a single walk's psi tracks 1/sqrt(t) from the start: mean relative "
          f"error < {100 * RW_TRACK_TOL:g}% in at least {100 * RW_TRACK_SHARE:g}% of walks",
          "§3.2.4, fig 3.11", quote=PSI_QUOTE, item="fig3.11"),
    Claim("fig3.11-mean", f"the seed-averaged psi tracks 1/sqrt(t) within {100 * RW_MEAN_TOL:g}%",
          "§3.2.4, fig 3.11", quote=PSI_QUOTE, item="fig3.11"),
    Claim("E13-linear", f"steps-to-target ∝ 1/B at small B: log-log slope within "
          f"±{E13_LINEAR_TOL:g} of -1 (judged on slope + 1)", NOTES,
          quote="|# weight update required| more | less |", item="E13",
          threshold=E13_LINEAR_TOL, side="within", unit="slope"),
    Claim("E13-plateau", f"then a plateau (maximal data parallelism): slope on the largest B "
          f"above {E13_PLATEAU:g}", NOTES,
          quote="the benefit of larger batch size to parallelism plateau for large enough "
                "batch size (called **maximal data parallelism**)", item="E13",
          threshold=E13_PLATEAU, side="greater", unit="slope"),
    Claim("E13-adam", "Adam's effective step grows with B: mean |Δθ|/η at the largest B above "
          "the smallest", NOTES,
          quote="larger batch sizes increase the effective learning rate (batch empirical FIM "
                "inversely proportional batch size)", item="E13", threshold=0.0,
          side="greater", unit="|Δθ|/η"),
    Claim("E13-psi", "ψ rises with B beyond the random walk's rise from fewer steps: ψ√t at "
          "the target (fastest lr; ψ in units of a walk's 1/√t) larger at the largest B than at "
          "the smallest", NOTES, quote="|gradient| noisy | less noisy |", item="E13",
          threshold=0.0, side="greater", unit="log ratio"),
]
CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
