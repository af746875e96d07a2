"""Chapter 06's checks as data: what each tests, in the source's direction, the source's own
sentence and, where the source reports one, its effect in our estimate's unit.

The source is ``[Tuddenham2026]`` ch. 5 and apps. G, I (REFERENCES.md). ``kind="claim"``: the
source's claim judged against a control arm (SGDM, the base optimiser, the model without skips,
the permuted solution) or a null, able to FAIL (``tests/test_ch06_orthogonal_sgdm_claims.py``
builds the data on which it does). ``kind="sanity"``: our own checks of our code, not evidence
for the source. ``findings`` holds the functions that judge them.

Source effects are the source's own differences in the estimate's unit: test-accuracy points
(tables 5.3, 5.4, 5.5, 5.6, 5.1); fig 5.13's "an order of magnitude" is relative to SGDM's
count, so its claims (judged on Orth - 2 x SGDM, in weights) carry none. A claim over several models takes the smallest of the source's per-model effects
(the part that decides "on every model").
"""

from __future__ import annotations

import dataclasses

from lalr_core.core.results.claims import Claim

# The source's sentences, verbatim.
BETTER = ("Orthogonal-SGDM is more efficient and achieves better test accuracy than SGDM for "
          "every model we trained in this experiment.")
FASTER = ("More importantly though, we can see that the model learns much faster at the "
          "beginning of training, as shown by figure 5.3, this means that we do not need as many "
          "epochs to get to a well-performing network.")
SPEED_UP = ("We introduce a diversification bias in the form of orthogonalised gradients and "
            "find a resultant speed-up in learning and sometimes improved performance, see "
            "figure 5.1.")
WITHIN_ONE = ("For instance, we can reproduce the performance given in the original paper [30] "
              "with our setup, and our experiments on resnet-20 are all within one percentage "
              "point or above their non orthogonalised versions and are in the same ballpark as "
              "the state-of-the-art results [149].")
EPOCHS = ("We can see that, across most pairings of accuracy checkpoints and optimiser that the "
          "orthogonal version reaches the said accuracy in less epochs, the major exception to "
          "this being Adam in the late stages of training, where Adam reaches 90% accuracy after "
          "101 epochs whilst Orthogonal-Adam reaches 90% accuracy after 105.")
ROBUST = ("From table 5.4 we see that, in general, the orthogonalised versions of SGDM and Adam "
          "outperform their original counterparts and that they survive a wider range of "
          "hyper-parameter values.")
IMAGENET = ("While these results are some distance from the capabilities of the model they still "
            "demonstrate a significant speed-up and improvement from using Orthogonal-SGDM, "
            "especially at the start of learning, comparable to the CIFAR-10 results; and "
            "further reinforces how a dearth of hyper-parameter tuning impedes performance.")
BARLOW = ("Comparing our own runs, we establish that self-orthogonalising the gradients before "
          "the LARS algorithm does speed up learning as shown in figure 5.8, in agreement with "
          "previous experiments.")
VAE = ("The orthogonalised optimiser achieves a lower reconstruction error earlier in training "
       "and maintains a consistent edge over standard Adam throughout most of the trajectory.")
CO_LEARN = ("Indeed, when we contrast with Orthogonal-SGDM, we see that the components' "
            "parameters are less similar than they were with SGDM and do not include the initial "
            "spike.")
REVERSED = ("However, when the learning rate is lower, $\\eta = 0.01$, the roles are reversed "
            "figure 5.11.")
DIVERSE = ("We look at the statistics of the absolute cosine of all distinct pairs of different "
           "latent features, [...] and see that the representations have smaller cosines, *i.e.* "
           "they are more diverse, when using Orthogonal-SGDM versus SGDM — figure 5.12.")
DECLINE = ("In addition, Orthogonal-SGDM shows a decline in cosine similarity throughout "
           "training while SGDM does not; this is likely due to Orthogonal-SGDM having a higher "
           "regularisation effect and indicates that more information is being passed to the "
           "next layer as the network is trained.")
NORM = ("N-SGDM improves over SGDM, and CN-SGDM might improve over N-SGDM except for the "
        "oft-case where it diverges. Finally, Orthogonal-SGDM obtains the best solutions while "
        "remaining stable on all the models.")
TDP = ("Comparing the amount of TDP produced by SGDM versus Orthogonal-SGDM — figures 5.13a and "
       "5.13b respectively — shows that Orthogonal-SGDM ends with around an order of magnitude "
       "more TDP.")
