"""The source's testable claims L-C1 .. L-C30 (our numbering) and the chapter's other claim
tests, as data: what each says, where, which experiment tests it, the source's own sentence
(verbatim), its kind (claim test or sanity check) and, where one interval decides it, the
threshold and side its evidence is judged against (`lalr_core.core.results.claims.Claim`).

The source (seed 000, ``[LALR]`` in REFERENCES.md) has no experiments, figures or tables, so the
chapter's report items are these claims. ``experiments`` name our experiments X-L1 .. X-L17.
`findings` has one function per claim; the notebook records its finding with
``out.record(CLAIMS[id], finding)``.
"""

from __future__ import annotations

import dataclasses

from lalr_core.core.results.claims import DETERMINISTIC, Claim

# What one independent replicate of each claim is (Claim.replicate). Every fine-tuning of the
# text setting starts from ONE cached MLM pretraining (and X-L10's from one deeper one, the
# vision setting's from one BasicCNN): its seeds (head initialisation, data order, the
# perturbation) are replicates of a claim about the fine-tuning step *given that pretrained
# encoder*, never of a claim about pretrained models in general (every verdict here is
# conditional on the one pretraining; the replicate unit says so).
FINETUNE = ("a fine-tuning pair (LALR-REC and the control arm, same head initialisation and "
            "data order) from its own seed, of the one shared pretrained TinyTF: a claim about "
            "fine-tuning given that pretraining")
FINETUNE_RUN = ("an LALR-REC fine-tuning (task x seed) of the one shared pretrained TinyTF, "
                "paired with U's run of the same task and seed")
FINETUNE_VISION = FINETUNE.replace("TinyTF", "BasicCNN (vision setting)")
FINETUNE_NLP = FINETUNE.replace("the one shared pretrained TinyTF", "the hub's pretrained "
                                "encoder")
PROBE_SEED = ("a fine-tuning pair (U and LALR-REC, same seed) of X-L10's one pretrained "
              "4-block TinyTF: the two arms' runs of a seed count once")
TIMING = ("one timing repeat of a configuration on this machine (the metrics and one training "
          "epoch); the table keeps the median of the repeats, so the bool is not declared to "
          "hold in every repeat")
E14_SEED = ("an SGD trajectory of the scale-invariant logistic regression from its own seed "
            "(data, initial direction and batches)")
# ... and what it is judged against where the effect is absent (Claim.null)
VS_U = "U (uniform AdamW at the base lr), same seed: the control arm, paired by seed"
VS_U_UM = (VS_U + "; and U-match (uniform at LALR-REC's mean scale: a lower mean lr without "
           "the layer choice)")

