# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Linearisation explains fine-tuning: NTK, regularised fine-tuning, kernel ridge
#
# **Question.** If fine-tuning is pulled toward the pretrained parameters θ₀, does the model
# stay close to its first-order Taylor expansion at θ₀, so that fine-tuning is kernel ridge
# regression with the empirical neural tangent kernel K = J Jᵀ? And does the regularised
# condition number κ(K + σI), computed before any training, predict how well fine-tuning goes?
#
# **Source.** `[KimKim-slides]`: JoonSeok Kim, Yong Jun Kim, slides for the course EECE695D
# Deep Learning Theory presenting `[RahimiAfzal2025]`: Zahra Rahimi Afzal, Tara Esmaeilbeig,
# Mojtaba Soltanalian, Mesrob I. Ohannessian, "Linearization Explains Fine-Tuning in Large
# Language Models", NeurIPS 2025, <https://arxiv.org/abs/2602.08239>. We follow the slides (the
# paper's theorems and results as the presenters restate them; the authors' names come from the
# arXiv record, the slides give none); every reference: `REFERENCES.md`. Their results (one
# table, one three-panel figure) are RoBERTa-base with LoRA on GLUE; the theorems are about
# gradient flow on a squared loss. We correct the slides' slips and fill in what they leave
# open; each correction and choice is named where it matters below, and the experiment labels
# (T-002-1, E-002-…) and their thresholds are ours.
#
# **Setting.** Chapter 01's TinyTF, pretrained by masked-token prediction on the synthetic
# corpus D-SYN-TXT (the same cached run), frozen; LoRA of rank 4 (α = 8) on the query and value
# projections of both blocks and a fresh linear head are trained with AdamW (lr 3e-3, no weight
# decay, batch 32, 10 epochs) and the selective pull toward θ₀ after each step. The slides give
# the 10 epochs ("Train loss over 10 epochs") and AdamW; the trained set, rank, targets, lr and
# batch are our choices, and so is the pull's form with AdamW (a decoupled step after the
# optimiser's). SENT stands in for SST-2 and ACC for CoLA; LONG and STARS are the other two task
# analogues of the figure. The scalar function of the theory is the logit margin z₁ − z₀ (our
# choice: the theory has one output, the tasks two classes).
# **Why lr 3e-3:** a pilot on a separate seed: at 1e-3 LoRA of rank 4 learns SENT to 0.62–0.77
# validation accuracy in 10 epochs (settings module). `paper`
# adds the source's own setting (RoBERTa-base + LoRA on GLUE SST-2 / CoLA, the optional `nlp`
# extra, online, a GPU); `smoke` runs it as a tiny random model.
#
# **The method** (`lalr_core.methods.pretrained.proximal`, method `"proximal_pull"`). After the optimiser's
# step θ̃, the pull θ ← θ̃ − lr·λ·(θ̃ − θ₀) is applied if c = g·(θ̃ − θ₀) ≥ 0, with g the
# minibatch gradient just used (our discrete form: the slides' condition refers to the θ_t it
# defines); λ = 0
# is plain AdamW. The linearised model (`lalr_core.methods.ntk.empirical.LinearisedModel`) is
# f(x; θ₀) + ⟨∇f(x; θ₀), θ − θ₀⟩ through `torch.func.jvp`, trained by the same loop.
#
# **Checks.** Each check is kept as data in `lalr_core.chapters.ch03_ntk.claims` and judged
# by a function of `lalr_core.chapters.ch03_ntk.findings` (unit-tested on synthetic results that
# give PASS, FAIL and INCONCLUSIVE): a *claim test* states the source's claim in its direction
# against a null or a control arm; a *sanity check* (a theorem's inequality that holds when
# its premises do, an identity, a mechanical property) guards the code and is not a verdict.

# %% tags=["parameters"]
# parameters
profile = "smoke"   # smoke | quick | paper
overrides = {}      # any field of the chapter's Settings, e.g. {"seeds": 3}

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

from lalr_core.chapters import ch03_ntk as nt
from lalr_core.chapters.ch03_ntk import findings as it
from lalr_core.chapters.ch03_ntk import measures as ms
from lalr_core.chapters.ch03_ntk.claims import CLAIMS
from lalr_core.core.loop.train import initial_model
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.style import set_style
from lalr_core.core.results.writer import FigureWriter
from lalr_core.core.runs import sweep
from lalr_core.core.runs.units import train_runs
from lalr_core.methods.ntk import empirical as ntk
from lalr_core.methods.ntk import theory as th
from lalr_core.methods.signal import nngp

S = nt.CHAPTER.settings(profile, overrides)   # validated before any compute
out = FigureWriter("03_ntk_linearization", profile, "03_ntk_linearization.ipynb")
set_style()
T0 = time.perf_counter()
SEEDS = range(S.seeds)
pd.Series(S.as_dict(), dtype=object).to_frame("setting")

# %% [markdown]
# ## Training · every fine-tuning in one cached, resumable sweep
#
# The MLM pretraining first (chapter 01's unit), then table T-002-1's runs (tasks × λ ×
# `t1_seeds`), the linearised models of `lin_lambdas`, figure (a)–(c)'s ten settings and the
# layer-selection runs. Each keeps its final weights.

# %%
train_runs([nt.pretraining(S)])
cfgs, cbs = nt.CHAPTER.all_runs(S)
res = dict(zip(cfgs, train_runs(cfgs, callbacks=cbs, workers=S.workers), strict=True))
DATA = {task: nt.lora_task(S, task).base.data() for task in set(S.tasks) | set(S.fig_tasks)}
print(f"{len(cfgs)} fine-tunings; {time.perf_counter() - T0:.0f} s so far")

# %% [markdown]
# ## Table T-002-1 · does the regulariser make the model linear?
#
# *Source:* over λ ∈ {50, 10, 5, 2, 1, 0.5, 0.1, 0}, the distance ‖θ_t − θ₀‖ falls strictly as λ
# grows (Spearman ρ = −1 on both datasets), the linearisation error and the KL divergence fall
# too but not monotonically (the source's ρ are the claims' `source_effect`), and accuracy
# peaks at a moderate λ and drops at λ = 50. *Ours:* the same four rows per task (mean over
# seeds), with the source's numbers below. Definitions (the slides give none): the distance
# over the trainable parameters (LoRA and head); the linearisation error is the Taylor
# remainder ‖f_θt(x*) − [f_θ0(x*) + J₀(θ_t − θ₀)]‖ over the logit vectors of all training
# inputs, with its per-example RMS; KL is the mean over validation examples of
# KL(softmax f_θt ‖ softmax f̄_θt); accuracy is in % for both tasks (the source mixes % and
# fractions). *Claim tests (T-002-1, ours):* (i) the distance falls strictly with λ in every
# seed (λ = 0 is the control; N/A where the selective pull never applied); (ii) Spearman(λ,
# linearisation error) < 0 and Spearman(λ, KL) < 0, each seed's ρ over its λ grid, the
# mean over seeds with a t interval *over seeds* (one seed's runs are not independent
# pairs); (iii) the best λ ≤ 5 is chosen on *validation* accuracy and its *test* accuracy is
# compared with the strongest λ's, paired by seed (selection and judgement on different
# examples). A replicate is one seed's fine-tunings (its LoRA/head initialisation and data
# order); all seeds share chapter 01's one pretraining, so the verdicts speak for this
# pretrained encoder. A verdict needs ≥ 3 seeds (`t1_seeds` = 3 at `quick`): (i)'s "every
# seed" counts its seeds as replicates.

