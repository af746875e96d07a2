"""Chapter 02's checks as functions: one per source item, from the runs' results to an
`ItemFindings` (our numbers and one `Finding` per check of
`lalr_core.chapters.ch02_tempbalance.claims.CLAIMS`).

The notebook computes the inputs (run tables, fitted alphas, CKA summaries) and records each
finding with ``out.record(CLAIMS[id], finding)``; the tests build small synthetic inputs on which
every claim test gives PASS, FAIL and INCONCLUSIVE. Accuracy contrasts are
`lalr_core.chapters.ch02_tempbalance.verdicts.contrast` (paired by seed; one seed: the paired
bootstrap over the test examples, one replicate, so it decides no claim test).

The replicate of every claim test is a seed (every run is its own pipeline). Statistics over
a run's layers (fig 2.6's skewness and log-likelihood ratio, T-001-c's share in [2, 6]) are
computed once per seed and judged over the seeds; fig 1.3's trained alpha is judged against
the same MLP at initialisation over seeds of its own (`init_null_difference`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from lalr_core.chapters.ch02_tempbalance.claims import CLAIMS
from lalr_core.chapters.ch02_tempbalance.summaries import exp_vs_normal, neg_pow2_count_at_least
from lalr_core.chapters.ch02_tempbalance.verdicts import (
    all_of,
    contrast,
    delta_gap,
    paired_deltas,
    unit_evidence,
)
from lalr_core.core.results.claims import Finding, ItemFindings
from lalr_core.core.results.evidence import (
    CONFIDENCE,
    Evidence,
    mean_interval,
    paired_difference,
)
from lalr_core.methods.layer_lr.tempbalance import allocate


def _judged(claim_id: str, evidence: Evidence) -> Evidence:
    return CLAIMS[claim_id].judge(evidence)


def _conjunction(claim_id: str, parts: Mapping[str, Evidence], ours=None) -> Finding:
    """"Every part holds", judged on the deciding part (`verdicts.all_of`)."""
    deciding, detail = all_of({k: _judged(claim_id, e) for k, e in parts.items()})
    return Finding(deciding, ours=ours, detail=detail)


# ----------------------------------------------------------------------------- fig 1.3
def init_null_difference(trained: Sequence[float], init: Sequence[float], *,
                         threshold: float = 0.0, side: str = "less") -> Evidence:
    """Evidence on ``mean(trained) - mean(init)``: a statistic of networks trained from ``k``
    seeds of their own against the same architecture at initialisation over ``m`` other seeds
    (the null: no training).

    ``k >= 2``: Welch's t interval (Welch-Satterthwaite degrees of freedom). ``k = 1``: the
    95 % prediction interval of one network drawn like the initial ones, ``t_{m-1} s_init
    sqrt(1 + 1/m)``, around the difference (it covers 0 where the trained value lies inside
    the initial networks' spread); it rests on one replicate, so it decides no claim. The
    replicates are the trained seeds (``unit="seed"``, ``n = k``); non-finite values are left
    out; fewer than 2 initial networks, or no trained one: an infinite interval.
    """
    t, i = (np.asarray(x, float) for x in (trained, init))
    t, i = t[np.isfinite(t)], i[np.isfinite(i)]
    k, m = t.size, i.size
    if k == 0 or m < 2:
        return Evidence(math.nan, -math.inf, math.inf, threshold, side, k, None,
                        f"{k} trained and {m} initial networks: no interval", unit="seed")
    d = float(t.mean() - i.mean())
    q = 0.5 + CONFIDENCE / 2
    vi = float(i.var(ddof=1)) / m
    if k == 1:
        half = float(stats.t.ppf(q, m - 1)) * math.sqrt(vi * m * (1 + 1 / m))
        how = (f"one trained seed against {m} networks at initialisation: the prediction "
               "interval of one initial network")
    else:
        vt = float(t.var(ddof=1)) / k
        if vt + vi == 0:
            half = 0.0
        else:
            df = (vt + vi) ** 2 / (vt ** 2 / (k - 1) + vi ** 2 / (m - 1))
            half = float(stats.t.ppf(q, df)) * math.sqrt(vt + vi)
        how = f"{k} trained seeds against {m} networks at initialisation: Welch t"
    return Evidence(d, d - half, d + half, threshold, side, k, None, how, unit="seed")


def fig13(alphas: Mapping[tuple[str, str], Sequence[float]], lam_init, lam_trained,
          mp_edges: tuple[float, float]) -> ItemFindings:
    """Fig 1.3: the power-law alphas (``(when, rule) -> one alpha per network``, when
    ``"trained"``: one per trained seed, ``"init"``: the null, the same MLP at initialisation
    over seeds of their own; rule in median/ks), the shown seed's two ESDs and the
    Marchenko-Pastur edges of its initial weights.

    The claim test: alpha(trained) below alpha(init) under every rule
    (`init_null_difference`, one part per rule); the sanity checks read the shown ESDs."""
    lam0, lam1 = np.asarray(lam_init, float), np.asarray(lam_trained, float)
    lo, hi = mp_edges
    inside = float(((lam0 >= lo * 0.95) & (lam0 <= hi * 1.05)).mean())
    grow = float(lam1.max() / lam0.max())
    rules = sorted({r for _, r in alphas})
    parts = {f"{r} rule": init_null_difference(alphas[("trained", r)], alphas[("init", r)])
             for r in rules}
    ours = {f"{w}/{r}": [round(float(v), 3) for v in a] for (w, r), a in alphas.items()}
    return ItemFindings({
        "fig1.3-alpha": _conjunction("fig1.3-alpha", parts, ours=ours),
        "fig1.3-lambda-max": Finding(grow >= 1.5, ours=round(grow, 2)),
        "fig1.3-mp": Finding(inside >= 0.95, ours=round(inside, 3)),
    }, {"alphas": ours, "lambda_max_growth": grow, "share_inside_mp": inside})


# ----------------------------------------------------------------------------- fig 2.1
def _delta(model, widths, lr):
    """(eq. 2.13 runs, baseline runs) of one model at lr over ``widths``."""
    return tuple([{"model": model, "width": w, "lr": lr, "allocation": a} for w in widths]
                 for a in ("alpha", "baseline"))


def fig21(grid: pd.DataFrame, models: Sequence[str], widths: Sequence[float], lr_top: float,
          *, n_train: int | None = None) -> ItemFindings:
    """Fig 2.1 at the largest lr0: Delta test(deeper) > 0; the deeper model's Deltas (test and
    train) above the shallower's; the deeper model's test gain at the smallest width, larger
    than at every other width. ``models``: shallower first, deeper last."""
    shallow, deep = models[0], models[-1]
    gain = contrast(grid, "test_acc", *_delta(deep, widths, lr_top))
    pair = {"Delta test(deeper) - Delta test(shallower)":
            delta_gap(grid, "test_acc", _delta(deep, widths, lr_top),
                      _delta(shallow, widths, lr_top)),
            "Delta train(deeper) - Delta train(shallower)":
            delta_gap(grid, "train_acc", _delta(deep, widths, lr_top),
                      _delta(shallow, widths, lr_top), n_train=n_train)}
    w0 = min(widths)
    parts = {f"Delta test(deeper), width {w0:g}":
             contrast(grid, "test_acc", *_delta(deep, [w0], lr_top))}
    parts.update({f"that minus Delta test(deeper) at width {w:g}":
                  delta_gap(grid, "test_acc", _delta(deep, [w0], lr_top),
                            _delta(deep, [w], lr_top)) for w in widths if w != w0})
    top = paired_deltas(grid[grid.lr == lr_top], ["model", "width"], n_train=n_train)
    ours = {f"{r.model}/{r.width:g} [d_test, d_train]": [round(r.d_test, 2), round(r.d_train, 2)]
            for r in top.itertuples()}
    smallest = (_conjunction("fig2.1-smallest-width", parts, ours=ours) if len(widths) > 1
                else Finding(None, ours=ours, detail="one width in this profile: 'most there' "
                                                     "cannot be compared"))
    return ItemFindings({
        "fig2.1-deep-gain": Finding(_judged("fig2.1-deep-gain", gain), ours=ours),
        "fig2.1-deep-vs-shallow": _conjunction("fig2.1-deep-vs-shallow", pair, ours=ours),
        "fig2.1-smallest-width": smallest,
    }, {"deep_gain": gain.text()})


# ----------------------------------------------------------------------------- fig 2.2
def fig22(cka_rows: pd.DataFrame, note: str = "") -> ItemFindings:
    """Fig 2.2 from the CKA summaries (`unit_evidence`'s rows: allocation, unit, id,
    adjacent, first_last): the baseline's adjacent CKA (sanity) and the first-vs-last-third
    CKA lower with the alpha allocation than the baseline, paired. ``note``: appended to the
    second check's detail (e.g. the batch-to-batch spread)."""
    per_seed = cka_rows[cka_rows.unit == "seed"].groupby("allocation")[
        ["adjacent", "first_last"]].mean()
    adj = unit_evidence(cka_rows, "adjacent", "baseline", threshold=0.8, side="greater")
    fl = unit_evidence(cka_rows, "first_last", "alpha", "baseline", side="less")
    return ItemFindings({
        "fig2.2-adjacent": Finding(_judged("fig2.2-adjacent", adj),
                                   ours=per_seed.adjacent.round(3).to_dict(),
                                   detail="a conv and its BN are near copies, so adjacent "
                                          "modules agree by construction"),
        "fig2.2-first-last": Finding(_judged("fig2.2-first-last", fl),
                                     ours=per_seed.first_last.round(3).to_dict(),
                                     detail=note),
    }, {"per_seed": per_seed.round(3).to_dict()})


