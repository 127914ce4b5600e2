"""Writing and reading a results directory (``replay/RESULTS.md``): ``result.json`` plus five Parquet files.

The directory is written next to its destination and renamed into place, so a failed or
interrupted replay never leaves half a result; files are 0600 and the directory 0700, like
recordings (results name pods and carry their messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from kube.errors import InputError
from replay.outdir import replacing_dir, write_parquet_private, write_private
from replay.results import (
    CONDITIONS_SCHEMA,
    EVICTIONS_SCHEMA,
    OVERCOMMIT_SCHEMA,
    RANKINGS_SCHEMA,
    READABLE_VERSIONS,
    SIGNALS_SCHEMA,
    Eviction,
    KernelKill,
    Match,
    NodeResult,
    RankedPod,
    ReadyTransition,
    RealEviction,
    ReplayResult,
    ThresholdSetting,
    TooFast,
    eviction_fields,
)

RESULT_JSON = "result.json"
FRAMES: Mapping[str, pl.Schema] = {
    "signals": SIGNALS_SCHEMA,
    "conditions": CONDITIONS_SCHEMA,
    "evictions": EVICTIONS_SCHEMA,
    "rankings": RANKINGS_SCHEMA,
    "overcommit": OVERCOMMIT_SCHEMA,
}
FORMAT = "evictlens-results"


def json_time(value: datetime | None) -> str | None:
    """A time as the JSON documents write it (result.json, compare.json, tune.json): RFC 3339 in UTC, ``Z``."""
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse_time(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _eviction_doc(e: Eviction) -> dict[str, Any]:
    return {
        "id": e.id,
        **eviction_fields(e),
        "time": json_time(e.time),
        "annotations": dict(e.annotations),
        "map_order_alternatives": list(e.map_order_alternatives),
    }


def _node_doc(n: NodeResult) -> dict[str, Any]:
    return {
        "node": n.node,
        "kubelet_version": n.kubelet_version,
        "version_source": n.version_source,
        "platform": n.platform,
        "dedicated_image_fs": n.dedicated_image_fs,
        "split_container_image_fs": n.split_container_image_fs,
        "topology_source": n.topology_source,
        "config_source": n.config_source,
        "settings_sources": dict(n.settings_sources),
        "thresholds": [asdict(t) for t in n.thresholds],
        "pressure_transition_period_ns": n.pressure_transition_period_ns,
        "max_pod_grace_period_s": n.max_pod_grace_period_s,
        "passes": n.passes,
        "gaps": n.gaps,
        "errors": list(n.errors),
        "reasons": dict(n.reasons),
        "first_time": json_time(n.first_time),
        "last_time": json_time(n.last_time),
        "overcommit_lead_s": dict(n.overcommit_lead_s),
        "horizon": json_time(n.horizon),
        "horizon_reason": n.horizon_reason,
        "too_fast": [_too_fast_doc(t) for t in n.too_fast],
    }


def _too_fast_doc(t: TooFast) -> dict[str, Any]:
    return {**asdict(t), "from_time": json_time(t.from_time), "to_time": json_time(t.to_time)}


def _kill_doc(k: KernelKill) -> dict[str, Any]:
    return {**asdict(k), "time": json_time(k.time)}


def _ready_doc(r: ReadyTransition) -> dict[str, Any]:
    return {**asdict(r), "time": json_time(r.time)}


def _real_doc(r: RealEviction) -> dict[str, Any]:
    return {
        "node": r.node,
        "namespace": r.namespace,
        "pod": r.pod,
        "uid": r.uid,
        "message": r.message,
        "time": json_time(r.time),
        "source": r.source,
    }


def _match_doc(m: Match) -> dict[str, Any]:
    return {
        "real": _real_doc(m.real),
        "predicted_id": m.predicted_id,
        "same_pod": m.same_pod,
        "within_interval": m.within_interval,
        "same_message": m.same_message,
        "message_diff": m.message_diff,
    }


def to_document(result: ReplayResult) -> dict[str, Any]:
    """``result.json``: everything but the frames (and the rankings, which are in ``rankings.parquet``)."""
    return {
        "format": FORMAT,
        "schema_version": result.schema_version,
        "recording": result.recording,
        "interval_seconds": result.interval_seconds,
        "settings": dict(result.settings),
        "nodes": [_node_doc(n) for n in result.nodes],
        "evictions": [_eviction_doc(e) for e in result.evictions],
        "matches": [_match_doc(m) for m in result.matches],
        "notes": list(result.notes),
        "admission_rejections": [_real_doc(r) for r in result.admission_rejections],
        "kernel_kills": [_kill_doc(k) for k in result.kernel_kills],
        "ready_transitions": [_ready_doc(r) for r in result.ready_transitions],
    }


def to_json(result: ReplayResult) -> bytes:
    return orjson.dumps(to_document(result), option=orjson.OPT_INDENT_2)


def write(result: ReplayResult, out: Path) -> None:
    """Write ``out/`` whole or not at all; an existing results directory is replaced, anything else refused."""
    with replacing_dir(Path(out), marker=RESULT_JSON, what="a results directory") as tmp:
        frames: dict[str, pl.DataFrame | pl.LazyFrame] = {
            "signals": result.signals,
            "conditions": result.conditions,
            "evictions": result.evictions_frame(),
            "rankings": result.rankings_frame(),
            "overcommit": result.overcommit,
        }
        for name, df in frames.items():
            write_parquet_private(df, tmp / f"{name}.parquet")
        write_private(tmp / RESULT_JSON, to_json(result) + b"\n")


_TIMES = ("time", "first_time", "last_time", "horizon", "from_time", "to_time")


def _fields(cls: type, doc: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    """The document's keys that are fields of ``cls`` (times parsed), with ``given`` on top: keys a later
    schema adds with defaults load without changes here."""
    names = {f.name for f in fields(cls)}
    out = {k: (_parse_time(v) if k in _TIMES else v) for k, v in doc.items() if k in names}
    return {**out, **given}


def _ranking_by_eviction(df: pl.DataFrame) -> dict[int, tuple[RankedPod, ...]]:
    out: dict[int, list[RankedPod]] = {}
    for row in df.sort("eviction_id", "rank").iter_rows(named=True):
        out.setdefault(row["eviction_id"], []).append(RankedPod(**_fields(RankedPod, row)))
    return {k: tuple(v) for k, v in out.items()}


def _frame_file(root: Path, name: str) -> Path:
    """The frame's file, its columns checked against the declared schema (without reading the data)."""
    f = root / f"{name}.parquet"
    try:
        schema = pl.Schema(pl.read_parquet_schema(f))
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError(
            f"unreadable Parquet file ({type(err).__name__}: {err})".splitlines()[0], source=str(f)
        ) from None
    if schema != FRAMES[name]:
        raise InputError(f"columns {dict(schema)} do not match the results schema", source=str(f))
    return f


