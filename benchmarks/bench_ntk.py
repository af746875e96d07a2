"""Cost of the empirical NTK (`lalr_core.methods.ntk.empirical`, chapter on seed 002), measured in one run.

The Gram matrix ``K = J J^T`` of ``--n`` (256) samples, three ways:

* ``jacobian``: ``ntk.empirical_ntk(..., method="jacobian")`` (``vmap(jacrev)`` per chunk of
  ``--chunk`` samples, then one matrix product);
* ``ntvp``: ``ntk.empirical_ntk(..., method="ntvp")`` (NTK-vector products, no full Jacobian);
* ``loop``: the literal recipe, one ``torch.autograd.grad`` per sample and output (``n`` or
  ``n * C`` backward passes), then ``J J^T``.

Cases: BasicCNN (1 x 8 x 8 inputs, 10 classes, width 0.25, all parameters) with the scalar
logit margin ``z1 - z0`` (chapter 03's scalar output) and with all 10 logits (the trace over outputs); TinyTF
(the default d = 32, 2 blocks, sequences of 16 tokens) with only the head and the ``q_proj`` /
``v_proj`` of both blocks trainable, standing in for LoRA, logit margin.

One torch thread by default (``--threads``). Time: median of ``--repeats`` calls after one
untimed call (``ntvp``, the slow one: one call). Peak memory: the most bytes of tensors alive at
once during a separate call, above what existed before it; on CUDA
``torch.cuda.max_memory_allocated``; on CPU the allocation and free records of
``torch.profiler`` (``profile_memory=True``) summed in time order. (``tracemalloc`` does not see torch's CPU
allocator, and the process's resident size is too coarse for a few MiB.) Each case prints the
largest relative difference between the three kernels as a check. Informational: no pass /
fail targets.

Usage: ``python benchmarks/bench_ntk.py [--device cuda] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import time

import torch
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs
from torch._C._profiler import _EventType  # private (torch 2.x): the allocation record's tag
from torch.profiler import ProfilerActivity, profile

from lalr_core.core.models.networks import build_model
from lalr_core.methods.pretrained.text.tinytf import TinyTFClassifier, TinyTFConfig
from lalr_core.methods.ntk import empirical as ntk
from lalr_core.methods.layer_lr.lalr import overhead

MIB = 2 ** 20


def margin(logits: torch.Tensor) -> torch.Tensor:
    return logits[:, 1] - logits[:, 0]


# ----------------------------------------------------------------------------- the baseline
def loop_kernel(model, X, output=None) -> torch.Tensor:
    """One backward pass per sample and output, eval mode, then ``J J^T`` summed over outputs."""
    params = [p for p in model.parameters() if p.requires_grad]
    rows = []
    for x in X:
        out = model(x[None])
        out = (output(out) if output else out).reshape(-1)
        rows.append(torch.stack([torch.cat([g.reshape(-1) for g in torch.autograd.grad(
            o, params, retain_graph=k + 1 < len(out))]) for k, o in enumerate(out)]))
    J = torch.stack(rows)                                          # (n, C, P)
    return torch.einsum("iaP,jaP->ij", J, J)


# ----------------------------------------------------------------------------- measurement
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _peak_allocated(prof) -> int:
    """Largest running sum of the allocation records (frees are negative) of a profile."""
    stack, records = list(prof.profiler.kineto_results.experimental_event_tree()), []
    while stack:
        event = stack.pop()
        if event.tag == _EventType.Allocation:
            records.append((event.start_time_ns, event.extra_fields.alloc_size))
        stack.extend(event.children)
    live = peak = 0
    for _, size in sorted(records):
        live += size
        peak = max(peak, live)
    return peak


def peak_memory_mib(fn, device: torch.device) -> float:
    """Peak memory of tensors allocated during one call of ``fn``, MiB."""
    if device.type == "cuda":
        _sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        _sync(device)
        return (torch.cuda.max_memory_allocated(device) - before) / MIB
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return _peak_allocated(prof) / MIB


def measure(name: str, fns: dict, device: torch.device, repeats: int, n_params: int) -> dict:
    """Times (medians; ``ntvp``, the slow one, from one call after a warm-up) and the
    largest relative difference from the loop's kernel. Peak memory comes later."""
    kernels = {k: fn() for k, fn in fns.items()}                  # untimed; also the check
    ref = kernels["loop"]
    res = {"parameters": n_params, "max_rel_diff": max(
        float((K - ref).abs().max() / ref.abs().max()) for K in kernels.values())}
    for k, fn in fns.items():
        def timed(fn=fn):
            fn()
            _sync(device)
        res[f"{k}_s"] = overhead.median_time(timed, 1 if k == "ntvp" else repeats)
    res["loop_vs_jacobian"] = res["loop_s"] / res["jacobian_s"]
    res["loop_vs_ntvp"] = res["loop_s"] / res["ntvp_s"]
    print(f"{name} ({n_params} parameters): jacobian {res['jacobian_s'] * 1e3:.0f} ms, ntvp "
          f"{res['ntvp_s'] * 1e3:.0f} ms, loop {res['loop_s'] * 1e3:.0f} ms; loop / jacobian "
          f"{res['loop_vs_jacobian']:.1f}x, loop / ntvp {res['loop_vs_ntvp']:.2f}x; max rel "
          f"diff {res['max_rel_diff']:.1e}")
    return res


