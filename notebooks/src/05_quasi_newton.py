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
# **Source.** Tuddenham (2026), thesis ch. 4 and appendices E, F, H
# (`../shared/seeds/004_1023ee9970b6fc33.txt`; digest `spec/seed004_ch4_quasi_newton.md`). The
# chapter's main results are negative: the quasi-Newton step ends worse than SGD, the class
# gradients are not orthogonal, and the gradient power iteration with one vector does not
# converge. We test each claim, whichever way it falls.
#
# **Setting.** `quick` is the digest's reduction (its sec. 6) on the sklearn digits (8×8, the
# collection's fixed 1347 / 450 split; held-out numbers are on the 450 test images), with
# BasicCNN at half width (16 channels, batch norm) standing in for the digest's TinyCNN-BN and
# BasicCNN without batch norm at a quarter width (1,338 parameters) where the exact Hessian is
# needed. The known-matrix experiments of listing F.1 and appendix H run at the source's own scale.
# `paper`: ResNet-9 / CIFAR-10, batch 1024, 50 epochs (fig 4.6's caption; app. E.4 for the
# tables), 3 seeds. The thesis shows one run per setting; comparisons here are paired by seed
# (same initialisation and batch order) and judged on 95 % intervals (`lalr_core.core.evidence`).
#
# **The method** (`lalr_core.methods.quasi_newton`, optimiser `"qn_class_subspace"`). Class
# gradients c_k (the mean gradient of logit k over the class-k examples of a batch, eq. 4.25)
# and the eigenvalue estimates λ_k (eq. 4.35) are smoothed with rate γ = 0.9 (app. E.4); the step
# (eq. 4.33) is the Newton step along v_k = c_k/‖c_k‖ plus the gradient step on the rest. The
# optimiser gathers the class gradients by hooks during the loop's own backward pass (one extra
# backward per class), so the shared training loop is unchanged. Choices where the source is
# silent (weight decay added to g as torch's SGD does; a class absent from a batch keeps its
# state; no momentum in the QN step) are named in the module.

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
from torch import nn

from lalr_core.chapters import ch05_quasi_newton as qn
from lalr_core.core.data import load_data
from lalr_core.core.evidence import every, paired_difference, texts
from lalr_core.core.figures import FigureWriter, set_style
from lalr_core.core.train import run_model
from lalr_core.core.units import train_runs
from lalr_core.methods import cumulants as cm
from lalr_core.methods import curvature as cv
from lalr_core.methods import test_functions as tf
from lalr_core.methods import top_eigen as te
from lalr_core.methods.trajectory import path_metrics

S = qn.CHAPTER.settings(profile, overrides)   # validated before any compute
out = FigureWriter("05_quasi_newton", profile, "05_quasi_newton.ipynb")
set_style()
T0 = time.perf_counter()
STYLE = {"sgd": dict(color="C0", label="SGD"), "sgdm": dict(color="C0", label="SGDM"),
         qn.QN: dict(color="C3", label="quasi-Newton")}
pd.Series(S.as_dict(), dtype=object).to_frame("setting")

# %% [markdown]
# ## Training · every run in one cached, resumable sweep
#
# Fig 4.6's SGD and quasi-Newton runs (and the same pair at `diverge_lr`), tables E.1 / E.2's
# SGDM and quasi-Newton runs at three learning rates, and fig 4.11's small CNN (its final weights).

# %%
cfgs, cbs = qn.CHAPTER.all_runs(S)
res = dict(zip(cfgs, train_runs(cfgs, callbacks=cbs, workers=S.workers), strict=True))
F46 = {k: res[c] for k, c in qn.fig46_runs(S).items()}
DIV = {k: res[c] for k, c in qn.fig46_runs(S, S.diverge_lr).items()}
TAB = {k: res[c] for k, c in qn.table_runs(S).items()}
SEEDS = range(S.seeds)

# %% [markdown]
# ## Fig 4.6 · validation loss, SGD vs quasi-Newton
#
# *Source:* with the same hyper-parameters (lr 0.01, momentum 0, weight decay 5e-4), the
# quasi-Newton method is "much more volatile, slower to improve in general, and does end on
# average with lower accuracy"; both diverge for η > 10⁻¹. *Checks (digest sec. 6):* (1) no
# end-of-training gain: QN's final held-out loss minus SGD's > −0.02, paired by seed; (2) more
# volatile: the standard deviation of QN's epoch-to-epoch loss changes minus SGD's > 0, paired;
# (3) every run of both diverges at `diverge_lr` (NaN, or a final loss above the initial ln 10).
# The digest asks nothing of the first epochs: its prototype showed QN ahead early.

