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
# # 05 · Second-order methods: quasi-Newton in the class-gradient subspace, the top Hessian eigenvector
#
# **Question.** The Hessian of a classifier's loss is said to have about C large eigenvalues, one
# per class, whose eigenvectors lie near the span of the C class gradients. Does a Newton step
# restricted to that subspace (and plain gradient descent outside it) train faster than SGD? Can
# the top eigenvector be estimated from gradients alone, and used to set the step size?
#
# **Source.** Mark Tuddenham, *Advancing differentiable program optimisation via novel first and
# second-order metrics, and adaptive optimisation strategies*, PhD thesis, School of Electronics
# and Computer Science, University of Southampton, 2026 (author: <https://orcid.org/0000-0002-3428-4051>;
# key `[Tuddenham2026]` in [REFERENCES.md](../REFERENCES.md)): chapter 4 and appendices E, F, H.
# The class-gradient method was first published as Tuddenham, Prügel-Bennett and Hare,
# *Quasi-Newton's method in the class gradient defined high-curvature subspace*, arXiv:2012.01938,
# 2020, <https://arxiv.org/abs/2012.01938> (`[Tuddenham2020]`). The thesis chapter's main
# results are negative: in the thesis the quasi-Newton step ends worse than SGD, the class
# gradients are not orthogonal, and the gradient power iteration with one vector does not
# converge. We test each claim in the thesis's direction, against SGD or a null, whichever way
# it falls; checks that hold by construction are recorded as sanity checks, apart. The thesis
# gives no pass thresholds: every threshold below is ours and
# keeps the direction of the thesis's qualitative claim. Newton, Gauss–Newton, the natural
# gradient, saddles and sharpness as lecture notes present them are notebook 05b's.
#
# **Setting.** `quick` is our reduction to a 2-core CPU, on the sklearn digits (8×8, the
# collection's fixed 1347 / 450 split; held-out numbers are on the 450 test images), with
# BasicCNN at half width (16 channels, batch norm) standing in for the thesis's ResNet-9 (both
# normalise their batches) and BasicCNN without batch norm at a quarter width (1,338 parameters)
# where the exact Hessian is needed. The known-matrix experiments of listing F.1 and appendix H
# run at the source's own scale. `paper`: ResNet-9 / CIFAR-10, batch 1024, 50 epochs (fig 4.6's
# caption; app. E.4 for the tables), 3 seeds. The thesis shows one run per setting; comparisons
# here are paired by seed (same initialisation and batch order) and judged on 95 % intervals
# (`lalr_core.core.results.evidence`).
#
# **The method** (`lalr_core.methods.class_subspace.optimizer`, optimiser `"qn_class_subspace"`,
# thesis sec. 4.3.4). Class gradients c_k (the mean gradient of logit k over the class-k examples
# of a batch, eq. 4.25) and the eigenvalue estimates λ_k (eq. 4.35) are smoothed with rate
# γ = 0.9 (app. E.4); the step (eq. 4.33) is the Newton step along v_k = c_k/‖c_k‖ plus the
# gradient step on the rest. The optimiser gathers the class gradients by hooks during the
# loop's own backward pass (one extra backward per class), so the shared training loop is
# unchanged. Choices where the source is silent (weight decay added to g as torch's SGD does; a
# class absent from a batch keeps its state; no momentum in the QN step, as eq. 4.33 has none)
# are named in the module. The chapter's runs, and the numbers each check judges, are functions
# of `lalr_core.chapters.ch05_quasi_newton`.

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

from lalr_core.chapters import ch05_quasi_newton as ch05
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.style import set_style
from lalr_core.core.results.writer import FigureWriter
from lalr_core.core.runs.units import train_runs
from lalr_core.methods.class_subspace import probe as subspace_probe
from lalr_core.methods.curvature import test_functions
from lalr_core.methods.trajectory import cos_threshold

S = ch05.CHAPTER.settings(profile, overrides)   # validated before any compute
out = FigureWriter("05_quasi_newton", profile, "05_quasi_newton.ipynb")
QUOTES = ch05.QUOTES
CLAIMS = ch05.CLAIMS
set_style()
T0 = time.perf_counter()
STYLE = {"sgd": dict(color="C0", label=ch05.LABELS["sgd"]),
         "sgdm": dict(color="C0", label=ch05.LABELS["sgdm"]),
         ch05.QN: dict(color="C3", label=ch05.LABELS[ch05.QN])}
pd.Series(S.as_dict(), dtype=object).to_frame("setting")

# %% [markdown]
# ## Training · every run in one cached, resumable sweep
#
# Fig 4.6's SGD and quasi-Newton runs (and the same pair at `diverge_lr`), tables E.1 / E.2's
# SGDM and quasi-Newton runs at three learning rates, and fig 4.11's small CNN (its final weights).
# (Without a GPU at the paper profile, `make figures` trains only the sections placed here.)

# %%
cfgs, cbs = ch05.CHAPTER.all_runs(S)
res = dict(zip(cfgs, train_runs(cfgs, callbacks=cbs, workers=S.workers), strict=True))
SEEDS = range(S.seeds)

# %% tags=["runs:fig4.6", "runs:tableE"]
F46 = {k: res[c] for k, c in ch05.fig46_runs(S).items()}
DIV = {k: res[c] for k, c in ch05.fig46_runs(S, S.diverge_lr).items()}
TAB = {k: res[c] for k, c in ch05.table_runs(S).items()}

# %% [markdown] tags=["runs:fig4.6", "runs:tableE"]
# ## Fig 4.6 · validation loss, SGD vs quasi-Newton
#
# *Source (sec. 4.3.5):* with the same hyper-parameters (lr 0.01, momentum 0, weight decay 5e-4),
# the quasi-Newton method is "much more volatile, slower to improve in general, and does end on
# average with lower accuracy"; both diverge for η > 10⁻¹. *Claim tests (ours, each in the
# thesis's direction against SGD, paired by seed):* (1) lower final accuracy: SGD's final
# held-out accuracy minus QN's > 0; (2) slower to improve: QN's held-out loss averaged over the
# epochs minus SGD's > 0; (3) more volatile: QN's detrended volatility minus SGD's > 0, where the
# detrended volatility is the RMS of the second differences of the log held-out loss (the spread
# of the first differences grows with the speed of descent; the second difference of a smooth
# exponential decay is zero, so only the wobble around the trend remains); (4) every run of both
# diverges at `diverge_lr` = 0.5, five times the bound the thesis names (NaN, or a final loss
# above the initial ln 10): a bool that holds in every one of the `seeds` seeds (its replicates).

# %% tags=["runs:fig4.6", "runs:tableE"]
fig, ax = plt.subplots(figsize=(7, 4.5))
for arm in ch05.ARMS:
    curves = np.stack([ch05.held_out_loss(F46[(arm, s)]) for s in SEEDS])
    e = np.arange(1, curves.shape[1] + 1)
    for c in curves:
        ax.plot(e, c, color=STYLE[arm]["color"], alpha=0.25, lw=0.8)
    ax.plot(e, np.nanmean(curves, 0), lw=2, **STYLE[arm])
ax.set(xlabel="epoch", ylabel="held-out loss", yscale="log",
       title=f"fig 4.6 (reduced): lr {S.fig46_lr:g}, {S.seeds} seeds (thin) and their mean")
ax.legend()
out.savefig(fig, "fig4.6", params=S.as_dict(), seeds=list(SEEDS))
plt.show()

# %% tags=["runs:fig4.6", "runs:tableE"]
R46 = ch05.fig46(F46, DIV, SEEDS, S.diverge_lr)
for cid, finding in (("fig4.6-accuracy", R46.accuracy), ("fig4.6-slower", R46.slower),
                     ("fig4.6-volatile", R46.volatile), ("fig4.6-diverge", R46.diverge)):
    out.record(CLAIMS[cid], finding)
R46.numbers.rename(columns=ch05.LABELS).round(4)

# %% [markdown] tags=["runs:fig4.6", "runs:tableE"]
# ## Tables E.1 / E.2 · accuracy and loss of QN and SGDM at three learning rates
#
# *Settings (app. E.4):* SGDM momentum 0.9, QN γ = 0.9, no weight decay; the thesis does not state
# the model, epochs, number of runs or split: at paper we take fig 4.6's ResNet-9 / CIFAR-10 (the
# chapter's other comparison), here the digits. *Source (app. E.1):* QN is below SGDM at every
# η, and more so at small η (its numbers are beside ours; at quick the data and model differ, so
# they are context, not a target). *Claim tests (ours, paired by seed):* SGDM's final accuracy
# minus QN's > 0 at every η (the least favourable η decides); QN's loss degrades more as η
# falls: (QN(0.01) − QN(0.1)) − (SGDM(0.01) − SGDM(0.1)) > 0.