# ----------------------------------------------------------------------------- fig 2.3
def fig23(alphas: Mapping[str, Sequence[float]], maps: pd.DataFrame,
          allocations: Mapping[str, tuple[str, Mapping]]) -> ItemFindings:
    """Fig 2.3: the maps' spread and mean lr on each model's last-epoch alphas (sanity), every
    alpha > 1 (sanity), and sqrt and log2 each above the baseline's test accuracy (``maps``: a
    run table with allocations ``baseline``, ``sqrt``, ``log2``, ...).

    Args:
        alphas: model -> its last-epoch alphas.
        maps: the fig 2.3 run table.
        allocations: name -> (scheme, params) of `allocate` (the chapter's ``ALLOCATIONS``).
    """
    spread, means = {}, {}
    for m, a in alphas.items():
        for name in ("alpha", "sqrt", "cbrt", "log2"):
            scheme, params = allocations[name]
            lr = allocate(np.asarray(a, float), 1.0, scheme, **dict(params))
            spread[(m, name)], means[(m, name)] = float(lr.std()), float(lr.mean())
    order = all(spread[(m, "alpha")] > spread[(m, "sqrt")] > spread[(m, "cbrt")] for m in alphas)
    min_alpha = min(float(np.min(a)) for a in alphas.values())
    findings = {
        "fig2.3-spread": Finding(bool(order), ours={f"{m}/{n}": round(v, 4)
                                                    for (m, n), v in spread.items()}),
        "fig2.3-mean": Finding(all(abs(v - 1) < 1e-9 for v in means.values())),
        "fig2.3-alpha": Finding(min_alpha > 1, ours=round(min_alpha, 3),
                                detail="the MLE 1 + n / sum ln(lambda / x_min) exceeds 1 by "
                                       "construction"),
    }
    gains = {}
    for name in ("sqrt", "log2"):
        e = contrast(maps, "test_acc", [{"allocation": name}], [{"allocation": "baseline"}])
        gains[name] = e.estimate
        findings[f"fig2.3-{name}"] = Finding(_judged(f"fig2.3-{name}", e))
    for name in ("sqrt", "log2"):
        f = findings[f"fig2.3-{name}"]
        findings[f"fig2.3-{name}"] = dataclasses.replace(
            f, ours={k: round(v, 2) for k, v in gains.items()})
    return ItemFindings(findings, {"spread": {f"{m}/{n}": v for (m, n), v in spread.items()}})