# %%
T1_CFG = nt.table_runs(S)
rows = [{"task": task, "lam": lam, "seed": seed, **ms.table_numbers(cfg, res[cfg], DATA[task]),
         "test_accuracy": 100 * res[cfg]["final"]["test_acc"],
         "pulls": res[cfg].get("optimizer_stats", {}).get("proximal_pulls", 0)}
        for (task, lam, seed), cfg in T1_CFG.items()]
TAB = pd.DataFrame(rows)
source = pd.read_csv(nt.REFERENCE_TABLE)
QUANT = {"distance": "‖θ_t − θ₀‖₂", "lin_error": "‖f_θt(x*) − f̄_θt(x*)‖₂", "kl": "KL divergence",
         "accuracy": "validation accuracy (%)", "test_accuracy": "test accuracy (%)"}
show = (TAB.groupby(["task", "lam"])[list(QUANT)].mean().reset_index()
        .melt(id_vars=["task", "lam"], var_name="quantity")
        .pivot_table(index=["task", "quantity"], columns="lam", values="value")
        .sort_index(axis=1, ascending=False))
src = source.pivot_table(index=["dataset", "quantity"], columns="lam", values="value") \
    .sort_index(axis=1, ascending=False)
out.save_table(show.reset_index().rename(columns={c: f"λ={c:g}" for c in show.columns}), "T-002-1",
               params=S.as_dict(), seeds=list(range(S.t1_seeds)),
               note=f"mean of {S.t1_seeds} seeds; SENT ~ SST-2, ACC ~ CoLA; source's numbers in "
                    f"data/reference/ch03_tableT1.csv")
display(show.round(4))
src.round(4)

# %%
T1 = {task: it.table_t1(TAB[TAB.task == task], task) for task in S.tasks}
for task, src_name in zip(S.tasks, ("sst2", "cola")):
    r = T1[task]
    out.record(CLAIMS[f"T1-distance-{task}"], r.distance,
               source=src.loc[(src_name, "distance")].round(4).to_dict())
    out.record(CLAIMS[f"T1-linerr-{task}"], r.lin_error)
    out.record(CLAIMS[f"T1-kl-{task}"], r.kl)
    out.record(CLAIMS[f"T1-accuracy-{task}"], r.accuracy,
               source={"sst2": "0.930 (λ=0.5) vs 0.893", "cola": "80.44 (λ=5) vs 74.59"}[src_name])
display(Markdown("\n".join(
    f"- **{task}**: distance {r.distance.verdict}; Spearman(λ, linearisation error) "
    f"{r.lin_error.verdict} ({r.lin_error.ours}); Spearman(λ, KL) {r.kl.verdict}; accuracy: "
    f"best λ ≤ 5 on validation λ = {r.best_lam:g}, {r.accuracy.verdict} ({r.accuracy.ours})"
    for task, r in T1.items())))

# %% [markdown]
# ### E-002-T1b · the other linearisation error: a linearised model trained on its own
#
# The table's row 2 is the Taylor remainder at the fine-tuned θ_t; Theorem 3 bounds the gap
# between the fine-tuned model and the *linearised model trained separately* from θ₀. We
# train f̄ itself (same optimiser, initialisation and data order) for λ ∈ `lin_lambdas` and
# the table's `t1_seeds` seeds and show both definitions side by side. *Claim tests:* the
# separately trained gap falls with λ (each seed's Spearman, mean < 0, t interval over seeds),
# and, since the source claims more than a trend ("approximately a linear model"), closeness:
# at the λ > 0 a user would pick (the best validation accuracy of the fine-tuned model among
# `lin_lambdas`) the linearised model's test accuracy lies within ±5 points of the fine-tuned
# model's (paired t interval over seeds; the tolerance is ours, fixed before the run, as the
# slides state none). Not at the strongest λ: there the pull can hold both models at chance,
# and two models that learned nothing are close vacuously.

# %%
LIN = nt.table_runs(S, linearised=True)
gap_rows = []
for (task, lam, seed), lcfg in LIN.items():
    cfg = T1_CFG[(task, lam, seed)]
    gap_rows.append({"task": task, "lam": lam, "seed": seed,
                     "taylor remainder ‖f_θt − f̄_θt‖": TAB.query("task == @task and lam == @lam "
                                                                 "and seed == @seed")["lin_error"].item(),
                     "gap": ms.linearised_gap(cfg, res[cfg], lcfg, res[lcfg], DATA[task]),
                     "pulls": res[cfg].get("optimizer_stats", {}).get("proximal_pulls", 0),
                     "fine-tuned model's accuracy (%)": 100 * res[cfg]["final"]["val_acc"],
                     "linearised model's accuracy (%)": 100 * res[lcfg]["final"]["val_acc"],
                     "finetuned_test": 100 * res[cfg]["final"]["test_acc"],
                     "linearised_test": 100 * res[lcfg]["final"]["test_acc"]})
GAP = pd.DataFrame(gap_rows).rename(columns={"gap": "separately trained ‖f_θt − f̄_θ̄t‖"})
for task in S.tasks:
    g = GAP[GAP.task == task].rename(columns={"separately trained ‖f_θt − f̄_θ̄t‖": "gap",
                                              "fine-tuned model's accuracy (%)": "finetuned",
                                              "linearised model's accuracy (%)": "linearised"})
    out.record(CLAIMS[f"T1b-gap-{task}"], it.falls_by_seed(g, "gap", f"T1b-gap-{task}"))
    out.record(CLAIMS[f"T1b-close-{task}"], it.close_at_chosen(g, f"T1b-close-{task}"))
GAP.groupby(["task", "lam"]).mean(numeric_only=True).drop(
    columns=["seed", "finetuned_test", "linearised_test"]).round(3)

