"""Reads a recording back: Parquet parts plus the intact prefix of the journal.

The replay engine asks for Summary-shaped dicts per node and tick (fed to
``replay.kubelet.api.parse_summary``) and for the pods, node object and /configz in force at
a time; analysts get polars LazyFrames over each table.  A recording whose recorder was
killed reads back up to its last finished tick: a torn journal frame is simply not there.

Every part is checked against its ``checksums.json`` when the recording is opened (schema v2;
v1 parts have none and are only checked by decoding), so damage is one error naming the file
instead of whatever polars decodes.  ``skip_bad=True`` leaves damaged parts and journal frames
out instead, listing them in :attr:`Recording.skipped`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from kube.errors import RecordingError

from . import format as fmt
from .journal import next_intact, read_frame_at
from .schema import ALL_SCHEMAS, CONTAINER_STATS, NODE_STATS, SERIES, validate_schema
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


@dataclass
class SegmentRead:
    """What :func:`read_segment` found in one journal segment."""

    payloads: list[dict[str, Any]]
    valid_end: int
    """Offset just past the last intact frame (where a torn tail starts)."""
    torn: int
    """Bytes of torn tail ignored (0 when the segment ends cleanly)."""
    skipped: list[str]


def read_segment(path: Path, *, last: bool, skip_bad: bool) -> SegmentRead:
    """Read every intact frame of one journal segment, telling crash residue from damage.

    A damaged stretch with no intact frame after it, in the segment the recorder was
    appending to (``last``), is a torn tail: the tick being written when it stopped. A
    damaged frame followed by intact ones, or damage at the end of a segment the writer had
    already closed, is corruption: a :class:`RecordingError` naming the segment and byte
    offset, or, with ``skip_bad``, left out and listed in ``skipped``.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise RecordingError(f"cannot read journal segment ({exc.strerror})", source=str(path)) from None
    try:
        return _read_segment(fd, path, last=last, skip_bad=skip_bad)
    except OSError as exc:
        raise RecordingError(f"cannot read journal segment ({exc.strerror})", source=str(path)) from None
    finally:
        os.close(fd)


def _read_segment(fd: int, path: Path, *, last: bool, skip_bad: bool) -> SegmentRead:
    """read_segment on an open segment: one frame in memory at a time (journal.MAX_FRAME), and
    a damaged stretch is scanned block by block with sparse holes skipped, so a segment of any
    size (a 2 GB hole after a crash) costs no more memory than its intact frames."""
    size = os.fstat(fd).st_size
    out = SegmentRead([], 0, 0, [])
    pos = 0
    while pos < size:
        end, payload, problem = read_frame_at(fd, pos, size)
        if payload is not None:
            out.payloads.append(payload)
            pos = out.valid_end = end
            continue
        resume = next_intact(fd, pos + 1, size)
        if resume is None and last:
            out.torn = size - pos
            break
        what = f"damaged journal frame at byte {pos} ({problem})"
        what += "; intact frames follow it" if resume is not None else " at the end of a closed segment"
        if not skip_bad:
            raise RecordingError(f"{what}; pass --skip-bad to read around it", source=str(path))
        lost = (resume if resume is not None else size) - pos
        out.skipped.append(f"{path}: {what}: {lost} bytes skipped")
        if resume is None:
            break
        pos = resume
    return out


def _check_part(part: Path, *, required: bool) -> dict[str, Path]:
    """A part's Parquet files by table, after their checksums and schemas are checked."""
    fmt.verify_part(part, required=required, source=str(part))
    found: dict[str, Path] = {}
    for name in ALL_SCHEMAS:
        f = part / f"{name}.parquet"
        if f.exists():
            try:
                schema = pl.Schema(pl.read_parquet_schema(f))
            except (OSError, pl.exceptions.PolarsError) as exc:
                raise RecordingError(
                    f"unreadable Parquet file, truncated or corrupted ({_one_line(exc)})", source=str(f)
                ) from None
            validate_schema(name, schema, source=str(f))
            found[name] = f
    return found


