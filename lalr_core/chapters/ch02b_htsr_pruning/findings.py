"""Chapter 02b's checks as functions: one per source item, from the runs' results to an
`ItemFindings` (our numbers and one `Finding` per check of
`lalr_core.chapters.ch02b_htsr_pruning.claims.CLAIMS`).

The notebook prepares the inputs (metric tables, budget grids, run tables, spectral probes) and
records each finding with ``out.record(CLAIMS[id], finding)``; the tests build small synthetic
inputs on which every claim test gives PASS, FAIL and, on an interval, INCONCLUSIVE. Accuracy
comparisons are `lalr_core.chapters.ch02b_htsr_pruning.verdicts`' paired bootstraps over the test
examples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from lalr_core.chapters.ch02b_htsr_pruning.claims import CLAIMS, FAMILIES
from lalr_core.chapters.ch02b_htsr_pruning.plans import max_abs_zscore, ranks_of, rule_correlations
from lalr_core.chapters.ch02b_htsr_pruning.settings import (
    GRID_FIGS,
    SCALE,
    SETTINGS,
    SHAPE,
    UNIFORM,
)
from lalr_core.chapters.ch02b_htsr_pruning.summaries import (
    alpha_gap,
    largest_lr_shift,
    rebound_mitigated,
    rebound_rise,
)
from lalr_core.chapters.ch02b_htsr_pruning.verdicts import (
    all_of,
    best_run,
    gain_contrast,
    lr_evidence,
    lr_gains,
    lr_range_contrast,
    runs_of,
    share_difference,
    uniform_curve,
    versus_range,
    versus_uniform,
)
from lalr_core.core.results.claims import Finding, ItemFindings
from lalr_core.core.results.evidence import CONFIDENCE, Evidence, mean_interval

FAMILY_METRICS = {"shape": SHAPE, "scale": SCALE}


def _judged(claim_id: str, evidence: Evidence) -> Evidence:
    return CLAIMS[claim_id].judge(evidence)


# ----------------------------------------------------------------------------- table 3.1, fig 3.1
def table31(settings: Mapping) -> ItemFindings:
    """Table 3.1 as the pruning code reads it equals the source's four settings (sanity)."""
    expected = {"traditional": {"direct": 1, "inverse": 2}, "augmix": {"direct": 3, "inverse": 4}}
    return ItemFindings({"table3.1": Finding(dict(settings) == expected, ours=dict(settings))})


def fig31(tables: Mapping[str, pd.DataFrame], sparsity: float) -> ItemFindings:
    """Fig 3.1's baselines per role (`plans.fig31_table`: size, erk, lamp, uniform per conv):
    ERK grows with the layer's size, uniform is flat, LAMP spares the first and last conv
    (sanity: the source makes no claim on fig 3.1)."""
    found, detail = {}, ("the source's text makes no claim on fig 3.1 (caption only); our "
                         "checks and thresholds (E-3.1)")
    for role, t in tables.items():
        rho = float(t["erk"].corr(t["size"], method="spearman"))
        first_last = [float(t["lamp"].iloc[0]), float(t["lamp"].iloc[-1])]
        found[f"fig3.1-erk/{role}"] = Finding(rho > 0.8, ours=round(rho, 3), detail=detail)
        found[f"fig3.1-uniform/{role}"] = Finding(
            bool(np.allclose(t["uniform"], sparsity)), ours=sorted(set(t["uniform"].round(6))),
            detail=detail)
        found[f"fig3.1-lamp/{role}"] = Finding(
            bool(t["lamp"].std() > 0 and max(first_last) < sparsity),
            ours=[round(x, 3) for x in first_last], detail=detail)
    return ItemFindings(found)


# ----------------------------------------------------------------------------- fig 3.2
def _per_seed(x) -> list:
    """``x`` as a list of per-seed values (a pandas object or a non-sequence: one seed)."""
    if isinstance(x, (pd.Series, pd.DataFrame, Mapping)) or not isinstance(x, Sequence):
        return [x]
    return list(x)