# %%
fig, ax = plt.subplots(figsize=(7, 4.5))
for arm in qn.ARMS:
    curves = np.stack([qn.held_out_loss(F46[(arm, s)]) for s in SEEDS])
    e = np.arange(1, curves.shape[1] + 1)
    for c in curves:
        ax.plot(e, c, color=STYLE[arm]["color"], alpha=0.25, lw=0.8)
    ax.plot(e, np.nanmean(curves, 0), lw=2, **STYLE[arm])
ax.set(xlabel="epoch", ylabel="held-out loss", yscale="log",
       title=f"fig 4.6 (reduced): lr {S.fig46_lr:g}, {S.seeds} seeds (thin) and their mean")
ax.legend()
out.savefig(fig, "fig4.6", params=S.as_dict(), seeds=list(SEEDS))
plt.show()
sgd = [F46[("sgd", s)] for s in SEEDS]
qnr = [F46[(qn.QN, s)] for s in SEEDS]
ev_end = paired_difference(qn.per_seed(qnr, qn.final_loss), qn.per_seed(sgd, qn.final_loss),
                           threshold=-0.02)
ev_vol = paired_difference(qn.per_seed(qnr, qn.volatility), qn.per_seed(sgd, qn.volatility))
div = {arm: sum(qn.diverged(DIV[(arm, s)]) for s in SEEDS) for arm in qn.ARMS}
QUOTE46 = ("the quasi-Newton's method is much more volatile, slower to improve in general, and "
           "does end on average with lower accuracy")
out.check("fig4.6", "no end-of-training gain: QN's final held-out loss is not below SGD's by more "
          "than 0.02", ev_end, ours=f"QN − SGD final loss: {ev_end.text(3)}", quote=QUOTE46,
          detail="paired by seed")
out.check("fig4.6", "QN is more volatile: larger spread of its epoch-to-epoch loss changes",
          ev_vol, ours=f"QN − SGD spread of Δloss: {ev_vol.text(3)}", quote=QUOTE46, detail="paired by seed")
out.check("fig4.6", f"both methods diverge at lr {S.diverge_lr:g}",
          all(n == S.seeds for n in div.values()),
          ours={STYLE[a]["label"]: f"{n} of {S.seeds} runs diverged" for a, n in div.items()},
          quote="both methods diverge with $\\eta > 10^{-1}$")
pd.DataFrame({STYLE[a]["label"]: {"final loss": qn.per_seed([F46[(a, s)] for s in SEEDS], qn.final_loss).mean(),
                                  "final acc (%)": qn.per_seed([F46[(a, s)] for s in SEEDS], qn.final_accuracy).mean(),
                                  "spread of Δloss": qn.per_seed([F46[(a, s)] for s in SEEDS], qn.volatility).mean()}
              for a in qn.ARMS}).round(4)

# %% [markdown]
# ## Tables E.1 / E.2 · accuracy and loss of QN and SGDM at three learning rates
#
# *Settings (app. E.4):* SGDM momentum 0.9, QN γ = 0.9, no weight decay; the thesis does not state
# the model, epochs, number of runs or split (digest sec. 5 item 2: its ResNet-9 / CIFAR-10 at
# paper, the digits here). *Source:* QN is below SGDM at every η, and more so at small η (its
# numbers are beside ours; at quick the data and model differ, so they are context, not a
# target). *Checks (digest sec. 6):* SGDM's accuracy minus QN's > −1 point at each η, paired by
# seed; QN's loss degrades more as η falls: (QN(0.01) − QN(0.1)) − (SGDM(0.01) − SGDM(0.1)) > 0.

