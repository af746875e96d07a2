"""Achieved throughput of a full training step of every model a profile trains, beside the
machine's matmul throughput measured in the same run.

For each distinct model of the chosen profiles' runs (task, model, width, dataset, batch size,
found as the dry run finds them: `lalr_core.plan.chapter_runs`), at the run thread count
(`lalr_core.core.runs.threads.run_threads`, the count every training run computes with):

* FLOPs of one training step counted by `torch.utils.flop_counter.FlopCounterMode` over the
  forward and the backward (matrix products and convolutions; elementwise work is not counted,
  so a model dominated by it reads low);
* the median wall time of the step (forward, a scalar loss, backward, SGD with momentum) on
  zero inputs of the run's batch shape, in each memory format the model can take (contiguous,
  and channels_last for 4-d image inputs), interleaved over ``--repeats`` rounds;
* ``share``: achieved GFLOP/s over the matmul's GFLOP/s (a 2048 x 2048 float32 product at the
  same thread count), for the format the loop uses (`ImageClassification.channels_last`).

Each model's share of the profile's training work (its runs x epochs x training examples x
FLOPs per example) says which rows matter. The table goes to ``make bench`` as rows whose
ratio is the share (``ours``: the step's seconds; ``baseline``: the seconds the same FLOPs take
at the matmul's rate), plus a row per image model comparing the two memory formats.
Usage: ``python benchmarks/bench_throughput.py [--profiles quick,smoke] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict

import torch
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs
from torch.utils.flop_counter import FlopCounterMode

from lalr_core.chapters import CHAPTERS, chapter
from lalr_core.core.runs.threads import fixed_threads
from lalr_core.plan import (
    NotEstimated,
    _tensors,
    chapter_runs,
    epoch_examples,
    example_inputs,
    labels,
    without_pretrained,
)

TARGET_SHARE = 0.5  # issue 34: a quick model's step at >= half the matmul's GFLOP/s
MATMUL_N = 2048


def matmul_gflops(repeats: int) -> float:
    """GFLOP/s of a MATMUL_N x MATMUL_N float32 product (median over ``repeats`` rounds)."""
    a, b = torch.randn(MATMUL_N, MATMUL_N), torch.randn(MATMUL_N, MATMUL_N)
    a @ b  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(3):
            a @ b
        times.append((time.perf_counter() - t0) / 3)
    return 2 * MATMUL_N ** 3 / statistics.median(times) / 1e9


def distinct_models(profiles: list[str]) -> dict[tuple, dict]:
    """(model label, batch size) -> {cfg: the first run with it, label, chapters, examples:
    training examples per profile}. Runs that differ only in a task setting that leaves the
    architecture's cost alone (a LoRA run's lambda) share a row."""
    out: dict[tuple, dict] = {}
    for profile in profiles:
        for cid in CHAPTERS:
            ch = chapter(cid)
            for cfg, _, _ in chapter_runs(ch, ch.settings(profile)):
                key = (" ".join(labels(cfg)), cfg.batch_size)
                rec = out.setdefault(key, {"cfg": cfg, "label": " ".join(labels(cfg)),
                                           "chapters": set(), "examples": defaultdict(int)})
                rec["chapters"].add(cid)
                rec["examples"][profile] += cfg.epochs * epoch_examples(cfg)[0]
    return out


def _loss(out) -> torch.Tensor:
    """A scalar from the model's first output tensor (the step's cost is the model's)."""
    first = next(iter(_tensors(out.logits if hasattr(out, "logits") else out)))
    return first.float().mean()