# %% tags=["runs:fig4.6", "runs:tableE"]
source = pd.read_csv(ch05.REFERENCE_TABLE)
table = ch05.table_e(TAB, source, S.table_lrs, ch05.TABLE_ARMS, SEEDS, ch05.LABELS)
for item, cols, what in (("tableE.1", ["accuracy (%)", "source accuracy (%)"], "accuracy (%)"),
                         ("tableE.2", ["loss", "source loss"], "loss")):
    out.save_table(table[["lr", "method", *cols]], item, params=S.as_dict(),
                   note=f"final held-out {what}, mean of {S.seeds} seeds; the source's beside")
table.round(3)

# %% tags=["runs:fig4.6", "runs:tableE"]
RTAB = ch05.table_e_findings(TAB, S.table_lrs, SEEDS)
out.record(CLAIMS["tableE.1"], RTAB.accuracy)
out.record(CLAIMS["tableE.2"], RTAB.degrades)

# %% [markdown] tags=["runs:fig4.7-4.9+E.1"]
# ## Figs 4.7–4.9 · the three assumptions of the class-subspace step, along one training run
#
# *Source (sec. 4.3.6):* the step rests on three assumptions, each checked along a 50-epoch
# ResNet-9 run: (4.1) logit curvature is negligible next to logit gradients, q^LC ≪ 1 (eqs.
# 4.36–4.39; fig 4.7, log scale); (4.2) the logit gradients cluster per class, q^SL high (eq. 4.40,
# the measure of Fort and Ganguli, *Emergent properties of the local geometry of neural loss
# landscapes*, arXiv:1910.05929, 2019, <https://arxiv.org/abs/1910.05929>; fig 4.8); (4.3) the
# class gradients are orthogonal, q^GC ≈ 0 (eq. 4.41; fig 4.9, one value per batch), which the
# thesis finds false. It does not say which run the metrics come from, nor how q^LC's P × P logit
# Hessians were obtained for 6.5M parameters.
#
# *Here* (`lalr_core.methods.class_subspace.probe`, the `class_subspace_probe` callback on an ordinary
# run of the shared loop, which leaves the training bit-identical): at smoke / quick one run of
# fig 4.11's network (BasicCNN without batch norm at a quarter width, 1,338 parameters, SGDM
# 0.05 / 0.9, 20 epochs); at paper fig 4.6's SGD run of seed 0 (ResNet-9; the baseline of the
# chapter's main comparison, since the thesis does not name the run).
# q^LC from exact per-example Hessians of each example's own logit (`torch.func`, float64) for the
# first `probe_lc_per_class` training images of each class, at the start and `probe_lc_points` − 1
# more points (paper: 32 sampled Hessian columns per example, as exact logit Hessians of
# 6.5M parameters do not fit in memory); q^SL on the first `probe_sl_per_class` images per class
# every `probe_sl_every` steps (N in eq. 4.40 read as N_k, the class's count, so that each class's
# mean cosine is over its own pairs); q^GC at every step from the batch's own class gradients
# (taken inside the loop's backward), both as printed (eq. 4.41 sums over l < k but divides by
# C(C − 1): half the mean pairwise cosine) and as the mean over pairs. Per-example probes run in
# eval mode. *Deviation:* with plain SGD at lr 0.05 our stand-in network does not learn in 20
# epochs (14 % held-out accuracy), so this run uses fig 4.11's SGDM 0.05 / 0.9.
#
# *What these checks can say.* Figs 4.7–4.9 (and 4.11, E.1) are one run each, as in the thesis:
# their checks are booleans (or intervals over the batches) of that one run, one independent
# replicate, so each claim verdict is recorded INCONCLUSIVE (a verdict needs >= 3 independently
# seeded runs, which the quick profile cannot afford); the numbers are kept. At smoke / quick the
# network has neither batch norm nor skip connections, the two features the thesis blames for
# the class gradients' non-orthogonality (fig 4.9); a verdict here says nothing about them (at
# paper figs 4.7–4.9 ride on the ResNet-9, which has both).

# %% tags=["runs:fig4.7-4.9+E.1"]
PRUNS = ch05.probe_runs(S)
# cache hits (the sweep above trained these units); looked up by config *and* callbacks
PRES = dict(zip(PRUNS, train_runs([c for c, _ in PRUNS.values()],
                                  callbacks=[cb for _, cb in PRUNS.values()], workers=1),
                strict=True))
PM = PRES["metrics"]["callbacks"][subspace_probe.NAME]
P_M = PM["num_parameters"]
LC, SL, GC = subspace_probe.q_lc_by_step(PM["lc"]), subspace_probe.q_sl_by_step(PM["sl"]), PM["gc"]
RANDOM_M = ch05.random_cosine_scale(P_M)
mcfg = PRUNS["metrics"][0]
pd.Series({"run": f"{mcfg.model} (width {mcfg.width:g}) / {mcfg.dataset}, {mcfg.optimizer} "
                  f"lr {mcfg.lr:g}, momentum {mcfg.momentum:g}, wd {mcfg.wd:g}, batch "
                  f"{mcfg.batch_size}, {mcfg.epochs} epochs",
           "parameters P": P_M, "steps": len(PRES["metrics"]["steps"]),
           "final held-out accuracy (%)": ch05.final_accuracy(PRES["metrics"]),
           "q^LC records": len(LC), "q^SL records": len(SL), "q^GC records": len(GC),
           "steps without class gradients": PM["missed_steps"]}, dtype=object).to_frame("")

# %% [markdown] tags=["runs:fig4.7-4.9+E.1"]
# ### Fig 4.7 · logit curvature against logit gradients, q^LC
#
# *Source:* the ratio is "very small, and remains small for the full duration of training"; it
# is higher at initialisation. No number is given. *Checks (ours):* q^LC < 0.1 at every
# checkpoint; and (the source's second sentence) the first value is the largest. q^LC = u / f² has
# the units of 1 / logit (scaling the logits by a scales it by 1 / a), so its size depends on the
# network's output scale: compare the logit gradients at initialisation and at the end (column f
# below).

# %% tags=["runs:fig4.7-4.9+E.1"]
fig, ax = plt.subplots(figsize=(7, 4.2))
ax.scatter(PM["lc"].step, PM["lc"].ratio, s=8, alpha=0.35, color="C0", label="one probe example")
ax.plot(LC.step, LC.q_lc, "o-", color="C3", lw=2, label="q^LC (eq. 4.39)")
ax.axhline(0.1, ls="--", color="grey", lw=1, label="our bound 0.1")
ax.set(yscale="log", xlabel="step", ylabel="u / f²",
       title=f"fig 4.7 (reduced): q^LC along the run, P = {P_M:,}"
             + (f", {S.probe_lc_columns} sampled columns" if S.probe_lc_columns else ", exact"))
ax.legend(fontsize=8)
out.savefig(fig, "fig4.7", params=S.as_dict(), seeds=[mcfg.seed])
plt.show()

# %% tags=["runs:fig4.7-4.9+E.1"]
R479 = ch05.fig47_49(LC, SL, GC, RANDOM_M)
out.record(CLAIMS["fig4.7-small"], R479.lc_small)
out.record(CLAIMS["fig4.7-start"], R479.lc_start)
PM["lc"].groupby("step")[["f", "u", "ratio"]].mean().join(LC.set_index("step")).round(6)

# %% [markdown] tags=["runs:fig4.7-4.9+E.1"]
# ### Fig 4.8 · same-class logit-gradient similarity, q^SL
#
# *Source:* "the logit gradients are clustered per class … whilst the clustering relaxes during
# training, the similarity remains high", matching Fort and Ganguli. *Checks (ours):* q^SL stays
# above the random-vector scale 10/√P (app. A.1.4) at every record; q^SL at
# the end is below q^SL at the start.

# %% tags=["runs:fig4.7-4.9+E.1"]
fig, ax = plt.subplots(figsize=(7, 4.2))
for k, g in PM["sl"].groupby("label"):
    ax.plot(g.step, g.q_sl, lw=0.6, alpha=0.4, color="C0")
ax.plot(SL.step, SL.q_sl, lw=2, color="C3", label="q^SL (eq. 4.40)")
ax.axhline(RANDOM_M, ls="--", color="grey", lw=1, label="10/√P (random vectors)")
ax.set(xlabel="step", ylabel="mean cosine, same class", ylim=(min(0, SL.q_sl.min()), 1.02),
       title=f"fig 4.8 (reduced): q^SL along the run (thin: one class), "
             f"{S.probe_sl_per_class} images per class")