# %% [markdown]
# ## Figure (a)–(c) · does κ(K + σI) at θ₀ predict fine-tuning?
#
# *Source:* "Higher condition number → Higher train loss", over settings it does not name (four
# datasets, presumably). *Ours:* nine settings, the four task analogues with the default
# LoRA placement and the six placements on SENT (the default one among them), all at
# λ = `fig_lambda`. κ(K + σI) is computed at θ₀ on `ntk_n` fixed training examples (the first
# of the seeded split) with σ = `sigma` (λ/2 with λ = 1; the slides give no σ or n: our
# choices) and with σ = 1e-6·tr(K)/n; K is the margin NTK. **Which parameters span K.** The
# slides do not say. Their setting trains LoRA and a classifier head, and our reading (B-3)
# takes K over both; but at LoRA's initialisation B = 0, so the features are the pretrained
# model's for every placement, and the freshly initialised head's kernel, the same for every
# placement, dominates κ: the placements' κ then differ by a fraction of a percent (the
# spread is printed below). We therefore show and test both: κ over LoRA and head (panel b,
# left bars) and κ over the LoRA factors alone (right bars; ∂f/∂A = 0 at B = 0, so it comes
# from the B matrices). The source's figure varies datasets, where both kernels change. *Checks
# (E-002-Fb sanity, Fc claim tests):* K is symmetric PSD and κ ≥ 1 for every setting;
# Spearman(κ, final train loss) > 0 and Spearman(κ, validation accuracy) < 0 over the
# settings, for each kernel: each seed's Spearman over the settings, mean with a t interval over
# seeds. The settings of one seed share θ₀ and chapter 01's one pretraining, so a seed's sweep
# is one replicate (not nine); at `quick` there are `seeds` = 2, fewer than the 3 a verdict
# needs, so these claims are recorded INCONCLUSIVE there with the count (the tables show the
# seed means). This deviates from a Fisher-z interval over the settings as independent units.

# %%
FIG = nt.figure_runs(S)
settings_ = sorted({(task, name) for task, name, _ in FIG})
krows, kseed, curves = [], [], {}
for task, name in settings_:
    cfg0 = FIG[(task, name, 0)]
    X, _ = DATA[task].split("train")
    K = ms.ntk_at_init(cfg0, X[:S.ntk_n])
    KL_ = ms.lora_ntk_at_init(cfg0, X[:S.ntk_n])
    eig = torch.linalg.eigvalsh(K)
    runs = [res[FIG[(task, name, s)]] for s in SEEDS]
    curves[(task, name)] = np.mean([r["history"]["train_loss"].to_numpy() for r in runs], axis=0)
    krows.append({"task": task, "LoRA": name, "kappa": th.regularised_condition_number(K, S.sigma),
                  "kappa_lora": th.regularised_condition_number(KL_, S.sigma),
                  "kappa_small_sigma": th.regularised_condition_number(K, 1e-6 * float(K.trace()) / len(K)),
                  "kappa_lora_small_sigma": th.regularised_condition_number(
                      KL_, 1e-6 * float(KL_.trace()) / len(KL_)),
                  "symmetric_psd": bool(torch.allclose(K, K.T) and eig[0] >= -1e-8 * eig[-1]),
                  "final_train_loss": float(np.mean([r["history"]["train_loss"].iloc[-1] for r in runs])),
                  "val_acc": 100 * float(np.mean([r["final"]["val_acc"] for r in runs]))})
    kseed += [{"seed": s, "kappa": krows[-1]["kappa"], "kappa_lora": krows[-1]["kappa_lora"],
               "final_train_loss": float(r["history"]["train_loss"].iloc[-1]),
               "val_acc": 100 * float(r["final"]["val_acc"])} for s, r in zip(SEEDS, runs)]
KF = pd.DataFrame(krows)
FC = it.kappa_figure(KF, pd.DataFrame(kseed))
label = [f"{t} · {n}" for t, n in zip(KF.task, KF.LoRA)]
fig, (a, b, c) = plt.subplots(1, 3, figsize=(17, 4.6))
for (task, name), y in curves.items():
    a.plot(np.arange(1, len(y) + 1), y, label=f"{task} · {name}")
a.set(xlabel="epoch", ylabel="train loss (CE)", title=f"(a) train loss over {S.epochs} epochs")
a.legend(fontsize=6)
yy = np.arange(len(KF))
b.barh(yy - 0.2, KF.kappa, height=0.4, label="LoRA + head")
b.barh(yy + 0.2, KF.kappa_lora, height=0.4, label="LoRA only")
b.set_yticks(yy, label)
b.set(xscale="log", xlabel=f"κ(K + σI), σ = {S.sigma:g}", title="(b) condition number at θ₀")
b.tick_params(axis="y", labelsize=6)
b.legend(fontsize=7)
c.scatter(KF.kappa, KF.val_acc, color="C0", label="val. accuracy (%), κ LoRA + head")
c.scatter(KF.kappa_lora, KF.val_acc, color="C0", marker="s", facecolors="none",
          label="val. accuracy (%), κ LoRA only")
c2 = c.twinx()
c2.scatter(KF.kappa, KF.final_train_loss, color="C3", marker="x", label="final train loss")
c2.scatter(KF.kappa_lora, KF.final_train_loss, color="C3", marker="+",
           label="final train loss, κ LoRA only")
c.set(xscale="log", xlabel="κ(K + σI)", ylabel="validation accuracy (%)",
      title="(c) accuracy and train loss vs κ")
c2.set_ylabel("final train loss")
c.legend(fontsize=7, loc="upper left")
c2.legend(fontsize=7, loc="upper right")
fig.tight_layout()
for item in ("F-002-a", "F-002-b", "F-002-c"):
    out.savefig(fig, item, params=S.as_dict(), seeds=list(SEEDS),
                note="one figure holds the three panels; (b), (c): κ over LoRA + head and over "
                     "LoRA only")
plt.show()
out.record(CLAIMS["F-002-b"], Finding(bool(KF.symmetric_psd.all() and (KF.kappa >= 1).all()
                                           and (KF.kappa_lora >= 1).all()),
                                      ours=dict(zip(label, KF.kappa.round(1)))))
out.record(CLAIMS["F-002-c-loss"], FC.loss)
out.record(CLAIMS["F-002-c-acc"], FC.acc)
out.record(CLAIMS["F-002-c-loss-lora"], FC.loss_lora)
out.record(CLAIMS["F-002-c-acc-lora"], FC.acc_lora)
out.record(CLAIMS["F-002-a"], Finding(bool(all(y[-1] < y[0] for y in curves.values())),
                                      ours={f"{t} · {n}": f"{y[0]:.3f} → {y[-1]:.3f}"
                                            for (t, n), y in curves.items()}))
placements = KF[KF.task == "sent"]
display(Markdown(
    f"κ over LoRA + head spans a factor {FC.spread['kappa']:.4g} over the {len(KF)} settings and "
    f"{placements.kappa.max() / placements.kappa.min():.4g} over the {len(placements)} SENT "
    f"placements; over LoRA only, {FC.spread['kappa_lora']:.4g} and "
    f"{placements.kappa_lora.max() / placements.kappa_lora.min():.4g}. Spearman(κ, train loss): "
    f"{FC.loss.verdict} with the head, {FC.loss_lora.verdict} without; Spearman(κ, accuracy): "
    f"{FC.acc.verdict} with the head, {FC.acc_lora.verdict} without."))