def fig32(curves: Mapping[tuple[str, str], pd.Series | Sequence[pd.Series]], *,
          share: float = 0.8, rise: float = 0.02) -> ItemFindings:
    """Fig 3.2 on DNm from its mean-over-layers curves (``(aug, "entropy" | "alpha")`` ->
    per-epoch series, epoch 0 = init; or a list of them, one per pretraining seed, the two
    augmentations' lists in the same seed order): AugMix's entropy above traditional's at
    ``share`` of the trained epochs; AugMix's entropy and alpha rebounds smaller than
    traditional's (N/A where no traditional curve has a rebound of ``rise``: nothing to
    mitigate). Each check holds "in every seed", so it decides only on >= 3 seeds
    (``Finding.replicates``): with no effect of AugMix one pair of curves passes by chance."""
    per = {k: _per_seed(v) for k, v in curves.items()}
    k = len(per[("traditional", "entropy")])
    if any(len(v) != k for v in per.values()):
        raise ValueError(f"fig 3.2 needs one curve per seed for every arm, got "
                         f"{ {key: len(v) for key, v in per.items()} }")
    seeds = f"{k} pretraining seed{'s' if k != 1 else ''} per augmentation"
    fracs = []
    for ent_t, ent_a in zip(per[("traditional", "entropy")], per[("augmix", "entropy")]):
        trained = ent_t.index > 0
        fracs.append(float((ent_a[trained] > ent_t[trained]).mean()))
    frac = fracs[0] if k == 1 else [round(f, 3) for f in fracs]
    found = {"fig3.2-entropy-higher": Finding(
        all(f >= share for f in fracs), ours=round(fracs[0], 3) if k == 1 else frac,
        detail=f"{share:.0%} of the epochs: our reading of 'uniformly' (E-3.2); holds in "
               f"every one of {seeds}", replicates=k)}
    rises = {}
    for col in ("entropy", "alpha"):
        pairs = list(zip(per[("traditional", col)], per[("augmix", col)]))
        less = [rebound_mitigated(t, a, rise) for t, a in pairs]
        r = [{"traditional": round(rebound_rise(t), 4), "augmix": round(rebound_rise(a), 4)}
             for t, a in pairs]
        rises[col] = r[0] if k == 1 else r
        judged = [x for x in less if x is not None]
        if not judged:
            found[f"fig3.2-{col}-rebound"] = Finding(
                None, ours=rises[col],
                detail=f"no traditional DNm {col} curve has a rebound (rise after its minimum "
                       f"< {rise:.0%}, our definition of a rebound, E-3.2; {seeds}): nothing "
                       "to mitigate in this setting")
        else:
            found[f"fig3.2-{col}-rebound"] = Finding(
                all(judged), ours=rises[col], replicates=len(judged),
                detail=f"rise after the minimum, relative to it; holds in every one of the "
                       f"{len(judged)} seed(s) whose traditional curve rebounds ({seeds})")
    return ItemFindings(found, {"share_entropy_higher": frac, "rises": rises})


# ----------------------------------------------------------------------------- figs 3.4-3.21
def _extreme(values: pd.Series, transition: Sequence[str], lowest: bool) -> bool:
    """The ``transition`` convs hold the ``len(transition)`` lowest (or highest) ranks."""
    r = ranks_of(values, transition)
    n, t = len(values), len(transition)
    want = list(range(1, t + 1)) if lowest else list(range(n - t + 1, n + 1))
    return sorted(r.values()) == want


def transition_finding(metric: str, trained: Sequence[pd.DataFrame],
                       init: Sequence[pd.DataFrame], transition: Sequence[str]) -> Finding:
    """DNm's ``transition`` convs hold the 2 extreme ranks of ``metric`` (lowest entropy,
    highest norm and spectral norm) in every trained replicate (``trained``: the metric
    tables of DNms pretrained from their own seeds), more often than the same architecture at
    initialisation (``init``, `plans.init_tables`).

    FAIL (a bool over the replicates) where a trained replicate lacks the ranks: the source's
    sentence fails as stated. Where every replicate has them, the evidence is the share of
    trained networks with the ranks minus the init networks' share (`share_difference`,
    Newcombe's interval, claim > 0): a property the init networks show too (norm: the
    transition convs' output width) gives no PASS however many replicates hold it."""
    lowest = metric == "entropy"
    hits = [_extreme(t[metric], transition, lowest) for t in trained]
    null = [_extreme(t[metric], transition, lowest) for t in init]
    n = len(trained[0])
    ours = {"trained ranks": [ranks_of(t[metric], transition) for t in trained]
            if len(trained) > 1 else ranks_of(trained[0][metric], transition),
            "convs": n, "trained with the ranks": f"{sum(hits)}/{len(hits)}",
            "at initialisation with the ranks": f"{sum(null)}/{len(null)}"}
    where = "lowest" if lowest else "highest"
    detail = (f"the 2 {where} of the {n} convs' ranks (a random pair lies there with chance "
              f"1 / {math.comb(n, 2)}); null: the same architecture at initialisation, "
              f"{len(null)} seeds")
    if not all(hits):
        return Finding(False, ours=ours, replicates=len(hits),
                       detail=f"{detail}; a trained replicate lacks the ranks")
    return Finding(share_difference(sum(hits), len(hits), sum(null), len(null)), ours=ours,
                   detail=f"{detail}; trained share minus the init share"
                          + ("; the init networks have the ranks too: the architecture's "
                             "property, not training's" if null and all(null) else ""))