ax.legend(fontsize=8)
out.savefig(fig, "fig4.8", params=S.as_dict(), seeds=[mcfg.seed])
plt.show()

# %% tags=["runs:fig4.7-4.9+E.1"]
out.record(CLAIMS["fig4.8-high"], R479.sl_high)
out.record(CLAIMS["fig4.8-relaxes"], R479.sl_relaxes)
SL.iloc[np.unique(np.linspace(0, len(SL) - 1, 8).astype(int))].round(4)

# %% [markdown] tags=["runs:fig4.7-4.9+E.1"]
# ### Fig 4.9 · inter-class class-gradient cosine per batch, q^GC
#
# *Source:* the class gradients "are not orthogonal"; q^GC is higher than Fort and Ganguli's and
# lower than q^SL ("the logit gradients are more correlated with other logit gradients for data in
# the same class than they are for logit gradients of different classes"). *Checks (ours):* not
# orthogonal: the share of batches with q^GC > 0 is above the 1/2 that orthogonal (sign-
# symmetric) class gradients would give, on its exact binomial interval (successive batches are
# not independent, so the interval is too narrow); mean q^SL > mean q^GC, judged with the mean
# over pairs (twice the printed value, so the stricter reading).

# %% tags=["runs:fig4.7-4.9+E.1"]
fig, ax = plt.subplots(figsize=(8, 4.2))
ax.plot(GC.step, GC.q_gc, lw=0.7, color="C0", label="q^GC, eq. 4.41 as printed")
ax.plot(GC.step, GC.q_gc_pairs, lw=0.7, color="C1", alpha=0.7, label="mean cosine over pairs")
ax.plot(SL.step, SL.q_sl, lw=2, color="C3", label="q^SL (fig 4.8)")
ax.axhline(0, color="k", lw=0.6)
ax.set(xlabel="step (one batch each)", ylabel="cosine",
       title=f"fig 4.9 (reduced): q^GC of every batch ({mcfg.batch_size} images)")
ax.legend(fontsize=8)
out.savefig(fig, "fig4.9", params=S.as_dict(), seeds=[mcfg.seed])
plt.show()

# %% tags=["runs:fig4.7-4.9+E.1"]
out.record(CLAIMS["fig4.9-overlap"], R479.gc_overlap)
out.record(CLAIMS["fig4.9-contrast"], R479.gc_contrast)
GC[["q_gc", "q_gc_pairs"]].describe().T.round(4)

# %% [markdown] tags=["runs:fig4.7-4.9+E.1"]
# ## Fig E.1 · class-gradient directions against the top-C Hessian eigenvectors (appendix E.3)
#
# *Source:* with the per-batch class-gradient directions v_k collected while training "a simple
# 60k parameter CNN on CIFAR-10" for 50 epochs and the full eigensystem at the end, (a) the rank of
# [v_1, …, v_C, e_1, …, e_C] "quickly declines from 2C … to consistently being C", with some
# batches at C + 1 or C + 2; (b) the cosine-maximised linear assignment of class gradients to the
# top-C eigenvectors has mean ≈ 0.36, against ~10⁻³ for random vectors. *Here:* fig 4.11's
# network and run (the same network as figs 4.7–4.9 at quick; at paper BasicCNN without batch norm
# at width 2, on CIFAR-10); the normalised class gradients of every batch
# (paper: every step of the first `e1_store_first`, then every `e1_store_every`-th); the top-C
# eigenvectors of the Hessian of the mean training loss on the first `hessian_examples` training
# images at the final weights (exact `curvature.dense_hessian` in float64 up to 6,000 parameters,
# else Lanczos). *Choices:* e_1..e_C rather than the printed e_0..e_C (C + 1 vectors; the text
# compares C directions with "the top-C eigenvectors"); the numerical rank counts singular values
# of the unit-normalised stack above τ·σ_max, τ = `e1_rtol` (0.05 and 0.2 shown too), because any
# 2C generic vectors are numerically of full rank and the thesis names no tolerance; (b) uses the
# last batch's class gradients (the source does not say which), rows in class order and columns
# permuted so the assigned eigenvector is on the diagonal (the source does not describe the
# plot); a class absent from a batch is left out of that batch.
# *Checks (ours):* (b) against random directions: the Hungarian mean |cos| of `len(E)` random
# Gaussian directions against the same eigenvectors is drawn 200 times, and the mean over the
# last 20 % of the batches minus that null's 99th percentile must be > 0 (t interval over those
# batches, which are not independent); the source's ≈ 0.36 (against ~10⁻³ for random vectors) is
# its effect; (a) the rank falls to C: the median rank over the last 20 % of the steps is at
# most C + 2 (the source's "some batches at C + 1 or C + 2") and below the median over the first
# 10 %. One run (see figs 4.7–4.9 on what a single run without batch norm or skips can say).
# A numerical rank hinges
# on τ (the source blames "precision error in calculating the rank"), so panel (a) also shows a
# measure without a tolerance: the mean share ‖E v_k‖² of each direction inside the span of the
# top-C eigenvectors (1 if the spans coincide, about C/P for a random direction).

# %% tags=["runs:fig4.7-4.9+E.1"]
scfg = PRUNS["subspace"][0]
PS = PRES["subspace"]["callbacks"][subspace_probe.NAME]
model_e, Xe, ye = ch05.hessian_problem(scfg, PRES["subspace"]["callbacks"]["weights"],
                                       S.hessian_examples)
D, CNT, DSTEPS = PS["directions"], PS["direction_counts"], PS["direction_steps"]
C_E, P_E = D.shape[1], D.shape[2]
lam_e, E = subspace_probe.top_hessian_eigenvectors(model_e, Xe, ye, k=C_E, tol=S.lanczos_tol)
E1 = ch05.class_subspace_alignment(D, CNT, DSTEPS, E, len(PRES["subspace"]["steps"]), S.e1_rtol)
cos_h = ch05.class_gradient_cosine(model_e, Xe, ye, E)    # same examples as the Hessian
NULL_E1 = ch05.random_assignment_null(E)                  # random directions against the same E

# %% tags=["runs:fig4.7-4.9+E.1"]
fig, (ax, bx) = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [1.5, 1]})
for tau in E1["taus"]:
    ax.plot(DSTEPS, E1["ranks"][tau], lw=1.6 if tau == S.e1_rtol else 0.7,
            alpha=1 if tau == S.e1_rtol else 0.6, label=f"τ = {tau:g}")
ax.axhline(C_E, color="k", lw=0.6, ls="--")
ax.axhline(2 * C_E, color="k", lw=0.6, ls=":")
ax.set(xlabel="step", ylabel="rank of [v_1..v_C, e_1..e_C]", ylim=(0, 2 * C_E + 1),
       title="fig E.1a (reduced): numerical rank per batch")
ax.legend(fontsize=8, loc="lower left")
ax2 = ax.twinx()
ax2.plot(DSTEPS, E1["energy"], color="C7", lw=0.8, label="mean ‖E v_k‖² (right)")
ax2.plot(DSTEPS, E1["hungarian"], color="C8", lw=0.8, label="Hungarian mean |cos| (right)")
ax2.set(ylim=(0, 1), ylabel="share in span(e) / |cos|")
ax2.legend(fontsize=8, loc="lower right")
rows_a, cols_a = E1["assigned"]
im = bx.imshow(E1["cosines"][:, cols_a], vmin=0, vmax=1, cmap="viridis")
bx.set(xlabel="assigned eigenvector (rank in the spectrum)", ylabel="class",
       xticks=range(len(cols_a)), xticklabels=[str(j + 1) for j in cols_a],
       yticks=range(len(rows_a)), yticklabels=[str(k) for k in E1["classes_last"]],
       title=f"fig E.1b (reduced): |cos|, last batch\nHungarian mean {E1['cos_last']:.3f}")
fig.colorbar(im, ax=bx, shrink=0.8)
out.savefig(fig, "figE.1", params=S.as_dict(), seeds=[scfg.seed])
plt.show()

