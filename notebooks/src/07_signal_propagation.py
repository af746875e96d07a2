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
# # 07 · Signal propagation and trainability at initialisation
#
# **Question.** A deep network at initialisation maps inputs through many random layers. When
# does it keep them apart, when does it make every input alike, and when does it scramble them?
# Mean-field theory answers with one number per initialisation, χ₁: the ordered phase (χ₁ < 1),
# the chaotic phase (χ₁ > 1) and the critical line between them. From χ₁ follow the depth scales
# over which signals and gradients survive, the spectrum of the input–output Jacobian, and, for
# self-attention, the collapse of all tokens to one.
#
# **Source.** `[ATDL-notes]`: *Advanced Topics in Deep Learning*, lecture notes (they name no
# author or date and link to Roger Grosse's CSC2541 course, University of Toronto, 2021,
# <https://www.cs.toronto.edu/~rgrosse/courses/csc2541_2021/>, `[Grosse2021]`), secs. 1.2–1.4
# and 4, and the papers they cite: `[Poole2016]`, `[Schoenholz2017]`, `[Pennington2017]`,
# `[Pennington2018]`, `[Dong2021]`, `[Noci2022]` and Linformer, `[Wang2020]`. Every reference
# with its link: `REFERENCES.md`. The notes are qualitative; the numbers checked below are the
# cited papers' or our own computations, named as such, and the thresholds are ours. The notes'
# errata are used corrected, not copied, each named where it matters.
#
# **Setting.** No training through the shared loop: `lalr_core.methods.signal.nngp` (the q-map, c-map
# and χ₁ by Gauss–Hermite quadrature or closed forms), `mean_field` (the phase diagram, depth
# scales, gradient scaling, Jacobian moments), `random_nets` (random deep networks at
# initialisation, batched over seeds), `trainability` (a grid of short runs) and `rank_collapse`
# (self-attention stacks, Linformer). tanh at σ_b² = 0.05 is the running example (critical
# σ_w² = 1.76). `quick` and `paper` use our planned sizes (the notes give none); `paper` adds seeds, depths and a finer
# trainability grid.
#
# **Checks.** Each check is a *claim test* (a statement of the notes or of a paper they cite,
# about random networks, that our data could contradict) or a *sanity check* (our mean-field
# computation against a reference value or an identity: it holds when the code is right, so it
# guards the code and is no evidence for the source). The chapter keeps them as data
# (`ch07_signal_propagation.claims`) and computes every verdict with one function per
# experiment (`ch07_signal_propagation.findings`); the tolerances are ours, fixed when the
# experiments were designed. Every claim test is judged per replicate, its unit named in the
# record (a random net at initialisation with its own seed; a self-attention stack; a draw of
# Q, K, V; a timing run): one statistic per replicate and a t interval over them against the
# tolerance, so fewer than 3 replicates leave a claim INCONCLUSIVE and more seeds narrow the
# interval without moving the statistic (issue 33: before, E1, E2, E5–E8 were decided by one
# number of the seed-averaged or pooled data, and E2 flipped from FAIL at 5 seeds to PASS at 20).
# For that E1, E5 and E6 use 5 random nets at `quick` (planned: 2) and E8 times 5 runs. The 1-D integrals (q*, χ₁) choose their Gauss–Hermite nodes from q
# (`nngp.nodes_for`): a fixed rule of `quad_nodes` nodes cannot resolve sech⁴(√q* z) once q* is
# large and moved the critical line at σ_b² = 2 (see E1).

# %% tags=["parameters"]
# parameters
profile = "smoke"   # smoke | quick | paper
overrides = {}      # any field of the chapter's Settings, e.g. {"e2_seeds": 10}

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from lalr_core.chapters import ch07_signal_propagation as ch
from lalr_core.chapters.ch07_signal_propagation import claims as cl
from lalr_core.chapters.ch07_signal_propagation import findings as fd
from lalr_core.chapters.ch07_signal_propagation.claims import CLAIMS
from lalr_core.chapters.ch07_signal_propagation.grids import e3_grids
from lalr_core.core.results.style import set_style
from lalr_core.core.results.writer import FigureWriter
from lalr_core.methods.signal import linformer, nngp, rank_collapse
from lalr_core.methods.signal import mean_field as mf
from lalr_core.methods.signal import random_nets as rn

