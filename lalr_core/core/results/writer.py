"""House plotting style, the thesis's Tufte box plot, and saving with provenance.

Every chapter notebook saves through :class:`FigureWriter`, which writes
``<root>/<profile>/<chapter>/<item_id>.png|.pdf|.csv|.md`` plus a ``.json`` sidecar
(git commit, dirty flag, versions, device, parameter hash, seeds, wall time) and records
the notebook's checks of the source's claims in ``checks.json``; :mod:`lalr_core.core.results.report`
turns those into ``REPORT.md``. See DESIGN.md, "Runs, cache and provenance".

Serves every chapter; :func:`bplot` is seed 004 listing B.1 (Fig 1.2) and is used for
Figs 5.10, 5.11, I.1 and I.2.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from lalr_core.core import progress, rehearsal
from lalr_core.core.atomic_io import atomic_write, atomic_write_text, canonical_json
from lalr_core.core.loop.config import check_profile
from lalr_core.core.results.claims import (
    Claim,
    Finding,
    ItemFindings,
    bool_refusal,
    check_kind,
    underpowered,
)
from lalr_core.core.results.evidence import Evidence, replicates_needed
from lalr_core.core.results.inventory import inventory_items
from lalr_core.core.results.provenance import (
    compute_environment,
    git_info,
    provenance,
    repo_root,
    utc_timestamp,
)
from lalr_core.core.runs import param_hash as run_key

# Item ids become file names: letters, digits, '.', '_', '-', '+'; no path separators.
_ITEM_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


CHECKS_FILE = "checks.json"


_RESERVED_ITEM_IDS = ("checks",)  # `checks.json` is the checks file, not a sidecar


# ----------------------------------------------------------------------------- validation
def validate_profile(profile: str) -> str:
    """Return ``profile`` if it is one of ``lalr_core.core.loop.config.PROFILES``, else raise.

    Raises:
        ValueError: naming the unknown profile and the choices.
    """
    return check_profile(profile)


def validate_item_id(item_id: str, what: str = "item_id") -> str:
    """Return ``item_id`` if it is a safe file stem (no path separators), else raise.

    Raises:
        ValueError: if empty, not a string, containing ``/`` or ``\\`` or other
            characters outside ``[A-Za-z0-9._+-]``, starting with ``.``, or reserved.
    """
    if not isinstance(item_id, str) or not _ITEM_ID_RE.fullmatch(item_id):
        raise ValueError(
            f"bad {what} {item_id!r}: use a non-empty name of letters, digits, '.', '_', "
            "'-', '+', not starting with '.', and no path separators"
        )
    if item_id in _RESERVED_ITEM_IDS:
        raise ValueError(f"{what} {item_id!r} is reserved")
    return item_id


# ----------------------------------------------------------------------------- JSON helpers
def _jsonable(obj):
    """``json`` default hook of the sidecars and checks (readable records, not hashed): numpy,
    paths, sets, dataclasses, torch dtypes/devices. Hashes use `atomic_io.canonical_json`."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if type(obj).__module__.startswith("torch") and type(obj).__name__ in ("dtype", "device"):
        return str(obj)
    raise ValueError(f"cannot serialise {type(obj).__name__} value {obj!r} to JSON")


def param_hash(params: dict | None) -> str:
    """The parameter hash of ``params`` (``lalr_core.core.runs.param_hash`` without a code
    part; ``None`` counts as ``{}``): the ``param_hash`` in the meta.json of the cached runs
    drawn from the same parameters, so a sidecar names them."""
    return run_key({} if params is None else params)