# %% tags=["runs:fig4.7-4.9+E.1"]
RE1 = ch05.fige1(E1, NULL_E1, C_E, S.e1_rtol)
out.record(CLAIMS["figE.1-cosine"], RE1.cosine)
out.record(CLAIMS["figE.1-rank"], RE1.rank)
pd.DataFrame({f"τ = {tau:g}": {"median rank, first 10 %": E1["median_early"][tau],
                               "median rank, last 20 %": E1["median_late"][tau],
                               "min": float(np.nanmin(ranks)), "max": float(np.nanmax(ranks)),
                               "steps at rank C (%)": 100 * float(np.mean(ranks == C_E))}
              for tau, ranks in E1["ranks"].items()}).T.round(2).assign(**{
    "top eigenvalues": ", ".join(f"{v:.3g}" for v in lam_e.tolist()),
    "Hungarian |cos|, last batch": round(E1["cos_last"], 4),
    "... on the Hessian's examples": round(float(cos_h), 4),
    "random null's q99": round(RE1.null_q99, 4),
    "mean ‖E v_k‖², first 10 % → last 20 %": f"{np.nanmean(E1['energy'][E1['early']]):.3f} → "
                                            f"{np.nanmean(E1['energy'][E1['late']]):.3f}"})

# %% [markdown] tags=["runs:fig4.10"]
# ## Fig 4.10 · held-out loss over batch sizes, SGD vs quasi-Newton
#
# *Source (sec. 4.3.7.1):* to see whether mini-batch noise causes the quasi-Newton method's
# deficit, a small CNN is trained on MNIST (50 000 training images) with batches up to the full
# batch, lr 10⁻², curves "averaged over multiple runs". SGD outperforms QN "at all batch sizes,
# but not in the early epochs": QN starts faster, then "there comes a crossover point where SGDM
# overtakes and continues to have better performance regardless of the batch size", and smaller
# batches cross over within the first epoch. The thesis concludes that batch noise "is not a root
# of the performance deficit".
# *Here* (`quick`): the 1347 digits, BasicCNN at half width with batch norm (fig 4.6's model),
# batch sizes 1347 (full), 337 and 90, each run about `bs_steps` = 100 optimiser steps (epochs
# scaled: 100, 25 and 7), plain SGD (the caption's "standard SGD"; the text says SGDM) and QN
# (γ = 0.9, app. E.4), no weight decay, `bs_seeds` seeds paired by seed. `paper`: MNIST (50 000),
# the caption's lr 0.01, batch sizes `50000, 32768, 16384, 8192, 4096` (ours: the thesis
# names only "≥ 32768" and the full batch, so we halve down from 32 768), 500 steps, BasicCNN at
# full width.
# *Deviations (quick):* lr 0.1 (`bs_lr`), not the caption's 0.01: exploratory runs at 0.01 had
# QN ahead at every batch size throughout, SGD having barely started, so the lr was raised to
# make a crossover testable at an affordable length. That move was made after seeing the data,
# so the same sweep also runs at the caption's lr (`bs_source_lr`) and is judged on the same
# claim: that verdict is the one at the source's setting. Batch 90, not 1347/16 = 84, whose last
# batch of 3 examples takes a step and resets batch norm's running statistics right before each
# evaluation (held-out spikes). `bs_steps` steps per run (the chapter's time budget: the QN
# step at full batch is the costly one).
# *Claim tests (ours, paired by seed):* (i) QN ahead early: SGD's held-out loss minus QN's > 0
# after about one epoch of the smallest batch's steps (the first epoch ending at ≥ that many
# steps), at every batch size; (ii) SGD overtakes at every batch size, the full batch included
# (the thesis's point: batch noise is not the cause): QN's final held-out loss minus SGD's > 0 at
# each, the least favourable size deciding; (iii) the crossover epoch (per seed: the first epoch
# from which SGD stays below QN to the end) is no later for smaller batches in every seed (the
# seed-mean curves' crossovers are shown beside), judged only when every batch size has a
# crossover in every seed (a missing one is not "late": (ii) carries it, and (iii) is then N/A);
# (iv) claim (ii) at the caption's lr 0.01.

# %% tags=["runs:fig4.10"]
F410 = {k: res[c] for k, c in ch05.fig410_runs(S).items()}
SEEDS410 = range(S.bs_seeds)
RUNS410 = {(arm, bs): [F410[(arm, bs, s)] for s in SEEDS410]
           for bs in S.bs_batch_sizes for arm in ch05.ARMS}
MEAN410 = {key: ch05.mean_curve(runs) for key, runs in RUNS410.items()}
F410_SRC = {k: res[c] for k, c in ch05.fig410_runs(S, S.bs_source_lr).items()}
RUNS410_SRC = {(arm, bs): [F410_SRC[(arm, bs, s)] for s in SEEDS410]
               for bs in S.bs_batch_sizes for arm in ch05.ARMS}
n410, early_steps = ch05.fig410_train_size(S), ch05.fig410_early_steps(S)
R410 = ch05.fig410(RUNS410, S.bs_batch_sizes, early_steps, RUNS410_SRC, S.bs_source_lr)
CROSS410 = R410.crossovers

# %% tags=["runs:fig4.10"]
fig, axes = plt.subplots(1, len(S.bs_batch_sizes), figsize=(4.6 * len(S.bs_batch_sizes), 4),
                         sharey=True)
for ax, bs in zip(axes, S.bs_batch_sizes):
    for arm in ch05.ARMS:
        for run in RUNS410[(arm, bs)]:
            loss = ch05.held_out_loss(run)
            ax.plot(np.arange(1, len(loss) + 1), loss, color=STYLE[arm]["color"], alpha=0.25,
                    lw=0.8)
        ax.plot(np.arange(1, len(MEAN410[(arm, bs)]) + 1), MEAN410[(arm, bs)], lw=2,
                color=STYLE[arm]["color"], label=ch05.LABELS[arm])
        src = ch05.mean_curve(RUNS410_SRC[(arm, bs)])
        ax.plot(np.arange(1, len(src) + 1), src, lw=1.2, ls="--", color=STYLE[arm]["color"],
                label=f"{ch05.LABELS[arm]}, lr {S.bs_source_lr:g}")
    if CROSS410[bs] is not None:
        ax.axvline(CROSS410[bs], color="grey", ls=":", lw=1)
    ax.set(xlabel="epoch", yscale="log", title=f"batch {bs}"
           f"{' (full)' if bs >= n410 else ''}: {int(np.ceil(n410 / bs))} step(s)/epoch")
axes[0].set_ylabel("held-out loss")
axes[0].legend()
fig.suptitle(f"fig 4.10 (reduced): lr {S.bs_lr:g}, ~{S.bs_steps} steps per run, {S.bs_seeds} "
             f"seeds (thin) and their mean; dashed: the seed mean at lr {S.bs_source_lr:g}; "
             "dotted: crossover")
out.savefig(fig, "fig4.10", params=S.as_dict(), seeds=list(SEEDS410))
plt.show()

# %% tags=["runs:fig4.10"]
for cid, finding in (("fig4.10-early", R410.early), ("fig4.10-overtakes", R410.overtakes),
                     ("fig4.10-order", R410.order), ("fig4.10-source-lr", R410.source_lr)):
    out.record(CLAIMS[cid], finding)

# %% tags=["runs:fig4.10"]
pd.DataFrame({f"batch {bs}": {
    "epochs": len(MEAN410[("sgd", bs)]), "steps": F410[("sgd", bs, 0)]["history"]["step"].iloc[-1],
    f"QN − SGD final loss at lr {S.bs_lr:g}": R410.overtake_parts[f"batch {bs}"].estimate,
    f"QN − SGD final loss at lr {S.bs_source_lr:g}": R410.source_parts[f"batch {bs}"].estimate,
    "final loss SGD": np.nanmean(ch05.per_seed(RUNS410[("sgd", bs)], ch05.final_loss)),
    "final loss QN": np.nanmean(ch05.per_seed(RUNS410[(ch05.QN, bs)], ch05.final_loss)),
    "crossover epoch": CROSS410[bs]} for bs in S.bs_batch_sizes}).T.round(4)

# %% [markdown] tags=["runs:fig4.11"]
# ## Fig 4.11 · the top of the Hessian's spectrum
#
# *Source (sec. 4.3.7.2):* the top 30 eigenvalues of the true Hessian of a ~60k-parameter CNN:
# most near zero, a few large; C "seems a reasonable cut-off", but C could not be read off the
# spectrum. The thesis does not describe that CNN; here: BasicCNN without batch norm at a
# quarter width (1,338 parameters), trained 20 epochs with SGDM (0.05 / 0.9), and the exact
# Hessian of its mean loss on the first `hessian_examples` training images (float64,
# `curvature.dense_hessian`), fully diagonalised. *Deviation:* not all 1347 training images: 256
# keep the cell within the chapter's time budget (the Hessian costs P = 1,338 Hessian-vector
# products over the examples). *Checks (ours):* the top eigenvalue exceeds 10× the median of the
# 30 plotted; more than 90 % of all eigenvalues have |λ| < 0.01 λ_max. Lanczos (`eigsh`) on the
# same operator is checked against the dense result. A network above 12,000 parameters (the
# paper profile's 85,898, near the source's ~60k) is not diagonalised: its dense Hessian would
# take 59 GB, so Lanczos gives the top 30 alone and the "near zero" check is N/A there. One run, of a network without batch norm or
# skips (see figs 4.7–4.9).