S = ch.CHAPTER.settings(profile, overrides)   # validated before any compute
out = FigureWriter("07_signal_propagation", profile, "07_signal_propagation.ipynb")
set_style()
torch.set_num_threads(1)   # threaded QR / SVD stall when the 2 cores are oversubscribed
T0 = time.perf_counter()
NAMES = ("ordered", "critical", "chaotic")
PHASE = dict(zip(NAMES, S.phases))


def record(item, **per_claim):
    """Record every finding of an experiment under its claim."""
    return out.record_all(CLAIMS, item, **per_claim)


pd.Series(S.as_dict(), dtype=object).to_frame("setting")

# %% [markdown]
# ## E1 · the phase diagram: χ₁ over (σ_w², σ_b²), the critical line
#
# χ₁ = σ_w² ∫Dz φ′(√q* z)² at the length fixed point q* (the notes' A1 stops before this closed
# form and its partial derivative lacks √q₂₂ and the 1/q* normalisation: an erratum in the notes).
# *Sanity checks (E1):* the critical σ_w² at σ_b² = 0.05 is 1.76 ± 0.01 (the value
# `[Schoenholz2017]` use; the tolerance is ours) and at σ_b² = 0 it is 1; our reference table of
# the critical line to its 4 decimals. The table was recomputed with adaptive quadrature
# (`scipy.integrate.quad`; a 301-node rule agrees to 1e-6): its first version came from a fixed
# 101-node Gauss–Hermite rule, which put the root at σ_b² = 2 at 4.261, and the check passed
# only because code and table shared that error. *Claim test (E1):* at the three running
# settings the q* of a random width-`e1_width` net (after the transient) is within 5 % of the
# theory (the notes' self-averaging): per net its largest relative error over the three
# settings, a t interval over the `e1_seeds` nets below 5 % (planned: 2 nets, their pooled mean).

# %%
t1 = time.perf_counter()
sw = np.linspace(0.5, 5.0, S.e1_grid[0])
sb = np.linspace(0.0, 2.0, S.e1_grid[1])
grid = mf.chi1_grid("tanh", sw, sb)
W2, B2 = np.meshgrid(sw, sb, indexing="ij")                # grid arrays are (n_w, n_b)
chaotic = grid.chaotic & grid.converged
cstar = np.full_like(grid.chi1, np.nan)
cstar[chaotic] = mf.c_star("tanh", W2[chaotic], B2[chaotic], q_star=grid.q_star[chaotic],
                           cmap_nodes=S.quad_nodes)