_C = [
    Claim("L-C1", "layers with high raw SVD / CE and low CS get lower lrs, which leaves less "
          "forgetting and less overfitting", "Abstract", ("X-L3", "X-L4", "X-L17"),
          "Controlled undertraining: Selectively reduces learning rates for well-optimized "
          "layers, intentionally risking undertraining to prevent overfitting and maintain "
          "existing knowledge."),
    Claim("L-C2", "same parameter count, and higher target accuracy than uniform fine-tuning",
          "Abstract", ("X-L2",),
          "Capacity optimization: Focuses training on underutilized layers, extracting more "
          "performance from the existing model structure without increasing model size."),
    Claim("L-C3", "less forgetting of the pretraining task than U and than U-match", "Abstract",
          ("X-L3",),
          "Knowledge preservation: Potentially \"undertrains\" well-optimized layers in "
          "pre-trained models, to help preserve valuable pre-trained knowledge while adapting "
          "to new tasks."),
    Claim("L-C4", "recomputing the metrics every epoch (adaptivity) matters", "Abstract, B.4.6",
          ("X-L12", "X-L16"),
          "Adaptive fine-tuning: Dynamically manages undertraining risk by adjusting the "
          "learning rate scaling based on the current state of each layer after each training "
          "epoch."),
    Claim("L-C5", "higher out-of-distribution accuracy than U", "Abstract", ("X-L15",),
          "Exploration-exploitation balance: Encourages exploration of different internal "
          "representations by focusing fine-tuning on less optimized layers, to encourage a "
          "more robust and versatile fine-tuned model."),
    Claim("L-C6", "the metrics need no gradients", "§1", ("X-L1",),
          "Incorporates distinct SVD, CE, and CS metrics to analyze layer contributions "
          "without requiring computationally expensive gradient assessments."),
    Claim("L-C7", "the metric overhead is negligible next to an epoch", "§3, §3.3", ("X-L1",),
          "LALR computes the layer-wise SVD, CE, and CS metrics only once per epoch, making "
          "the additional computation negligible compared to the fine-tuning process itself."),
    Claim("L-C8", "SVD -> CE -> CS is the most effective order of the phases",
          "§3, §3.1(5), B.3.3", ("X-L5",),
          "The analysis of metric interactions and their bounds justifies that enhancing SVD "
          "first, followed by CE, and finally CS for the LALR approach is most effective:"),
    Claim("L-C9", "the sequence's one-epoch gains exceed the isolated ones (B.3.2.4)", "B.3.2.4",
          ("X-L6",), "$ΔJ_{SVD} + ΔJ_{CE(SVD)} + ΔJ_{CS(SVD,CE)} > ΔJ_{SVD} + ΔJ_{CE} + "
          "ΔJ_{CS}$"),
    Claim("L-C10", "SVD phases expand the effective rank of the layers they favour", "§3.1(2)",
          ("X-L7",), "SVD Optimization: Expands the effective rank of weight matrices, creating "
          "capacity for new, task-specific information (Section B.2.2)."),
    Claim("L-C11", "CE phases raise the favoured layers' weight entropy", "§2.2, B.3.2.1",
          ("X-L7",), "An increase in $M_{CE}$ results in higher learning rates for low-entropy "
          "layers, which will increase the model's overall entropy over time."),
    Claim("L-C12", "CS phases lower the mean pairwise cosine similarity", "B.3.2.2-3", ("X-L7",),
          "An increase in $M_{CS}$ results in higher learning rates for layers with high "
          "cosine similarity, which will increase the average angle between weight vectors "
          "over time."),
    Claim("L-C13", "the normalisation is robust to an outlier layer", "§2.4", ("X-L8",),
          "Robustness through reduced sensitivity to outliers"),
    Claim("L-C14", "each layer's lr is the optimiser's lr times its scale, AdamW's state "
          "untouched", "§3.2", ("X-L9",),
          "LALR can also integrate with existing per-batch adaptive learning rate methods, "
          "such as AdamW[13], simply by scaling the learning rate for each layer $l$ at epoch "
          "$e$ by:"),
    Claim("L-C15", "higher validation accuracy than U and than U-match on both tasks", "§3.3",
          ("X-L2",),
          "LALR represents a comprehensive optimization strategy that enhances model "
          "performance and generalization with minimal computational burden, making it a "
          "practical and efficient approach for fine-tuning large language models."),
    Claim("L-C16", "smaller train - validation gap than U and U-match without lower validation "
          "accuracy", "§3.3", ("X-L4",),
          "Overfitting Protection: Promotes learning of generalizable patterns rather than "
          "memorizing training data."),
    Claim("L-C17", "never more than 1 point below U at any epoch", "§3.3", ("X-L2",),
          "Stability Preservation: Maintains baseline performance by scaling down learning "
          "rates for well-optimized layers."),
    Claim("L-C18", "gains on both tasks and out of distribution", "§3.3", ("X-L2", "X-L15"),
          "Adaptive Exploration: Discovers unique features and escapes local optima, improving "
          "generalization across tasks and datasets."),
    Claim("L-C19", "the layer performance gap shrinks faster under LALR", "B.4.3-B.4.4",
          ("X-L10",), "Under LALR optimization, the layer performance gap converges to a "
          "minimal value:"),
    Claim("L-C20", "a shrinking layer gap goes with higher accuracy", "B.4", ("X-L10",),
          "The reduction in layer performance gap leads to an improvement in overall model "
          "performance."),
    Claim("L-C21", "a layer's update size follows its lr scale", "B.4.7(1)", ("X-L11",),
          "Thus, lower-performing layers undergo larger weight updates."),
    Claim("L-C22", "favoured layers' scales fall at the next same-phase epoch (self-correction)",
          "B.4.7(3)", ("X-L12",),
          "As lower-performing layers improve due to larger weight updates, their metric scores "
          "will increase, naturally reducing their learning rates. This creates a "
          "self-correcting mechanism that prevents overcompensation."),
    Claim("L-C23", "early layers' updates are amplified", "B.4.7(5)", ("X-L13",),
          "The larger $η(l_i, t)$ for lower-performing layers counteracts potential gradient "
          "vanishing issues."),
    Claim("L-C24", "less spread of accuracy over perturbed initialisations", "B.4.7(6)",
          ("X-L14",), "This can lead to more consistent performance across different "
          "initialization schemes."),
    Claim("L-C25", "the worst layer's probe accuracy rises more", "B.4.7(2)", ("X-L10",),
          "This can lead to more efficient information flow through the network, as previously "
          "underperforming layers are given the opportunity to adapt more quickly."),
    Claim("L-C26", "larger gains early, especially for SVD", "B.3.2.6.3(6), B.3.3(3)",
          ("X-L6",), "The bounds on interactions suggest that the improvement potential varies "
          "throughout the fine-tuning process, with potentially larger gains early on, "
          "especially for SVD."),
    Claim("L-C27", "more robust to out-of-distribution and perturbed inputs than U",
          "§1, Abstract", ("X-L15",),
          "By mimicking this selective enhancement in artificial neural networks, LALR aims to "
          "achieve efficient and effective fine-tuning, leading to more robust and versatile "
          "adapted models through the following:"),
    Claim("L-C28", "metric improvements go with lower loss", "B.2.3", ("X-L7",),
          "Metric Improvements and $J(θ)$: Improvements in each metric correlate with "
          "reductions in the objective function $J(θ)$ based on the following (Section B.2.3):"),
    Claim("L-C29", "from the pretrained start, one SVD epoch gains more than CE, CE more than CS",
          "§3.1", ("X-L6",), "$\\frac{\\partial J}{\\partial M_{SVD}(i)} > \\frac{\\partial J}"
          "{\\partial M_{CE}(i)} > \\frac{\\partial J}{\\partial M_{CS}(i)}$ initially."),
    Claim("L-C30", "the interaction bounds and the Sperner / supermodularity arguments", "B.3",
          (), "$∂²J/(∂M_i ∂M_j) ≈ K · (1/σ_min) · |ΔM| · cos(θ) · I(L_i; L_j)$"),
]
# The vision and NLP settings (ours) test L-C15 and L-C3 outside the text setting.
_C += [
    Claim("L-C15.vision", "(ours) LALR-REC's validation accuracy above U's and U-match's, "
          "image transfer", "§3.3", ("X-L2",), _C[14].quote),
    Claim("L-C3.vision", "(ours) less forgetting of the pretraining classes than U and "
          "U-match", "Abstract", ("X-L3",), _C[2].quote),
    Claim("L-C15.nlp", "(ours) LALR-REC's validation accuracy above U's and U-match's, a "
          "pretrained encoder on SST-2 and CoLA", "§3.3", ("X-L2",), _C[14].quote),
]
# The chapter's other claim tests, whose inventory items are not of kind "claim" (X-L2's row is
# a "check", E14's an "experiment"): X-L2's baselines and E14 (on [ATDL-notes] sec. 3.5). In
# CLAIMS too; the verdict table of the source's claims (`SOURCE_CLAIMS`) leaves them out.
_X = [
    Claim("X-L2", "(ours) LALR-REC's validation accuracy is above LARS's, LAMB's and "
          "TempBalance's on both tasks", "§1.0", ("X-L2",),
          "While effective for initial training, these methods focus on weight and gradient "
          "magnitudes but are not specifically designed for the fine-tuning phase of "
          "pre-trained models."),
    Claim("E14", "‖w_k‖² of a scale-invariant layer grows like √k under SGD without weight "
          "decay (log-log slope 0.5 ± 0.03, both learning rates; in every SGD seed)",
          "[ATDL-notes] §3.5", (),
          "With homogeneous normalizers such as BN, WN, and LN, there is **implicit learning "
          "rate decay**"),
    Claim("E14-growth", "‖w_k‖⁴ − ‖w_0‖⁴ grows linearly in k (the derivation; log-log slope "
          "of its square root 0.5 ± 0.03, both learning rates; in every SGD seed)",
          "[ATDL-notes] §3.5", (),
          "the norm of the weights $\\|w^{(k)}\\|^2$ increase like $\\sqrt{k}$ over $k$-GD steps",
          item="E14"),
]

