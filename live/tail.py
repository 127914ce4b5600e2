"""Reading the finished ticks of a recording being written, from where the last read stopped.

The writer appends one frame per finished tick to the newest journal segment (recordings/FORMAT.md §3)
and every 60 ticks opens the next segment, publishes the closed ones as a Parquet part and deletes them.
So a reader keeps (segment, offset): it reads the intact frames after its offset; a frame being written
(a torn tail) is left for the next read; once a newer segment exists the current one is closed and the
reader moves on. A segment folded away before its last frames were read is read from the part that
covers it (the ticks after the last one read, the objects observed after the last one seen). With
``record --retain`` old parts go too: only the newest ticks are ever needed here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from kube.errors import RecordingError
from recordings import format as fmt
from recordings.journal import read_frame_at
from recordings.reader import Recording, to_micros
from recordings.schema import ALL_SCHEMAS, SERIES
from recordings.writer import frame_from_columns

Columns = dict[str, list[Any]]


@dataclass
class Frame:
    """One journal frame: a finished tick (``tick`` set) or objects observed with no tick. Tables are held as
    frames of the declared schema (a 100-node tick as Python lists would be a million objects)."""

    tick: int | None
    time: int
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The table's rows as dicts, times as µs since the epoch (as the journal holds them)."""
        df = self.tables.get(table)
        if df is None or not df.height:
            return []
        return df.with_columns(
            pl.col(c).dt.epoch("us") for c, t in df.schema.items() if isinstance(t, pl.Datetime)
        ).to_dicts()

    def columns(self, table: str) -> Columns:
        """The table as journal columns (what a writer's tick holds)."""
        df = self.tables.get(table)
        return {} if df is None else _columns(df)


@dataclass
class TailPosition:
    segment: int
    offset: int = 0


