"""One function per claim of chapter 01: the runs' results in, its numbers and `Finding` out.

Every function takes run results (the dicts `lalr_core.core.runs.units.train_runs` returns;
``by_task`` maps a task to its runs in seed order, seed ``i`` of every arm paired) or tables
made from them, and returns an `Item`: the claim's id, the `Finding` the notebook records with
``out.record(CLAIMS[id], item.finding)``, the parts behind it and the numbers it shows. The
rules (paired t over seeds, the least favourable part decides, a count of parts for "on >= 2
of 3 shifts") are those of `verdicts`; what is new here is the null or control each claim is
judged against:

* L-C10, L-C11 (X-L7): LALR-REC's top scale tercile against its bottom tercile would pass for
  any quantity that drifts with training, since the top tercile trains at a higher lr and the
  bottom one holds the frozen layer. The null is U, trained at one lr, split into the
  terciles LALR *would* have set from U's own weights (`analysis.uniform_table`): the claim is
  LALR-REC's top - bottom change minus U's, paired by seed, > 0.
* L-C22 (X-L12): the fraction of the top-third layers whose scale fell at the next SVD epoch,
  against the same fraction of U's would-be scales (ranking drift alone), paired by run.
* L-C20, L-C28: Spearman's rho within each run, the mean over runs with a t interval over
  runs (`evidence.rank_correlation_by_seed`): pairs of one run are not independent.
* L-C26: SVD's cycle-1 minus cycle-2 gain against U's gain over the same epochs (every run
  gains less later).

Accuracies are in percentage points, losses in nats (millinats where stated).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from lalr_core.chapters.ch01_lalr import mechanisms as mech
from lalr_core.chapters.ch01_lalr.claims import CLAIMS, UNTESTABLE
from lalr_core.chapters.ch01_lalr.verdicts import (
    final,
    forgetting,
    generalisation_gap,
    paired,
    paired_curve,
    requirement,
    top_tercile_fall,
    versus_best_other,
)
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.evidence import (
    Evidence,
    at_least,
    every,
    mean_interval,
    paired_difference,
    rank_correlation_by_seed,
    texts,
)
from lalr_core.methods.layer_lr.lalr.analysis import uniform_table

Runs = Sequence[Mapping]
ByTask = Mapping[str, Runs]

def rank_by_run(groups: Sequence[tuple[Sequence[float], Sequence[float]]], cid: str
                ) -> Evidence:
    """`evidence.rank_correlation_by_seed` of ``groups`` (one ``(x, y)`` per run: each run's
    own rho, t interval over runs) judged against claim ``cid``."""
    claim = claim_of(cid)
    return rank_correlation_by_seed(groups, threshold=claim.threshold, side=claim.side)


@dataclass(frozen=True)
class Item:
    """What one claim's function found.

    Attributes:
        claim: the claim's id in `CLAIMS`.
        finding: the `Finding` to record (its evidence decides the verdict).
        parts: the intervals behind it, by name (empty for a deterministic check).
        numbers: further numbers shown beside it (JSON-ready).
    """

    claim: str
    finding: Finding
    parts: Mapping[str, Evidence] = field(default_factory=dict)
    numbers: Mapping[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return self.finding.verdict


def _item(cid: str, evidence, parts: Mapping[str, Evidence], detail: str, digits: int = 2,
          replicates: int | None = None, **numbers) -> Item:
    ours = {**texts(parts, digits), **numbers} if parts or numbers else None
    return Item(cid, Finding(evidence, ours=ours, detail=detail, replicates=replicates),
                dict(parts), numbers)


def claim_of(cid: str):
    """The `Claim` ``cid`` of `CLAIMS`."""
    return CLAIMS[cid]


def _judged(cid: str, ev: Evidence) -> Evidence:
    """``ev`` judged against claim ``cid``'s threshold and side."""
    return claim_of(cid).judge(ev)