KF.round(3)

# %% [markdown]
# ## Slides A, B, C · the two-parameter toy and the RKHS view
#
# The "Additional Slide" images are not in the text; we presume (A) the split proximal update on
# a loss surface and (B) the nonlinear model's path in output space beside its linearisation. Ours: f_θ(x) = θ₂·tanh(θ₁x) on 8 points (A) and on 2 points (B), full-batch
# gradient descent on the sum loss with step `toy_lr` for `toy_steps` steps from θ₀ = (0.5, 0.5),
# λ ∈ {0, 1, 10}, the pull always on or selective (the exact condition ∇R̃(θ̃)·(θ̃ − θ₀) ≥ 0, an
# extra gradient per step). From θ₀ itself a small-step descent moves down the gradient, so
# the selective pull never acts there and the selective path *is* plain GD; the selective
# paths therefore also start `th_perturb` uphill of θ₀ (θ₀ + r·∇R̃(θ₀)/‖∇R̃(θ₀)‖, the anchor
# still θ₀; halved until the loss still rises away from θ₀ there), where moving toward θ₀
# lowers the loss and the pull acts (dotted). *Checks (E-002-FA, FB):* sanity: plain GD
# (λ = 0) is monotone at this step (the theorem is a continuous-time statement); the final
# ‖θ − θ₀‖ falls as λ grows with the always-on pull (it contracts toward θ₀ at every step).
# Claim tests: the same fall for the selective pull from the perturbed start (N/A if it never
# acts); the selective path's loss never rises where the pull acts (1e-12 slack; N/A if it
# never acts); in output space the gap between the nonlinear and the linearised path is
# smaller for λ = 10 than for λ = 0.

# %%
g = torch.Generator().manual_seed(0)
x8 = torch.linspace(-2, 2, 8, dtype=torch.float64)
y8 = torch.tanh(1.5 * x8) * 1.2 + 0.1 * torch.randn(8, generator=g, dtype=torch.float64)
toy = nt.toy_problem(x8, y8, (0.5, 0.5))
toy_start = nt.perturbed_start(toy, S.th_perturb)
flows = {(mode, lam): nt.gradient_flow(toy, lam, S.toy_lr, S.toy_steps, mode=mode, rtol=1e-12)
         for mode in ("always", "selective") for lam in (1.0, 10.0)}
flows[("none", 0.0)] = nt.gradient_flow(toy, 0.0, S.toy_lr, S.toy_steps, mode="none", rtol=1e-12)
perturbed = {(mode, lam): nt.gradient_flow(toy, lam, S.toy_lr, S.toy_steps, mode=mode, rtol=1e-12,
                                           start=toy_start)
             for mode, lam in (("selective", 1.0), ("selective", 10.0), ("always", 1.0),
                               ("always", 10.0), ("none", 0.0))}
t1, t2 = np.meshgrid(np.linspace(-0.5, 3, 120), np.linspace(-0.5, 2.5, 120))
Z = np.array([[float(toy.loss(torch.tensor([a_, b_], dtype=torch.float64))) for a_, b_ in zip(r1, r2)]
              for r1, r2 in zip(t1, t2)])
x2 = torch.tensor([-1.0, 1.5], dtype=torch.float64)
toy2 = nt.toy_problem(x2, torch.tanh(1.5 * x2) * 1.2, (0.5, 0.5))
out_paths = {lam: (nt.gradient_flow(toy2, lam, S.toy_lr, S.toy_steps, mode="always").outputs,
                   nt.gradient_flow(toy2.linearised(), lam, S.toy_lr, S.toy_steps, mode="always").outputs)
             for lam in (0.0, 10.0)}
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5))
a.contour(t1, t2, np.log1p(Z), 30, cmap="viridis", linewidths=0.6)
for (mode, lam), fl in flows.items():
    a.plot(fl.thetas[:, 0], fl.thetas[:, 1], ls="-" if mode != "selective" else "--",
           label=f"{mode}, λ = {lam:g}")
for (mode, lam), fl in perturbed.items():
    if mode == "selective":
        a.plot(fl.thetas[:, 0], fl.thetas[:, 1], ls=":", label=f"selective, λ = {lam:g}, perturbed start")
a.plot(*toy.theta0.numpy(), "k*", ms=10)
a.plot(*toy_start.numpy(), "kx", ms=8)
a.set(xlabel="θ₁", ylabel="θ₂", title="slide A: the pull on the loss surface (8 points)")
a.legend(fontsize=7)
for lam, (nl, ln) in out_paths.items():
    b.plot(nl[:, 0], nl[:, 1], label=f"nonlinear, λ = {lam:g}")
    b.plot(ln[:, 0], ln[:, 1], ls="--", label=f"linearised, λ = {lam:g}")
b.plot(*toy2.y.numpy(), "k*", ms=10, label="y*")
b.set(xlabel="f(x₁)", ylabel="f(x₂)", title="slide B: paths in output space (2 points)")
b.legend(fontsize=7)
fig.tight_layout()
out.savefig(fig, "F-002-A", params=S.as_dict(), seeds=[0], note="panel 1 (slide B is panel 2)")
out.savefig(fig, "F-002-B", params=S.as_dict(), seeds=[0], note="panel 2 (slide A is panel 1)")
plt.show()
dist = {k: float(fl.distance[-1]) for k, fl in flows.items()}
pdist = {k: float(fl.distance[-1]) for k, fl in perturbed.items()}
out.record(CLAIMS["F-002-A-gd"], Finding(
    flows[("none", 0.0)].increases == 0 and perturbed[("none", 0.0)].increases == 0,
    ours={"from θ₀": flows[("none", 0.0)].increases,
          "from the perturbed start": perturbed[("none", 0.0)].increases}))
out.record(CLAIMS["F-002-A-distance"], Finding(
    dist[("none", 0.0)] > dist[("always", 1.0)] > dist[("always", 10.0)],
    ours={f"{k[0]}, λ={k[1]:g}": round(v, 4) for k, v in dist.items() if k[0] != "selective"}))
out.record(CLAIMS["F-002-A-distance-selective"], it.distance_falls_where_pulled(
    {k[1]: v for k, v in pdist.items() if k[0] in ("selective", "none")},
    sum(perturbed[("selective", lam)].pulls for lam in (1.0, 10.0))))
TOY_SEL = it.monotone_where_pulled(
    sum(perturbed[("selective", lam)].increases for lam in (1.0, 10.0)),
    sum(perturbed[("selective", lam)].pulls for lam in (1.0, 10.0)),
    control_increases=sum(perturbed[("always", lam)].increases for lam in (1.0, 10.0)),
    steps=2 * S.toy_steps)
