"""``python -m lalr_core.core.runs du|prune``: the run cache's size, and removal of its debris.

``du`` prints `RunCache.du` as a table; ``prune`` deletes what `RunCache.prune` may (entries
moved aside as corrupt, stale temporaries and locks, checkpoints of finished units) and lists
it. ``--verify`` reads every entry and checks its checksum: ``du`` counts the damaged ones apart,
``prune`` removes them (nothing valid is touched). ``--root`` defaults to the cache `RunCache()` uses (``$LALR_RUNS_ROOT`` or ``data/runs``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from lalr_core.core.runs.cache import RunCache
from lalr_core.core.runs.housekeeping import STALE_AFTER_S


def human(n_bytes: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB"):
        if n_bytes < 1024:
            return f"{n_bytes:.0f} B" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.1f} GiB"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lalr_core.core.runs",
                                     description="Size report (du) and cleanup (prune) of the "
                                     "run cache.")
    parser.add_argument("command", choices=("du", "prune"))
    parser.add_argument("--root", help="cache directory (default: $LALR_RUNS_ROOT or data/runs)")
    parser.add_argument("--min-age", type=float, default=STALE_AFTER_S, metavar="SECONDS",
                        help="a temporary unchanged this long is stale (default %(default)s)")
    parser.add_argument("--checkpoints", action="store_true",
                        help="prune: also delete checkpoints of unfinished, idle units")
    parser.add_argument("--dry-run", action="store_true", help="prune: only list")
    parser.add_argument("--verify", action="store_true",
                        help="read every entry and check its checksum (du: count the damaged "
                        "ones; prune: remove them)")
    args = parser.parse_args(argv)
    cache = RunCache(args.root, version="any")  # the version only enters keys, unused here
    if args.command == "du":
        print(cache.root)
        print(f"{'category':<22}{'count':>8}{'size':>12}")
        for category, row in cache.du(min_age_s=args.min_age, verify=args.verify).items():
            print(f"{category:<22}{row['count']:>8}{human(row['bytes']):>12}")
        return 0
    before = cache.du(min_age_s=args.min_age)["total"]["bytes"]
    removed = cache.prune(min_age_s=args.min_age, checkpoints=args.checkpoints,
                          dry_run=args.dry_run, verify=args.verify)
    for path in removed:
        print(f"{'would remove' if args.dry_run else 'removed'} {path}")
    if not args.dry_run:
        freed = before - cache.du(min_age_s=args.min_age)["total"]["bytes"]
        print(f"{len(removed)} removed, {human(max(freed, 0))} freed in {cache.root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