def counted_once(item: Item, reference: Item, same: Mapping[str, str]) -> Item:
    """``item`` recorded N/A, pointing to ``reference``, when the comparison that FAILs it is
    the one that FAILs ``reference`` (one verdict counted once, not once per claim that reads
    it): both FAIL, and every FAILing part of ``item`` is named in ``same`` (``item``'s part ->
    ``reference``'s part: the same arms, task and seeds) with that part of ``reference``
    FAILing too. Otherwise (a FAIL of its own: another part, a failed requirement) ``item``
    unchanged. The N/A keeps ``item``'s numbers."""
    if item.verdict != "FAIL" or reference.verdict != "FAIL" or \
            not isinstance(item.finding.evidence, Evidence):
        return item
    failing = [k for k, e in item.parts.items() if e.verdict == "FAIL"]
    shared = [same.get(k) for k in failing]
    if not failing or any(r is None or r not in reference.parts or
                          reference.parts[r].verdict != "FAIL" for r in shared):
        return item
    detail = (f"decided by {reference.claim}'s interval{'s' if len(set(shared)) > 1 else ''} "
              f"{', '.join(dict.fromkeys(shared))} (the same comparison): counted once there; "
              f"this claim's own parts are shown ({item.finding.detail})")
    return Item(item.claim, Finding(None, ours=item.finding.ours, detail=detail), item.parts,
                item.numbers)


def with_cause(item: Item, parts: Sequence[str], cause: str) -> Item:
    """``item`` with ``cause`` (what the chapter measured about why) added to its detail when
    it FAILs on one of ``parts``; otherwise unchanged."""
    if item.verdict != "FAIL" or not any(
            item.parts.get(k) is not None and item.parts[k].verdict == "FAIL" for k in parts):
        return item
    return dataclasses.replace(item, finding=dataclasses.replace(
        item.finding, detail=f"{item.finding.detail}; {cause}"))


# ----------------------------------------------------------------------------- X-L2, X-L4
def beats(cid: str, rec: ByTask, controls: Mapping[str, ByTask],
          fn: Callable[[Mapping], float] = final, *, side: str = "greater",
          scale: float = 100.0, detail: str = "final validation accuracy, points, paired by "
                                              "seed") -> Item:
    """LALR-REC against every control arm on every task, paired by seed; every part must
    hold (L-C15 and its vision / NLP settings, L-C3, X-L2's baselines).

    Args:
        cid: the claim (`CLAIMS`); its threshold and side judge every part.
        rec: LALR-REC's runs by task.
        controls: arm name -> its runs by task (the same tasks and seeds).
        fn: the per-run number (default: final validation accuracy).
    """
    claim = claim_of(cid)
    parts = {f"{t} vs {name}": paired(rec[t], runs[t], fn, threshold=claim.threshold,
                                      side=claim.side, scale=scale)
             for name, runs in controls.items() for t in rec}
    return _item(cid, every(parts), parts, detail, digits=3 if scale == 1 else 2)


def lc15(rec: ByTask, u: ByTask, umatch: ByTask, cid: str = "L-C15") -> Item:
    """L-C15: validation accuracy above U's and U-match's on every task."""
    return beats(cid, rec, {"U": u, "U-match": umatch})


def lc2(rec: ByTask, u: ByTask, parameters: Mapping[str, int]) -> Item:
    """L-C2: the same parameter count in every run (``parameters``: run label -> count;
    required) and validation accuracy above U's on every task."""
    gain = beats("L-C2", rec, {"U": u})
    same = len(set(parameters.values())) == 1
    counts = (f"{next(iter(parameters.values()))} in every run" if same
              else f"differ: {sorted(set(parameters.values()))}")
    # a differing count is an exact count over every run: its FAIL counts those runs
    return _item("L-C2", requirement(gain.finding.evidence, same), gain.parts,
                 "parameter count equal in every run (required, an exact count) and accuracy "
                 "above U on every task", replicates=None if same else len(parameters),
                 parameters=counts)


def lc17(rec: ByTask, u: ByTask) -> Item:
    """L-C17: LALR-REC - U validation accuracy above the claim's threshold (-1 point) at
    every epoch of every task (the source claims *maintained* baseline performance: a
    non-inferiority claim, tested as stated)."""
    claim = claim_of("L-C17")
    parts = {f"{t} epoch {e}": ev for t in rec
             for e, ev in paired_curve(rec[t], u[t], threshold=claim.threshold,
                                       side=claim.side).items()}
    last = max(int(k.rsplit(" ", 1)[1]) for k in parts)
    shown = {k: v for k, v in parts.items() if k.endswith(f" {last}") or v.verdict != "PASS"}
    item = _item("L-C17", every(parts), shown,
                 f"LALR-REC - U validation accuracy at every epoch > {claim.threshold:g} "
                 "points (shown: the last epoch and every part that does not PASS)")
    return Item(item.claim, item.finding, parts, item.numbers)


