"""Opening a results directory lazily: ``result.json`` and the small frames now, the signals as a scan.

:func:`replay.results_io.load` reads every frame eagerly, which for a 100-node day means millions
of signal rows before anything is on screen. This reads the same files with the same checks
(format, schema version, each frame's declared schema) but leaves ``signals.parquet`` as a
:func:`polars.scan_parquet`; the overview aggregates it and the timeline filters one node. The
document-to-model mapping mirrors ``replay/results_io.py: load``, by field name, so fields the model
gains with defaults are carried without changes here.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from recordings.errors import InputError
from replay.results import (
    SCHEMA_VERSION,
    SIGNALS_SCHEMA,
    Eviction,
    Match,
    NodeResult,
    RankedPod,
    RealEviction,
    ReplayResult,
    ThresholdSetting,
)
from replay.results_io import FORMAT, FRAMES, RESULT_JSON
from tui.results_view import ResultsView

_TIMES = ("time", "first_time", "last_time")


def _parse_time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _known(cls: type, doc: dict[str, Any], **replace: Any) -> dict[str, Any]:
    """The document's keys that are fields of ``cls`` (times parsed), with ``replace`` on top."""
    names = {f.name for f in dataclasses.fields(cls)}
    out = {k: (_parse_time(v) if k in _TIMES else v) for k, v in doc.items() if k in names}
    return {**out, **replace}


def _check(root: Path, name: str) -> Path:
    f = root / f"{name}.parquet"
    try:
        schema = pl.Schema(pl.read_parquet_schema(f))
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError(f"unreadable Parquet file ({type(err).__name__}: {err})".splitlines()[0],
                         source=str(f)) from None
    if schema != FRAMES[name]:
        raise InputError(f"columns {dict(schema)} do not match the results schema", source=str(f))
    return f


def _read(f: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(f)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError(f"unreadable Parquet file ({type(err).__name__}: {err})".splitlines()[0],
                         source=str(f)) from None


def _rankings(df: pl.DataFrame) -> dict[int, tuple[RankedPod, ...]]:
    out: dict[int, list[RankedPod]] = {}
    for row in df.sort("eviction_id", "rank").iter_rows(named=True):
        out.setdefault(row["eviction_id"], []).append(RankedPod(**_known(RankedPod, row)))
    return {k: tuple(v) for k, v in out.items()}


def open_results_dir(path: str | Path, label: str | None = None) -> ResultsView:
    """A results directory as a :class:`ResultsView` whose signals are not read yet."""
    root = Path(path)
    doc_path = root / RESULT_JSON
    if not doc_path.is_file():
        raise InputError("not a results directory (no result.json)", source=str(root))
    try:
        doc = orjson.loads(doc_path.read_bytes())
    except orjson.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err})", source=str(doc_path)) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"expected format {FORMAT!r}", source=str(doc_path), field="format")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"results schema version {doc.get('schema_version')!r} is not supported (this evictlens "
                         f"reads {SCHEMA_VERSION})", source=str(doc_path), field="schema_version")
    files = {name: _check(root, name) for name in FRAMES}
    frames = {name: _read(f) for name, f in files.items() if name not in ("signals", "evictions")}
    try:
        rankings = _rankings(frames.pop("rankings"))
        evictions = tuple(
            Eviction(**_known(Eviction, e, time=_parse_time(e["time"]) or datetime.min,
                              annotations=dict(e["annotations"]), ranking=rankings.get(e["id"], ())))
            for e in doc["evictions"])
        nodes = tuple(
            NodeResult(**_known(NodeResult, n, thresholds=tuple(ThresholdSetting(**t) for t in n["thresholds"]),
                                errors=tuple(n["errors"])))
            for n in doc["nodes"])
        matches = tuple(
            Match(RealEviction(**{**m["real"], "time": _parse_time(m["real"]["time"])}), m["predicted_id"],
                  m["same_pod"], m["within_interval"], m["same_message"], m["message_diff"])
            for m in doc["matches"])
        model_frames = {f.name for f in dataclasses.fields(ReplayResult)}
        result = ReplayResult(
            recording=doc["recording"], interval_seconds=doc["interval_seconds"], settings=doc["settings"],
            nodes=nodes, evictions=evictions, matches=matches, notes=tuple(doc["notes"]),
            signals=pl.DataFrame(schema=SIGNALS_SCHEMA), schema_version=doc["schema_version"],
            **{k: v for k, v in frames.items() if k in model_frames})
    except (KeyError, TypeError) as err:
        raise InputError(f"missing or malformed field ({type(err).__name__}: {err})", source=str(doc_path)) from None
    name = label or str(result.settings.get("label") or root.name)
    return ResultsView(name, result, pl.scan_parquet(files["signals"]), str(root))
