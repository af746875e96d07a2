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
# # 06 · Orthogonal SGDM: orthogonalising gradients per layer
#
# **Question.** Do the filters of a layer waste their first updates "co-learning" the same
# direction, and does replacing each layer's gradient by the nearest orthogonal matrix speed up
# training without hurting the final accuracy?
#
# **Source.** `[Tuddenham2026]`: Mark Tuddenham, *Advancing differentiable program optimisation
# via novel first and second-order metrics, and adaptive optimisation strategies*, PhD thesis,
# School of Electronics and Computer Science, University of Southampton, 2026; chapter 5
# "Orthogonalising gradients", appendices D, G, I. Chapter 5 appeared first as `[Tuddenham2022]`:
# M. Tuddenham, A. Prügel-Bennett, J. Hare, "Orthogonalising gradients to speed up neural network
# optimisation", 2022, <https://arxiv.org/abs/2202.07052>; the author's code:
# <https://github.com/MarkTuddenham/Orthogonal-Optimisers>. Every reference: `REFERENCES.md`.
#
# **Method (eqs. 5.3–5.9, Algorithm 6).** A layer's gradient, flattened from dim 1, is a matrix
# $G_l$ with one row per filter. It is replaced by $O_l=U_lV_l^\top$ from $G_l=U_l\Sigma_lV_l^\top$,
# the closest matrix with orthonormal rows (eq. 5.5), before *any* optimiser steps; so momentum and
# coupled weight decay act on $O_l$, and gradient clipping (the thesis's "max
# gradient of 1.0") acts on the raw gradients, before `step()` (our reading).
# `lalr_core.methods.orthogonal` implements this as `orthogonalise(G, method)` (exact SVD, the source's
# method, or 5 quintic Newton–Schulz steps) and the `GradientTransform` optimiser wrapper (also the
# normalised variants N-SGDM and CN-SGDM of §5.5.3), and `LARS` for Barlow Twins.
#
# **What this notebook regenerates.** Tables 5.1–5.6 and figs 5.1, 5.3–5.14, G.1, I.1, I.2. Fig 5.2
# is copied from Biehl et al. in the source and is not reproduced. Every item states the source's
# claim and ends with a check on our data; verdicts go to `figures/<profile>/REPORT.md`, with the
# source's numbers (`data/reference/ch06_table*.csv`) beside ours.
#
# **Profiles.** `smoke` (default; synthetic data, every cell in seconds); `quick` (our
# reductions on Fashion-MNIST: BasicCNN-FM, ResNet-8-FM (ResNet-20's code at depth 8,
# width ×0.5), an MLP; minutes on 2 CPU cores); `paper` (the source's settings on CIFAR-10: ten
# models, 5 runs, 100/200 epochs; the ImageNet items run when ImageNet is under the data root).
# **At quick scale the numbers are not the source's**: the models, data and epochs are reduced,
# so a check tests the *qualitative* claim. The source tables are shown for reference.
#
# **Source issues we resolve (stated again at the affected figure).**
# (i) §5.4.1 says "full pre-activation" ResNets, but its footnote and code use He et al.'s
# post-activation CIFAR ResNet with option-A shortcuts; we use the latter.
# (ii) Figs 5.10/5.11 name "the fourth layer of a ResNet-20", which does not exist, and
# their captions say "gradient vectors" while eq. 5.10 and the code use filter weights.
# (iii) The text calls figs 5.5/5.6 the validation curves; their captions (which we follow) say
# train. (iv) §5.5.5's "increase" of the run time by the SVD is the SVD's share of the run time,
# not the increase (both computed in the cost section). (v) Tables 5.5 and 5.3 are both "trained as in §5.4.1" yet their SGDM and
# Orth-SGDM cells differ (e.g. ResNet-50 SGDM 69.35 vs 67.99), so they come from different runs.
# (vi) The torchvision models are built with 10 outputs; the source's code kept the 1000-way
# ImageNet head (cross-entropy on 10 labels is nearly unaffected). (vii) The P-VAE of fig 5.9 is
# described with a Poisson *decoder*, the cited model has Poisson *latents*; we follow the thesis.
#
# **How a check is judged** (`lalr_core.core.results.evidence`, `ox.verdicts`). A comparison of runs is
# PASS or FAIL only when its 95% interval lies on one side of the claim's threshold, and
# INCONCLUSIVE when the interval covers it: over seeds a paired t interval (a seed's SGDM and
# Orth-SGDM runs share the initialisation and the data order); with one seed the paired bootstrap
# over the test examples, or the conservative normal interval of two accuracies. A claim "on every
# model" is PASS only if every model PASSes, FAIL if any model FAILs, else INCONCLUSIVE (the record
# shows the deciding model's interval); a claim about "most" cells or checkpoints is PASS when more
# than half PASS and FAIL when no more than half could hold even if every undecided one did. Each
# check carries the source's own sentence (`quote`), shown in `REPORT.md`. The checks are data
# (`ox.claims.CLAIMS`) judged by one function per item (`ox.findings`): a *claim test* is the
# source's claim in its direction against a control arm or a null, and records its interval's
# half-width beside the source's own effect where the source reports one; a *sanity check*
# (ours, not the source's: the Newton–Schulz approximation, the classifier's null direction) is
# listed apart and is no verdict on the source. Where the source gives
# numbers, its cells stand beside ours with the difference; at the paper profile a column says
# whether our mean lies within the source's mean ± SE.

# %% tags=["parameters"]
# parameters
profile = "smoke"   # smoke | quick | paper
overrides = {}      # any field of ox.Settings, e.g. {"seeds": 2}

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from IPython.display import Markdown, display

from lalr_core.chapters import ch06_orthogonal_sgdm as ox
from lalr_core.chapters import chapter_settings
from lalr_core.chapters.ch06_orthogonal_sgdm import findings as fx
from lalr_core.chapters.ch06_orthogonal_sgdm.claims import CLAIMS
from lalr_core.core.runs.units import train_runs
from lalr_core.core.results.writer import FigureWriter
from lalr_core.core.results.plots import bplot, bplot_stats
from lalr_core.core.results.style import set_style
from lalr_core.core.runs import cached
from lalr_core.methods.similarity.cosine_sets import FIVE_NUMBERS, random_abs_cos_mean
from lalr_core.methods.trajectory import cos_threshold

S = chapter_settings("06", profile, overrides)   # validated before any compute
out = FigureWriter("06_orthogonal_sgdm", profile, "06_orthogonal_sgdm.ipynb")
set_style()
SGDM, ORTH = dict(color="C0", ls="--", label="SGDM"), dict(color="C1", ls="-", label="Orth-SGDM")


pd.Series(S.as_dict(), dtype=object).to_frame("setting")

# %% [markdown]
# ## Training · every run of the chapter in one sweep
#
# All classification runs of the sections below go through one cached, resumable sweep, longest
# first, so the workers stay busy (at paper scale, `make figures EXECUTOR=ray`, or
# `overrides={"executor": "ray"}` here, sends it to a Ray cluster; several GPUs in one machine
# take one run each). A killed notebook resumes here and loses at most the runs in flight. Each section
# then reads its runs from the cache; plotting never retrains.

# %%
all_cfgs, _ = ox.CHAPTER.train(S)
f"{len(all_cfgs)} runs"

