"""Writes a recording: one durable journal frame per tick, folded into Parquet parts.

Why this shape: the journal makes every finished tick durable with one small fsync, and the
fold turns the journal into compact, sorted, zstd Parquet without ever rewriting a file in
place.  A part directory is written under a temporary name and renamed, and the journal
segments it covers are deleted only afterwards, so a crash at any point leaves each tick in
exactly one readable place (see :func:`recordings.format.list_parts`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import polars as pl

from kube.errors import RecordingError

from . import format as fmt
from . import kernel
from . import retention as ret
from .journal import JournalWriteError, JournalWriter
from .redact import REDACTORS
from .schema import ALL_SCHEMAS, SERIES, SORT_KEYS, TIME, validate_schema
from .summary_codec import Columns, empty_columns, encode, parse_time

# Fold the journal into Parquet every hour of 60 s ticks / 10 min of 10 s ticks; the
# environment override exists so the crash tests can kill the recorder mid-fold.
FOLD_EVERY_TICKS = int(os.environ.get("EVICTLENS_FOLD_EVERY_TICKS", "60"))
FOLD_ROWS = 400_000
# Final compaction sorts one batch of rows at a time, each at most this many bytes once decoded
# (estimated from row counts and string lengths, FORMAT.md §3 "Compaction"); the environment
# override exists so a test can finalize a recording many times larger than a batch quickly.
COMPACT_BATCH_BYTES = int(os.environ.get("EVICTLENS_COMPACT_BATCH_BYTES", str(64 << 20)))
# Compaction is skipped unless the disk has room for a second copy of the parts plus this,
# and for parts larger than COMPACT_LIMIT_BYTES (no limit: memory no longer grows with them;
# a generator sets -1 to keep its time-ordered parts).
COMPACT_DISK_SLACK = 64 << 20
COMPACT_LIMIT_BYTES = sys.maxsize


RESTARTED = "recorder restarted"
"""Start of the ``error`` of the gap tick a resumed recorder writes for the time it was not running (FORMAT.md §3.3)."""

_U64_COLUMNS = {t.name: [c for c, _k, kind, _g in t.columns() if kind == "u64"] for t in SERIES}


def now_micros() -> int:
    return time.time_ns() // 1000


def frame_from_columns(name: str, cols: Mapping[str, list[Any]]) -> pl.DataFrame:
    """Journal columns (times as integer microseconds) → a DataFrame with the table's schema."""
    schema = ALL_SCHEMAS[name]
    raw = {c: (pl.Int64() if t == TIME else t) for c, t in schema.items()}
    df = pl.DataFrame({c: cols.get(c, []) for c in schema}, schema=raw, strict=False)
    return df.with_columns(pl.col(c).cast(TIME) for c, t in schema.items() if t == TIME)


def _empty_tables() -> dict[str, Columns]:
    out = {t.name: empty_columns(t) for t in SERIES}
    for name in ("ticks", "objects", "evictions", "kernel_events", "raw"):
        out[name] = {c: [] for c in ALL_SCHEMAS[name]}
    return out


@dataclass
class Tick:
    """One poll of every node; committed as a single journal frame."""

    index: int
    time: int
    tables: dict[str, Columns] = field(default_factory=_empty_tables)

    def add_summary(self, node: str, summary: Mapping[str, Any], *, scraped: int, source: str = "") -> int:
        """Encode a whole summary or nothing (a bad one leaves no partial rows); returns the
        number of metric samples (non-null numbers) stored."""
        staged = {t.name: empty_columns(t) for t in SERIES}
        try:
            encode(summary, tick=self.index, node=node, scraped=scraped, into=staged)
        except RecordingError as exc:
            raise exc.within(source=source or f"summary of node {node}") from None
        samples = 0
        for table in SERIES:
            cols = staged[table.name]
            for col, values in cols.items():
                self.tables[table.name][col].extend(values)
            for col in _U64_COLUMNS[table.name]:
                samples += len(cols[col]) - cols[col].count(None)
        self._mark(node, None)
        return samples

    def add_gap(self, node: str, error: str) -> None:
        self._mark(node, error)

    def _mark(self, node: str, error: str | None) -> None:
        cols = self.tables["ticks"]
        for col, value in (
            ("tick", self.index),
            ("time", self.time),
            ("node", node),
            ("ok", error is None),
            ("error", error),
        ):
            cols[col].append(value)

    def add_raw(self, node: str | None, endpoint: str, body: bytes | str, *, observed: int) -> None:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        cols = self.tables["raw"]
        for col, value in (("observed", observed), ("node", node), ("endpoint", endpoint), ("body", text)):
            cols[col].append(value)