def grid_checks(role: str, aug: str, table: tuple[pd.DataFrame, Mapping[str, int]],
                grid: pd.DataFrame, transition: Sequence[str], *, z_max: float = 2.5,
                trained: Sequence[pd.DataFrame] | None = None,
                init: Sequence[pd.DataFrame] = ()) -> ItemFindings:
    """The budget grid of one (role, aug) (`plans.budget_grid`) and its metric table
    (`plans.layer_table`): the sanity checks of the budgets (uniform flat, direct and inverse
    mirrored, no target exceeded) and the source's claims on the layers: on DNm the
    ``transition`` convs have the 2 lowest entropies and the 2 highest norm and spectral norm
    (the direct budget grows with the metric, so these ranks are the budgets' order), judged
    against the same architecture at initialisation (`transition_finding`); on the other
    models no layer's entropy stands out (max |z| < ``z_max``) in every trained replicate.

    ``trained``: the metric tables of every pretrained replicate of (role, aug) (default: the
    one of ``table``); ``init``: those of the architecture at initialisation (the null)."""
    fig = GRID_FIGS[(role, aug)][2]
    metrics, sizes = table
    trained = [metrics] if trained is None else list(trained)
    uni = grid[grid.rule == UNIFORM]
    corr = rule_correlations(grid)
    size = pd.Series(sizes, dtype=float)
    worst = max(float((g.set_index("layer")["ratio"] * size).sum() / size.sum() - g.P.iloc[0])
                for _, g in grid.groupby(["metric", "rule", "P"]))
    found = {
        f"{fig}-uniform-flat": Finding(bool((uni.ratio == uni.P).all()),
                                       ours=sorted(set(uni.ratio))),
        f"{fig}-anti-correlated": Finding(bool((corr["corr"].dropna() < 0).all()),
                                          ours=round(float(corr["corr"].max()), 3)),
        f"{fig}-under-target": Finding(worst <= 1e-9, ours=round(worst, 4)),
    }
    z = max_abs_zscore(metrics["entropy"])
    numbers = {"role": role, "aug": aug, "max_abs_z_entropy": z}
    if role == "densenet":
        for m in ("entropy", "norm", "spectral_norm"):
            found[f"{fig}-transition-{m}"] = transition_finding(m, trained, init, transition)
            numbers[f"rank_{m}"] = ranks_of(metrics[m], transition)
    else:
        zs = [max_abs_zscore(t["entropy"]) for t in trained]
        z0 = [round(max_abs_zscore(t["entropy"]), 3) for t in init]
        found[f"{fig}-no-outlier"] = Finding(
            all(v < z_max for v in zs), ours={"max |z|": round(z, 3) if len(zs) == 1 else
                                               [round(v, 3) for v in zs],
                                               "at initialisation (not judged)": z0},
            replicates=len(zs),
            detail=f"|z| < {z_max}: our reading of 'not observed' (E-3.10), in every one of "
                   f"{len(zs)} pretrained replicate(s); an absence claim: the init networks "
                   f"beside it show what the architecture gives untrained")
    return ItemFindings(found, numbers)