def lc3(rec: ByTask, u: ByTask, umatch: ByTask, cid: str = "L-C3", split: str = "mlm") -> Item:
    """L-C3: less forgetting (pretraining task's held-out loss after - before, nats) than U
    and U-match on every task; ``split`` ``"pretrain"`` for the vision setting."""
    return beats(cid, rec, {"U": u, "U-match": umatch}, lambda r: forgetting(r, split),
                 scale=1.0, detail="F(LALR-REC) - F(other), nats, paired by seed")


def lc16(rec: Runs, u: Runs, umatch: Runs, tolerance: float) -> Item:
    """L-C16 (X-L4, small SENT): train - validation gap lower than U's and U-match's, and
    validation accuracy not more than ``tolerance`` points below theirs."""
    parts = {}
    for name, runs in (("U", u), ("U-match", umatch)):
        parts[f"gap vs {name}"] = paired(rec, runs, generalisation_gap, side="less")
        parts[f"val vs {name}"] = paired(rec, runs, threshold=-tolerance)
    return _item("L-C16", every(parts), parts,
                 f"gap (points) lower than U's and U-match's; validation accuracy > "
                 f"-{tolerance:g} points")


def lc1(mechanism: bool, forget: Mapping[str, Evidence], gap: Mapping[str, Evidence]) -> Item:
    """L-C1: the scale rule's mechanism (required), less forgetting (X-L3's parts) and a
    smaller gap (X-L4's gap parts)."""
    parts = {**{f"forgetting {k}": e for k, e in forget.items()},
             **{k: e for k, e in gap.items()}}
    return _item("L-C1", requirement(every(parts), mechanism), parts,
                 "mechanism required; less forgetting (X-L3) and smaller gap (X-L4)", 3,
                 mechanism="holds in every epoch" if mechanism else "violated")


# ----------------------------------------------------------------------------- X-L5, X-L6
def lc8(acc: Mapping[str, Mapping[str, Sequence[float]]], arm: str = "svd>ce>cs") -> Item:
    """L-C8: per task, ``arm`` minus the best other schedule (`verdicts.versus_best_other`),
    paired by seed; every task. ``acc``: task -> schedule -> final accuracy per seed."""
    parts = {}
    for t, by_arm in acc.items():
        ev, other = versus_best_other(by_arm, arm)
        parts[f"{t} (vs {other})"] = _judged("L-C8", ev)
    return _item("L-C8", every(parts), parts,
                 f"{arm} minus the best other schedule, points, paired by seed; every task")


def lc9(margins: Mapping[str, pd.DataFrame], inequalities: Sequence[str]) -> Item:
    """L-C9: each B.3.2.4 inequality's margin minus the uniform control's
    (`mechanisms.interaction_margins`), millinats, t over seeds, > 0 on every task."""
    parts = {f"{t} {k}": _judged("L-C9", mean_interval(m[k], scale=1e3))
             for t, m in margins.items() for k in inequalities}
    held = {f"{t}: seeds where all hold": f"{int((m[list(inequalities)] > 0).all(axis=1).sum())}"
                                          f" of {len(m)}" for t, m in margins.items()}
    return _item("L-C9", every(parts), parts, "each inequality's margin minus the uniform "
                 "control's, millinats, t over seeds; every task", **held)


def lc29(gains: Mapping[str, pd.DataFrame]) -> Item:
    """L-C29 (our proxy): one-epoch gain of SVD > CE > CS from the pretrained start, paired
    by seed, millinats, every task (`mechanisms.one_epoch_gains`)."""
    parts = {f"{t} {a} - {b}": paired_difference(g[a], g[b], scale=1e3) for t, g in gains.items()
             for a, b in (("svd", "ce"), ("ce", "cs"))}
    return _item("L-C29", every(parts), parts, "one-epoch gain of each phase from the "
                 "pretrained start (our proxy for dJ/dM), millinats, paired by seed")