# %% [markdown] tags=["runs:suite"]
# ## §5.4.1.1 · Untuned SGDM vs Orthogonal-SGDM on a suite of models
#
# "5.4.1-untuned": batch 1024, lr 1e-2, momentum 0.9, wd 5e-4, 100 epochs, no schedule
# (§5.4.1.1 names none), on ten CIFAR-10 models, five runs. Quick: BasicCNN-FM, ResNet-8-FM and an MLP on 10k
# Fashion-MNIST images, batch 256, 8 epochs, 3 seeds. The same runs feed table 5.3, figs 5.1,
# 5.3–5.6, G.1, and (every seed, via probes attached during training) figs 5.12 and 5.13. We also train
# Orth-SGDM with Newton–Schulz instead of the SVD (`ns_seeds` seeds, paired with the SVD runs of the
# same seeds: same initialisation and data order) to measure the accuracy cost of the approximation.

# %% tags=["runs:suite"]
suite_cfgs, suite_res = ox.CHAPTER.train(S, "suite")
suite = ox.run_table(suite_cfgs, suite_res)
hist = {(c.model, ox.variant_of(c), c.seed): r for c, r in zip(suite_cfgs, suite_res)}
R = ox.results_by(suite_cfgs, suite_res, lambda c: (c.model, ox.variant_of(c)))  # seed order
suite.groupby(["model", "variant"])[["test_acc", "wall_time_s"]].mean()

# %% [markdown] tags=["runs:suite"]
# ### Table 5.3 · test loss and accuracy, SGDM vs Orthogonal-SGDM
#
# *Source:* Orth-SGDM has the higher test accuracy on all ten models (e.g. ResNet-20 87.12 vs
# 79.14 %), and the gap grows with model size for the torchvision ResNets. *Check:* on every model
# Orth-SGDM's test accuracy is above SGDM's (paired by seed; `seeds` seeds). The source's cells
# stand beside ours for the same (at quick: the analogous) model, with the difference.

# %% tags=["runs:suite"]
t53 = ox.mean_se(suite[suite.variant != "ns_orth_sgdm"], ["model", "variant"])
t53 = ox.beside_source(t53, ox.read_source("5.3"), ["model", "variant"], S.source_analogue)
t53 = ox.vs_source(ox.vs_source(t53, "test_acc_mean", "source_test_acc_mean", profile),
                   "test_loss_mean", "source_test_loss_mean", profile)
out.save_table(t53, "table5.3", params=S.as_dict(),
               note="source_* = the source's cells for the (analogous) model; *_minus_source = ours - source")
f53 = fx.table53(R, S.suite_models)     # Orth - SGDM, points, paired by seed
out.record(CLAIMS["table5.3"], f53.finding,
           source="Orth - SGDM: +3.07 (BasicCNN) to +18.52 (ResNet-50) points")
t53.set_index(["model", "variant"]).filter(regex="test_acc").round(2)


# %% [markdown] tags=["runs:suite"]
# ### Figs 5.1, 5.3–5.6 and G.1 · learning curves of one run
#
# *Source:* Orth-SGDM reaches 50 % validation accuracy on CIFAR-10/ResNet-20 after 1 epoch instead
# of 4 (fig 5.1, unspecified in the thesis: we draw ResNet-20's (`f51_model`), or BasicCNN-FM's
# at quick scale); validation (5.3, 5.4) and train (5.5, 5.6) curves rise faster for
# every model, and final accuracies are better (table 5.3). Seed 0 drawn; SGDM dashed, Orth-SGDM
# solid. *Checks*, each paired over the `seeds` seeds and on every model shown (G.1: every model):
# Orth's epoch-1 validation accuracy is higher and its loss lower (train: the mean over epoch 1),
# it reaches the `f53_mark` validation accuracy in fewer epochs (the source's 50 % at paper; 80 % on
# Fashion-MNIST, our choice), and its final validation accuracy is higher (the source's "better
# test accuracy for every model", not merely "within 1 point").

# %% tags=["runs:suite"]
def curves(item, column, ylabel, models, cmap=None):
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.get_cmap(cmap)(np.linspace(0, 1, len(models))) if cmap else None
    for i, m in enumerate(models):
        for v, style in (("sgdm", SGDM), ("orth_sgdm", ORTH)):
            h = hist[(m, v, 0)]["history"]
            kw = dict(style, label=f"{m} {style['label']}")
            if colours is not None:
                kw["color"] = colours[i]
            elif len(models) > 1:
                kw["color"] = f"C{i}"
            ax.plot(h["epoch"], h[column], **kw)
    ax.set_xlabel("epoch"); ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    out.savefig(fig, item, params=S.as_dict(), seeds=[0])
    return fig

first = S.f51_model if S.f51_model in S.suite_models else S.suite_models[0]
curves("fig5.1", "val_acc", "validation accuracy", [first])
shown = list(S.suite_models)[:4]
for item, col, lab in (("fig5.3", "val_acc", "validation accuracy"), ("fig5.4", "val_loss", "validation loss"),
                       ("fig5.5", "train_acc", "train accuracy"), ("fig5.6", "train_loss", "train loss")):
    curves(item, col, lab, shown)
curves("figG.1A", "val_acc", "validation accuracy", list(S.suite_models), cmap="jet_r")
curves("figG.1B", "val_loss", "validation loss", list(S.suite_models), cmap="jet_r")
plt.close("all")

lc = fx.learning_curves(R, S.suite_models, shown, first, mark=S.f53_mark, n_val=S.n_val,
                        epochs=S.epochs)          # Orth - SGDM per model, paired by seed
out.record(CLAIMS["fig5.1"], lc.fig51, source="ResNet-20, tuned (table 5.2): 50 % after 1 epoch vs 4")
for cid, finding in (("fig5.3-reach", lc.reach), ("fig5.3-epoch1", lc.epoch1), ("fig5.3-final", lc.final),
                     ("fig5.4", lc.fig54), ("fig5.5", lc.fig55), ("fig5.6", lc.fig56),
                     ("figG.1A", lc.figG1A), ("figG.1B", lc.figG1B)):
    out.record(CLAIMS[cid], finding)
pd.DataFrame({"epoch-1 val acc": ox.texts(lc.val_acc1), "epoch-1 val loss": ox.texts(lc.val_loss1, 3)})

# %% [markdown] tags=["runs:suite"]
# ### The cost of the approximation and of the SVD
#
# The source uses the exact SVD (§5.5.5; its timing is stated in the cell below, from
# `claims.SVD_COST`). Newton–Schulz (Muon's quintic iteration) is cheaper but only approximately
# orthogonal: its singular values land in a band around 1 (computed below from the iteration's
# polynomial), not on 1. Below: test accuracy of the two (the time cost is measured by `make bench`
# as ratios in one run; the wall times of these runs, trained two at a time in parallel
# processes, are too noisy for that). *Sanity check (ours, not the source's):* on every model the
# two accuracies are within 1 point (our tolerance), paired by seed; with one seed (`ns_seeds` at
# quick) the interval is the paired bootstrap over the test examples, which leaves out the
# run-to-run spread of training.

# %% tags=["runs:suite"]
from lalr_core.chapters.ch06_orthogonal_sgdm import claims as cx