# ----------------------------------------------------------------------------- fig 3.3
def fig33(f33: pd.DataFrame, swept: Mapping[str, Sequence[float]],
          metrics: Sequence[str]) -> ItemFindings:
    """Fig 3.3 (a `run_table` of DNm's fig 3.3 runs, with their uniform curves): no run
    over-prunes (sanity); at the sparsest target of each augmentation (``swept``: aug ->
    targets P), the shape and the scale metrics' direct budgets, pooled (those of ``metrics``
    swept), beat uniform pruning at the same size; and both families' gain is larger with
    AugMix than with traditional augmentation at the sparsest common target."""
    over = f33[f33.over_pruned]
    within = float(((f33.P - f33.sparsity) <= 0.02).mean())
    found = {"fig3.3-over-prune": Finding(
        over.empty, ours={"over_pruned": len(over), "runs": len(f33),
                          "share within 2 % of target": round(within, 3)})}
    curves = {aug: uniform_curve(f33, aug=aug) for aug in swept}
    pooled = ("pooled over the family's metrics as the source names them (no best-run pick); "
              "paired bootstrap over the test examples against the uniform curve "
              "interpolated at each run's measured size")

    def direct(aug, P, names):
        return runs_of(f33, aug=aug, P=P, rule="direct", metrics=[m for m in names
                                                                  if m in metrics])

    for aug in swept:
        P = max(swept[aug])
        for family in FAMILIES:
            runs = direct(aug, P, FAMILY_METRICS[family])
            if runs.empty:
                continue
            e, clamped = versus_uniform(runs, curves[aug])
            same = runs_of(curves[aug], P=P)
            ours = {"target P": P, "runs": len(runs),
                    "mean remaining": round(float(runs.remaining.mean()), 3),
                    "uniform at the same P: remaining": round(float(same.remaining.mean()), 3),
                    "gain vs uniform at the same P (sizes differ)":
                        round(float(runs.test_acc.mean() - same.test_acc.mean()), 2),
                    "best single run (not judged)": best_run(runs),
                    "clamped to the curve's end": clamped}
            found[f"fig3.3-{aug}-{family}"] = Finding(
                _judged(f"fig3.3-{aug}-{family}", e), ours=ours,
                detail=f"sparsest target P = {P}; {pooled}")
    common = set(swept.get("traditional", ())) & set(swept.get("augmix", ()))
    if common:
        P = max(common)
        both = {aug: direct(aug, P, SHAPE + SCALE) for aug in ("augmix", "traditional")}
        if not any(r.empty for r in both.values()):
            e = gain_contrast((both["augmix"], curves["augmix"]),
                              (both["traditional"], curves["traditional"]))
            found["fig3.3-augmix-vs-traditional"] = Finding(
                _judged("fig3.3-augmix-vs-traditional", e),
                ours={aug: versus_uniform(r, curves[aug])[0].text() for aug, r in both.items()},
                detail=f"P = {P}; difference of the two pooled gains, paired bootstrap over "
                       "the shared test examples")
    return ItemFindings(found)


# ----------------------------------------------------------------------------- T-001-e
def t001e(te: pd.DataFrame, roles: Sequence[str], metrics: Sequence[str],
          rules: Sequence[str]) -> ItemFindings:
    """T-001-e: each model's metric runs (``metrics`` x ``rules`` x targets, pooled) against
    its uniform curve at the same size; MBv2m's and WRNm's gains below DNm's (difference of
    gains); on WRNm uniform beats the runs of every rule (each rule pooled)."""
    pairs = {role: (runs_of(te, role=role, metrics=metrics), uniform_curve(te, role=role))
             for role in ("densenet", *roles)}
    gains = {role: versus_uniform(*pair)[0].text() for role, pair in pairs.items()}
    found = {}
    for role in ("mobilenet", "wrn"):
        if role in roles:
            e = gain_contrast(pairs[role], pairs["densenet"], side="less")
            found[f"T-001-e-{role}"] = Finding(
                _judged(f"T-001-e-{role}", e), ours=gains,
                detail="each model's metric runs pooled (metrics x rules x targets); "
                       "difference of the two gains, paired bootstrap over the shared test "
                       "examples")
    if "wrn" in roles:
        ev = {rule: versus_uniform(runs_of(te, role="wrn", metrics=metrics, rule=rule),
                                   pairs["wrn"][1], side="less")[0] for rule in rules}
        found["T-001-e-wrn-uniform"] = Finding(
            _judged("T-001-e-wrn-uniform", all_of(list(ev.values()))),
            ours={f"Setting {SETTINGS['traditional'][r]} ({r})": e.text() for r, e in ev.items()},
            detail="each rule's runs pooled over metrics and targets; the weaker of the "
                   "intervals decides")
    return ItemFindings(found, {"gains": gains})