# %%
source = pd.read_csv(qn.REFERENCE_TABLE)
rows = []
for lr in S.table_lrs:
    for arm in qn.TABLE_ARMS:
        runs = [TAB[(arm, lr, s)] for s in SEEDS]
        src = source[(source.lr == lr) & (source.arm == ("qn" if arm == qn.QN else "sgdm"))]
        rows.append({"lr": lr, "method": STYLE[arm]["label"],
                     "accuracy (%)": qn.per_seed(runs, qn.final_accuracy).mean(),
                     "source accuracy (%)": float(src.accuracy.iloc[0]) if len(src) else np.nan,
                     "loss": np.nanmean(qn.per_seed(runs, qn.final_loss)),
                     "source loss": float(src.loss.iloc[0]) if len(src) else np.nan})
table = pd.DataFrame(rows)
out.save_table(table, "tableE", params=S.as_dict(),
               note=f"final held-out accuracy and loss, mean of {S.seeds} seeds; the source's beside")
acc_parts = {f"lr {lr:g}": paired_difference(
    qn.per_seed([TAB[("sgdm", lr, s)] for s in SEEDS], qn.final_accuracy),
    qn.per_seed([TAB[(qn.QN, lr, s)] for s in SEEDS], qn.final_accuracy), threshold=-1.0)
    for lr in S.table_lrs}
out.check("tableE.1", "SGDM's accuracy is at least QN's (within 1 point) at every learning rate",
          every(acc_parts), ours=texts(acc_parts),
          source={f"lr {r.lr:g}": f"SGDM {int(r.sgdm)} vs QN {int(r.qn)}"
                  for r in source.pivot(index="lr", columns="arm", values="accuracy").reset_index().itertuples()},
          quote="Table E.1: Accuracy (%)", detail="SGDM − QN, points, paired by seed")
hi, lo = S.table_lrs[0], S.table_lrs[-1]


def loss_drop(arm):
    return (qn.per_seed([TAB[(arm, lo, s)] for s in SEEDS], qn.final_loss)
            - qn.per_seed([TAB[(arm, hi, s)] for s in SEEDS], qn.final_loss))


ev_e2 = paired_difference(loss_drop(qn.QN), loss_drop("sgdm"))
out.check("tableE.2", f"QN's loss degrades more than SGDM's from lr {hi:g} to {lo:g}", ev_e2,
          ours=f"(QN({lo:g}) − QN({hi:g})) − (SGDM({lo:g}) − SGDM({hi:g})): {ev_e2.text(3)}",
          source="(0.5362 − 0.3574) − (0.3411 − 0.3304) = 0.1681", quote="Table E.2: Loss",
          detail="paired by seed")
table.round(3)

# %% [markdown]
# ## Fig 4.11 · the top of the Hessian's spectrum
#
# *Source:* the top 30 eigenvalues of the true Hessian of a ~60k-parameter CNN: most near zero,
# a few large; C "seems a reasonable cut-off", but C could not be read off the spectrum. The
# thesis does not give that CNN (digest sec. 5 item 11); here: BasicCNN without batch norm at a
# quarter width (1,338 parameters), trained 20 epochs with SGDM (0.05 / 0.9), and the exact
# Hessian of its mean loss on the first `hessian_examples` training images (float64,
# `curvature.dense_hessian`), fully diagonalised. *Deviation:* the digest takes all training
# images; 256 keep the cell within the chapter's time budget (the Hessian costs P = 1,338
# Hessian-vector products over the examples). *Checks (digest sec. 6):* the top
# eigenvalue exceeds 10× the median of the 30 plotted; more than 90 % of all eigenvalues have
# |λ| < 0.01 λ_max. Lanczos (`eigsh`) on the same operator is checked against the dense result.

# %%
hcfg = qn.hessian_run(S)
model = run_model(hcfg)
model.load_state_dict(res[hcfg]["callbacks"]["weights"])
model = model.double().eval()
data = load_data(hcfg.dataset, n_train=hcfg.n_train, n_val=0, n_test=hcfg.n_test,
                 synthetic=hcfg.synthetic, device="cpu")
n_h = len(data.y_train) if S.hessian_examples is None else min(S.hessian_examples, len(data.y_train))
Xh, yh = data.X_train[:n_h].double(), data.y_train[:n_h]
H = cv.dense_hessian(model, nn.CrossEntropyLoss(), Xh, yh)
eig = torch.linalg.eigvalsh(0.5 * (H + H.T)).numpy()
top30 = np.sort(eig)[-30:]
lanczos = cv.top_eigenpairs(cv.curvature_operator(model, nn.CrossEntropyLoss(), [(Xh, yh)]), k=5)
fig, ax = plt.subplots(figsize=(7, 4.5))
ax.plot(np.arange(1, 31), top30, "o-")
ax.set(xlabel="index (ascending)", ylabel="eigenvalue",
       title=f"fig 4.11 (reduced): top 30 of {len(eig)} Hessian eigenvalues, {n_h} examples")