def lc26(rec: ByTask, u: ByTask) -> Item:
    """L-C26: SVD's first-cycle gain minus its second-cycle gain exceeds U's over the same
    epochs (every run gains less later: the control), and exceeds CE's and CS's slowdown;
    millinats, paired by seed, every task (`mechanisms.phase_slowdown`)."""
    parts = {}
    for t in rec:
        slow, slow_u = mech.phase_slowdown(rec[t]), mech.phase_slowdown(u[t])
        parts[f"{t} SVD slows more than U"] = paired_difference(slow["svd"], slow_u["svd"],
                                                                scale=1e3)
        for p in ("ce", "cs"):
            parts[f"{t} SVD slows more than {p.upper()}"] = paired_difference(
                slow["svd"], slow[p], scale=1e3)
    return _item("L-C26", every(parts), parts, "dJ(cycle 1) - dJ(cycle 2), millinats, "
                 "paired by seed; against U's same epochs and the other phases")


# ----------------------------------------------------------------------------- X-L7
def tercile_null(rec: Runs, u: Runs, phase: str, metric: str) -> pd.DataFrame:
    """Per seed: LALR-REC's top - bottom scale tercile change of ``metric`` over ``phase``'s
    epochs (``lalr``), the same for U split by the scales LALR would have set from U's
    weights (``null``), and their difference (``excess``)."""
    rows = []
    for r, v in zip(rec, u, strict=True):
        null_table = uniform_table(mech.diagnostics(v))
        rows.append({"lalr": mech.tercile_gain([r], phase, metric)[0],
                     "null": mech.tercile_gain([{**v, "callbacks": {
                         **v["callbacks"], "lalr": null_table}}], phase, metric)[0]})
    out = pd.DataFrame(rows, columns=["lalr", "null"])
    out["excess"] = out["lalr"] - out["null"]
    return out


def _tercile_claim(cid: str, rec: ByTask, u: ByTask, phase: str, metric: str,
                   scale: float, unit: str) -> Item:
    tables = {t: tercile_null(rec[t], u[t], phase, metric) for t in rec}
    parts = {t: _judged(cid, paired_difference(d["lalr"], d["null"], scale=scale))
             for t, d in tables.items()}
    alone = {f"{t} LALR-REC alone (no null)": mean_interval(d["lalr"], scale=scale).text(3)
             for t, d in tables.items()}
    null = {f"{t} U null": mean_interval(d["null"], scale=scale).text(3)
            for t, d in tables.items()}
    return _item(cid, every(parts), parts,
                 f"{phase.upper()} epochs: change of {metric} ({unit}), top - bottom scale "
                 "tercile, LALR-REC minus U split by the scales LALR would have set from U's "
                 "weights; paired by seed; every task", 3, **alone, **null)


def lc10(rec: ByTask, u: ByTask) -> Item:
    """L-C10: in SVD epochs the effective rank of LALR's top scale tercile grows more than
    its bottom tercile's, beyond the uniform-lr null (`tercile_null`)."""
    return _tercile_claim("L-C10", rec, u, "svd", "eff_rank", 1.0, "effective rank")


def lc11(rec: ByTask, u: ByTask) -> Item:
    """L-C11: the same for the weight-histogram entropy in CE epochs (millinats)."""
    return _tercile_claim("L-C11", rec, u, "ce", "hist_entropy", 1e3, "millinats")


def lc12(rec: ByTask, u: ByTask, cs_epochs: Sequence[int]) -> Item:
    """L-C12: over the CS epochs the layer-mean pairwise CS falls more under LALR-REC than
    under U (x 1e3), paired by seed, every task."""
    parts = {t: _judged("L-C12", paired_difference(mech.phase_mean_change(rec[t], cs_epochs),
                                                   mech.phase_mean_change(u[t], cs_epochs),
                                                   scale=1e3)) for t in rec}
    return _item("L-C12", every(parts), parts, "CS epochs: change of the layer-mean pairwise "
                 "CS (x 1e3), LALR-REC - U, paired by seed; every task", 3)