CONV_ONLY = ("As noted above, section 5.5.5, the extra wall time is dominated by the largest "
             "parameter, this is often the final dense layer; table 5.6 shows that, for CIFAR-10, "
             "only orthogonalising the convolutional layers does not reduce performance.")
SMALL_BATCH = ("Orthogonal-SGDM does not perform as well as SGDM when the mini-batch size is "
               "minuscule, figure 5.14, due to the increased levels of noise in the gradients "
               "which is compounded during SVD.")
OVERTAKE = ("Orthogonal-SGDM starts to outperform SGDM with a mini-batch size of 32 on a "
            "ResNet-20 for CIFAR-10.")
PHI = ("Again, we see the peak of the distribution of ϕ_t is negative while the peak of "
       "$\\phi_t(\\pi)$ is at zero.")
SKIPS = ("With added skip connections, figure I.2, the distributional shifts of $\\phi_t(\\pi)$ "
         "have been removed, indicating that $\\phi_t(\\pi)$ is closer to a random variable.")
SVD_COST = ("Even so the overhead is small, training a ResNet-20 as in section 5.4.1 takes 790.3 "
            "seconds with 96.4 of them taken up by the SVD calculation — an increase of 12.2% "
            "over normal SGDM.")

# §5.5.5's timing, as the source states it (seconds; its "increase", percent).
SVD_RUN_S, SVD_S, SVD_STATED_INCREASE_PCT = 790.3, 96.4, 12.2


def svd_increase_pct(run_s: float = SVD_RUN_S, svd_s: float = SVD_S) -> float:
    """The run-time increase the SVD's seconds make over the run without them, percent
    (the source's 12.2 % is ``svd_s / run_s``, the SVD's *share*)."""
    return 100 * svd_s / (run_s - svd_s)