band = fx.ns_band()
display(Markdown(
    f"The source: a ResNet-20 run took {cx.SVD_RUN_S} s, {cx.SVD_S} s of them in the SVD, \"an "
    f"increase of {cx.SVD_STATED_INCREASE_PCT} %\"; that is the SVD's *share* of the run "
    f"({100 * cx.SVD_S / cx.SVD_RUN_S:.1f} %), the increase over the run without it would be "
    f"{cx.svd_increase_pct():.1f} %. Five quintic Newton–Schulz steps map singular values in "
    f"[0.01, 1] (relative to the largest) into [{band[0]:.3f}, {band[1]:.3f}]."))

ns = ox.mean_se(suite[suite.seed < S.ns_seeds], ["model", "variant"], cols=("test_acc",))  # paired seeds
ns_table = ns.pivot(index="model", columns="variant", values="test_acc_mean")
ns_table["svd_minus_ns"] = ns_table["orth_sgdm"] - ns_table["ns_orth_sgdm"]
out.save_table(ns_table.reset_index(), "ns_vs_svd", params=S.as_dict(),
               note="not a source item: test accuracy (%) of Newton-Schulz vs SVD Orth-SGDM")
out.record(CLAIMS["ns_vs_svd"], fx.ns_vs_svd(R, S.suite_models, S.ns_seeds))   # SVD - NS, points
ns_table.round(3)

# %% [markdown] tags=["runs:table5.1"]
# ## Tables 5.1 and 5.2 · tuned optimisers on ResNet-20
#
# *Source:* with each optimiser's tuned set (caption of table 5.1; MultiStep ×0.1 at epochs
# 100/150 of 200), Orth-SGDM has the best ResNet-20 accuracy (92.08 vs SGDM 91.45 %), while
# orthogonal Adam variants lose about a point; table 5.2: orthogonal variants reach the 50–85 %
# marks in far fewer epochs (e.g. 80 %: Orth-Adam 8 vs Adam 20 epochs). The orthogonal variants'
# hyper-parameters are not listed; we use their base's (our choice). Quick: BasicCNN-FM, 10 epochs,
# milestones 6/8, Adam lr 1e-3 and SGDM wd 1e-3 (our reduction), FM-scaled thresholds,
# 3 seeds (2 before: a paired t interval on 2 seeds has one degree of freedom and decides
# nothing); AdamW on ResNet-18 runs at paper only. *Checks:* every orthogonal variant on the
# ResNet-20 (quick: BasicCNN-FM) is within one point of its base or above ("within one percentage
# point or above", the source's own criterion; a diverged run counts 0 %), paired by seed; table
# 5.2: across most (mark, optimiser) pairings the orthogonal variant needs fewer epochs (a count
# over pairings, each paired by seed). A pairing whose runs all reach the mark in epoch 1 is left
# out: epochs are the source's unit, and at quick scale the lowest marks can be passed within the
# first epoch by every run, so those pairings tie at the floor whatever the speed-up.
# The source's cells stand beside ours with the difference.

# %% tags=["runs:table5.1"]
t51 = ox.table51_configs(S)
flat, t51_res = ox.CHAPTER.train(S, "table5.1")
names = [n for n, cs in t51.items() for _ in cs]
t51_df = ox.run_table(flat, t51_res).assign(optimizer=names)
table51 = ox.mean_se(t51_df, ["optimizer"])
table51 = ox.beside_source(table51, ox.read_source("5.1"), ["optimizer"])
table51 = ox.vs_source(ox.vs_source(table51, "test_acc_mean", "source_test_acc_mean", profile),
                       "test_loss_mean", "source_test_loss_mean", profile)
out.save_table(table51, "table5.1", params=S.as_dict(), note="*_minus_source = ours - source")
T51 = {}
for name, res in zip(names, t51_res):          # table51_configs lists seeds 0, 1, ... per optimiser
    T51.setdefault(name, []).append(res)
out.record(CLAIMS["table5.1"], fx.table51(T51),       # Orth - base, points, paired by seed
           source="Orth - base: SGDM +0.63, Adam -0.81, SGDM clip +3.46, Adam clip -1.00 (AdamW clip, ResNet-18: -3.65)")
table51.round(3)

# %% tags=["runs:table5.1"]
thr = list(S.thresholds)
rows = []
for (name, cfgs), start in zip(t51.items(), np.cumsum([0] + [len(c) for c in t51.values()])):
    reached = [[ox.epochs_to_reach(r["history"], t) for t in thr] for r in t51_res[start:start + len(cfgs)]]
    rows.append({"optimizer": name, **{f"acc{t}": float(np.median(col)) if not np.isnan(col).any() else np.nan
                                       for t, col in zip(thr, np.array(reached).T)}})
table52 = ox.beside_source(pd.DataFrame(rows), ox.read_source("5.2"), ["optimizer"])
for t in thr:
    if f"source_acc{t}" in table52:
        table52[f"acc{t}_minus_source"] = table52[f"acc{t}"] - table52[f"source_acc{t}"]
out.save_table(table52, "table5.2", params=S.as_dict(),
               note=f"median epoch over seeds (NaN: a seed never got there); thresholds {thr} %")
out.record(CLAIMS["table5.2"], fx.table52(T51, thr, S.t51_epochs),
           source="orthogonal fewer in 17 of 20 pairings (equal: SGDM at 85 %; more: Adam, Adam clip at 90 %)")
table52

# %% [markdown] tags=["runs:table5.4"]
# ## Table 5.4 · robustness to learning rate and momentum
#
# *Source:* over a grid of lr × momentum (β₁ for Adam, β₂ = 0.999), orthogonal SGDM and Adam beat
# the originals in every cell, most at low-lr SGDM and high-lr Adam, and Orth-SGDM works even
# with momentum 0 (2n memory). Quick: BasicCNN-FM, 3 epochs, lr {1e-1, 1e-2, 1e-3} × momentum
# {0.9, 0}, 1 seed (every cell through the sweep executor). *Checks:* the orthogonal optimiser's test
# accuracy is above the original's in most cells (each cell: with one seed, the paired bootstrap
# over the test examples; over seeds at paper); the accuracy range over the grid is narrower with
# orthogonalisation, for SGDM and for Adam (bootstrap over test examples of the two ranges; over
# seeds at paper). The source's cells stand beside ours.

# %% tags=["runs:table5.4"]
t54 = ox.table54_configs(S)
flat54, res54 = ox.CHAPTER.train(S, "table5.4")
keys54 = [k for k, cs in t54.items() for _ in cs]
df54 = ox.run_table(flat54, res54).assign(lr=[k[0] for k in keys54], momentum=[k[1] for k in keys54],
                                          base=[k[2] for k in keys54], orth=[k[3] for k in keys54])
table54 = ox.mean_se(df54, ["lr", "momentum", "base", "orth"], cols=("test_acc",))
table54 = ox.beside_source(table54, ox.read_source("5.4"), ["lr", "momentum", "base", "orth"])
table54 = ox.vs_source(table54, "test_acc_mean", "source_test_acc_mean", profile)
grid = table54.pivot_table(index=["lr", "momentum"], columns=["base", "orth"], values="test_acc_mean")
out.save_table(table54, "table5.4", params=S.as_dict(), note="*_minus_source = ours - source")
R54 = {}
for k, res in zip(keys54, res54):                 # (lr, momentum, base, orth) -> runs in seed order
    R54.setdefault(k, []).append(res)
