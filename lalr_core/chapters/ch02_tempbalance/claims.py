"""Chapter 02's checks as data: what each tests, in the source's direction, and of which kind.

A *claim test* (``kind="claim"``) states the source's claim and judges it against a control arm
(the baseline's global lr of the same seed; networks at initialisation; a normal distribution
of the alphas), named in its ``null``; its ``replicate`` says what one independent replicate is
(a seed: every run of this chapter is its own pipeline, so paired seeds are independent; the
layers of one run are one replicate, so the alpha claims summarise each seed first); its
synthetic PASS / FAIL / INCONCLUSIVE cases are in ``tests/test_ch02_tempbalance_claims.py``. A
*sanity check* (``kind="sanity"``) holds by construction: an identity of the allocation maps,
eq. 2.22's arithmetic, random-matrix theory at initialisation, or a property (adjacent modules
of a ResNet, conv then its BN, are near copies) that no outcome of the training could break.
`lalr_core.chapters.ch02_tempbalance.findings` computes each check's `Finding` from the runs.

Accuracy differences are in percentage points (``unit="points"``). The source reports an effect
only for T-001-a: squared weighting minus the baseline, ResNet18 at 25 % width on CIFAR-100,
one run each, 70.09 - 69.124 (+0.97 points at lr0 0.15) and 69.842 - 69.57 (+0.27 points at lr0
0.2). Our check needs it at every lr0, so the source's effect for it is the smaller one.
"""

from __future__ import annotations

from lalr_core.core.results.claims import Claim

# ---- what one independent replicate is, and the nulls (``Claim.replicate`` / ``Claim.null``)
#: an accuracy or CKA contrast: the seeds are independent pipelines (each run its own
#: initialisation and data order; no stage is shared between seeds; seed k of two arms pairs)
SEED_PAIR = ("a seed: the compared arms' networks each trained from that seed (own "
             "initialisation and data order, no stage shared between seeds), paired by seed")
BASELINE = "the baseline (one global lr, eq. 2.12) trained from the same seed"
SQUARED = "the squared weighting (eq. 2.16) trained from the same seed"
INIT_OR_NORMAL = ("the same runs at initialisation (epoch 0 of each seed: the shape must "
                  "emerge with training) and a normal distribution of the alphas (skewness 0, "
                  "log-likelihood ratio 0)")
SHALLOW_DELTAS = ("the shallower model's Deltas (the scheme minus the baseline of the same "
                  "seed) on the same seed index")
#: fig 2.6 / T-001-c: one fig 2.6 run (eq. 2.13, dist_* settings) per seed and model
DIST_SEED = ("a seed: one eq. 2.13 run of the model from its own seed, its layers' alphas "
             "summarised into one statistic per seed (the layers of one run are not "
             "independent)")

Q13 = ("Log-log ESD plot showing a favorable linear decay (left), corresponding to heavy-tailed "
       "behaviors in the original ESD vs. one with more randomness (right), resembling a "
       "Gaussian distribution closer to correlation ESDs at initialization.")
Q21 = ("On ResNet34, test time improvements (blue) are more prominent (especially at initial "
       "learning rate of 0.2) while suffering minimal training accuracy loss compared to "
       "ResNet18, especially at 25%-width.")
Q22 = ("The baseline plot shows high similarities between adjacent layers throughout the model "
       "while more differences arise between the shallower and deeper layers with the learning "
       "rate allocations.")
Q23 = ("In our experiments, the square root or logarithmic functions improve test time "
       "performance on most models.")
Q24 = ("we want variations among layerwise learning rates while keeping the majority of them as "
       "far from 0 as possible")
Q_NEG = ("Similar to the softmax assignment above, because the negative powers of two approach "
         "zero very quickly as n grows, many parameter groups are not updated. This results in "
         "worse model performance during test time and the model not training to convergence, "
         "with 65-70% train accuracies.")
Q_SOFTMAX = (r"Similar to increasing the power on $\alpha_{i,j}$'s, softmax does not work as most "
             "learning rates are assigned values of 0, as e^x approaches positive infinity "
             "quickly as x grows.")
Q26 = ("By observing the evolution of the density of layerwise α_i 's through epochs on ResNet18 "
       "and ResNet34 models, we see that the density roughly resembles an exponential (or "
       "power-law) distribution")
Q_RANGE = ("In most cases, we do not observe α converge to the optimal range of [2,6] after 200 "
           "epochs of training")