# How each is judged (claims.py's Claim fields): the kind, and the threshold and side of the
# interval where one interval decides it. L-C6 (no gradient is built), L-C14 (lr = base lr x
# scale, AdamW's state untouched) and L-C21 (a larger lr gives a larger update) are mechanical
# properties of the method and the optimiser: sanity checks. L-C7 is a measurement of wall
# time against our reading of "negligible" (r < 0.05 at every configuration): a claim test of
# the source's own statement, judged without an interval. The source reports no effect size
# anywhere (it has no experiments), so no claim has a source_effect. The bools (L-C7, L-C13,
# E14) decide only as `Finding.replicates` or `DETERMINISTIC` allow (`_REPLICATION` below):
# L-C7's table holds medians of the timed repeats (not declared per repeat: INCONCLUSIVE),
# L-C13 is an exact computation on the fixed pretrained weights, E14 holds in every SGD seed.
_JUDGED = {
    "L-C6": {"kind": "sanity"}, "L-C14": {"kind": "sanity"},
    "L-C21": {"kind": "sanity", "threshold": 0.7, "side": "greater", "unit": "Spearman rho"},
    "L-C1": {"threshold": 0.0, "side": "less", "unit": "nats / points"},
    "L-C2": {"threshold": 0.0, "side": "greater", "unit": "points"},
    "L-C3": {"threshold": 0.0, "side": "less", "unit": "nats"},
    "L-C3.vision": {"threshold": 0.0, "side": "less", "unit": "nats"},
    "L-C4": {"threshold": 0.0, "side": "greater"},
    "L-C5": {"threshold": 1.5, "side": "greater", "unit": "shifts"},
    "L-C27": {"threshold": 1.5, "side": "greater", "unit": "shifts"},
    "L-C8": {"threshold": 0.0, "side": "greater", "unit": "points"},
    "L-C9": {"threshold": 0.0, "side": "greater", "unit": "millinats"},
    "L-C10": {"threshold": 0.0, "side": "greater", "unit": "effective rank"},
    "L-C11": {"threshold": 0.0, "side": "greater", "unit": "millinats"},
    "L-C12": {"threshold": 0.0, "side": "less", "unit": "1e-3 cosine"},
    "L-C15": {"threshold": 0.0, "side": "greater", "unit": "points"},
    "L-C15.vision": {"threshold": 0.0, "side": "greater", "unit": "points"},
    "L-C15.nlp": {"threshold": 0.0, "side": "greater", "unit": "points"},
    "X-L2": {"threshold": 0.0, "side": "greater", "unit": "points"},
    "L-C17": {"threshold": -1.0, "side": "greater", "unit": "points"},
    "L-C19": {"threshold": 0.0, "side": "less", "unit": "points / epoch"},
    "L-C20": {"threshold": 0.0, "side": "less", "unit": "Spearman rho"},
    "L-C22": {"threshold": 0.0, "side": "greater", "unit": "fraction of layers"},
    "L-C23": {"threshold": 0.0, "side": "greater"},
    "L-C24": {"threshold": 0.0, "side": "less", "unit": "points"},
    "L-C25": {"threshold": 0.0, "side": "greater", "unit": "points / epoch"},
    "L-C26": {"threshold": 0.0, "side": "greater", "unit": "millinats"},
    "L-C28": {"threshold": 0.0, "side": "less", "unit": "Spearman rho"},
    "L-C29": {"threshold": 0.0, "side": "greater", "unit": "millinats"},
}

