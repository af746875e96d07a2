"""What every ``make bench`` script ends with: wall time, load average and the JSON record."""

from __future__ import annotations

import json
import os
import time

from lalr_core.core.provenance import provenance


def finish(res: dict, t0: float, json_path: str | None) -> None:
    """Add the wall time since ``t0`` and the 1-min load average to ``res`` and print them; with
    ``json_path``, write ``res`` and the provenance (commit, dirty flag, versions) there."""
    res["wall_s"], res["load_avg_end"] = time.perf_counter() - t0, os.getloadavg()[0]
    print(f"total {res['wall_s']:.1f} s, load average {res['load_avg_end']:.2f}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({**res, "provenance": provenance()}, f, indent=2)