class JournalTail:
    """The frames a growing recording gains, each returned once, in order."""

    def __init__(self, root: Path, *, after_tick: int | None, after_observed: int | None) -> None:
        self.root = root
        self.last_tick = after_tick
        """The last tick returned (or read at start-up): frames up to it are skipped."""
        self.last_observed = after_observed
        """The newest object observation returned (µs): tickless frames up to it are skipped."""
        self.notes: list[str] = []
        self.position = TailPosition(self._start())
        self.torn = 0
        """Bytes after the last intact frame of the current segment (a frame being written)."""

    def _start(self) -> int:
        """The first segment that may hold a tick after ``last_tick``: the oldest open one, or the first of a part
        folded after start-up read the recording (its ticks are then read from the part)."""
        parts = fmt.list_parts(self.root)
        covered = {s for first, last, _p in parts for s in range(first, last + 1)}
        open_segments = [seq for seq, _p in fmt.list_segments(self.root) if seq not in covered]
        start = open_segments[0] if open_segments else (max(covered) + 1 if covered else 1)
        if self.last_tick is None:
            return min([start, *(first for first, _l, _p in parts)])
        for first, _last, part in reversed(parts):
            top = _max_tick(part)
            if top is not None and top <= self.last_tick:
                break
            if top is not None:
                start = first
        return start

    def read(self, limit: int = 1 << 30) -> list[Frame]:
        """The frames finished since the last read (at most about ``limit``: call again for the rest); cheap (a
        few stat calls) when nothing is new."""
        out: list[Frame] = []
        while len(out) < limit:
            seq = self.position.segment
            path = self.root / fmt.JOURNAL_DIR / fmt.segment_name(seq)
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                newer = [s for s, _p in fmt.list_segments(self.root) if s > seq]
                part = self._part_covering(seq)
                if part is not None:  # folded before we read it all
                    out.extend(self._from_part(part[2]))
                    self.position = TailPosition(part[1] + 1)
                    continue
                if newer:  # dropped (retention) with no part left: go on at the oldest segment there is
                    self.notes.append(f"journal segment {fmt.segment_name(seq)} went before it was read")
                    self.position = TailPosition(newer[0])
                    continue
                return out
            try:
                out.extend(self._read_open(fd, seq, limit - len(out)))
            finally:
                os.close(fd)
            if len(out) >= limit:
                return out
            if any(s > seq for s, _p in fmt.list_segments(self.root)):
                # closed: the writer opens the next segment after its last frame here, so what was appended
                # since the read above is read now, and nothing after it
                try:
                    fd = os.open(path, os.O_RDONLY)
                except FileNotFoundError:
                    continue  # folded meanwhile: its part has the rest
                try:
                    out.extend(self._read_open(fd, seq, 1 << 30))
                finally:
                    os.close(fd)
                if self.torn:  # a writer that stopped mid-frame and went on in a new segment
                    self.notes.append(f"torn journal tail ignored: {path.name} ends in {self.torn} bytes")
                    self.torn = 0
                self.position = TailPosition(seq + 1)
                continue
            return out
        return out

    def _read_open(self, fd: int, seq: int, limit: int) -> list[Frame]:
        out: list[Frame] = []
        size = os.fstat(fd).st_size
        pos = self.position.offset
        self.torn = 0
        while pos < size and len(out) < limit:
            end, payload, _problem = read_frame_at(fd, pos, size)
            if payload is None:
                self.torn = size - pos  # being written: read again next time
                break
            pos = end
            frame = self._keep(payload)
            if frame is not None:
                out.append(frame)
        self.position = TailPosition(seq, pos)
        return out

    def _keep(self, payload: dict[str, Any]) -> Frame | None:
        tick = payload.get("tick")
        if tick is not None:
            if self.last_tick is not None and tick <= self.last_tick:
                return None
            self.last_tick = tick
        cols = {k: v for k, v in (payload.get("tables") or {}).items() if k in ALL_SCHEMAS}
        observed = (cols.get("objects") or {}).get("observed") or []
        if tick is None and self.last_observed is not None and observed and max(observed) <= self.last_observed:
            return None
        if observed:
            self.last_observed = max(observed if self.last_observed is None else [*observed, self.last_observed])
        tables = {k: frame_from_columns(k, v) for k, v in cols.items() if any(v.values())}
        return Frame(tick, int(payload.get("time") or 0), tables)

    def _part_covering(self, seq: int) -> tuple[int, int, Path] | None:
        for first, last, part in fmt.list_parts(self.root):
            if first <= seq <= last:
                return first, last, part
        return None

    def _from_part(self, part: Path) -> list[Frame]:
        """The ticks after the last one read and the objects observed after the last one seen, from a part."""
        try:
            tables: dict[str, pl.DataFrame] = {}
            for name, schema in ALL_SCHEMAS.items():
                f = part / f"{name}.parquet"
                if not f.exists():
                    continue
                df = pl.read_parquet(f)
                if "tick" in schema:
                    if self.last_tick is not None:
                        df = df.filter(pl.col("tick") > self.last_tick)
                elif "observed" in schema and self.last_observed is not None:
                    df = df.filter(pl.col("observed").dt.epoch("us") > self.last_observed)
                if df.height:
                    tables[name] = df
        except (OSError, pl.exceptions.PolarsError) as exc:
            raise RecordingError(
                f"cannot read a part the writer just published ({exc})",
                source=str(part),
            ) from None
        self.notes.append(f"read the end of a folded journal segment from {part.name}")
        loose = {n: df for n, df in tables.items() if "tick" not in ALL_SCHEMAS[n]}
        ticks = tables.get("ticks")
        out: list[Frame] = []
        if ticks is not None and ticks.height:
            # each tick's frame gets what was observed from it until the next tick, as the journal had it (a real
            # eviction is then weighed after the ticks before it were decided, not before all of them)
            starts = ticks.group_by("tick").agg(pl.col("time").min()).sort("tick")
            index = {
                n: df.with_columns(
                    (starts["time"].search_sorted(df["observed"], side="right").cast(pl.Int64) - 1).alias("_k")
                )
                .sort("observed", maintain_order=True)
                .partition_by("_k", as_dict=True)
                for n, df in loose.items()
            }
            head = {n: by_k[(-1,)].drop("_k") for n, by_k in index.items() if (-1,) in by_k}
            out.extend([Frame(None, 0, head)] if head else [])
            parts = {n: df.partition_by("tick", as_dict=True) for n, df in tables.items() if "tick" in ALL_SCHEMAS[n]}
            for k, tick in enumerate(starts["tick"].to_list()):
                tick_rows = parts["ticks"][(tick,)]
                frame = Frame(int(tick), _micros(tick_rows["time"][0]), {"ticks": tick_rows})
                for name, by_tick in parts.items():
                    rows = by_tick.get((tick,))
                    if name != "ticks" and rows is not None:
                        frame.tables[name] = rows
                for name, by_k in index.items():
                    seen = by_k.get((k,))
                    if seen is not None:
                        frame.tables[name] = seen.drop("_k")
                out.append(frame)
                self.last_tick = int(tick)
        elif loose:
            out.append(Frame(None, 0, loose))
        objects = tables.get("objects")
        if objects is not None and objects.height:
            top = to_micros(objects["observed"].max())  # type: ignore[arg-type]
            self.last_observed = top if self.last_observed is None else max(top, self.last_observed)
        return out