# %% tags=["runs:fig4.11"]
hcfg = ch05.hessian_run(S)
model_h, Xh, yh = ch05.hessian_problem(hcfg, res[hcfg]["callbacks"]["weights"],
                                       S.hessian_examples)
hessian_eigs, lanczos, n_params = ch05.hessian_spectrum(model_h, Xh, yh, tol=S.lanczos_tol)
spec = ch05.spectrum_numbers(hessian_eigs, n_params)
pd.DataFrame({"dense eigvalsh" if len(hessian_eigs) == n_params else "Lanczos top 30":
              np.sort(hessian_eigs)[::-1][:5], "Lanczos (eigsh)": lanczos,
              }).assign(rel_diff=lambda d: (d["Lanczos (eigsh)"] / d.iloc[:, 0] - 1).abs())

# %% tags=["runs:fig4.11"]
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.plot(np.arange(1, 31), spec["top"], "o-")
ax.set(xlabel="index (ascending)", ylabel="eigenvalue",
       title=f"fig 4.11 (reduced): top 30 of {n_params} Hessian eigenvalues, "
             f"{len(yh)} examples")
out.savefig(fig, "fig4.11", params=S.as_dict(), seeds=[0])
plt.show()
R411 = ch05.fig411(spec, n_params)
out.record(CLAIMS["fig4.11-large"], R411.large)
out.record(CLAIMS["fig4.11-zero"], R411.zero)

# %% [markdown]
# ## Figs 4.12, 4.13, 4.17, 4.18 · power iteration on a known matrix (listing F.1, fixed)
#
# H = XᵀX with X ~ N(0, 1) of 100 × 100. *Fig 4.12 (sec. 4.4.1):* power iteration with the
# Hessian itself (stop when the estimate ‖Hv‖ changes by < 0.05). *Fig 4.13 (sec. 4.4.2):* the
# same using only the gradient of one random point, g = H r with r ~ 0.1·N(0, I): "neither value
# is converging". *Fig 4.17A (sec. 4.4.3.3):* 1000 such gradients per iterate. *Figs 4.17B,
# 4.18:* a rolling window of the last s gradients, one replaced per iterate (s = 1000 as fig
# 4.17B's caption; the listing's default 100 is fig 4.18's first panel). Listing F.1's bugs
# (removed `torch.eig` and unsorted eigenvalues, the undefined `li_norm`, no seeds, float32,
# unnormalised start) are fixed in `lalr_core.methods.curvature.top_eigen` and named there.
# *Checks (ours):* 4.12: |cos φ| > 0.99 at the stop and the estimate within 1 %; also over
# `known_seeds` matrices (the stop rule is absolute, so a small eigen-gap can stop it early);
# 4.13: mean |cos φ| over the last 50 iterates < 0.5 and the estimate's coefficient of variation
# > 0.2; 4.17A: |cos φ| > 0.98 over the last 10 iterates and the estimate within 5 %; 4.17B: mean
# |cos φ| over the last 1000 iterates > 0.9 with dips below 0.97; 4.18: the late mean |cos φ|
# rises and its spread falls as s grows. The thesis prints no numbers for these figures; the
# numbers beside ours are a first numpy run of listing F.1 at the thesis's size. These are
# *sanity checks*: properties of power iteration on a fixed matrix (a random product per iterate
# cannot converge; averaging more of them must), which guard the code and are not counted as
# verdicts on the thesis.

# %%
PI = ch05.power_iteration_runs(S.known_size)
H0, lam0, v0 = PI["H"], PI["lam"], PI["v"]
r412, r413, r417a = PI["fig4.12"], PI["fig4.13"], PI["fig4.17a"]


def power_panels(col, r, title):
    """cos φ (top) and the eigenvalue estimate (bottom) of one power-iteration run."""
    col[0].plot(np.arange(1, r.iters + 1), r.cos, lw=0.8)
    col[0].set(ylim=(-1.05, 1.05), ylabel="cos φ", title=title)
    col[1].plot(np.arange(1, r.iters + 1), r.values, lw=0.8)
    col[1].axhline(lam0, color="C1", label="true λ")
    col[1].set(xlabel="iterate", ylabel="λ estimate")
    col[1].legend(fontsize=8)


for r, item, title in ((r412, "fig4.12", "fig 4.12: H v"), (r413, "fig4.13", "fig 4.13: one gradient")):
    fig, axes = plt.subplots(2, 1, figsize=(6, 6), sharex=True)
    power_panels(axes, r, title)
    out.savefig(fig, item, params=S.as_dict(), seeds=[0])
    plt.show()

# %%
out.record(CLAIMS["fig4.12"], Finding(
    bool(abs(r412.cos[-1]) > 0.99 and abs(r412.value / lam0 - 1) < 0.01),
    f"{r412.iters} iterates, cos {r412.cos[-1]:+.4f}, λ̂ {r412.value:.2f} vs {lam0:.2f}",
    "a first numpy run of the listing: 24 iterations, cos −0.998, λ 381.0 vs 381.2"))
share412 = ch05.stop_rule_share(S.known_size, S.known_seeds)
n413, n417a = ch05.fig413_numbers(r413), ch05.fig417a_numbers(r417a)
out.record(CLAIMS["fig4.13"], Finding(
    bool(n413["mean_cos"] < 0.5 and n413["cv"] > 0.2),
    f"mean |cos| {n413['mean_cos']:.3f}, CV {n413['cv']:.2f}"))
out.record(CLAIMS["fig4.17a"], Finding(
    bool(np.all(np.abs(n417a["cos"]) > 0.98) and abs(n417a["value"] / lam0 - 1) < 0.05),
    f"min |cos| {np.min(np.abs(n417a['cos'])):.4f}, λ̂ {n417a['value']:.1f} vs {lam0:.1f}"))
pd.Series({"fig 4.12 stop rule: matrices ending with |cos| > 0.99": f"{share412:.0%} of {S.known_seeds}",
           "fig 4.12 iterates (seed 0)": r412.iters})

# %%
rolling = ch05.rolling_runs(H0, v0, S.rolling_samples, S.rolling_steps)
tail_iters = ch05.rolling_tail(S.rolling_steps)
stats = ch05.rolling_stats(rolling, tail_iters)
mid = ch05.middle_window(S.rolling_samples)
stats.round(4)

# %%
fig, axes = plt.subplots(len(rolling), 1, figsize=(10, 2.2 * len(rolling)), sharex=True)
for ax, (window, r) in zip(axes, rolling.items()):
    ax.plot(np.arange(1, r.iters + 1), r.cos, lw=0.6)
    ax.set(ylim=(-1.05, 1.05), ylabel="cos φ", title=f"rolling window of s = {window} gradients")
axes[-1].set_xlabel("iterate (one new gradient each)")
out.savefig(fig, "fig4.18", params=S.as_dict(), seeds=[0])
plt.show()
fig, axes = plt.subplots(2, 2, figsize=(12, 6), sharex="col")  # fig 4.17b: the middle window
power_panels(axes[:, 0], r417a, f"fig 4.17a: {ch05.fig417a_samples(S.known_size)} gradients per iterate")
power_panels(axes[:, 1], rolling[mid], f"fig 4.17b: rolling window of {mid}")
out.savefig(fig, "fig4.17", params=S.as_dict(), seeds=[0])
plt.show()

# %%
out.record(CLAIMS["fig4.17b"], Finding(
    bool(stats.loc[mid, "late mean |cos|"] > 0.9 and stats.loc[mid, "late min |cos|"] < 0.97),
    stats.loc[mid].round(4).to_dict(), f"rolling window of {mid}"))
out.record(CLAIMS["fig4.18"], Finding(
    ch05.steadier_with_window(stats),
    {int(s): f"mean {m:.3f}, sd {d:.3f}" for s, m, d in
     zip(stats.index, stats["late mean |cos|"], stats["late sd |cos|"])},
    "a first numpy run of the listing: late mean |cos| 0.58 / 0.96 / 0.98"))