out.savefig(fig, "fig4.11", params=S.as_dict(), seeds=[0])
plt.show()
lam_max = float(eig.max())
small = float(np.mean(np.abs(eig) < 0.01 * lam_max))
out.check("fig4.11", "a few large eigenvalues: the top one exceeds 10x the median of the top 30",
          bool(lam_max > 10 * np.median(top30)), ours=f"λ_max {lam_max:.4g}, median of top 30 {np.median(top30):.4g}",
          quote="most eigenvalues are clustered near zero, indicating flat directions in the loss "
                "landscape, while a small number of large eigenvalues dominate")
out.check("fig4.11", "most eigenvalues are near zero: > 90 % have |λ| < 0.01 λ_max", small > 0.9,
          ours=f"{100 * small:.1f} % of {len(eig)}",
          quote="most eigenvalues are clustered near zero, indicating flat directions in the loss "
                "landscape, while a small number of large eigenvalues dominate")
pd.DataFrame({"dense eigvalsh": np.sort(eig)[::-1][:5], "Lanczos (eigsh)": lanczos.values.cpu().numpy(),
              }).assign(rel_diff=lambda d: (d["Lanczos (eigsh)"] / d["dense eigvalsh"] - 1).abs())

# %% [markdown]
# ## Figs 4.12, 4.13, 4.17, 4.18 · power iteration on a known matrix (listing F.1, fixed)
#
# H = XᵀX with X ~ N(0, 1) of 100 × 100. *Fig 4.12:* power iteration with the Hessian itself
# (stop when the estimate ‖Hv‖ changes by < 0.05). *Fig 4.13:* the same using only the gradient
# of one random point, g = H r with r ~ 0.1·N(0, I): "neither value is converging". *Fig 4.17A:*
# 1000 such gradients per iterate. *Figs 4.17B, 4.18:* a rolling window of the last s gradients,
# one replaced per iterate (s = 1000 as fig 4.17B's caption; the listing's default 100 is fig
# 4.18's first panel). Listing F.1's bugs (removed `torch.eig` and unsorted eigenvalues, the
# undefined `li_norm`, no seeds, float32, unnormalised start) are fixed in
# `lalr_core.methods.top_eigen` and named there. *Checks (digest sec. 6):* 4.12: |cos φ| > 0.99
# at the stop and the estimate within 1 %; also over `known_seeds` matrices (the stop rule is
# absolute, so a small eigen-gap can stop it early); 4.13: mean |cos φ| over the last 50
# iterates < 0.5 and the estimate's coefficient of variation > 0.2; 4.17A: |cos φ| > 0.98 over
# the last 10 iterates and the estimate within 5 %; 4.17B: mean |cos φ| over the last 1000
# iterates > 0.9 with dips below 0.97; 4.18: the late mean |cos φ| rises and its spread falls as s
# grows.

# %%
H0 = te.random_gram(S.known_size, seed=0)
lam0, v0 = te.top_eigenpair(H0)
r412 = te.power_iteration(H0, seed=0, reference=v0)
r413 = te.sampled_gradient_power_iteration(H0, s=1, seed=0, reference=v0)
r417a = te.sampled_gradient_power_iteration(H0, s=min(1000, 10 * S.known_size), seed=0, reference=v0)
fig, axes = plt.subplots(2, 3, figsize=(15, 6), sharex="col")
for j, (r, name) in enumerate(((r412, "fig 4.12: H v"), (r413, "fig 4.13: one gradient"),
                               (r417a, "fig 4.17A: 1000 gradients"))):
    axes[0, j].plot(np.arange(1, r.iters + 1), r.cos)
    axes[0, j].set(ylim=(-1.05, 1.05), ylabel="cos φ", title=name)
    axes[1, j].plot(np.arange(1, r.iters + 1), r.values)
    axes[1, j].axhline(lam0, color="C1", label="true λ")
    axes[1, j].set(xlabel="iterate", ylabel="λ estimate")
    axes[1, j].legend(fontsize=8)