cells = [(lr, mom) for lr in S.t54_lrs for mom in S.t54_moms]
f54 = fx.table54(R54, cells)                       # Orth - original, points
out.record(CLAIMS["table5.4-cells"], f54.cells, source="40/40 cells")
out.record(CLAIMS["table5.4-range"], f54.ranges,
           source="range over the grid, original vs orthogonal: SGDM 62.99 vs 44.13, Adam 73.16 vs 31.61 points")
grid.round(2)

# %% [markdown] tags=["runs:fig5.7"]
# ## Fig 5.7 · ImageNet (ResNet-34), and its reduced analogue
#
# *Source:* on ImageNet, ResNet-34, batch 1024, lr 1e-2, momentum 0.9, wd 5e-4, 100 epochs, the
# validation accuracy of Orth-SGDM is above SGDM's throughout; final test 67.5 % vs 61.9 %. At
# the paper profile this cell trains on ImageNet when it is under the data root
# (`lalr_core.chapters.ch06_orthogonal_sgdm.imagenet`; preprocessing: unstated in the thesis, so
# the standard torchvision recipe). Without ImageNet it says so and draws the reduced analogue: the full 60k Fashion-MNIST, one epoch,
# BasicCNN-FM, batch 1024, validation accuracy every few steps, one seed. *Check:* the Orth curve
# is above SGDM's at most evaluation points (each point: the conservative normal interval of two
# accuracies on the `f57_n_val` validation images; ImageNet: its 50,000). With one run per
# optimiser that is one replicate, so the record is INCONCLUSIVE at every profile (it says how
# many replicates it had); `fx.fig57` takes `[seeds, points]` curves where more seeds are run.

# %% tags=["runs:fig5.7"]
from lalr_core.chapters.ch06_orthogonal_sgdm import imagenet

on_imagenet = profile == "paper" and imagenet.imagenet_dir() is not None
if on_imagenet:  # cached units, resumable from their per-epoch checkpoints
    f57 = {v: cached(imagenet.classifier_unit, dict(S.f57_imagenet, grad_transform=v, seed=0),
                     name="ch06_imagenet") for v in ("none", "orth")}
    xs = {v: (r["history"]["epoch"], r["history"]["val_acc"]) for v, r in f57.items()}
    xlabel = "epoch"
else:
    if profile == "paper":
        print("ImageNet is not under the data root (see lalr_core.chapters.ch06_orthogonal_sgdm.imagenet.require_imagenet): "
              "fig 5.7 shows the reduced Fashion-MNIST analogue instead.")
    _, res57 = ox.CHAPTER.train(S, "fig5.7")
    xs = {v: (r["evals"]["step"], r["evals"]["val_acc"]) for v, r in zip(("none", "orth"), res57)}
    xlabel = "step (one epoch)"
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(*xs["none"], **SGDM); ax.plot(*xs["orth"], **ORTH)
ax.set_xlabel(xlabel); ax.set_ylabel("validation accuracy"); ax.legend()
out.savefig(fig, "fig5.7", params=S.as_dict(), note="ImageNet" if on_imagenet else "reduced analogue (Fashion-MNIST)")
n57 = ox.IMAGENET_VAL_IMAGES if on_imagenet else S.f57_n_val
out.record(CLAIMS["fig5.7"], fx.fig57(xs, n57, xlabel.split()[0]),   # Orth - SGDM, points
           source="67.5 % vs 61.9 % final test accuracy (ImageNet)")

# %% [markdown] tags=["needs:cifar10"]
# ## Fig 5.8 · Barlow Twins with LARS vs Orthogonal-LARS
#
# *Source:* in the unsupervised phase of Barlow Twins (ResNet-50, ImageNet, batch 1024, projector
# not orthogonalised) the Orth-LARS loss falls faster than LARS's. Reduced (our settings): BasicCNN
# trunk → projector 512-256-256, views = random crop (pad 2) + Gaussian noise 0.1, λ = 5e-3,
# batch 256, LARS (trust 1e-3, momentum 0.9, lr 0.2, wd 1.5e-6, biases/BN excluded), 3 seeds; the
# paper-scale version is `lalr_core.chapters.ch06_orthogonal_sgdm.imagenet.train_imagenet_barlow_twins` (ImageNet only).
# *Check:* Orth-LARS's mean loss over the first 100 steps (`bt_window`) is below LARS's, paired
# over the `unsup_seeds` seeds. *Is the run long enough?* The source's runs are ImageNet-long,
# ours `bt_steps` steps; an exploration outside this notebook (seed 0, longer runs; not
# reproduced here, so no numbers) did not show the speed-up later either, and the check stays on
# the run measured here, judged as measured.

# %% tags=["needs:cifar10"]
bt_cfgs = ox.barlow_twins_configs(S)
if on_imagenet:  # the paper setting: ResNet-50 Barlow Twins on ImageNet, official defaults
    per_seed = {o: [cached(imagenet.barlow_twins_unit, dict(grad_transform="orth" if o else "none"),
                           name="ch06_bt_imagenet")["steps"]["loss"].to_numpy()] for o in (False, True)}
else:
    bt = train_runs(bt_cfgs, workers=S.workers, executor=S.executor)
    per_seed = {o: [r["steps"]["loss"].to_numpy() for c, r in zip(bt_cfgs, bt) if ox.is_orthogonalised(c) == o]
                for o in (False, True)}                       # seed order
loss = {o: np.mean(v, axis=0) for o, v in per_seed.items()}
fig, ax = plt.subplots(figsize=(7, 4))
steps = np.arange(1, len(loss[False]) + 1)
ax.plot(steps, loss[False], color="C0", label="LARS"); ax.plot(steps, loss[True], color="C1", label="Orth-LARS")
ax.set_xlabel("step"); ax.set_ylabel("Barlow Twins loss"); ax.set_yscale("log"); ax.legend()
out.savefig(fig, "fig5.8", params=bt_cfgs[0].key(), seeds=list(range(S.unsup_seeds)),
            note="ImageNet" if on_imagenet else f"reduced analogue ({bt_cfgs[0].dataset})")
out.record(CLAIMS["fig5.8"], fx.fig58(per_seed, S.bt_window))   # Orth - LARS, paired by seed

# %% [markdown] tags=["long"]
# ## Fig 5.9 · a Poisson VAE trained with Adam vs Orthogonal-Adam (encoder only)
#
# *Source:* over > 200k steps, the held-out reconstruction MSE of Orth-Adam is lower than Adam's
# for most of training, most clearly between 100k and 200k steps. The thesis's model, data and
# settings are missing and its description (Poisson decoder likelihood) differs from the cited
# P-VAE (Poisson latents); we implement the thesis's description (sizes ours): MLP encoder
# 784-256-32, decoder on counts round(10 x), Adam lr 1e-3, batch 128, 3 seeds; the paper profile
# runs 200k steps. *Check:* Orth-Adam's held-out MSE is below Adam's at most checkpoints, each
# checkpoint paired over the `unsup_seeds` seeds.

# %% tags=["long"]
vae_cfgs = ox.vae_configs(S)
vae = train_runs(vae_cfgs, workers=S.workers, executor=S.executor)
mse_seeds = {o: np.array([r["evals"]["val_loss"].to_numpy() for c, r in zip(vae_cfgs, vae)
                         if ox.is_orthogonalised(c) == o]) for o in (False, True)}   # (seeds, checkpoints)