# ----------------------------------------------------------------------------- figs 3.22-3.24
def fig322(tb_probe: pd.DataFrame | Sequence[pd.DataFrame],
           base_probe: pd.DataFrame | Sequence[pd.DataFrame],
           tb_records: pd.DataFrame | Sequence[pd.DataFrame], k: int = 4) -> ItemFindings:
    """Fig 3.22 from the two finetunings' spectral probes (layer, epoch, alpha) and
    TempBalance's records (layer, epoch, lr_scale), each a DataFrame or a list of them, one
    per finetuning seed (same order): the alpha gap TB - baseline averaged over the layers
    and the finetuning epochs is below 0 (t interval over the seeds' gaps; with one seed the
    t interval over its layers, reported but one replicate); and below 0 in each of the
    ``k`` layers with the largest lr shift, in every seed (a bool over the seeds)."""
    tbs, bases, recs = _per_seed(tb_probe), _per_seed(base_probe), _per_seed(tb_records)
    if not len(tbs) == len(bases) == len(recs):
        raise ValueError("fig 3.22 needs one probe of each lr and one record per seed")
    per_layers, gaps_by_seed, shown_by_seed = [], [], []
    for tb, base, rec in zip(tbs, bases, recs):
        layers = sorted(set(tb.layer) & set(base.layer))
        per_layers.append(pd.Series({layer: float(alpha_gap(tb, base, layer).mean())
                                     for layer in layers}).dropna())
        shown = largest_lr_shift(rec, k)
        shown_by_seed.append(shown)
        gaps_by_seed.append({layer: float(alpha_gap(tb, base, layer).mean()) for layer in shown})
    n = len(tbs)
    if n == 1:
        e = mean_interval(per_layers[0].to_numpy(), side="less", unit="layer")
        how = "t interval over the layers' gaps of one finetuning per lr: one replicate"
    else:
        e = mean_interval([float(p.mean()) for p in per_layers], side="less", unit="seed")
        how = f"t interval over {n} finetuning seeds' layer-mean gaps"
    mean_gap = alpha_gap(tbs[0], bases[0])
    gaps = gaps_by_seed[0] if n == 1 else [{k_: round(v, 3) for k_, v in g.items()}
                                           for g in gaps_by_seed]
    return ItemFindings({
        "fig3.22-mean": Finding(
            _judged("fig3.22-mean", e),
            ours={"mean gap (TB - baseline)": round(float(mean_gap.mean()), 3),
                  "per epoch": [round(float(v), 3) for v in mean_gap]},
            detail=f"each layer's gap averaged over the finetuning epochs; {how}"),
        "fig3.22-layers": Finding(
            bool(all(g < 0 for gs in gaps_by_seed for g in gs.values())),
            ours={k_: round(v, 3) for k_, v in gaps.items()} if n == 1 else gaps,
            replicates=n,
            detail=f"all {k} layers below 0 in every one of {n} finetuning seed(s) (by chance "
                   f"1/{2 ** k} per seed)"),
    }, {"shown": shown_by_seed[0], "per_layer_gap": per_layers[0].to_dict()})


def sign_share(n_yes: int, n: int, *, threshold: float = 0.5) -> Evidence:
    """Evidence that a share of ``n`` cases exceeds ``threshold``: ``n_yes / n`` with its
    exact (Clopper-Pearson) binomial interval (the sign test's, against 1/2 by default)."""
    if n < 1 or not 0 <= n_yes <= n:
        raise ValueError(f"need 0 <= n_yes <= n, n >= 1, got {n_yes}, {n}")
    ci = stats.binomtest(n_yes, n).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return Evidence(n_yes / n, float(ci.low), float(ci.high), threshold, "greater", n, None,
                    f"exact binomial interval over {n} sizes", unit="size")


def fig323(delta: Mapping[float, tuple[float, float]]
           | Sequence[Mapping[float, tuple[float, float]]]) -> ItemFindings:
    """Figs 3.23 / 3.24 from, per size, (mean delta-alpha of the lr-increase layers, that of
    the lr-decrease layers), delta-alpha = TB - baseline at the last epoch; or a list of such
    mappings, one per finetuning seed: the increase layers lie below the decrease layers at
    more sizes than chance. One seed: the share of sizes, exact binomial interval (the sign
    test; the sizes of one run are one replicate); several seeds: the seeds' shares, t
    interval over the seeds."""
    per = _per_seed(delta)
    shares = [sum(a < b for a, b in d.values()) / len(d) for d in per]
    if len(per) == 1:
        n_ok = sum(a < b for a, b in per[0].values())
        e = sign_share(n_ok, len(per[0]))
        ours = {"sizes_ok": f"{n_ok}/{len(per[0])}",
                **{str(P): [round(a, 3), round(b, 3)] for P, (a, b) in per[0].items()}}
    else:
        e = mean_interval(shares, threshold=0.5, unit="seed")
        ours = {"share of sizes per seed": [round(x, 3) for x in shares],
                **{str(P): [round(a, 3), round(b, 3)] for P, (a, b) in per[0].items()}}
    detail = ("no claim in the source's text beyond the caption and fig 3.22's sentence; our "
              f"criterion (E-3.23/24), judged against chance; {len(per)} finetuning seed(s)")
    return ItemFindings({item: Finding(_judged(item, e), ours=ours, detail=detail)
                         for item in ("fig3.23", "fig3.24")})


