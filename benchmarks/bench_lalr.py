"""Cost of LALR's per-epoch metrics (seed 000 §3: "negligible"), as ratios measured in one run.

A 12-layer, d = 768 transformer encoder (BERT-base's encoder shapes: per layer q, k, v, o
768 x 768, FFN 768 -> 3072 -> 768, two LayerNorms; a 2-class head; random weights, no
embedding table) on the CPU:

1. Metrics: ``layer_metrics`` on every LALR layer of it (``grouping="module"``: the 72
   encoder matrices and the head), and each of SVD / CE / CS alone; vs one AdamW training step at batch 32 x 128 tokens. The step is timed at
   batch ``--batch`` (default 4) and extrapolated: forward + backward scale with the batch,
   the optimiser step does not, so ``t(32) = (32 / batch) t_fwd_bwd + t_opt``. Also vs an
   epoch of SST-2 at batch 32 (67,349 / 32 = 2,105 steps), the source's "once per epoch".
2. The pairwise CE and CS terms: one matrix product for all pairs (`cross_entropy_matrix`,
   `cs_metric`) vs a per-pair Python loop over the same inputs (``-(p_i * log p_j).sum()``;
   ``F.cosine_similarity`` of the flattened pair), with the largest difference as a check.

One torch thread by default (``--threads``). Informational: no pass / fail targets. Usage:
``make bench``; ``--json PATH`` saves every number with its provenance.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs
from torch import nn

from lalr_core.methods.layer_lr.lalr import (
    ce_metric,
    cross_entropy_matrix,
    cs_metric,
    layer_matrices,
    layer_metrics,
    svd_metric,
    weight_distributions,
)
from lalr_core.methods.layer_lr.lalr.metrics import mean_off_diagonal

D, HEADS, FF, DEPTH, SEQ = 768, 12, 3072, 12, 128
EPOCH_STEPS = -(-67_349 // 32)  # SST-2 train set at batch 32


class EncoderLayer(nn.Module):
    """Post-norm BERT layer with separate q, k, v, o projections."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.ff1, self.ff2 = nn.Linear(D, FF), nn.Linear(FF, D)
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = (f(x).view(B, T, HEADS, D // HEADS).transpose(1, 2)   # (B, nh, T, hs)
                   for f in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, D)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(*(EncoderLayer() for _ in range(DEPTH)))
        self.head = nn.Linear(D, 2)

    def forward(self, x):                                  # x: (B, T, D) token embeddings
        return self.head(self.layers(x)[:, 0])


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def time_step(model, batch, repeats):
    """Median seconds of forward + backward and of the AdamW step, batch ``batch`` x SEQ."""
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01)
    X, y = torch.randn(batch, SEQ, D), torch.randint(0, 2, (batch,))

    def fwd_bwd():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(X), y).backward()

    fwd_bwd()
    opt.step()                                             # warm-up, allocates the state
    t_fb, t_opt = [], []
    for _ in range(repeats):
        t_fb.append(timed(fwd_bwd)[0])
        t_opt.append(timed(opt.step)[0])
    return statistics.median(t_fb), statistics.median(t_opt)


def time_metrics(weights):
    """Seconds of `layer_metrics`, and of each metric alone."""
    total, _ = timed(lambda: layer_metrics(weights))
    parts = {"svd": timed(lambda: svd_metric(weights))[0],
             "ce": timed(lambda: ce_metric(weights))[0],
             "cs": timed(lambda: cs_metric(weights))[0]}
    return total, parts


def ce_loop(P):
    """Per-pair loop: M'_CE(i) = mean_{j != i} -(p_i * log p_j).sum()."""
    L = P.shape[0]
    return torch.tensor([sum(float(-(P[i] * torch.log(P[j])).sum()) for j in range(L) if j != i)
                         / (L - 1) for i in range(L)], dtype=torch.float64)


def cs_loop(weights):
    """Per-pair loop of the default CS rule: same-numel partners, else truncated to the common
    minimum length."""
    flat = [w.reshape(-1) for w in weights]
    n = min(f.numel() for f in flat)
    out = []
    for i, a in enumerate(flat):
        same = [j for j, b in enumerate(flat) if j != i and b.numel() == a.numel()]
        pairs = [(a, flat[j]) for j in same] or \
            [(a[:n], flat[j][:n]) for j in range(len(flat)) if j != i]
        out.append(sum(float(F.cosine_similarity(u, v, dim=0)) for u, v in pairs) / len(pairs))
    return torch.tensor(out, dtype=torch.float64)