mse = {o: v.mean(axis=0) for o, v in mse_seeds.items()}
ev_steps = vae[0]["evals"]["step"]
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(ev_steps, mse[False], color="C0", label="Adam"); ax.plot(ev_steps, mse[True], color="C1", label="Orth-Adam")
ax.set_xlabel("step"); ax.set_ylabel("held-out MSE (counts$^2$)"); ax.legend()
out.savefig(fig, "fig5.9", params=vae_cfgs[0].key(), seeds=list(range(S.unsup_seeds)))
out.record(CLAIMS["fig5.9"], fx.fig59(mse_seeds, ev_steps))   # Orth - Adam per checkpoint, paired by seed

# %% [markdown] tags=["runs:fig5.10"]
# ## Figs 5.10 and 5.11 · do filters co-learn?
#
# *Source:* the |cos| between the filters of a layer spikes early under SGDM at η = 1 (filters
# learn the same thing) but not under Orth-SGDM; at η = 0.01 "the roles are reversed" (Orth higher
# and more dispersed). Eq. 5.10 is computed on filter *weights* every 10 batches (the captions say
# gradients; the text and the source's code use weights). The captions' "fourth layer
# of a ResNet-20" does not exist; at paper we use ResNet-34's layer1[2].conv2 and layer4[1].conv1
# (our choice); at quick BasicCNN-FM's conv2 and conv3. Dashed: the Chebyshev threshold
# 10/√P_l (eq. A.20); dotted: E|cos| of random vectors (seed 0 drawn). *Checks*, paired over the
# `cos_seeds` seeds (the source shows one run; one seed per cell had no interval, so a sign that
# noise could flip counted as a verdict): at η = 1 SGDM's median |cos| (mean over the sampled
# batches) is above Orth's; at η = 0.01 the roles are reversed, Orth's above SGDM's (the source's
# sentence; the earlier check "the gap shrinks or reverses" was weaker than it). With one seed
# (smoke) the sign is judged as measured, without an interval.

# %% tags=["runs:fig5.10"]
cos_cfgs, cos_res = ox.CHAPTER.train(S, "fig5.10")
cos = {(c.lr, ox.variant_of(c), c.seed): r["callbacks"]["filter_cos"] for c, r in zip(cos_cfgs, cos_res)}
gaps = {}
for lr, item in zip(S.cos_lrs, ("fig5.10", "fig5.11")):
    for layer, panel in zip(S.cos_layers, "AB"):
        fig, ax = plt.subplots(figsize=(9, 4))
        for v, off, col in (("sgdm", -0.2, "C0"), ("orth_sgdm", 0.2, "C1")):
            d = cos[(lr, v, 0)][cos[(lr, v, 0)]["layer"] == layer].reset_index(drop=True)   # seed 0 drawn
            for i, row in d.iterrows():
                bplot_stats(ax, i, row[list(FIVE_NUMBERS)], offset=off, s=2, color=col,
                            label=("SGDM" if v == "sgdm" else "Orth-SGDM") if i == 0 else None)
        P = int(d["fan_in"].iloc[0])
        ax.axhline(min(cos_threshold(P), 1), ls="--", color="k", lw=0.8, label=r"$10/\sqrt{P_l}$")
        ax.axhline(random_abs_cos_mean(P), ls=":", color="k", lw=0.8, label=r"random $E|\cos|$")
        ax.set_xlabel(f"batch / {S.cos_every}"); ax.set_ylabel("|cos| between filters"); ax.legend(fontsize=7)
        ax.set_title(f"{S.cos_model} {layer}, lr = {lr}")
        out.savefig(fig, f"{item}{panel}", params=S.as_dict(), seeds=[0])
        plt.close(fig)
        per_seed = {v: [cos[(lr, v, k)] for k in range(S.cos_seeds)] for v in ("sgdm", "orth_sgdm")}
        found = fx.filter_cos_gap(per_seed["sgdm"], per_seed["orth_sgdm"], layer, f"{item}{panel}")
        out.record(CLAIMS[f"{item}{panel}"], found)     # SGDM - Orth median |cos|
        gaps[(lr, layer)] = np.mean([fx.median_cos(a, layer) - fx.median_cos(b, layer)
                                     for a, b in zip(per_seed["sgdm"], per_seed["orth_sgdm"])])
pd.Series(gaps, name="SGDM - Orth median |cos|, mean over seeds")

# %% [markdown] tags=["runs:fig5.10", "runs:suite"]
# ## Fig 5.12 · intermediate representations become more diverse
#
# *Source:* for BasicCNN trained as in §5.4.1, the mean |cos| between distinct channels of each
# block's output, E[R_l] (eqs. 5.11–5.12), is lower under Orth-SGDM. Post-ReLU block outputs, the
# first 10 samples of every 10th batch (as the author's code does), recorded during the suite runs of every seed
# (seed 0 drawn). *Checks*, paired over the `seeds` seeds: (1) on every layer, Orth's E[R_l]
# averaged over training is below SGDM's; (2) Orth's E[R_l] (mean over layers) declines over
# training (the slope of a line fitted per seed, per 100 batches, below 0) (3) while SGDM's does
# not (its slope above 0; a flat slope stays INCONCLUSIVE), and (4) the difference the sentence
# claims: Orth's slope below SGDM's, paired by seed. The earlier "below at most (layer, batch) pairs" of one run had
# no interval; the earlier trend check tested only the first half of the source's sentence.

# %% tags=["runs:fig5.10", "runs:suite"]
rep = {v: hist[(S.rep_model, v, 0)]["callbacks"]["representations"] for v in ("sgdm", "orth_sgdm")}
fig, axs = plt.subplots(1, len(S.rep_modules), figsize=(12, 3.5), sharey=True)
for ax, layer in zip(np.atleast_1d(axs), S.rep_modules):
    for v, col in (("sgdm", "C0"), ("orth_sgdm", "C1")):
        d = rep[v][rep[v]["layer"] == layer]
        ax.scatter(d["step"] / S.rep_every, d["similarity"], s=3, color=col, alpha=0.5,
                   label="SGDM" if v == "sgdm" else "Orth-SGDM")
    ax.set_title(f"l = {S.rep_modules.index(layer) + 1}"); ax.set_xlabel(f"batch / {S.rep_every}")
np.atleast_1d(axs)[0].set_ylabel(r"$E[R_l]$"); np.atleast_1d(axs)[0].legend()
out.savefig(fig, "fig5.12", params=S.as_dict(), seeds=[0])
rep_runs = {v: [r["callbacks"]["representations"] for r in R[(S.rep_model, v)]] for v in ("sgdm", "orth_sgdm")}
f512 = fx.fig512(rep_runs, S.rep_modules)          # Orth - SGDM, paired by seed
for cid, finding in (("fig5.12-layers", f512.layers), ("fig5.12-orth-declines", f512.orth_declines),
                     ("fig5.12-sgdm-flat", f512.sgdm_flat), ("fig5.12-contrast", f512.contrast)):
    out.record(CLAIMS[cid], finding)
pd.DataFrame(f512.slopes, index=[f"seed {k}" for k in range(S.seeds)])

