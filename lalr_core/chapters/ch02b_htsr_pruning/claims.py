"""Chapter 02b's checks as data: what each tests, in the source's direction, and of which kind.

A *claim test* (``kind="claim"``) states the source's claim and judges it against a control arm
(uniform pruning at the same size, the global lr, traditional augmentation, the other layers of
the network); its synthetic PASS / FAIL (/ INCONCLUSIVE) cases are in
``tests/test_ch02b_htsr_pruning_claims.py``. A *sanity check* (``kind="sanity"``) holds by
construction: table 3.1 as the code reads it, the ERK / LAMP / uniform baselines of fig 3.1 (the
source makes no claim on them), the budgets' mirror symmetry and their fill rule, which never
over-prunes. `lalr_core.chapters.ch02b_htsr_pruning.findings` computes each check's `Finding`.

The source reports no effect size for these items (its figures have no stated numbers), so no
claim carries ``source_effect``; accuracy differences are in percentage points.

Replicates (``Claim.replicate``). The chapter pretrains each (model, augmentation) once, from
the profile's seed, so every claim about the pipeline (fig 3.2's curves, the layers' metrics of
figs 3.6-3.21, the metric budgets of fig 3.3 and T-001-e) rests on 1 independent replicate at
every profile and is recorded INCONCLUSIVE: the record says so. Finetuning seeds of one
pretraining (fig 3.25's) are replicates only of a claim about the finetuning step given the
pretraining (TempBalance vs the global lr, same masks: figs 3.22-3.26), and the layers or
model sizes of one run are never replicates.
"""

from __future__ import annotations

from lalr_core.chapters.ch02b_htsr_pruning.quotes import QUOTES
from lalr_core.chapters.ch02b_htsr_pruning.settings import AUGS, GRID_FIGS, ROLES, SETTINGS
from lalr_core.core.results.claims import Claim

PTS = "points"
FAMILIES = ("shape", "scale")
TRANSITION_METRICS = ("entropy", "norm", "spectral_norm")


# What one independent replicate of each kind of claim is (Claim.replicate) ...
PRETRAINED_DNM = ("a DNm pretrained from its own seed (traditional and AugMix of one seed: "
                  "one pair of curves)")
PRETRAINED = "a network pretrained from its own seed (its conv metrics after pretraining)"
PIPELINE = ("a pipeline from its own seed: pretraining, metric budgets, pruning and "
            "finetuning (finetuning seeds of one pretraining count once)")
FINETUNING = ("a finetuning pair (TempBalance and the global lr, same masks) from its own "
              "finetuning seed, of the one pretrained, pruned network: a claim about the "
              "finetuning lr given the pretraining (its layers or sizes are one replicate)")
# ... and what it is judged against where the effect is absent (Claim.null)
NULL_AUG = ("traditional augmentation's curve of the same seed (the control arm); with no "
            "effect of AugMix one pair of curves passes by chance, so the bool decides only "
            "in every one of >= 3 seeds")
NULL_INIT = ("the same architecture at initialisation (Settings.init_seeds seeds, no "
             "training): the trained share with the ranks must exceed the init networks' "
             "(Newcombe interval), so a rank the init networks hold too (the transition convs' "
             "output width gives them the highest norm at init) never PASSes")
NULL_OUTLIER = ("our fixed cut max |z| < 2.5 (E-3.10), no control arm: an absence claim that "
                "the same architecture at initialisation mostly satisfies too (its max |z| is "
                "reported beside), so a PASS says only that training made no layer stand out")
NULL_UNIFORM = ("uniform pruning of the same pretrained network at the same measured size "
                "(the control arm), on the same test examples")
NULL_LR = "the global-lr finetuning of the same masks and seed (the control arm)"


def _claim(id, item, text, quote="", **kw) -> Claim:
    return Claim(id, text, where=item, quote=quote, item=item, **kw)