# ----------------------------------------------------------------------------- fig 2.4
POWERS_P = {"alpha": 1, "alpha^2": 2, "alpha^3": 3, "sqrt": 1 / 2, "cbrt": 1 / 3, "root4": 1 / 4}


def fig24(alpha: Sequence[float], lrs: Mapping[str, np.ndarray]) -> ItemFindings:
    """Fig 2.4's identities on one alpha vector: the max/min lr ratio is
    ``(alpha_max/alpha_min)^p`` and the spread grows with the power. ``lrs``: scheme -> its
    lrs (in units of lr_t), at least the schemes of ``POWERS_P``."""
    a = np.asarray(alpha, float)
    ratio_ok = all(np.isclose(lrs[n].max() / lrs[n].min(), (a.max() / a.min()) ** p, rtol=1e-9)
                   for n, p in POWERS_P.items())
    sd = {n: float(np.std(lrs[n])) for n in POWERS_P}
    below = {n: float((np.asarray(lr) < 0.1).mean()) for n, lr in lrs.items()}
    return ItemFindings({
        "fig2.4-ratio": Finding(bool(ratio_ok)),
        "fig2.4-std": Finding(sd["cbrt"] < sd["sqrt"] < sd["alpha"] < sd["alpha^2"]
                              < sd["alpha^3"], ours={n: round(v, 4) for n, v in sd.items()}),
    }, {"std": sd, "share_below_0.1_lr_t": below})