Q_POW = ("With squared average and larger initial learning rates {0.15, 0.2}, the smallest ResNet "
         "model (ResNet18, 25%-width) outperforms baseline during test time (70.09 vs. 69.124 "
         "and 69.842 vs. 69.57, respectively), but trained to less saturation. Results worsen "
         "with cubed average, exhibiting lower test accuracies and more unsaturated train "
         "accuracies.")
Q_SMP1 = ("As the test accuracy increases we see a decrease in train accuracy, suggesting the role "
          "of regularization with the sampling, whose effects weaken as the network grows "
          "deeper.")
Q_SMP2 = ("This is revealed through lower test accuracy and higher train accuracy on deeper "
          "residual networks (ResNet101, ResNet152) than on shallower ones (ResNet18, ResNet34).")

#: the source's T-001-a numbers (test accuracy %, one run each): lr0 -> (alpha^2, baseline)
SOURCE_POWERS = {0.15: (70.09, 69.124), 0.2: (69.842, 69.57)}
#: alpha^2 - baseline at lr0 0.2 (the smaller of the two differences), points
SQUARED_GAIN = 0.27

PTS = "points"


def _claim(id, item, text, quote="", **kw) -> Claim:
    return Claim(id, text, where=item, quote=quote, item=item, **kw)


_C = [
    # ---- fig 1.3
    _claim("fig1.3-alpha", "fig1.3", "alpha(trained) < alpha(init) under the median and the KS "
           "x_min rule (mean over trained seeds minus mean over networks at initialisation)", Q13,
           threshold=0.0, side="less", unit="alpha",
           replicate="a seed: the MLP trained from its own seed (the hidden 128x128 matrix)",
           null="the same MLP at initialisation over esd_init_seeds seeds of their own (no "
                "training), Welch t interval; one trained seed: its prediction interval"),
    _claim("fig1.3-lambda-max", "fig1.3", "lambda_max grows >= 1.5x with training", Q13,
           kind="sanity"),
    _claim("fig1.3-mp", "fig1.3", "the initial ESD lies inside the Marchenko-Pastur support "
           "(>= 95 % of eigenvalues, 5 % slack)", Q13, kind="sanity"),
    # ---- fig 2.1
    _claim("fig2.1-deep-gain", "fig2.1", "at the largest lr0, Delta test of the deeper ResNet > 0 "
           "(mean over widths)", Q21, threshold=0.0, side="greater", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE + " (the deeper model, every width)"),
    _claim("fig2.1-deep-vs-shallow", "fig2.1", "at the largest lr0, Delta test(deeper) > Delta "
           "test(shallower) and Delta train(deeper) > Delta train(shallower) (means over widths)",
           Q21, threshold=0.0, side="greater", unit=PTS,
           replicate=SEED_PAIR, null=SHALLOW_DELTAS),
    _claim("fig2.1-smallest-width", "fig2.1", "the deeper ResNet gains test accuracy at the "
           "smallest width, and most there", Q21, threshold=0.0, side="greater", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE + "; 'most there': the deeper model's Delta "
           "test at the other widths, same seed"),
    # ---- fig 2.2
    _claim("fig2.2-adjacent", "fig2.2", "baseline: mean CKA of adjacent modules > 0.8", Q22,
           kind="sanity", threshold=0.8, side="greater", unit="CKA"),
    _claim("fig2.2-first-last", "fig2.2", "first-third vs last-third CKA is lower with the alpha "
           "allocation than the baseline", Q22, threshold=0.0, side="less", unit="CKA",
           replicate=SEED_PAIR, null="the baseline's first-vs-last-third CKA, same seed and "
           "test images (one seed: random test batches of it, 1 replicate)"),
    # ---- fig 2.3
    _claim("fig2.3-spread", "fig2.3", "spread ordering std(identity) > std(sqrt) > std(cbrt) on "
           "both models", Q23, kind="sanity"),
    _claim("fig2.3-mean", "fig2.3", "every map keeps the mean lr equal to lr_t "
           "(|mean - 1| < 1e-9)", Q23, kind="sanity"),
    _claim("fig2.3-alpha", "fig2.3", "every fitted alpha > 1 (log2 map defined)", Q23,
           kind="sanity"),
    _claim("fig2.3-sqrt", "fig2.3", "sqrt improves test accuracy over the baseline (ours: one "
           "model; the source: most models)", Q23, threshold=0.0, side="greater", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE),
    _claim("fig2.3-log2", "fig2.3", "log2 improves test accuracy over the baseline (ours: one "
           "model; the source: most models)", Q23, threshold=0.0, side="greater", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE),
    # ---- fig 2.4
    _claim("fig2.4-ratio", "fig2.4", "max/min lr ratio equals (alpha_max/alpha_min)^p for every "
           "power/root", Q24, kind="sanity"),
    _claim("fig2.4-std", "fig2.4", "std(cbrt) < std(sqrt) < std(identity) < std(alpha^2) < "
           "std(alpha^3)", Q24, kind="sanity"),
    # ---- fig 2.5 and T-001-b
    _claim("fig2.5-negpow2-19", "fig2.5", "NegPow2, n = 19: 12 groups < 0.1 lr_t, 9 < 0.01 lr_t, "
           "largest n (1/2 + 2^-n) = 9.5 lr_t (exact)", Q_NEG, kind="sanity"),
    _claim("fig2.5-closed-form", "fig2.5", "NegPow2 on our alphas: #groups >= c lr_t = min(n, "
           "floor(log2(n/c))) for c in 0.01, 0.1, 0.5, 1", Q_NEG, kind="sanity"),
    _claim("fig2.5-softmax-share", "fig2.5", "softmax leaves at least as many groups below 0.1 "
           "lr_t as the identity map (both alpha vectors)", Q_SOFTMAX, kind="sanity"),
    _claim("T-001-b-train", "T-001-b", "NegPow2's final train accuracy is below the baseline's",
           Q_NEG, threshold=0.0, side="less", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE),
    _claim("T-001-b-test", "T-001-b", "NegPow2's final test accuracy is below the baseline's",
           Q_NEG, threshold=0.0, side="less", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE),
    _claim("fig2.5-softmax-test", "fig2.5", "softmax: worse test accuracy than the baseline "
           "('does not work')", Q_SOFTMAX, threshold=0.0, side="less", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE),
    # ---- fig 2.6 and T-001-c
    _claim("fig2.6-skew", "fig2.6", "the final-epoch alphas are right-skewed and more so than "
           "at initialisation: per-seed skewness > 0 and > its epoch-0 value (paired by seed), "
           "t over seeds, both models", Q26, threshold=0.0, side="greater", unit="skewness",
           replicate=DIST_SEED, null=INIT_OR_NORMAL),
    _claim("fig2.6-loglik", "fig2.6", "an exponential fits the final-epoch alphas better than a "
           "normal and by more than at initialisation: per-seed mean log-likelihood ratio per "
           "layer (Vuong) > 0 and > its epoch-0 value (paired by seed), t over seeds, both "
           "models", Q26, threshold=0.0, side="greater", unit="nats per layer",
           replicate=DIST_SEED, null=INIT_OR_NORMAL),
    _claim("T-001-c", "T-001-c", "at the last epoch most layers are NOT in [2, 6] (share < 0.5), "
           "median rule, both models, in every seed", Q_RANGE, replicate=DIST_SEED,
           null="the same runs at initialisation (epoch 0), reported beside per seed: the "
                "claim is that training does not bring the alphas into [2, 6]; it FAILs where "
                "a seed ends with most layers inside"),
    # ---- T-001-a
    _claim("T-001-a-squared-test", "T-001-a", "squared weighting: higher test accuracy than the "
           "baseline at every lr0", Q_POW, threshold=0.0, side="greater", unit=PTS,
           source_effect=SQUARED_GAIN,
           replicate=SEED_PAIR, null=BASELINE),
    _claim("T-001-a-squared-train", "T-001-a", "squared weighting: lower train accuracy than the "
           "baseline at every lr0 (less saturation)", Q_POW, threshold=0.0, side="less",
           unit=PTS,
           replicate=SEED_PAIR, null=BASELINE),
    _claim("T-001-a-cubed-test", "T-001-a", "cubed weighting: lower test accuracy than squared at "
           "every lr0", Q_POW, threshold=0.0, side="less", unit=PTS,
           replicate=SEED_PAIR, null=SQUARED),
    _claim("T-001-a-cubed-train", "T-001-a", "cubed weighting: lower train accuracy than squared "
           "at every lr0 (more unsaturated)", Q_POW, threshold=0.0, side="less", unit=PTS,
           replicate=SEED_PAIR, null=SQUARED),
    # ---- T-001-d
    _claim("T-001-d-shallow", "T-001-d", "shallower model: Delta test > 0 > Delta train (mean "
           "over the sampling schemes)", Q_SMP1, threshold=0.0, side="greater", unit=PTS,
           replicate=SEED_PAIR, null=BASELINE + " (Delta: mean over the sampling schemes)"),
    _claim("T-001-d-depth", "T-001-d", "the deeper model's effects are smaller: lower Delta test "
           "and higher Delta train than the shallower", Q_SMP2, threshold=0.0, side="greater",
           unit=PTS,
           replicate=SEED_PAIR, null=SHALLOW_DELTAS),
]

CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