_PTS = {"unit": "points"}
_C = [
    # §5.4.1.1: the untuned suite (table 5.3 and the learning curves of the same runs)
    Claim("table5.3", "Orth-SGDM's test accuracy is above SGDM's on every model",
          "§5.4.1.1, table 5.3", quote=BETTER, threshold=0.0, side="greater",
          source_effect=3.07, **_PTS),   # smallest of the source's ten gains (BasicCNN)
    Claim("fig5.1", "Orth-SGDM's validation accuracy after epoch 1 is above SGDM's (the "
          "speed-up)", "fig 5.1", quote=SPEED_UP, threshold=0.0, side="greater", **_PTS),
    Claim("fig5.3-reach", "Orth-SGDM reaches the validation-accuracy mark (setting f53_mark) in "
          "fewer epochs than SGDM, every model", "fig 5.3", quote=FASTER, item="fig5.3", threshold=0.0,
          side="greater", unit="epochs"),
    Claim("fig5.3-epoch1", "Orth-SGDM's validation accuracy after epoch 1 is above SGDM's, "
          "every model", "fig 5.3", quote=FASTER, item="fig5.3", threshold=0.0,
          side="greater", **_PTS),
    Claim("fig5.3-final", "Orth-SGDM's final validation accuracy is above SGDM's, every model",
          "fig 5.3, table 5.3", quote=BETTER, item="fig5.3", threshold=0.0, side="greater",
          source_effect=3.07, **_PTS),   # table 5.3's smallest test-accuracy gain
    Claim("fig5.4", "Orth-SGDM's validation loss after epoch 1 is below SGDM's, every model",
          "fig 5.4", quote=FASTER, threshold=0.0, side="less", unit="nats"),
    Claim("fig5.5", "Orth-SGDM's train accuracy over epoch 1 is above SGDM's, every model",
          "fig 5.5", quote=FASTER, threshold=0.0, side="greater", **_PTS),
    Claim("fig5.6", "Orth-SGDM's train loss over epoch 1 is below SGDM's, every model",
          "fig 5.6", quote=FASTER, threshold=0.0, side="less", unit="nats"),
    Claim("figG.1A", "all models: Orth-SGDM's validation accuracy after epoch 1 is above SGDM's",
          "app. G, fig G.1", quote=FASTER, threshold=0.0, side="greater", **_PTS),
    Claim("figG.1B", "all models: Orth-SGDM's validation loss after epoch 1 is below SGDM's",
          "app. G, fig G.1", quote=FASTER, threshold=0.0, side="less", unit="nats"),
    # Ours: the approximation's accuracy cost (the source uses the exact SVD only).
    Claim("ns_vs_svd", "(ours, not the source's) Newton-Schulz Orth-SGDM's test accuracy is "
          "within 1 point of SVD Orth-SGDM's, every model", "§5.5.5", quote=SVD_COST,
          kind="sanity", threshold=1.0, side="within", **_PTS),
    # Tables 5.1, 5.2: tuned optimisers on ResNet-20.
    Claim("table5.1", "every orthogonal variant's test accuracy is within one point of its "
          "base's or above", "§5.4.1, table 5.1", quote=WITHIN_ONE, threshold=-1.0,
          side="greater", source_effect=-1.00, **_PTS),   # Adam-clip: 90.73 - 91.73
    Claim("table5.2", "across most pairings of validation-accuracy mark and optimiser, the "
          "orthogonal variant reaches the mark in fewer epochs than its base", "table 5.2",
          quote=EPOCHS),   # a count over pairings, judged against half of them
    # Table 5.4: the lr x momentum grid.
    Claim("table5.4-cells", "the orthogonal optimiser's test accuracy is above the original's "
          "in most grid cells", "table 5.4", quote=ROBUST, item="table5.4"),
    Claim("table5.4-range", "the test-accuracy range across the grid is narrower with "
          "orthogonalisation, for SGDM and Adam", "table 5.4", quote=ROBUST, item="table5.4",
          threshold=0.0, side="greater", source_effect=18.86, **_PTS),  # SGDM 62.99 - 44.13
    # Figs 5.7-5.9: ImageNet (or its analogue), Barlow Twins, the P-VAE.
    Claim("fig5.7", "Orth-SGDM's validation accuracy is above SGDM's at most evaluation points",
          "fig 5.7", quote=IMAGENET),
    Claim("fig5.8", "Orth-LARS's Barlow Twins loss is below LARS's over the first steps "
          "(setting bt_window)", "fig 5.8", quote=BARLOW, threshold=0.0, side="less", unit="loss"),
    Claim("fig5.9", "Orth-Adam's held-out MSE is below Adam's at most checkpoints", "fig 5.9",
          quote=VAE),
    # Figs 5.10, 5.11: filter similarity at lr 1 and 0.01 (SGDM - Orth median |cos|).
    *[Claim(f"fig5.10{p}", f"at lr = 1, SGDM's filter |cos| is above Orth-SGDM's (panel {p})",
            "fig 5.10", quote=CO_LEARN, threshold=0.0, side="greater", unit="|cos|")
      for p in "AB"],
    *[Claim(f"fig5.11{p}", f"at lr = 0.01 the roles are reversed: Orth-SGDM's filter |cos| is "
            f"above SGDM's (panel {p})", "fig 5.11", quote=REVERSED, threshold=0.0,
            side="less", unit="|cos|") for p in "AB"],
    # Fig 5.12: representation similarity E[R_l].
    Claim("fig5.12-layers", "Orth-SGDM's E[R_l] is below SGDM's on every layer", "fig 5.12",
          quote=DIVERSE, item="fig5.12", threshold=0.0, side="less", unit="|cos|"),
    Claim("fig5.12-orth-declines", "Orth-SGDM's E[R_l] declines over training", "fig 5.12",
          quote=DECLINE, item="fig5.12", threshold=0.0, side="less",
          unit="|cos| per 100 batches"),
    Claim("fig5.12-sgdm-flat", "SGDM's E[R_l] does not decline over training (its slope is "
          "above 0)", "fig 5.12", quote=DECLINE, item="fig5.12", threshold=0.0,
          side="greater", unit="|cos| per 100 batches"),
    Claim("fig5.12-contrast", "Orth-SGDM's E[R_l] declines faster than SGDM's (paired slope "
          "difference below 0)", "fig 5.12", quote=DECLINE, item="fig5.12", threshold=0.0,
          side="less", unit="|cos| per 100 batches"),
    # Table 5.5: normalisation alone.
    Claim("table5.5-n", "N-SGDM's test accuracy is above SGDM's on every model", "table 5.5",
          quote=NORM, item="table5.5", threshold=0.0, side="greater", source_effect=0.04,
          **_PTS),   # BasicCNN 73.72 - 73.68
    Claim("table5.5-orth", "Orth-SGDM's test accuracy is above SGDM's, N-SGDM's and CN-SGDM's "
          "on every model", "table 5.5", quote=NORM, item="table5.5", threshold=0.0,
          side="greater", source_effect=2.22, **_PTS),   # BasicCNN Orth - CN: 76.75 - 74.53
    Claim("table5.5-cn", "where CN-SGDM trains, its test accuracy is above N-SGDM's, every "
          "model", "table 5.5", quote=NORM, item="table5.5", threshold=0.0, side="greater",
          source_effect=0.81, **_PTS),   # BasicCNN 74.53 - 73.72 (ResNet-44: 0.84)
    # Fig 5.13: temporarily disabled parameters, the final counts of Orth-SGDM and SGDM.
    # Judged on Orth - 2 x SGDM of the final counts (weights of the layer), one value per seed:
    # "at least 2x" without a ratio, so a count of 0 on one side needs no cap (the log2 ratio,
    # capped at +-10 there, gave quick's [-10, -10]: Orth's exact zeros were 0 in every seed).
    # The source's "about 10x" is relative to SGDM's count, so it has no value in this unit.
    Claim("fig5.13A", "Orth-SGDM ends with at least 2x SGDM's count of exactly-zero gradients "
          "(the thesis's TDP): Orth - 2 x SGDM > 0", "fig 5.13", quote=TDP, threshold=0.0,
          side="greater", unit="weights"),
    Claim("fig5.13B", "Orth-SGDM ends with at least 2x SGDM's count of |g| <= 1e-4 (the "
          "source's code): Orth - 2 x SGDM > 0", "fig 5.13", quote=TDP, threshold=0.0,
          side="greater", unit="weights"),
    # Table 5.6: conv layers only.
    Claim("table5.6-conv", "conv-only Orth-SGDM's test accuracy is not below all-layer "
          "Orth-SGDM's (within one point or above), every model", "table 5.6",
          quote=CONV_ONLY, item="table5.6", threshold=-1.0, side="greater", source_effect=0.13,
          **_PTS),   # BasicCNN 76.80 - 76.67
    Claim("table5.6-vs-sgdm", "both orthogonal variants' test accuracy is above SGDM's on every "
          "model", "table 5.6", quote=CONV_ONLY, item="table5.6", threshold=0.0,
          side="greater", source_effect=3.07, **_PTS),   # BasicCNN all-layer 76.67 - 73.60
    # Fig 5.14: mini-batch size.
    Claim("fig5.14-small", "at the smallest mini-batch, Orth-SGDM's validation accuracy is "
          "below SGDM's", "fig 5.14", quote=SMALL_BATCH, item="fig5.14", threshold=0.0,
          side="less", **_PTS),
    Claim("fig5.14-large", "from mini-batch 32 up, Orth-SGDM's validation accuracy is above "
          "SGDM's", "fig 5.14", quote=OVERTAKE, item="fig5.14", threshold=0.0, side="greater",
          **_PTS),
    # App. I: the symmetry probe (parts of mixed sides: judged part by part).
    *[Claim(f"{item}-phi", "gradients point towards the solution beyond their own update "
            "(median phi from theta_{t+k} < 0) while the permuted probe's centre is nearer 0",
            f"app. I, fig {item[3:]}", quote=PHI, item=item) for item in ("figI.1", "figI.2")],
    Claim("figI.2-skip", "skip connections reduce the distribution shifts of phi(pi)",
          "app. I, fig I.2", quote=SKIPS, item="figI.2", threshold=0.0, side="less",
          unit="noise units"),
]