out.savefig(fig, "fig4.12-4.13-4.17A", params=S.as_dict(), seeds=[0])
plt.show()
out.check("fig4.12", "power iteration with H converges: |cos φ| > 0.99 at the stop, λ within 1 %",
          bool(abs(r412.cos[-1]) > 0.99 and abs(r412.value / lam0 - 1) < 0.01),
          ours=f"{r412.iters} iterates, cos {r412.cos[-1]:+.4f}, λ̂ {r412.value:.2f} vs {lam0:.2f}",
          source="24 iterations, cos −0.998, λ 381.0 vs 381.2 (digest's run of the listing)",
          quote="Estimating the top eigenvalue and eigenvector of a known matrix using the power "
                "iteration method. $\\cos \\phi$ is the cosine between the true eigenvector and the "
                "estimated one.")
many = [te.power_iteration(te.random_gram(S.known_size, seed=k), seed=k,
                           reference=te.top_eigenpair(te.random_gram(S.known_size, seed=k))[1])
        for k in range(S.known_seeds)]
frac = np.mean([abs(r.cos[-1]) > 0.99 for r in many])
tail = r413.cos[-min(50, r413.iters):]
cv413 = float(np.std(r413.values) / np.mean(r413.values))
out.check("fig4.13", "one gradient per iterate does not converge: late mean |cos φ| < 0.5 and the "
          "estimate's coefficient of variation > 0.2", bool(np.mean(np.abs(tail)) < 0.5 and cv413 > 0.2),
          ours=f"mean |cos| {np.mean(np.abs(tail)):.3f}, CV {cv413:.2f}", quote="neither value is converging")
late = r417a.cos[-10:]
out.check("fig4.17A", "1000 gradients per iterate converge: |cos φ| > 0.98 over the last 10 iterates, λ within 5 %",
          bool(np.all(np.abs(late) > 0.98) and abs(np.mean(r417a.values[-10:]) / lam0 - 1) < 0.05),
          ours=f"min |cos| {np.min(np.abs(late)):.4f}, λ̂ {np.mean(r417a.values[-10:]):.1f} vs {lam0:.1f}",
          quote="the top eigenvector is converging to the true value, and the estimated eigenvalue "
                "converges")
pd.Series({"fig 4.12 stop rule: matrices ending with |cos| > 0.99": f"{frac:.0%} of {S.known_seeds}",
           "fig 4.12 iterates (seed 0)": r412.iters})

# %%
rolling = {s: te.rolling_gradient_power_iteration(H0, s=s, steps=S.rolling_steps, seed=0, reference=v0)
           for s in S.rolling_samples}
