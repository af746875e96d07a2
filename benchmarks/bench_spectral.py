"""Cost of ``lalr_core.methods.spectra`` vs the literal recipe, as ratios measured in one run.

On torchvision ResNet-18 (10 classes, random init; 21 conv / linear layers, conv="flatten"):

1. Alpha of every layer: one call ``spectral.alphas(model, xmin="median", conv="flatten")``
   (smaller Gram side, batched ``eigvalsh`` per shape group, eq. 1.9 MLE) vs a per-layer loop
   that builds the literal ``W^T W`` ((c_in k k)^2, float64), takes ``torch.linalg.eigvalsh``
   of it and calls ``powerlaw.Fit(eigs, xmin=<our x_min>, parameter_ranges={"alpha": [1, 20]})``.
   The max relative alpha difference between the two is printed as a check.
2. The ESD alone: ``spectral.esds(model, conv="flatten")`` vs the literal ``W^T W`` eigvalsh
   loop (the eigvalsh part of loop 1, timed separately inside the same loop).
3. The KS x_min rule on the same (our) eigenvalues: ``fit_alpha(lam, xmin="ks")`` per layer vs
   ``powerlaw.Fit(lam)`` (default x_min scan, same parameter_ranges): time and max |d alpha|.

Default torch thread count; ``--repeats`` interleaved rounds (each runs every variant once),
medians. Informational: no pass / fail targets. Usage: ``make bench``; ``--quick`` for one
round without part 3, ``--json PATH`` to save every number with its provenance.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
import powerlaw
import torch
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs

from lalr_core.core.models.networks import build_model
from lalr_core.methods import spectra as spectral

PL_RANGES = {"alpha": [1, 20]}  # powerlaw 2.0 clips alpha to [0, 3] by default


def _fit_pl(eigs: np.ndarray, **kw) -> powerlaw.Fit:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return powerlaw.Fit(eigs, parameter_ranges=PL_RANGES, verbose=False, **kw)


def literal_loop(mats: dict, xmins: dict) -> tuple[dict, float, float]:
    """Per layer: eigvalsh of the literal W^T W, then powerlaw.Fit with our x_min.

    Returns ``({name: alpha}, seconds in W^T W + eigvalsh, seconds in powerlaw.Fit)``.
    """
    out, t_eig, t_fit = {}, 0.0, 0.0
    for name, W in mats.items():
        t0 = time.perf_counter()
        W = W.double()
        eigs = torch.linalg.eigvalsh(W.mT @ W)                     # (c_in k k,) ascending
        t1 = time.perf_counter()
        fit = _fit_pl(eigs.numpy(), xmin=xmins[name])
        t2 = time.perf_counter()
        out[name] = (float(fit.power_law.alpha), int(fit.n_tail))
        t_eig, t_fit = t_eig + t1 - t0, t_fit + t2 - t1
    return out, t_eig, t_fit


def ks_ours(lams: dict) -> dict:
    return {n: spectral.fit_alpha(lam, xmin="ks")["alpha"] for n, lam in lams.items()}


def ks_powerlaw(lams: dict) -> dict:
    return {n: float(_fit_pl(lam[lam > 0].numpy()).power_law.alpha) for n, lam in lams.items()}


def run(repeats: int, ks: bool) -> dict:
    torch.manual_seed(0)
    model = build_model("resnet18_tv", num_classes=10).eval()
    mats = spectral.layer_matrices(model, conv="flatten")
    ours = spectral.alphas(model, xmin="median", conv="flatten")      # untimed: x_min, check
    xmins = ours["xmin"].to_dict()
    lams = spectral.esds(model, conv="flatten")
    spectral.esds(model, conv="flatten")                               # warm-up (cheap ones)
    if ks:
        ks_ours({"fc": lams["fc"]}), ks_powerlaw({"fc": lams["fc"]})
    t = {k: [] for k in ("ours_alpha", "ours_esd", "lit_eig", "lit_fit", "lit_alpha",
                         "ks_ours", "ks_powerlaw")}
    for _ in range(repeats):                                           # one of each per round
        t0 = time.perf_counter()
        spectral.alphas(model, xmin="median", conv="flatten")
        t["ours_alpha"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        spectral.esds(model, conv="flatten")
        t["ours_esd"].append(time.perf_counter() - t0)
        lit, t_eig, t_fit = literal_loop(mats, xmins)
        t["lit_eig"].append(t_eig)
        t["lit_fit"].append(t_fit)
        t["lit_alpha"].append(t_eig + t_fit)
        if ks:
            t0 = time.perf_counter()
            a_ks = ks_ours(lams)
            t["ks_ours"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            a_pl = ks_powerlaw(lams)
            t["ks_powerlaw"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in t.items() if v}
    rows = []
    for name, W in mats.items():
        a, a_lit = float(ours.loc[name, "alpha"]), lit[name][0]
        row = {"layer": name, "shape": list(W.shape), "alpha": a, "alpha_literal": a_lit,
               "rel_diff": abs(a - a_lit) / abs(a), "n_tail": int(ours.loc[name, "n_tail"]),
               "n_tail_literal": lit[name][1]}
        if ks:
            row.update(alpha_ks=a_ks[name], alpha_ks_powerlaw=a_pl[name],
                       ks_abs_diff=abs(a_ks[name] - a_pl[name]))
        rows.append(row)
    res = {"repeats": repeats, "times_s": med, "raw_times_s": t, "layers": rows,
           "ratio_alpha": med["lit_alpha"] / med["ours_alpha"],
           "ratio_esd": med["lit_eig"] / med["ours_esd"],
           "max_rel_alpha_diff": max(r["rel_diff"] for r in rows),
           "n_tail_mismatches": sum(r["n_tail"] != r["n_tail_literal"] for r in rows)}
    if ks:
        res["ratio_ks"] = med["ks_powerlaw"] / med["ks_ours"]
        res["max_abs_ks_alpha_diff"] = max(r["ks_abs_diff"] for r in rows)
        # powerlaw rejects x_min candidates whose alpha leaves parameter_ranges; ours does not
        res["max_abs_ks_alpha_diff_in_range"] = max(
            r["ks_abs_diff"] for r in rows if r["alpha_ks"] <= PL_RANGES["alpha"][1])
        res["ks_out_of_range_layers"] = [r["layer"] for r in rows
                                         if r["alpha_ks"] > PL_RANGES["alpha"][1]]
    return res


def report(r: dict, ks: bool) -> None:
    print(f"{'layer':22s} {'W shape':>9s} {'alpha':>7s} {'literal':>7s} {'rel diff':>8s}"
          f" {'tail':>4s}" + (f" {'ks ours':>7s} {'ks pl':>7s}" if ks else ""))
    for row in r["layers"]:
        line = (f"{row['layer']:22s} {'x'.join(map(str, row['shape'])):>9s} {row['alpha']:7.3f} "
                f"{row['alpha_literal']:7.3f} {row['rel_diff']:8.1e} {row['n_tail']:4d}")
        if ks:
            line += f" {row['alpha_ks']:7.3f} {row['alpha_ks_powerlaw']:7.3f}"
        print(line)
    s = r["times_s"]
    print(f"medians of {r['repeats']} interleaved repeats, seconds for all 21 layers:")
    print(f"  1. alpha (median x_min): ours {s['ours_alpha']:.3f} | literal W^T W + powerlaw "
          f"{s['lit_alpha']:.3f} (eigvalsh {s['lit_eig']:.3f} + Fit {s['lit_fit']:.3f}) -> "
          f"ratio {r['ratio_alpha']:.1f}x")
    print(f"     alpha check: max rel diff {r['max_rel_alpha_diff']:.2e}, "
          f"n_tail mismatches {r['n_tail_mismatches']}/{len(r['layers'])}")
    print(f"  2. ESD only            : ours {s['ours_esd']:.3f} | literal eigvalsh "
          f"{s['lit_eig']:.3f} -> ratio {r['ratio_esd']:.1f}x")
    if ks:
        print(f"  3. KS x_min (same eigs): ours {s['ks_ours']:.3f} | powerlaw.Fit "
              f"{s['ks_powerlaw']:.3f} -> ratio {r['ratio_ks']:.1f}x, "
              f"max |alpha diff| {r['max_abs_ks_alpha_diff']:.2e}")
        print(f"     ({len(r['ks_out_of_range_layers'])} layers where our KS alpha > "
              f"{PL_RANGES['alpha'][1]}, which powerlaw's range excludes; max |alpha diff| over "
              f"the others {r['max_abs_ks_alpha_diff_in_range']:.2e})")


def rows(r: dict) -> list[BenchRow]:
    """The table's rows: alphas, ESDs and (unless skipped) the KS x_min rule vs the literal."""
    s, n = r["times_s"], len(r["layers"])
    case = f"torchvision ResNet-18, {n} layers, conv=flatten"
    out = [BenchRow("spectral", f"alpha of every layer (median x_min), {case}", "spectral.alphas",
                    "W^T W eigvalsh + powerlaw.Fit loop", s["ours_alpha"], s["lit_alpha"],
                    note=f"max rel alpha diff {r['max_rel_alpha_diff']:.1e}, n_tail mismatches "
                         f"{r['n_tail_mismatches']}/{n}"),
           BenchRow("spectral", f"ESD of every layer, {case}", "spectral.esds",
                    "W^T W eigvalsh loop", s["ours_esd"], s["lit_eig"])]
    if "ratio_ks" in r:
        out.append(BenchRow(
            "spectral", f"KS x_min fit on the same eigenvalues, {case}",
            'fit_alpha(xmin="ks")', "powerlaw.Fit", s["ks_ours"], s["ks_powerlaw"],
            note=f"max |alpha diff| {r['max_abs_ks_alpha_diff_in_range']:.1e} on the layers with "
                 f"alpha <= {PL_RANGES['alpha'][1]} ({len(r['ks_out_of_range_layers'])} above, "
                 f"outside powerlaw's range)"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 repeat, no part 3 (smoke run)")
    parser.add_argument("--no-ks", action="store_true", help="skip part 3 (KS x_min rule)")
    parser.add_argument("--json", metavar="PATH", help="write every number to this file")
    args = parser.parse_args()
    repeats, ks = (1, False) if args.quick else (args.repeats, not args.no_ks)
    t0 = time.perf_counter()
    print(f"torch {torch.__version__}, powerlaw {getattr(powerlaw, '__version__', '?')}, "
          f"{torch.get_num_threads()} threads, {os.cpu_count()} cores, CPU, "
          f"load average {os.getloadavg()[0]:.2f}")
    print("torchvision ResNet-18 (10 classes), conv='flatten', float64")
    res = {"torch": torch.__version__, "threads": torch.get_num_threads(), "device": "cpu",
           "load_avg_start": os.getloadavg()[0], **run(repeats, ks)}
    report(res, ks)
    finish(res, t0, args.json)
    emit_rows(rows(res))


if __name__ == "__main__":
    main()
