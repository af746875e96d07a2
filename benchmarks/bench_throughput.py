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

Where a row is below `TARGET_SHARE`, it says why, from two more measurements:

* ``kernels``: a profiled step (`torch.profiler`, self CPU time per op) split into the ops
  that do the counted FLOPs (convolutions and matrix products, forward and backward) and the
  rest (normalisation, activations, pooling, the loss, the optimiser: memory-bound work with
  no counted FLOPs); the GFLOP/s of the FLOP ops alone over the matmul's says whether the
  kernels themselves are slow (narrow layers, small products) or the rest of the step is;
* ``side_by_side``: the step time with one copy per core running at once (what `make
  figures` does: one run per core at one thread, `lalr_core.core.runs.threads`) over the
  time alone, so the machine's achieved throughput is ``cores x`` the row's GFLOP/s times
  that efficiency (measured for the rows that carry at least `SIDE_BY_SIDE_MIN_WORK` of a
  profile's work).

Each model's share of the profile's training work (its runs x epochs x training examples x
FLOPs per example) says which rows matter. The table goes to ``make bench`` as rows whose
ratio is the share (``ours``: the step's seconds; ``baseline``: the seconds the same FLOPs take
at the matmul's rate), plus a row per image model comparing the two memory formats.
Usage: ``python benchmarks/bench_throughput.py [--profiles quick,smoke] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
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
SIDE_BY_SIDE_MIN_WORK = 0.02  # rows with this share of a profile's work get the side-by-side run
# aten ops that do the FLOPs FlopCounterMode counts (their self time is the kernels' time)
FLOP_OP_MARKS = ("conv", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                 "aten::_scaled_dot_product")


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


def train_step(model, opt, args, kwargs) -> None:
    """One training step: forward, loss, backward, optimiser step."""
    loss = _loss(model(*args, **kwargs))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def time_steps(model, opt, args, kwargs, steps: int) -> float:
    """Seconds per training step, mean over ``steps`` after one warm-up step."""
    step = functools.partial(train_step, model, opt, args, kwargs)
    step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def is_flop_op(name: str) -> bool:
    """Whether a profiled op is one whose FLOPs FlopCounterMode counts (a convolution or a
    matrix product, forward or backward)."""
    return any(mark in name for mark in FLOP_OP_MARKS)


def kernel_split(model, opt, args, kwargs, steps: int) -> dict:
    """Seconds per step in the FLOP ops (`is_flop_op`, self CPU time) and in all ops, from
    ``steps`` profiled steps after a warm-up step."""
    from torch.profiler import ProfilerActivity, profile

    step = functools.partial(train_step, model, opt, args, kwargs)
    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    flop_us = all_us = 0.0
    for ev in prof.key_averages():
        all_us += ev.self_cpu_time_total
        if is_flop_op(ev.key):
            flop_us += ev.self_cpu_time_total
    return {"flop_ops_s": flop_us / 1e6 / steps, "all_ops_s": all_us / 1e6 / steps}


def _side_by_side_worker(cfg, fmt_name: str, steps: int, barrier, out) -> None:
    """One copy of the step in its own process at the run thread count, started with the
    others at the barrier; puts its seconds per step on ``out``."""
    with fixed_threads():
        model, opt, args, kwargs = _step_setup(cfg, fmt_name)
        time_steps(model, opt, args, kwargs, 1)  # warm-up before the common start
        barrier.wait()
        out.put(time_steps(model, opt, args, kwargs, steps))


def side_by_side(cfg, fmt_name: str, copies: int, steps: int) -> float:
    """Mean seconds per step of ``copies`` copies of ``cfg``'s step running at once, one
    process each (spawned: fork is unsafe once torch has threads)."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(copies), ctx.Queue()
    procs = [ctx.Process(target=_side_by_side_worker, args=(cfg, fmt_name, steps, barrier, out))
             for _ in range(copies)]
    for p in procs:
        p.start()
    times = [out.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    return statistics.mean(times)


def _step_setup(cfg, fmt_name: str):
    """The model (seed 0, train mode), SGD with momentum, and the batch, in ``fmt_name``."""
    task = without_pretrained(cfg.task)
    args, kwargs = example_inputs(cfg, cfg.batch_size, "cpu")
    torch.manual_seed(0)
    fmt = torch.channels_last if fmt_name == "channels_last" else torch.contiguous_format
    model = task.build_model(cfg).train().to(memory_format=fmt)
    args = tuple(x.contiguous(memory_format=fmt) if x.ndim == 4 else x for x in args)
    return model, torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9), args, kwargs


def usable_cores() -> int:
    """The cores this process may use (its affinity), not the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


def why_below(share: float, kernel_share: float, other_time: float, width) -> str:
    """The reason a row is below `TARGET_SHARE`, from its profiled split."""
    if kernel_share >= TARGET_SHARE:
        return (f"its conv/matmul kernels reach {kernel_share:.0%} of the matmul; "
                f"{other_time:.0%} of the step's op time is uncounted memory-bound work "
                "(normalisation, activations, pooling, loss, optimiser)")
    return (f"its conv/matmul kernels themselves reach only {kernel_share:.0%} of the matmul "
            f"(small products: narrow layers{'' if width in (None, 1, 1.0) else f', width {width}'}"
            f" or small batch), and {other_time:.0%} of the step's op time is uncounted "
            "memory-bound work")


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
    m, opt, a, kw = _step_setup(cfg, used)
    split = kernel_split(m, opt, a, kw, steps)
    return {"flops": flops, "seconds": {f: statistics.median(s) for f, s in seconds.items()},
            "used": used, "params": sum(p.numel() for p in model.parameters()), **split}


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
    records = []
    with fixed_threads() as threads:
        peak = matmul_gflops(args.repeats)
        print(f"matmul {MATMUL_N}^2 float32 at {threads} thread(s): {peak:.1f} GFLOP/s")
        for rec in models.values():
            cfg = rec["cfg"]
            try:
                found = measure(cfg, args.steps, args.repeats)
            except NotEstimated as exc:
                print(f"skip {rec['label']}: {exc}")
                continue
            per_example = found["flops"] / cfg.batch_size
            used_s = found["seconds"][found["used"]]
            gflops = found["flops"] / used_s / 1e9
            records.append({"label": rec["label"], "batch_size": cfg.batch_size, "cfg": cfg,
                            "width": getattr(cfg, "width", None),
                            "chapters": sorted(rec["chapters"]),
                            "train_flops": {p: n * per_example for p, n in rec["examples"].items()},
                            **found, "gflops": gflops, "share": gflops / peak,
                            "kernel_share": found["flops"] / max(found["flop_ops_s"], 1e-12)
                            / 1e9 / peak,
                            "other_time": 1 - found["flop_ops_s"] / max(found["all_ops_s"], 1e-12)})
    for p in profiles:  # what each row weighs in the profile's training work
        total = sum(r["train_flops"].get(p, 0.0) for r in records) or 1.0
        for r in records:
            r.setdefault("work_share", {})[p] = r["train_flops"].get(p, 0.0) / total
    copies = max(1, usable_cores() // threads)
    rows = []
    with fixed_threads():  # the width-1 comparison measures here too
        for r in records:
            cfg = r.pop("cfg")
            used_s = r["seconds"][r["used"]]
            if copies > 1 and max(r["work_share"].values()) >= SIDE_BY_SIDE_MIN_WORK:
                r["side_by_side"] = {"copies": copies,
                                     "efficiency": used_s / side_by_side(cfg, r["used"], copies,
                                                                         args.steps)}
            reason = "" if r["share"] >= TARGET_SHARE else \
                "; " + why_below(r["share"], r["kernel_share"], r["other_time"], r["width"])
            if "side_by_side" in r:
                sbs = r["side_by_side"]
                reason += (f"; in its place, {sbs['copies']} runs side by side (one per core) "
                           f"keep {sbs['efficiency']:.0%} of this speed each")
            r["reason"] = reason.removeprefix("; ")
            note = (f"{r['gflops']:.1f} GFLOP/s ({r['used']}, {threads} thread(s)) of "
                    f"{peak:.1f}: {r['share']:.0%}; "
                    + ("meets" if r["share"] >= TARGET_SHARE else "below") + f" {TARGET_SHARE:.0%}"
                    + reason + f"; chapters {','.join(r['chapters'])}")
            case = f"{r['label']}, batch {r['batch_size']}"
            rows.append(BenchRow("throughput", case, f"step ({r['used']})",
                                 "same FLOPs at matmul rate", used_s, r["flops"] / peak / 1e9,
                                 note=note))
            if len(r["seconds"]) == 2:
                other = "contiguous" if r["used"] == "channels_last" else "channels_last"
                rows.append(BenchRow("throughput", f"{case}: memory format",
                                     r["used"], other, used_s, r["seconds"][other]))
            if r["width"] not in (None, 1, 1.0) and "side_by_side" in r:  # what the narrow model buys
                full = measure(dataclasses.replace(cfg, width=1.0), args.steps, args.repeats)
                full_s = full["seconds"][full["used"]]
                r["at_width_1"] = {"seconds": full_s, "flops": full["flops"]}
                rows.append(BenchRow(
                    "throughput", f"{case}: width {r['width']:g} vs width 1", f"width {r['width']:g}",
                    "width 1", used_s, full_s,
                    note=f"width 1 has {full['flops'] / r['flops']:.1f}x the FLOPs at "
                         f"{full['flops'] / full_s / 1e9 / peak:.0%} of the matmul"))
    emit_rows(rows)
    print("\nmodel | batch | GFLOP/s used format | share of matmul | FLOP-op kernels | "
          "uncounted op time | side by side | ch-last / contiguous s | "
          + " | ".join(f"{p} work" for p in profiles))
    for r in sorted(records, key=lambda r: -r["work_share"].get(profiles[0], 0)):
        s = r["seconds"]
        fmt = (f"{s['channels_last']:.4f} / {s['contiguous']:.4f}" if "channels_last" in s
               else f"- / {s['contiguous']:.4f}")
        sbs = r.get("side_by_side")
        print(f"{r['label']} | {r['batch_size']} | {r['gflops']:.1f} {r['used']} | "
              f"{r['share']:.0%} | {r['kernel_share']:.0%} | {r['other_time']:.0%} | "
              f"{'-' if sbs is None else format(sbs['efficiency'], '.0%')} | {fmt} | "
              + " | ".join(f"{r['work_share'][p]:.1%}" for p in profiles))
    finish({"matmul_gflops": peak, "threads": threads, "models": records}, t0, args.json)


if __name__ == "__main__":
    main()