# Replicate and null of every claim test (test_claim_cases checks that each one has both).
_REPLICATION = {
    "L-C1": (FINETUNE, VS_U_UM + " (X-L3's forgetting, X-L4's gap; the scale rule's mechanism "
             "is checked on every LALR-REC table)"),
    "L-C2": (FINETUNE, VS_U + "; the parameter count is compared exactly over every run"),
    "L-C3": (FINETUNE, VS_U_UM),
    "L-C3.vision": (FINETUNE_VISION, VS_U_UM),
    "L-C4": (FINETUNE_RUN, "X-L12: the scales LALR would have set from U's own weights (ranking "
             "drift alone); X-L16: LALR-REC with the metrics computed once, same seed"),
    "L-C5": (FINETUNE, VS_U + ", on each shift's test set"),
    "L-C27": (FINETUNE, VS_U + ", on each shift's test set"),
    "L-C7": (TIMING, "none but our threshold r = 0.05 for 'negligible' (the source gives none)"),
    "L-C8": (FINETUNE, "the best other schedule of the nine (and U), same seed"),
    "L-C9": (FINETUNE, "the same difference of one-epoch gains under U (later epochs gain less "
             "in any run), same seed"),
    "L-C10": (FINETUNE, "U split into the terciles LALR would have set from U's own weights "
              "(`analysis.uniform_table`), same seed"),
    "L-C11": (FINETUNE, "U split into the terciles LALR would have set from U's own weights, "
              "same seed"),
    "L-C12": (FINETUNE, VS_U),
    "L-C13": (DETERMINISTIC, "the same normaliser on the same weights without the x10 outlier "
              "(the scales before); the verdict is exact for the one pretrained TinyTF's "
              "weights, and the 50 % cut is ours"),
    "L-C15": (FINETUNE, VS_U_UM),
    "L-C15.vision": (FINETUNE_VISION, VS_U_UM),
    "L-C15.nlp": (FINETUNE_NLP, VS_U_UM),
    "L-C16": (FINETUNE, VS_U_UM + " (small SENT setting)"),
    "L-C17": (FINETUNE, VS_U + ", every epoch (non-inferiority at -1 point)"),
    "L-C18": (FINETUNE, VS_U + " on every task and on the shifts"),
    "L-C19": (PROBE_SEED, VS_U + " (X-L10's runs)"),
    "L-C20": (PROBE_SEED, "rho = 0: no monotone relation between the gap's and the accuracy's "
              "changes within a run"),
    "L-C22": (FINETUNE_RUN, "the same fraction of the scales LALR would have set from U's own "
              "weights (ranking drift alone), same task and seed"),
    "L-C23": (FINETUNE, "U's early / late update-norm ratio, same seed; the median scale"),
    "L-C24": (FINETUNE, VS_U + " (the spread over the same three perturbed starts)"),
    "L-C25": (PROBE_SEED, VS_U + " (X-L10's runs)"),
    "L-C26": (FINETUNE, "U's first- minus second-cycle gain over the same epochs, same seed; "
              "CE's and CS's slowdown"),
    "L-C28": (FINETUNE, "rho = 0 within a run (each run's own rho; t over runs)"),
    "L-C29": (FINETUNE, "equal one-epoch gains of the phases from the pretrained start, same "
              "seed"),
    "X-L2": (FINETUNE, "LARS, LAMB and TempBalance, same seed. Unequal tuning (a deviation "
             "from equal arms): LAMB's lr (5 trials) and LARS's (eta, lr; 9 trials) were chosen "
             "on pilot seeds 100-101 (`settings`), LALR-REC, U and TempBalance run at base lr "
             "1e-3 untuned; the tuning favours LARS and LAMB, so a FAIL of LALR-REC against "
             "them is not a FAIL of the method at equal tuning"),
    "E14": (E14_SEED, "the notes' sqrt(k) law: slope 0.5 (tolerance 0.03, ours), in "
            "every seed"),
    "E14-growth": (E14_SEED, "the derivation's linear growth of ||w||^4 - ||w_0||^4: slope 0.5 "
                   "of its square root (tolerance 0.03, ours)"),
}
_JUDGED = {cid: {**_JUDGED.get(cid, {}), **({"replicate": r, "null": n} if (r, n) else {})}
           for cid, (r, n) in {**{c: ("", "") for c in _JUDGED}, **_REPLICATION}.items()}

_C = [dataclasses.replace(c, **_JUDGED.get(c.id, {})) for c in _C]
CLAIMS: dict[str, Claim] = {c.id: c for c in [*_C, *(dataclasses.replace(
    x, **_JUDGED.get(x.id, {})) for x in _X)]}
SOURCE_CLAIMS = tuple(c.id for c in _C if c.id.startswith("L-C") and "." not in c.id)

# Why L-C30 cannot be tested (the verdict table's N/A reason).
UNTESTABLE = ("not testable as stated: K, the mutual information I(L_i; L_j) between 'affected "
              "layers' and J as a function of the metrics are undefined, and Sperner's lemma and "
              "'supermodular, hence monotone' are non sequiturs (issue 18 in chapter 01's list of the "
              "source's issues)")
