"""What chapter 03 tests, as data: one `Claim` per check, its kind, its direction and, where the
source reports one, the source's effect in the estimate's unit.

The sources (``[KimKim-slides]`` presenting ``[RahimiAfzal2025]``; the NNGP of ``[ATDL-notes]``)
give one table (T-002-1), one three-panel figure (F-002-a..c), image-only slides (F-002-A, B,
C) and Theorems 1-7; the checks' ids are ours, ``item`` is the inventory item each belongs to.
A *claim* test states the source's claim in its direction against a null or a control arm and
can fail (``tests/test_ch03_ntk_claims.py`` builds the data on which it does); a *sanity* check
is an identity, a theorem's inequality that holds whenever its premises do, or a mechanical
property of the code.
"""

from __future__ import annotations

from lalr_core.core.results.claims import DETERMINISTIC, Claim

# What one independent replicate is, per kind of check (``Claim.replicate``). Every fine-tuning
# starts from chapter 01's ONE cached pretraining: the seeds replicate the fine-tuning (LoRA
# and head initialisation, data order), not the pretraining, so a verdict speaks for this
# pretrained encoder only.
FINETUNE = ("a fine-tuning from its own seed (LoRA/head initialisation and data order; all "
            "seeds share chapter 01's one pretraining)")
FINETUNE_SWEEP = ("one seed's fine-tunings over the whole λ grid (its own LoRA/head "
                  "initialisation and data order; chapter 01's one pretraining shared)")
NLP_SWEEP = ("one seed's fine-tunings of the source's model over the λ grid (the hub's one "
             "pretrained checkpoint shared)")
SETTINGS_SWEEP = ("one seed's fine-tunings of all the settings (its own LoRA/head "
                  "initialisation and data order; κ at θ₀ and chapter 01's one pretraining "
                  "shared)")
SEL_SWEEP = ("one seed's selection runs (the base set alone and with each candidate, paired "
             "by seed; η at θ₀ and chapter 01's one pretraining shared)")
NULL_LAMBDA = "λ = 0 (plain AdamW, no pull): the quantity does not fall with λ (ρ ≥ 0)"

QUOTE_T1 = "As the regularization strength increases, the model behaves more like a linear model."
QUOTE_F = "Higher condition number → Higher train loss"
QUOTE_KAPPA = ("The regularized condition number as at-initialization metric for predicting the "
               "performance of fine-tuning.")
QUOTE_PROXIMAL = ("Regularization reduces deviation between fine-tuned and pretrained models "
                  "(proximal method)")
QUOTE_LINEAR = ("Regularized fine-tuning around initial point is **approximately a linear "
                "model**.")
# A closeness claim needs a tolerance fixed before the run (the source states none): the
# linearised model's validation accuracy within this many points of the fine-tuned model's
CLOSE_POINTS = 5.0
QUOTE_TH1 = "A non-increasing $\\|f_{\\theta_t}(x^*) - y^*\\|^2$ is guaranteed at step t"
QUOTE_TH34 = ("For a proper choice of the regularization parameter λ , linearization of the "
              "fine-tuning only depends on the local properties")
QUOTE_KRR = ("As the model is linear in regularized fine-tuning, we can acquire optimal function "
             "w/o SGD like optimization process")
QUOTE_SEL = "If η is large enough and doesn't mass up the condition number, it is worth to tune."

# Table T-002-1's Spearman rho of lambda against the linearisation error and the KL divergence,
# as the source's columns give them (SST-2 / CoLA); SENT stands in for SST-2, ACC for CoLA.
SOURCE_RHO = {"sent": {"lin_error": -0.76, "kl": -0.86}, "acc": {"lin_error": -0.74, "kl": -0.62}}
# The table's accuracy at its best lambda <= 5 minus that at lambda = 50, in points:
# SST-2 0.930 (lambda = 0.5) - 0.893; CoLA 80.44 (lambda = 5) - 74.59.
SOURCE_DROP = {"sent": 3.7, "acc": 5.85}
TASK_NAME = {"sent": "SENT (SST-2)", "acc": "ACC (CoLA)", "sst2": "SST-2", "cola": "CoLA"}


