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
# # 04 · Directedness of optimisation trajectories
#
# **Question.** Does a deep network's optimiser move through parameter space like a random walk,
# like a mean-reverting (AR(1)) process, or in a *directed* way? And how do SGDM and Adam differ?
#
# **Source.** `[Tuddenham2026]`: Mark Tuddenham, *Advancing differentiable program optimisation
# via novel first and second-order metrics, and adaptive optimisation strategies*, PhD thesis,
# School of Electronics and Computer Science, University of Southampton, 2026 (we know no public
# link to the thesis; its code: <https://github.com/MarkTuddenham/Orthogonal-Optimisers>);
# §3.2 "Measuring directedness in optimisation", Appendix A (random-vector mathematics),
# Appendix B (listing B.1) and Appendix C (listings C.1–C.4). The batch-size section at the end
# follows a second source, the lecture notes `[ATDL-notes]`. Every reference: `REFERENCES.md`.
#
# **Method.** For the trajectory θ_t (one step = one mini-batch) the thesis defines the
# displacement $D_t(t)=\|\theta_t-\theta_0\|$ (eq. 3.1), the path length
# $D_s(t)=\sum_{i\le t}\|s_i\|$ (eq. 3.2) and the *directedness* $\psi=D_t/D_s\in[0,1]$, plus a
# rolling-window version $\psi_N(t)$ (eqs. 3.3–3.5). It compares them with closed-form
# expectations for a Gaussian random walk (eqs. 3.6–3.14) and an AR(1) process (eqs. 3.16–3.19),
# fitted to the real curves by eq. 3.15.
#
# **What this notebook regenerates.** Figs 1.2, A.1 (A, B), 3.8–3.11, 3.13–3.16, and, from
# SGDM and Adam training runs (several seeds each), figs 3.7, 3.12, 3.17, 3.18, 3.19. Every
# figure states the thesis's claim and ends with a check computed from our data. A *claim test*
# judges the thesis's claim, in its direction, against a null (noise passed through the same
# optimiser's filters, the other optimiser, or the same run where no lr drop happens) on a 95%
# interval over seeds (independently trained runs; a verdict needs at least 3); it is kept
# as data in `ch04_directedness.claims` and computed by `ch04_directedness.findings`. A *sanity
# check* compares a simulation with its closed form (figs 1.2, A.1, 3.8–3.10, 3.13–3.16 and
# listings C.2–C.4): it guards the code and is no verdict on the thesis. The verdicts go into
# `figures/<profile>/REPORT.md`. All trajectory metrics are *streamed* during training
# (`lalr_core.methods.trajectory.PathMetrics`): only the step norms and a ring buffer of the last N+1
# parameter vectors are kept, never the whole trajectory.
#
# **Profiles.** `smoke` (default; synthetic data, seconds), `quick` (Fashion-MNIST, a reduced
# ResNet-20 with the thesis's optimiser hyper-parameters, 6 seeds per optimiser, ≈ 7 min on 2
# CPU cores), `paper` (the thesis's setting: ResNet-20 on CIFAR-10, batch 1024, 200 epochs;
# ≈ 1 GPU-hour per run, 3 seeds per optimiser). Run with
# `papermill 04_directedness.ipynb out.ipynb -p profile quick` or `make figures CHAPTERS=04`.

# %% tags=["parameters"]
# parameters
profile = "smoke"   # smoke | quick | paper
overrides = {}      # any field of the chapter's Settings, e.g. {"epochs": 20}

# %%
import dataclasses
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from lalr_core.chapters import ch04_directedness as ch4
from lalr_core.chapters import chapter_settings
from lalr_core.chapters.ch04_directedness import CHAPTER, RUNS, directedness_configs
from lalr_core.chapters.ch04_directedness import findings as fd
from lalr_core.chapters.ch04_directedness.claims import CLAIMS
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.evidence import per_seed
from lalr_core.core.results.plots import bplot
from lalr_core.core.results.style import set_style
from lalr_core.core.results.tables import run_table
from lalr_core.core.results.writer import FigureWriter
from lalr_core.core.runs.units import train_runs
from lalr_core.methods import trajectory as tj

S = chapter_settings("04", profile, overrides)   # validated before any compute
out = FigureWriter("04_directedness", profile, "04_directedness.ipynb")
set_style()
T_SIM = S.sim_steps


def sanity(item_id, claim, passed, **kw):
    """A sanity check: a simulation against its closed form, or an identity; it guards the
    code and is not counted as a verdict on the source."""
    return out.check(item_id, claim, passed, kind="sanity", **kw)


def record(*found):
    """Record each `findings.SeedFinding` under its claim."""
    for f in found:
        out.record(CLAIMS[f.claim_id], f.finding)


pd.Series(S.as_dict(), dtype=object).to_frame("setting")

# %% [markdown]
# ## Fig 1.2 · Tukey's box plot vs Tufte's (listing B.1)
#
# The thesis draws every box plot in Tufte's minimal style: a line from the minimum to the first
# quartile, a line from the third quartile to the maximum, a dot at the median, no box. We run
# listing B.1 with its data and seed; `lalr_core.core.results.plots.bplot` is the style used throughout the
# collection. *Check:* both panels show the same medians.

# %%
rng = np.random.RandomState(19680801)  # listing B.1's seed and draws, in its order
spread, center = rng.rand(50) * 100, np.ones(25) * 50
flier_high, flier_low = rng.rand(10) * 100 + 100, rng.rand(10) * -100
datasets = [np.concatenate((spread, center, flier_high, flier_low)),
            np.concatenate((spread, center, flier_high)),
            np.concatenate((spread, center))]
fig, axs = plt.subplots(1, 2, figsize=(8, 6))
tukey = [axs[0].boxplot(d, positions=[i + 1], whis=100) for i, d in enumerate(datasets)]
for i, d in enumerate(datasets):
    bplot(axs[1], i + 1, d, s=2, color="black")
axs[0].set_title("Tukey"); axs[1].set_title("Tufte")
axs[1].set_xticks(range(4)); axs[1].set_xlim((0.5, 3.5))
out.savefig(fig, "fig1.2", seeds=[19680801])
tukey_medians = [b["medians"][0].get_ydata()[0] for b in tukey]
sanity("fig1.2", "both panels show the same medians",
          bool(np.allclose(tukey_medians, [np.median(d) for d in datasets])),
          ours=[round(m, 2) for m in tukey_medians])

# %% [markdown]
# ## Appendix A · the random-vector facts behind the expectations
#
# $G(n)=\Gamma(\frac{n+1}{2})/\Gamma(\frac n2)$ (eq. A.1) gives the mean norm of an
# $n$-dimensional Gaussian, $\mathbb E\|\varepsilon\|=\sigma\sqrt2\,G(n)$ (Lemma A.3). The thesis
# approximates $G(n)\approx\sqrt{n/2}$ (Corollary A.2) and notes that it is an upper bound and poor
# for small $n$. Fig A.1 is listing C.1 (`plot(10)` and `plot(100)`); we compute $G$ in log space
# (float64) so it also works for the $n\approx 3\times10^5$ of a ResNet-20.
#
# **Errata in the source.** (i) Corollary A.1's recurrence $G(n)=\frac{n-1}{n-2}G(n-1)$ is wrong
# (it fails at n = 3); the correct forms are $G(n)=\frac{n-1}{n-2}G(n-2)$, equivalently
# $G(n)G(n-1)=\frac{n-1}{2}$ (tested in `tests/test_trajectory.py`); the conclusion that G increases
# still holds. (ii) Eq. 3.1 measures from θ₁ with s₁ = 0 (t−1 real steps) while eqs. 3.6–3.8 count
# t steps from θ₀; we measure from θ₀ with t steps so the closed forms apply unshifted. (iii) For
# large n, $n-2G(n)^2$ (Lemmas A.6, A.14, A.15) loses precision through lgamma, so `G` uses an
# asymptotic series for n ≥ 100 (checked against mpmath).