def lc28(rec: ByTask) -> Item:
    """L-C28: Spearman's rho between an epoch's change of the phase metric's spread and its
    train-loss decrease over LALR-REC's epochs, each run's rho, mean over runs < 0 on every
    task (t interval over runs)."""
    parts = {}
    for t, runs in rec.items():
        groups = [(p["spread_change"], p["loss_decrease"])
                  for p in (mech.spread_loss_pairs([r]) for r in runs)]
        parts[t] = rank_by_run(groups, "L-C28")
    return _item("L-C28", every(parts), parts, "Spearman(spread change, loss decrease), "
                 "each run's rho over its epochs, t interval over runs; every task", 3)


# ----------------------------------------------------------------------------- X-L8, X-L1
def lc13(summary: pd.DataFrame, shrink_falsifies: float) -> Item:
    """L-C13: the other layers' SVD-phase scale range shrinks by no more than
    ``shrink_falsifies`` when one layer's weights are scaled x10 (`robustness`'s summary:
    ``phase, range_before, range_after, range_shrink``)."""
    by = summary.set_index("phase")
    shrink = float(by.loc["svd", "range_shrink"])
    numbers = {f"{p}: others' range": f"{r.range_before:.3f} -> {r.range_after:.3f} "
                                      f"(shrink {100 * r.range_shrink:.0f} %)"
               for p, r in by.iterrows()}
    return _item("L-C13", bool(math.isfinite(shrink) and shrink <= shrink_falsifies), {},
                 f"falsified if the other layers' SVD-phase scale range shrinks by > "
                 f"{100 * shrink_falsifies:.0f} %", **numbers)


def lc7(table: pd.DataFrame, r_max: float, replicates: int | None = None) -> Item:
    """L-C7 (a measurement): r = t_metrics / t_epoch below ``r_max`` at every measured
    configuration (`overhead.overhead_table`: ``n_blocks, n_train, r``). ``replicates``: the
    independent timed repeats the bool holds in (every one, not their median); None when
    ``table`` holds medians (then the record is INCONCLUSIVE: `claims.CLAIMS`' L-C7)."""
    bad = table[~(table["r"] < r_max)]
    return _item("L-C7", bool(bad.empty and len(table)), {},
                 f"r < {r_max:g} at every measured configuration"
                 + ("" if replicates else " (of the medians of the timed repeats: not "
                    "declared to hold in every repeat)"), replicates=replicates,
                 r_range=f"{table['r'].min():.3g}-{table['r'].max():.3g}",
                 failing=[f"{int(b)} blocks, {int(n)} seq." for b, n in
                          zip(bad["n_blocks"], bad["n_train"])])


# ----------------------------------------------------------------------------- X-L10
def probe_slopes(runs: Runs, column: str) -> np.ndarray:
    """Per run: the slope over epochs of `mechanisms.block_probes` ``column`` (per epoch)."""
    return np.array([mech.probe_slope(r, column) for r in runs])


def lc19(rec: Runs, u: Runs) -> Item:
    """L-C19: the block probe gap G falls faster (more negative slope) under LALR-REC than
    U, points per epoch, paired by seed."""
    ev = _judged("L-C19", paired_difference(probe_slopes(rec, "gap"), probe_slopes(u, "gap"),
                                            scale=100))
    return _item("L-C19", ev, {"slope of G, LALR-REC - U": ev},
                 "ridge-probe gap over the blocks, slope over epochs, paired by seed")


def lc25(rec: Runs, u: Runs) -> Item:
    """L-C25: the worst block's probe accuracy rises faster under LALR-REC than U."""
    ev = _judged("L-C25", paired_difference(probe_slopes(rec, "worst"),
                                            probe_slopes(u, "worst"), scale=100))
    return _item("L-C25", ev, {"slope of the worst block, LALR-REC - U": ev},
                 "points per epoch, paired by seed")