def _max_tick(part: Path) -> int | None:
    """The last tick a part holds (None: no ticks table, or it cannot be read: left to the reader's checks)."""
    try:
        found = pl.scan_parquet(part / "ticks.parquet").select(pl.col("tick").max()).collect().item()
    except (OSError, pl.exceptions.PolarsError):
        return None
    return None if found is None else int(found)


def _micros(value: Any) -> int:
    return to_micros(value) if isinstance(value, datetime) else int(value)


def _columns(df: pl.DataFrame) -> Columns:
    """A frame's columns as the journal holds them: datetimes as µs since the epoch."""
    out: Columns = {}
    for name, dtype in df.schema.items():
        col = df[name]
        if isinstance(dtype, pl.Datetime):
            col = col.dt.epoch("us")
        out[name] = col.to_list()
    return out


LOOSE = ("objects", "evictions", "kernel_events")
"""The tables whose rows are observed between ticks (no tick column)."""


def recorded_frames(
    rec: Recording, *, after_tick: int | None = None, chunk: int = 60, interleave: bool = False
) -> Iterator[Frame]:
    """A finished (or growing) recording read back as frames: first one tickless frame with every object,
    eviction and kernel event, then one frame per tick after ``after_tick``, ``chunk`` ticks read at a time
    (one scan per table each), so memory stays per chunk whatever the recording's length. ``interleave``: the
    first frame holds only what was observed before the first tick, and each tick's frame what was observed
    from it until the next one, as a recorder commits them (so ground truth arrives when it happened)."""
    loose: dict[str, pl.DataFrame] = {}
    for name in LOOSE:
        df = rec._collect(name, rec.scan(name)).sort("observed", maintain_order=True)
        if df.height:
            loose[name] = df
    ticks = rec._collect("ticks", rec.scan("ticks"))
    if after_tick is not None:
        ticks = ticks.filter(pl.col("tick") > after_tick)
    numbers = sorted(set(ticks["tick"].to_list()))
    starts = ticks.group_by("tick").agg(pl.col("time").min()).sort("tick")["time"]
    if interleave and numbers:
        first = starts[0]
        head = {n: df.filter(pl.col("observed") < first) for n, df in loose.items()}
        loose_after = {n: df.filter(pl.col("observed") >= first) for n, df in loose.items()}
        loose = {n: df for n, df in head.items() if df.height}
        index = {
            n: df.with_columns(
                (pl.Series(starts).search_sorted(df["observed"], side="right") - 1).alias("_k")
            ).partition_by("_k", as_dict=True)
            for n, df in loose_after.items()
            if df.height
        }
    else:
        index = {}
    if loose:
        yield Frame(None, 0, loose)
    for i in range(0, len(numbers), chunk):
        lo, hi = numbers[i], numbers[min(i + chunk, len(numbers)) - 1]
        wanted = pl.col("tick").is_between(lo, hi)
        tables = {
            t.name: rec._collect(t.name, rec.scan(t.name, (lo, hi)).filter(wanted)).partition_by("tick", as_dict=True)
            for t in SERIES
        }
        tick_rows = ticks.filter(wanted).partition_by("tick", as_dict=True)
        for k, tick in enumerate(numbers[i : i + chunk], start=i):
            rows = tick_rows[(tick,)]
            frame = Frame(int(tick), _micros(rows["time"][0]), {"ticks": rows})
            for name, parts in tables.items():
                part_rows = parts.get((tick,))
                if part_rows is not None:
                    frame.tables[name] = part_rows
            for name, by_k in index.items():
                seen = by_k.get((k,))
                if seen is not None:
                    frame.tables[name] = seen.drop("_k")
            yield frame
