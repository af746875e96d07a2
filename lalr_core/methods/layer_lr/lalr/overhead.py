"""X-L1: LALR's metric computation against one fine-tuning epoch (claims L-C6, L-C7).

Seed 000 §3.3: "minimal computational overhead ... only once per epoch, making the additional
computation negligible compared to the fine-tuning process itself". Our experiment X-L1
times the metrics against one training epoch of TinyTF SENT fine-tuning with 2 / 4 / 8 / 16
encoder blocks at d = 64 and 250 / 1000 / 4000 training sequences, median of 3 timings, and
calls the claim supported at a configuration where ``r = t_metrics / t_epoch < 0.05`` (our
threshold for "negligible"; the source gives none).

* ``t_metrics``: what `LALRScaler` does once per epoch: the layers' matrices
  (`grouping.layer_matrices`) and all three raw metrics (`metrics.layer_metrics`; the scaler
  computes all three although one phase uses one), plus each phase's metric alone
  (``t_svd``, ``t_ce``, ``t_cs``: what a phase-only computation would cost);
* ``t_epoch``: one pass over the training set, exactly the loop's step (the task's batches and
  loss, ``zero_grad``, ``backward``, ``step``) with LALR's per-layer param groups and AdamW,
  without the loop's evaluation and bookkeeping. The model starts from scratch: neither
  timing depends on the weights' values (and pretraining a 16-block TinyTF only to time it
  would exceed the budget).

Every timing runs on ``threads`` torch threads (1: the chapter's setting) and is the median of
``repeats`` (3). ``t_epoch`` grows like ``n_train * n_blocks``, ``t_metrics`` like the number
of LALR layers ``L = 6 n_blocks + 3`` (SVDs) plus ``L^2`` pairwise CE / CS terms, so ``r``
falls as ``1 / n_train``; `depth_fit` fits ``log r`` on ``log L`` per data size
(`scipy.stats.linregress`, 95 % t interval), and `smallest_supported_size` gives the smallest
measured size with ``r < 0.05`` per depth and the size where ``r`` crosses 0.05 by that
``1 / n_train`` law.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch
from scipy import stats

from lalr_core.core.loop.optim import make_optimizer
from lalr_core.core.loop.train import initial_model
from lalr_core.core.torch_compat import torch_threads
from lalr_core.core.validation import check_int
from lalr_core.methods.layer_lr.lalr.grouping import layer_matrices
from lalr_core.methods.layer_lr.lalr.method import LALR
from lalr_core.methods.layer_lr.lalr.metrics import ce_metric, cs_metric, layer_metrics, svd_metric
from lalr_core.methods.pretrained.text import finetuning_config

DEPTHS = (2, 4, 8, 16)        # encoder blocks (X-L1, our grid)
SIZES = (250, 1000, 4000)     # training sequences
D_MODEL = 64
R_SUPPORTED = 0.05            # X-L1: "negligible" read as r < 0.05 (our threshold)
COLUMNS = ("n_blocks", "n_layers", "n_train", "t_epoch_s", "t_metrics_s", "t_grouping_s",
           "t_svd_s", "t_ce_s", "t_cs_s", "r")


def median_time(fn: Callable[[], object], repeats: int = 3) -> float:
    """Median wall time of ``repeats`` calls of ``fn``, seconds."""
    check_int(repeats, "repeats", 1)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ----------------------------------------------------------------------------- the timings
def metric_times(model: torch.nn.Module, repeats: int = 3,
                 grouping: str = "module") -> dict[str, float]:
    """Seconds of LALR's per-epoch metric work on ``model`` (median of ``repeats``, after
    one untimed call).

    Returns:
        ``{"n_layers", "t_metrics_s"`` (matrices + all three metrics, as the scaler does),
        ``"t_grouping_s"``, ``"t_svd_s"``, ``"t_ce_s"``, ``"t_cs_s"}`` (each metric alone).
    """
    mats = list(layer_matrices(model, grouping).values())

    def everything():
        layer_metrics(list(layer_matrices(model, grouping).values()))

    everything()  # untimed: the first LAPACK / allocator calls of a process are slow
    return {"n_layers": len(mats),
            "t_metrics_s": median_time(everything, repeats),
            "t_grouping_s": median_time(lambda: layer_matrices(model, grouping), repeats),
            "t_svd_s": median_time(lambda: svd_metric(mats), repeats),
            "t_ce_s": median_time(lambda: ce_metric(mats), repeats),
            "t_cs_s": median_time(lambda: cs_metric(mats), repeats)}


def epoch_times(cfg, repeats: int = 3) -> tuple[torch.nn.Module, list[float]]:
    """Seconds of ``repeats`` consecutive training epochs of ``cfg`` on the CPU.

    The loop's step without its evaluation and bookkeeping (module docstring).

    Returns:
        ``(model after the epochs, [seconds per epoch])``.
    """
    task = cfg.task
    data = task.load(cfg, torch.device("cpu"))
    model = initial_model(cfg)
    optimizer = make_optimizer(cfg, model)
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    autocast = contextlib.nullcontext()
    model.train()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for batch in task.batches(cfg, data, gen):
            loss, _, _ = task.loss(model, batch, autocast, gen)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        times.append(time.perf_counter() - t0)
    return model, times


def sent_config(n_blocks: int, n_train: int, d_model: int = D_MODEL, seed: int = 0):
    """The X-L1 fine-tuning: SENT, TinyTF of ``n_blocks`` blocks at width ``d_model``
    (``d_ff = 2 d_model``), LALR's defaults, AdamW 1e-3, batch 32 (P-LALR)."""
    return finetuning_config("sent", n_blocks=n_blocks, d_model=d_model, d_ff=2 * d_model,
                             n_train=n_train, n_val=1, n_test=1, seed=seed, epochs=1,
                             methods=(LALR(),), device="cpu")