# ----------------------------------------------------------------------------- fig 2.5, T-001-b
def fig25_maps(alphas: Mapping[str, Sequence[float]], synthetic: Sequence[float],
               ours: Sequence[float]) -> ItemFindings:
    """Fig 2.5's arithmetic (sanity): NegPow2's counts on an n = 19 vector (``synthetic``,
    19 alphas), eq. 2.22's closed form on our alphas (``ours``), and softmax's share of groups
    below 0.1 lr_t at least the identity map's on every vector of ``alphas`` (label -> alphas).
    """
    syn, a = np.asarray(synthetic, float), np.asarray(ours, float)
    if syn.size != 19:
        raise ValueError(f"the source's NegPow2 counts are for n = 19 alphas, got {syn.size}")
    np19 = allocate(syn, 1.0, "neg_pow2")
    counts = (int((np19 < 0.1).sum()), int((np19 < 0.01).sum()), float(np19.max()))
    closed = all(int((allocate(a, 1.0, "neg_pow2") >= c).sum())
                 == neg_pow2_count_at_least(len(a), c) for c in (0.01, 0.1, 0.5, 1.0))
    shares = {}
    for label, v in alphas.items():
        v = np.asarray(v, float)
        for scheme in ("softmax", "neg_pow2"):
            shares[(label, scheme)] = float((allocate(v, 1.0, scheme) < 0.1).mean())
        shares[(label, "alpha")] = float((allocate(v, 1.0, "eq2.13") < 0.1).mean())
    share_ok = all(shares[(label, "softmax")] >= shares[(label, "alpha")] for label in alphas)
    return ItemFindings({
        "fig2.5-negpow2-19": Finding(counts[:2] == (12, 9)
                                     and abs(counts[2] - 19 * (0.5 + 2 ** -19)) < 1e-9,
                                     ours=list(counts)),
        "fig2.5-closed-form": Finding(bool(closed), ours={"n": len(a)}),
        "fig2.5-softmax-share": Finding(
            bool(share_ok), ours={f"{k}/{s}": round(v, 3) for (k, s), v in shares.items()},
            detail="softmax's share exceeds 50 % only for exponential-tailed alphas (a "
                   "prototype observation of ours, not judged here)"),
    }, {"shares": {f"{k}/{s}": v for (k, s), v in shares.items()}, "negpow2_19": counts})


def fig25_training(neg: pd.DataFrame, *, n_train: int | None = None) -> ItemFindings:
    """T-001-b and fig 2.5's training: NegPow2's train and test accuracy and softmax's test
    accuracy each below the baseline's (``neg``: run table with allocations baseline,
    softmax, neg_pow2), paired by seed."""
    means = neg.groupby("allocation")[["train_acc", "test_acc"]].mean().round(2)

    def below(metric, scheme, cid):
        e = contrast(neg, metric, [{"allocation": scheme}], [{"allocation": "baseline"}],
                     side="less", n_train=n_train)
        return Finding(_judged(cid, e), ours=means[metric].to_dict())

    return ItemFindings({
        "T-001-b-train": below("train_acc", "neg_pow2", "T-001-b-train"),
        "T-001-b-test": below("test_acc", "neg_pow2", "T-001-b-test"),
        "fig2.5-softmax-test": below("test_acc", "softmax", "fig2.5-softmax-test"),
    }, {"means": means.to_dict()})