def _fig31() -> list[Claim]:
    q = QUOTES["fig3.1"]
    out = []
    for role in ROLES:
        out += [
            _claim(f"fig3.1-erk/{role}", "fig3.1", f"ERK pruned fraction increases with layer "
                   f"size, Spearman rho > 0.8 ({role})", q, kind="sanity"),
            _claim(f"fig3.1-uniform/{role}", "fig3.1", f"uniform flat at the global sparsity "
                   f"({role})", q, kind="sanity"),
            _claim(f"fig3.1-lamp/{role}", "fig3.1", f"LAMP non-uniform and prunes the first/last "
                   f"conv less than uniform ({role})", q, kind="sanity")]
    return out


def _grids() -> list[Claim]:
    out = []
    for (role, aug), (_, _, fig) in GRID_FIGS.items():
        out += [
            _claim(f"{fig}-uniform-flat", fig, f"uniform row flat: every layer at P ({role}, "
                   f"{aug})", QUOTES["uniform row"], kind="sanity"),
            _claim(f"{fig}-anti-correlated", fig, f"direct and inverse ratio profiles "
                   f"anti-correlated for every metric and P ({role}, {aug})",
                   QUOTES["table3.1"], kind="sanity"),
            _claim(f"{fig}-under-target", fig, f"no budget exceeds its global parameter target "
                   f"({role}, {aug})", QUOTES["under-prune"], kind="sanity")]
        if role == "densenet":
            s_dir, s_inv = SETTINGS[aug]["direct"], SETTINGS[aug]["inverse"]
            out.append(_claim(f"{fig}-transition-entropy", fig, f"DNm transition convs have the "
                              f"2 lowest entropies, so Setting {s_dir} prunes them least and "
                              f"Setting {s_inv} most ({aug}), more often than at "
                              "initialisation", QUOTES["transition"], replicate=PRETRAINED,
                              null=NULL_INIT))
            out += [_claim(f"{fig}-transition-{m}", fig, f"DNm transition convs have the 2 "
                           f"highest {m} values ({aug}), more often than at initialisation",
                           QUOTES["transition"], replicate=PRETRAINED, null=NULL_INIT)
                    for m in TRANSITION_METRICS[1:]]
        else:
            out.append(_claim(f"{fig}-no-outlier", fig, f"no outlier layer: max |z| of entropy "
                              f"across layers < 2.5 ({role}, {aug})",
                              QUOTES["no differentiation"], replicate=PRETRAINED,
                              null=NULL_OUTLIER))
    return out