def overhead_table(depths=DEPTHS, sizes=SIZES, *, d_model: int = D_MODEL, repeats: int = 3,
                   threads: int = 1, budget_s: float | None = 90.0) -> dict:
    """X-L1's measurement: ``t_metrics`` and ``t_epoch`` for every depth x size.

    Sizes run in increasing order. Before a size, its cost is projected from the sizes done
    (``t_epoch`` is linear in ``n_train``); a size that would take the whole measurement past
    ``budget_s`` seconds is dropped with every larger one (None: never).

    Returns:
        ``{"table": DataFrame(COLUMNS), "dropped_sizes": [...], "wall_time_s": float,
        "threads": threads}``; ``r = t_metrics_s / t_epoch_s``.
    """
    sizes = sorted(sizes)
    if not depths or not sizes or any(n < 1 for n in (*depths, *sizes)):
        raise ValueError(f"need positive depths and sizes, got {depths}, {sizes}")
    t_start, rows, dropped = time.perf_counter(), [], []
    with torch_threads(threads):
        per_example = None                     # seconds of all depths' epochs per sequence
        for n_train in sizes:
            spent = time.perf_counter() - t_start
            if budget_s is not None and per_example is not None and \
                    spent + repeats * per_example * n_train > budget_s:
                dropped = [n for n in sizes if n >= n_train]
                break
            t_size = time.perf_counter()
            for n_blocks in depths:
                model, times = epoch_times(sent_config(n_blocks, n_train, d_model), repeats)
                row = {"n_blocks": n_blocks, "n_train": n_train,
                       "t_epoch_s": statistics.median(times), **metric_times(model, repeats)}
                rows.append(row)
            per_example = (time.perf_counter() - t_size) / repeats / n_train
    table = pd.DataFrame(rows)
    table["r"] = table["t_metrics_s"] / table["t_epoch_s"]
    return {"table": table[list(COLUMNS)], "dropped_sizes": dropped,
            "wall_time_s": time.perf_counter() - t_start, "threads": threads}


# ----------------------------------------------------------------------------- analysis
def depth_fit(table: pd.DataFrame, x: str = "n_layers", level: float = 0.95) -> pd.DataFrame:
    """Slope of ``log r`` on ``log x`` per ``n_train`` (``scipy.stats.linregress``).

    Returns:
        One row per size: ``n_train``, ``slope``, ``stderr``, ``ci_low``, ``ci_high`` (t
        interval with ``n - 2`` degrees of freedom; NaN with fewer than 3 depths).
    """
    rows = []
    for n_train, grp in table.groupby("n_train"):
        fit = stats.linregress(np.log(grp[x]), np.log(grp["r"]))
        half = stats.t.ppf(0.5 + level / 2, len(grp) - 2) * fit.stderr if len(grp) > 2 \
            else np.nan
        rows.append({"n_train": n_train, "slope": fit.slope, "stderr": fit.stderr,
                     "ci_low": fit.slope - half, "ci_high": fit.slope + half})
    return pd.DataFrame(rows)


def smallest_supported_size(table: pd.DataFrame, threshold: float = R_SUPPORTED
                            ) -> pd.DataFrame:
    """Per depth: the smallest measured ``n_train`` with ``r < threshold`` (NaN: none), and
    ``n_train_crossing``, where ``r`` reaches ``threshold`` if ``t_epoch`` is proportional to
    ``n_train`` (fitted on the largest measured size): ``n * r(n) / threshold``."""
    rows = []
    for n_blocks, grp in table.sort_values("n_train").groupby("n_blocks"):
        ok = grp.loc[grp["r"] < threshold, "n_train"]
        last = grp.iloc[-1]
        rows.append({"n_blocks": n_blocks,
                     "n_train_measured": float(ok.iloc[0]) if len(ok) else np.nan,
                     "n_train_crossing": float(last["n_train"] * last["r"] / threshold)})
    return pd.DataFrame(rows)