class RecordingWriter:
    """Owns a recording directory while recording or importing into it."""

    def __init__(
        self, root: Path, manifest: fmt.Manifest, *, append: bool = False, retain: float | None = None
    ) -> None:
        self.root = root
        self.manifest = manifest
        self._pending: dict[str, list[pl.DataFrame]] = {}
        self._pending_rows = 0
        self._pending_ticks = 0
        self._first_unfolded: int | None = None
        self._loose = _empty_tables()
        self._last_hash: dict[tuple[str, str], bytes] = {}
        self.next_tick = 0
        self._pending_first: int | None = None  # time of the first tick not yet folded
        self.ticks_written = 0
        self.last_tick: int | None = None  # the last tick made durable (journal or part)
        self.fold_every, self.fold_rows = FOLD_EVERY_TICKS, FOLD_ROWS
        self.compact_batch_bytes = COMPACT_BATCH_BYTES
        # -- the rolling window (record --retain, FORMAT.md §3.3); plain attributes the metrics read --
        self.retain_micros = None if retain is None else int(retain * 1_000_000)
        self.bytes_on_disk = 0  # bytes the recording's files take, after the last commit
        self.window_first: int | None = None  # time of the first tick kept (µs since the epoch)
        self.window_last: int | None = None  # time of the last finished tick (µs since the epoch)
        self.window_shrinks = 0  # times the disk was full and the oldest part went before its time
        self.parts_dropped = 0  # parts that left the window (by age or for space)
        self.resumed = False  # this writer continues a recording (--append, or --retain on a used directory)
        self.on_shrink: Callable[[str], None] = _say
        self._spans: dict[str, ret.PartSpan] = {}
        self._base_bytes = 0
        self._resumed_objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._seen: set[tuple[str, str]] = set()
        if root.exists() and not root.is_dir():
            raise RecordingError("exists and is not a directory; choose a new directory", source=str(root))
        self._lock: fmt.WriterLock | None = None
        created: list[Path] = []
        try:
            created += fmt.make_private_dir(root)
            self._lock = fmt.WriterLock.acquire(root)  # before looking: another writer may be creating it
            existing = (root / fmt.MANIFEST).exists()
            if existing and not append:
                raise RecordingError("already holds a recording; pass --append to add to it", source=str(root))
            if not existing and any(p.name != fmt.LOCK for p in root.iterdir()):
                raise RecordingError("directory is not empty and holds no recording", source=str(root))
            for sub in (fmt.JOURNAL_DIR, fmt.PARTS_DIR):
                created += fmt.make_private_dir(root / sub)
            if existing:
                self._recover()
            else:
                self.manifest.start_time = self.manifest.start_time or _iso(now_micros())
                created.append(root / fmt.MANIFEST)
                self.write_manifest()
            segments = fmt.list_segments(root)
            self._segment = (max(s for s, _ in segments) + 1) if segments else self._next_after_parts()
            segment = root / fmt.JOURNAL_DIR / fmt.segment_name(self._segment)
            created.append(segment)
            self._journal = JournalWriter(segment)
        except fmt.RecordingBusyError:
            raise  # nothing here is ours to undo: the holder may be using all of it
        except BaseException as exc:
            self._undo_creation(created)
            if isinstance(exc, OSError):
                problem = "disk full" if fmt.is_out_of_space(exc) else "cannot write"
                appending = (root / fmt.MANIFEST).exists()  # still there after the undo: --append
                doing = "opening the recording to append" if appending else "creating the recording"
                raise RecordingError(
                    f"{problem} while {doing} ({exc.strerror}); removed what this command had created, so the "
                    "same command can be run again once there is room",
                    source=str(root),
                ) from None
            raise
        self._created = created  # what discard() removes if no tick gets written
        self.bytes_on_disk = fmt.dir_bytes(root)
        if self._first_unfolded is None:
            self._first_unfolded = self._segment

    def _undo_creation(self, created: list[Path]) -> None:
        """Remove what a failed start created (newest first) and drop the lock: a retry then
        finds the disk as it was."""
        for path in reversed(created):
            if path.name == fmt.MANIFEST:
                fmt.remove_quietly(path.with_name(fmt.MANIFEST + ".tmp"))
            if path.is_dir() and not path.is_symlink():
                if path == self.root:
                    fmt.remove_quietly(path / fmt.LOCK)
                fmt.remove_tree(path)
            else:
                fmt.remove_quietly(path)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # -- recovery -------------------------------------------------------------------------
    def _next_after_parts(self) -> int:
        parts = fmt.list_parts(self.root)
        return (max(last for _, last, _ in parts) + 1) if parts else 1

    def _recover(self) -> None:
        """Re-open after a crash or for --append: adopt the journal tail, continue the ticks."""
        old = fmt.Manifest.from_json((self.root / fmt.MANIFEST).read_bytes(), source=str(self.root / fmt.MANIFEST))
        from .reader import read_segment  # local: the reader imports this module's helpers

        old.options = {**old.options, **self.manifest.options}
        old.finalized = False
        for p in (self.root / fmt.PARTS_DIR).iterdir():
            if p.name.endswith(".tmp"):
                fmt.remove_tree(p) if p.is_dir() else fmt.remove_quietly(p)
        parts = fmt.list_parts(self.root)
        kept = {path for _f, _l, path in parts}
        for p in (self.root / fmt.PARTS_DIR).iterdir():  # nested under a wider part (a crash mid-compaction or
            if p.is_dir() and p not in kept and not p.name.endswith(".tmp"):  # mid-retention): the widest holds it
                ret.remove_part(p)
        for _f, _l, path in parts:  # never build on a damaged part (nor re-checksum one)
            fmt.verify_part(path, required=old.schema_version >= 2, source=str(path))
        written_as = old.schema_version
        if old.schema_version < fmt.SCHEMA_VERSION:
            self._upgrade(old, parts)
        self.manifest = old
        covered = {s for first, last, _ in parts for s in range(first, last + 1)}
        last_tick = -1
        for _f, _l, path in parts:
            ticks = path / "ticks.parquet"
            if ticks.exists():
                top = pl.scan_parquet(ticks).select(pl.col("tick").max()).collect().item()
                last_tick = max(last_tick, -1 if top is None else int(top))
        segments = fmt.list_segments(self.root)
        for seq, path in segments:
            if seq in covered:
                fmt.remove_quietly(path)
                continue
            if self._first_unfolded is None:
                self._first_unfolded = seq
            # a torn tail is crash residue; a frame damaged in the middle refuses the append
            read = read_segment(path, last=seq == segments[-1][0] or written_as < 2, skip_bad=False)
            if read.torn:  # crash residue: cut it off so it never sits in the middle of the journal
                os.truncate(path, read.valid_end)
            for payload in read.payloads:
                self._adopt(payload)
                if payload.get("tick") is not None:
                    last_tick = max(last_tick, int(payload["tick"]))
                    at = int(payload["time"])
                    self._pending_first = at if self._pending_first is None else min(self._pending_first, at)
                    self.window_last = max(self.window_last or at, at)
        self.next_tick = last_tick + 1
        self.last_tick = last_tick if last_tick >= 0 else None
        self.resumed = True
        for _f, _l, path in parts:
            span = self._span(path)
            if span.end is not None and span.first_tick is not None:
                self.window_last = max(self.window_last or span.end, span.end)
        self._update_window()
        self._seed_objects(parts)

    def _seed_objects(self, parts: list[tuple[int, int, Path]]) -> None:
        """Remember the objects in force when the recording stopped: an unchanged object the first lists
        show again is not stored twice, and one they no longer show is marked deleted
        (:meth:`forget_unseen`) instead of staying in force for ever."""
        files = [path / "objects.parquet" for _f, _l, path in parts if (path / "objects.parquet").exists()]
        live = ret.in_force(files, self._pending.get("objects", []))
        for row in live.iter_rows(named=True):
            key = (row["kind"], str(row["uid"] or f"{row['namespace']}/{row['name']}"))
            self._last_hash[key] = hashlib.blake2b(row["body"].encode(), digest_size=16).digest()
            self._resumed_objects[key] = row

    def forget_unseen(self, kinds: tuple[str, ...]) -> int:
        """After a resumed recorder's first complete lists of ``kinds``: store a deletion for each object
        of those kinds that was in force when the recording stopped and that the lists no longer show
        (deleted while no recorder ran). Returns how many."""
        gone = 0
        at = now_micros()
        resumed, self._resumed_objects = self._resumed_objects, {}  # asked once: other kinds are not judged
        for key, row in resumed.items():
            if row["kind"] not in kinds or key in self._seen:
                continue
            cols = self._loose["objects"]
            for col in cols:
                value = row[col]
                cols[col].append(at if col == "observed" else True if col == "deleted" else value)
            self._last_hash.pop(key, None)
            gone += 1
        self._seen.clear()
        return gone

    def mark_restart(self, nodes: list[str], interval: float) -> bool:
        """A resumed recorder: one gap tick for the time no recorder ran, each node a gap whose error says
        from when to when (FORMAT.md §3.3). Nothing when the pause was shorter than 1.5 intervals."""
        if self.window_last is None or not nodes:
            return False
        now, step = now_micros(), int(interval * 1_000_000)
        if now - self.window_last < step * 3 // 2:
            return False
        tick = self.begin_tick(at=self.window_last + step)
        why = f"{RESTARTED}: no recorder ran from {_iso(self.window_last)} to {_iso(now)}"
        for node in sorted(nodes):
            tick.add_gap(node, why)
        self.commit(tick, fold=False)  # in this run's own segment: discard() takes it back with the rest
        self.ticks_written -= 1  # not a tick this run recorded: one stopped before its first still discards
        return True

    def _upgrade(self, old: fmt.Manifest, parts: list[tuple[int, int, Path]]) -> None:
        """Appending to a schema-v1 recording: decode each v1 part fully, then give it checksums.

        Only a part that decodes completely gets a checksum, so a damaged v1 part is never
        blessed; the manifest says v2 only once every part has its checksums.json.
        """
        for _f, _l, part in parts:
            if (part / fmt.CHECKSUMS).exists():
                continue
            for f in sorted(part.glob("*.parquet")):
                try:
                    pl.read_parquet(f)
                except (OSError, pl.exceptions.PolarsError) as exc:
                    raise RecordingError(
                        f"cannot upgrade a damaged schema-v1 part ({' '.join(str(exc).split())})", source=str(f)
                    ) from None
            fmt.write_checksums(part)
            fmt.fsync_dir(part)
        old.schema_version = fmt.SCHEMA_VERSION

    def _adopt(self, payload: Mapping[str, Any]) -> None:
        for name, cols in payload.get("tables", {}).items():
            if name in ALL_SCHEMAS and any(cols.values()):
                df = frame_from_columns(name, cols)
                self._pending.setdefault(name, []).append(df)
                self._pending_rows += df.height

    # -- ticks and objects ----------------------------------------------------------------
    def begin_tick(self, at: int | None = None) -> Tick:
        tick = Tick(self.next_tick, now_micros() if at is None else at)
        self.next_tick += 1
        return tick

    def commit(self, tick: Tick, *, fold: bool = True) -> int:
        """Make one tick (plus objects seen since the last one) durable; returns bytes written."""
        tables = tick.tables
        for name, cols in self._loose.items():
            for col, values in cols.items():
                tables[name][col].extend(values)
        payload = {"tick": tick.index, "time": tick.time, "tables": _nonempty(tables)}
        written = self._append(payload)
        self.last_tick = tick.index
        self._loose = _empty_tables()
        self._adopt(payload)
        self._pending_ticks += 1
        self.ticks_written += 1
        self.manifest.end_time = _iso(tick.time)
        self.bytes_on_disk += written
        self.window_last = tick.time
        if self._pending_first is None:
            self._pending_first = tick.time
        if self.window_first is None:
            self.window_first = tick.time
        if fold and (self._pending_ticks >= self.fold_every or self._pending_rows >= self.fold_rows):
            self.fold()
        return written

    def _append(self, payload: dict[str, Any]) -> int:
        """Journal one frame; a failed write says how much the recording holds. With ``--retain`` a
        full disk first drops the oldest part (:meth:`make_room`) and tries again."""
        while True:
            try:
                ret.check_space(self.root, 1 << 12)
                return self._journal.append(payload)
            except OSError as exc:  # the test seam's full disk, before anything was written
                if not fmt.is_out_of_space(exc):
                    raise
                error = JournalWriteError("disk full", source=str(self._journal.path))
            except JournalWriteError as exc:
                error = exc
            if not (error.problem == "disk full" and self.make_room()):
                break
        if self.last_tick is not None:
            kept = f"the recording is valid up to the previous tick (tick {self.last_tick})"
        else:
            kept = "no tick was kept: the recording holds no tick yet"
        raise RecordingError(f"{error.problem}; {kept}", source=error.source) from None

    def flush_objects(self) -> None:
        """Write objects observed since the last tick as a frame of their own."""
        tables = _nonempty(self._loose)
        if tables:
            payload = {"tick": None, "time": now_micros(), "tables": tables}
            self._append(payload)
            self._loose = _empty_tables()
            self._adopt(payload)

    def observe(
        self,
        kind: str,
        obj: Mapping[str, Any],
        *,
        observed: int | None = None,
        node: str | None = None,
        deleted: bool = False,
    ) -> bool:
        """Store a redacted object version if it differs from the last one; True if stored."""
        at = now_micros() if observed is None else observed
        body = REDACTORS[kind](obj)
        meta = body.get("metadata", {}) if kind != "configz" else {}
        if kind == "pod":
            node = node or body.get("spec", {}).get("nodeName")
        elif kind == "node":
            node = node or meta.get("name")
        elif kind == "event":
            node = node or body.get("source", {}).get("host")
        name = meta.get("name") or node
        key = (kind, str(meta.get("uid") or f"{meta.get('namespace')}/{name}"))
        data = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        digest = hashlib.blake2b(data + (b"D" if deleted else b""), digest_size=16).digest()
        if self._resumed_objects:
            self._seen.add(key)
        if self._last_hash.get(key) == digest:
            return False
        self._last_hash[key] = digest
        if deleted:  # a deleted object's key never comes back: pod churn must not grow this map for weeks
            del self._last_hash[key]
        row = {
            "observed": at,
            "kind": kind,
            "node": node,
            "namespace": meta.get("namespace"),
            "name": name,
            "uid": meta.get("uid"),
            "resource_version": (obj.get("metadata") or {}).get("resourceVersion"),
            "deleted": deleted,
            "body": data.decode(),
        }
        for col, value in row.items():
            self._loose["objects"][col].append(value)
        if kind == "node":
            version = body.get("status", {}).get("nodeInfo", {}).get("kubeletVersion")
            if version and name:
                self.manifest.kubelet_versions[name] = version
        self._note_eviction(kind, body, at, node)
        self._note_kernel(kind, body, at, node)
        return True

    def _note_kernel(self, kind: str, body: Mapping[str, Any], at: int, node: str | None) -> None:
        """Kernel kills and Ready transitions this version shows that no earlier one did (FORMAT.md §5)."""
        cols = self._loose["kernel_events"]
        for row in kernel.rows_of(kind, body, node):
            key = ("kernel", orjson.dumps(kernel.row_key(row)).decode())
            if key in self._last_hash:
                continue
            self._last_hash[key] = b""
            row["time"] = _micros_or_none(row["time"])
            for col, value in row.items():
                cols[col].append(value)
            cols["observed"].append(at)

    def _note_eviction(self, kind: str, body: Mapping[str, Any], at: int, node: str | None) -> None:
        if kind == "event" and body.get("reason") == "Evicted":
            inv = body.get("involvedObject", {})
            when = body.get("lastTimestamp") or body.get("eventTime") or body.get("firstTimestamp")
            row = (
                "event",
                node,
                inv.get("namespace"),
                inv.get("name"),
                inv.get("uid"),
                "Evicted",
                body.get("message"),
                when,
            )
        elif kind == "pod" and body.get("status", {}).get("reason") == "Evicted":
            meta, status = body["metadata"], body["status"]
            row = (
                "pod",
                node,
                meta.get("namespace"),
                meta.get("name"),
                meta.get("uid"),
                "Evicted",
                status.get("message"),
                None,
            )
        else:
            return
        key = ("eviction", f"{row[0]}/{row[4]}/{row[6]}")
        if key in self._last_hash:
            return
        self._last_hash[key] = b""
        cols = self._loose["evictions"]
        for col, value in zip(
            ("source", "node", "namespace", "name", "uid", "reason", "message", "time"), row, strict=True
        ):
            cols[col].append(_micros_or_none(value) if col == "time" else value)
        cols["observed"].append(at)

    # -- folding ------------------------------------------------------------------------
    def fold(self) -> None:
        """Turn everything journalled since the last fold into one Parquet part directory."""
        if not self._pending:
            return
        first, last = self._first_unfolded or self._segment, self._segment
        self._journal.close()
        self._segment += 1
        self._journal = JournalWriter(self.root / fmt.JOURNAL_DIR / fmt.segment_name(self._segment))
        final = self.root / fmt.PARTS_DIR / fmt.part_name(first, last)
        tables = {
            name: pl.concat(frames, how="vertical").sort(list(SORT_KEYS[name]), nulls_last=True)
            for name, frames in self._pending.items()
        }
        self._publish(final, tables, after="the journal still holds every tick")
        for seq in range(first, last + 1):
            fmt.remove_quietly(self.root / fmt.JOURNAL_DIR / fmt.segment_name(seq))
        ticks = tables.get("ticks")
        if ticks is not None and ticks.height:
            lo, hi = ticks.select(
                pl.col("time").dt.epoch("us").min().alias("lo"), pl.col("time").dt.epoch("us").max().alias("hi")
            ).row(0)
            self._spans[final.name] = ret.PartSpan(int(lo), int(hi))
        self._pending, self._pending_rows, self._pending_ticks = {}, 0, 0
        self._pending_first = None
        self._first_unfolded = self._segment
        self.retain()
        while True:
            try:
                self.write_manifest()
                break
            except OSError as exc:
                if not (fmt.is_out_of_space(exc) and self.make_room()):
                    raise
        self.bytes_on_disk = fmt.dir_bytes(self.root)

    def publish_part(self, tables: Mapping[str, pl.DataFrame]) -> None:
        """Write whole tables built as frames (bulk imports, benchmark generators) as one part.

        The frames must have the declared schemas; they are folded exactly as journalled ticks are
        (after anything journalled so far): sorted, checksummed, published atomically. Ticks must
        come after those already written.
        """
        for name, df in tables.items():
            validate_schema(name, df.schema, source=f"{self.root} (frames given to publish_part)")
        self.flush_objects()
        ticks = tables.get("ticks")
        for name, df in tables.items():
            if df.height:
                self._pending.setdefault(name, []).append(df)
                self._pending_rows += df.height
        self.fold()
        if ticks is not None and ticks.height:
            top, end = ticks.select(pl.col("tick").cast(pl.Int64).max(), pl.col("time").dt.epoch("us").max()).row(0)
            self.ticks_written += ticks["tick"].n_unique()
            self.next_tick, self.last_tick = max(self.next_tick, top + 1), max(top, self.last_tick or 0)
            self.manifest.end_time = _iso(end)
            self.write_manifest()

    def compact(self, since: int | None = None) -> None:
        """Merge all parts into one sorted part (better compression), streaming: see :func:`merge_table`.
        With ``since`` (a segment number) only the parts from that segment on (a bulk import rolls its
        window parts up hour by hour, so the final merge reads a few parts, not thousands).

        Skipped when the disk lacks room for a second copy of the parts (the rewrite needs it
        until the old parts are deleted): the recording is then left as several sorted parts,
        which every reader reads.
        """
        parts = [p for p in fmt.list_parts(self.root) if since is None or p[0] >= since]
        if len(parts) < 2 or self.retain_micros is not None:  # a rolling window drops whole parts: keep them
            return
        size = sum(f.stat().st_size for _, _, p in parts for f in p.iterdir())
        if size > COMPACT_LIMIT_BYTES or shutil.disk_usage(self.root).free < 2 * size + COMPACT_DISK_SLACK:
            return
        first, last = parts[0][0], parts[-1][1]
        final = self.root / fmt.PARTS_DIR / fmt.part_name(first, last)
        for _f, _l, path in parts:  # a damaged part must not come back with a fresh checksum
            fmt.verify_part(path, required=self.manifest.schema_version >= 2, source=str(path))
        names = sorted({f.stem for _, _, p in parts for f in p.glob("*.parquet")})
        batch = self.compact_batch_bytes

        def merged(name: str) -> Callable[[Path], None]:
            files = [p / f"{name}.parquet" for _, _, p in parts if (p / f"{name}.parquet").exists()]
            return lambda out: merge_table(name, files, out, batch_bytes=batch)

        self._publish(final, {name: merged(name) for name in names}, after="the parts written so far hold every tick")
        for _f, _l, path in parts:
            if path != final:
                ret.remove_part(path)  # renamed away first: a reader never meets a part half removed

    # -- the rolling window ---------------------------------------------------------------
    def _span(self, part: Path) -> ret.PartSpan:
        if part.name not in self._spans:
            self._spans[part.name] = ret.part_span(part)
        return self._spans[part.name]

    def _update_window(self) -> None:
        """The first tick kept (the parts' and the journal's) into ``window_first`` and the manifest."""
        firsts = [
            s.first_tick
            for first, _l, path in fmt.list_parts(self.root)
            if not ret.is_base(first) and (s := self._span(path)).first_tick is not None
        ]
        if self._pending_first is not None:
            firsts.append(self._pending_first)
        self.window_first = min(firsts) if firsts else None
        if self.window_first is not None:
            self.manifest.start_time = _iso(self.window_first)

    def retain(self) -> None:
        """Drop the parts wholly older than the window (``--retain``), carrying the objects still in
        force into the base part (:mod:`recordings.retention`); then keep the disk reserve. A disk that
        has no room left for the reserve is full: the window shrinks now, before a tick fails."""
        if self.retain_micros is None or self.window_last is None:
            return
        cutoff = self.window_last - self.retain_micros
        drop: list[tuple[int, int, Path]] = []
        for first, last, path in fmt.list_parts(self.root):
            span = self._span(path)
            if not ret.is_base(first) and span.end is not None and span.end >= cutoff:
                break
            drop.append((first, last, path))
        if any(not ret.is_base(first) for first, _l, _p in drop):
            try:
                self._replace_with_base(drop)
            except (OSError, pl.exceptions.PolarsError) as exc:
                if not fmt.is_out_of_space(exc) or not self.make_room():
                    raise
        reserve = max(ret.RESERVE_MIN_BYTES, 2 * self._base_bytes)
        while not ret.make_reserve(self.root, reserve) and self.make_room():
            pass

    def make_room(self) -> bool:
        """The disk is full: drop the oldest part before its time (the window shrinks), using the reserve
        to write the base. False when there is no part left to drop (only the journal)."""
        if self.retain_micros is None:
            return False
        parts = fmt.list_parts(self.root)
        victims = [p for p in parts if not ret.is_base(p[0])]
        if not victims:
            return False
        ret.release_reserve(self.root)
        drop = [p for p in parts if ret.is_base(p[0])] + victims[:1]
        try:
            self._replace_with_base(drop)
        except (OSError, pl.exceptions.PolarsError) as exc:
            if not fmt.is_out_of_space(exc):
                raise
            return False
        self.window_shrinks += 1
        kept = (self.window_last - self.window_first) / 1e6 if self.window_first and self.window_last else 0.0
        self.on_shrink(
            f"disk full: dropped the oldest part ({victims[0][2].name}) before its time; the window now starts at "
            f"{_iso(self.window_first) if self.window_first else 'the journal'} ({kept:.0f} s kept of "
            f"--retain {self.retain_micros / 1e6:.0f} s; shrunk {self.window_shrinks} times)"
        )
        return True

    def _replace_with_base(self, drop: list[tuple[int, int, Path]]) -> None:
        """Replace the parts ``drop`` (the oldest, perhaps with the base) by one base part holding the
        objects still in force: written under ``.tmp``, renamed, then the old parts removed (readers
        take the widest of nested parts, so every instant reads either the old parts or the base)."""
        files = [path / "objects.parquet" for _f, _l, path in drop if (path / "objects.parquet").exists()]
        objects = ret.in_force(files)
        final = self.root / fmt.PARTS_DIR / fmt.part_name(ret.BASE_FIRST, max(last for _f, last, _p in drop))
        tmp = final.with_name(final.name + ".tmp")
        try:
            fmt.remove_tree(tmp)
            fmt.make_private_dir(tmp)
            if objects.height:
                _write_parquet(objects, tmp / "objects.parquet")
            fmt.write_checksums(tmp)
            ret.check_space(self.root)
            fmt.fsync_dir(tmp)
            os.replace(tmp, final)
            fmt.fsync_dir(final.parent)
        except BaseException:
            fmt.remove_tree(tmp)
            raise
        for _f, _l, path in drop:
            if path != final:
                ret.remove_part(path)
                self._spans.pop(path.name, None)
        self._base_bytes = fmt.dir_bytes(final)
        self.parts_dropped += sum(1 for first, _l, _p in drop if not ret.is_base(first))
        self._update_window()
        self.bytes_on_disk = fmt.dir_bytes(self.root)

    def _publish(
        self,
        final: Path,
        tables: Mapping[str, pl.DataFrame | Callable[[Path], None]],
        *,
        after: str,
    ) -> None:
        """Write a part under ``NAME.tmp`` with its checksums, fsync, and rename it into place.

        Any failure (disk full, quota, ``RLIMIT_FSIZE``, or polars wrapping one of those)
        removes the ``.tmp`` directory and becomes the recorder's clean stop: a
        :class:`RecordingError` saying up to which tick the recording is valid.
        """
        tmp = final.with_name(final.name + ".tmp")
        while True:
            try:
                fmt.remove_tree(tmp)
                fmt.make_private_dir(tmp)
                for name, table in tables.items():
                    if callable(table):
                        table(tmp / f"{name}.parquet")
                    else:
                        _write_parquet(table, tmp / f"{name}.parquet")
                fmt.write_checksums(tmp)
                ret.check_space(self.root)
                fmt.fsync_dir(tmp)
                os.replace(tmp, final)
                fmt.fsync_dir(final.parent)
                return
            except (OSError, pl.exceptions.PolarsError) as exc:
                fmt.remove_tree(tmp)
                if fmt.is_out_of_space(exc) and self.make_room():
                    continue
                failure = exc
                break
        try:
            raise failure
        except (OSError, pl.exceptions.PolarsError) as exc:
            self._write_manifest_best_effort()
            reason = " ".join(str(exc).split()) if not isinstance(exc, OSError) else exc.strerror
            problem = "disk full" if fmt.is_out_of_space(exc) else "write failed"
            upto = f"tick {self.last_tick}" if self.last_tick is not None else "its start (no tick was recorded)"
            raise RecordingError(
                f"{problem} while writing a Parquet part ({reason}); the recording is valid up to {upto}: {after}",
                source=str(final),
            ) from None

    def _write_manifest_best_effort(self) -> None:
        """After a failed part write: keep end_time on disk if the manifest still fits."""
        try:
            self.write_manifest()
        except OSError:
            fmt.remove_quietly(self.root / (fmt.MANIFEST + ".tmp"))

    def write_manifest(self) -> None:
        fmt.write_atomic(self.root / fmt.MANIFEST, self.manifest.to_json())

    def finalize(self, counts: dict[str, int] | None = None, *, compact: bool = True) -> None:
        """Fold, compact and mark the manifest finished; the recording is then immutable. Without
        ``compact`` the parts stay as they are (a bulk import that rolled them up hour by hour)."""
        self.flush_objects()
        self.fold()
        if compact:
            self.compact()
        self._journal.close()
        fmt.remove_quietly(self.root / fmt.JOURNAL_DIR / fmt.segment_name(self._segment))
        ret.release_reserve(self.root)
        from .reader import Recording  # local: the reader imports this module's helpers

        rec = Recording(self.root)  # not open_recording: that would take a snapshot of this live writer's directory
        self.manifest.counts = rec.count_rows() | (counts or {})
        first, last = rec.time_range()
        if first is not None and last is not None:  # the data's range, not the command's wall clock
            self.manifest.start_time, self.manifest.end_time = _iso(first), _iso(last)
        self.manifest.end_time = self.manifest.end_time or _iso(now_micros())
        self.manifest.finalized = True
        self.write_manifest()
        self.close()

    def discard(self) -> None:
        """No tick was written: remove what this writer created, still under its lock, then
        let the lock go.  What the directory held before the lock was taken is left alone: it
        may be another writer's finished recording, made while this one was starting."""
        self._journal.close()
        self._undo_creation(self._created)

    def close_after_failure(self) -> None:
        """Best effort after a write error: the journal already ends at the last good tick."""
        self.close()

    def close(self) -> None:
        """Close the journal and give up the writer lock (another writer may then --append)."""
        self._journal.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def _write_parquet(df: pl.DataFrame, path: Path) -> None:
    """Create the file 0600 first and let polars write into it: never readable by others,
    not even for the moment between polars creating it and a chmod."""
    fd = fmt.open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "wb", buffering=1 << 20) as fh:
        sink = _ErrnoSink(fh)
        try:
            df.write_parquet(sink, compression="zstd", compression_level=9, statistics=True)  # type: ignore[arg-type]
            sink.flush()
        except pl.exceptions.PolarsError as exc:
            if sink.error is not None:  # polars may report ENOSPC as "Invalid thrift: transport error"
                raise sink.error from exc
            raise
        os.fsync(fh.fileno())