# %% [markdown]
# ## Fig 4.14 · SGDM on Rastrigin and Rosenbrock, with chapter 04's total distance D_t
#
# *Source (sec. 4.4.3.1):* on Rastrigin (a = 2) SGDM follows a nearly straight path and D_t rises
# steadily; on Rosenbrock (a = 1, b = 100) the path curves and D_t fluctuates. The thesis gives no
# start, learning rate or step count; ours, chosen on a first prototype run so that both paths
# reach their minimum: 2-D, deterministic gradients, momentum 0.9 (app. E.4's SGDM), Rastrigin
# from (4.3, −4.6) at lr 5e-3 for `3000` steps, Rosenbrock from (−1.5, −0.5) at lr 2e-4 for
# 20 000 steps. D_t = ‖θ_t − θ_0‖ is chapter 04's (`trajectory.path_metrics`).
# *Checks (ours):* Rastrigin: D_t falls on < 10 % of steps and the path reaches the minimum
# (0, 0); Rosenbrock: D_t falls on > 20 % of steps and the path ends at (1, 1) ± 1e-3. Our
# start, lr and step counts were chosen on a first prototype run (its shares are in the
# records' details); the thresholds are ours. Fixed starts and exact gradients make both
# deterministic computations: one path each decides its verdict.

# %%
FIG414 = {name: ch05.fig414_run(name) for name in ("rastrigin", "rosenbrock")}
fig, axes = plt.subplots(2, 2, figsize=(11, 8))
for j, (landscape, run) in enumerate(FIG414.items()):
    p, dt = run["path"], run["dt"]
    f = test_functions.rastrigin if landscape == "rastrigin" else test_functions.rosenbrock
    lo_, hi_ = p.min(0) - 0.5, p.max(0) + 0.5
    gx, gy = np.meshgrid(np.linspace(lo_[0], hi_[0], 200), np.linspace(lo_[1], hi_[1], 200))
    z = f(torch.tensor(np.stack([gx, gy], -1))).numpy()
    axes[0, j].contour(gx, gy, np.log1p(z), 25, cmap="viridis", linewidths=0.6)
    axes[0, j].plot(p[:, 0], p[:, 1], color="C3", lw=1)
    axes[0, j].set(title=f"{landscape}: SGDM path")
    axes[1, j].plot(np.arange(1, len(dt) + 1), dt)
    axes[1, j].set(xlabel="step", ylabel="D_t",
                   title=f"{landscape}: total distance from the start")
out.savefig(fig, "fig4.14", params=S.as_dict(), seeds=[0])
plt.show()

# %%
R414 = ch05.fig414(FIG414)
out.record(CLAIMS["fig4.14-rastrigin"], R414.rastrigin,
           source="D_t falls on 3.5 % of steps (a first prototype run)")
out.record(CLAIMS["fig4.14-rosenbrock"], R414.rosenbrock,
           source="D_t falls on about 45 % of steps; max 3.94, final 2.92 (a first prototype run)")
pd.DataFrame({landscape: run["numbers"] for landscape, run in FIG414.items()}).T

# %% [markdown] tags=["runs:fig4.15"]
# ## Fig 4.15 · temporal consistency: φ_t per filter of the second conv layer, with D_t
#
# *Source (sec. 4.4.3.1):* φ_t = S_cos(θ_τ − θ_t, ∇θ_t) (eq. 4.56) between the direction to the
# final weights θ_τ and the mini-batch gradient, for every filter of the second convolutional
# layer of a ResNet-18 on CIFAR-10 along its training (φ_t < 0: the gradient points towards the
# solution). The trajectory is "mostly random with respect to the solution", few φ_t pass the
# random-vector threshold ±10/√n (app. A.1.4, n = the filter's size), yet the peak of the
# distribution is negative; φ_t spreads more at the end (which the thesis calls an artefact of
# the small remaining distances); the total distance D_t (eq. 3.1) keeps increasing, most of it
# early, like Rastrigin's (fig 4.14A).
#
# *Setting.* quick (our reduction): SGDM (lr 0.05, momentum 0.9), batch 32, 15 epochs on the
# digits; BasicCNN at width 1 (batch norm), whose `conv2` has 32 filters of 32 × 3 × 3 = 288
# weights (threshold 10/√288). paper: ResNet-18 (CIFAR layout) `layer1.0.conv1`, 64
# filters of 576 (threshold 10/√576), 200 epochs. The layer's weights θ_t and raw mini-batch
# gradients (no momentum, weight decay or clipping) are recorded before every step
# (`gradient_probes.FilterGradients`); θ_τ is the weights after the last step. D_t is chapter
# 04's (`trajectory`), of the layer's weight (our choice: the thesis does not say whether its D_t
# is of the layer or the whole network; the layer's is the distance of the same weights whose
# φ_t is plotted). The steps in D_t follow each epoch's last, partial batch (the loop keeps it: 3
# examples at quick, whose gradient is several times larger than a full batch's; momentum
# spreads its step over the next few). *Deviations:* the thesis states none of the ResNet-18's
# training settings (paper: app. E.4's lr 0.1 and momentum 0.9, batch 128, constant lr, φ_t
# every 25th step to bound memory) nor the plot type (a 2-D histogram here); it shows one run, we
# judge over `phi_seeds` seeds (95 % t intervals of one number per seed).
#
# *The null of the sign.* θ_t is recorded before step t, so θ_τ − θ_t contains step t's own
# update, −lr g_t (1 − β^(τ−t+1)) / (1 − β) with momentum β = 0.9 (ten times one step once the
# momentum has carried it): a part that points against g_t by construction and pushes every φ_t
# below zero, whatever the rest of the trajectory does. Claim (1) therefore judges φ_t with that
# part added back (`numbers.own_update_removed`, exact for torch's SGD with a constant lr and no
# weight decay); the raw median is shown beside it.
#
# *The independent-gradient null.* Each seed's run is paired with a cheap simulation
# (`numbers.random_walk_phi`): the same SGDM, lr and steps driven by gradients of the run's own
# per-filter norms in uniformly random directions, which share no direction with each other or
# with the solution. That null passes three of the source's observations by itself: few
# |φ_t| ≥ 10/√n (≈ 0), D_t rising on every step, and φ_t spreading at the end (its own update
# dominates the short remaining path); with norms that shrink over training its D_t(T/4) / D_t(T)
# is above a random walk's 0.5 too.
#
# *Claim tests (ours, each against that null, paired by seed):* (1) the median φ_t, own update
# left out, over all steps and filters, minus the null's (≈ 0 by symmetry) is < 0; (4) D_t(T/4) /
# D_t(T) minus the null's is > 0 ("most of the distance early" beyond what the norms alone give).
# *Sanity checks (the null passes them too, so they are not counted as verdicts; the null's
# values are recorded beside):* (2) the fraction of |φ_t| ≥ 10/√n is < 25 %; (3) D_t does not
# fall on > 90 % of the steps; and, from the text, (5) φ_t spreads more at the end: the log of
# its standard deviation over the last tenth of the steps over that of the first tenth is > 0.
# *Deviation:* the thesis judges (2)-(5) by eye on one run; we keep them, but as consistency
# checks, since a random walk of the same norms shows them.

# %% tags=["runs:fig4.15"]
PHI = {seed: res[c] for seed, c in ch05.phi_runs(S).items()}
fg = PHI[0]["callbacks"]["filter_gradients"]
thr = cos_threshold(fg["n"])
dt0 = ch05.layer_dt(PHI[0], S.phi_layer)
PHI_NUM = pd.DataFrame({seed: ch05.phi_numbers(r, S.phi_layer) for seed, r in PHI.items()}).T
PHI_NUM.index.name = "seed"
# the independent-gradient null of each seed: the same optimiser, steps and per-filter gradient
# norms, uniformly random directions (a cheap simulation, no training)
PHI_NULL = pd.DataFrame({seed: ch05.random_walk_phi_numbers(r, seed)
                         for seed, r in PHI.items()}).T
PHI_NULL.index.name = "seed"
pd.concat({"run": PHI_NUM, "null": PHI_NULL}).round(4)

# %% tags=["runs:fig4.15"]
phi_steps = np.repeat(fg["step"], fg["phi"].shape[1])
phi_values = fg["phi"].ravel()
finite = np.isfinite(phi_values)
fig, ax = plt.subplots(figsize=(11, 5))
hist = ax.hist2d(phi_steps[finite], phi_values[finite], bins=[min(150, len(fg["step"])), 50],
                 cmap="Blues", cmin=1,
                 range=[[fg["step"][0] - 0.5, fg["step"][-1] + 0.5], [-1, 1]])
fig.colorbar(hist[3], ax=ax, pad=0.09, label="filters × steps per bin")
for v in (thr, -thr):
    ax.axhline(v, color="C3", ls="--", lw=1)