# What one independent replicate of each claim is, and what it is judged against where the
# effect is absent (`Claim.replicate`, `Claim.null`). Runs of one seed share the
# initialisation and data order across the compared arms, so a replicate is the seed's pair.
_PAIR = ("a seed: the compared arms (SGDM and Orth-SGDM, or the named variants) trained from "
         "their own initialisation and data order, shared within the seed")
_CONTROL = ("the control arm: SGDM's runs of the same model and seed (difference 0; "
            "paired t over seeds, every model must pass)")
_REPLICATES = {
    **{cid: (_PAIR, _CONTROL) for cid in (
        "table5.3", "fig5.1", "fig5.3-epoch1", "fig5.3-final", "fig5.4", "fig5.5", "fig5.6",
        "figG.1A", "figG.1B")},
    "fig5.3-reach": (_PAIR, "the control arm: SGDM's epochs to the same mark, same model and "
                     "seed (difference 0 epochs)"),
    "table5.1": (_PAIR.replace("SGDM and Orth-SGDM", "each base optimiser and its orthogonal "
                               "version"),
                 "the base optimiser's runs of the same seed, with the source's one-point "
                 "non-inferiority margin"),
    "table5.2": (_PAIR.replace("SGDM and Orth-SGDM", "each base optimiser and its orthogonal "
                               "version"),
                 "the base optimiser's epochs to the same mark, same seed (difference 0); the "
                 "count of pairings judged against half of them"),
    "table5.4-cells": ("a seed of the whole grid: every cell's original and orthogonal "
                       "optimiser from that seed (the cells of one seed are not replicates; "
                       "quick: t54_seeds = 1, one replicate)",
                       "the original optimiser in the same cell and seed (difference 0); the "
                       "count of cells judged against half of them"),
    "table5.4-range": ("a seed of the whole grid, original and orthogonal (quick: t54_seeds = "
                       "1, one replicate: the bootstrap over test examples is not one)",
                       "equal ranges (difference 0) of the original and orthogonal grids"),
    "fig5.7": ("a seed: SGDM and Orth-SGDM trained from their own seed (every profile runs "
               "one, so the verdict is left to the replicate rule)",
               "SGDM's validation accuracy at the same evaluation point (difference 0); the "
               "count of points judged against half of them"),
    "fig5.8": (_PAIR.replace("SGDM and Orth-SGDM", "LARS and Orth-LARS"),
               "LARS's mean Barlow Twins loss over the same first steps, same seed"),
    "fig5.9": (_PAIR.replace("SGDM and Orth-SGDM", "Adam and Orth-Adam"),
               "Adam's held-out MSE at the same checkpoint, same seed; the count of checkpoints "
               "judged against half of them"),
    **{f"fig5.1{k}{p}": (_PAIR + " (at this lr)", "SGDM's median filter |cos| in the same "
                         "layer, lr and seed (difference 0)") for k in "01" for p in "AB"},
    "fig5.12-layers": (_PAIR, "SGDM's E[R_l] on the same layer and seed (difference 0)"),
    "fig5.12-orth-declines": ("a seed: an Orth-SGDM run from its own initialisation",
                              "no trend: a fitted slope of 0 per 100 batches (no untrained or "
                              "noise-driven baseline trend is measured)"),
    "fig5.12-sgdm-flat": ("a seed: an SGDM run from its own initialisation",
                          "a declining trend: a fitted slope of 0 or below"),
    "fig5.12-contrast": (_PAIR, "equal slopes of Orth-SGDM and SGDM, paired by seed"),
    **{cid: (_PAIR.replace("SGDM and Orth-SGDM", "SGDM, N-SGDM, CN-SGDM and Orth-SGDM"),
             "the compared variant's runs of the same model and seed (difference 0)")
       for cid in ("table5.5-n", "table5.5-orth", "table5.5-cn")},
    **{cid: (_PAIR, "SGDM's final count on the same layer and seed, doubled (our 2x "
             "criterion): Orth - 2 x SGDM = 0 weights, t over seeds; both counts 0 in every "
             "seed is a zero-width interval, refused (no disabled weights to compare)")
       for cid in ("fig5.13A", "fig5.13B")},
    **{cid: (_PAIR.replace("SGDM and Orth-SGDM", "SGDM, all-layer and conv-only Orth-SGDM"),
             "the compared variant's runs of the same model and seed (difference 0; conv-only "
             "with a one-point margin)") for cid in ("table5.6-conv", "table5.6-vs-sgdm")},
    **{cid: (_PAIR + " at this mini-batch size", "SGDM's validation accuracy at the same "
             "mini-batch size and seed (difference 0)")
       for cid in ("fig5.14-small", "fig5.14-large")},
    **{f"{item}-phi": ("a seed: an SGDM run of the model from its own initialisation, "
                       "probed during training",
                       "the permuted-solution probe phi(pi) of the same run (a random-pair "
                       "null: filters matched to a permuted solution), and phi = 0")
       for item in ("figI.1", "figI.2")},
    "figI.2-skip": ("a seed: the plain and the skip model trained from their own seed, paired",
                    "equal centre shifts of phi(pi) with and without skips; zero-mean noise "
                    "gives a shift of about 1 noise unit"),
}
_C = [dataclasses.replace(c, replicate=_REPLICATES[c.id][0], null=_REPLICATES[c.id][1])
      if c.kind == "claim" else c for c in _C]
CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
assert not set(_REPLICATES) - set(CLAIMS), "replicate units for unknown claims"
assert len(CLAIMS) == len(_C), "claim ids must be unique"
