"""Cost of gradient orthogonalisation (Orth-SGDM, chapter 06) as ratios measured in one run.

1. Step: one training step (forward + backward + optimiser step) of CIFAR ResNet-20 on a
   synthetic CIFAR-shaped batch of 128 (float32, channels_last as ``lalr_core.core.loop.train``), with
   SGDM (lr 1e-2, momentum 0.9, wd 5e-4) plain, with the SVD polar factor and with Newton-Schulz,
   all built by ``make_optimizer``. ``--repeats`` rounds of ``--steps`` steps each, after a
   warm-up, alternate the three step by step; medians give the overhead ``orth/sgdm - 1``. The
   transform alone (``transform_grads()`` on real gradients, restored before every call) is
   reported as a fraction of the SGDM step. Targets (the issue): SVD <= 15 %, NS <= 5 % on CPU.
2. Per layer shape: SVD vs Newton-Schulz on one gradient of every distinct ResNet-20 shape, and
   the batched call ``GradientTransform`` makes on the stacked same-shaped gradients vs a
   per-tensor loop (interleaved, medians).
3. With CUDA: the step comparison at batch 1024 on the GPU, synchronised (target NS <= 10 %).

Default torch thread count. Usage: ``make bench``; ``--quick`` for a seconds-long smoke run,
``--json PATH`` to save every number with its provenance.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.models.networks import build_model
from lalr_core.core.loop.train import make_optimizer
from lalr_core.methods.orthogonal.transform import GradTransform
from lalr_core.methods.orthogonal.polar import newton_schulz, svd_polar

VARIANTS = {"sgdm": ("none", "svd"), "orth_svd": ("orth", "svd"),
            "orth_ns": ("orth", "newton_schulz")}  # name -> (GradTransform's transform, method)
TARGETS = {"cpu": {"orth_svd": 0.15, "orth_ns": 0.05}, "cuda": {"orth_ns": 0.10}}  # max overhead


# ----------------------------------------------------------------------------- timing
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleave(fns: dict, repeats: int, number: int, device: torch.device) -> dict[str, float]:
    """Median over ``repeats`` rounds of the mean seconds per call of each ``fns[name]``.

    ``fns[name] = (setup, fn)``; ``setup`` (may be None) runs untimed before each call. Each
    round makes ``number`` calls of every ``fn``, alternating the names call by call, so a
    change of load on a shared machine hits all of them alike.
    """
    per_call = {name: [] for name in fns}
    for _ in range(repeats):
        total = dict.fromkeys(fns, 0.0)
        for _ in range(number):
            for name, (setup, fn) in fns.items():
                if setup is not None:
                    setup()
                _sync(device)
                t0 = time.perf_counter()
                fn()
                _sync(device)
                total[name] += time.perf_counter() - t0
        for name in fns:
            per_call[name].append(total[name] / number)
    return {name: statistics.median(ts) for name, ts in per_call.items()}


# ----------------------------------------------------------------------------- set-up
def _step(model, opt, X, y) -> None:
    loss = F.cross_entropy(model(X), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def build_variants(device: torch.device) -> dict:
    """name -> (model, optimiser wrapper): ResNet-20s with the same initial weights."""
    torch.manual_seed(0)
    init = build_model("resnet20", in_channels=3, num_classes=10).state_dict()
    out = {}
    for name, (transform, method) in VARIANTS.items():
        model = build_model("resnet20", in_channels=3, num_classes=10)
        model.load_state_dict(init)
        model = model.to(device).to(memory_format=torch.channels_last)
        cfg = RunConfig(dataset="cifar10", model="resnet20", optimizer="sgdm", lr=1e-2,
                        momentum=0.9, wd=5e-4,
                        methods=() if transform == "none" else (GradTransform(transform, method),))
        out[name] = (model, make_optimizer(cfg, model))
    return out


def _batch(batch_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(batch_size, 3, 32, 32, generator=g)  # (B, C, H, W), already normalised
    return X.to(device), torch.randint(0, 10, (batch_size,), generator=g).to(device)


def _grad_restorer(opt):
    """A setup that puts the chosen parameters' current (raw) gradients back before a call."""
    saved = [(p, p.grad.clone()) for p in opt.params]
    return lambda: [p.grad.copy_(g) for p, g in saved]


