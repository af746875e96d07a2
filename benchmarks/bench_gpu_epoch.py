"""Epoch time of the training loop at the paper profile's shapes, and what bf16 and
torch.compile change, as ratios measured in one run (on the device the run finds).

1. ResNet-20 on CIFAR-10-shaped synthetic data (``--n-train`` images, batch ``--batch``,
   crop + flip on the device, SGD with momentum) through `lalr_core.core.loop.train.train`, float32
   and with bf16 autocast (``RunConfig.bf16``; CUDA only: not measured on a CPU). The epoch time is
   the median over the epochs after the first (the first pays for cuDNN's autotuning and the
   allocator), evaluation of the held-out split included, as a paper run pays it.
2. The same steps in a bare loop (our batches and augmentation, no callbacks, no evaluation),
   eager and with ``torch.compile`` on the model, at float32 (and bf16 on CUDA): whether
   compiling would pay in steady state, and what compiling costs (the warm-up steps).
3. Chapter 04's paper runs (SGDM and Adam, seed 0, the trajectory callback with the paper's
   window) on synthetic CIFAR-10 of the paper's size for ``--epochs`` epochs: their epoch time,
   and from it the GPU-hours of the paper profile (2 optimisers x seeds x 200 epochs).

Synthetic data, since the CIFAR-10 files are not always at hand (the device machines here
cannot download them): a step costs the same on random pixels. Usage: ``make bench`` (small
sizes on a CPU), ``python benchmarks/bench_gpu_epoch.py --n-train 50000 --batch 1024`` on a GPU;
``--json PATH`` saves every number with its provenance.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import statistics
import time

import torch
import torch.nn.functional as F
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs

from lalr_core.chapters import ch04_directedness as ch04
from lalr_core.core.data.augmentation import augment
from lalr_core.core.loop.callbacks import CALLBACKS
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.data import iterate_batches, load_data
from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.train import resolve_device, train


def loop_epoch_times(cfg: RunConfig, callbacks=()) -> list[float]:
    """Seconds of each epoch of ``train(cfg)`` (evaluation included)."""
    res = train(cfg, callbacks=callbacks, progress=False)
    return res["history"]["time_s"].diff().fillna(res["history"]["time_s"]).tolist()


def steady(times: list[float]) -> float:
    """Median epoch time after the first epoch (all of them when there is only one)."""
    return statistics.median(times[1:] or times)


def bare_loop_time(data, batch: int, steps: int, device, *, bf16: bool, compile_: bool,
                   repeats: int) -> tuple[float, float]:
    """Median seconds of ``steps`` SGD steps of ResNet-20 (channels_last) in a bare loop, and
    the seconds of the 3 warm-up steps before them (where compiling happens)."""
    torch.manual_seed(0)
    model = build_model("resnet20").to(device).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    fwd = torch.compile(model) if compile_ else model
    cast = torch.autocast("cuda", dtype=torch.bfloat16) if bf16 and device.type == "cuda" \
        else contextlib.nullcontext()
    gen = torch.Generator(device=device).manual_seed(0)

    def run(n):
        done = 0
        while done < n:
            for Xb, yb in iterate_batches(data.X_train, data.y_train, batch, shuffle=True,
                                          generator=gen):
                with cast:
                    loss = F.cross_entropy(fwd(augment(Xb, generator=gen)), yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                done += 1
                if done == n:
                    break
        if device.type == "cuda":
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    run(min(steps, 3))  # warm-up: compilation, autotuning, allocation
    warmup = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(steps)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), warmup


def rows(res: dict, cuda: bool) -> list[BenchRow]:
    """The table's rows: bf16 vs float32 (training loop, bare loop; CUDA only), compiled vs
    eager (bare loop, each precision measured)."""
    shape = f"ResNet-20, {res['n_train']} images, batch {res['batch']}, {res['device']}"
    loop, bare = res["loop_s_per_epoch"], res["bare_s_per_epoch"]
    if cuda:
        out = [BenchRow("gpu_epoch", f"training-loop epoch (evaluation included), {shape}",
                        "bf16 autocast", "float32", loop["bf16"], loop["float32"]),
               BenchRow("gpu_epoch", f"bare-loop epoch, {shape}", "bf16 autocast", "float32",
                        bare["bf16"], bare["float32"])]
    else:
        out = [BenchRow("gpu_epoch", f"training-loop epoch, {shape}", "bf16 autocast",
                        "float32", math.nan, loop["float32"],
                        note="not measured: bf16 autocast applies on CUDA only")]
    for p in res["precisions"]:
        if f"{p} compiled" in bare:
            out.append(BenchRow(
                "gpu_epoch", f"bare-loop epoch, {p}, {shape}", "torch.compile", "eager",
                bare[f"{p} compiled"], bare[p],
                note=f"steady state; compiling took {res['compile_warmup_s'][p]:.1f} s "
                     f"(3 warm-up steps, eager {res['eager_warmup_s'][p]:.1f} s)"))
        else:
            out.append(BenchRow("gpu_epoch", f"bare-loop epoch, {p}, {shape}", "torch.compile",
                                "eager", math.nan, bare[p], note="not measured (--no-compile)"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--n-train", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compile", action=argparse.BooleanOptionalAction, default=True,
                        help="time torch.compile too (default: yes)")
    parser.add_argument("--skip-ch04", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    device = resolve_device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else \
        f"CPU, {torch.get_num_threads()} threads"
    print(f"device: {name}; torch {torch.__version__}")
    res: dict = {"device": name, "n_train": args.n_train, "batch": args.batch}

    # 1. the training loop, float32 vs bf16
    base = RunConfig(dataset="cifar10", synthetic=True, n_train=args.n_train, n_val=0,
                     n_test=1000, augment=True, model="resnet20", batch_size=args.batch,
                     epochs=args.epochs, optimizer="sgdm", lr=0.05, momentum=0.9, wd=5e-4,
                     device=args.device)
    cuda = device.type == "cuda"
    precisions = ("float32", "bf16") if cuda else ("float32",)  # autocast is CUDA-only
    res["precisions"] = precisions
    loop = {}
    for label in precisions:
        loop[label] = steady(loop_epoch_times(dataclasses.replace(base, bf16=label == "bf16")))
        print(f"  training loop, {label:7s}: {loop[label]:.3f} s/epoch "
              f"({args.n_train} images, batch {args.batch})")
    res["loop_s_per_epoch"] = loop
    if cuda:
        res["bf16_speedup"] = loop["float32"] / loop["bf16"]
        print(f"  bf16 speed-up: {res['bf16_speedup']:.2f}x")
    else:
        print("  (bf16 autocast applies on CUDA only: not measured on this device)")

    # 2. bare loop, eager vs compiled
    data = load_data("cifar10", n_train=args.n_train, n_val=0, n_test=16, synthetic=True,
                     device=device)
    steps = max(1, args.n_train // args.batch)
    bare, warm = {}, {}
    for p in precisions:
        for comp in ((False, True) if args.compile else (False,)):
            label = f"{p}{' compiled' if comp else ''}"
            bare[label], warm[label] = bare_loop_time(data, args.batch, steps, device,
                                                      bf16=p == "bf16", compile_=comp,
                                                      repeats=args.repeats)
            print(f"  bare loop, {label:16s}: {bare[label]:.3f} s per {steps} steps "
                  f"(warm-up {warm[label]:.1f} s)")
    res["bare_s_per_epoch"] = bare
    res["eager_warmup_s"] = {p: warm[p] for p in precisions}
    if args.compile:
        res["compile_warmup_s"] = {p: warm[f"{p} compiled"] for p in precisions}
        res["compile_speedup"] = {p: bare[p] / bare[f"{p} compiled"] for p in precisions}
        print("  torch.compile speed-up: " + ", ".join(
            f"{p} {r:.2f}x" for p, r in res["compile_speedup"].items()))

    # 3. chapter 04's paper runs on synthetic CIFAR-10
    if not args.skip_ch04:
        s = ch04.PROFILES["paper"]
        ch, n = {}, min(s.n_train, args.n_train)  # the paper's sizes where --n-train allows
        for opt_name, cfg in ch04.directedness_configs(s, seed=0).items():
            cfg = dataclasses.replace(cfg, synthetic=True, epochs=args.epochs,
                                      schedule="constant", milestones=(),  # lr drops cost nothing
                                      n_train=n, n_val=min(s.n_val, n // 4),
                                      n_test=min(10_000, n // 4), device=args.device)
            cb = CALLBACKS["trajectory"](window=s.window, per_layer=True)
            ch[opt_name] = steady(loop_epoch_times(cfg, [cb]))
            print(f"  chapter 04 paper run, {opt_name}: {ch[opt_name]:.3f} s/epoch "
                  f"(trajectory callback, window {s.window})")
        hours = sum(ch.values()) * s.seeds * s.epochs / 3600 * (s.n_train / n)
        res["ch04_paper_s_per_epoch"], res["ch04_paper_gpu_hours"] = ch, hours
        print(f"  chapter 04 paper profile (2 optimisers x {s.seeds} seeds x {s.epochs} epochs "
              f"at {s.n_train} images): {hours:.2f} h on this device")
    finish(res, t0, args.json)
    emit_rows(rows(res, cuda))


if __name__ == "__main__":
    main()
