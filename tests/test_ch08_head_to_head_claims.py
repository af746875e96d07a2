"""Chapter 08's claim tests on synthetic evaluation frames: each claim on each task gives PASS
where the method beats its control on every seed, FAIL where it loses on every seed, and
INCONCLUSIVE where the seeds' differences straddle 0 (6 seeds each)."""

import numpy as np
import pandas as pd

from lalr_core.chapters.ch08_head_to_head import CONTENDERS
from lalr_core.chapters.ch08_head_to_head import findings as fd
from lalr_core.chapters.ch08_head_to_head.claims import CLAIMS, COMPARED, in_scope, profile_tasks

CHAPTER = "ch08_head_to_head"


def frame(task: str, effect: float, noise: float, n: int = 6, seed: int = 0) -> pd.DataFrame:
    """Evaluation runs on ``task`` where every method differs from its control by ``effect``
    (accuracy, all else equal) with seed noise ``noise``."""
    rng = np.random.default_rng(seed)
    methods = {m for m, _, _ in COMPARED.values()}
    rows = []
    for s in range(n):
        base = 0.8 + 0.02 * rng.standard_normal()
        for c in CONTENDERS:
            acc = base + (effect + noise * rng.standard_normal() if c in methods else 0.0)
            rows.append(dict(stage="eval", task=task, contender=c, seed=s, test_acc=acc,
                             early_val_acc=acc - 0.1, val_acc=acc, s_per_step=1.0))
    return pd.DataFrame(rows)


KINDS = profile_tasks()


def _case(cid: str, effect: float, noise: float):
    template, task = cid.split(":")
    return lambda: fd.judge(frame(task, effect, noise), template, task, KINDS[task])[1]


def _cases(cid: str) -> dict:
    template, task = cid.split(":")
    if not in_scope(template, KINDS[task]):   # a claim about another kind of task
        return {"N/A": _case(cid, 0.02, 0.002)}
    return {"PASS": _case(cid, 0.02, 0.002), "FAIL": _case(cid, -0.02, 0.002),
            "INCONCLUSIVE": _case(cid, 0.0005, 0.02)}


CASES = {cid: _cases(cid) for cid in CLAIMS}
