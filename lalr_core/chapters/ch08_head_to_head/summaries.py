"""Chapter 08's summaries: the runs' results as tables, the tuning choice, learning curves,
time to target and the per-step wall clock.

Every function takes labelled runs (`runs.Run`) and their results (the loop's result dicts,
in the same order) and returns pandas objects; nothing here trains.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from lalr_core.chapters.ch08_head_to_head.runs import Run


def run_frame(runs: Sequence[Run], results: Sequence[dict], early_epochs: int = 1) \
        -> pd.DataFrame:
    """One row per run: its labels, final accuracies (NaN where it diverged), the validation
    accuracy after ``early_epochs`` epochs, steps, seconds and seconds per step (the run's
    wall clock over its steps, its epoch evaluations and any per-epoch refits of a method
    included)."""
    if len(runs) != len(results):
        raise ValueError(f"{len(runs)} runs but {len(results)} results")
    rows = []
    for run, res in zip(runs, results, strict=True):
        final, diverged = res["final"], bool(res.get("diverged"))
        steps = int(final.get("step", 0) or 0)
        bad = diverged or not math.isfinite(final.get("val_acc", math.nan))
        h = res["history"]
        early = h.loc[h["epoch"] == early_epochs, "val_acc"] if "val_acc" in h else []
        early = float(early.iloc[0]) if len(early) else math.nan
        rows.append(dict(stage=run.stage, task=run.task, contender=run.contender, lr=run.lr,
                         seed=run.seed, diverged=diverged,
                         val_acc=math.nan if bad else final["val_acc"],
                         test_acc=math.nan if bad else final.get("test_acc", math.nan),
                         early_val_acc=early,
                         steps=steps, seconds=float(res["wall_time_s"]),
                         s_per_step=float(res["wall_time_s"]) / steps if steps else math.nan))
    return pd.DataFrame(rows)


def choose_lr(tuning: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Task -> contender -> the trial lr with the best mean final validation accuracy over the
    tuning seeds (a diverged trial counts as the worst; ties: the smaller lr). A contender
    whose every trial diverged keeps its smallest lr."""
    out: dict[str, dict[str, float]] = {}
    mean = tuning.groupby(["task", "contender", "lr"], sort=True)["val_acc"].mean()
    for (task, contender), trials in mean.groupby(level=["task", "contender"], sort=False):
        acc = trials.droplevel(["task", "contender"]).fillna(-math.inf)
        out.setdefault(task, {})[contender] = float(acc.idxmax())  # first max = smaller lr
    return out


def tuning_table(tuning: pd.DataFrame, chosen: dict) -> pd.DataFrame:
    """The trials: task, contender, lr, mean validation accuracy (%) over the tuning seeds,
    diverged seeds, whether the lr was chosen, and whether that choice is an end of the
    contender's trials (``edge``: its best lr may lie outside them)."""
    g = tuning.groupby(["task", "contender", "lr"], sort=False)
    table = pd.DataFrame({"val_acc_pct": 100 * g["val_acc"].mean(),
                          "diverged": g["diverged"].sum().astype(int),
                          "seeds": g.size()}).reset_index()
    table["chosen"] = [chosen[t][c] == lr for t, c, lr in
                       zip(table.task, table.contender, table.lr)]
    ends = table.groupby(["task", "contender"])["lr"].agg(["min", "max"])
    table["edge"] = [ch and lr in (ends.loc[(t, c), "min"], ends.loc[(t, c), "max"])
                     and ends.loc[(t, c), "min"] < ends.loc[(t, c), "max"]
                     for t, c, lr, ch in zip(table.task, table.contender, table.lr,
                                             table.chosen)]
    return table


def curves(runs: Sequence[Run], results: Sequence[dict], column: str = "val_acc") \
        -> dict[tuple[str, str], np.ndarray]:
    """(task, contender) -> array (seeds x epochs) of ``column`` per epoch (NaN after a
    divergence)."""
    out: dict[tuple[str, str], list[np.ndarray]] = {}
    for run, res in zip(runs, results, strict=True):
        h = res["history"]
        out.setdefault((run.task, run.contender), []).append(
            h[column].to_numpy(dtype=float) if column in h else np.full(len(h), np.nan))
    width = {k: max(len(v) for v in vs) for k, vs in out.items()}
    return {k: np.stack([np.pad(v, (0, width[k] - len(v)), constant_values=np.nan)
                         for v in vs]) for k, vs in out.items()}


def time_to_target(history: pd.DataFrame, target: float) -> tuple[float, float]:
    """(steps, seconds) at the end of the first epoch whose validation accuracy reaches
    ``target``; (NaN, NaN) if none does."""
    hit = history.index[history["val_acc"].to_numpy(dtype=float) >= target]
    if len(hit) == 0:
        return math.nan, math.nan
    row = history.loc[hit[0]]
    return float(row["step"]), float(row["time_s"])


def targets(frame: pd.DataFrame, fraction: float) -> dict[str, float]:
    """Task -> the target validation accuracy: ``fraction`` of SGDM's mean final one over the
    evaluation seeds."""
    sgdm = frame[(frame.stage == "eval") & (frame.contender == "sgdm")]
    return {t: float(fraction * g["val_acc"].mean()) for t, g in sgdm.groupby("task")}


def with_time_to_target(frame: pd.DataFrame, runs: Sequence[Run], results: Sequence[dict],
                        target: dict[str, float]) -> pd.DataFrame:
    """``frame`` plus ``steps_to_target`` and ``seconds_to_target`` per run."""
    hits = [time_to_target(res["history"], target[run.task]) if run.task in target
            else (math.nan, math.nan) for run, res in zip(runs, results, strict=True)]
    out = frame.copy()
    out["steps_to_target"] = [h[0] for h in hits]
    out["seconds_to_target"] = [h[1] for h in hits]
    return out


def paired(frame: pd.DataFrame, task: str, a: str, b: str, column: str) \
        -> tuple[np.ndarray, np.ndarray]:
    """``column`` of contenders ``a`` and ``b`` on ``task``, by seed (the seeds both ran)."""
    sub = frame[(frame.stage == "eval") & (frame.task == task)]
    wide = sub.pivot_table(index="seed", columns="contender", values=column, dropna=False)
    return wide[a].to_numpy(dtype=float), wide[b].to_numpy(dtype=float)


def best_contender(frame: pd.DataFrame, task: str) -> str:
    """The contender with the highest mean final test accuracy on ``task`` (evaluation)."""
    sub = frame[(frame.stage == "eval") & (frame.task == task)]
    return str(sub.groupby("contender")["test_acc"].mean().idxmax())