def lc20(runs: Runs, seeds: int | None = None) -> Item:
    """L-C20: Spearman's rho between an epoch's change of the block gap and of validation
    accuracy over the epochs of each run (U's and LALR-REC's), mean of the runs' rho < 0
    (t interval over runs). ``seeds``: the independent seeds behind ``runs`` where each seed
    gives several runs (U's and LALR-REC's of one seed share the pretraining and the head's
    initialisation: they count once, `claims.CLAIMS`' L-C20); None: one run per seed."""
    groups = [(p["d_gap"], p["d_val_acc"])
              for p in (mech.gap_accuracy_pairs([r]) for r in runs)]
    ev = rank_by_run(groups, "L-C20")
    if seeds is not None:
        ev = dataclasses.replace(ev, replicates=min(seeds, ev.n))
    return _item("L-C20", ev, {"Spearman(dG, d validation accuracy)": ev},
                 "per-epoch changes pooled over U's and LALR-REC's runs, bootstrap by run", 3)


# ----------------------------------------------------------------------------- X-L11..X-L14
def lc21(rec: ByTask) -> Item:
    """L-C21 (sanity: a larger lr gives a larger step, a mechanical property of the
    optimiser): Spearman(relative update, scale) across layers, mean over epochs per run,
    t over seeds, above the claim's 0.7 on every task."""
    parts = {t: _judged("L-C21", mean_interval(mech.update_scale_rho(r))) for t, r in rec.items()}
    return _item("L-C21", every(parts), parts, "Spearman(relative update, scale) across "
                 "layers, mean over epochs per run, t over seeds; every task", 3)


def lc22(rec_tables: Sequence[pd.DataFrame], u_runs: Runs) -> Item:
    """L-C22: of the top-third layers at epoch 0, the fraction whose scale fell at epoch 3
    (the next SVD epoch), LALR-REC minus the same fraction of the scales LALR would have set
    from U's weights (ranking drift alone), paired by run (task and seed)."""
    rec = np.array([top_tercile_fall(t) for t in rec_tables])
    null = np.array([top_tercile_fall(uniform_table(mech.diagnostics(r))) for r in u_runs])
    ev = _judged("L-C22", paired_difference(rec, null))
    return _item("L-C22", ev, {"fraction fallen, LALR-REC - U null": ev},
                 "top-third layers at epoch 0 whose scale fell at epoch 3, paired by run", 3,
                 lalr_alone=mean_interval(rec, unit="run").text(3),
                 u_null=mean_interval(null, unit="run").text(3))


def lc4(self_correction: Evidence, recompute_gain: Mapping[str, Evidence]) -> Item:
    """L-C4: X-L12's self-correction beyond the null (L-C22's interval) and X-L16's
    accuracy gain of recomputing the metrics every epoch, every task."""
    parts = {"X-L12 self-correction vs null": self_correction,
             **{f"X-L16 {t} every_epoch - once": e for t, e in recompute_gain.items()}}
    return _item("L-C4", every(parts), parts, "X-L12's fraction above U's null and X-L16's "
                 "accuracy gain of recomputing, every task", 3)


def lc23(amp: Mapping[str, pd.DataFrame]) -> Item:
    """L-C23: (early / late update norm) of LALR-REC over U's > 1 (its log, t over seeds)
    and the early layers' scales above the median, every task
    (`mechanisms.early_amplification`)."""
    parts = {**{f"{t} log ratio of ratios": mean_interval(np.log(a["ratio"]))
                for t, a in amp.items()},
             **{f"{t} early scale - median": mean_interval(a["scale_excess"])
                for t, a in amp.items()}}
    geo = {f"{t} ratio of ratios (update, gradient), geometric mean":
           f"{np.exp(np.log(a['ratio']).mean()):.2f}, {np.exp(np.log(a['grad_ratio']).mean()):.2f}"
           for t, a in amp.items()}
    return _item("L-C23", every(parts), parts, "(early / late update norm) LALR-REC / U > 1 "
                 "and the early layers' scales above the median", 3, **geo)


def lc24(rec: Mapping[str, Runs], u: Mapping[str, Runs]) -> Item:
    """L-C24: per seed, the standard deviation of the final validation accuracy over the
    perturbed starts (``perturbation -> runs by seed``) is lower for LALR-REC than U."""
    a, b = mech.perturbation_spread(rec), mech.perturbation_spread(u)
    ev = _judged("L-C24", paired_difference(a, b))
    return _item("L-C24", ev, {"sd over perturbations, LALR-REC - U (points)": ev},
                 "standard deviation of final validation accuracy over the perturbations, "
                 "paired by seed", lower=f"{int((a < b).sum())} of {len(a)} seeds")