# ----------------------------------------------------------------------------- fig 2.6, T-001-c
def _finite(alpha: Sequence[float]) -> np.ndarray:
    a = np.asarray(alpha, float)
    return a[np.isfinite(a)]


def skewness(alpha: Sequence[float]) -> float:
    """The sample skewness of one run's layer alphas (NaN: fewer than 3 distinct values)."""
    a = _finite(alpha)
    return float(stats.skew(a)) if a.size >= 3 and np.ptp(a) > 0 else math.nan


def mean_loglik_ratio(alpha: Sequence[float]) -> float:
    """Vuong's statistic on one run's layer alphas: the mean over layers of ``log f_exp(alpha_i
    - min) - log f_norm(alpha_i)`` (both maximum likelihood; nats per layer; > 0: the shifted
    exponential fits better). NaN: fewer than 3 distinct values."""
    a = _finite(alpha)
    if a.size < 3 or np.ptp(a) == 0:
        return math.nan
    x = a - a.min()
    return float(np.mean(stats.expon.logpdf(x, scale=x.mean())
                         - stats.norm.logpdf(a, a.mean(), a.std())))


def per_seed_evidence(final: Mapping, init: Mapping, statistic) -> dict[str, Evidence]:
    """The two parts of a fig 2.6 claim on one model, one ``statistic`` per seed (the seed is
    the replicate; the layers of one run are not independent): the statistic of the
    final-epoch alphas > 0 (t over seeds: the normal-shape null), and final minus epoch 0 of
    the same seed > 0 (paired t: the shape must emerge with training). ``final``, ``init``:
    seed -> that run's layer alphas."""
    seeds = sorted(final)
    f = np.array([statistic(final[k]) for k in seeds])
    i = np.array([statistic(init[k]) if k in init else math.nan for k in seeds])
    return {"final": mean_interval(f), "final - init": paired_difference(f, i)}


def fig26(final_alphas: Mapping[str, Mapping], init_alphas: Mapping[str, Mapping]
          ) -> ItemFindings:
    """Fig 2.6: per model (-> seed -> that run's final-epoch alphas; ``init_alphas``: the same
    runs' epoch-0 alphas), right skew and an exponential beating a normal (Vuong), each per
    seed: above 0 over seeds and above the seed's own value at initialisation (paired). Every
    part of both models must hold (`per_seed_evidence`)."""
    out, ours = {}, {}
    for cid, statistic, name in (("fig2.6-skew", skewness, "skewness"),
                                 ("fig2.6-loglik", mean_loglik_ratio, "loglik ratio")):
        parts = {}
        for m in final_alphas:
            for part, e in per_seed_evidence(final_alphas[m], init_alphas.get(m, {}),
                                             statistic).items():
                parts[f"{m}: {name} ({part})"] = e
        per_seed = {f"{m}/{when}": {str(k): round(statistic(a), 3) for k, a in by.items()}
                    for m in final_alphas
                    for when, by in (("final", final_alphas[m]),
                                     ("init", init_alphas.get(m, {})))}
        out[cid] = _conjunction(cid, parts, ours=per_seed)
        ours[name] = per_seed
    pooled = {m: exp_vs_normal(np.concatenate([_finite(a) for a in by.values()]))
              for m, by in final_alphas.items()}
    return ItemFindings(out, {"per_seed": ours, "fits": pooled})


def t001c(shares: pd.DataFrame) -> ItemFindings:
    """T-001-c from ``shares``: rows ``model``, ``seed``, ``rule``, ``epoch``, ``share_2_6``
    (each run's share of layers with alpha in [2, 6] per epoch; 0 = initialisation). The
    claim, per seed: the median rule's share at that run's last epoch < 0.5, on every model;
    it decides over the seeds (``replicates``: the fewest seeds of a model). The KS rule and
    epoch 0 (the same runs at initialisation) are reported beside."""
    last = shares[shares.epoch == shares.groupby(["model", "seed"]).epoch.transform("max")]
    first = shares[shares.epoch == 0]
    med = last[last.rule == "median"]
    holds = med.assign(ok=med.share_2_6 < 0.5).groupby("model").ok
    n_seeds = int(med.groupby("model").seed.nunique().min()) if len(med) else 0

    def table(rows):
        return {f"{m}/{r}": {str(k): round(float(v), 2) for k, v in zip(g.seed, g.share_2_6)}
                for (m, r), g in rows.groupby(["model", "rule"])}

    ours = {"last epoch": table(last), "epoch 0": table(first)}
    counts = {m: f"{int(g.sum())} of {len(g)} seeds" for m, g in holds}
    return ItemFindings({"T-001-c": Finding(
        bool(len(med)) and bool(holds.all().all()), ours=ours, replicates=n_seeds,
        detail=f"median rule, share < 0.5 at the last epoch in {counts}; the KS rule's shares "
               "and epoch 0 (initialisation) are reported beside (the range depends on the "
               "estimator)")}, {"shares": ours})


