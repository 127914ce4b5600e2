"""Reads a recording back: Parquet parts plus the intact prefix of the journal.

The replay engine asks for Summary-shaped dicts per node and tick (fed to
``replay.kubelet.api.parse_summary``) and for the pods, node object and /configz in force at
a time; analysts get polars LazyFrames over each table.  A recording whose recorder was
killed reads back up to its last finished tick: a torn journal frame is simply not there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from . import format as fmt
from .errors import RecordingError
from .journal import read_frames
from .schema import ALL_SCHEMAS, CONTAINER_STATS, NODE_STATS, POD_STATS, SERIES, VOLUME_STATS, validate_schema
from .summary_codec import EPOCH, decode, parse_time
from .writer import frame_from_columns

TimeLike = datetime | int | str


@dataclass(frozen=True)
class TickInfo:
    index: int
    time: datetime
    ok: bool
    error: str | None


def to_micros(at: TimeLike) -> int:
    if isinstance(at, datetime):
        return (at - EPOCH) // timedelta(microseconds=1)
    if isinstance(at, str):
        return parse_time(at)
    return at


class Recording:
    """A read-only view of one recording directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        mpath = root / fmt.MANIFEST
        if not mpath.is_file():
            raise RecordingError("not a recording directory (no manifest.json)", source=str(root))
        self.manifest = fmt.Manifest.from_json(mpath.read_bytes(), source=str(mpath))
        self._files: dict[str, list[Path]] = {name: [] for name in ALL_SCHEMAS}
        covered: set[int] = set()
        for first, last, part in fmt.list_parts(root):
            covered.update(range(first, last + 1))
            for name in ALL_SCHEMAS:
                f = part / f"{name}.parquet"
                if f.exists():
                    try:
                        validate_schema(name, pl.Schema(pl.read_parquet_schema(f)), source=str(f))
                    except OSError as exc:
                        raise RecordingError(f"unreadable Parquet file ({exc})", source=str(f)) from None
                    self._files[name].append(f)
        journal: dict[str, list[pl.DataFrame]] = {}
        for seq, path in fmt.list_segments(root):
            if seq in covered:
                continue
            for _end, payload in read_frames(path):
                for name, cols in payload.get("tables", {}).items():
                    if name in ALL_SCHEMAS:
                        journal.setdefault(name, []).append(frame_from_columns(name, cols))
        self._journal = {name: pl.concat(frames) for name, frames in journal.items()}
        self._cache: dict[str, pl.DataFrame] = {}

    # -- tables ---------------------------------------------------------------------------
    def scan(self, name: str) -> pl.LazyFrame:
        """All rows of one table (parts, then journal), in the declared schema."""
        schema = ALL_SCHEMAS[name]
        frames = [pl.scan_parquet(f) for f in self._files[name]]
        if name in self._journal:
            frames.append(self._journal[name].lazy())
        if not frames:
            return pl.LazyFrame(schema=schema)
        return pl.concat(frames, how="vertical")

    def scan_node_stats(self) -> pl.LazyFrame:
        return self.scan(NODE_STATS.name)

    def scan_pod_stats(self) -> pl.LazyFrame:
        return self.scan(POD_STATS.name)

    def scan_container_stats(self) -> pl.LazyFrame:
        return self.scan(CONTAINER_STATS.name)

    def scan_volume_stats(self) -> pl.LazyFrame:
        return self.scan(VOLUME_STATS.name)

    def scan_ticks(self) -> pl.LazyFrame:
        return self.scan("ticks")

    def scan_objects(self) -> pl.LazyFrame:
        return self.scan("objects")

    def scan_evictions(self) -> pl.LazyFrame:
        return self.scan("evictions")

    def _table(self, name: str) -> pl.DataFrame:
        if name not in self._cache:
            self._cache[name] = self.scan(name).collect()
        return self._cache[name]

    # -- ticks and summaries ----------------------------------------------------------------
    def nodes(self) -> list[str]:
        return sorted(self._table("ticks")["node"].unique().drop_nulls().to_list())

    def ticks(self, node: str | None = None) -> list[TickInfo]:
        df = self._table("ticks")
        if node is not None:
            df = df.filter(pl.col("node") == node)
        else:
            df = df.group_by("tick").agg(pl.col("time").first(), pl.col("ok").all(), pl.col("error").first())
        return [TickInfo(r["tick"], r["time"], r["ok"], r["error"]) for r in df.sort("tick").iter_rows(named=True)]

    def summary_at(self, node: str, tick: int) -> dict[str, Any] | None:
        """The Summary-shaped dict recorded for ``node`` at ``tick``; None for a gap."""

        def rows(name: str) -> list[dict[str, Any]]:
            df = self._table(name)
            return df.filter((pl.col("node") == node) & (pl.col("tick") == tick)).to_dicts()

        node_rows = rows(NODE_STATS.name)
        if not node_rows:
            return None
        return decode(node_rows[0], *(rows(t.name) for t in SERIES[1:]))

    def summaries(self, node: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every recorded summary of ``node`` in tick order (one pass per table)."""
        parts = {
            t.name: self._table(t.name).filter(pl.col("node") == node).partition_by("tick", as_dict=True)
            for t in SERIES
        }
        for (tick,), node_df in sorted(parts[NODE_STATS.name].items()):

            def rows(name: str, tick: Any = tick) -> list[dict[str, Any]]:
                df = parts[name].get((tick,))
                return [] if df is None else df.to_dicts()

            yield int(tick), decode(node_df.row(0, named=True), *(rows(t.name) for t in SERIES[1:]))

    # -- objects --------------------------------------------------------------------------
    def _versions(self, kind: str, at: TimeLike | None) -> pl.DataFrame:
        df = self._table("objects").filter(pl.col("kind") == kind)
        if at is not None:
            cutoff = EPOCH + timedelta(microseconds=to_micros(at))
            df = df.filter(pl.col("observed") <= cutoff)
        return df.sort("observed", maintain_order=True)

    def _latest(self, df: pl.DataFrame, key: str) -> list[dict[str, Any]]:
        last = df.group_by(key, maintain_order=True).last()
        return [orjson.loads(b) for b, d in zip(last["body"], last["deleted"], strict=True) if not d]

    def pods_at(self, node: str, at: TimeLike | None = None) -> list[dict[str, Any]]:
        """Pods bound to ``node`` and not deleted as of ``at`` (latest version of each)."""
        df = self._versions("pod", at)
        df = df.with_columns(pl.coalesce("uid", pl.col("namespace") + "/" + pl.col("name")).alias("_key"))
        return [p for p in self._latest(df, "_key") if p.get("spec", {}).get("nodeName") == node]

    def node_object_at(self, node: str, at: TimeLike | None = None) -> dict[str, Any] | None:
        found = self._latest(self._versions("node", at).filter(pl.col("name") == node), "name")
        return found[0] if found else None

    def configz(self, node: str, at: TimeLike | None = None) -> dict[str, Any] | None:
        found = self._latest(self._versions("configz", at).filter(pl.col("node") == node), "node")
        return found[0] if found else None

    def events(self) -> list[dict[str, Any]]:
        df = self._versions("event", None)
        return [orjson.loads(b) for b in df["body"]]

    def evictions(self) -> list[dict[str, Any]]:
        return self._table("evictions").sort("observed").to_dicts()

    # -- counts ---------------------------------------------------------------------------
    def count_rows(self) -> dict[str, int]:
        """Counts for the manifest and ``evictlens info``; metric_samples counts stored numbers."""
        ticks = self._table("ticks")
        counts = {
            "ticks": ticks["tick"].n_unique(),
            "nodes": ticks["node"].n_unique(),
            "gaps": int((~ticks["ok"]).sum()),
            "objects": self.scan("objects").select(pl.len()).collect().item(),
            "evictions": self.scan("evictions").select(pl.len()).collect().item(),
        }
        metric = 0
        for table in SERIES:
            values = [c for c, _k, kind, _g in table.columns() if kind == "u64"]
            frame = self.scan(table.name).select([pl.len().alias("_n"), *(pl.col(c).count() for c in values)])
            row = frame.collect().row(0)
            counts[table.name.replace("_stats", "_samples")] = int(row[0])
            metric += sum(int(v) for v in row[1:])
        counts["metric_samples"] = metric
        return counts

    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.root.rglob("*") if f.is_file())


def open_recording(path: str | Path) -> Recording:
    return Recording(Path(path))