TABLE_B = tuple(cl.CRITICAL_TABLE)
crit = [mf.critical_sigma_w2("tanh", b) for b in TABLE_B]
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.6))
im = a.pcolormesh(sw, sb, grid.chi1.T, cmap="coolwarm", vmin=0, vmax=2, shading="auto")
a.contour(sw, sb, grid.chi1.T, levels=[1.0], colors="k")
a.plot(crit, TABLE_B, "k.", label="critical σ_w² (root of χ₁ = 1)")
a.set(xlabel="σ_w²", ylabel="σ_b²", title="χ₁ (black: χ₁ = 1)")
a.legend(fontsize=8)
fig.colorbar(im, ax=a)
im2 = b.pcolormesh(sw, sb, cstar.T, cmap="viridis", shading="auto")
b.contour(sw, sb, grid.chi1.T, levels=[1.0], colors="k")
b.set(xlabel="σ_w²", ylabel="σ_b²", title="c* in the chaotic phase (ordered: c* = 1)")
fig.colorbar(im2, ax=b)
fig.tight_layout()
out.savefig(fig, "E1", params=S.as_dict(), wall_time_s=time.perf_counter() - t1)
plt.show()
emp = {}
for name, s2 in PHASE.items():
    net = rn.RandomNet("tanh", s2, S.sigma_b2)
    q_th = mf.depth_scales("tanh", s2, S.sigma_b2).q_star
    x = rn.inputs_at_length(4, 64, q_th, net, seed=1)
    pr = rn.propagate(x, S.e2_depth, net, width=S.e1_width, seeds=S.e1_seeds, seed=2)
    emp[name] = (pr.q[:, S.e2_depth // 2:].mean(dim=(1, 2)).numpy(), q_th)   # one q per net
record(fd.e1_critical_line(dict(zip(TABLE_B, crit))),
       **{"E1-critical": {"source": "1.76 (Schoenholz et al.); 1 at σ_b² = 0"}})
record(fd.e1_self_averaging(emp))
pd.DataFrame({"σ_b²": TABLE_B, "critical σ_w² (ours)": crit,
              "reference (adaptive quadrature)": list(cl.CRITICAL_TABLE.values()),
              "fixed 101-node rule": [mf.critical_sigma_w2("tanh", b, nodes=101) for b in TABLE_B]})

# %% [markdown]
# ## E2 · q- and c-map iterations against random networks (self-averaging)
#
# Cobwebs of the length map q^{l+1} = σ_w² ∫Dz φ(√q^l z)² + σ_b² and of the correlation map for
# the ordered, critical and chaotic settings, with q^l and c^l measured in `e2_seeds` random nets
# of width `e2_width` and depth `e2_depth`. *Claim test (E2):* the empirical q^l is within 5 %
# of the iterated map at every layer and c^l within 0.05, for all three settings. Judged per
# net (self-averaging is a statement about one wide net): each net's largest error over the
# layers and settings, a t interval over the `e2_seeds` nets below each tolerance. The planned
# check took the largest error of the seed-averaged curve, which shrinks as seeds are added (it
# failed at 5 seeds and passed at 20); that curve is what the figure shows, and its error is
# printed in the record, not judged. A single net's q^l fluctuates by about √(2/N) per layer
# (≈ 4.5 % at N = 1000), so its worst layer can miss the 5 % tolerance at this width.

# %%
t2 = time.perf_counter()
fig, axes = plt.subplots(2, 3, figsize=(15, 8))
E2 = {}
for j, (name, s2) in enumerate(PHASE.items()):
    net = rn.RandomNet("tanh", s2, S.sigma_b2)
    x = rn.inputs_at_length(2, 64, 4.0, net, seed=3)           # far from q*: a visible transient
    x[1] = 0.6 * x[0] + 0.8 * x[1]                              # c^0 = 0.6 (the same length)
    pr = rn.propagate(x, S.e2_depth, net, width=S.e2_width, seeds=S.e2_seeds, seed=4)
    K = nngp.nngp_kernel(x.numpy(), S.e2_depth - 1, "tanh", s2, S.sigma_b2, nodes=S.quad_nodes)
    q_th = K[:, 0, 0]
    c_th = K[:, 0, 1] / np.sqrt(K[:, 0, 0] * K[:, 1, 1])
    E2[name] = {"q_emp": pr.q[:, :, 0].numpy(), "q_th": q_th,           # (nets, layers)
                "c_emp": pr.c[:, :, 0, 1].numpy(), "c_th": c_th}
    q_emp, c_emp = E2[name]["q_emp"].mean(0), E2[name]["c_emp"].mean(0)   # the figure's curves
    qs = np.linspace(0, 5, 200)
    axes[0, j].plot(qs, nngp.qmap(qs, "tanh", s2, S.sigma_b2), label="q-map")
    axes[0, j].plot(qs, qs, "k--", lw=0.6)
    axes[0, j].step(q_th[:-1], q_th[1:], where="post", color="C1", lw=0.8, label="iterated")
    axes[0, j].plot(q_emp[:-1], q_emp[1:], "C3.", ms=4, label="random nets (mean)")
    axes[0, j].set(xlabel="q^l", ylabel="q^{l+1}", title=f"{name} (σ_w² = {s2:g})")
    axes[1, j].plot(np.arange(1, S.e2_depth + 1), c_th, label="c-map iterated")
    axes[1, j].plot(np.arange(1, S.e2_depth + 1), c_emp, "C3.", ms=4, label="random nets (mean)")
    axes[1, j].set(xlabel="layer l", ylabel="c^l", ylim=(-0.05, 1.05))
    axes[0, j].legend(fontsize=7)
    axes[1, j].legend(fontsize=7)
fig.tight_layout()
out.savefig(fig, "E2", params=S.as_dict(), seeds=list(range(4, 4 + S.e2_seeds)),
            wall_time_s=time.perf_counter() - t2)
plt.show()
record(fd.e2_maps(*({k: v[f] for k, v in E2.items()} for f in ("q_emp", "q_th", "c_emp", "c_th"))))

# %% [markdown] tags=["long"]
# ## E3 · depth scales ξ_q, ξ_c and trainability
#
# |q^l − q*| ~ e^{−l/ξ_q} and |c^l − c*| ~ e^{−l/ξ_c}; ξ_c = −1/log χ_c with χ_c the c-map's
# slope at c* (= χ₁ in the ordered phase; the notes' −log χ₁ holds only there: an erratum in the
# notes). `[Schoenholz2017]` (cited, not in the notes): a network trains up to depth ≈ 6ξ_c. Ours:
# the theory curves at σ_b² = 0.05, our reference table (q*, χ₁, c*, ξ_c, ξ_q at four σ_w²,
# computed independently while planning), and a trainability grid: a tanh net of width
# `e3_width` and each depth at each σ_w², trained `e3_steps` SGD steps on the digits (8×8
# images, the whole training split), its training accuracy after them. *Sanity checks (E3):* ξ_c peaks at the
# critical σ_w² (within the grid step); that table to its precision. *Claim test (E3):* at
# equal depth, the cells within 6ξ_c train better than those beyond. Pooled over the grid,
# the cells within are also the shallower ones, so a pooled comparison would credit depth
# alone; we compare at each depth where cells lie on both sides (σ_w² then decides which
# side), average over those depths, and repeat with `e3_seeds` seeds (seed 0 is the heatmap;
# the other seeds rerun only those depths), a t interval over seeds. Short runs show where
# training starts quickly, not final trainability: `[Schoenholz2017]` trained far longer.

# %% tags=["long"]
t3 = time.perf_counter()
sws = np.linspace(0.8, 4.5, 150)
scales = [mf.depth_scales("tanh", s2, S.sigma_b2, cmap_nodes=S.quad_nodes) for s2 in sws]
xi_c = np.array([d.xi_c for d in scales])
xi_q = np.array([d.xi_q for d in scales])
ours3 = {s2: mf.depth_scales("tanh", s2, S.sigma_b2, cmap_nodes=S.quad_nodes)
         for s2 in cl.DEPTH_TABLE}
G3 = e3_grids(S)                          # each depth's row a cached unit: resumes if killed
acc, acc_seeds, xi_cells = G3.heatmap, G3.by_seed, G3.xi_c
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
a.plot(sws, xi_c, label="ξ_c")
a.plot(sws, xi_q, label="ξ_q")
a.axvline(mf.critical_sigma_w2("tanh", S.sigma_b2), color="k", lw=0.6, ls="--")
a.set(yscale="log", xlabel="σ_w²", ylabel="depth scale", title=f"depth scales, σ_b² = {S.sigma_b2:g}")
a.legend()
im = b.imshow(acc, origin="lower", aspect="auto", cmap="viridis", vmin=0.1, vmax=1,
              extent=(-0.5, len(S.e3_sigma_w2) - 0.5, -0.5, len(S.e3_depths) - 0.5))
pos = np.interp(6 * xi_c, np.array(S.e3_depths), np.arange(len(S.e3_depths)))
xs = np.interp(sws, np.array(S.e3_sigma_w2), np.arange(len(S.e3_sigma_w2)))
b.plot(xs, pos, "w--", label="6 ξ_c")
b.set(xticks=range(len(S.e3_sigma_w2)), xticklabels=[f"{s:g}" for s in S.e3_sigma_w2],
      yticks=range(len(S.e3_depths)), yticklabels=S.e3_depths, xlabel="σ_w²", ylabel="depth",
      title=f"training accuracy after {S.e3_steps} steps (digits)",
      xlim=(-0.5, len(S.e3_sigma_w2) - 0.5), ylim=(-0.5, len(S.e3_depths) - 0.5))
b.legend(fontsize=8)
fig.colorbar(im, ax=b)
fig.tight_layout()
out.savefig(fig, "E3", params=S.as_dict(), seeds=G3.seeds,
            wall_time_s=time.perf_counter() - t3)
plt.show()
crit3 = mf.critical_sigma_w2("tanh", S.sigma_b2)
record(fd.e3_depth_scales(sws, xi_c, crit3, {s2: (d.q_star, d.chi1, d.c_star, d.xi_c, d.xi_q)
                                            for s2, d in ours3.items()}),
       **{"E3-table": {"source": {s2: list(t) for s2, t in cl.DEPTH_TABLE.items()}}})
E3 = fd.e3_trainability(acc_seeds, G3.depths, xi_cells)
record(E3)
pd.DataFrame(acc, index=pd.Index(S.e3_depths, name="depth"),
             columns=pd.Index(S.e3_sigma_w2, name="σ_w²")).round(3)

# %% [markdown]
# ## E4 · gradients at initialisation scale as χ₁ per layer
#
# Backward, q̃^l = q̃^{l+1} χ₁ (equal widths), so E‖∂L/∂W^l‖² ∝ χ₁^{L−l}: vanishing towards the
# input in the ordered phase, exploding in the chaotic phase, balanced on the critical line.
# Ours: a random linear readout with squared loss on depth `e4_depth`, width `e4_width`
# (`random_nets.gradient_norms`). *Claim tests (E4):* the fitted slope of log‖∂L/∂W^l‖² over l
# (inner layers, one fit per seed, a t interval over the `e4_seeds` seeds) is within 10 % of
# −log χ₁ ordered and chaotic, and |slope| < 0.01 critical.

# %%
t4 = time.perf_counter()
fig, ax = plt.subplots(figsize=(8, 4.5))
E4, chi4 = {}, {}
for name, s2 in PHASE.items():
    net = rn.RandomNet("tanh", s2, S.sigma_b2)
    d = mf.depth_scales("tanh", s2, S.sigma_b2, cmap_nodes=S.quad_nodes)
    x = rn.inputs_at_length(8, S.e4_width, d.q_star, net, seed=5)
    gn = rn.gradient_norms(x, S.e4_depth, net, width=S.e4_width, seeds=S.e4_seeds, seed=6)
    E4[name], chi4[name] = gn.delta_sq.numpy(), float(d.chi1)
    ls = np.arange(1, S.e4_depth + 1)
    ax.semilogy(ls, gn.profile(), label=f"{name}: χ₁ = {d.chi1:.3f}")
    ax.semilogy(ls, mf.gradient_scaling("tanh", s2, S.sigma_b2, S.e4_depth), "k:", lw=0.8)
ax.set(xlabel="layer l", ylabel="E‖∂L/∂W^l‖² / last layer's", title="gradients at init (dotted: χ₁^{L−l})")
ax.legend(fontsize=8)
out.savefig(fig, "E4", params=S.as_dict(), seeds=list(range(6, 6 + S.e4_seeds)),
            wall_time_s=time.perf_counter() - t4)
plt.show()
record(fd.e4_gradients(E4, chi4))

# %% [markdown]
# ## E5 · exponential expressivity: a great circle through random tanh nets
#
# h⁰(θ) = √(N q*)(u₀ cos θ + u₁ sin θ) over `e5_points` angles, through nets of width `e5_width`
# and depth `e5_depth`; its length per layer. Ordered: the curve shrinks to a point; chaotic: it
# grows like χ₁^{l/2} (cited, `[Poole2016]`). *Claim test (E5):* the chaotic log-length slope is
# within 15 % of ½ log χ₁; the ordered curve ends shorter than it started. Per net (one slope
# and one final / initial ratio each), a t interval over the `e5_seeds` nets (planned: 2 nets,
# one fit of their mean curve).

# %%
t5 = time.perf_counter()
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
E5 = {}
for name, s2 in (("ordered", PHASE["ordered"]), ("chaotic", PHASE["chaotic"])):
    net = rn.RandomNet("tanh", s2, S.sigma_b2)
    curve = rn.great_circle_lengths(S.e5_depth, net, S.e5_width, n_theta=S.e5_points,
                                    seeds=S.e5_seeds, seed=7, keep_layers=(S.e5_depth,))
    rel = curve.relative()                                       # mean over nets, for the figure
    per_net = (curve.lengths / curve.lengths[:, :1]).numpy()     # (nets, layers + 1)
    chi = mf.depth_scales("tanh", s2, S.sigma_b2, cmap_nodes=S.quad_nodes).chi1
    E5[name] = {"slope": np.array([np.polyfit(np.arange(2, per_net.shape[1]), np.log(r[2:]), 1)[0]
                                   for r in per_net]),
                "½ log χ₁": 0.5 * float(np.log(chi)), "final / initial": per_net[:, -1]}
    a.semilogy(np.arange(len(rel)), rel, label=f"{name} (χ₁ = {chi:.2f})")
    if name == "chaotic":
        h = np.asarray(curve.kept[S.e5_depth][0])       # the first net's curve at the last layer
        h = h - h.mean(0)
        pc = np.linalg.svd(h, full_matrices=False)[0][:, :2]
        b.plot(pc[:, 0], pc[:, 1], lw=0.6)
        b.set(title=f"chaotic, layer {S.e5_depth}: 2-D PCA of h(θ)", xticks=[], yticks=[])
a.set(xlabel="layer", ylabel="length / length at input", title="great-circle length")
a.legend(fontsize=8)
fig.tight_layout()
out.savefig(fig, "E5", params=S.as_dict(), seeds=list(range(7, 7 + S.e5_seeds)),
            wall_time_s=time.perf_counter() - t5)
plt.show()
record(fd.e5_curve_length(E5["chaotic"]["slope"], np.exp(2 * E5["chaotic"]["½ log χ₁"]),
                          E5["ordered"]["final / initial"]))

# %% [markdown]
# ## E6 · the input–output Jacobian's spectrum, Gaussian vs orthogonal weights
#
# At χ₁ = 1 the squared singular values λ of J = ∏ D^l W^l have mean 1 and variance
# L(μ₂/μ₁² − 1 − s₁), s₁ = −1 Gaussian, 0 orthogonal (`[Pennington2017]`, `[Pennington2018]`, cited; the
# notes call the mean "the second moment of the squared singular value distribution": an erratum
# in the notes). Depth
# `e6_depth`, width `e6_width`, `e6_draws` draws. *Sanity check (E6):* orthogonal linear nets
# are exact isometries (variance < 1e-8 in every net; an identity). *Claim tests (E6):* the
# orthogonal tanh net near q* → 0 has a variance below a tenth of the Gaussian one and within
# 50 % of the theory; at criticality the mean λ lies in [0.7, 1.3]. Per net (its own variance
# and mean of λ; the orthogonal net against the Gaussian net of the same seed index), a t
# interval over the `e6_draws` nets of each case (planned: 2 nets pooled; 5 at `quick` now).
# The mean λ of one Gaussian net scatters widely at depth 32, so 5 nets may leave E6-mean open.

# %%
t6 = time.perf_counter()
CASES = {"linear, σ_w²=1": ("linear", 1.0, 0.0), "ReLU, σ_w²=2": ("relu", 2.0, 0.0),
         "tanh, σ_w²=1.761, σ_b²=0.05": ("tanh", 1.761, 0.05),
         "tanh, σ_w²=1.05, σ_b²=2e-5": ("tanh", 1.05, 2e-5)}
rows6, dens = [], {}
for case, (act, s2, b2) in CASES.items():
    for init in ("gaussian", "orthogonal"):
        net = rn.RandomNet(act, s2, b2, init=init)
        q = 1.0 if act != "tanh" else mf.depth_scales(act, s2, b2, cmap_nodes=S.quad_nodes).q_star
        x = rn.inputs_at_length(1, S.e6_width, q, net, seed=9)
        js = rn.jacobian_singular_values(x[0], S.e6_depth, net, width=S.e6_width, seeds=S.e6_draws,
                                         seed=10)
        m_th, v_th = mf.jacobian_spectrum_moments(act, s2, b2, S.e6_depth, init)
        rows6.append({"case": case, "init": init, "mean λ": float(js.mean), "var λ": float(js.variance),
                      "theory mean": m_th, "theory var": v_th,
                      "per net: mean λ": js.lam.mean(dim=1).numpy(),
                      "per net: var λ": js.lam.var(dim=1, unbiased=False).numpy()})
        dens[(case, init)] = np.asarray(js.lam).ravel()
T6 = pd.DataFrame(rows6)
fig, axes = plt.subplots(1, len(CASES), figsize=(18, 3.8))
for ax, case in zip(axes, CASES):
    for init in ("gaussian", "orthogonal"):
        lam = dens[(case, init)]
        ax.hist(np.log10(lam[lam > 0]), bins=40, alpha=0.6, density=True, label=init)
    ax.set(title=case, xlabel="log10 λ (squared singular value)")
    ax.legend(fontsize=7)
fig.tight_layout()
out.savefig(fig, "E6", params=S.as_dict(), seeds=list(range(10, 10 + S.e6_draws)),
            wall_time_s=time.perf_counter() - t6)
plt.show()
by = T6.set_index(["case", "init"])
record(fd.e6_jacobian(by["per net: var λ"].to_dict(), by["theory var"].to_dict(),
                      by["per net: mean λ"].to_dict(),
                      linear="linear, σ_w²=1", small_q="tanh, σ_w²=1.05, σ_b²=2e-5",
                      critical=[c for c in CASES if c != "ReLU, σ_w²=2"]),
       **{"E6-orthogonal": {"source": "theory by the variance formula above ([Pennington2017], "
                                      "[Pennington2018])"}})
T6.drop(columns=["per net: mean λ", "per net: var λ"]).round(4)

# %% [markdown]
# ## E7 · rank collapse of self-attention stacks
#
# res(X) = X − 1x̄ᵀ; its relative size ‖res‖/‖X‖ through random self-attention layers
# (`e7_tokens` tokens, width `e7_dim`, `e7_heads` heads, `e7_seeds` seeds): pure attention, with
# an MLP, with layer norm, with skip connections, skip + MLP, and skip with the 1/√L branch
# scaling (`[Noci2022]`; the notes write 1/√l per layer in the text, 1/√L in the formula; we follow
# the formula). *Checks (E7; the claims of the notes' sec. 4.1, our thresholds):* pure attention falls
# below 1e-6 by layer 3 (float64); skip with 1/√L keeps it ≥ 0.9 at every layer; layer norm does
# not prevent the collapse (below 1e-3 by the last layer); the doubly exponential rate: the cubic
# bound of `[Dong2021]` gives a slope of log(−log res) over l ≈ log 3 (checked within ±0.3), and
# the theory's local
# statement, res(SA(X)) = O(res³), is the exponent of log res_{l+1} on log res_l ≈ 3 (± 0.5).
# All five are claim tests on a t interval over the `e7_seeds` seeds (on log10 res for the two
# collapses); the two fits are made per seed (before issue 33: one fit of the seeds' geometric
# mean, a bare number); the figure shows the fit of the geometric mean.

# %%
t7 = time.perf_counter()
curves = rank_collapse.collapse_curves(n=S.e7_tokens, d=S.e7_dim, heads=S.e7_heads, depth=S.e7_depth,
                            seeds=S.e7_seeds)
# fit window res in [1e-12, 0.9]: float64's floor below; the default ceiling 0.5 left only two
# layers of the pure stack at temperature 1, so the first quick run had no exponent at all
# (NaN); the ceiling was raised after that run, the thresholds were not changed
fit = rank_collapse.doubly_exponential_fit(curves["pure"].geomean, floor=cl.FIT_FLOOR,
                                           ceiling=cl.FIT_CEILING)
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.5))
for name, trace in curves.items():
    a.semilogy(np.arange(S.e7_depth + 1), np.maximum(trace.geomean, 1e-17), label=name)