def rows(res: dict) -> list[BenchRow]:
    """The table's rows: the metrics vs a training step, the pairwise terms vs per-pair loops."""
    m, s, p = res["metrics"], res["step"], res["pairwise"]
    enc = f"12-layer d={D} encoder, {res['layers']} layers"
    return [
        BenchRow("lalr", f"per-epoch metrics (SVD+CE+CS) vs one training step, {enc}",
                 "layer_metrics", "AdamW step, batch 32 x 128 tokens", m["total_s"],
                 s["step_batch32_s"],
                 note=f"overhead, run once per epoch: {m['vs_step']:.2f} steps = "
                      f"{100 * m['vs_epoch']:.3f} % of an SST-2 epoch ({EPOCH_STEPS} steps); step "
                      f"extrapolated from batch {s['batch']}; informational"),
        BenchRow("lalr", f"pairwise CE term, {res['layers']} layers x 64 bins",
                 "one matmul", "per-pair loop", p["ce_matmul_s"], p["ce_loop_s"],
                 note=f"max |diff| {p['ce_max_abs_diff']:.1e}"),
        BenchRow("lalr", f"pairwise CS term, {res['layers']} layers (same-numel vectors)",
                 "one matmul", "per-pair loop", p["cs_matmul_s"], p["cs_loop_s"],
                 note=f"max |diff| {p['cs_max_abs_diff']:.1e}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=4, help="timed batch (x 128 tokens)")
    parser.add_argument("--repeats", type=int, default=2, help="timed training steps")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    torch.manual_seed(0)
    model = Encoder()
    weights = list(layer_matrices(model).values())
    res = {"threads": args.threads, "layers": len(weights),
           "parameters": sum(p.numel() for p in model.parameters())}

    t_fb, t_opt = time_step(model, args.batch, args.repeats)
    step32 = 32 / args.batch * t_fb + t_opt
    res["step"] = {"batch": args.batch, "fwd_bwd_s": t_fb, "adamw_s": t_opt,
                   "step_batch32_s": step32, "epoch_steps": EPOCH_STEPS}
    print(f"{res['layers']} layers, {res['parameters'] / 1e6:.1f} M parameters; step at batch "
          f"{args.batch}: fwd+bwd {t_fb:.2f} s + AdamW {t_opt:.2f} s -> batch 32: {step32:.1f} s")

    total, parts = time_metrics(weights)
    res["metrics"] = {"total_s": total, **{f"{k}_s": v for k, v in parts.items()},
                      "vs_step": total / step32, "vs_epoch": total / (step32 * EPOCH_STEPS)}
    print(f"metrics: {total:.2f} s (svd {parts['svd']:.2f}, ce {parts['ce']:.2f}, "
          f"cs {parts['cs']:.2f}) = {res['metrics']['vs_step']:.2f} steps at batch 32 = "
          f"{100 * res['metrics']['vs_epoch']:.3f} % of an SST-2 epoch ({EPOCH_STEPS} steps)")

    P = weight_distributions(weights)
    t_vec, ce_vec = timed(lambda: mean_off_diagonal(cross_entropy_matrix(P)))
    t_loop, ce_ref = timed(lambda: ce_loop(P))
    t_csv, cs_vec = timed(lambda: cs_metric(weights))
    t_csl, cs_ref = timed(lambda: cs_loop(weights))
    res["pairwise"] = {
        "ce_matmul_s": t_vec, "ce_loop_s": t_loop, "ce_speedup": t_loop / t_vec,
        "ce_max_abs_diff": float((ce_vec.double() - ce_ref.double()).abs().max()),
        "cs_matmul_s": t_csv, "cs_loop_s": t_csl, "cs_speedup": t_csl / t_csv,
        "cs_max_abs_diff": float(np.abs(cs_vec - cs_ref.double().numpy()).max())}
    p = res["pairwise"]
    print(f"pairwise CE ({len(weights)} layers, 64 bins): matmul {1e3 * t_vec:.2f} ms vs per-pair "
          f"loop {1e3 * t_loop:.0f} ms = {p['ce_speedup']:.0f}x (max diff {p['ce_max_abs_diff']:.1e})")
    print(f"pairwise CS (whole same-numel vectors): matmul {t_csv:.2f} s vs per-pair loop "
          f"{t_csl:.2f} s = {p['cs_speedup']:.1f}x (max diff {p['cs_max_abs_diff']:.1e})")
    finish(res, t0, args.json)
    emit_rows(rows(res))


if __name__ == "__main__":
    main()