def _t1(task: str) -> list[Claim]:
    name = TASK_NAME[task]
    return [
        Claim(f"T1-distance-{task}", f"{name}: ‖θ_t − θ₀‖ falls strictly as λ grows, in every "
              "seed (the λ = 0 run is the control)", "table T-002-1, row 1", ("E-002-T1",),
              QUOTE_T1, item="T-002-1",
              replicate=FINETUNE_SWEEP,
              null=("the λ = 0 run of the same seed (no pull): distances that do not "
                    "fall strictly with λ")),
        Claim(f"T1-linerr-{task}", f"{name}: Spearman(λ, linearisation error) < 0",
              "table T-002-1, row 2", ("E-002-T1",), QUOTE_T1, item="T-002-1", threshold=0.0,
              side="less", source_effect=SOURCE_RHO[task]["lin_error"], unit="ρ",
              replicate=FINETUNE_SWEEP, null=NULL_LAMBDA),
        Claim(f"T1-kl-{task}", f"{name}: Spearman(λ, KL divergence) < 0",
              "table T-002-1, row 3", ("E-002-T1",), QUOTE_T1, item="T-002-1", threshold=0.0,
              side="less", source_effect=SOURCE_RHO[task]["kl"], unit="ρ",
              replicate=FINETUNE_SWEEP, null=NULL_LAMBDA),
        Claim(f"T1-accuracy-{task}", f"{name}: test accuracy at the strongest λ is below that "
              "at the best λ ≤ 5 (chosen on validation accuracy)", "table T-002-1, row 4",
              ("E-002-T1",), QUOTE_T1, item="T-002-1", threshold=0.0, side="greater",
              source_effect=SOURCE_DROP[task], unit="points",
              replicate=FINETUNE,
              null=("the same seed's run at the best λ ≤ 5: no accuracy drop at the "
                    "strongest λ (paired difference ≤ 0)")),
        Claim(f"T1b-gap-{task}", f"{name}: the separately trained linearised model's gap "
              "‖f_θt − f̄_θ̄t‖ falls with λ (Spearman < 0; Theorem 3's quantity)",
              "Theorem 3 on table T-002-1's runs", ("E-002-T1b",), QUOTE_T1, item="T-002-1",
              threshold=0.0, side="less", unit="ρ",
              replicate=FINETUNE_SWEEP, null=NULL_LAMBDA),
        Claim(f"T1b-close-{task}", f"{name}: at the regularised λ chosen on validation "
              f"the separately trained linearised model's test accuracy is within "
              f"±{CLOSE_POINTS:g} points of the fine-tuned model's (paired by seed; the "
              "tolerance fixed before the run)",
              "the slides' summary, on table T-002-1's runs", ("E-002-T1b",), QUOTE_LINEAR,
              item="T-002-1", threshold=CLOSE_POINTS, side="within", unit="points",
              replicate=FINETUNE,
              null=(f"the tolerance: an accuracy gap beyond ±{CLOSE_POINTS:g} points is no "
                    "closeness, whatever the trend in λ")),
    ]


def _nlp(task: str) -> list[Claim]:
    name = TASK_NAME[task]
    return [
        Claim(f"nlp-distance-{task}", f"the source's model on {name}: ‖θ_t − θ₀‖ falls "
              "strictly as λ grows, in every seed", "table T-002-1, row 1", (), QUOTE_T1,
              item="T-002-1",
              replicate=NLP_SWEEP,
              null=("the λ = 0 run of the same seed: distances that do not fall "
                    "strictly with λ")),
        Claim(f"nlp-linerr-{task}", f"the source's model on {name}: Spearman(λ, "
              "linearisation error) < 0", "table T-002-1, row 2", (), QUOTE_T1,
              item="T-002-1", threshold=0.0, side="less",
              source_effect=SOURCE_RHO["sent" if task == "sst2" else "acc"]["lin_error"],
              unit="ρ",
              replicate=NLP_SWEEP, null=NULL_LAMBDA),
        Claim(f"nlp-kl-{task}", f"the source's model on {name}: Spearman(λ, KL divergence) < 0",
              "table T-002-1, row 3", (), QUOTE_T1, item="T-002-1", threshold=0.0,
              side="less", source_effect=SOURCE_RHO["sent" if task == "sst2" else "acc"]["kl"],
              unit="ρ",
              replicate=NLP_SWEEP, null=NULL_LAMBDA),
    ]