ADMISSION_REJECTION_PREFIX = "The node had condition: "
"""eviction_manager.go: nodeConditionMessageFmt, the message of a pod refused at admission under pressure."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class Recording:
    """A read-only view of one recording directory."""

    def __init__(self, root: Path, *, skip_bad: bool = False, live_root: Path | None = None) -> None:
        self.root = root
        self.data_root = root
        """The directory whose files this Recording reads: a snapshot of ``root`` when a live writer holds ``root``
        (``live_root``). Reopen this one (parallel workers) to read exactly the same ticks."""
        self.live_root = live_root
        """The directory a live writer is writing, when this Recording reads a snapshot of it (else None)."""
        self.skip_bad = skip_bad
        self.skipped: list[str] = []
        """What ``skip_bad`` left out, one line each: a damaged part, journal frame or empty node."""
        self.notes: list[str] = []
        """How much was read when it is not everything: a torn journal tail, an unfinalized recording."""
        mpath = root / fmt.MANIFEST
        if not mpath.is_file():
            raise RecordingError("not a recording directory (no manifest.json)", source=str(root))
        self.manifest = fmt.Manifest.from_json(mpath.read_bytes(), source=str(mpath))
        self._files: dict[str, list[Path]] = {name: [] for name in ALL_SCHEMAS}
        self._tick_spans: dict[Path, tuple[int, int] | None] = {}
        covered: set[int] = set()
        self.parts: list[Path] = []
        for first, last, part in fmt.list_parts(root):
            covered.update(range(first, last + 1))  # a skipped part's segments were deleted when it was written
            try:
                found = _check_part(part, required=self.manifest.schema_version >= 2)
            except RecordingError as exc:
                if not skip_bad:
                    raise
                self.skipped.append(f"{exc.one_line()} (whole part skipped)")
                continue
            self.parts.append(part)
            for name, f in found.items():
                self._files[name].append(f)
        journal: dict[str, list[pl.DataFrame]] = {}
        segments = [(seq, path) for seq, path in fmt.list_segments(root) if seq not in covered]
        self.journal_frames = 0
        for i, (_seq, path) in enumerate(segments):
            # v1 writers left a torn tail in place when --append started a new segment
            last = i == len(segments) - 1 or self.manifest.schema_version < 2
            read = read_segment(path, last=last, skip_bad=skip_bad)
            self.skipped.extend(read.skipped)
            if read.torn:
                self.notes.append(
                    f"torn journal tail ignored: {path.name} ends in {read.torn} bytes of a partly written frame "
                    "(the tick being written when the recorder stopped)"
                )
            self.journal_frames += len(read.payloads)
            for payload in read.payloads:
                for name, cols in (payload.get("tables") or {}).items():
                    if name in ALL_SCHEMAS:
                        journal.setdefault(name, []).append(frame_from_columns(name, cols))
        self._journal = {name: pl.concat(frames) for name, frames in journal.items()}
        self._cache: dict[str, pl.DataFrame] = {}
        if live_root is not None:  # messages, results and size name the directory the user gave
            self.root = live_root
        if not self.manifest.finalized and live_root is not None:
            top = self._table("ticks")["tick"].cast(pl.Int64).max()
            self.notes.append(
                f"live recording (its recorder is writing it): read a snapshot up to the last finished tick {top!s}"
            )
        elif not self.manifest.finalized:
            top = self._table("ticks")["tick"].cast(pl.Int64).max()
            self.notes.append(
                f"unfinalized recording (its recorder or import stopped before finishing): read up to the last "
                f"finished tick {top!s}"
                if top is not None
                else "unfinalized recording with no finished tick"
            )

    # -- tables ---------------------------------------------------------------------------
    def scan(self, name: str, ticks: tuple[int, int] | None = None) -> pl.LazyFrame:
        """All rows of one table (parts, then journal), in the declared schema. ``ticks`` (first, last): only
        the part files holding a tick in that range are scanned (a small query's cost is mostly each file's
        metadata); the rows still need their own tick filter."""
        schema = ALL_SCHEMAS[name]
        files = self._files[name]
        if ticks is not None and "tick" in schema:
            files = [
                f
                for f in files
                if (span := self._tick_span(name, f)) is not None and span[0] <= ticks[1] and ticks[0] <= span[1]
            ]
        frames = [pl.scan_parquet(f) for f in files]
        if name in self._journal:
            frames.append(self._journal[name].lazy())
        if not frames:
            return pl.LazyFrame(schema=schema)
        return pl.concat(frames, how="vertical")

    def _tick_span(self, name: str, f: Path) -> tuple[int, int] | None:
        """The first and last tick of one part file (None: it has no rows), read once."""
        if f not in self._tick_spans:
            lo, hi = self._collect(
                name, pl.scan_parquet(f).select(pl.col("tick").min().alias("lo"), pl.col("tick").max().alias("hi"))
            ).row(0)
            self._tick_spans[f] = None if lo is None else (int(lo), int(hi))
        return self._tick_spans[f]

    def scan_node_stats(self) -> pl.LazyFrame:
        return self.scan(NODE_STATS.name)

    def scan_container_stats(self) -> pl.LazyFrame:
        return self.scan(CONTAINER_STATS.name)

    def scan_ticks(self) -> pl.LazyFrame:
        return self.scan("ticks")

    def scan_objects(self) -> pl.LazyFrame:
        return self.scan("objects")

    def _table(self, name: str) -> pl.DataFrame:
        if name not in self._cache:
            self._cache[name] = self._collect(name, self.scan(name))
        return self._cache[name]

    def _collect(self, name: str, frame: pl.LazyFrame) -> pl.DataFrame:
        """Collect a query over one table; a file that does not decode is a one-line error."""
        try:
            return frame.collect()
        except (OSError, pl.exceptions.PolarsError) as exc:
            files = ", ".join(str(f) for f in self._files[name]) or f"the journal of {self.root}"
            raise RecordingError(
                f"table {name} does not decode ({_one_line(exc)}); run evictlens info --verify to find the file",
                source=files,
            ) from None

    def verify(self) -> dict[str, int]:
        """Decode every Parquet file on its own (checksums were checked on open); for ``info --verify``."""
        count = 0
        for name, files in self._files.items():
            for f in files:
                try:
                    df = pl.read_parquet(f)
                except (OSError, pl.exceptions.PolarsError) as exc:
                    raise RecordingError(f"does not decode ({_one_line(exc)})", source=str(f)) from None
                validate_schema(name, df.schema, source=str(f))
                count += 1
        return {"parts": len(self.parts), "files": count, "journal_frames": self.journal_frames}

    def time_range(self) -> tuple[int | None, int | None]:
        """First and last tick time in microseconds since the epoch (None without ticks)."""
        times = self._table("ticks")["time"]
        if times.is_empty():
            return None, None
        first, last = times.min(), times.max()
        assert isinstance(first, datetime) and isinstance(last, datetime)
        return to_micros(first), to_micros(last)

    def check_replayable(self, nodes: list[str] | None = None) -> list[str]:
        """The nodes (all, or those asked for) that hold at least one summary.

        A recording with no ticks, or a node with no data (never polled, or every tick a
        gap), is a :class:`RecordingError`; with ``skip_bad`` an empty node is listed in
        :attr:`skipped` instead, and only a recording with no usable node at all is an error.
        """
        ticks = self._table("ticks")
        if ticks.is_empty():
            raise RecordingError(
                "the recording has no ticks (no Summary API response); nothing to replay", source=str(self.root)
            )
        with_data = set(
            self._collect(NODE_STATS.name, self.scan(NODE_STATS.name).select(pl.col("node").unique()))["node"]
            .drop_nulls()
            .to_list()
        )  # one column scanned: the table is never held
        usable = []
        for node in nodes or self.nodes():
            if node in with_data:
                usable.append(node)
                continue
            mine = ticks.filter(pl.col("node") == node)
            if mine.is_empty():
                why = f"node {node} has no ticks in this recording"
            else:
                error = str(mine["error"].drop_nulls().first())
                why = f"node {node} has no data: all {mine.height} of its ticks are gaps (first: {error})"
            if not self.skip_bad:
                # every node was asked for, not this one by name: say how to replay the others
                hint = "" if nodes else "; pass --skip-bad to leave it out, or --node to choose the nodes"
                raise RecordingError(why + hint, source=str(self.root))
            self.skipped.append(f"{self.root}: {why}")
        if not usable:
            raise RecordingError("no node of the recording has any data", source=str(self.root))
        return usable

    # -- ticks and summaries ----------------------------------------------------------------
    def nodes(self) -> list[str]:
        return sorted(self._table("ticks")["node"].unique().drop_nulls().to_list())

    def unfresh_pods(self) -> dict[str, tuple[int, int]]:
        """Per node, how many of its ticks with data had a stale pod list and how many had none yet (the
        recorder's notes on ``ok`` ticks under ``--kubelet-direct``, FORMAT.md §4)."""
        from recordings.recorder import PODS_MISSING, PODS_STALE

        ticks = self._table("ticks").filter(pl.col("ok") & pl.col("error").is_not_null())
        counts = ticks.group_by("node").agg(
            pl.col("error").str.starts_with(PODS_STALE).sum().alias("stale"),
            pl.col("error").str.starts_with(PODS_MISSING).sum().alias("missing"),
        )
        return {str(r[0]): (int(r[1]), int(r[2])) for r in counts.iter_rows() if r[1] or r[2]}

    def ok_ticks(self, nodes: Iterable[str]) -> int:
        """How many ticks of these nodes hold data (a replay's passes)."""
        ticks = self._table("ticks")
        return ticks.filter(pl.col("node").is_in(list(nodes)) & pl.col("ok")).height

    def ticks(self, node: str | None = None) -> list[TickInfo]:
        df = self._table("ticks")
        if node is not None:
            df = df.filter(pl.col("node") == node)
        else:
            df = df.group_by("tick").agg(pl.col("time").first(), pl.col("ok").all(), pl.col("error").first())
        return [TickInfo(r["tick"], r["time"], r["ok"], r["error"]) for r in df.sort("tick").iter_rows(named=True)]

    def summary_at(self, node: str, tick: int) -> dict[str, Any] | None:
        """The Summary-shaped dict recorded for ``node`` at ``tick``; None for a gap.

        The node and tick predicates go into each table's scan (row groups of other nodes and ticks are
        skipped by their statistics), so one moment of a cluster-day reads one node's tick, never a table."""
        node_rows = self._rows_at(NODE_STATS.name, node, tick)
        if not node_rows:
            return None
        return decode(node_rows[0], *(self._rows_at(t.name, node, tick) for t in SERIES[1:]))

    def _rows_at(self, name: str, node: str, tick: int) -> list[dict[str, Any]]:
        """One series table's rows of ``node`` at ``tick`` (a filtered scan; the cached tables are not used)."""
        wanted = (pl.col("node") == node) & (pl.col("tick") == tick)
        return self._collect(name, self.scan(name).filter(wanted)).to_dicts()

    def summaries(self, node: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every recorded summary of ``node`` in tick order (one pass per table)."""
        parts = {  # this node's rows only (pushed into the scans): memory is one node's, whatever the cluster
            t.name: self._collect(t.name, self.scan(t.name).filter(pl.col("node") == node)).partition_by(
                "tick", as_dict=True
            )
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

    def evictions(self, *, admission: bool = False) -> list[dict[str, Any]]:
        """Evicted events and pods failed with reason Evicted. A pod the eviction manager refused at admission
        carries the same reason with ``The node had condition: [...]. `` (eviction_manager.go: Admit) and is no
        eviction: left out, or alone with ``admission``."""
        refused = pl.col("message").fill_null("").str.starts_with(ADMISSION_REJECTION_PREFIX)
        rows = self._table("evictions").sort("observed")
        return rows.filter(refused if admission else ~refused).to_dicts()

    def eviction_counts(self) -> dict[str, int]:
        """Pods evicted and pods refused at admission, each once: a real eviction leaves two rows, the
        Evicted Event and the pod's Failed status (``count_rows`` counts rows)."""

        def pods(rows: list[dict[str, Any]]) -> int:
            uids = {(r.get("namespace"), r.get("name")): r["uid"] for r in rows if r.get("uid")}
            return len(
                {
                    r.get("uid")
                    or uids.get((r.get("namespace"), r.get("name")))
                    or f"{r.get('namespace')}/{r.get('name')}"
                    for r in rows
                }
            )

        return {"evictions": pods(self.evictions()), "admission_rejections": pods(self.evictions(admission=True))}

    def kernel_events(self) -> list[dict[str, Any]]:
        """What the kernel did and the nodes' Ready transitions (FORMAT.md §5 ``kernel_events``), each fact once,
        in time order; a ``SystemOOM`` row's ``kills`` is how many kills it adds to the Event's earlier versions
        (the Event's ``count`` grows when repeats are aggregated). Schema v1/v2 recordings have none."""
        from .kernel import SYSTEM_OOM, row_key

        rows = self._table("kernel_events").sort("observed", maintain_order=True).to_dicts()
        seen: set[tuple[Any, ...]] = set()
        counted: dict[Any, int] = {}
        out = []
        for row in rows:
            key = row_key(row)
            if key in seen:
                continue
            seen.add(key)
            kills = 1
            if row["kind"] == SYSTEM_OOM:
                event = row["uid"] or row["message"]
                before = counted.get(event, 0)
                count = row["count"] or 1
                if count <= before:
                    continue
                kills = count - before if before else count
                counted[event] = count
            out.append({**row, "time": row["time"] or row["observed"], "kills": kills})
        out.sort(key=lambda r: r["time"])
        return out

    # -- counts ---------------------------------------------------------------------------
    def count_rows(self) -> dict[str, int]:
        """Counts for the manifest and ``evictlens info``; metric_samples counts stored numbers."""
        ticks = self._table("ticks")
        counts = {
            "ticks": ticks["tick"].n_unique(),
            "nodes": ticks["node"].n_unique(),
            "gaps": int((~ticks["ok"]).sum()),
            "objects": self._collect("objects", self.scan("objects").select(pl.len())).item(),
            "evictions": self._collect("evictions", self.scan("evictions").select(pl.len())).item(),
        }
        kernel = self._collect("kernel_events", self.scan("kernel_events").select(pl.len())).item()
        if kernel:  # schema v3; absent from older manifests' counts, so only when there are some
            counts["kernel_events"] = kernel
        metric = 0
        for table in SERIES:
            values = [c for c, _k, kind, _g in table.columns() if kind == "u64"]
            frame = self.scan(table.name).select([pl.len().alias("_n"), *(pl.col(c).count() for c in values)])
            row = self._collect(table.name, frame).row(0)
            counts[table.name.replace("_stats", "_samples")] = int(row[0])
            metric += sum(int(v) for v in row[1:])
        counts["metric_samples"] = metric
        return counts

    def size_bytes(self) -> int:
        return fmt.dir_bytes(self.root)


def open_recording(path: str | Path, *, skip_bad: bool = False) -> Recording:
    """Open a recording; ``skip_bad`` reads around damaged parts and journal frames (see ``skipped``).

    A recording a live writer holds (``record`` still running) is read from a private snapshot up to
    its last finished tick (:mod:`recordings.snapshot`), removed once the :class:`Recording` is garbage
    collected and two newer snapshots were taken (a LazyFrame from ``open_recording(d).scan(...)`` outlives
    its Recording), or at exit; ``rec.root`` and ``rec.live_root`` are then the directory given,
    ``rec.data_root`` the snapshot."""
    from .snapshot import is_live, keep_until_unused, take_snapshot

    root = Path(path)
    if not is_live(root):
        return Recording(root, skip_bad=skip_bad)
    snap = take_snapshot(root)
    try:
        rec = Recording(snap, skip_bad=skip_bad, live_root=root)
    except BaseException:
        fmt.remove_tree(snap.parent)
        raise
    keep_until_unused(rec, snap.parent)
    return rec