# %% [markdown] tags=["runs:table5.5"]
# ## Table 5.5 · normalisation alone vs orthogonalisation
#
# *Source:* test accuracy SGDM ≤ N-SGDM (per-tensor normalised) < Orth-SGDM on every model;
# CN-SGDM (each filter's gradient normalised, no ε) is between them when it trains and often
# diverges (0.00 ± 0.00: a filter with zero gradient divides by zero). Diverged runs count as 0 %
# (which reproduces the source's "0.00 ± 0.00" cells). Quick: BasicCNN-FM and ResNet-8-FM, `ablation_seeds` = 3 seeds (2 before, too few
# for a paired t interval to decide; the SGDM and Orth-SGDM runs are the suite's, so the third seed
# costs only the N-, CN- and conv-only runs). *Checks*, paired by seed, on every model: N-SGDM
# above SGDM; Orth-SGDM above each of SGDM, N-SGDM and CN-SGDM (a diverged run counts 0 %); where
# CN-SGDM trains (no seed diverged), it is above N-SGDM ("might improve over N-SGDM", tested in
# the direction it claims; the earlier "within 2 points" passed when the two were equal). The
# source's cells stand beside ours.

# %% tags=["runs:table5.5"]
t55_cfgs, t55_res = ox.CHAPTER.train(S, "table5.5")
t55 = ox.mean_se(ox.run_table(t55_cfgs, t55_res), ["model", "variant"], cols=("test_acc",))
t55 = ox.beside_source(t55, ox.read_source("5.5"), ["model", "variant"], S.source_analogue)
t55 = ox.vs_source(t55, "test_acc_mean", "source_test_acc_mean", profile)
out.save_table(t55, "table5.5", params=S.as_dict(), note="*_minus_source = ours - source")
R55 = ox.results_by(t55_cfgs, t55_res, lambda c: (c.model, ox.variant_of(c)))   # seed order
f55 = fx.table55(R55, S.t55_models)                # paired by seed, points; diverged runs count 0 %
out.record(CLAIMS["table5.5-n"], f55.n_over_sgdm,
           source="N - SGDM: +0.04 (BasicCNN), +2.11, +10.00, +3.87, +3.61 points")
out.record(CLAIMS["table5.5-orth"], f55.orth_best)
out.record(CLAIMS["table5.5-cn"], f55.cn_over_n,
           source="CN-SGDM diverged on 3 of 5 models; else +0.81, +0.84 points above N-SGDM")
t55.pivot(index="model", columns="variant", values=["test_acc_mean", "source_test_acc_mean"]).round(2)

# %% [markdown] tags=["runs:fig5.13", "runs:suite"]
# ## Fig 5.13 · temporarily disabled parameters
#
# *Source:* Orth-SGDM produces about 10× more "temporarily disabled parameters" (weights whose
# gradient is exactly zero for a batch) in ResNet-50's layer2[1].conv2 — a regularising effect.
# We count exact zeros of the raw gradient (before orthogonalisation) per batch and also
# |g| ≤ 1e-4 (the author's code); blue scatter, orange running mean (N = 50,
# `tdp_window`). Panels A and B (drawn, seed 0): the source's model, or at quick scale its analogue
# ResNet-8-FM's layer2[0].conv2, probed during the suite runs of every seed. *Checks:* Orth's final
# running mean of the count is at least 2× SGDM's (our criterion at reduced scale; the source:
# about 10×), judged on log2(Orth / SGDM), one value per seed (t interval), for exact zeros and for
# |g| ≤ 1e-4.
#
# *Deviation (a setting that can show the mechanism, not a source model):* exact zeros need a
# network without batch norm. In ResNet-8-FM and the source's ResNet-50, batch norm follows every
# conv and re-centres each channel over the batch, so a filter's gradient is exactly zero only if
# its ReLU is off for every example and position of the batch. The exact-zero check therefore
# runs on `tdp_exact_model`: BasicCNN without batch norm (conv with bias, then ReLU; its conv2,
# `tdp_exact_layer`), trained like the suite (same data, optimiser, epochs and seeds). There, a
# filter that its ReLU switches off on a whole batch has an exactly zero gradient, the mechanism
# the source describes. The |g| ≤ 1e-4 check stays on the drawn model, as in the source's code.

# %% tags=["runs:fig5.13", "runs:suite"]
def zero_grad_runs(model):
    """The zero-gradient probe's record of every seed's SGDM and Orth-SGDM run of ``model``."""
    pool = R if (model, "sgdm") in R else ox.results_by(*ox.CHAPTER.train(S, "fig5.13"), lambda c: (c.model, ox.variant_of(c)))
    return {v: [r["callbacks"]["zero_grad"] for r in pool[(model, v)]] for v in ("sgdm", "orth_sgdm")}


def draw_tdp(records, model, layer, column, name, ylabel):
    """One panel per optimiser: seed 0's per-batch counts and their running mean."""
    for v, panel in (("sgdm", "A"), ("orth_sgdm", "B")):
        fig, ax = plt.subplots(figsize=(7, 4))
        d = records[v][0]
        ax.scatter(d["step"], d[column], s=4, color="C0", alpha=0.25, label="per batch")
        ax.plot(d["step"], ox.running_mean(d[column], S.tdp_window), color="C1",
                label=f"running mean (N = {S.tdp_window})")
        ax.set_xlabel("Batch #"); ax.set_ylabel(ylabel); ax.legend()
        ax.set_title(f"{model} {layer}: {'SGDM' if v == 'sgdm' else 'Orth-SGDM'}")
        out.savefig(fig, f"{name}{panel}", params=S.as_dict(), seeds=[0])


tdp_runs = zero_grad_runs(S.tdp_model)
draw_tdp(tdp_runs, S.tdp_model, S.tdp_layer, "below_eps", "fig5.13", "count (eps=1e-4)")
exact_runs = zero_grad_runs(S.tdp_exact_model)
draw_tdp(exact_runs, S.tdp_exact_model, S.tdp_exact_layer, "zero", "fig5.13_exact", "count (g = 0 exactly)")
f513 = fx.fig513(exact_runs, tdp_runs, S.tdp_window, exact_has_batch_norm=ox.has_batch_norm(S.tdp_exact_model),
                 exact_where=f"{S.tdp_exact_model} {S.tdp_exact_layer}", eps_where=f"{S.tdp_model} {S.tdp_layer}")
out.record(CLAIMS["fig5.13A"], f513.exact, source="about 10x")
out.record(CLAIMS["fig5.13B"], f513.eps, source="about 10x")
ends_exact, ends_eps = f513.ends_exact, f513.ends_eps
pd.DataFrame({f"exact zeros ({S.tdp_exact_model})": ends_exact, f"|g| <= 1e-4 ({S.tdp_model})": ends_eps})

# %% [markdown] tags=["runs:table5.6"]
# ## Table 5.6 · orthogonalising only the convolutions
#
# *Source:* orthogonalising only the conv layers loses nothing (BasicCNN 76.80 vs 76.67 %,
# ResNet-20 87.70 vs 87.12 %), and both beat SGDM. Quick: BasicCNN-FM and ResNet-8-FM,
# `ablation_seeds` = 3 seeds. *Checks*, paired by seed, on every model: conv-only Orth-SGDM does not
# reduce the test accuracy: conv-only − all-layer > −1 point (the source gives no margin here; one
# point is its own criterion for "close in final performance", §5.4.1: "within one percentage
# point or above"); both orthogonal variants above SGDM. The source's cells stand beside ours.