# %%
UPPER_QUOTE = ("showing that our approximation using Sterling's formula, equation (A.3), is also "
               "the upper bound for $G(n)$.")
for panel, x_max in (("A", 10), ("B", 100)):
    n = np.arange(4, 4 * x_max) / 4          # listing C.1: n = 1, 1.25, ..., x_max - 0.25
    fig, ax = plt.subplots(figsize=(8, 6))
    ax.plot(n, tj.G(n), label="$G(n)$")
    ax.plot(n, np.sqrt(n / 2), label=r"$\sqrt{n/2}$")
    ax.set_xlabel("n"); ax.legend()
    out.savefig(fig, f"figA.1{panel}")
    gap = np.sqrt(n / 2) - tj.G(n)
    sanity(f"figA.1{panel}", "G(n) < sqrt(n/2) everywhere (Corollary A.5)", bool((gap > 0).all()),
              detail=f"min gap {gap.min():.2e}", quote=UPPER_QUOTE)
rel_gap_100 = 1 - tj.G(100) / np.sqrt(50)
sanity("figA.1B", "the approximation is good for large n: relative gap < 1% at n = 100",
          bool(rel_gap_100 < 0.01), ours=f"{100 * rel_gap_100:.3f} %",
          quote="Corollary A.2. $G(n) \\approx \\sqrt{\\frac{n}{2}}$, for large n .")

# %% [markdown]
# ### Listings C.2–C.4 · Monte-Carlo checks of Lemmas A.3, A.6, A.10 and Theorems A.11/A.12
#
# Each listing compares an empirical mean with its closed form. We use the listings' constants
# (C.3 with `mc_count` draws) and pass a check when the empirical mean lies within 3 standard
# errors of the theory.

# %%
import torch

gen = torch.Generator().manual_seed(0)
count = S.mc_count
rows = []
# C.4 (Lemma A.3, A.6): norms of n = 346 standard Gaussians
norms = torch.randn(min(count, S.mc_norm_draws), 346, generator=gen,
                    dtype=torch.float64).norm(dim=1).numpy()
rows.append(("C.4 E||eps|| (A.3)", np.sqrt(2) * tj.G(346), norms.mean(), norms.std() / np.sqrt(len(norms))))
rows.append(("C.4 Var||eps|| (A.6)", tj.norm_variance(1.0, 346), norms.var(ddof=1),
             norms.var(ddof=1) * np.sqrt(2 / (len(norms) - 1))))
# C.2 (Lemma A.10): norm of a decayed sum, n = 1000, lambda = 0.3, k = 100, sigma = 1.78
lam, k, sigma, n = 0.3, 100, 1.78, 1000
weights = lam ** torch.arange(k, dtype=torch.float64)
draws = torch.randn(S.mc_sum_draws, k, n, generator=gen, dtype=torch.float64)
sums = torch.einsum("k,rkn->rn", weights, sigma * draws)
dec = sums.norm(dim=1).numpy()
rows.append(("C.2 decayed-sum norm (A.10)", tj.decayed_sum_norm_mean(k, lam, sigma, n), dec.mean(),
             dec.std() / np.sqrt(len(dec))))
# C.3 (Theorems A.11/A.12): cosine of two random vectors in n = 3
x, y = torch.randn(2, count, 3, generator=gen, dtype=torch.float64)
cos = torch.nn.functional.cosine_similarity(x, y, dim=1).numpy()
rows.append(("C.3 E[cos] (A.11)", 0.0, cos.mean(), cos.std() / np.sqrt(count)))
rows.append(("C.3 Var[cos] = 1/n (A.12)", 1 / 3, cos.var(ddof=1), np.sqrt(2 / (count - 1)) * cos.var(ddof=1)))
mc = pd.DataFrame(rows, columns=["quantity", "theory", "empirical", "std_error"])
mc["z"] = (mc["empirical"] - mc["theory"]) / mc["std_error"]
out.save_table(mc, "listingsC.2-C.4")
sanity("listingsC.2-C.4", "every empirical mean within 3 standard errors of its closed form",
          bool((mc["z"].abs() < 3).all()), ours=f"max |z| = {mc['z'].abs().max():.2f}")
mc

# %% [markdown]
# ## §3.2.4 · The random walk: figs 3.8–3.11
#
# For $\theta_t=\theta_{t-1}+s_t$, $s_t\sim\mathcal N(0,\sigma^2 I_n)$:
# $\mathbb E[D_s(t)]=t\sigma\sqrt2G(n)$ (eq. 3.6), $\mathbb E[D_t(t)]=\sigma\sqrt{2t}\,G(n)$
# (eqs. 3.7–3.8), so $\mathbb E[D_t]/\mathbb E[D_s]=1/\sqrt t$ and $\psi(t)\approx1/\sqrt t$
# (eqs. 3.9–3.14). The thesis does not state the lengths of its simulations; we use
# `sim_steps` steps from $\theta_0=0$ (our choice). Fig 3.8's σ is unstated; we use σ = 1.

# %%
walk2d = tj.simulate_rw(2, T_SIM, sigma=1.0, seed=1)
fig, ax = plt.subplots(figsize=(5, 5))
ax.plot(walk2d[:, 0], walk2d[:, 1], lw=0.8)
ax.plot(*walk2d[0], "o", color="C2", label="start"); ax.plot(*walk2d[-1], "s", color="C3", label="end")
ax.set_xlabel(r"$\theta^1$"); ax.set_ylabel(r"$\theta^2$"); ax.legend(); ax.set_aspect("equal")
out.savefig(fig, "fig3.8", seeds=[1])
m2 = tj.path_metrics(walk2d)
sanity("fig3.8", "a random walk wanders without a centre: psi(T) is of order 1/sqrt(T)",
          bool(m2["psi"][-1] < 5 / np.sqrt(T_SIM)), ours=round(float(m2["psi"][-1]), 3),
          source=f"1/sqrt(T) = {1 / np.sqrt(T_SIM):.3f}")

# %% [markdown]
# **Fig 3.9** — a 1-D random walk with σ = 0.01: Brownian-looking excursions of order $\sigma\sqrt t$.

# %%
walk1d = tj.simulate_rw(1, T_SIM, sigma=0.01, seed=2)
t = np.arange(T_SIM + 1)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(t, walk1d[:, 0], lw=0.8, label=r"$\theta_t$")
ax.fill_between(t, -2 * 0.01 * np.sqrt(t), 2 * 0.01 * np.sqrt(t), color="C0", alpha=0.12,
                label=r"$\pm2\sigma\sqrt{t}$")
ax.set_xlabel("t"); ax.legend()
out.savefig(fig, "fig3.9", seeds=[2])
inside = np.mean(np.abs(walk1d[1:, 0]) <= 3 * 0.01 * np.sqrt(t[1:]))
RW_QUOTE = ("We simulate a random walk in 1 dimension with $\\theta_0 = \\mathbf{0}$, and "
            "$\\sigma = 0.01$; showing, in figure 3.9, the random walk behaviour and, in figure "
            "3.10, a 100 dimensional random walk where the expected distances are a good "
            "approximation for the simulated values.")
sanity("fig3.9", "excursions are of order sigma*sqrt(t) (>= 95% of steps within 3 sigma sqrt(t))",
          bool(inside >= 0.95), ours=f"{100 * inside:.1f} %", quote=RW_QUOTE)