def _read_frame(f: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(f)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise InputError(
            f"unreadable Parquet file ({type(err).__name__}: {err})".splitlines()[0], source=str(f)
        ) from None


def load(path: str | Path, *, signals: bool = True) -> ReplayResult:
    """Read a results directory back into the model (every frame checked against its declared schema).

    The signals and overcommit frames stay lazy scans of their files (checked against their schemas here), so a
    100-node day opens in well under a second; ``signals`` is kept for callers of the earlier signature.
    """
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
    if doc.get("schema_version") not in READABLE_VERSIONS:
        raise InputError(
            f"results schema version {doc.get('schema_version')!r} is not supported (this evictlens "
            f"reads {', '.join(map(str, READABLE_VERSIONS))})",
            source=str(doc_path),
            field="schema_version",
        )
    files = {name: _frame_file(root, name) for name in FRAMES}
    frames = {name: _read_frame(f) for name, f in files.items() if name not in LAZY}
    try:
        rankings = _ranking_by_eviction(frames["rankings"])
        evictions = tuple(
            Eviction(
                **_fields(
                    Eviction,
                    e,
                    annotations=dict(e["annotations"]),
                    ranking=rankings.get(e["id"], ()),
                    impact=e.get("impact") or "",
                    map_order_alternatives=tuple(e.get("map_order_alternatives") or ()),
                )
            )
            for e in doc["evictions"]
        )
        nodes = tuple(
            NodeResult(
                **_fields(
                    NodeResult,
                    n,
                    thresholds=tuple(ThresholdSetting(**t) for t in n["thresholds"]),
                    errors=tuple(n["errors"]),
                    overcommit_lead_s=dict(n.get("overcommit_lead_s") or {}),
                    too_fast=tuple(TooFast(**_fields(TooFast, t)) for t in n.get("too_fast") or ()),
                )
            )
            for n in doc["nodes"]
        )
        matches = tuple(
            Match(**_fields(Match, m, real=RealEviction(**_fields(RealEviction, m["real"])))) for m in doc["matches"]
        )
        refused = tuple(RealEviction(**_fields(RealEviction, r)) for r in doc.get("admission_rejections") or ())
        kills = tuple(KernelKill(**_fields(KernelKill, k)) for k in doc.get("kernel_kills") or ())
        ready = tuple(ReadyTransition(**_fields(ReadyTransition, r)) for r in doc.get("ready_transitions") or ())
    except (KeyError, TypeError) as err:
        raise InputError(f"missing or malformed field ({type(err).__name__}: {err})", source=str(doc_path)) from None
    return ReplayResult(
        recording=doc["recording"],
        interval_seconds=doc["interval_seconds"],
        settings=doc["settings"],
        nodes=nodes,
        evictions=evictions,
        matches=matches,
        notes=tuple(doc["notes"]),
        signals=pl.scan_parquet(files["signals"]),
        conditions=frames["conditions"],
        schema_version=doc["schema_version"],
        overcommit=pl.scan_parquet(files["overcommit"]),
        admission_rejections=refused,
        kernel_kills=kills,
        ready_transitions=ready,
    )


LAZY = ("signals", "overcommit")
"""The frames that grow with nodes × passes: scanned, never read whole."""


def signals_scan(path: str | Path) -> pl.LazyFrame:
    """``signals.parquet`` of a results directory as a lazy scan (its schema checked)."""
    return pl.scan_parquet(_frame_file(Path(path), "signals"))
