"""What every ``make bench`` script ends with: wall time, load average and the JSON record."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass

from lalr_core.core.results.provenance import provenance


def finish(res: dict, t0: float, json_path: str | None) -> None:
    """Add the wall time since ``t0`` and the 1-min load average to ``res`` and print them; with
    ``json_path``, write ``res`` and the provenance (commit, dirty flag, versions) there."""
    res["wall_s"], res["load_avg_end"] = time.perf_counter() - t0, os.getloadavg()[0]
    print(f"total {res['wall_s']:.1f} s, load average {res['load_avg_end']:.2f}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({**res, "provenance": provenance()}, f, indent=2)


# ---------------------------------------------------------------- the one table of ratios

ROWS_ENV = "LALR_BENCH_ROWS"  # set by benchmarks/run_all.py: the JSON-lines file rows go to


@dataclass(frozen=True)
class BenchRow:
    """One row of ``make bench``'s table: ours against a baseline, measured in the same run.

    ``ours`` and ``baseline`` are costs where lower is better (seconds by default; ``unit``
    says otherwise, e.g. ``"matvecs"`` or ``"MiB"``), so ``ratio = baseline / ours`` > 1 means
    ours is cheaper.

    Args:
        bench: the script's short name (``"spectral"`` for ``bench_spectral.py``).
        case: what was measured, with its shapes (``"alphas, torchvision ResNet-18, WW conv"``).
        ours_label, baseline_label: the two variants (``"spectral.alphas"``, ``"WW analyze"``).
        ours, baseline: their costs in ``unit``.
        note: a target and whether it was met, a correctness check, or why a row is absent.
    """

    bench: str
    case: str
    ours_label: str
    baseline_label: str
    ours: float
    baseline: float
    unit: str = "s"
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.baseline / self.ours if self.ours > 0 else float("nan")


def emit_rows(rows: list[BenchRow]) -> None:
    """Print the rows and, under ``make bench`` (``$LALR_BENCH_ROWS`` set), append them to its
    table as JSON lines."""
    for r in rows:
        print(f"[row] {r.bench}: {r.case}: {r.ours_label} {r.ours:.4g} {r.unit} vs "
              f"{r.baseline_label} {r.baseline:.4g} {r.unit} -> {r.ratio:.2f}x"
              + (f" ({r.note})" if r.note else ""))
    path = os.environ.get(ROWS_ENV)
    if path:
        with open(path, "a") as f:
            for r in rows:
                f.write(json.dumps({**asdict(r), "ratio": r.ratio}) + "\n")
