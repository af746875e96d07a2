"""Chapter 08's findings: one function per kind of result, the evaluation runs' frame in
(`summaries.run_frame` with the early and time-to-target columns), `Finding` and numbers out.

`judge` decides a claim of `claims.TEMPLATES` on one task: the paired difference over the
evaluation seeds of the method and its control (both at their own tuned lrs), in points.
`versus` is the same paired interval for any two contenders (the table's columns against
SGDM and against the best), and `step_time_ratio` the per-step wall clock against SGDM's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lalr_core.chapters.ch08_head_to_head.claims import COMPARED, SCOPE, claim, in_scope
from lalr_core.chapters.ch08_head_to_head.summaries import paired
from lalr_core.core.results.claims import Finding
from lalr_core.core.results.evidence import Evidence, mean_interval, paired_difference


def versus(frame: pd.DataFrame, task: str, a: str, b: str, column: str = "test_acc",
           *, threshold: float = 0.0, side: str = "greater") -> Evidence:
    """Paired interval over the evaluation seeds of ``column`` (an accuracy), ``a - b``, in
    points; a seed where either run diverged drops out."""
    x, y = paired(frame, task, a, b, column)
    return paired_difference(x, y, threshold=threshold, side=side, scale=100)


def judge(frame: pd.DataFrame, template: str, task: str, kind: str = "text") \
        -> tuple[object, Finding]:
    """The claim ``template`` on ``task`` (of ``kind``) and its `Finding` from the evaluation
    runs; N/A where the source's claim is about another kind of task (`claims.SCOPE`)."""
    c = claim(template, task)
    if not in_scope(template, kind):
        return c, Finding(None, detail=f"the source's claim is about {SCOPE[template]} "
                                       f"fine-tuning; this task is trained from scratch")
    method, control, column = COMPARED[template]
    x, y = paired(frame, task, method, control, column)
    ev = paired_difference(x, y, threshold=c.threshold, side=c.side, scale=100)
    ours = {"method": method, "control": control, "quantity": column,
            "method_mean_pct": float(100 * np.nanmean(x)) if np.isfinite(x).any() else None,
            "control_mean_pct": float(100 * np.nanmean(y)) if np.isfinite(y).any() else None,
            "seeds": int(len(x)), "diverged_pairs": int((~np.isfinite(x - y)).sum())}
    detail = (f"{method} - {control}, {column}, paired over evaluation seeds at each one's "
              f"tuned lr")
    return c, Finding(ev, ours=ours, detail=detail)


def step_time_ratio(frame: pd.DataFrame, task: str, contender: str) -> Evidence:
    """Geometric-mean ratio of seconds per step, ``contender`` over SGDM, paired by seed (t
    interval on the log ratios, exponentiated); a measurement, judged against no claim."""
    x, y = paired(frame, task, contender, "sgdm", "s_per_step")
    logs = np.log(x) - np.log(y)
    ev = mean_interval(logs[np.isfinite(logs)])
    return Evidence(math.exp(ev.estimate), math.exp(ev.low), math.exp(ev.high), threshold=1.0,
                    side="greater", n=ev.n, method="geometric mean of paired ratios, t on logs")