out.record(CLAIMS["F-002-A-selective"], TOY_SEL)
gaps = {lam: float(np.max(np.linalg.norm(nl - ln, axis=1))) for lam, (nl, ln) in out_paths.items()}
out.record(CLAIMS["F-002-B"], it.falls_with_lambda(gaps))
display(Markdown(
    f"From θ₀ the selective pull applied on {flows[('selective', 1.0)].pulls} and "
    f"{flows[('selective', 10.0)].pulls} of {S.toy_steps} steps (λ = 1, 10); from the perturbed "
    f"start on {perturbed[('selective', 1.0)].pulls} and {perturbed[('selective', 10.0)].pulls}. "
    f"Theorem 1 on the toy: {TOY_SEL.verdict} ({TOY_SEL.ours})."))

# %% [markdown]
# **Slide C** (the arrow "regularised fine-tuning → kernel ridge regression"). For the sum loss
# R̃(θ) = ‖f_θ(x*) − y*‖² with the pull (λ/2)‖θ − θ₀‖², the linearised problem's minimiser is
# f*(x) = f_θ0(x) + K(x, x*)[K(x*, x*) + σI]⁻¹(y* − f_θ0(x*)) with **σ = λ/2** (the slides
# write the mean loss and drop the f_θ0 offset). The kernel-ridge section below compares it
# with the nonlinear model's own minimiser.

# %%
fig, ax = plt.subplots(figsize=(10, 2.2))
ax.axis("off")
ax.text(0.02, 0.5, "regularised fine-tuning\nmin_θ ‖f_θ(x*) − y*‖² + (λ/2)‖θ − θ₀‖²", fontsize=11,
        va="center", bbox={"boxstyle": "round", "fc": "C0", "alpha": 0.15})
ax.annotate("", xy=(0.6, 0.5), xytext=(0.42, 0.5), arrowprops={"arrowstyle": "->", "lw": 2})
ax.text(0.43, 0.62, "linearise at θ₀", fontsize=9)
ax.text(0.62, 0.5, "kernel ridge regression, σ = λ/2\nf* = f_θ₀ + K(·, x*)[K + σI]⁻¹(y* − f_θ₀(x*))",
        fontsize=11, va="center", bbox={"boxstyle": "round", "fc": "C2", "alpha": 0.15})
out.savefig(fig, "F-002-C", params={}, note="schematic, with the sum-loss constant (B-11)")
plt.show()

# %% [markdown]
# ## Theorems 1–4 · full-batch gradient flow on the margins
#
# `th_n` SENT training examples, targets ±1, the sum loss R̃ on the margins, the LoRA model at
# θ₀ (float64). One step size for every flow: 0.5/(2λ_max(K₀) + λ) (our choice) at the largest
# λ (or 1e-3 if smaller), `th_steps` steps, t = step·lr. Runs: plain GD, the always-on and the
# selective pull at λ = `th_lambda` from θ₀ and from a start `th_perturb` uphill of θ₀ (Theorem
# 1, exact condition), the always-on pull at `th34_lambdas` with their linearised twins
# (Theorems 3–4), and, for the kernel-ridge comparison, the minimiser of the regularised
# objective at each λ of `th34_lambdas` (Levenberg–Marquardt to convergence). Theorems 2-4
# take a constant λ_t ≡ λ, so their flows use the always-on pull. Lip(f) is the largest
# ‖J(θ)‖₂ over the logged θ; Lip(∇f) the largest ‖J(θ) − J(θ₀)‖₂/‖θ − θ₀‖. From θ₀ itself the
# selective pull barely acts (in full-batch descent with a small step θ̃ − θ₀ points down the
# accumulated gradient, so c = ∇R̃(θ̃)·(θ̃ − θ₀) < 0): Theorem 1 is judged on the perturbed
# start, where it does, with the always-on pull from the same start as the control arm (N/A if
# the pull never acts). *Claim tests (E-002-Th1, Th34):* the selective flow has no loss
# increase > 1e-9 relative; Δ(T) = ‖f_θT(x*) − f̄_θ̄T(x*)‖ falls with λ (lower at the largest λ
# than at 0, at most one inversion). *Sanity checks* (theorems' inequalities that hold
# whenever their premises do): plain GD is monotone at this step; Theorem 2's bound
# 2·Lip(f)·‖y(0) − y*‖(1 − e^{−λt})/λ at every logged t; flows with λ ≥ λ_o never leave the
# r-ball (r = half the λ = 0 final distance), and for λ < λ_o the first exit is no earlier
# than (1/λ)ln(1/(1 − λ/λ_o)).