def merge_table(name: str, files: Sequence[Path], out: Path, *, batch_bytes: int) -> None:
    """Write the rows of ``files`` (parts of one table, each sorted by its keys) to ``out``,
    sorted, holding at most about ``batch_bytes`` of decoded rows at a time (FORMAT.md §3).

    Why not ``sort().sink_parquet()``: polars' streaming sort still gathers every row in memory
    (a 10-node day took 12 GB). Instead:

    1. plan: per file, the row count and string bytes of each key prefix (one row per series
       for the series tables; a streaming aggregate), cut in sort order into batches of at most
       ``batch_bytes`` (one prefix larger than that is a batch of its own);
    2. each file being sorted, a batch is one contiguous slice of every file: read those slices
       (slice pushdown skips the other row groups), sort, write a temporary chunk;
    3. stream the chunks, in order, into ``out`` (``sink_parquet``).

    A table that fits in one batch is merged in memory, as before.
    """
    keys = list(SORT_KEYS[name])
    schema = ALL_SCHEMAS[name]
    prefix = keys[:-1] if len(keys) > 1 and keys[-1] == "tick" else keys
    strings = [c for c, t in schema.items() if t == pl.String()]
    row_bytes = 8 * (len(schema) - len(strings)) + 16 * len(strings)  # fixed widths; string views
    text = (
        pl.sum_horizontal([pl.col(c).str.len_bytes().fill_null(0).cast(pl.UInt64) for c in strings])
        if strings
        else pl.lit(0, pl.UInt64)
    )
    plans = [
        pl.scan_parquet(f).group_by(prefix).agg(_n=pl.len().cast(pl.UInt64), _b=text.sum()).collect(engine="streaming")
        for f in files
    ]
    total = sum(int(p["_n"].sum()) * row_bytes + int(p["_b"].sum()) for p in plans)
    if total <= batch_bytes:
        df = pl.concat([pl.read_parquet(f) for f in files], how="vertical")
        _write_parquet(df.sort(keys, nulls_last=True, maintain_order=True), out)
        return
    dist = pl.concat(plans).group_by(prefix).agg(pl.col("_n").sum(), pl.col("_b").sum())
    dist = dist.sort(prefix, nulls_last=True, maintain_order=True)
    size = pl.col("_n") * row_bytes + pl.col("_b")
    dist = dist.select(*prefix, _batch=((size.cum_sum() - size) // batch_bytes).rank("dense").cast(pl.Int64) - 1)
    batches = dist.height and int(dist.select(pl.col("_batch").max()).item()) + 1
    counts: list[list[int]] = []
    for plan in plans:
        per = plan.join(dist, on=prefix, how="left", nulls_equal=True).group_by("_batch").agg(pl.col("_n").sum())
        row = [0] * batches
        for batch, n in per.iter_rows():
            row[int(batch)] = int(n)
        counts.append(row)
    chunkdir = out.with_name(out.name + ".chunks")
    fmt.make_private_dir(chunkdir)
    try:
        chunks: list[Path] = []
        offsets = [0] * len(files)
        for b in range(batches):
            frames = []
            for i, f in enumerate(files):
                if counts[i][b]:
                    frames.append(pl.scan_parquet(f).slice(offsets[i], counts[i][b]))
                    offsets[i] += counts[i][b]
            if frames:
                chunk = chunkdir / f"{b:06d}.parquet"
                df = pl.concat(frames, how="vertical").collect().sort(keys, nulls_last=True, maintain_order=True)
                df.write_parquet(chunk, compression="lz4", statistics=False)
                del df
                chunks.append(chunk)
        fd = fmt.open_private(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "wb", buffering=1 << 20) as fh:
            sink = _ErrnoSink(fh)
            try:
                pl.concat([pl.scan_parquet(c) for c in chunks], how="vertical").sink_parquet(  # type: ignore[call-overload]
                    sink,
                    compression="zstd",
                    compression_level=9,
                    statistics=True,
                )
                sink.flush()
            except pl.exceptions.PolarsError as exc:
                if sink.error is not None:
                    raise sink.error from exc
                raise
            os.fsync(fh.fileno())
    finally:
        fmt.remove_tree(chunkdir)


class _ErrnoSink:
    """The file as polars sees it: only ``write``/``flush``, so polars writes through Python
    (given a ``fileno`` it writes natively and loses the errno), and a failed write's OS
    error is kept for the disk-full check."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            return self._fh.write(data)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self) -> None:
        try:
            self._fh.flush()
        except OSError as exc:
            self.error = exc
            raise


def _say(message: str) -> None:
    print(f"evictlens record: {message}", file=sys.stderr, flush=True)


def _nonempty(tables: dict[str, Columns]) -> dict[str, Columns]:
    return {name: cols for name, cols in tables.items() if any(cols.values())}


def _micros_or_none(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _iso(micros: int) -> str:
    from .summary_codec import format_time

    return format_time(micros)