ax.axhline(0, color="k", lw=0.5)
ax.set(xlabel="step t (batch)", ylabel="φ_t", ylim=(-1.02, 1.02),
       title=f"fig 4.15 (reduced): φ_t of the {fg['filters']} filters of {S.phi_layer} "
             f"(n = {fg['n']}, ±10/√n dashed), seed 0")
dt_ax = ax.twinx()
dt_ax.plot(np.arange(1, len(dt0) + 1), dt0, color="C1", lw=1.5)
dt_ax.set_ylim(0, None)
dt_ax.set_ylabel(f"D_t of {S.phi_layer}.weight", color="C1")
out.savefig(fig, "fig4.15", params=S.as_dict(), seeds=list(PHI))
plt.show()

# %% tags=["runs:fig4.15"]
R415 = ch05.fig415(PHI_NUM, thr, PHI_NULL)
for cid, finding in (("fig4.15-toward", R415.toward), ("fig4.15-few", R415.few),
                     ("fig4.15-rises", R415.rises), ("fig4.15-early", R415.early),
                     ("fig4.15-spread", R415.spread)):
    out.record(CLAIMS[cid], finding)

# %% [markdown] tags=["runs:fig4.16"]
# ## Fig 4.16 · gradient cohesion against the mini-batch size
#
# *Source (sec. 4.4.3.2):* with the weights fixed, d mini-batch gradients g_1..g_d (eq. 4.57) and
# their mean μ; the cohesion C is the mean of cos ψ_i = cos(g_i, μ) (eq. 4.58; its
# μ = (1/n) Σ_{i=1}^{n} g_i clashes with n = the number of parameters: read as the mean over the
# d gradients). Fig 4.16 plots cos ψ_i against the epoch, coloured by ‖g_i‖, for d = 10 ("n = 10"
# in the caption), sampled 25 times per epoch, one panel per batch size: larger batches give a
# higher mean and a smaller spread; at the smallest batch some gradients have cos ψ_i ≈ 1 (the
# text prints "ψ_i ≈ 1") because their magnitude dominates the mean; and cohesion degrades over
# training.
#
# *Setting.* The thesis states neither the model, the data nor the batch sizes. quick (our
# reduction): BasicCNN at half width with batch norm (fig 4.6's model) on the digits, SGDM
# (lr 0.05, momentum 0.9) with batch 32 for 5 epochs; 25 evenly spaced probes per epoch; at each,
# frozen weights, d = 10 gradients of all parameters for each probe batch size 4, 32, 256
# (`gradient_probes.CohesionProbe`). paper: ResNet-20 / CIFAR-10 (the model of fig 4.20), batch
# 128, 20 epochs, probe sizes 32, 128, 512, 2048 (ours: from a quarter of the training batch to
# 16 times it). *Choices:* the probe batches are drawn as training draws its batches
# (consecutive full batches of fresh shuffles of the training split, from the probe's own
# generator; the run's RNG is untouched), and the gradients are taken in train mode (batch
# statistics, as a training step of that batch size would; the running statistics are restored
# afterwards, so the training is bit-identical to a run without probes). The thesis shows one
# run; we judge over `cohesion_seeds` seeds, paired by seed.
#
# *The independent-gradient null.* Each probe's d gradients with their recorded norms but
# independent, uniformly random directions in the network's parameter space
# (`numbers.independent_cohesion`, exact through the Wishart law of the Gram matrix, no
# training): with no shared direction cos ψ_i ≈ ‖g_i‖ / √(Σ_j ‖g_j‖²), so the mean still rises
# and the spread still falls with the batch size wherever larger batches have more even norms.
#
# *Checks (ours):* (1) the mean cos ψ_i rises with the batch size more than the null's (each
# larger size minus the next smaller, minus the same for the null, > 0, paired by seed); (2) its
# spread falls more than the null's (the standard deviation of a probe's d values of cos ψ_i,
# averaged over the probes: the spread at fixed weights; smaller size minus larger, minus the
# null's, > 0); (3) at the smallest size some points have cos ψ_i > 0.9, in every seed; (4) those
# are the largest gradients: in more than half of the smallest size's probes, the gradient with
# the largest cos ψ_i is the one with the largest ‖g_i‖ (chance with equal norms: 1/d); and,
# from the text, (5) cohesion degrades: C over the last epoch's probes minus C over the first
# epoch's, minus the null's change, < 0 at every size. (3) and (4) are the thesis's own
# mechanism, a dominant norm, which the null with the run's norms reproduces (its numbers are
# recorded beside); they are judged against equal norms, where neither happens.
# *Deviation:* (1), (2) and (5) are judged against the null, not against 0 as the thesis reads
# its figure.

# %% tags=["runs:fig4.16"]
COH = {seed: res[c] for seed, c in ch05.cohesion_runs(S).items()}
COH_NUM = {seed: ch05.cohesion_numbers(r, S.cohesion_epochs) for seed, r in COH.items()}
# the independent-gradient null of each seed: each probe's gradient norms, random directions
COH_NULL = {seed: ch05.independent_cohesion_numbers(r, S.cohesion_epochs, seed)
            for seed, r in COH.items()}
sizes = list(S.cohesion_batches)
b_small = sizes[0]
pd.concat(COH_NUM, names=["seed"]).groupby("batch_size").mean().round(4)

# %% tags=["runs:fig4.16"]
pts0 = COH[0]["callbacks"]["cohesion_probe"]["points"]
fig, axes = plt.subplots(1, len(sizes), figsize=(4.6 * len(sizes), 4), sharey=True)
for ax, b, tag in zip(axes, sizes, "abcdefgh"):
    pb = pts0[pts0.batch_size == b]
    sc = ax.scatter(pb["epoch"], pb["cos"], c=pb["norm"], s=5, cmap="viridis")
    fig.colorbar(sc, ax=ax, label="‖g_i‖")
    ax.set(title=f"({tag}) mini-batch {b}", xlabel="epoch")
axes[0].set_ylabel("cos ψ_i")
fig.suptitle(f"fig 4.16 (reduced): d = {S.cohesion_d} gradients per probe, "
             f"{S.cohesion_per_epoch} probes per epoch, seed 0")
out.savefig(fig, "fig4.16", params=S.as_dict(), seeds=list(COH))
plt.show()

# %% tags=["runs:fig4.16"]
R416 = ch05.fig416(COH_NUM, sizes, COH_NULL)
extremes = ch05.cohesion_extremes(COH, b_small)
for cid, finding in (("fig4.16-mean", R416.mean), ("fig4.16-spread", R416.spread),
                     ("fig4.16-high", R416.high), ("fig4.16-largest", R416.largest),
                     ("fig4.16-degrades", R416.degrades)):
    out.record(CLAIMS[cid], finding)
pd.Series({"points at the smallest size": extremes["points"],
           "largest cos ψ_i there": round(extremes["max_cos"], 4)})

# %% [markdown] tags=["runs:fig4.20"]
# ## Fig 4.20 · algorithm 5: step sizes from the estimated top eigenpair
#
# *Source (sec. 4.4.4):* while training a ResNet-20 on CIFAR-10, the top Hessian eigenpair is
# estimated from a rolling window of the last s = 250 gradients, one power step per mini-batch
# (algorithm 5), and sets the step size, bounded by η′ = 1: the eigenvalue rule
# η = min{η′, 2/λ̂} or the projection rule η = min{η′, 1 − |cos(g, v̂)|} (eq. 4.60). Both "perform
# better than SGD" at lr 1, but worse than SGD at "a better learning rate for SGD, 0.1 … most
# notably, at the start of training". One run per method is shown. *Here* (`quick`): the digits,
# BasicCNN at half width with batch norm, batch 32, 10 epochs, s = 50 (the window must fill
# well before the 420-step run ends; 250 would take 60 % of it), SGD at 1 and 0.1, both rules
# at η′ = 1, `alg5_seeds` seeds (the plots show seed 0, a single run as the thesis).
# *Deviation:* 1344 = 42 × 32 of the 1347 training images, so that no epoch ends with a batch of 3
# (at lr 1 that step, right before each evaluation, and its batch-norm statistics made the
# held-out loss jump to 10–60). `paper`: ResNet-20 / CIFAR-10, s = 250, batch 128 and 30 epochs
# (ours: the thesis does not state them). *The optimiser*
# (`lalr_core.methods.curvature.eigen_step`, `"alg5_sgd"`): the window holds the raw loss
# gradients and starts as N(0, 1) noise as printed ("Initial random matrix for gradients", so λ̂
# is dominated by the noise until the s-th step: part of the method as the thesis ran it); η′ is
# the run's lr; no momentum, no weight decay (algorithm 5 has neither); every step's η, λ̂ and
# 1 − |cos(g, v̂)| are logged (callback `"alg5_log"`).
# *Claim tests (ours, paired by seed):* (0) the premise, 0.1 is the better lr for SGD: SGD(1) −
# SGD(0.1) final held-out loss > 0; (2) the projection rule ends below SGD at lr 1: SGD(1) −
# projection final held-out loss > 0; (3) the same for the eigenvalue rule (the source's claim;
# a first prototype run did not reproduce it); (4) SGD at 0.1 is best early: every other run's
# held-out loss after epoch 1 minus SGD(0.1)'s > 0; (5) both eigen rules end above SGD at 0.1:
# each rule's final held-out loss minus SGD(0.1)'s > 0. *Sanity checks* (properties of
# algorithm 5 as printed, not verdicts): (1) the projection rule's mean η < 1 (η = min(η′,
# 1 − |cos|) cannot exceed η′); (6) the eigenvalue rule's η < 1 on every step while a random
# column is left in the window (steps 1 to s − 1), every seed.

