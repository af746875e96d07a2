"""``make snapshot``: the latest results, committed, so a reader sees them without running.

``python -m lalr_core.snapshot`` writes, for every profile that has a REPORT.md under the
figures root (``figures/quick``, ``figures/paper``, ``figures/rehearsal/paper``, ...), into
``results/<profile>/`` (``results/rehearsal/<profile>/`` for a rehearsal):

- REPORT.md, one short line per check, and a page per chapter, ``<chapter>.md`` (every item
  with its figure, the source's claim, each check's line and its long text folded away),
  rendered afresh by HEAD's code from the run's records: ``checks.json``, the files present
  and the inventory (`lalr_core.core.results.report.write_report`). So a change that only
  presents (`PRESENTATION_PATHS`) needs no new run, only a new snapshot;
- each chapter's ``checks.json`` and tables (Markdown, CSV), ``timings.json``,
  ``placement.json`` and ``items.json`` (how many items had outputs where they were made);
- each figure's PNG, downscaled for committing (`FIGURE_PX`, `FIGURE_BYTES`: a profile's
  snapshot stays under about 8 MB), except in a rehearsal, whose numbers mean nothing: it stays
  text only and its pages say the figure is not in the snapshot. PDFs stay out.

and ``results/README.md``: one row per profile with the commit and date that made it, what
kind of numbers they are (quick, paper, rehearsal), the claim-test verdicts and the items
present, then per profile its chapters, each linked to its page. A profile not under the
figures root keeps its last snapshot.

It refuses (exit 2, nothing written) a profile whose check records were made from a dirty tree,
or at a commit whose code (`CODE_PATHS` less `PRESENTATION_PATHS`) differs from HEAD: a
snapshot is what HEAD computes. `python scripts/compare_checks.py compare results/quick
figures/quick` (``make compare``) then tells whether a fresh run reproduces it.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
from collections import Counter
from pathlib import Path

from PIL import Image

from lalr_core.core import rehearsal
from lalr_core.core.atomic_io import atomic_write_bytes, atomic_write_text
from lalr_core.core.results.inventory import default_inventory, read_inventory
from lalr_core.core.results.pages import page_name
from lalr_core.core.results.provenance import git_info, repo_root, run_git
from lalr_core.core.results.records import check_kind_of, item_records, items_present, load_checks
from lalr_core.core.results.report import write_report
from lalr_core.core.results.writer import CHECKS_FILE, default_root

KINDS = {
    "smoke": "smoke: the code path on tiny settings; no number is a result",
    "quick": "quick: reduced settings on this collection's 2-core CPU machine (each chapter "
             "states its reductions beside its figures)",
    "paper": "paper: the sources' settings, for the notebook parts that ran (on the CPU machine, "
             "some with runs trained on a GPU and read from the run cache; the rest is listed "
             "under 'Not run on this machine' in its REPORT.md)",
    "rehearsal": f"rehearsal: {rehearsal.DESCRIPTION}; no number is a result",
}
_VERDICTS = ("PASS", "FAIL", "INCONCLUSIVE", "N/A")
ITEMS_FILE = "items.json"  # the inventory's items and how many had outputs where they were made
#: what a result depends on: a record made at another commit is stale if any of these differ
CODE_PATHS = ("lalr_core", "notebooks", "pyproject.toml", "data")
#: the files under `CODE_PATHS` that only present the records (no check, table or figure
#: depends on them): a change to them leaves the records fresh, and the snapshot re-renders
PRESENTATION_PATHS = ("lalr_core/snapshot.py", "lalr_core/core/results/pages.py",
                      "lalr_core/core/results/report.py", "lalr_core/core/results/records.py",
                      "lalr_core/book.py")
FIGURE_PX = 1000  # a committed figure's longer side, at most (pixels)
FIGURE_BYTES = 40_000  # what a committed figure aims at; a dense one may stay above
_PALETTES = (None, 256, 64, 32)  # full colour, then palettes of fewer colours, until one fits


# ----------------------------------------------------------------------------- figures
def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


def downscale_png(src: Path, dst: Path) -> int:
    """Write ``src`` at most `FIGURE_PX` on its longer side, in the first of `_PALETTES`
    that fits `FIGURE_BYTES` (else the smallest); returns its size in bytes."""
    with Image.open(src) as opened:
        image = opened.convert("RGBA")
    image.thumbnail((FIGURE_PX, FIGURE_PX), Image.Resampling.LANCZOS)
    flat = Image.new("RGB", image.size, "white")  # matplotlib draws on white, and quantize
    flat.paste(image, mask=image.getchannel("A"))  # takes RGB with any method (RGBA: octree)
    best = b""
    for colours in _PALETTES:
        data = _png(flat if colours is None else flat.quantize(colours, dither=Image.Dither.NONE))
        best = data if not best or len(data) < len(best) else best
        if len(best) <= FIGURE_BYTES:
            break
    atomic_write_bytes(dst, best)
    return len(best)


# ----------------------------------------------------------------------------- one profile
def profile_dirs(figures: Path) -> dict[str, Path]:
    """Snapshot name (``quick``, ``rehearsal/paper``) -> the figures folder holding a REPORT.md."""
    found = {}
    for report in sorted(figures.glob("*/REPORT.md")) + sorted(figures.glob("rehearsal/*/REPORT.md")):
        found[str(report.parent.relative_to(figures))] = report.parent
    return found


def _item_counts(records: list[dict]) -> dict:
    """``items.json``: the items of the inventory and those with outputs, in all and per
    chapter (in the inventory's order)."""
    chapters: dict[str, dict] = {}
    for rec in records:
        counts = chapters.setdefault(rec["chapter"], {"items": 0, "present": 0})
        counts["items"] += 1
        counts["present"] += bool(rec["files"])
    return {"inventory": len(records), "present": items_present(records), "chapters": chapters}


def copy_profile(src: Path, dst: Path, *, figures: bool = True) -> None:
    """Replace ``dst`` with the snapshot of ``src``: the texts rendered from its records, its
    text outputs, and (``figures``) its PNGs downscaled."""
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    rows = read_inventory(default_inventory())
    records = item_records(src, rows)  # the files are counted where they were made
    atomic_write_text(dst / ITEMS_FILE, json.dumps(_item_counts(records)))
    for name in ("timings.json", "placement.json"):
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    chapters = {r["chapter"] for r in rows}
    for chapter in sorted(p for p in src.iterdir() if p.is_dir() and (
            p.name in chapters or (p / CHECKS_FILE).is_file())):
        files = [chapter / CHECKS_FILE, *sorted(chapter.glob("*.md")), *sorted(chapter.glob("*.csv"))]
        for f in (f for f in files if f.is_file()):
            (dst / chapter.name).mkdir(exist_ok=True)
            shutil.copy2(f, dst / chapter.name / f.name)
        for f in sorted(chapter.glob("*.png")) if figures else ():
            (dst / chapter.name).mkdir(exist_ok=True)
            downscale_png(f, dst / chapter.name / f.name)
    write_report(src.name, src, rows, out_dir=dst,
                 linked=("png", "csv", "md") if figures else ("csv", "md"))


def _verdicts(checks: list[dict]) -> dict[str, int]:
    claims = Counter(c.get("verdict") for c in checks if check_kind_of(c) == "claim")
    return {v: claims.get(v, 0) for v in _VERDICTS}


def _chapter_rows(name: str, folder: Path, checks: list[dict], items: dict | None) -> list[dict]:
    """The chapters of a copied profile (of the inventory and of its check records), by name:
    page (``None`` if it was not written), verdicts, sanity checks, items."""
    counts = (items or {}).get("chapters", {})
    rows = []
    for ch in sorted(set(counts) | {c["chapter"] for c in checks}):
        mine = [c for c in checks if c["chapter"] == ch]
        page = f"{name}/{page_name(ch)}" if (folder / page_name(ch)).is_file() else None
        n = counts.get(ch)
        rows.append({"chapter": ch, "page": page, "claims": _verdicts(mine),
                     "sanity": sum(check_kind_of(c) == "sanity" for c in mine),
                     "items": (n["present"], n["items"]) if n else None})
    return rows


def summary(name: str, folder: Path) -> dict:
    """One row of ``results/README.md`` from a copied profile folder, with its chapters."""
    checks = load_checks(folder)
    commits = sorted({(c.get("commit") or "?")[:7] + ("+" if c.get("dirty") else "")
                      for c in checks})
    dates = sorted(c["timestamp_utc"][:10] for c in checks if c.get("timestamp_utc"))
    items = json.loads((folder / ITEMS_FILE).read_text()) if (folder / ITEMS_FILE).is_file() \
        else None
    kind = "rehearsal" if name.startswith("rehearsal/") else name.split("/")[-1]
    return {"name": name, "kind": KINDS.get(kind, kind), "commits": commits,
            "dates": (dates[0], dates[-1]) if dates else ("?", "?"),
            "claims": _verdicts(checks),
            "sanity": sum(check_kind_of(c) == "sanity" for c in checks),
            "items": (items["present"], items["inventory"]) if items else None,
            "chapters": _chapter_rows(name, folder, checks, items)}


def _counts_cells(row: dict) -> str:
    """``| 1 / 1 / 1 / 0 | 0 | 2 of 173 |``: verdicts, sanity checks, items present."""
    verdicts = " / ".join(str(row["claims"][v]) for v in _VERDICTS)
    items = f"{row['items'][0]} of {row['items'][1]}" if row["items"] else "?"
    return f"| {verdicts} | {row['sanity']} | {items} |"


def _chapter_table(row: dict) -> list[str]:
    lines = ["", f"## {row['name']}: by chapter", "",
             ("| chapter (its page) | claim tests: PASS / FAIL / INCONCLUSIVE / N/A "
              "| sanity checks | items present |"), "|---|---|---|---|"]
    for ch in row["chapters"]:
        name = f"[{ch['chapter']}]({ch['page']})" if ch["page"] else ch["chapter"]
        lines.append(f"| {name} {_counts_cells(ch)}")
    return lines


def render_index(rows: list[dict]) -> str:
    """The text of ``results/README.md``."""
    lines = [
        "# Latest results",
        "",
        ("What holds and what does not, without running anything: each profile's REPORT.md "
         "(one line per check: our verdict and estimate beside the source's number), a page "
         "per chapter (every source item with its figure, the source's claim and how each "
         "check was judged) and each chapter's check records, as the last `make figures` made "
         "them. Refresh after a run with `make snapshot` (it re-renders every profile under "
         "`figures/`, with its figures downscaled; a rehearsal's stay out, text only)."),
        "",
        ("| numbers | report | made at commit | date (UTC) | claim tests: PASS / FAIL / "
         "INCONCLUSIVE / N/A | sanity checks | items present |"),
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        first, last = r["dates"]
        date = first if first == last else f"{first} to {last}"
        lines.append(f"| {r['kind']} | [{r['name']}/REPORT.md]({r['name']}/REPORT.md) | "
                     f"{', '.join(r['commits'])} | {date} {_counts_cells(r)}")
    lines += [
        "",
        ("A commit marked `+` had uncommitted changes when the numbers were made. A claim test "
         "judges a source's claim against a null or a control (PASS / FAIL only when the 95% "
         "interval lies on one side of the claim's threshold); a sanity check holds by "
         "construction. Only the `paper` rows are at the sources' scale, and only for the parts "
         "that ran; `quick` numbers are reduced; `rehearsal` numbers mean nothing."),
    ]
    for r in rows:
        lines += _chapter_table(r)
    return "\n".join(lines) + "\n"


def stale_reasons(folder: Path, repo: Path) -> list[str]:
    """Why the check records under ``folder`` are not what ``repo``'s HEAD computes: made from
    a dirty tree, at an unknown commit, or at a commit whose `CODE_PATHS` (less
    `PRESENTATION_PATHS`) differ from HEAD. Empty when they are fresh."""
    checks = load_checks(folder)
    if not checks:
        return [f"{folder} holds no check records"]
    out = []
    dirty = sorted({c.get("chapter", "?") for c in checks if c.get("dirty") is not False})
    if dirty:
        out.append(f"made from a dirty (or unknown) tree: {', '.join(dirty)}")
    head = git_info(repo, refresh=True)["commit"]
    for commit in sorted({c.get("commit") or "unknown" for c in checks} - {head}):
        changed = None if commit == "unknown" else run_git(
            repo, "diff", "--name-only", commit, "HEAD", "--", *CODE_PATHS,
            *(f":(exclude){path}" for path in PRESENTATION_PATHS))
        if changed is None:
            out.append(f"made at commit {commit[:12]}, which this repository does not hold")
        elif changed:
            files = changed.splitlines()
            out.append(f"made at commit {commit[:7]}, whose code differs from HEAD in "
                       f"{len(files)} files ({', '.join(files[:3])}{', ...' if files[3:] else ''})")
    return out


def snapshot(figures: Path, results: Path, *, repo: Path | None = None) -> list[dict]:
    """Snapshot every profile under ``figures`` into ``results`` and rewrite the index; returns
    the index rows (profiles snapshotted before and absent now are kept). With ``repo``, every
    profile must be fresh (`stale_reasons`) before anything is written.

    Raises:
        ValueError: ``figures`` holds no profile with a REPORT.md, or a profile is stale.
    """
    found = profile_dirs(figures)
    if not found:
        raise ValueError(f"no REPORT.md under {figures}/<profile>/: run `make figures` first")
    if repo is not None:
        stale = {name: stale_reasons(src, repo) for name, src in found.items()}
        stale = {name: why for name, why in stale.items() if why}
        if stale:
            raise ValueError("refusing a snapshot of outputs that HEAD did not make (commit, "
                             "then `make figures` again):\n" + "\n".join(
                                 f"  {name}: {'; '.join(why)}" for name, why in stale.items()))
    for name, src in found.items():  # a rehearsal's numbers mean nothing: no figures
        copy_profile(src, results / name, figures=not name.startswith("rehearsal/"))
    kept = profile_dirs(results)
    rows = [summary(name, folder) for name, folder in kept.items()]
    atomic_write_text(results / "README.md", render_index(rows))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", default=str(default_root()),
                        help="figures root (default $LALR_FIGURES_ROOT, else <repo>/figures)")
    parser.add_argument("--results", default=str(repo_root() / "results"))
    args = parser.parse_args(argv)
    try:
        rows = snapshot(Path(args.figures), Path(args.results), repo=repo_root())
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for r in rows:
        print(f"{r['name']}: {json.dumps(r['claims'])} at {', '.join(r['commits'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