# ----------------------------------------------------------------------------- benchmarks
def bench_steps(device, batch_size, steps, repeats) -> dict:
    """Median step times of the three variants and the transform-alone times."""
    variants, (X, y) = build_variants(device), _batch(batch_size, device)
    fns = {n: (None, lambda m=m, o=o: _step(m, o, X, y)) for n, (m, o) in variants.items()}
    interleave(fns, 1, 2, device)                                       # warm-up
    step = interleave(fns, repeats, steps, device)
    tfns = {}
    for name in ("orth_svd", "orth_ns"):
        model, opt = variants[name]
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(X), y).backward()                         # real raw gradients
        tfns[name] = (_grad_restorer(opt), opt.transform_grads)
    interleave(tfns, 1, 2, device)
    transform = interleave(tfns, repeats, steps, device)
    return {"device": str(device), "batch_size": batch_size, "steps": steps, "repeats": repeats,
            "step_s": step, "transform_s": transform,
            "overhead": {n: step[n] / step["sgdm"] - 1 for n in ("orth_svd", "orth_ns")},
            "transform_fraction": {n: t / step["sgdm"] for n, t in transform.items()}}


def _shape_fns(G: torch.Tensor) -> dict:
    """The six timed calls on one stack ``G`` (``[L, c_out, fan_in]``) of same-shaped grads."""
    return {"svd_1": (None, lambda: svd_polar(G[0])),
            "ns_1": (None, lambda: newton_schulz(G[0])),
            "svd_batched": (None, lambda: svd_polar(G)),           # what GradientTransform does
            "svd_loop": (None, lambda: [svd_polar(M) for M in G]),
            "ns_batched": (None, lambda: newton_schulz(G)),
            "ns_loop": (None, lambda: [newton_schulz(M) for M in G])}


def bench_shapes(number, repeats) -> list[dict]:
    """SVD vs NS per matrix, batched vs loop per shape, on real ResNet-20 CPU gradients."""
    cpu = torch.device("cpu")
    model, opt = build_variants(cpu)["orth_svd"]
    X, y = _batch(128, cpu)
    F.cross_entropy(model(X), y).backward()
    rows = []
    for params in opt.groups.values():
        G = torch.stack([p.grad.flatten(1) for p in params])           # (L, c_out, fan_in)
        fns = _shape_fns(G)
        interleave(fns, 1, 2, cpu)                                      # warm-up
        t = interleave(fns, repeats, number, cpu)
        rows.append({"shape": list(G.shape[1:]), "count": len(G), **t})
    return rows


# ----------------------------------------------------------------------------- report
def print_steps(r: dict, targets: dict) -> None:
    print(f"ResNet-20 step on {r['device']}, batch {r['batch_size']}, {r['steps']} steps x "
          f"{r['repeats']} interleaved repeats (medians)")
    for name, t in r["step_s"].items():
        print(f"  {name:9s} step      : {1e3 * t:8.2f} ms")
    for name in ("orth_svd", "orth_ns"):
        over, frac = r["overhead"][name], r["transform_fraction"][name]
        verdict = ""
        if name in targets:
            ok = over <= targets[name]
            verdict = f"  target <= {targets[name]:.0%}: {'PASS' if ok else 'FAIL'}"
        print(f"  {name:9s} overhead  : {over:+7.1%} of an SGDM step{verdict}")
        print(f"  {name:9s} transform : {1e3 * r['transform_s'][name]:8.2f} ms alone = "
              f"{frac:.1%} of an SGDM step")