_C = [
    _claim("table3.1", "table3.1", "the 2x2 settings table equals {Traditional: {direct: 1, "
           "inverse: 2}, AugMix: {direct: 3, inverse: 4}}", QUOTES["table3.1"], kind="sanity"),
    *_fig31(),
    # ---- fig 3.2 (bools on the curves, holding in every pretraining seed)
    _claim("fig3.2-entropy-higher", "fig3.2", "DNm: mean matrix entropy with AugMix > "
           "traditional at >= 80 % of epochs", QUOTES["fig3.2 entropy"],
           replicate=PRETRAINED_DNM, null=NULL_AUG),
    _claim("fig3.2-entropy-rebound", "fig3.2", "DNm: AugMix's entropy rebound is smaller than "
           "traditional augmentation's (rise after the minimum)", QUOTES["fig3.2 entropy"],
           replicate=PRETRAINED_DNM, null=NULL_AUG),
    _claim("fig3.2-alpha-rebound", "fig3.2", "DNm: AugMix's alpha rebound is smaller than "
           "traditional augmentation's (rise after the minimum)", QUOTES["fig3.2 alpha"],
           replicate=PRETRAINED_DNM, null=NULL_AUG),
    *_grids(),
    # ---- fig 3.3
    _claim("fig3.3-over-prune", "fig3.3", "every run reaches its parameter target or "
           "under-prunes (never over-prunes)", QUOTES["under-prune"], kind="sanity"),
    *[_claim(f"fig3.3-{aug}-{family}", "fig3.3", f"Setting {SETTINGS[aug]['direct']} ({aug}): "
             f"the {family} metrics' direct budgets beat uniform pruning at the same size, at "
             "the sparsest target",
             QUOTES["fig3.3" if aug == "augmix" else "fig3.3 traditional"], threshold=0.0,
             side="greater", unit=PTS, replicate=PIPELINE, null=NULL_UNIFORM)
      for aug in AUGS for family in FAMILIES],
    _claim("fig3.3-augmix-vs-traditional", "fig3.3", "the shape and scale metrics' direct "
           "budgets gain more over uniform (same size) with AugMix (Setting 3) than with "
           "traditional augmentation (Setting 1)", QUOTES["fig3.3 traditional"], threshold=0.0,
           side="greater", unit=PTS, replicate=PIPELINE,
           null="the traditional-augmentation pipeline's gain over its uniform curve (same "
                "size, same seed, same test examples)"),
    # ---- T-001-e
    *[_claim(f"T-001-e-{role}", "T-001-e", f"gap (metric runs - uniform, same size) smaller on "
             f"{role} than on densenet", QUOTES[q], threshold=0.0, side="less", unit=PTS,
             replicate=PIPELINE + ", one per model",
             null="DNm's gain over its uniform curve (same size, same seed, same test "
                  "examples)")
      for role, q in (("mobilenet", "mobilenet"), ("wrn", "no differentiation"))],
    _claim("T-001-e-wrn-uniform", "T-001-e", "WRNm: uniform pruning beats the metric budgets of "
           "every rule (same size)", QUOTES["wrn"], threshold=0.0, side="less", unit=PTS,
           replicate=PIPELINE, null=NULL_UNIFORM),
    # ---- figs 3.22-3.26
    _claim("fig3.22-mean", "fig3.22", "alpha(TB) < alpha(baseline) averaged over the layers and "
           "the finetuning epochs (t interval over finetuning seeds; one seed's layers are one "
           "replicate)", QUOTES["fig3.22 mean"], threshold=0.0, side="less", unit="alpha",
           replicate=FINETUNING, null=NULL_LR),
    _claim("fig3.22-layers", "fig3.22", "each of the 4 largest-lr-shift layers has alpha(TB) < "
           "alpha(baseline) on average over the finetuning epochs, in every finetuning seed",
           QUOTES["fig3.22 layers"], replicate=FINETUNING,
           null=NULL_LR + "; by chance all 4 layers below it with probability 1/16 per seed"),
    *[_claim(item, item, "the lr-increase layers' delta-alpha (TB - baseline) lies below the "
             "lr-decrease layers' at more sizes than chance (share of sizes > 1/2: t interval "
             "over finetuning seeds; one seed: exact binomial over its sizes, one replicate)",
             QUOTES["fig3.23"], threshold=0.5, side="greater", unit="share of sizes",
             replicate=FINETUNING,
             null="chance: the increase and decrease layers' delta-alpha in either order at a "
                  "size with probability 1/2 (share 1/2)")
      for item in ("fig3.23", "fig3.24")],
    _claim("fig3.25-middle", "fig3.25", "TB > baseline (test accuracy) at every size with 10-80 % "
           "of the parameters remaining", QUOTES["fig3.25 middle"], threshold=0.0,
           side="greater", unit=PTS, replicate=FINETUNING, null=NULL_LR),
    _claim("fig3.25-ends", "fig3.25", "TB >= baseline - 0.5 pp (test accuracy) at the sparsest "
           "and at the densest size", QUOTES["fig3.25 ends"], threshold=-0.5, side="greater",
           unit=PTS, replicate=FINETUNING, null=NULL_LR),
    _claim("fig3.26", "fig3.26", "uniform pruning on DNm: TB's gain over the global lr is larger "
           "at 55-65 % remaining than at the other sizes", QUOTES["fig3.26"], threshold=0.0,
           side="greater", unit=PTS, replicate=FINETUNING,
           null="TB's gain over the global lr (same masks, same seed) at the other sizes"),
]

CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