# %%
base_cfg = nt.finetuning(S, "sent", 0.0, 0)
prob = nt.flow_problem(base_cfg, S.th_n)
LR = nt.stable_lr(prob, max(S.th34_lambdas + (S.th_lambda,)))
log_every = max(1, S.th_steps // 60)
plan = {("none", 0.0): {}, ("selective", S.th_lambda): {}}
plan.update({("always", lam): {} for lam in (S.th_lambda, *S.th34_lambdas) if lam > 0})
plan.update({("linear", lam): {"linearised": True} for lam in S.th34_lambdas})
plan.update({(f"{m}, perturbed", S.th_lambda): {"perturb": S.th_perturb}
             for m in ("selective", "always")})
plan.update({("minimiser", lam): {"minimise": True} for lam in S.th34_lambdas if lam > 0})
params = [{"run": base_cfg.key(), "n": S.th_n, "lam": lam, "linearised": False,
           "mode": "none" if lam == 0 else ("always" if m in ("linear", "minimiser")
                                            else m.split(",")[0]),
           "lr": LR, "steps": S.th_steps, "log_every": log_every, **extra}
          for (m, lam), extra in plan.items()]
FLOWS = dict(zip(plan, sweep(nt.flow_unit, params, name="ch03_flow", workers=S.workers),
                 strict=True))
print(f"lr {LR:.3g}, T = {LR * S.th_steps:.3g}; {time.perf_counter() - T0:.0f} s so far")

# %%
none, always, sel = FLOWS[("none", 0.0)], FLOWS[("always", S.th_lambda)], FLOWS[("selective", S.th_lambda)]
sel_p, always_p = FLOWS[("selective, perturbed", S.th_lambda)], FLOWS[("always, perturbed", S.th_lambda)]
lip_f = max(f["lip_f"] for f in FLOWS.values() if "lip_f" in f)
lip_g = max(f["lip_grad_f"] for f in FLOWS.values() if "lip_grad_f" in f)
res0 = float(np.linalg.norm(none["f0"] - none["y"]))
fig, axes = plt.subplots(1, 3, figsize=(17, 4.3))
for k, f in ((("none", 0.0), none), (("always", S.th_lambda), always),
             (("selective", S.th_lambda), sel), (("selective, perturbed start", S.th_lambda), sel_p),
             (("always, perturbed start", S.th_lambda), always_p)):
    axes[0].plot(f["t"], f["loss"], label=f"{k[0]}, λ = {k[1]:g}")
    axes[1].plot(f["t"], f["distance"], label=f"{k[0]}, λ = {k[1]:g}")
tt = always["t"]
axes[1].plot(tt, th.distance_bound(lip_f, res0, S.th_lambda, tt), "k--", label="Theorem 2 bound")
axes[0].set(xlabel="t = step · lr", ylabel="R̃ = ‖f(x*) − y*‖²", yscale="log", title="Theorem 1: the loss")
axes[1].set(xlabel="t", ylabel="‖θ_t − θ₀‖", yscale="log", title="Theorem 2: the distance")
axes[0].legend(fontsize=7)
axes[1].legend(fontsize=7)
delta = {}
for lam in S.th34_lambdas:
    nl = FLOWS[("always", lam)] if lam > 0 else none
    ln = FLOWS[("linear", lam)]
    d = np.linalg.norm(nl["outputs"] - ln["outputs"], axis=1)
    delta[lam] = d
    axes[2].plot(nl["t"], d, label=f"λ = {lam:g}")
axes[2].set(xlabel="t", ylabel="Δ(t) = ‖f_θt(x*) − f̄_θ̄t(x*)‖", title="Theorems 3–4: the gap")
axes[2].legend(fontsize=7)
fig.tight_layout()
for item in ("Th1", "Th2", "Th3-4"):
    out.savefig(fig, item, params={**S.as_dict(), "lr": LR}, seeds=[0])
plt.show()
out.record(CLAIMS["Th1-gd"], Finding(none["increases"] == 0,
                                     ours=f"{none['increases']} increases in {S.th_steps} steps"))
TH1 = it.monotone_where_pulled(sel_p["increases"], sel_p["pulls"],
                               control_increases=always_p["increases"], steps=S.th_steps)
out.record(CLAIMS["Th1"], TH1)
bound = th.distance_bound(lip_f, res0, S.th_lambda, always["t"])
viol = np.flatnonzero(always["distance"] > bound * (1 + 1e-9))
out.record(CLAIMS["Th2"], Finding(viol.size == 0, ours={
    "Lip(f)": round(lip_f, 3), "final distance": round(float(always["distance"][-1]), 5),
    "bound at T": round(float(bound[-1]), 5),
    "first violation t": None if viol.size == 0 else float(always["t"][viol[0]])},
    detail="Lip(f) estimated on the visited parameters (a lower estimate of the ball's)"))
final = {lam: float(d[-1]) for lam, d in delta.items()}
out.record(CLAIMS["Th3-4"], it.falls_with_lambda(final, inversions=1))
r = 0.5 * float(none["distance"][-1])
lam_o = th.lambda_threshold(lip_f, res0, r)
ball = {}
for lam in S.th34_lambdas:
    if lam == 0:
        continue
    f = FLOWS[("always", lam)]
    out_idx = np.flatnonzero(f["distance"] > r)
    exit_t = float(f["t"][out_idx[0]]) if out_idx.size else None
    ball[lam] = {"exit t": exit_t, "bound": None if lam >= lam_o else th.exit_time_bound(lam, lam_o)}
ok = all((v["exit t"] is None) if lam >= lam_o else (v["exit t"] is None or v["exit t"] >= v["bound"])
         for lam, v in ball.items())
out.record(CLAIMS["Th3-4-ball"], Finding(ok, ours={"r": round(r, 5), "λ_o": round(lam_o, 3),
                                                   **{f"λ={k:g}": v for k, v in ball.items()}},
                                         detail="r = half the λ = 0 final distance (our choice "
                                                "of radius, E-002-Th34)"))
display(Markdown(
    f"Selective pull at λ = {S.th_lambda:g}: from θ₀ it applied on {sel['pulls']} of "
    f"{S.th_steps} steps, from the perturbed start on {sel_p['pulls']}; loss increases "
    f"{sel_p['increases']} (selective) against {always_p['increases']} (always-on, the "
    f"control): Theorem 1 {TH1.verdict}. Theorem 2's bound at T is "
    f"{float(bound[-1]) / float(always['distance'][-1]):.3g}× the distance reached."))
pd.DataFrame({"Lip(f)": [lip_f], "Lip(∇f)": [lip_g], "‖y(0) − y*‖": [res0], "λ_o": [lam_o],
              "Theorem 3 bound at T, λ=th_lambda": [float(th.linearisation_bound(
                  lip_f, lip_g, res0, S.th_lambda, LR * S.th_steps))],
              "Δ(T), λ=th_lambda": [final.get(S.th_lambda, np.nan)]})

# %% [markdown]
# ## Theorem 5 and kernel ridge · the risk from the NTK's eigenvalues, and at convergence
#
# K at θ₀ on the flows' examples, ỹ = y* − f_θ0(x*) (the residual targets), σ ∈ `th5_sigmas`.
# R_KRR = (1/n)‖(I − K(K + σI)⁻¹)ỹ‖² against Theorem 5's bounds with the 1/n and ỹ (the slides
# drop both): a sanity check (the bounds follow from K's eigen-decomposition). Then slide C's
# claim, that regularised fine-tuning *is* kernel ridge regression, at convergence: for each
# λ of `th34_lambdas` the nonlinear model's minimiser θ* of R̃(θ) + (λ/2)‖θ − θ₀‖² (solved to
# convergence, its gradient norm reported) against the closed form f_KRR with σ = λ/2. A
# flow stopped after a fixed number of steps would not do: as λ grows both stay near θ₀ and
# any gap of their risks shrinks, linear model or not. The quantity compared is the relative
# output gap ‖f_θ*(x) − f_KRR(x)‖ / ‖f_KRR(x) − f_θ0(x)‖, which is 0 at every λ for a model
# linear in its parameters and does not shrink merely because both solutions stay near θ₀;
# on the training inputs x* both approach the targets as λ → 0, which forces them together,
# so the claim is judged on `th_n` held-out inputs (the next training examples; f_KRR there
# is f_θ0(x) + K(x, x*)[K + σI]⁻¹ỹ). *Claim test (KRR):* the held-out gap falls strictly as λ
# grows (N/A if a minimiser did not converge).

# %%
X5, _ = DATA["sent"].split("train")
K5 = ms.ntk_at_init(base_cfg, X5[:S.th_n])
ytil = torch.as_tensor(none["y"] - none["f0"])
rows5 = []
for sig in S.th5_sigmas:
    R = th.krr_risk(K5, ytil, sig)
    lo, hi = th.risk_bounds(K5, ytil, sig)
    rows5.append({"sigma": sig, "lower": lo, "R_KRR": R, "upper": hi,
                  "kappa": th.regularised_condition_number(K5, sig)})
R5 = pd.DataFrame(rows5)
out.record(CLAIMS["Th5"], Finding(
    bool(((R5.lower <= R5.R_KRR * (1 + 1e-10)) & (R5.R_KRR <= R5.upper * (1 + 1e-10))).all()),
    ours=R5[["sigma", "lower", "R_KRR", "upper"]].round(6).to_dict("records"),
    detail="the slides' statement drops the 1/n and uses y* for ỹ (B-12)"))
krr_rows = [{"lam": lam, "f_nl": m["f"], "f_krr": m["f_krr"], "f0": m["f0"],
             "f_nl_held": m["f_held"], "f_krr_held": m["f_krr_held"], "f0_held": m["f0_held"],
             "grad_ratio": m["grad_ratio"], "iterations": m["iterations"],
             "R_nl": m["loss"] / S.th_n, "R_KRR": th.krr_risk(K5, ytil, lam / 2)}
            for (kind, lam), m in FLOWS.items() if kind == "minimiser"]
KRR = it.krr_at_convergence(krr_rows)
out.record(CLAIMS["KRR"], KRR.finding)
R5.round(6)

# %%
KT = KRR.table.merge(pd.DataFrame(krr_rows)[["lam", "iterations", "R_nl", "R_KRR"]], on="lam")
fig, ax = plt.subplots(figsize=(6.5, 4))
for col in ("relative gap (train inputs)", "relative gap (held-out inputs)"):
    ax.plot(KT.lam, KT[col], marker="o", label=col)
ax.set(xscale="log", xlabel="λ (σ = λ/2)", ylabel="‖f_θ* − f_KRR‖ / ‖f_KRR − f_θ0‖",
       title="regularised minimiser vs kernel ridge, at convergence")
ax.legend(fontsize=8)
out.savefig(fig, "KRR", params=S.as_dict(), seeds=[0],
            note="Levenberg-Marquardt minimiser of the regularised objective vs closed form")
plt.show()
display(Markdown(
    "Kernel ridge at convergence, held-out inputs: relative output gap "
    + ", ".join(f"{g:.3g} at λ = {lam:g}" for lam, g in zip(KT.lam, KT["relative gap (held-out inputs)"]))
    + f" ({KRR.finding.verdict}); train risk of the nonlinear minimiser "
    + ", ".join(f"{a:.3g}" for a in KT.R_nl) + " against kernel ridge's "
    + ", ".join(f"{b:.3g}" for b in KT.R_KRR) + "."))
KT.round(6)

# %% [markdown]
# ## Theorems 6, 7 and the layer-selection idea
#
# Base set: head + LoRA on q, v of block 2; candidates: LoRA on q, v of block 1, on `ff1` of block
# 1 and on `ff2` of block 2 (the planned three) and, so that a rank correlation can be decided at
# all (it needs four points), on `o_proj` of either block, `ff2` of block 1 and `ff1` of block 2
# (our choice, `CANDIDATES`). K is the base set's margin NTK at θ₀ on `ntk_n`
# examples, S a candidate's (its B matrices: A has zero gradient at B = 0), η = ‖K^{−1/2}SK^{−1/2}‖₂
# (the slides' single bars read as the spectral norm). Then the selection runs: the base set alone and with each candidate, `epochs` epochs at
# λ = `fig_lambda`, `seeds` seeds. *Sanity checks (E-002-Th6, Th7):* Theorem 6's sandwich holds
# for every eigenvalue (1e-8 relative); Theorem 7's two inequalities hold where η ≤ 1 (the
# fraction with η > 1, where it says nothing, is reported, and so is an upper bound ≥ 1 that
# cannot certify a decrease). *Claim test (Sel):* Spearman(η, the candidate's train-loss
# reduction) > 0 over the candidates: each seed's Spearman (reductions paired with the base run
# of the same seed), mean with a t interval over seeds. One seed's candidates share θ₀, the base
# run and the pretraining: one replicate. At `quick` (`seeds` = 2) that is fewer than the 3 a
# verdict needs, so Sel is recorded INCONCLUSIVE there, with its count.

# %%
SEL = nt.selection_runs(S)
X6, _ = DATA["sent"].split("train")
X6 = X6[:S.ntk_n]
rows6 = []
for name, extra in nt.CANDIDATES.items():
    cfg = SEL[(name, 0)]
    model0 = initial_model(cfg)
    base_names = [n for n, p in model0.named_parameters() if p.requires_grad
                  and not any(n.startswith(t + ".") for t in extra)]
    cand_names = [n for n, p in model0.named_parameters() if p.requires_grad
                  and any(n.startswith(t + ".") for t in extra)]
    Kb = ntk.empirical_ntk(model0, X6, params=base_names, output=ms.margin, dtype=torch.float64)
    Sc = ntk.empirical_ntk(model0, X6, params=cand_names, output=ms.margin, dtype=torch.float64)
    sw = th.eigenvalue_sandwich(Kb, Sc)
    yt = torch.as_tensor((2.0 * DATA["sent"].split("train")[1][:S.ntk_n] - 1).double()) \
        - ms.margin(ms.logits(model0, X6)).double()
    rr = th.risk_ratio_bounds(Kb, Sc, yt, S.sigma)
    base_by_seed = np.array([res[SEL[("base", s)]]["history"]["train_loss"].iloc[-1]
                             for s in SEEDS])
    cand_by_seed = np.array([res[SEL[(name, s)]]["history"]["train_loss"].iloc[-1]
                             for s in SEEDS])
    base_loss, cand_loss = base_by_seed.mean(), cand_by_seed.mean()
    verdict = th.rank_layer_candidates(Kb, {name: Sc}, S.sigma)[0]["verdict"]
    rows6.append({"candidate": name, "eta": sw.eta, "sandwich holds": bool(sw.holds),
                  "selection rule": verdict,
                  "kappa base": th.regularised_condition_number(Kb, S.sigma),
                  "kappa with": th.regularised_condition_number(Kb + Sc, S.sigma),
                  "Th7 vacuous (eta >= 1)": bool(rr.vacuous), "Th7 holds": rr.holds,
                  "Th7 upper": rr.upper, "train-loss reduction": base_loss - cand_loss,
                  "reduction by seed": (base_by_seed - cand_by_seed).tolist()})
T6 = pd.DataFrame(rows6)
out.record(CLAIMS["Th6"], Finding(bool(T6["sandwich holds"].all()),
                                  ours=T6.set_index("candidate").eta.round(3).to_dict(),
                                  detail="the lower bound is trivial for S ⪰ 0 (B-14)"))
applicable = T6[~T6["Th7 vacuous (eta >= 1)"]]
out.record(CLAIMS["Th7"], Finding(
    bool(applicable["Th7 holds"].all()) if len(applicable) else None,
    ours={"vacuous (η > 1)": f"{int(T6['Th7 vacuous (eta >= 1)'].sum())} of {len(T6)}",
          "upper bounds": T6["Th7 upper"].round(3).tolist()},
    detail="no candidate has η ≤ 1: the theorem says nothing here (B-15)" if not len(applicable)
    else "upper bound ≥ 1 always: it cannot certify a decrease (B-15)"))
SEL_F = it.selection(dict(zip(T6.candidate, T6.eta)),
                     dict(zip(T6.candidate, T6["reduction by seed"])))
out.record(CLAIMS["Sel"], SEL_F)
display(Markdown(f"Layer selection: {SEL_F.ours}, {SEL_F.verdict}."))
T6.round(4)

# %% [markdown]
# ## Lecture notes (`[ATDL-notes]`) · E16: the NNGP kernel beside the empirical one
#
# At infinite width a random fully connected network's outputs are a Gaussian process whose
# kernel follows the layer recursion K^{l+1} = σ_b² + σ_w² E[φ(u)φ(v)] (`[ATDL-notes]`, the
# *Advanced Topics in Deep Learning* notes, sec. 1.2 remark, after `[Lee2018]`;
# `lalr_core.methods.signal.nngp`: ReLU in closed form, tanh by Gauss–Hermite quadrature). *Sanity
# check (E16, ours; a Monte Carlo rate, it guards the recursion's code):* the empirical kernel of
# random nets of width N has a relative error ~ 1/√N: the error falls with width and error·√N
# stays within a factor 2 across widths.

# %%
Xg = np.random.default_rng(0).standard_normal((20, 10))
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
e16 = {}
for ax, (act, sw2, sb2) in zip(axes, (("relu", 2.0, 0.1), ("tanh", 1.5, 0.05))):
    Kinf = nngp.nngp_kernel(Xg, S.nngp_depth, act, sw2, sb2)[-1]
    errs = {N: nngp.empirical_nngp_kernel(Xg, S.nngp_depth, act, sw2, sb2, N, S.nngp_seeds,
                                          seed=1, sampler="conditional").relative_errors(Kinf)
            for N in S.nngp_widths}
    m = np.array([e.mean() for e in errs.values()])
    ax.errorbar(S.nngp_widths, m, yerr=[e.std() for e in errs.values()], marker="o", label="empirical")
    ax.plot(S.nngp_widths, m[0] * np.sqrt(S.nngp_widths[0] / np.array(S.nngp_widths)), "k--",
            label="∝ 1/√N")
    ax.set(xscale="log", yscale="log", xlabel="width N", ylabel="relative error ‖K̂ − K‖/‖K‖",
           title=f"{act}, depth {S.nngp_depth}, σ_w² = {sw2:g}, σ_b² = {sb2:g}")
    ax.legend(fontsize=8)
    e16[act] = m * np.sqrt(S.nngp_widths)
fig.tight_layout()
out.savefig(fig, "E16", params=S.as_dict(), seeds=[1])
plt.show()
out.record(CLAIMS["E16"], Finding(
    bool(all(np.all(np.diff(v / np.sqrt(S.nngp_widths)) < 0) and v.max() / v.min() < 2
             for v in e16.values())),
    ours={k: np.round(v, 2).tolist() for k, v in e16.items()},
    detail=f"{S.nngp_seeds} random nets per width; the 'conditional' sampler draws each "
           "layer's pre-activations given the previous layer (same law as sampling weights)"))

# %% [markdown] tags=["runs:nlp"]
# ## The source's own setting · RoBERTa-base + LoRA on GLUE (paper; tiny at smoke)
#
# With `nlp_model` (the optional `nlp` extra; the weights and GLUE come from the Hugging Face
# hub, so offline the run stops with an error naming what is missing), the table's λ grid on
# GLUE SST-2 and CoLA, rows 1–3 of the table and κ at θ₀. Every quantity is over the trainable
# parameters only, the LoRA factors and the classifier: the linearisation error and KL need
# one `jvp` at θ₀ with tangent θ_t − θ₀, κ the per-sample Jacobian of the margin on `ntk_n`
# training inputs, both over those parameters (the frozen encoder's weights are constants), so
# they run wherever the fine-tuning does. Claim tests as in table T-002-1 (distance in every
# seed; Spearman with λ by seed, which needs `nlp_seeds` ≥ 2).

# %% tags=["runs:nlp"]
NLP = nt.nlp_runs(S)
if NLP:
    nrows = []
    for (task, lam, seed), c in NLP.items():
        data = c.task.base.data()
        nrows.append({"task": task, "lam": lam, "seed": seed,
                      "pulls": res[c].get("optimizer_stats", {}).get("proximal_pulls", 0),
                      **ms.nlp_numbers(c, res[c], data, ntk_n=S.ntk_n if lam == 0 else 0,
                                       sigma=S.sigma)})
    NT = pd.DataFrame(nrows)
    for task in nt.NLP_TASKS:
        t = NT[NT.task == task]
        detail = "tiny random model on synthetic data" if S.nlp_tiny else ""
        f = it.distance_falls(t)
        out.record(CLAIMS[f"nlp-distance-{task}"], Finding(f.evidence, f.ours,
                                                            "; ".join(filter(None, (f.detail, detail))),
                                                            replicates=f.replicates))
        for q in ("linerr", "kl"):
            out.record(CLAIMS[f"nlp-{q}-{task}"],
                       it.falls_by_seed(t, "lin_error" if q == "linerr" else "kl", f"nlp-{q}-{task}"))
    display(NT.groupby(["task", "lam"]).mean(numeric_only=True).round(4))
else:
    print("nlp_model is empty at this profile: the source's setting is not run")

# %% [markdown]
# ## The theorems' verdicts in one table
#
# One row per check of a claim item (Theorems 1–7, kernel ridge, layer selection), the table
# REPORT.md links those items to.

# %%
CLAIM_ITEMS = ("Th1", "Th2", "Th3-4", "Th5", "Th6", "Th7", "Sel", "KRR")
VERD = pd.DataFrame([{"item": r["item_id"], "claim": r["claim"], "kind": r.get("kind"),
                      "verdict": r["verdict"], "ours": str(r.get("ours"))}
                     for r in out.checks() if r["item_id"] in CLAIM_ITEMS])
out.save_table(VERD, "verdicts", params=S.as_dict(), note="one row per check of a claim item")
display(VERD)

# %% [markdown]
# ## Not in this notebook
#
# IMDb and Yelp (the source's other two datasets) have no synthetic analogue here beyond LONG
# and STARS. Lemma 1 (Lip(k) ≤ 2·Lip(f)·Lip(∇f)) is used, not checked. RoBERTa-base itself
# runs only at `paper` (online, a GPU); here the same code path runs on a tiny random model.

# %%
print(f"notebook compute: {time.perf_counter() - T0:.0f} s")