last = min(1000, S.rolling_steps // 2)
fig, axes = plt.subplots(len(rolling), 1, figsize=(10, 2.2 * len(rolling)), sharex=True)
for ax, (s, r) in zip(axes, rolling.items()):
    ax.plot(np.arange(1, r.iters + 1), r.cos, lw=0.6)
    ax.set(ylim=(-1.05, 1.05), ylabel="cos φ", title=f"rolling window of s = {s} gradients")
axes[-1].set_xlabel("iterate (one new gradient each)")
out.savefig(fig, "fig4.18", params=S.as_dict(), seeds=[0])
plt.show()
stats = pd.DataFrame({s: {"late mean |cos|": np.mean(np.abs(r.cos[-last:])),
                          "late sd |cos|": np.std(np.abs(r.cos[-last:])),
                          "late min |cos|": np.min(np.abs(r.cos[-last:]))} for s, r in rolling.items()}).T
mid = sorted(rolling)[len(rolling) // 2] if len(rolling) > 2 else max(rolling)
out.check("fig4.17B", f"a rolling window of {mid} converges but oscillates: late mean |cos φ| > 0.9, "
          "min < 0.97", bool(stats.loc[mid, "late mean |cos|"] > 0.9 and stats.loc[mid, "late min |cos|"] < 0.97),
          ours=stats.loc[mid].round(4).to_dict(),
          quote="Figure 4.17b shows that the top eigenvector and eigenvalue are still converging to "
                "the true values, however, they are significantly more unstable.")
means, sds = stats["late mean |cos|"].to_numpy(), stats["late sd |cos|"].to_numpy()
out.check("fig4.18", "larger windows give steadier estimates: late mean |cos φ| rises and its spread "
          "falls with s", bool(np.all(np.diff(means) > 0) and np.all(np.diff(sds) < 0)),
          ours={int(s): f"mean {m:.3f}, sd {d:.3f}" for s, m, d in zip(stats.index, means, sds)},
          source="0.58 / 0.96 / 0.98 (digest's run of the listing)",
          quote="if we use a larger sample size we can reduce the oscillations and get a more "
                "consistently accurate estimation")
stats.round(4)

# %% [markdown]
# ## Fig 4.14 · SGDM on Rastrigin and Rosenbrock, with chapter 04's total distance D_t
#
# *Source:* on Rastrigin (a = 2) SGDM follows a nearly straight path and D_t rises steadily; on
# Rosenbrock (a = 1, b = 100) the path curves and D_t fluctuates. The thesis gives no start,
# learning rate or step count; the digest's (sec. 5 item 14): 2-D, deterministic gradients,
# momentum 0.9, Rastrigin from (4.3, −4.6) at lr 5e-3 for 3000 steps, Rosenbrock from (−1.5, −0.5)
# at lr 2e-4 for 20 000 steps. D_t = ‖θ_t − θ_0‖ is chapter 04's (`trajectory.path_metrics`).
# *Checks (digest sec. 6):* Rastrigin: D_t falls on < 10 % of steps and the path reaches the
# minimum (0, 0); Rosenbrock: D_t falls on > 20 % of steps and the path ends at (1, 1) ± 1e-3.
# (The digest's prototype reports 3.5 % and 45 %; our run of its settings differs, see below.)

# %%
paths = {name: tf.fig_4_14_path(name).numpy() for name in ("rastrigin", "rosenbrock")}
fig, axes = plt.subplots(2, 2, figsize=(11, 8))
found = {}
for j, (name, p) in enumerate(paths.items()):
    f = tf.rastrigin if name == "rastrigin" else tf.rosenbrock
    lo_, hi_ = p.min(0) - 0.5, p.max(0) + 0.5
    gx, gy = np.meshgrid(np.linspace(lo_[0], hi_[0], 200), np.linspace(lo_[1], hi_[1], 200))
    z = f(torch.tensor(np.stack([gx, gy], -1))).numpy()
    axes[0, j].contour(gx, gy, np.log1p(z), 25, cmap="viridis", linewidths=0.6)
    axes[0, j].plot(p[:, 0], p[:, 1], color="C3", lw=1)
    axes[0, j].set(title=f"{name}: SGDM path")
    dt = path_metrics(p)["dt"]
    axes[1, j].plot(np.arange(1, len(dt) + 1), dt)
    axes[1, j].set(xlabel="step", ylabel="D_t", title=f"{name}: total distance from the start")
    found[name] = {"falls on (% of steps)": 100 * float(np.mean(np.diff(dt) < 0)),
                   "end": p[-1].round(4).tolist(), "D_t max": float(dt.max()), "D_t final": float(dt[-1])}
out.savefig(fig, "fig4.14", params=S.as_dict(), seeds=[0])
plt.show()
ras, ros = found["rastrigin"], found["rosenbrock"]
out.check("fig4.14A", "Rastrigin: D_t rises steadily (falls on < 10 % of steps) and the path reaches (0, 0)",
          bool(ras["falls on (% of steps)"] < 10 and np.allclose(paths["rastrigin"][-1], 0, atol=1e-3)),
          ours=ras, source="3.5 % of steps (digest's prototype)",
          quote="for the obstruction-dominated landscape the trajectory is generally straight and "
                "the Euclidian distance is consistently increasing until the solution")
out.check("fig4.14B", "Rosenbrock: D_t fluctuates (falls on > 20 % of steps) and the path ends at (1, 1)",
          bool(ros["falls on (% of steps)"] > 20 and np.allclose(paths["rosenbrock"][-1], 1, atol=1e-3)),
          ours=ros, source="about 45 % of steps; D_t max 3.94, final 2.92 (digest's prototype)",
          quote="for the hilly surface, the trajectory is substantially curved and the total "
                "Euclidian distance, equation (3.1), fluctuates")
pd.DataFrame(found).T

# %% [markdown]
# ## Figs H.1, H.2 · the spectrum from cumulants of squared gradient norms (appendix H)
#
# *Source:* for H = XᵀX with X a 500 × 400 Gaussian matrix, the ascending eigenvalues are well
# approximated by a cubic λ(t) = a t + b t³ (fig H.1), and the cumulants of s = ‖Hε‖², ε ~ N(0, I)
# (fig H.2's histogram), κ_n = 2^(n−1) (n−1)! Σ λ^(2n), carry the spectrum (the thesis's sample
# estimates are within 0.2 %, 0.2 % and 10 % of the exact ones). Two printed slips are corrected
# in `lalr_core.methods.cumulants` (K₁'s "2ab/5 a²" and K₂'s 2b⁴/12; checked by integration).
# *Checks (digest sec. 6):* the cubic's R² > 0.95; the k-statistics of `cumulant_samples` draws
# are within 2 %, 5 % and 15 % of κ₁, κ₂, κ₃.

# %%
HH = cm.thesis_matrix(seed=1)
eigH = torch.linalg.eigvalsh(HH).numpy()
prof = cm.fit_cubic_profile(eigH)
s_draws = cm.squared_gradient_norms(HH, S.cumulant_samples, seed=0).numpy()
k_exact = cm.cumulants_from_spectrum(eigH, (1, 2, 3))
k_sample = cm.sample_cumulants(s_draws, (1, 2, 3))
k_cubic = cm.profile_cumulants(prof.n_star, prof.a, prof.b, (1, 2, 3))
fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.3))
ax.plot(np.arange(1, len(prof.eigvals) + 1), prof.eigvals, color="C0", label="eigenvalues")
ax.plot(np.arange(1, len(prof.eigvals) + 1), prof(prof.t), color="C3", label=f"a t + b t³ (R² {prof.r2:.3f})")
ax.set(xlabel="index (ascending)", ylabel="eigenvalue", title="fig H.1")
ax.legend()
bx.hist(s_draws, bins=100)
bx.set(xlabel="s = ‖Hε‖²", ylabel="count", title=f"fig H.2: {S.cumulant_samples} draws")
out.savefig(fig, "figH.1-H.2", params=S.as_dict(), seeds=[0, 1])
plt.show()
rel = np.abs(k_sample / k_exact - 1)
out.check("figH.1", "the ascending eigenvalues follow a t + b t³ (R² > 0.95)", bool(prof.r2 > 0.95),
          ours=f"a {prof.a:.1f}, b {prof.b:.1f}, R² {prof.r2:.4f}", source="a ≈ 395, b ≈ 1201 (digest, seed 1)",
          quote="This seems to be a good approximation for random matrices, as shown in figure H.1")