a.set(xlabel="layer", ylabel="‖res(X)‖ / ‖X‖", title="rank collapse (geometric mean over seeds)")
a.legend(fontsize=8)
b.plot(fit.layers, np.log(-np.log(curves["pure"].geomean[fit.layers])), "o-", label="pure")
b.plot(fit.layers, fit.intercept + fit.slope * np.asarray(fit.layers), "k--",
       label=f"fit, slope {fit.slope:.2f}")
b.set(xlabel="layer", ylabel="log(−log res)", title=f"doubly exponential (log 3 = {np.log(3):.2f})")
b.legend(fontsize=8)
fig.tight_layout()
out.savefig(fig, "E7", params=S.as_dict(), seeds=list(range(S.e7_seeds)),
            wall_time_s=time.perf_counter() - t7)
plt.show()
g = {k: v.geomean for k, v in curves.items()}
record(fd.e7_rank_collapse({k: v.res for k, v in curves.items()}))
LAYERS7 = [1, 2, 3, min(8, S.e7_depth), S.e7_depth]
pd.DataFrame({k: v[LAYERS7] for k, v in g.items()}, index=LAYERS7).transpose()

# %% [markdown]
# ## E8 (appendix) · Linformer: low-rank attention
#
# softmax(Q(EK)ᵀ/√d)(FV) with k-row projections E, F (block mean pooling here; random Gaussian
# projections at initialisation do not approximate attention at all, see the module), against
# exact attention on `e8_tokens` tokens at several logit temperatures; wall time against n.
# *Claim tests (E8):* at temperature 1 the relative error falls as k grows (per draw of Q, K,
# V: the error at the largest k minus at the smallest, a t interval over the `e8_seeds` draws);
# Linformer's time grows more slowly with n than exact attention's (the log-log slope of time
# against n, exact minus Linformer, per timing run: a t interval over `e8_timing_runs` runs on
# this machine; the runs share the machine's state, so they replicate the timing, not the
# hardware).