def step_flops(model, args, kwargs) -> float:
    """FLOPs of one forward + backward, as FlopCounterMode counts them."""
    with FlopCounterMode(display=False) as counter:
        _loss(model(*args, **kwargs)).backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def time_steps(model, opt, args, kwargs, steps: int) -> float:
    """Seconds per training step, mean over ``steps`` after one warm-up step."""
    def step():
        loss = _loss(model(*args, **kwargs))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def measure(cfg, steps: int, repeats: int) -> dict:
    """Step FLOPs and seconds per memory format of ``cfg``'s model at its batch size."""
    task = without_pretrained(cfg.task)
    args, kwargs = example_inputs(cfg, cfg.batch_size, "cpu")
    torch.manual_seed(0)
    model = task.build_model(cfg)
    model.train()
    flops = step_flops(model, args, kwargs)
    image = len(args) == 1 and args[0].ndim == 4
    formats = {"contiguous": torch.contiguous_format}
    if image:
        formats["channels_last"] = torch.channels_last
    seconds = {f: [] for f in formats}
    for _ in range(repeats):  # interleaved, so a load change hits both formats alike
        for name, fmt in formats.items():
            m = model.to(memory_format=fmt)
            a = tuple(x.contiguous(memory_format=fmt) if x.ndim == 4 else x for x in args)
            opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
            seconds[name].append(time_steps(m, opt, a, kwargs, steps))
    used = "channels_last" if image and task.channels_last(cfg) else "contiguous"
    return {"flops": flops, "seconds": {f: statistics.median(s) for f, s in seconds.items()},
            "used": used, "params": sum(p.numel() for p in model.parameters())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="quick,smoke")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    models = distinct_models(profiles)
    rows, records = [], []
    with fixed_threads() as threads:
        peak = matmul_gflops(args.repeats)
        print(f"matmul {MATMUL_N}^2 float32 at {threads} thread(s): {peak:.1f} GFLOP/s")
        for key, rec in models.items():
            cfg = rec["cfg"]
            try:
                found = measure(cfg, args.steps, args.repeats)
            except NotEstimated as exc:
                print(f"skip {rec['label']}: {exc}")
                continue
            per_example = found["flops"] / cfg.batch_size
            work = {p: n * per_example for p, n in rec["examples"].items()}
            used_s = found["seconds"][found["used"]]
            gflops = found["flops"] / used_s / 1e9
            share = gflops / peak
            note = (f"{gflops:.1f} GFLOP/s ({found['used']}, {threads} thread(s)) of "
                    f"{peak:.1f}: {share:.0%}; " + ("meets" if share >= TARGET_SHARE else "below")
                    + f" {TARGET_SHARE:.0%}; chapters {','.join(sorted(rec['chapters']))}")
            case = f"{rec['label']}, batch {cfg.batch_size}"
            rows.append(BenchRow("throughput", case, f"step ({found['used']})",
                                 "same FLOPs at matmul rate", used_s, found["flops"] / peak / 1e9,
                                 note=note))
            if len(found["seconds"]) == 2:
                other = "contiguous" if found["used"] == "channels_last" else "channels_last"
                rows.append(BenchRow("throughput", f"{case}: memory format",
                                     found["used"], other, used_s, found["seconds"][other]))
            records.append({"label": rec["label"], "batch_size": cfg.batch_size,
                            "chapters": sorted(rec["chapters"]), "train_flops": work,
                            **found, "gflops": gflops, "share": share})
    for p in profiles:  # what each row weighs in the profile's training work
        total = sum(r["train_flops"].get(p, 0.0) for r in records) or 1.0
        for r in records:
            r.setdefault("work_share", {})[p] = r["train_flops"].get(p, 0.0) / total
    emit_rows(rows)
    print("\nmodel | batch | GFLOP/s used format | share of matmul | ch-last / contiguous s | "
          + " | ".join(f"{p} work" for p in profiles))
    for r in sorted(records, key=lambda r: -r["work_share"].get(profiles[0], 0)):
        s = r["seconds"]
        fmt = (f"{s['channels_last']:.4f} / {s['contiguous']:.4f}" if "channels_last" in s
               else f"- / {s['contiguous']:.4f}")
        print(f"{r['label']} | {r['batch_size']} | {r['gflops']:.1f} {r['used']} | "
              f"{r['share']:.0%} | {fmt} | "
              + " | ".join(f"{r['work_share'][p]:.1%}" for p in profiles))
    finish({"matmul_gflops": peak, "threads": threads, "models": records}, t0, args.json)


if __name__ == "__main__":
    main()