def print_shapes(rows: list[dict]) -> None:
    print("Orthogonalisation per ResNet-20 gradient shape, CPU, median us per call")
    print(f"  {'shape':>9s}  L |   svd    ns svd/ns | svd bat svd loop loop/b |  ns bat "
          f"ns loop loop/b")
    for r in rows:
        us = {k: 1e6 * v for k, v in r.items() if k not in ("shape", "count")}
        print(f"  {'x'.join(map(str, r['shape'])):>9s} {r['count']:2d} | {us['svd_1']:5.0f} "
              f"{us['ns_1']:5.0f} {us['svd_1'] / us['ns_1']:6.2f} | {us['svd_batched']:7.0f} "
              f"{us['svd_loop']:8.0f} {us['svd_loop'] / us['svd_batched']:6.2f} | "
              f"{us['ns_batched']:7.0f} {us['ns_loop']:7.0f} {us['ns_loop'] / us['ns_batched']:6.2f}")


def step_rows(r: dict, targets: dict) -> list[BenchRow]:
    """Orth-SGDM step vs the plain SGDM step: ratio < 1 is the overhead, judged in ``note``."""
    out = []
    for name, label in (("orth_svd", "Orth-SGDM, SVD"), ("orth_ns", "Orth-SGDM, Newton-Schulz")):
        over = r["overhead"][name]
        verdict = (f"target <= {targets[name]:.0%}: {'met' if over <= targets[name] else 'NOT met'}"
                   if name in targets else "no target here")
        out.append(BenchRow(
            "orthogonal", f"training step, ResNet-20, batch {r['batch_size']}, {r['device']}"
            + (f" ({r['name']})" if "name" in r else ""), label, "plain SGDM step",
            r["step_s"][name], r["step_s"]["sgdm"],
            note=f"overhead {over:+.1%} of an SGDM step, {verdict}; transform alone "
                 f"{r['transform_fraction'][name]:.1%}"))
    return out


def shape_rows(shapes: list[dict]) -> list[BenchRow]:
    """Summed over ResNet-20's gradient shapes (one stack per shape, as GradientTransform)."""
    tot = {k: sum(r[k] for r in shapes) for k in shapes[0] if k not in ("shape", "count")}
    case = f"orthogonalise all ResNet-20 gradients, {len(shapes)} shapes, CPU"
    return [BenchRow("orthogonal", case, "Newton-Schulz, batched", "SVD polar, batched",
                     tot["ns_batched"], tot["svd_batched"], note="NS approximates, SVD is exact"),
            BenchRow("orthogonal", case, "SVD polar, batched per shape", "SVD polar, per tensor",
                     tot["svd_batched"], tot["svd_loop"]),
            BenchRow("orthogonal", case, "Newton-Schulz, batched per shape",
                     "Newton-Schulz, per tensor", tot["ns_batched"], tot["ns_loop"])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="steps per repeat")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2 steps x 2 repeats (smoke run)")
    parser.add_argument("--json", metavar="PATH", help="write every number to this file")
    args = parser.parse_args()
    steps, repeats = (2, 2) if args.quick else (args.steps, args.repeats)
    t0 = time.perf_counter()
    # a shared machine: the 1-min load average says how much the CPU numbers were contended
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}")
    res = {"torch": torch.__version__, "threads": torch.get_num_threads(), "targets": TARGETS,
           "load_avg_start": os.getloadavg()[0],
           "cpu": bench_steps(torch.device("cpu"), 128, steps, repeats)}
    print_steps(res["cpu"], TARGETS["cpu"])
    res["shapes"] = bench_shapes(4 * steps, repeats)
    print_shapes(res["shapes"])
    if torch.cuda.is_available():
        res["cuda"] = bench_steps(torch.device("cuda"), 1024, steps, repeats)
        res["cuda"]["name"] = torch.cuda.get_device_name()
        print_steps(res["cuda"], TARGETS["cuda"])
    else:
        print("GPU part skipped: torch.cuda.is_available() is False")
    finish(res, t0, args.json)
    emit_rows(step_rows(res["cpu"], TARGETS["cpu"]) + shape_rows(res["shapes"])
              + (step_rows(res["cuda"], TARGETS["cuda"]) if "cuda" in res else []))


if __name__ == "__main__":
    main()