def add_peak_memory(name: str, res: dict, fns: dict, device: torch.device) -> None:
    for k, fn in fns.items():
        res[f"{k}_peak_mib"] = peak_memory_mib(fn, device)
    print(f"{name}: peak memory jacobian {res['jacobian_peak_mib']:.1f} MiB, ntvp "
          f"{res['ntvp_peak_mib']:.1f} MiB, loop {res['loop_peak_mib']:.1f} MiB")


def _fns(model, X, chunk: int, output=None) -> dict:
    return {"jacobian": lambda: ntk.empirical_ntk(model, X, output=output, chunk=chunk),
            "ntvp": lambda: ntk.empirical_ntk(model, X, output=output, chunk=chunk,
                                              method="ntvp"),
            "loop": lambda: loop_kernel(model, X, output)}


# ----------------------------------------------------------------------------- the cases
def cases(n: int, chunk: int, device: torch.device) -> dict:
    """name -> (label, parameters, the three kernel functions)."""
    torch.manual_seed(0)
    cnn = build_model("basic_cnn", in_channels=1, num_classes=10, width=0.25,
                      image_size=8).to(device).eval()
    images = torch.randn(n, 1, 8, 8, device=device)
    tf = TinyTFClassifier(TinyTFConfig(), num_classes=2).to(device).eval()
    for name, p in tf.named_parameters():      # head + q/v projections: a stand-in for LoRA
        p.requires_grad_(name.startswith("head") or "q_proj" in name or "v_proj" in name)
    tokens = torch.randint(1, 64, (n, 16), device=device)
    tokens[:, 12:] = 0                                             # some padding keys
    P_cnn = sum(p.numel() for p in cnn.parameters())
    P_tf = sum(p.numel() for p in tf.parameters() if p.requires_grad)
    return {"cnn_margin": ("BasicCNN, logit margin", P_cnn, _fns(cnn, images, chunk, margin)),
            "cnn_logits": ("BasicCNN, 10 logits (trace)", P_cnn, _fns(cnn, images, chunk)),
            "tinytf_margin": ("TinyTF head + q/v, logit margin", P_tf,
                              _fns(tf, tokens, chunk, margin))}


def rows(res: dict, todo: dict) -> list[BenchRow]:
    """The table's rows: per case, the Jacobian method and the NTK-vector products vs the loop."""
    out = []
    for key, (label, P, _) in todo.items():
        r = res[key]
        case = f"empirical NTK of {res['n']} samples, {label} ({P} parameters), {res['device']}"
        for method in ("jacobian", "ntvp"):
            out.append(BenchRow("ntk", case, f'empirical_ntk("{method}")', "per-sample loop",
                                r[f"{method}_s"], r["loop_s"],
                                note=f"peak memory {r[f'{method}_peak_mib']:.1f} vs "
                                     f"{r['loop_peak_mib']:.1f} MiB; max rel diff of the three "
                                     f"{r['max_rel_diff']:.1e}"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    res = {"n": args.n, "chunk": args.chunk, "repeats": args.repeats, "device": str(device),
           "threads": torch.get_num_threads()}
    todo = cases(args.n, args.chunk, device)
    for key, (label, P, fns) in todo.items():
        res[key] = measure(label, fns, device, args.repeats, P)
    for key, (label, _, fns) in todo.items():
        add_peak_memory(label, res[key], fns, device)
    finish(res, t0, args.json)
    emit_rows(rows(res, todo))


if __name__ == "__main__":
    main()