out.check("figH.2", "sample cumulants of ‖Hε‖² match κ_n = 2^(n−1)(n−1)! Σλ^(2n): within 2 %, 5 %, 15 %",
          bool(rel[0] <= 0.02 and rel[1] <= 0.05 and rel[2] <= 0.15),
          ours={f"κ{n}": f"{a:.4g} vs {b:.4g} ({100 * r:.1f} %)" for n, a, b, r in zip((1, 2, 3), k_sample, k_exact, rel)},
          source={"sample": list(cm.THESIS_SAMPLE_KAPPAS), "exact": list(cm.THESIS_EXACT_KAPPAS)},
          quote="Histogram of the squared gradients of a generated Hessian")
pd.DataFrame({"sample": k_sample, "exact Σλ": k_exact, "from the cubic": k_cubic}, index=["κ1", "κ2", "κ3"])

# %% [markdown]
# ## Not yet in this notebook
#
# Figs 4.7–4.9 (q^LC, q^SL, q^GC along a run; the metrics exist in
# `lalr_core.methods.quasi_newton`), fig 4.10 (the batch-size sweep), 4.15 (φ_t per filter),
# 4.16 (gradient cohesion), 4.20 (algorithm 5's step sizes on a network), E.1 (class gradients
# against the top-C eigenvectors) and the seed-003 section (Gauss–Newton vs Hessian, natural
# gradient, damped Newton, E15's sharpness): their library pieces are in place and tested; the
# runs and checks are issue 14's remaining work.

# %%
print(f"notebook compute: {time.perf_counter() - T0:.0f} s")
