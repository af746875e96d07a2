"""``spectral.alphas`` in WeightWatcher's convention vs WeightWatcher 0.7.7's ``analyze``.

On torchvision ResNet-18 (``resnet18(weights=None, num_classes=10)``, seed 0, random init; 20
Conv2d + 1 Linear layer, all of which WeightWatcher analyses), in one process:

* ours: ``spectral.alphas(model, **spectral.WW_CONVENTION)``: kernel slices pooled, conv
  eigenvalues x 0.5 (WW's ``conv2d_norm``), eigenvalues <= 1e-5 dropped, WW's KS x_min scan
  (rule ``"ww"``), per-matrix CPU LAPACK on ``torch.get_num_threads()`` threads;
* baseline: ``weightwatcher.WeightWatcher(model=model).analyze()`` with its defaults, which
  already compute only the ESD, the power-law fit and the norm metrics (``plot``,
  ``randomize``, ``mp_fit``, ``vectors``, ``detX``, ``fix_fingers`` all off; ``pl_package="ww"``).
  The norm metrics (a Python loop over the eigenvalues per layer) cannot be switched off.

Reported: seconds per model (median of ``--repeats`` interleaved rounds, each runs both once,
after one untimed warm-up of each), the ratio and the max relative alpha difference over the
layers with >= 50 eigenvalues (target: ratio >= 3 and diff <= 1e-6). Default torch thread
count; the load average is printed (the 2-core bench machine is shared). WeightWatcher is an
optional bench dependency: without it the row has ours only and says so.

Only on a machine without CUDA: with CUDA, WW 0.7.7 casts the weights to float16 and takes the
SVDs in float32 on the GPU (RMT_Util.py ``torch_T_to_np``), a different spectrum; this script
then measures ours only. Usage: ``make bench``; ``--json PATH`` saves every number with its
provenance.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import statistics
import time

import torch
import torchvision
from _common import BenchRow, emit_rows, finish  # benchmarks/ is on sys.path when a script runs

from lalr_core.methods import spectra as spectral

WW_VERSION = "0.7.7"
MIN_EIGS = 50         # layers compared: at least this many eigenvalues (fc has 10)
TARGET = 3.0          # baseline / ours


def load_weightwatcher():
    """The ``weightwatcher`` module, or ``None`` if it is missing or CUDA is visible."""
    if torch.cuda.is_available():
        return None
    try:
        import weightwatcher
    except ImportError:
        return None
    logging.getLogger("weightwatcher").setLevel(logging.ERROR)
    return weightwatcher


def ours(model) -> dict:
    return spectral.alphas(model, **spectral.WW_CONVENTION)["alpha"].to_dict()


def baseline(ww, model) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):   # WWFit prints "SMALL N PL FIT"
        details = ww.WeightWatcher(model=model).analyze()
    return dict(zip(details["longname"], details["alpha"]))


def run(repeats: int, ww) -> dict:
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None, num_classes=10).eval()
    n_eigs = spectral.alphas(model, **spectral.WW_CONVENTION)["n_eigs"].to_dict()  # warm-up
    a_ww = baseline(ww, model) if ww else {}                                       # warm-up
    t = {"ours": [], "ww": []}
    for _ in range(repeats):                                   # one of each per round
        t0 = time.perf_counter()
        a_ours = ours(model)
        t["ours"].append(time.perf_counter() - t0)
        if ww:
            t0 = time.perf_counter()
            a_ww = baseline(ww, model)
            t["ww"].append(time.perf_counter() - t0)
    layers = [{"layer": k, "n_eigs": int(n_eigs[k]), "alpha": a, "alpha_ww": a_ww.get(k),
               "rel_diff": abs(a - a_ww[k]) / abs(a_ww[k]) if k in a_ww else None}
              for k, a in a_ours.items()]
    med = {k: statistics.median(v) if v else float("nan") for k, v in t.items()}
    compared = [r["rel_diff"] for r in layers if r["n_eigs"] >= MIN_EIGS and r["rel_diff"] is not None]
    return {"repeats": repeats, "times_s": med, "raw_times_s": t, "layers": layers,
            "ratio": med["ww"] / med["ours"],
            "max_rel_alpha_diff": max(compared) if compared else float("nan"),
            "n_compared": len(compared), "ww_only_layers": sorted(set(a_ww) - set(a_ours))}


def report(r: dict) -> None:
    print(f"{'layer':22s} {'eigs':>5s} {'alpha':>9s} {'WW alpha':>9s} {'rel diff':>8s}")
    for row in r["layers"]:
        ww = "-" if row["alpha_ww"] is None else f"{row['alpha_ww']:9.4f}"
        rel = "-" if row["rel_diff"] is None else f"{row['rel_diff']:8.1e}"
        print(f"{row['layer']:22s} {row['n_eigs']:5d} {row['alpha']:9.4f} {ww:>9s} {rel:>8s}")
    s = r["times_s"]
    print(f"medians of {r['repeats']} interleaved repeats, seconds per model: ours "
          f"{s['ours']:.3f} | WeightWatcher {s['ww']:.3f} -> ratio {r['ratio']:.2f}x; max rel "
          f"alpha diff {r['max_rel_alpha_diff']:.1e} over {r['n_compared']} layers with >= "
          f"{MIN_EIGS} eigenvalues")


def rows(r: dict, ww) -> list[BenchRow]:
    case = "alphas, torchvision ResNet-18, WW convention (conv slices, KS x_min)"
    if ww is None:
        why = ("CUDA visible, WW would use float16 weights: no baseline" if torch.cuda.is_available()
               else f"WeightWatcher not installed (pip install weightwatcher=={WW_VERSION}): "
                    "no baseline")
        return [BenchRow("weightwatcher", case, "spectral.alphas",
                         f"WeightWatcher {WW_VERSION} analyze", r["times_s"]["ours"],
                         float("nan"), note=why)]
    met = "met" if r["ratio"] >= TARGET else "NOT met"
    return [BenchRow("weightwatcher", case, "spectral.alphas",
                     f"WeightWatcher {ww.__version__} analyze", r["times_s"]["ours"],
                     r["times_s"]["ww"],
                     note=f"target >= {TARGET:g}x: {met}; max rel alpha diff on layers with >= "
                          f"{MIN_EIGS} eigenvalues: {r['max_rel_alpha_diff']:.1e}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="write every number to this file")
    args = parser.parse_args()
    t0 = time.perf_counter()
    ww = load_weightwatcher()
    print(f"torch {torch.__version__}, weightwatcher {getattr(ww, '__version__', 'absent')}, "
          f"{torch.get_num_threads()} threads, {os.cpu_count()} cores, CPU, "
          f"load average {os.getloadavg()[0]:.2f}")
    res = {"torch": torch.__version__, "threads": torch.get_num_threads(), "device": "cpu",
           "weightwatcher": getattr(ww, "__version__", None),
           "load_avg_start": os.getloadavg()[0], **run(args.repeats, ww)}
    report(res)
    finish(res, t0, args.json)
    emit_rows(rows(res, ww))


if __name__ == "__main__":
    main()