# %% [markdown]
# **Fig 3.10** — $n=100$, σ = 0.01: simulated $D_s$, $D_t$ against their expectations. The thesis:
# "the expected distances are a good approximation for the simulated values". Our check uses the
# exact variances of Lemmas A.14/A.15: $D_s$ within 2 %, and $D_t$ within 3 standard deviations.

# %%
walk = tj.simulate_rw(100, T_SIM, sigma=0.01, seed=3)
m = tj.path_metrics(walk)
t = np.arange(1, T_SIM + 1)
E_ds, E_dt = tj.rw_expected_ds(t, 0.01, 100), tj.rw_expected_dt(t, 0.01, 100)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(t, m["ds"], label="$D_s$ simulated"); ax.plot(t, E_ds, "--", label=r"$\mathbb{E}[D_s]$")
ax.plot(t, m["dt"], label="$D_t$ simulated"); ax.plot(t, E_dt, "--", label=r"$\mathbb{E}[D_t]$")
ax.set_xlabel("t"); ax.set_ylabel("distance"); ax.legend()
out.savefig(fig, "fig3.10", seeds=[3])
sd_dt = np.sqrt(tj.norm_variance(0.01, 100) * t)          # Lemma A.15
ds_err = np.abs(m["ds"][-1] / E_ds[-1] - 1)
sanity("fig3.10", "simulated D_s matches t*sigma*sqrt(2)*G(n) (within 2% at t = T)", bool(ds_err < 0.02),
          ours=f"{100 * ds_err:.2f} %", quote=RW_QUOTE)
sanity("fig3.10", "simulated D_t stays within 3 SD (Lemma A.15) of sigma*sqrt(2t)*G(n)",
          bool((np.abs(m["dt"] - E_dt) <= 3 * sd_dt).mean() >= 0.99),
          ours=f"{100 * (np.abs(m['dt'] - E_dt) <= 3 * sd_dt).mean():.1f} % of steps", quote=RW_QUOTE)

# %% [markdown]
# **Fig 3.11** — $n=100$, σ = 0.05: ψ(t) against $1/\sqrt t$, "tracks … accurately, even from
# the beginning". We show one walk (as the thesis) and the mean of `sim_seeds` walks.

# %%
psis = np.stack([tj.path_metrics(tj.simulate_rw(100, T_SIM, 0.05, seed=10 + s))["psi"]
                 for s in range(S.sim_seeds)])
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(t, psis[0], label=r"$\psi(t)$, one walk")
ax.plot(t, psis.mean(0), label=rf"mean of {len(psis)} walks")
ax.plot(t, 1 / np.sqrt(t), "--", color="k", label=r"$1/\sqrt{t}$")
ax.set_xscale("log"); ax.set_yscale("log"); ax.set_xlabel("t"); ax.set_ylabel(r"$\psi$"); ax.legend()
out.savefig(fig, "fig3.11", seeds=list(range(10, 10 + len(psis))))
# One walk is one random draw, so the single-walk claim is checked over all the walks we drew:
# each walk is an independent replicate (its own seed), and both bools declare the `sim_seeds`
# walks behind them (fewer than 3 would leave the verdict INCONCLUSIVE).
record(*fd.rw_tracks_inverse_sqrt(psis).values())

# %% [markdown]
# ## §3.2.6 · The AR(1) process: figs 3.13–3.16
#
# $\theta_t=(1-\alpha)\mu+\alpha\theta_{t-1}+\varepsilon_t$ (eq. 3.16) reverts to its mean μ.
# The thesis bounds $\mathbb E[D_s]$ and $\mathbb E[D_t]$ from above with Jensen's inequality
# (§3.2.6); both depend on $\theta_0$ and μ only through $d=\|\theta_0-\mu\|$. Fig 3.13's
# parameters are unstated; we use α = 0.98, σ = 0.05, θ_0 = (1, 1), μ = (0.5, 0.5) (our choice).