# ----------------------------------------------------------------------------- X-L15
def ood(cid: str, shifts: Mapping[str, Evidence], k: int = 2) -> Item:
    """L-C5 / L-C27: LALR-REC - U accuracy > 0 (paired by seed) on at least ``k`` of the
    shifts (``min(k, len(shifts))``)."""
    k = min(k, len(shifts))
    return _item(cid, at_least(shifts, k), shifts,
                 f"LALR-REC - U, points, paired by seed; >= {k} of {len(shifts)} shifts")


def lc18(gain_u: Mapping[str, Evidence], shifts: Item) -> Item:
    """L-C18: the gain over U on every task (X-L2) and on the shifts (X-L15's count)."""
    parts = {**{f"{t} LALR-REC - U": e for t, e in gain_u.items()},
             "OOD (X-L15)": shifts.finding.evidence}
    return _item("L-C18", every(parts), parts,
                 "gain over U on every task and on >= 2 of 3 shifts")


# ----------------------------------------------------------------------------- E14
def e14(cid: str, table: pd.DataFrame, column: str, target: float = 0.5,
        tolerance: float = 0.03) -> Item:
    """E14: the log-log slope ``column`` of every learning rate without weight decay
    (``table``: ``lr, wd, <column>``, and ``seed`` where several SGD runs were made) within
    ``tolerance`` of ``target`` in every seed; the bool holds over the table's seeds (1
    without a ``seed`` column: INCONCLUSIVE under the replicate rule)."""
    no_wd = table[table["wd"] == 0]
    ok = bool(len(no_wd) and ((no_wd[column] - target).abs() <= tolerance).all())
    seeds = int(table["seed"].nunique()) if "seed" in table else 1
    shown = {f"lr {lr:g}": "slope " + ", ".join(f"{v:.3f}" for v in grp[column])
             for lr, grp in no_wd.groupby("lr")}
    return _item(cid, ok, {}, f"slope {target:g} +- {tolerance:g} at every lr, in every one "
                 f"of {seeds} SGD seed{'s' if seeds > 1 else ''}", replicates=seeds, **shown)


# ----------------------------------------------------------------------------- X-L18
SENT_CHANCE = 0.5   # SENT's label is 1[#pos - #neg > 0], symmetric in pos / neg: balanced


def arm_table(runs: Mapping[str, Runs], reference: str, control: str,
              chance: float = SENT_CHANCE) -> pd.DataFrame:
    """X-L18 (ours, a measurement, no claim of the source): which open choice moves an arm
    off chance. Per arm (``runs``: arm -> runs by seed, one task): its mean final validation
    accuracy, accuracy minus ``chance`` (t over seeds), and the paired differences to
    ``reference`` (LALR-REC) and ``control`` (U), points.

    Returns:
        ``arm, accuracy (%), minus chance, off chance, vs <reference>, moves, vs <control>``:
        ``off chance`` is the verdict of "accuracy > chance", ``moves`` that of "accuracy
        above the reference's" (PASS / FAIL / INCONCLUSIVE; "-" for the reference itself).
    """
    rows = []
    for name, arm_runs in runs.items():
        acc = np.array([final(r) for r in arm_runs])
        off = mean_interval(acc - chance, scale=100.0)
        row = {"arm": name, "accuracy (%)": round(100 * float(np.mean(acc)), 2),
               "minus chance": off.text(2), "off chance": off.verdict}
        for other, label in ((reference, "moves"), (control, None)):
            if name == other:
                row[f"vs {other}"], gain = "-", None
            else:
                gain = paired(arm_runs, runs[other])
                row[f"vs {other}"] = gain.text(2)
            if label:
                row[label] = "-" if gain is None else gain.verdict
        rows.append(row)
    return pd.DataFrame(rows)


def lc30() -> Item:
    """L-C30: N/A, the source leaves it untestable (`claims.UNTESTABLE`)."""
    return Item("L-C30", Finding(None, detail=UNTESTABLE))