# ----------------------------------------------------------------------------- tables
def _cell(value, floatfmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = ""
    elif isinstance(value, (float, np.floating)):
        text = format(float(value), floatfmt)
    else:
        text = str(value)
    return text.replace("|", r"\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """GitHub Markdown table of ``df`` (header, separator, one line per row).

    Numeric columns are right-aligned; floats use ``format(value, floatfmt)``; missing
    values are empty cells. The index is not written (reset it first to keep it).
    """
    cols = [str(c) for c in df.columns]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]
    lines = ["| " + " | ".join(_cell(c, floatfmt) for c in cols) + " |"]
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    for row in df.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(_cell(v, floatfmt) for v in row) + " |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- writer
REHEARSAL_MARK = "REHEARSAL"  # on every figure a rehearsal saves (`lalr_core.core.rehearsal`)


def _rehearsal_mark() -> dict:
    """``{"rehearsal": True}`` in a rehearsal (sidecars and check records), else nothing."""
    return {"rehearsal": True} if rehearsal.active() else {}


FIGURES_ENV = "LALR_FIGURES_ROOT"  # the driver's --out, inherited by the notebook kernels


def default_root() -> Path:
    """``$LALR_FIGURES_ROOT`` if set, else ``<repo>/figures``."""
    return Path(os.environ[FIGURES_ENV]) if os.environ.get(FIGURES_ENV) else repo_root() / "figures"


class FigureWriter:
    """Saves one chapter's figures, tables and checks under ``<root>/<profile>/<chapter>/``.

    Args:
        chapter: chapter folder name, e.g. ``"04_directedness"``.
        profile: one of ``lalr_core.core.loop.config.PROFILES`` (smoke, quick, paper).
        notebook: the notebook's file name (recorded in every sidecar and check).
        root: output root; defaults to ``$LALR_FIGURES_ROOT`` (set by ``make figures``'s
            ``--out``) or ``<repo>/figures``.

    Raises:
        ValueError: unknown profile, or a chapter name that is not a safe folder name.
    """

    def __init__(self, chapter: str, profile: str, notebook: str, root=None, *,
                 fresh_checks: bool = True):
        """``fresh_checks`` drops the chapter's earlier check records, so a re-executed
        notebook's report holds exactly the checks of this run (none left from renamed claims)."""
        self.chapter = validate_item_id(chapter, "chapter")
        self.profile = validate_profile(profile)
        if not isinstance(notebook, str) or not notebook:
            raise ValueError(f"notebook must be a non-empty string, got {notebook!r}")
        self.notebook = notebook
        self.root = Path(root) if root is not None else default_root()
        self.dir = self.root / profile / chapter
        self._saved: set[str] = set()
        self._inventory: set[str] | None = None  # read once, when a terminal follows progress
        if fresh_checks:
            self.checks_path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"FigureWriter({self.chapter!r}, {self.profile!r}, {self.notebook!r}, {self.dir})"

    def path(self, item_id: str, suffix: str) -> Path:
        """Output path ``<dir>/<item_id>.<suffix>`` (``item_id`` validated)."""
        return self.dir / f"{validate_item_id(item_id)}.{suffix}"

    def _sidecar(self, item_id, kind, files, params, seeds, note, wall_time_s) -> Path:
        ok = isinstance(wall_time_s, (int, float)) and math.isfinite(wall_time_s)
        if wall_time_s is not None and not (ok and wall_time_s >= 0):
            raise ValueError(f"wall_time_s must be a finite number >= 0, got {wall_time_s!r}")
        record = provenance(
            chapter=self.chapter, notebook=self.notebook, profile=self.profile,
            item_id=item_id, kind=kind, files=[p.name for p in files],
            param_hash=param_hash(params), params=params, seeds=seeds,
            wall_time_s=wall_time_s, note=note, **_rehearsal_mark(),
        )
        text = json.dumps(record, indent=2, sort_keys=False, default=_jsonable) + "\n"
        path = self.path(item_id, "json")
        atomic_write_text(path, text)
        return path

    def savefig(self, fig, item_id: str, *, params=None, seeds=None, wall_time_s=None,
                note=None) -> dict[str, Path]:
        """Save ``fig`` as PNG and PDF with the commit in their metadata, plus a sidecar.

        Args:
            fig: matplotlib ``Figure`` (left open, so the notebook still shows it).
            item_id: the source's item, e.g. ``"fig3.7A"``; the file stem.
            params: the resolved parameters behind the figure (hashed and stored).
            seeds: the seeds used (stored).
            wall_time_s: compute time behind the figure, seconds.
            note: free text (e.g. a deviation from the source).

        Returns:
            ``{"png": path, "pdf": path, "json": path}``.

        Raises:
            ValueError: bad ``item_id``, ``wall_time_s``, or non-JSON ``params``/``seeds``.
        """
        validate_item_id(item_id)
        canonical_json({"params": params, "seeds": seeds})  # fail before writing anything
        if rehearsal.active() and not any(t.get_text() == REHEARSAL_MARK for t in fig.texts):
            fig.text(0.5, 0.5, REHEARSAL_MARK, ha="center", va="center", rotation=30,
                     fontsize=40, color="red", alpha=0.25)
        git = git_info()
        tag = f"commit={git['commit']}; dirty={git['dirty']}"
        about = f"{self.profile}/{self.chapter}/{item_id}; param_hash={param_hash(params)}"
        meta = {
            "png": {"Title": item_id, "Commit": git["commit"], "Dirty": str(git["dirty"]),
                    "Source": self.notebook, "Comment": f"{tag}; {about}"},
            "pdf": {"Title": item_id, "Subject": f"{tag}; {about}",
                    "Keywords": tag, "Creator": f"lalr_core; {self.notebook}"},
        }
        out = {}
        for fmt in ("png", "pdf"):
            out[fmt] = self.path(item_id, fmt)
            atomic_write(out[fmt], lambda tmp, f=fmt: fig.savefig(tmp, format=f, metadata=meta[f]))
        out["json"] = self._sidecar(item_id, "figure", [out["png"], out["pdf"]], params, seeds,
                                    note, wall_time_s)
        self._progress(item_id)
        return out

    def save_table(self, df: pd.DataFrame, item_id: str, *, params=None, seeds=None, note=None,
                   floatfmt: str = ".4g", wall_time_s=None) -> dict[str, Path]:
        """Save ``df`` as CSV (full precision) and Markdown (``floatfmt``), plus a sidecar.

        A non-default index (named, or not ``0..n-1``) is written as leading column(s).

        Returns:
            ``{"csv": path, "md": path, "json": path}``.

        Raises:
            ValueError: ``df`` not a ``DataFrame``, bad ``item_id``, non-JSON params.
        """
        if not isinstance(df, pd.DataFrame):
            msg = f"save_table needs a pandas DataFrame, got {type(df).__name__}"
            raise ValueError(msg)  # noqa: TRY004 - bad user input is a ValueError here
        validate_item_id(item_id)
        canonical_json({"params": params, "seeds": seeds})
        default_index = df.index.equals(pd.RangeIndex(len(df))) and df.index.name is None
        table = df if default_index else df.reset_index()
        out = {"csv": self.path(item_id, "csv"), "md": self.path(item_id, "md")}
        atomic_write(out["csv"], lambda tmp: table.to_csv(tmp, index=False))
        atomic_write_text(out["md"], markdown_table(table, floatfmt))
        out["json"] = self._sidecar(item_id, "table", [out["csv"], out["md"]], params, seeds,
                                    note, wall_time_s)
        self._progress(item_id)
        return out

    def _progress(self, item_id: str) -> None:
        """A line in ``make figures``' terminal: which item, and how many of the chapter's
        inventory items are saved (items of ours that the sources do not have, apart)."""
        self._saved.add(item_id)
        if progress.stream() is None:  # no terminal follows this notebook
            return
        if self._inventory is None:
            self._inventory = inventory_items(self.chapter)
        extra = len(self._saved - self._inventory)  # items of ours, not the sources'
        progress.note(f"[{self.profile}/{self.chapter}] saved {item_id} "
                      f"({len(self._saved & self._inventory)} of {len(self._inventory)} items"
                      + (f", {extra} of ours)" if extra else ")"))

    # ------------------------------------------------------------------------- checks
    @property
    def checks_path(self) -> Path:
        """``<dir>/checks.json``."""
        return self.dir / CHECKS_FILE

    def checks(self) -> list[dict]:
        """All check records of this chapter and profile, in the order first recorded."""
        return read_checks(self.checks_path)

    def check(self, item_id: str, claim: str, passed, *, kind: str, detail: str = "",
              ours=None, source=None, quote: str = "", name_method: bool = False,
              source_effect: float | None = None, replicate: str = "",
              null: str = "", replicates: int | None = None) -> dict:
        """Record whether the source's ``claim`` held for ``item_id``; never raises on FAIL.

        Re-running with the same ``(item_id, claim)`` replaces the earlier record, so a
        re-executed notebook does not duplicate its checks.

        Args:
            item_id: the source's item, e.g. ``"fig3.11"``.
            claim: the claim tested, one line (e.g. "psi tracks 1/sqrt(t) within 5%").
            kind: ``"claim"`` (a claim test: the source's claim judged against a null or a
                control, able to FAIL) or ``"sanity"`` (holds by construction; not counted as
                a verdict). See `lalr_core.core.results.claims`.
            passed: ``True`` (PASS), ``False`` (FAIL), ``None`` (N/A: not testable here),
                or an `lalr_core.core.results.evidence.Evidence`, whose interval decides PASS, FAIL
                or INCONCLUSIVE and is stored with the record (``interval``). Use evidence
                for every comparison of accuracies or losses between runs.
            detail: how it was judged; required when ``passed`` is ``None``.
            ours: our number(s) (JSON-serialisable).
            source: the source's number(s) (JSON-serialisable).
            quote: the source's own sentence behind the claim, verbatim (REPORT.md shows it
                beside ours, so a reader sees what was claimed and what was tested).
            name_method: append the evidence's ``method`` (which interval, or which part of a
                claim over several parts decided it) to ``detail``; REPORT.md prints the
                interval itself, not how it was made.
            source_effect: the source's own effect in the estimate's unit, if it reports
                one; stored with the interval's half-width (the smallest effect this profile
                can decide), and the record says whether the profile is underpowered for it.
            replicate: what one independent replicate of the claim is; the record holds it
                with the evidence's count of replicates (``replicates``), why an interval may
                not decide (``refusal``: too few replicates, zero width), and how many
                replicates would decide the source's effect from the spread measured
                (``replicates_needed``, `lalr_core.core.results.evidence.replicates_needed`).
            null: what the claim is judged against where the effect is absent.
            replicates: for a bool, the independent replicates it holds over; a claim test's
                bool decides PASS / FAIL only on >= 3 of them or where ``replicate`` is
                `lalr_core.core.results.claims.DETERMINISTIC`, else it is INCONCLUSIVE
                (`lalr_core.core.results.claims.bool_refusal`).

        Returns:
            The stored record (``verdict`` is one of `lalr_core.core.results.evidence.VERDICTS`;
            ``passed`` is None unless PASS or FAIL).

        Raises:
            ValueError: bad ``item_id``, empty ``claim``, ``passed`` not a bool or ``None``,
                ``None`` without ``detail``, or non-JSON ``ours``/``source``.
        """
        validate_item_id(item_id)
        check_kind(kind)
        if not isinstance(claim, str) or not claim.strip():
            raise ValueError(f"claim must be a non-empty string, got {claim!r}")
        if source_effect is not None and not math.isfinite(source_effect):
            raise ValueError(f"source_effect must be a finite number, got {source_effect!r}")
        if name_method and isinstance(passed, Evidence):
            detail = "; ".join(x for x in (str(detail), passed.method) if x)
        interval, power = None, {}
        replication = {"replicate_unit": str(replicate), "null": str(null), "replicates": None}
        if isinstance(passed, Evidence):
            interval = passed.as_record()
            verdict = passed.claim_verdict if kind == "claim" else passed.verdict
            power = {"half_width": passed.half_width if math.isfinite(passed.half_width)
                     else None,
                     "underpowered": underpowered(passed, source_effect)}
            replication.update(
                replicates=passed.replicates, replicate_unit=str(replicate) or passed.unit,
                refusal=passed.refusal, interval_verdict=passed.verdict,
                replicates_needed=replicates_needed(passed, source_effect))
            passed = {"PASS": True, "FAIL": False}.get(verdict)
        else:
            if isinstance(passed, np.bool_):
                passed = bool(passed)
            if passed is not None and not isinstance(passed, bool):
                raise ValueError(f"passed must be True, False, None or Evidence, got {passed!r}")
            if passed is None and not str(detail).strip():
                raise ValueError("passed=None (N/A) needs a detail saying why")
            verdict = {True: "PASS", False: "FAIL", None: "N/A"}[passed]
            refusal = bool_refusal(str(replicate), replicates) \
                if kind == "claim" and passed is not None else ""
            replication.update(replicates=replicates, refusal=refusal)
            if refusal and passed is not None:
                replication["interval_verdict"] = verdict
                verdict, passed = "INCONCLUSIVE", None
        record = {
            "item_id": item_id, "claim": claim, "kind": kind, "verdict": verdict,
            "passed": passed, "detail": str(detail), "ours": ours, "source": source,
            "interval": interval, "source_effect": source_effect, **power, **replication,
            "quote": str(quote),
            "chapter": self.chapter, "notebook": self.notebook, "profile": self.profile,
            **_rehearsal_mark(), **git_info(), "environment": compute_environment(),
            "timestamp_utc": utc_timestamp(),
        }
        record = json.loads(json.dumps(record, default=_jsonable))  # normalise numpy etc.
        records = self.checks()
        key = (item_id, claim)
        index = next((i for i, r in enumerate(records) if (r["item_id"], r["claim"]) == key), None)
        if index is None:
            records.append(record)
        else:
            records[index] = record
        atomic_write_text(self.checks_path, json.dumps(records, indent=2) + "\n")
        return record

    def check_claim(self, claim: Claim, passed, *, detail: str = "", **kwargs) -> dict:
        """`check` of a claim kept as data (`lalr_core.core.results.claims.Claim`): its item,
        text, kind, quote and source effect come from ``claim``; the evidence's method is
        named in the detail.

        Raises:
            ValueError: evidence judged against another threshold or side than the claim's.
        """
        if isinstance(passed, Evidence) and claim.side is not None and (
                passed.side, passed.threshold) != (claim.side, claim.threshold):
            raise ValueError(
                f"claim {claim.id} is judged {claim.side} {claim.threshold}, but its evidence "
                f"is judged {passed.side} {passed.threshold}: use claim.judge(evidence)")
        return self.check(claim.item, claim.text, passed, kind=claim.kind, detail=detail,
                          quote=claim.quote, name_method=True,
                          source_effect=claim.source_effect, replicate=claim.replicate,
                          null=claim.null, **kwargs)

    def record(self, claim: Claim, finding: Finding, **kwargs) -> dict:
        """Record ``finding`` (what a claim's function found) as ``claim``'s check."""
        if finding.replicates is not None:
            kwargs.setdefault("replicates", finding.replicates)
        return self.check_claim(claim, finding.evidence, detail=finding.detail,
                                ours=finding.ours, **kwargs)

    def record_all(self, claims: Mapping[str, Claim], item: ItemFindings,
                   **per_claim: dict) -> ItemFindings:
        """Record each finding of ``item`` under its claim in ``claims`` (``per_claim``: a
        claim id -> extra keyword arguments of `check`, e.g. ``source=``); returns ``item``.

        Raises:
            ValueError: a finding for a claim ``claims`` does not hold (before recording any).
        """
        unknown = sorted(set(item.findings) - set(claims))
        if unknown:
            raise ValueError(f"findings for unknown claims: {unknown}")
        for cid, finding in item.findings.items():
            self.record(claims[cid], finding, **per_claim.get(cid, {}))
        return item


def read_checks(path) -> list[dict]:
    """Check records stored at ``path`` (``[]`` if the file does not exist).

    Raises:
        ValueError: if the file is not a JSON list of records.
    """
    path = Path(path)
    if not path.exists():
        return []
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"corrupt checks file {path}: {err}") from err
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"checks file {path} is not a JSON list of records")
    return records