# %% tags=["runs:table5.6"]
t56_cfgs, t56_res = ox.CHAPTER.train(S, "table5.6")
t56 = ox.mean_se(ox.run_table(t56_cfgs, t56_res), ["model", "variant"])
t56 = ox.beside_source(t56, ox.read_source("5.6"), ["model", "variant"], S.source_analogue)
t56 = ox.vs_source(ox.vs_source(t56, "test_acc_mean", "source_test_acc_mean", profile),
                   "test_loss_mean", "source_test_loss_mean", profile)
out.save_table(t56, "table5.6", params=S.as_dict(), note="*_minus_source = ours - source")
R56 = ox.results_by(t56_cfgs, t56_res, lambda c: (c.model, ox.variant_of(c)))   # seed order
f56 = fx.table56(R56, S.t56_models)                # paired by seed, points
out.record(CLAIMS["table5.6-conv"], f56.conv_only,
           source="conv - all: +0.13 (BasicCNN), +0.26 (ResNet-34), +0.58 (ResNet-20) points")
out.record(CLAIMS["table5.6-vs-sgdm"], f56.vs_sgdm,
           source="all-layer / conv-only - SGDM: BasicCNN +3.07 / +3.20, ResNet-34 +9.56 / +9.82, ResNet-20 +7.98 / +8.56")
t56.pivot(index="model", columns="variant", values=["test_acc_mean", "source_test_acc_mean"]).round(2)

# %% [markdown] tags=["runs:fig5.14"]
# ## Fig 5.14 · small mini-batches
#
# *Source:* at mini-batch 4 Orth-SGDM is worse than SGDM (the SVD compounds the gradient noise);
# it overtakes from batch 32 (ResNet-20, CIFAR-10). The figure's model and metric are unstated; we
# plot validation accuracy against batch size for both (our choice). Quick: BasicCNN-FM on a 4k
# subset, one epoch, batch 4 / 32 / 256, lr 1e-2 unscaled, 3 seeds. One epoch of 4k images is 16
# steps at batch 256, so there the comparison is early training, where Orth leads at every batch
# size (figs 5.1, 5.3); the source trains 100 epochs. *Checks*, validation accuracy paired by seed:
# at the smallest batch Orth-SGDM is below SGDM; at every batch from `f514_overtake` (the source's
# 32) up, it is above (the earlier single check let "a smaller gap" at batch 4 pass for "worse").

# %% tags=["runs:fig5.14"]
f514_cfgs, f514_res = ox.CHAPTER.train(S, "fig5.14")
f514 = ox.run_table(f514_cfgs, f514_res)
f514s = ox.mean_se(f514, ["batch_size", "variant"], cols=("val_acc",))
fig, ax = plt.subplots(figsize=(6, 4))
for v, style in (("sgdm", SGDM), ("orth_sgdm", ORTH)):
    d = f514s[f514s.variant == v]
    ax.errorbar(d["batch_size"], d["val_acc_mean"], yerr=d["val_acc_se"], marker="o", capsize=3, **style)
ax.set_xscale("log", base=2); ax.set_xlabel("mini-batch size"); ax.set_ylabel("validation accuracy (%)"); ax.legend()
out.savefig(fig, "fig5.14", params=S.as_dict())
R514 = ox.results_by(f514_cfgs, f514_res, lambda c: (c.batch_size, ox.variant_of(c)))   # seed order
f514 = fx.fig514(R514, S.f514_batches, S.f514_overtake, S.n_val)   # Orth - SGDM, points, paired by seed
out.record(CLAIMS["fig5.14-small"], f514.small, source="batch 4: Orth worse (figure only, no numbers)")
out.record(CLAIMS["fig5.14-large"], f514.large)

# %% [markdown] tags=["runs:figI"]
# ## Appendix I · figs I.1 and I.2 · symmetry probe
#
# For batch t and final batch τ, per filter of conv2: $\phi_t=S_{cos}(\theta_\tau-\theta_t,\nabla\theta_t)$
# (eq. 4.56) and $\phi_t(\pi)=S_{cos}(\pi\theta_\tau-\theta_t,\nabla\theta_t)$ with a random filter
# permutation π redrawn every batch (eq. I.8). *Source:* the gradients are anti-correlated with the
# direction to the solution (φ < 0), the permuted solution gives mostly noise, and skip connections
# (fig I.2) remove the distribution shifts of φ(π). Training setup unstated: 5.4.1-untuned SGDM
# (our choice); the skip model adds an average-pooled input to blocks 2 and 3 after their ReLU.
# Tufte boxes over filters for every 5th batch (seed 0); lines at ±10/√P_l. `sym_seeds` = 3 runs per
# model (the source shows one; the skip comparison needs seeds to have an interval).
#
# *The own-update null.* $\theta_t$ is recorded before step $t$, so $\theta_\tau-\theta_t$ contains
# step $t$'s own update $-\eta\nabla\theta_t$ (and its momentum echo over the next steps), which
# makes $\phi_t$ negative whatever the rest of the trajectory does: a median φ < 0 measured from
# $\theta_t$ holds partly by construction. The check therefore measures from $\theta_{t+k}$,
# $k$ = `sym_skip` steps later (by then the echo has decayed to $0.9^k$ of the step, under 1 % at
# quick), $S_{cos}(\theta_\tau-\theta_{t+k},\nabla\theta_t)$, and the permuted probe from the same
# point; the plot and the table still show φ from $\theta_t$ for comparison. *Checks*, over
# seeds: median φ (from $\theta_{t+k}$) < 0 while |median φ(π)| is smaller; with skips the distribution shifts of φ(π) are
# smaller: the per-batch centre of φ(π), in units of its sampling noise over the filters
# (`ox.centre_shift`, about 1 for zero-mean noise), is lower with skips, paired by seed (the earlier
# |mean φ(π)| over the whole run averaged the shifts away).