# ----------------------------------------------------------------------------- figs 3.25, 3.26
def fig325(tV: pd.DataFrame, *, middle: tuple[float, float] = (0.1, 0.8)) -> ItemFindings:
    """Fig 3.25 (VGGm at several uniform sizes, TB and the global lr, same masks): TB above
    the global lr at every size whose remaining fraction lies in ``middle`` ("consistently":
    the weakest size decides); TB at least the global lr - 0.5 points at the sparsest and the
    densest size."""
    gains = lr_gains(tV)
    per_size = {f"{r.remaining:.2f}": f"{r.gain:+.2f} [{r.low:+.2f}, {r.high:+.2f}]"
                for r in gains.itertuples()}
    mid = gains[(gains.remaining >= middle[0]) & (gains.remaining <= middle[1])]["P"].tolist()
    if mid:
        mid_f = Finding(_judged("fig3.25-middle", all_of([lr_evidence(tV, [P]) for P in mid])),
                        ours={"sizes": len(mid),
                              "pooled over these sizes": lr_evidence(tV, mid).text(),
                              "TB - baseline by remaining": per_size},
                        detail="per size TB - baseline paired by seed (same masks); the weakest "
                               "size decides")
    else:
        mid_f = Finding(None, detail="no size of this setting keeps 10-80 % of the parameters")
    ends = [gains.loc[gains.remaining.idxmin(), "P"], gains.loc[gains.remaining.idxmax(), "P"]]
    wide = tV.pivot_table(index="P", columns="layer_lr", values="train_acc")
    train_gap = {f"P = {P}": round(float(wide.loc[P, "eq2.13"] - wide.loc[P, "none"]), 2)
                 for P in ends}
    ends_e = all_of([lr_evidence(tV, [P], threshold=-0.5) for P in ends])
    return ItemFindings({
        "fig3.25-middle": mid_f,
        "fig3.25-ends": Finding(
            _judged("fig3.25-ends", ends_e),
            ours={f"P = {P}": lr_evidence(tV, [P]).text() for P in ends}
            | {"train accuracy TB - baseline (not judged)": train_gap},
            detail="tolerance 0.5 pp: ours, for 'reaches' (E-3.25); each end a paired "
                   "bootstrap, the weaker decides"),
    }, {"gains": gains.to_dict("records")})


def fig326(t26: pd.DataFrame, low: float, high: float, profile: str) -> ItemFindings:
    """Fig 3.26: with uniform pruning, TB's gain over the global lr is larger at the sizes
    keeping ``low``-``high`` of the conv weights than at the other sizes (difference of mean
    gains); beside it, where each pruning's gain peaks against the source's range."""
    gains = {m: lr_gains(runs_of(t26, metrics=(m,))) for m in (UNIFORM, "alpha")
             if not runs_of(t26, metrics=(m,)).empty}
    peak = {m: versus_range(float(g.loc[g.gain.idxmax(), "remaining"]), low, high, profile)
            for m, g in gains.items()}
    e, inside = lr_range_contrast(runs_of(t26, metrics=(UNIFORM,)), low, high)
    ours = {"sizes inside (P)": inside, "remaining at the largest gain": peak,
            "TB - global lr by remaining (uniform pruning)":
                {f"{r.remaining:.2f}": f"{r.gain:+.2f} [{r.low:+.2f}, {r.high:+.2f}]"
                 for r in gains[UNIFORM].itertuples()}}
    if e is None:
        f = Finding(None, ours=ours, detail="no size of this setting keeps 55-65 % of the conv "
                                            "weights (or none lies outside)")
    else:
        f = Finding(_judged("fig3.26", e), ours=ours,
                    detail="mean gain inside the range minus mean gain outside, paired "
                           "bootstrap over the test examples")
    return ItemFindings({"fig3.26": f}, {"gains": {m: g.to_dict("records")
                                                   for m, g in gains.items()}})


__all__ = [
    "ItemFindings",
    "fig31",
    "fig32",
    "fig33",
    "fig322",
    "fig323",
    "fig325",
    "fig326",
    "grid_checks",
    "sign_share",
    "t001e",
    "table31",
    "transition_finding",
]