# ----------------------------------------------------------------------------- T-001-a
POWER_CLAIMS = {  # claim id -> (metric, scheme, reference, side)
    "T-001-a-squared-test": ("test_acc", "alpha^2", "baseline", "greater"),
    "T-001-a-squared-train": ("train_acc", "alpha^2", "baseline", "less"),
    "T-001-a-cubed-test": ("test_acc", "alpha^3", "alpha^2", "less"),
    "T-001-a-cubed-train": ("train_acc", "alpha^3", "alpha^2", "less"),
}


def t001a(powers: pd.DataFrame, lrs: Sequence[float], *,
          n_train: int | None = None) -> ItemFindings:
    """T-001-a, each of the source's four statements at every lr0 of ``lrs`` (paired by seed;
    a statement holds only where it holds at every lr0): alpha^2 above the baseline's test
    accuracy and below its train accuracy, alpha^3 below alpha^2 in both."""
    means = powers.groupby(["lr", "allocation"], sort=False)[["test_acc", "train_acc"]].mean()
    findings = {}
    for cid, (metric, a, b, side) in POWER_CLAIMS.items():
        parts = {f"lr0 {lr:g}": contrast(powers, metric, [{"lr": lr, "allocation": a}],
                                         [{"lr": lr, "allocation": b}], side=side,
                                         n_train=n_train) for lr in lrs}
        ours = {f"lr0 {lr:g} {x}": round(float(means.loc[(lr, x), metric]), 2)
                for lr in lrs for x in (a, b)}
        findings[cid] = _conjunction(cid, parts, ours=ours)
    return ItemFindings(findings, {"means": means.round(2).reset_index().to_dict("records")})


# ----------------------------------------------------------------------------- T-001-d
def _sampling_delta(group, schemes):
    """(every sampling scheme's runs, the baselines repeated per scheme) of a group of models."""
    return ([{"model": m, "allocation": a} for m in group for a in schemes],
            [{"model": m, "allocation": "baseline"} for m in group for _ in schemes])


def t001d(smp: pd.DataFrame, shallow: Sequence[str], deep: Sequence[str],
          schemes: Sequence[str], *, n_train: int | None = None) -> ItemFindings:
    """T-001-d, Delta = a sampling scheme minus the baseline, mean over ``schemes``, paired by
    seed. On the shallower models Delta test > 0 and -Delta train > 0; deeper minus shallower:
    Delta test lower and Delta train higher (each part written as "> 0")."""
    plus, minus = _sampling_delta(shallow, schemes)
    shallow_parts = {
        "Delta test > 0": contrast(smp, "test_acc", plus, minus),
        "-Delta train > 0": contrast(smp, "train_acc", minus, plus, n_train=n_train)}
    d_deep, d_shallow = _sampling_delta(deep, schemes), _sampling_delta(shallow, schemes)
    depth_parts = {
        "Delta test(shallower) - Delta test(deeper) > 0":
            delta_gap(smp, "test_acc", d_shallow, d_deep),
        "Delta train(deeper) - Delta train(shallower) > 0":
            delta_gap(smp, "train_acc", d_deep, d_shallow, n_train=n_train)}
    dd = paired_deltas(smp, ["model"], n_train=n_train)
    ours = dd.groupby("model")[["d_test", "d_train"]].mean().round(2).to_dict()
    return ItemFindings({
        "T-001-d-shallow": _conjunction("T-001-d-shallow", shallow_parts, ours=ours),
        "T-001-d-depth": _conjunction("T-001-d-depth", depth_parts, ours=ours),
    }, {"deltas": ours})