# %%
ar2d = tj.simulate_ar(2, T_SIM, alpha=0.98, sigma=0.05, theta0=1.0, mu=0.5, seed=4)
fig, ax = plt.subplots(figsize=(5, 5))
ax.plot(ar2d[:, 0], ar2d[:, 1], lw=0.8)
ax.plot(*ar2d[0], "o", color="C2", label=r"$\theta_0$"); ax.plot(0.5, 0.5, "*", ms=12, color="C3", label=r"$\mu$")
ax.set_xlabel(r"$\theta^1$"); ax.set_ylabel(r"$\theta^2$"); ax.legend(); ax.set_aspect("equal")
out.savefig(fig, "fig3.13", seeds=[4])
late = np.linalg.norm(ar2d[T_SIM // 2:].mean(0) - 0.5)
sanity("fig3.13", "the AR path drifts to mu and then jitters around it (the second half's "
          "mean position is closer to mu than half the start distance)", bool(late < 0.5 * np.sqrt(2) * 0.5),
          ours=round(float(late), 3), source=f"start distance {np.sqrt(2) * 0.5:.3f}")

# %% [markdown]
# **Fig 3.14** — $n=1$, θ_0 = 1, μ = 0.5, α = 0.98, σ = 0.005: θ decays roughly as
# $0.5+0.5\cdot0.98^t$, then fluctuates around 0.5.

# %%
ar1d = tj.simulate_ar(1, T_SIM, alpha=0.98, sigma=0.005, theta0=1.0, mu=0.5, seed=5)
tt = np.arange(T_SIM + 1)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(tt, ar1d[:, 0], lw=0.8, label=r"$\theta_t$")
ax.plot(tt, 0.5 + 0.5 * 0.98 ** tt, "--", label=r"$\mu+\alpha^t(\theta_0-\mu)$")
ax.set_xlabel("t"); ax.legend()
out.savefig(fig, "fig3.14", seeds=[5])
AR_SIM_QUOTE = ("We simulate an AR process in 1 dimension, in figure 3.14; that demonstrates the "
                "reversion to the mean, and, in figure 3.15, a 100 dimensional AR process where "
                "the distance measures align well with their expected values.")
stat_sd = 0.005 / np.sqrt(1 - 0.98 ** 2)                  # stationary SD of an AR(1)
resid = ar1d[:, 0] - (0.5 + 0.5 * 0.98 ** tt)
sanity("fig3.14", "theta follows mu + alpha^t (theta0 - mu) within 4 stationary SDs",
          bool(np.abs(resid).max() < 4 * stat_sd), ours=f"max |resid| = {np.abs(resid).max():.4f}",
          source=f"4 SD = {4 * stat_sd:.4f}", quote=AR_SIM_QUOTE)

# %% [markdown]
# **Fig 3.15** — $n=100$, θ_0 = 𝟙, μ = 0.5·𝟙, α = 0.98, σ = 0.05: simulated $D_s$, $D_t$ against
# the Jensen bounds. *Check (tolerances ours):* $D_s$ within 2 % of (and below) its bound, $D_t$ within
# 10 % of its bound, $D_t$ saturating after ≈ 200 steps.

# %%
d15 = np.sqrt(100) * 0.5
ar = tj.simulate_ar(100, T_SIM, alpha=0.98, sigma=0.05, theta0=1.0, mu=0.5, seed=6)
m = tj.path_metrics(ar)
B_ds = tj.ar_expected_ds(t, 0.98, 0.05, 100, d15)
B_dt = tj.ar_expected_dt(t, 0.98, 0.05, 100, d15)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(t, m["ds"], label="$D_s$ simulated"); ax.plot(t, B_ds, "--", label=r"$\mathbb{E}[D_s]$ bound")
ax.plot(t, m["dt"], label="$D_t$ simulated"); ax.plot(t, B_dt, "--", label=r"$\mathbb{E}[D_t]$ bound")
ax.set_xlabel("t"); ax.set_ylabel("distance"); ax.legend()
out.savefig(fig, "fig3.15", seeds=[6])
ds_rel = m["ds"][-1] / B_ds[-1] - 1
dt_rel = np.abs(m["dt"][-T_SIM // 2:] / B_dt[-T_SIM // 2:] - 1).max()
sanity("fig3.15", "D_s is within 2% of (and below) its Jensen bound", bool(-0.02 < ds_rel <= 0),
          ours=f"{100 * ds_rel:+.2f} %", quote=AR_SIM_QUOTE)
sanity("fig3.15", "D_t is within 10% of its Jensen bound once saturated", bool(dt_rel < 0.10),
          ours=f"max {100 * dt_rel:.1f} % over the second half", quote=AR_SIM_QUOTE)
sat = np.abs(B_dt[199] / B_dt[-1] - 1)
sanity("fig3.15", "the expected D_t saturates after ~200 steps (within 5% of its final value)",
          bool(sat < 0.05), ours=f"{100 * sat:.1f} % below final at t = 200")

# %% [markdown]
# **Fig 3.16 (A, B)** — ψ for an AR process at high (σ = 1.5) and low (σ = 0.1) noise, with the
# expected AR ψ (ratio of the bounds) and the random walk's $1/\sqrt t$. The thesis: with high
# noise the AR ψ lies *below* the random walk's, with low noise far *above*.
#
# **Deviation (θ_0, μ unstated).** With θ_0 = 𝟙, μ = 0.5·𝟙 as in fig 3.15, both noise levels gave
# ψ below the random-walk line in our exploration (not rerun here), contradicting the caption. We use θ_0 = 0, μ = 10·𝟙 (d = 100),
# n = 100, α = 0.99, which reproduces the claimed contrast. Its checks are therefore sanity
# checks: they hold by our choice of θ_0 and μ and are no evidence for the caption.

# %%
psi_ar = {}
for panel, sig in (("A", 1.5), ("B", 0.1)):
    path = tj.simulate_ar(100, T_SIM, alpha=0.99, sigma=sig, theta0=0.0, mu=10.0, seed=7)
    real = tj.path_metrics(path)["psi"]
    expected = (tj.ar_expected_dt(t, 0.99, sig, 100, 100.0) / tj.ar_expected_ds(t, 0.99, sig, 100, 100.0))
    psi_ar[panel] = (real, expected)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(t, 1 / np.sqrt(t), color="C0", label=r"random walk $1/\sqrt{t}$")
    ax.plot(t, expected, color="C1", label=r"expected AR $\psi$")
    ax.plot(t, real, color="C2", label=r"realised AR $\psi$")
    ax.set_xscale("log"); ax.set_xlabel("t"); ax.set_ylabel(r"$\psi$"); ax.legend()
    ax.set_title(rf"$\sigma={sig}$")
    out.savefig(fig, f"fig3.16{panel}", seeds=[7])
real, expected = psi_ar["A"]
sanity("fig3.16A", "high noise: realised and expected AR psi below 1/sqrt(t) for t >= 50",
          bool((real[49:] < 1 / np.sqrt(t[49:])).mean() > 0.95 and (expected[49:] < 1 / np.sqrt(t[49:])).all()),
          ours=f"psi(100) = {real[99]:.3f} vs 0.1",
          quote="The realized $\\psi(t)$ (green) fluctuates early on but closely follows the expected "
                "value (orange) as t increases, but both are below the random walk baseline "
                "($1/\\sqrt{t}$, blue) throughout.")
real, expected = psi_ar["B"]
sanity("fig3.16B", "low noise: AR psi far above 1/sqrt(t) (psi(100) > 0.4) and realised ~ expected",
          bool(real[99] > 0.4 and (real[49:] > 1 / np.sqrt(t[49:])).all()
               and np.abs(real / expected - 1)[9:].max() < 0.15),
          ours=f"psi(100) = {real[99]:.3f}; max |real/expected - 1| = {np.abs(real / expected - 1)[9:].max():.3f}",
          quote="With reduced noise, the trajectory becomes much shallower, and both the expected "
                "$\\mathbb{E}[\\psi(t)]$ and the empirical $\\psi(t)$ remain substantially higher "
                "than the random walk line throughout.")

# %% [markdown] tags=["runs:fig3.7"]
# ## §3.2.3 · Directedness of deep network optimisation: the training runs
#
# **Paper profile (the thesis's setting).** ResNet-20 on CIFAR-10 (40k/10k split, crop + flip),
# batch 1024, 200 epochs, lr ×0.1 at epochs 100 and 150; **SGDM** lr 0.05, momentum 0.85, wd
# 1e-2; **Adam** lr 0.01, β = (0.9, 0.99), wd 1e-4 (captions of figs 3.7 and 3.19); ψ over
# N = 250 batches. θ holds every trainable parameter (weights, biases, BN affine; not the BN
# running statistics), recorded after every step.
#
# **Seeds (deviation).** The thesis shows one run per optimiser, and a comparison of two single
# trajectories says nothing about seed noise. We train `seeds` runs per optimiser (seeds
# 0, 1, …; SGDM and Adam of the same seed share the initialisation and the batch order, so
# they are compared as pairs). Every check reduces each seed's run to one number and judges
# the numbers' 95% interval over seeds (`mean_interval`, or `paired_difference` for SGDM vs
# Adam): PASS or FAIL only when the interval decides, INCONCLUSIVE when it covers the
# threshold. Each seed is an independently trained run (its own initialisation and batch order,
# nothing shared between seeds), so the seeds are the replicates: quick 4, paper 3 (a verdict
# needs at least 3; E13 below has 8 seeds at quick).
#
# **Quick profile (deviations, and why).** The thesis's optimiser hyper-parameters and the
# shape of its schedule (drops at 1/2 and 3/4 of training) are kept: Adam at lr 0.01 (not 1e-3)
# and SGDM at wd 1e-2 (not 1e-3), since a ten times smaller Adam lr changes how noisy and how
# directed its steps are, which is what the figures measure. To afford 6 seeds × 2 optimisers
# in ≈ 7 min on 2 CPU cores, the rest is cut: Fashion-MNIST (4096 training images, no
# augmentation, 1000 test images, none held out since no check reads validation data), a
# half-width ResNet-20, **batch 256 instead of 1024** (a step at 1024 costs four times as
# much; at the thesis's lr the smaller batch makes every step noisier), 12 epochs of 16 steps
# (192 steps instead of 8000; drops after steps 96 and 144) and hence **N = 16 instead of
# 250**. The random-walk baseline of ψ_N is 1/√N: 0.25 here, 1/√250 in the thesis, so our ψ_N
# values are not on the thesis's scale; the checks compare optimisers, phases and baselines
# at the same N.
#
# **Divergence.** A run that diverges (a NaN loss, or one 1000 times its first:
# `lalr_core.core.loop.train`) stops there; its figures show what it measured. A diverged seed is
# left out of every interval (the check's detail says which); when every seed of an optimiser
# diverged, the checks that read it are N/A with the step at which it diverged (e.g.
# `overrides={"sgdm_lr": 1e6}`).

# %% tags=["runs:fig3.7"]
run_configs, run_callbacks = CHAPTER.runs(S, "fig3.7")   # every (optimiser, seed)
N = S.window
t0 = time.perf_counter()
results = train_runs(run_configs, workers=S.workers, callbacks=run_callbacks)
train_time = time.perf_counter() - t0
print(f"training time {train_time:.0f} s (0 when cached)")
runs = ch4.by_optimiser(S, results)                      # optimiser -> one result per seed
why_na, left_out = ch4.seed_notes(runs)
drops = S.drops()                                        # last step at each old lr
run_table(ch4.run_keys(S), results, lambda key: {"optimiser": key[0], "seed": key[1]},
          metrics=("train_loss", "test_acc"))


# %% tags=["runs:fig3.7"]
def traj(res):
    return res["callbacks"]["trajectory"]


def psi_w(res):
    return traj(res)["psi_window"]


def na_checks(names, *claim_ids):
    """Record ``claim_ids`` as N/A when every seed of a run in ``names`` diverged."""
    reason = "; ".join(why_na[n] for n in names if n in why_na)
    for cid in claim_ids if reason else ():
        out.record(CLAIMS[cid], Finding(None, detail=reason))
    return bool(reason)


def psi_list(name, key="psi_window"):
    """One optimiser's ``key`` curve per seed, None where the run diverged."""
    return [None if r["diverged"] else traj(r)[key] for r in runs[name]]


def seeds_note(names):
    """The seeds the interval leaves out, for a check's detail."""
    return "; ".join(left_out[n] for n in names if n in left_out)


def mean_of(values):
    return float(np.nanmean(values)) if np.isfinite(values).any() else np.nan


# The filtered-noise null of every directedness claim (`ch4.noise_null`): iid Gaussian
# gradients of the run's dimension through the same optimiser's update rule (SGDM's momentum,
# Adam's moments), lr schedule and step count, `null_seeds` seeds; a cheap simulation.
T_null = time.perf_counter()
nulls = {}
for name in RUNS:
    live = [r for r in runs[name] if not r["diverged"]]
    if live:
        nulls[name] = ch4.noise_null(S, name, live[0]["num_parameters"], len(psi_w(live[0])))
print(f"filtered-noise nulls in {time.perf_counter() - T_null:.1f} s: " + "; ".join(
    f"{name.upper()} psi_N {nl['psi_window'][:, N:drops[0]].mean():.3f} before the first drop "
    f"({nl['psi_window'][:, N:drops[0]].mean() * np.sqrt(N):.2f}x the random walk's 1/sqrt(N))"
    for name, nl in nulls.items()))


# %% [markdown] tags=["runs:fig3.7"]
# ## Figs 3.7 and 3.19 · ψ_N(t) during training
#
# The thesis (fig 3.7): ψ is high but rapidly decays early (t < 500 of 8000 batches), declines
# slowly in mid-training, plateaus late, and spikes at each lr drop; the artefact at batch N
# comes from the window (for t < N the window is truncated at the start, so ψ_N = ψ). Fig 3.19
# is the same plot with the random-walk baseline (1/√t up to N, then 1/√N: the walk's ψ_N)
# and, dash-dotted, our filtered-noise null (below): panel A SGDM, panel B Adam. Thin lines are
# the seeds, the thick line their mean; the dashed verticals are the lr drops.
#
# **The null changed (deviation from the source, and from this notebook's earlier versions).**
# The thesis compares ψ_N with the random walk's 1/√N. A random walk is the null of a
# *memoryless* optimiser. SGDM's momentum buffer (0.85 here) and Adam's first moment average
# the gradient over several steps, so pure gradient noise with no signal at all, passed through
# SGDM's update rule, has ψ_16 ≈ 0.70, about 2.8 times the walk's 0.25; through Adam's about
# 3 times. Beating the walk therefore says nothing about directedness. Every directedness
# claim is judged against noise passed through the *same* optimiser's filters instead: iid
# Gaussian "gradients" of the run's dimension through SGDM's momentum or Adam's moments with the
# run's own momentum / betas, lr schedule and step count, `null_seeds` seeds
# (`lalr_core.methods.trajectory.filtered_noise`; weight decay left out). An lr drop alone also
# makes that noise's ψ_N rise (beyond the control step; the run's own null records show by how much):
# the spike checks of figs 3.7 and 3.19 subtract the null's rise. The overlay of both optimisers (seed means, log scale) is ours
# (`extra_psi_sgdm_vs_adam`).
#
# **Eq. 3.4 index typo.** The source writes the window sum as $\sum_{i=N}^{t}$; we sum the last N
# steps, $i=t-N+1,\dots,t$, consistent with eq. 3.3.

# %% tags=["runs:fig3.7"]
COLOR = {"sgdm": "C0", "adam": "C1"}


def plot_psi(ax, name, baseline=False, seeds=True):
    curves = [psi_w(r) for r in runs[name]]
    for c in curves if seeds else ():
        ax.plot(np.arange(1, len(c) + 1), c, color=COLOR[name], lw=0.5, alpha=0.4)
    full = [c for c, r in zip(curves, runs[name]) if not r["diverged"]]
    if full:
        steps = np.arange(1, len(full[0]) + 1)
        ax.plot(steps, np.mean(full, axis=0), color=COLOR[name], lw=1.5,
                label=f"{name.upper()} (mean of {len(full)} seeds)")
        if baseline:
            ax.plot(steps, tj.rw_expected_psi_window(steps, N), ":", color="k", label="random walk")
            if name in nulls:
                ax.plot(steps, nulls[name]["psi_window"].mean(0), "-.", color=COLOR[name],
                        lw=1, label=f"{name.upper()} filtered-noise null")
    for d in drops:
        ax.axvline(d, ls="--", color="grey", lw=0.8)
    ax.set_xlabel("batch"); ax.set_ylabel(rf"$\psi_{{{N}}}(t)$")


seed_list = list(range(S.seeds))
for fig_id, baseline in (("fig3.7", False), ("fig3.19", True)):
    for panel, name in (("A", "sgdm"), ("B", "adam")):
        fig, ax = plt.subplots(figsize=(8, 4))
        plot_psi(ax, name, baseline=baseline)
        ax.set_title(f"{name.upper()}: " + rf"$\psi_{{{N}}}(t)$"); ax.legend()
        out.savefig(fig, f"{fig_id}{panel}", seeds=seed_list,
                    params=directedness_configs(S)[name].key(),
                    wall_time_s=sum(r["wall_time_s"] for r in runs[name]))
fig, ax = plt.subplots(figsize=(8, 4))
for name in RUNS:
    plot_psi(ax, name, baseline=name == "sgdm", seeds=False)
ax.set_yscale("log"); ax.legend(); ax.set_title("seed means, log scale")
out.savefig(fig, "extra_psi_sgdm_vs_adam", seeds=seed_list)

# %% [markdown] tags=["runs:fig3.7"]
# **Checks of fig 3.7**, per optimiser, each a per-seed number judged over seeds:
# *early phase*: $\min(\psi(5)-0.8,\ \psi(5)-\psi(N),\ \psi(N)-\psi_N(\text{drop}))>0$, i.e. ψ
# starts above 0.8 and decays before the first drop (0.8: our threshold; a random walk's ψ(5)
# is 1/√5); *spikes*: the relative rise of ψ_N within N batches after each drop, minus the same
# statistic at the control step N batches before the drop (whose window ends at the drop: same
# lr, no drop). The statistic is a maximum of a fluctuating curve over N steps, so it is positive
# where nothing happens; the control is that null. An lr drop alone also makes noise through
# the optimiser's filters rise (the filtered-noise null above), so that null's controlled rise
# at the same drop is subtracted too. The smaller excess over the drops must exceed 10 %-points
# (our threshold). The early-phase check shows the null's margin beside ours: noise through
# momentum also starts with ψ(5) above 0.8, but its ψ_N does not decay after N (margin ≤ 0).
#
# **Reading the early-phase check at the quick profile.** The thesis's early phase (t < 500) is
# longer than our whole first lr phase (6 epochs of 16 steps), and our N = 16 ends inside the
# early decay. The early-phase check reads ψ at batch N, where the window artefact the thesis
# notes at batch 250 sits: ψ_N can dip there and recover once the first, least directed steps
# leave the window, then decline gradually towards the drop. Such a dip would fail the check's
# "ψ(N) > ψ before the drop" even when ψ starts high and ends lower. We left the check as it was
# (reading ψ elsewhere only after seeing the data would be tuning); the paper profile's N = 250
# inside an 8000-step run is the setting to judge it.

# %% tags=["runs:fig3.7"]
for panel, name in (("A", "sgdm"), ("B", "adam")):
    if na_checks([name], f"fig3.7{panel}-early", f"fig3.7{panel}-spikes"):
        continue
    record(fd.early_phase(name, psi_list(name), drops[0], N,
                          null_psi_window=nulls[name]["psi_window"], detail=seeds_note([name])),
           fd.lr_drop_spikes(name, psi_list(name), drops, N,
                             null_psi_window=nulls[name]["psi_window"],
                             detail=seeds_note([name])))

# %% [markdown] tags=["runs:fig3.7"]
# **Checks of fig 3.19.** (i) Each optimiser's ψ_N stays well above the filtered-noise null
# (not the random walk, see above): the smallest ratio ψ_N / ψ_N^null after the window has
# filled, above 1.5 (our threshold, unchanged); the ratio to the walk is shown beside it. Since
# ψ_N ≤ 1, the ratio cannot exceed 1/ψ_N^null: at the quick N = 16 the null's ψ_N is so high that it puts 1.5× out of reach, and the check is recorded N/A ("this window cannot show
# the claim"); at the paper's N = 250 the null is far lower and the check can decide. (ii) SGDM
# is more directed than Adam *throughout training*: per seed, the mean ψ_N of SGDM minus Adam's in
# each lr phase (before the first drop after the window has filled, between the drops, after
# the last), and the smallest of these; > 0 means SGDM is higher in every phase. (iii) Adam
# responds more strongly to the lr drops: per seed, Adam's mean spike beyond its control step
# (as in fig 3.7) minus SGDM's. For (ii) and (iii) the other optimiser is the control; the
# filtered-noise nulls' own gaps are shown beside them (noise through Adam's filters is the
# more directed and spikes less, so neither claim holds on the null). The thesis's "Adam …
# quickly descending to
# around 0.15" is shown beside Adam's smallest ψ_N before the first drop (`versus_source`; at
# the quick N = 16 the random-walk floor is 0.25, so the difference is not a test).

# %% tags=["runs:fig3.7"]
for panel, name in (("A", "sgdm"), ("B", "adam")):
    if not na_checks([name], f"fig3.19{panel}-rw"):
        record(fd.above_random_walk(name, psi_list(name), N,
                                    null_psi_window=nulls[name]["psi_window"],
                                    detail=seeds_note([name])))
null_psi_n = {name: nl["psi_window"] for name, nl in nulls.items()}
if not na_checks(RUNS, "fig3.19-order", "fig3.19-spikes"):
    order = fd.sgdm_above_adam(psi_list("sgdm"), psi_list("adam"), drops, N, nulls=null_psi_n,
                               detail=seeds_note(RUNS))
    adam_low = per_seed(runs["adam"], lambda r: np.min(psi_w(r)[N:drops[0]]), nan_if_diverged=True)
    out.record(CLAIMS["fig3.19-order"], dataclasses.replace(
        order.finding, ours=f"{order.ours}; Adam's lowest psi_N before the drop: "
                            f"{ch4.versus_source(adam_low, 0.15, judge=S.judge_source)}"),
        source="Adam drops to ~0.15")
    record(fd.adam_spikes_larger(psi_list("sgdm"), psi_list("adam"), drops, N, nulls=null_psi_n,
                                 detail=seeds_note(RUNS)))

# %% [markdown] tags=["runs:fig3.7"]
# ### Per layer (not in the thesis)
#
# `PathMetrics` streams the same quantities per parameter tensor. Are the lr-drop spikes a
# property of most layers, or only of the whole vector? BN affine parameters and the classifier
# may behave differently from the convolutions. Shown: SGDM, seed 0; checked (our claim, not
# the thesis's): the share of weight tensors whose spike beyond their control step and beyond
# the filtered-noise null's rise (as in fig 3.7; SGDM's whole-vector null) exceeds 10 %-points
# after every drop, per SGDM seed, above one half.

# %% tags=["runs:fig3.7"]
lt = traj(runs["sgdm"][0])
names = list(lt["layer_names"])
pick = [i for i, nm in enumerate(names) if nm.endswith("weight")]
fig, ax = plt.subplots(figsize=(8, 4))
cmap = plt.get_cmap("viridis")
for j, i in enumerate(pick):
    layer = lt["layer_psi_window"][:, i]
    ax.plot(np.arange(1, len(layer) + 1), layer, lw=0.6, color=cmap(j / max(1, len(pick) - 1)))
for d in drops:
    ax.axvline(d, ls="--", color="grey", lw=0.8)
ax.set_xlabel("batch"); ax.set_ylabel(rf"per-layer $\psi_{{{N}}}$ (SGDM, seed 0)")
ax.set_title("weights of each layer, input (dark) to output (yellow)")
out.savefig(fig, "extra_layer_psi", seeds=[0])
if not na_checks(["sgdm"], "extra_layer_psi"):
    layers = fd.layer_spikes([None if r["diverged"] else traj(r) for r in runs["sgdm"]], drops, N,
                             null_psi_window=nulls["sgdm"]["psi_window"],
                             detail=seeds_note(["sgdm"]))
    out.record(CLAIMS["extra_layer_psi"], dataclasses.replace(
        layers.finding, ours=f"share of {len(pick)} tensors: {layers.ours}"))

# %% [markdown] tags=["runs:fig3.7"]
# ## Fig 3.12 · Deep network optimisation vs a fitted random walk
#
# The thesis fits σ of a random walk "in the same dimension" (n = number of parameters) to the
# real $D_s$, $D_t$ by eq. 3.15 with Nelder–Mead, and finds the real $D_t$ far above the random
# walk's: optimisation is directed. Adam is "extremely directed at the start" (its first step is
# ≈ η·sgn(g₀)). We fit every seed's curves; the figure shows seed 0, the checks use every seed:
# the final $D_t$ over the fitted null's (> 2, our threshold), and ψ(20) of Adam minus SGDM's,
# paired by seed, minus the filtered-noise nulls' gap at batch 20.
#
# **The null changed (deviation).** The thesis's fitted random walk ignores momentum: noise
# through SGDM's momentum 0.85 with the run's lr schedule ends with $D_t$ several times the
# fitted walk's (`tests/test_ch04_directedness_null.py` measures it), so "far above the random walk"
# holds for pure noise. The claim test fits the *filtered-noise null* instead (fig 3.19's; its
# mean $D_s$, $D_t$ curves scaled to the run's by eq. 3.15 with the same γ, as the walk's σ is
# fitted; with momentum 0 and a constant lr this is the walk's fit) and asks for the final
# $D_t$ above twice the null's; the ratio to the fitted walk is shown beside it. The figure
# shows both fits.
#
# **γ is unstated** for figs 3.12 and 3.17. We use $\gamma=\sum D_t^2/(\sum D_s^2+\sum D_t^2)$,
# which gives both terms of eq. 3.15 the same scale, "the same importance to both metrics"
# (our choice).

# %% tags=["runs:fig3.7"]
fits = {name: [None if r["diverged"] else ch4.fit_run(traj(r)["ds"], traj(r)["dt"], r["num_parameters"])
               for r in runs[name]] for name in RUNS}   # a diverged run is not fitted
pd.DataFrame([{"optimiser": name, "seed": k, "n": f["n"], "gamma": f["gamma"],
               "RW sigma": f["rw"]["sigma"], "RW objective": f["rw"]["objective"],
               "AR alpha": f["ar"]["alpha"], "AR sigma": f["ar"]["sigma"], "AR d": f["ar"]["d"],
               "AR objective": f["ar"]["objective"]}
              for name in RUNS for k, f in enumerate(fits[name]) if f])


# %% tags=["runs:fig3.7"]
def plot_distances(ax, name, models, seed=0):
    r = traj(runs[name][seed])
    tt = np.arange(1, len(r["ds"]) + 1)
    ax.plot(tt, r["ds"], color="C0", label="$D_s$ (model)")
    ax.plot(tt, r["dt"], color="C1", label="$D_t$ (model)")
    for label, fit, ls in models:
        ax.plot(tt, fit["ds_fit"], ls, color="C0", alpha=0.7, label=rf"$\mathbb{{E}}[D_s]$ {label}")
        ax.plot(tt, fit["dt_fit"], ls, color="C1", alpha=0.7, label=rf"$\mathbb{{E}}[D_t]$ {label}")
    ax.set_xlabel("batch"); ax.set_ylabel("distance"); ax.set_yscale("log"); ax.legend(fontsize=8)
    ax.set_title(f"{name.upper()}, seed {seed}")


for panel, name in (("A", "sgdm"), ("B", "adam")):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    f0 = fits[name][0]
    r0 = traj(runs[name][0])
    nfit = ch4.null_fit(r0["ds"], r0["dt"], nulls[name]["ds"], nulls[name]["dt"],
                        f0["gamma"]) if f0 else None
    plot_distances(ax, name, [("RW", f0["rw"], "--"), ("filtered-noise null", nfit, "-.")]
                   if f0 else [])
    out.savefig(fig, f"fig3.12{panel}", seeds=[0],
                note=f"gamma = {f0['gamma']:.4f} (balanced, gap G5)" if f0 else
                "seed 0 diverged: no fit")
    if not na_checks([name], f"fig3.12{panel}"):
        record(fd.far_above_random_walk(name, psi_list(name, "ds"), psi_list(name, "dt"),
                                        fits[name], null=nulls[name],
                                        detail=seeds_note([name])))
if not na_checks(RUNS, "fig3.12B-start"):
    record(fd.adam_directed_at_start(psi_list("sgdm", "psi"), psi_list("adam", "psi"),
                                     nulls={k: nl["psi"] for k, nl in nulls.items()},
                                     detail=seeds_note(RUNS)))

# %% [markdown] tags=["runs:fig3.7"]
# ## Figs 3.17 and 3.18 · the AR(1) fit, and the shape of D_t
#
# The thesis fits (α, σ, d) of an AR(1) process by L-BFGS-B (free parameters and bounds unstated:
# we use α ∈ [0, 1−10⁻⁵], σ > 0, d ≥ 0) and finds it matches the *magnitudes* better than
# the random walk. The AR process contains the random walk (α → 1), so its fitted objective is
# at most the random walk's by construction; the thesis says "much better", so the claim test asks
# for at least a halving: per seed, log of the AR objective over the RW objective below log ½
# (our threshold). Fig 3.18
# (SGDM) fits both with γ = 0 ($D_t$ only), and the thesis reads from it that "the shape of the
# total Euclidian distance" is "better fit by a random walk" than by the AR process of fig 3.17.
#
# **What fig 3.18's check compares, and why.** The AR process contains the random walk (α → 1),
# so an AR fitted with γ = 0 fits $D_t$ at least as well as the random walk fitted with γ = 0
# (both objectives are shown in `ours`): the sentence cannot mean that comparison. It follows the
# remark that the fig 3.17 AR's $D_t$ shape "is not quite the same" as the measured one, so we
# compare the random walk's γ = 0 fit with the *shape* of the fig 3.17 AR fit: both curves are
# scaled to $D_t$ by least squares and judged by eq. 3.15 with γ = 0 (the sum of squared errors,
# the thesis's own measure of fit). Per SGDM seed, log(RW error / AR error) < 0 means the random
# walk's shape fits better. (The former check used a relative RMS error, which is not the
# thesis's measure.)
#
# **The thesis's conclusion, read.** §3.2.7 ends "deep network optimisation is mean-reverting,
# but it is directed"; its own argument (the non-mean-reverting random walk fits the shape
# better) would imply "directed, *not* mean-reverting". Whether our runs support that argument
# is fig 3.18's verdict below, not this sentence.

# %% tags=["runs:fig3.7"]
for panel, name in (("A", "sgdm"), ("B", "adam")):
    f0 = fits[name][0]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    plot_distances(ax, name, [("RW", f0["rw"], "--"), ("AR", f0["ar"], ":")] if f0 else [])
    out.savefig(fig, f"fig3.17{panel}", seeds=[0],
                note=f"gamma = {f0['gamma']:.4f}" if f0 else "seed 0 diverged: no fit")
    if not na_checks([name], f"fig3.17{panel}"):
        record(fd.ar_fits_better(name, fits[name], detail=seeds_note([name])))

fig, ax = plt.subplots(figsize=(8, 4.5))
f0 = fits["sgdm"][0]
plot_distances(ax, "sgdm", [("RW, $\\gamma=0$", f0["rw0"], "--"), ("AR, $\\gamma=0$", f0["ar0"], ":")]
               if f0 else [])
out.savefig(fig, "fig3.18", seeds=[0], note="gamma = 0" if f0 else "seed 0 diverged: no fit")
if not na_checks(["sgdm"], "fig3.18"):
    shape = fd.rw_shape_better(psi_list("sgdm", "dt"), fits["sgdm"], detail=seeds_note(["sgdm"]))
    obj0 = {m: mean_of([np.nan if f is None else f[m]["objective"] for f in fits["sgdm"]])
            for m in ("rw0", "ar0")}
    out.record(CLAIMS["fig3.18"], dataclasses.replace(
        shape.finding, ours=f"{shape.ours}; gamma = 0 objectives (seed means): RW "
                            f"{obj0['rw0']:.3g}, AR {obj0['ar0']:.3g}"))

# %% [markdown]
# ## Lecture notes (`[ATDL-notes]`) · E13: batch size vs learning rate
#
# A second source, `[ATDL-notes]` (the lecture notes *Advanced Topics in Deep Learning*, which
# point to Roger Grosse's CSC2541 course of 2021, `[Grosse2021]`; sec. 3.5 "Batch size"),
# tabulates small against large batches: a large
# batch has a less noisy gradient and needs fewer weight updates, but the benefit "plateau[s] for
# large enough batch size (called **maximal data parallelism**)" (citing
# `[Shallue2019]`, arXiv:1811.03600), and for Adam/RMSprop "larger batch sizes increase the effective learning
# rate". The notes have no experiment; ours (E13) runs one on a
# small MLP, with this chapter's directedness ψ = D_t/D_s of every run: less gradient noise
# should give a straighter path.
#
# **Setting** (`lalr_core.methods.trajectory.batch_scaling`). A teacher MLP (8 inputs, 16 tanh units)
# labels Gaussian inputs, plus label noise (`e13_noise`, in the targets' units); a student of the
# same architecture (so the teacher is exactly learnable) sees a fresh batch every step. For
# every batch size B (`e13_batches`) and SGD lr (`e13_lrs`, a factor 2 apart) we count the
# steps until the relative excess error on held-out clean targets, mean (f − f*)² / var f*,
# reaches `e13_target`, and keep each seed's fastest lr (Shallue's steps-to-target and
# optimal lr). ψ is measured on the path up to that step (`trajectory.PathMetrics`, one segment
# per run). Adam (lr `e13_adam_lr`, torch's betas) then runs `e13_adam_steps` steps at every B,
# and we record the mean over steps and coordinates of |Δθ|/η (1 at Adam's first step,
# whatever B).
#
# **Checks** (ours, reading the notes' table as: steps ∝ 1/B at small B, then a plateau; ψ rises
# with B; intervals over seeds). (1) The log-log slope of steps-to-target on the three smallest B lies within ±0.3
# of −1 (perfect scaling). (2) On the three largest B it is above −0.5 (doubling B saves less
# than 30% of the steps). (3) Adam's mean |Δθ|/η is larger at the largest B than at the
# smallest, paired by seed (the notes' footnote \*\*). (4) ψ at the target, each seed's fastest
# run, rises with B by more than a random walk's would: ψ of any path falls with its number of
# steps t (a walk's as 1/√t), and the large batch reaches the target in fewer steps, so raw ψ
# at the target rises with B even for a random walk. We compare ψ√t (ψ in units of the walk
# with the same number of steps), larger at the largest B than at the smallest, paired by seed;
# the raw difference is shown beside it. All four are claim tests.
#
# **Erratum.** The notes' next bullet, "larger batch sizes result in more gradient noise, and
# hence smaller steps", has the noise inverted (our correction): it is the *small* batch whose noisier
# gradient inflates Adam's $\sqrt{\hat v}$ and shrinks its steps, which is what check (3) tests.

# %%
from lalr_core.core.torch_compat import torch_threads
from lalr_core.methods.trajectory import batch_scaling as bsc

T13 = time.perf_counter()
task13 = bsc.Task(noise=S.e13_noise)
seeds13 = list(range(S.e13_seeds))
with torch_threads(1):   # tiny models: one thread is faster on a busy 2-core machine
    sgd13 = bsc.sweep(task13, S.e13_batches, S.e13_lrs, seeds13, steps=S.e13_steps,
                      target=S.e13_target)
    adam13 = bsc.sweep(task13, S.e13_batches, [S.e13_adam_lr], seeds13,
                       steps=S.e13_adam_steps, optimizer="adam", target=None)
best13 = bsc.best_lr(sgd13)                      # each (batch, seed)'s fastest lr
time13 = time.perf_counter() - T13
small13, large13 = ch4.e13_fit_batches(S)
slope_small = bsc.slopes_per_seed(best13, small13)
slope_large = bsc.slopes_per_seed(best13, large13)
print(f"E13: {len(sgd13)} SGD and {len(adam13)} Adam runs in {time13:.1f} s")

# %%
B13 = np.array(S.e13_batches)


def by_batch(table, column):
    """``[batches, seeds]`` of ``column`` (rows: ``S.e13_batches``, columns: ``seeds13``)."""
    return table.pivot(index="batch", columns="seed", values=column).loc[B13].to_numpy()


def seed_lines(ax, values, label, color="k"):
    """Thin lines per seed and the median over seeds (thick, markers)."""
    ax.plot(B13, values, color=color, lw=0.6, alpha=0.35)
    ax.plot(B13, np.nanmedian(values, axis=1), "o-", color=color, lw=2, label=label)


steps13, lr13, psi13 = (by_batch(best13, c) for c in ("steps_to_target", "lr", "psi_at_target"))
ratio13 = by_batch(adam13, "step_over_lr")
fig, ax = plt.subplots(2, 2, figsize=(11, 8.5))
seed_lines(ax[0, 0], steps13, "best lr (median over seeds)")
ref = np.nanmedian(steps13[0]) * B13[0] / B13
ax[0, 0].plot(B13, ref, "k:", lw=1, label="∝ 1/B")
ax[0, 0].set(xscale="log", yscale="log", xlabel="batch size B", ylabel="steps to target",
             title=f"SGD: steps to relative error {S.e13_target:g}")
seed_lines(ax[0, 1], lr13, "optimal lr (median over seeds)")
ax[0, 1].plot(B13, np.nanmedian(lr13[0]) * B13 / B13[0], "k:", lw=1, label="∝ B")
ax[0, 1].axhline(max(S.e13_lrs), color="grey", lw=0.6, ls="--", label="largest lr of the grid")
ax[0, 1].set(xscale="log", yscale="log", xlabel="batch size B", ylabel="lr", ylim=(
    min(S.e13_lrs) / 1.5, max(S.e13_lrs) * 1.5), title="SGD: optimal lr")
lr_colors = plt.cm.viridis(np.linspace(0, 0.9, len(S.e13_lrs)))
for lr, c in zip(S.e13_lrs, lr_colors):
    one = sgd13[sgd13["lr"] == lr].groupby("batch")["psi_at_target"].median().reindex(B13)
    if one.notna().any():
        ax[1, 0].plot(B13, one, ".-", color=c, lw=0.8, label=f"lr {lr:g}")
seed_lines(ax[1, 0], psi13, "best lr")
ax[1, 0].set(xscale="log", xlabel="batch size B", ylabel="ψ = D_t / D_s at the target",
             title="directedness of the path to the target")
seed_lines(ax[1, 1], ratio13, "Adam (median over seeds)", color="C1")
ax[1, 1].axhline(1.0, color="grey", lw=0.6, ls="--", label="first step (any B)")
ax[1, 1].set(xscale="log", xlabel="batch size B", ylabel="mean |Δθ| / η",
             title=f"Adam lr {S.e13_adam_lr:g}, {S.e13_adam_steps} steps: effective step")
for a in ax.flat:
    a.legend(fontsize=7)
fig.tight_layout()
out.savefig(fig, "E13", params={**{k: v for k, v in S.as_dict().items() if k.startswith("e13_")},
                                "task": dataclasses.asdict(task13)},
            seeds=seeds13, wall_time_s=time13)
plt.show()

# %%
NOTES = "[ATDL-notes] (seed 003) sec. 3.5 (table, footnotes * and **); our reading and thresholds (E13)"
found13 = fd.e13(slope_small, slope_large, ratio13[0], ratio13[-1], psi13[0], psi13[-1],
                 steps13[0], steps13[-1], detail={
                     "E13-linear": f"B = {list(small13)}; t over seeds; each seed's fastest lr "
                                   f"of the grid; {NOTES}",
                     "E13-plateau": f"B = {list(large13)}; doubling B saves < 30% of the steps; "
                                    f"{NOTES}",
                     "E13-adam": f"B = {B13[-1]} vs {B13[0]}, paired by seed; lr "
                                 f"{S.e13_adam_lr:g}, betas (0.9, 0.999), mean over "
                                 f"{S.e13_adam_steps} steps and all coordinates; {NOTES}",
                     "E13-psi": f"B = {B13[-1]} vs {B13[0]}, paired by seed; ψ = D_t/D_s of the "
                                f"path from θ₀ to the target (eqs. 3.1-3.2), times √t; {NOTES}"})
record(*found13.values())
pd.DataFrame({"steps (median)": np.nanmedian(steps13, 1), "optimal lr (median)":
              np.nanmedian(lr13, 1), "ψ at target (median)": np.nanmedian(psi13, 1),
              "Adam |Δθ|/η (mean)": np.nanmean(ratio13, 1)}, index=pd.Index(B13, name="B"))

# %% [markdown]
# ## Summary
#
# The checks recorded by this notebook (also in `figures/<profile>/REPORT.md`). A FAIL is a
# finding about the data at this profile, not something to tune away.

# %%
checks = pd.DataFrame(out.checks())
print("checks: " + ", ".join(f"{(checks['verdict'] == v).sum()} {v}" for v in ("PASS", "FAIL", "INCONCLUSIVE", "N/A")))
checks[["item_id", "verdict", "claim", "ours"]]