_C = [
    *_t1("sent"), *_t1("acc"), *_nlp("sst2"), *_nlp("cola"),
    Claim("F-002-a", "every setting's train loss falls over the epochs (mean of seeds)",
          "fig (a)", ("E-002-Fa",), "Train loss over 10 epochs", kind="sanity"),
    Claim("F-002-b", "K is symmetric PSD and κ(K + σI) ≥ 1 in every setting", "fig (b)",
          ("E-002-Fb",), QUOTE_F, kind="sanity"),
    Claim("F-002-c-loss", "higher κ(K + σI) (LoRA and head), higher final train loss: "
          "Spearman > 0 over the settings", "fig (a)-(c)", ("E-002-Fc",), QUOTE_F,
          item="F-002-c", threshold=0.0, side="greater", unit="ρ",
              replicate=SETTINGS_SWEEP,
              null=("no association of κ with the outcome over the settings (each "
                    "seed's Spearman, mean 0); an untrained-network null is not "
                    "possible here: κ is computed at initialisation")),
    Claim("F-002-c-acc", "higher κ(K + σI) (LoRA and head), lower validation accuracy: "
          "Spearman < 0 over the settings", "fig (c)", ("E-002-Fc",), QUOTE_KAPPA,
          item="F-002-c", threshold=0.0, side="less", unit="ρ",
              replicate=SETTINGS_SWEEP,
              null=("no association of κ with the outcome over the settings (each "
                    "seed's Spearman, mean 0); an untrained-network null is not "
                    "possible here: κ is computed at initialisation")),
    Claim("F-002-c-loss-lora", "higher κ(K + σI) (LoRA only, head excluded), higher final "
          "train loss: Spearman > 0 over the settings", "fig (a)-(c)", ("E-002-Fc",), QUOTE_F,
          item="F-002-c", threshold=0.0, side="greater", unit="ρ",
              replicate=SETTINGS_SWEEP,
              null=("no association of κ with the outcome over the settings (each "
                    "seed's Spearman, mean 0); an untrained-network null is not "
                    "possible here: κ is computed at initialisation")),
    Claim("F-002-c-acc-lora", "higher κ(K + σI) (LoRA only, head excluded), lower validation "
          "accuracy: Spearman < 0 over the settings", "fig (c)", ("E-002-Fc",), QUOTE_KAPPA,
          item="F-002-c", threshold=0.0, side="less", unit="ρ",
              replicate=SETTINGS_SWEEP,
              null=("no association of κ with the outcome over the settings (each "
                    "seed's Spearman, mean 0); an untrained-network null is not "
                    "possible here: κ is computed at initialisation")),
    Claim("F-002-A-gd", "plain GD is monotone at this step (the theorem is continuous-time)",
          "slide A (image)", ("E-002-FA",), kind="sanity", item="F-002-A"),
    Claim("F-002-A-distance", "final ‖θ − θ₀‖ falls as λ grows (0 → 1 → 10), always-on pull "
          "from θ₀ (the pull contracts toward θ₀ at every step)", "slide A (image)",
          ("E-002-FA",), kind="sanity", item="F-002-A"),
    Claim("F-002-A-distance-selective", "final ‖θ − θ₀‖ falls as λ grows (0 → 1 → 10), "
          "selective pull from the perturbed start (N/A if it never acts)",
          "slide A (image), formulation slide", ("E-002-FA",), QUOTE_PROXIMAL, item="F-002-A",
              replicate=DETERMINISTIC,
              null=("the λ = 0 flow from the same start (plain GD): distances that do "
                    "not fall with λ")),
    Claim("F-002-A-selective", "the selective path's loss never rises where the pull acts "
          "(Theorem 1 on the toy, from a perturbed start)", "slide A (image), Theorem 1",
          ("E-002-FA",), QUOTE_TH1, item="F-002-A",
              replicate=DETERMINISTIC,
              null=("the always-on pull from the same start (the control arm, whose "
                    "loss can rise); one toy, one start")),
    Claim("F-002-B", "the nonlinear path stays closer to the linearised one for λ = 10 than for "
          "λ = 0", "slide B (image)", ("E-002-FB",), QUOTE_TH34,
              replicate=DETERMINISTIC,
              null=("λ = 0 on the same toy: the nonlinear path no closer to the "
                    "linearised one")),
    Claim("Th1-gd", "plain GD is monotone at this step size", "Theorem 1", ("E-002-Th1",),
          kind="sanity", item="Th1"),
    Claim("Th1", "the selective pull never raises the loss (> 1e-9 relative) on a flow where it "
          "acts (from a perturbed start; the always-on pull is the control arm)", "Theorem 1",
          ("E-002-Th1",), QUOTE_TH1, replicate=DETERMINISTIC,
          null="the always-on pull from the same start (the control arm); full-batch flow on "
               "one θ₀ and fixed examples"),
    Claim("Th2", "‖θ_t − θ₀‖ ≤ 2·Lip(f)·‖y(0) − y*‖(1 − e^{−λt})/λ at every logged t",
          "Theorem 2", ("E-002-Th2",), kind="sanity"),
    Claim("Th3-4", "Δ(T) = ‖f_θT(x*) − f̄_θ̄T(x*)‖ falls as λ grows (lower at the largest λ "
          "than at λ = 0; at most one inversion)", "Theorems 3-4", ("E-002-Th34",), QUOTE_TH34,
              replicate=DETERMINISTIC,
              null=("λ = 0 (no pull): Δ(T) not lower at the largest λ; full-batch flow "
                    "on one θ₀ and fixed examples, a statement about this θ₀ only")),
    Claim("Th3-4-ball", "λ ≥ λ_o never leaves the r-ball; for λ < λ_o the exit is no earlier "
          "than (1/λ)ln(1/(1 − λ/λ_o))", "Theorem 4", ("E-002-Th34",), kind="sanity",
          item="Th3-4"),
    Claim("Th5", "(1/n)σ²‖ỹ‖²/(σ+λ_max)² ≤ R_KRR ≤ (1/n)σ²‖ỹ‖²/(σ+λ_min)² for every σ",
          "Theorem 5", ("E-002-Th5",), kind="sanity"),
    Claim("KRR", "at convergence, the regularised fine-tuning's outputs approach kernel ridge "
          "regression's as λ grows: on held-out inputs x, ‖f_θ*(x) − f_KRR(x)‖ / "
          "‖f_KRR(x) − f_θ0(x)‖ falls strictly with λ", "Slide C, Theorem 5", ("E-002-Th5",),
          QUOTE_KRR,
              replicate=DETERMINISTIC,
              null=("λ → 0 on the same fixed inputs: the gap to kernel ridge not "
                    "falling with λ; one θ₀, deterministic minimiser")),
    Claim("Th6", "(1 − η)λ_i(K) ≤ λ_i(K + S) ≤ (1 + η)λ_i(K) for every eigenvalue and "
          "candidate", "Theorem 6", ("E-002-Th6",), kind="sanity"),
    Claim("Th7", "Theorem 7's risk-ratio bounds hold for every candidate with η ≤ 1",
          "Theorem 7", ("E-002-Th7",), kind="sanity"),
    Claim("Sel", "a larger η, a larger train-loss reduction when the candidate is added: "
          "Spearman(η, reduction) > 0 over the candidates", "layer selection (Theorems 6-7)",
          ("E-002-Sel",), QUOTE_SEL, threshold=0.0, side="greater", unit="ρ",
              replicate=SEL_SWEEP,
              null=("no association of η with the train-loss reduction (each seed's "
                    "Spearman over the candidates, mean 0)")),
    Claim("E16", "the empirical kernel's relative error falls with width like 1/√N "
          "(error·√N within a factor 2 across widths; falling error)", "[ATDL-notes] sec. 1.2",
          ("E16",), "It is shown in [Lee et al. 2018] that a deep, infinitely wide neural "
          "network is a Gaussian process", kind="sanity"),
]

CLAIMS: dict[str, Claim] = {c.id: c for c in _C}