# %% tags=["runs:figI"]
sym_cfgs, sym_res = ox.CHAPTER.train(S, "figI")
RI = ox.results_by(sym_cfgs, sym_res, lambda c: c.model)   # model -> runs in seed order
for model, item in zip(S.sym_models, ("figI.1", "figI.2")):
    sym = RI[model][0]["callbacks"]["symmetry"]            # seed 0, drawn
    fig, ax = plt.subplots(figsize=(10, 4))
    keep = range(0, len(sym["steps"]), max(1, 5 // S.sym_every))
    for j, i in enumerate(keep):
        for arr, off, col, lab in ((sym["phi"], -0.2, "C0", r"$\phi_t$"), (sym["phi_perm"], 0.2, "C1", r"$\phi_t(\pi)$")):
            bplot(ax, j, arr[i], offset=off, s=1.5, color=col, label=lab if j == 0 else None)
    k = cos_threshold(sym["fan_in"])      # 10/sqrt(P_l), P_l = 32*3*3 = 288 for conv2
    for sgn in (1, -1):
        ax.axhline(sgn * k, ls="--", color="k", lw=0.8)
    ax.set_xlabel("batch / 5"); ax.set_ylabel("cosine"); ax.set_title(model); ax.legend(fontsize=7)
    out.savefig(fig, item, params=S.as_dict(), seeds=[0])
    plt.close(fig)
sym_f = fx.symmetry({m: [r["callbacks"]["symmetry"] for r in RI[m]] for m in S.sym_models}, *S.sym_models)
for model, item in zip(S.sym_models, ("figI.1", "figI.2")):
    out.record(CLAIMS[f"{item}-phi"], sym_f.phi[model])
out.record(CLAIMS["figI.2-skip"], sym_f.skip)       # skip - plain centre shift, paired by seed
display(pd.DataFrame(sym_f.shift, index=[f"seed {k}" for k in range(S.sym_seeds)]))
sym_f.medians.round(3)

# %% [markdown] tags=["runs:classifier_null", "runs:suite"]
# ## The classifier's null direction: complete or drop (ours, not a source item)
#
# Under softmax cross-entropy the classifier's weight gradient $G=(P-Y)^\top H/B$ has rows that
# sum to zero, so its rank is at most $C-1$. Its $UV^\top$ still has $C$ unit singular values: one
# direction, $\tfrac{1}{\sqrt C}\mathbf 1 v^\top$ with $v$ picked by the SVD routine from rounding
# noise, is a completion, not a property of the gradient. The source's code (`orth_optim`:
# `torch.linalg.svd(G, full_matrices=False)` on `grad.flatten(1)`, then `u @ vt`) keeps it; so
# do we (`GradTransform(null="complete")`, the default), and we compare `null="drop"`
# ($U_rV_r^\top$, what Newton–Schulz gives). Under SGDM with coupled weight decay the completed
# direction only adds the same number to every logit, so the softmax, the loss and every other
# gradient are unchanged: in exact arithmetic the trained network is the same. Under Adam each
# weight's own scaling mixes it into the rest. The direction itself cannot be reproduced step by
# step: a last-bit change of $G$ makes the SVD pick another.
#
# Measured here, from the seed-0 Orth-SGDM run's initialisation and batches: (1) the classifier's
# first gradient (rank, the completion's share $1/\sqrt C$ of the update's Frobenius norm, its
# form as one common row, Newton–Schulz's share); (2) `null_steps` float64 steps of complete vs
# drop, under SGDM and under Adam (lr `t51_adam_lr`), where rounding is far below any effect;
# (3) `null_f32_steps` float32 steps as the runs train, with a *control*: the complete update
# with the classifier's rows centred, which equals the drop update in exact arithmetic and so
# shows how far rounding alone carries two runs apart; (4) test accuracy of complete vs drop over
# `null_seeds` seeds (paired by seed), judged against the gain the source reports for leaving the
# classifier out altogether (table 5.6, conv-only minus all layers: BasicCNN +0.13, ResNet-20
# +0.58 points; ResNet-8-FM stands for ResNet-20), and drop against Newton–Schulz where the suite
# trains it. *Deviations:* the quick profile's models and data (the source's: CIFAR-10 BasicCNN,
# ResNet-20, ResNet-34); the probes run on the CPU. With one seed the interval is the paired
# bootstrap over test examples, which leaves out the run-to-run spread that (3) shows.

# %% tags=["runs:classifier_null", "runs:suite"]
from lalr_core.chapters.ch06_orthogonal_sgdm import classifier_null as cn

null_grad = cn.gradient_table(S)          # one classifier gradient per model, at initialisation
null_probe = cn.probe_table(S)            # complete vs drop on the same batches (cached)
null_probe_max = cn.probe_summary(null_probe)
fig, axes = plt.subplots(len(S.null_probe), 2, figsize=(12, 4 * len(S.null_probe)), squeeze=False)
for (ax64, ax32), (model, d) in zip(axes, null_probe.groupby("model", sort=False)):
    for opt, ls in (("sgdm", "-"), ("adam", "--")):
        e = d[(d.precision == "float64") & (d.optimizer == opt) & (d.run == "complete")]
        for col, color in (("classifier_diff", "C0"), ("visible_diff", "C1"), ("logit_diff", "C2")):
            ax64.plot(e["step"], e[col].clip(lower=1e-18), ls=ls, color=color, label=f"{col} ({opt})")
    for run, color in (("complete", "C1"), ("control", "k")):
        e = d[(d.precision == "float32") & (d.run == run)]
        ax32.plot(e["step"], e["logit_diff"].clip(lower=1e-18), color=color, label=f"{run} vs drop")
    ax64.set_title(f"{model}, float64: complete vs drop"); ax32.set_title(f"{model}, float32, SGDM: centred logits")
    for ax in (ax64, ax32):
        ax.set_yscale("log"); ax.set_xlabel("step"); ax.set_ylabel("max |difference|"); ax.legend(fontsize=7)
out.savefig(fig, "classifier_null_probe", params=S.as_dict(),
            note="not a source item: complete vs drop on the same batches; visible_diff = classifier rows centred")
exact = null_probe_max.xs(("float64", "sgdm", "complete"), level=("precision", "optimizer", "run"))
out.check("classifier_null", "(ours, not the source's) under SGDM the completed null direction changes "
          "nothing the network computes: complete and drop agree to 1e-9 in float64 while their "
          "classifiers differ", bool(exact["invisible"].all()), kind="sanity",
          ours=exact.drop(columns="invisible").to_dict(orient="index"),
          detail=f"{S.null_steps} float64 steps; 1e-9 bounds float rounding, an effect would be of the step's size")
null_grad.round(8)

# %% tags=["runs:classifier_null", "runs:suite"]
null_probe_max

# %% tags=["runs:classifier_null", "runs:suite"]
null_cfgs, null_cbs = ox.null_configs(S)   # complete runs = the suite's Orth-SGDM runs (cached)
null_res = train_runs(null_cfgs, callbacks=null_cbs, workers=S.workers, executor=S.executor)
null_tol = {m: cn.source_gap(m, ox.read_source("5.6"), S.source_analogue) for m in S.null_seeds}
null_acc, null_ev = cn.null_accuracy(null_cfgs, null_res, null_tol)
out.save_table(null_acc, "classifier_null", params=S.as_dict(),
               note="not a source item: test accuracy (%) of Orth-SGDM with the classifier's null direction completed / dropped / Newton-Schulz")
for m, tol in null_tol.items():
    claim = (f"(ours, not the source's) completing the classifier's null direction moves {m}'s test "
             "accuracy by less than table 5.6's conv-only gain")
    if m in null_ev:
        out.check("classifier_null", claim, null_ev[m], kind="sanity", ours=null_ev[m].text(),
                  source=f"conv-only - all layers: {tol:+.2f} points ({S.source_analogue.get(m, m)})",
                  quote=cn.TABLE56_QUOTE)
    else:
        out.check("classifier_null", claim, None, kind="sanity",
                  detail=f"table 5.6 has no counterpart of {m}: no gap to judge by")
null_acc

# %% tags=["runs:classifier_null", "runs:suite"]
display(Markdown("**Reading it** (this run's probes).\n\n" + cn.reading(null_probe_max)))

# %% [markdown] tags=["runs:classifier_null", "runs:suite"]
# **Table 5.6 in this light.** Conv-only Orth-SGDM gives the classifier its raw gradient (Frobenius
# norm `frobenius` above) instead of $C-1$ unit directions plus the completed one (norm $\sqrt C$).
# Under SGDM the completed direction is invisible, so it cannot produce the difference between
# table 5.6's two orthogonal columns: that difference is the orthogonalisation of the $C-1$
# directions the network does see (the classifier's step size and its equalised singular values).
# The same holds for Newton–Schulz against the SVD (the `ns_vs_svd` table): Newton–Schulz drops
# the completion and SGDM cannot see the SVD's, so their gap is the band of singular values (and
# the run-to-run spread), not the null direction. Under Orth-Adam (table 5.1) the completion is
# visible (the probe's Adam lines) and could matter; we have not measured its accuracy effect.