# %% tags=["runs:fig4.20"]
F420 = {k: res[c] for k, c in ch05.fig420_runs(S).items()}
SEEDS420 = range(S.alg5_seeds)
ARMS420 = ch05.fig420_arms(S)
RUNS420 = {name: [F420[(arm, lr, s)] for s in SEEDS420] for name, (arm, lr) in ARMS420.items()}
sgd_hi, sgd_lo, eig_rule, proj_rule = RUNS420
eta_bound, sgd_lr = S.alg5_eta_max, S.alg5_sgd_lr

# %% tags=["runs:fig4.20"]
fig, axes = plt.subplots(1, 3, figsize=(17, 4.3))
for j, (name, runs) in enumerate(RUNS420.items()):
    history, step_rows = runs[0]["history"], runs[0]["steps"]
    per_epoch = max(1, int(np.ceil(len(step_rows) / max(len(history), 1))))
    smooth = step_rows["loss"].rolling(per_epoch, min_periods=1).mean()
    axes[0].plot(step_rows["step"] / per_epoch, smooth, color=f"C{j}", lw=0.8, alpha=0.6)
    axes[0].plot(history["epoch"], history["test_loss"], color=f"C{j}", lw=2, marker="o", ms=3,
                 label=name)
    axes[1].plot(history["epoch"], 100 * history["train_acc"], color=f"C{j}", lw=0.8, ls="--")
    axes[1].plot(history["epoch"], 100 * history["test_acc"], color=f"C{j}", lw=2, marker="o",
                 ms=3, label=name)
    if ARMS420[name][0] != "sgd":
        log = ch05.step_log(runs[0])
        axes[2].plot(log["step"], log["eta"], color=f"C{j}", lw=0.6, label=f"{name}: η")
axes[2].axvline(S.alg5_sample, color="grey", ls=":", lw=1, label=f"s = {S.alg5_sample}")
axes[0].set(xlabel="epoch", ylabel="loss", yscale="log",
            title="(A) loss: held-out (dots), training (thin, one-epoch mean)")
axes[1].set(xlabel="epoch", ylabel="accuracy (%)",
            title="(B) accuracy: held-out (dots), training (dashed)")
axes[2].set(xlabel="step", ylabel="step size η", yscale="log",
            title="the step sizes taken (seed 0)")
axes[0].legend(fontsize=8)
axes[2].legend(fontsize=8)
out.savefig(fig, "fig4.20", params=S.as_dict(), seeds=[0])
plt.show()

# %% tags=["runs:fig4.20"]
final420 = {name: ch05.per_seed(runs, ch05.final_loss) for name, runs in RUNS420.items()}
epoch1_420 = {name: ch05.per_seed(runs, ch05.first_epoch_loss) for name, runs in RUNS420.items()}
early_eta = {s: ch05.max_eta(r, S.alg5_sample - 1) for s, r in zip(SEEDS420, RUNS420[eig_rule])}
R420 = ch05.fig420(final420, epoch1_420, list(RUNS420),
                   ch05.per_seed(RUNS420[proj_rule], ch05.mean_eta), early_eta)
for cid, finding in (("fig4.20-clip", R420.clip), ("fig4.20-premise", R420.premise),
                     ("fig4.20-projection", R420.projection),
                     ("fig4.20-eigenvalue", R420.eigenvalue), ("fig4.20-early", R420.early),
                     ("fig4.20-end", R420.end), ("fig4.20-window", R420.window)):
    out.record(CLAIMS[cid], finding)

# %% tags=["runs:fig4.20"]
pd.DataFrame({name: {
    "final held-out loss": np.nanmean(final420[name]),
    "final held-out acc (%)": np.nanmean(ch05.per_seed(runs, ch05.final_accuracy)),
    "held-out loss after epoch 1": np.nanmean(epoch1_420[name]),
    "mean η": (np.mean(ch05.per_seed(runs, ch05.mean_eta))
              if ARMS420[name][0] != "sgd" else ARMS420[name][1]),
    "train-loss noise (sd of Δ, 2nd half)": np.mean(ch05.per_seed(runs, ch05.train_loss_noise)),
    "diverged runs": sum(r["diverged"] for r in runs)} for name, runs in RUNS420.items()}).T.round(4)

# %% [markdown]
# ## Figs H.1, H.2 · the spectrum from cumulants of squared gradient norms (appendix H)
#
# *Source:* for H = XᵀX with X a 500 × 400 Gaussian matrix, the ascending eigenvalues are well
# approximated by a cubic λ(t) = a t + b t³ (fig H.1), and the cumulants of s = ‖Hε‖², ε ~ N(0, I)
# (fig H.2's histogram), κ_n = 2^(n−1) (n−1)! Σ λ^(2n), carry the spectrum (the thesis's sample
# estimates are within 0.2 %, 0.2 % and 10 % of the exact ones). Two printed slips are corrected
# in `lalr_core.methods.curvature.cumulants` (K₁'s "2ab/5 a²" and K₂'s 2b⁴/12; checked by integration).
# *Checks (ours):* the cubic's R² > 0.95; the k-statistics of `cumulant_samples` draws
# are within 2 %, 5 % and 15 % of κ₁, κ₂, κ₃ (looser than the thesis's own errors, for the
# smaller sample at smoke). Both are *sanity checks*: an identity of Gaussian quadratic forms and
# a property of one generated matrix's spectrum.

# %%
AH = ch05.appendix_h(S.cumulant_samples)
prof, rel = AH["profile"], AH["rel"]
pd.DataFrame({"sample": AH["sample"], "exact Σλ": AH["exact"], "from the cubic": AH["cubic"]},
             index=["κ1", "κ2", "κ3"])

# %%
fig, ax = plt.subplots(figsize=(6, 4.3))
ax.plot(np.arange(1, len(prof.eigvals) + 1), prof.eigvals, color="C0", label="eigenvalues")
ax.plot(np.arange(1, len(prof.eigvals) + 1), prof(prof.t), color="C3", label=f"a t + b t³ (R² {prof.r2:.3f})")
ax.set(xlabel="index (ascending)", ylabel="eigenvalue", title="fig H.1")
ax.legend()
out.savefig(fig, "figH.1", params=S.as_dict(), seeds=[1])
plt.show()
fig, ax = plt.subplots(figsize=(6, 4.3))
ax.hist(AH["draws"], bins=100)
ax.set(xlabel="s = ‖Hε‖²", ylabel="count", title=f"fig H.2: {S.cumulant_samples} draws")
out.savefig(fig, "figH.2", params=S.as_dict(), seeds=[0, 1])
plt.show()

# %%
out.record(CLAIMS["figH.1"], Finding(bool(prof.r2 > 0.95),
                                     f"a {prof.a:.1f}, b {prof.b:.1f}, R² {prof.r2:.4f}"),
           source="a ≈ 395, b ≈ 1201 (a first numpy run, seed 1)")
out.record(CLAIMS["figH.2"], Finding(ch05.cumulants_within(rel), {
    f"κ{n}": f"{a:.4g} vs {b:.4g} ({100 * r:.1f} %)"
    for n, a, b, r in zip((1, 2, 3), AH["sample"], AH["exact"], rel)}),
    source={"sample": list(ch05.THESIS_SAMPLE_KAPPAS), "exact": list(ch05.THESIS_EXACT_KAPPAS)})

# %%
print(f"notebook compute: {time.perf_counter() - T0:.0f} s")