# %%
t8 = time.perf_counter()
draws = [linformer.linformer_errors(n=S.e8_tokens, ks=S.e8_ks, seeds=1, seed=s)
         for s in range(S.e8_seeds)]                            # one draw of Q, K, V each
lf = draws[0]
lin8 = np.stack([d.linformer for d in draws])                  # (draws, temperatures, ks)
ns = (256, 512, 1024, 2048) if profile != "smoke" else (128, 256)
timings = np.stack([linformer.attention_timing(ns, k=64 if profile != "smoke" else 16)
                    for _ in range(S.e8_timing_runs)])         # (runs, len(ns), 2)
timing = np.median(timings, axis=0)
fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.3))
for i, temp in enumerate(lf.temperatures):
    a.plot(lf.ks, lin8[:, i].mean(0), "o-", label=f"τ = {temp:g}")
a.set(xscale="log", xlabel="k", ylabel="relative error vs exact", title=f"Linformer, n = {S.e8_tokens}")
a.legend(fontsize=8)
b.loglog(ns, timing[:, 0], "o-", label="exact")
b.loglog(ns, timing[:, 1], "o-", label="Linformer")
b.set(xlabel="n", ylabel="seconds", title="wall time")
b.legend(fontsize=8)
fig.tight_layout()
out.savefig(fig, "E8", params=S.as_dict(), seeds=list(range(S.e8_seeds)),
            wall_time_s=time.perf_counter() - t8)
plt.show()
i1 = list(lf.temperatures).index(1.0)
growth = np.log2(timings[:, -1] / timings[:, 0]) / np.log2(ns[-1] / ns[0])   # (runs, 2)
record(fd.e8_linformer(lf.ks, lin8[:, i1], growth))

# %% [markdown]
# ## Not in this notebook
#
# E17 (internal covariate shift with and without batch norm) is not run: the notes only cite
# Santurkar et al.'s challenge to it. The decision-boundary curvature claim
# of sec. 1.3 (a subset of principal curvatures grows exponentially) is not measured. Our other
# experiments on these notes have their homes elsewhere: E9–E12 and E15 in chapter 05, E13 in chapter
# 04, E14 in chapter 01, E16 in chapter 03.

# %%
print(f"notebook compute: {time.perf_counter() - T0:.0f} s")
