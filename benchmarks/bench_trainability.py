"""Cost of chapter 07's trainability grid (`lalr_core.methods.signal.trainability`), in one run.

One row of the grid: ``--cells`` (9, the paper's sigma_w^2 values) tanh nets of one depth,
width 64, trained ``--steps`` SGD steps of batch 64 on the digits, two ways:

* ``side by side``: `trainability.train_accuracies` with every cell at once (one batched net);
* ``one at a time``: the same function called once per cell (what the grid did before).

Both give the same accuracies (checked; a test holds it too). Depths ``--depths``. One torch
thread by default (``--threads``). Informational: no pass / fail targets.

Usage: ``python benchmarks/bench_trainability.py [--json PATH]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs

from lalr_core.core.data import load_data
from lalr_core.methods.signal.trainability import train_accuracies

SIGMA_W2 = (1.0, 1.2, 1.4, 1.6, 1.76, 2.0, 2.5, 3.0, 4.0)  # chapter 07's paper grid


def measure(X, y, depth: int, cells: int, steps: int) -> dict:
    kw = {"width": 64, "depth": depth, "sigma_b2": 0.05, "steps": steps, "lr": 5e-3,
          "batch": 64}
    s2s, seeds = SIGMA_W2[:cells], list(range(cells))
    t = time.perf_counter()
    side = train_accuracies(X, y, sigma_w2s=s2s, seeds=seeds, **kw)
    t_side = time.perf_counter() - t
    t = time.perf_counter()
    alone = [train_accuracies(X, y, sigma_w2s=[s], seeds=[sd], **kw)[0]
             for s, sd in zip(s2s, seeds)]
    t_alone = time.perf_counter() - t
    return {"depth": depth, "side_s": t_side, "alone_s": t_alone,
            "max_acc_diff": float(np.nanmax(np.abs(np.array(side) - np.array(alone))))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--cells", type=int, default=9)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--depths", type=int, nargs="+", default=[10, 60])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    digits = load_data("digits", n_train=None, n_test=16)
    X, y = digits.X_train.reshape(len(digits.X_train), -1).float(), digits.y_train
    res = {"threads": args.threads, "cells": args.cells, "steps": args.steps,
           "rows": [measure(X, y, d, args.cells, args.steps) for d in args.depths]}
    finish(res, t0, args.json)
    emit_rows([BenchRow("trainability", f"{args.cells} cells of depth {r['depth']}, width 64, "
                        f"{args.steps} steps", "side by side", "one at a time", r["side_s"],
                        r["alone_s"], note=f"largest accuracy difference {r['max_acc_diff']:.2g}")
               for r in res["rows"]])


if __name__ == "__main__":
    main()
