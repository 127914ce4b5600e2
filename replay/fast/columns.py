"""Nodes' columns, read from the recording in tick chunks (a few nodes at a time) with only the columns
the fast path needs.

Request-independent, so a what-if replay with several settings reads them once: the passes'
signal inputs (node_stats and the ``pods`` system container), the local-storage usage of pods that
have a limit somewhere in their recorded versions, and whole summaries for the few ticks where the
reference code has to run.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache, partial
from itertools import repeat
from typing import Any

import polars as pl

from kube.errors import InputError
from kube.quantity import Quantity
from recordings.pod_timeline import PodVersion
from recordings.reader import Recording, TickInfo
from recordings.schema import CONTAINER_STATS, NODE_STATS, POD_STATS, SERIES, SYSTEM_STATS, VOLUME_STATS, Table
from recordings.summary_codec import EPOCH, decode, format_time
from replay.fast.signals import NODE_COLUMNS, PODS_COLUMNS
from replay.kubelet import pods as podutil
from replay.kubelet.api import (
    ContainerStats,
    FsStats,
    MemoryStats,
    Pod,
    PodReference,
    PodStats,
    ProcessStats,
    Summary,
    VolumeStats,
    parse_summary,
)
from replay.kubelet.jsonpath import _At, _time

CHUNK_TICKS = 16384
"""Passes per chunk: bounds the memory of a node's columns whatever the recording's length."""


def _floor(q: Quantity) -> int:
    return math.floor(q.value)


@dataclass(frozen=True)
class Chunk:
    """The passes of one stretch of ticks: signal inputs and the tick info of each pass."""

    node_rows: pl.DataFrame
    pods_rows: pl.DataFrame
    tick_times: pl.DataFrame
    infos: dict[int, TickInfo]


@dataclass(frozen=True)
class StorageUsage:
    """Ticks at which a pod's usage exceeds the smallest limit any of its versions set (a superset of
    the ticks where localStorageEviction can evict; the reference decides at those)."""

    pods_volumes: frozenset[int]
    containers_with_rootfs: frozenset[int]
    containers_logs_only: frozenset[int]

    def ticks(self, dedicated_image_fs: bool) -> frozenset[int]:
        return self.pods_volumes | (self.containers_logs_only if dedicated_image_fs else self.containers_with_rootfs)


SUMMARY_WINDOW = 256
"""Summaries read at once for the reference's passes: a node over a threshold all day stays bounded."""

MEMORY, PROCESSES, FILESYSTEMS = 1, 2, 4
"""What of each pod's stats a pass builds (:meth:`SummaryAt.built`): memory (pod and containers),
process counts, filesystems (containers' rootfs and logs, volumes, ephemeral storage)."""
WHOLE = MEMORY | PROCESSES | FILESYSTEMS
NODE_PART = -1
"""No pods at all: the node's stats (:meth:`SummaryWindow.node_part`)."""


class _Odd(Exception):
    """A tick the direct build does not reproduce (duplicate pod rows, an entry without its pod, a time the
    Summary API text would not parse): the reference's decode-and-parse runs there instead."""


@lru_cache(maxsize=65536)
def _stamp(us: int) -> datetime | None:
    """A recorded time as parse_summary reads it back from the decoded text (summary_codec.format_time)."""
    try:
        return _time({"time": format_time(us)}, "time", _At("", ""))
    except (InputError, ValueError, OverflowError):
        raise _Odd from None


_READABLE_US = (
    (datetime(1000, 1, 1, tzinfo=UTC) - EPOCH) // timedelta(microseconds=1),
    (datetime.max.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1),
)
"""The recorded times the reference reads back: format_time writes a year below 1000 in fewer than the four
digits RFC 3339 needs (the parse fails), and Python's datetime ends at year 9999."""


def _unreadable_times(frame: pl.DataFrame) -> set[int]:
    """Ticks with a recorded time the reference would not read back: a lean build does not read every time,
    so such a tick is built by the reference (and fails there as it does)."""
    stamps = [pl.col(c).dt.epoch("us") for c, kind in frame.schema.items() if isinstance(kind, pl.Datetime)]
    if not stamps:
        return set()
    low, high = _READABLE_US
    bad = pl.any_horizontal([(t < low) | (t > high) for t in stamps])
    return {int(t) for t in frame.filter(bad)["tick"]}


def _group(table: Table, path: tuple[str, ...]) -> tuple[int, list[str]]:
    """The ``present`` bit and the columns (in field order, as the stats dataclasses) of one group."""
    for bit, group in enumerate(table.groups):
        if group.path == path:
            return 1 << bit, [col for col, _key, _kind in group.columns()]
    raise LookupError(path)  # pragma: no cover - the schema declares them


_POD_REF, _POD_REF_COLS = _group(POD_STATS, ("podRef",))
_POD_MEMORY, _POD_MEMORY_COLS = _group(POD_STATS, ("memory",))
_POD_EPHEMERAL, _POD_EPHEMERAL_COLS = _group(POD_STATS, ("ephemeral-storage",))
_POD_PROCESS, _POD_PROCESS_COLS = _group(POD_STATS, ("process_stats",))
_CONTAINER_NAME, _CONTAINER_NAME_COLS = _group(CONTAINER_STATS, ())
_CONTAINER_MEMORY, _CONTAINER_MEMORY_COLS = _group(CONTAINER_STATS, ("memory",))
_CONTAINER_ROOTFS, _CONTAINER_ROOTFS_COLS = _group(CONTAINER_STATS, ("rootfs",))
_CONTAINER_LOGS, _CONTAINER_LOGS_COLS = _group(CONTAINER_STATS, ("logs",))
_VOLUME, _VOLUME_COLS = _group(VOLUME_STATS, ())


def _lean_fs(cols: list[str]) -> list[str]:
    return [cols[0], cols[3], cols[6]]  # time, usedBytes, inodesUsed


_LEAN: dict[str, list[str]] = {
    POD_STATS.name: [
        "tick",
        "pod",
        "pod_uid",
        "present",
        *_POD_REF_COLS,
        _POD_MEMORY_COLS[0],
        _POD_MEMORY_COLS[3],
        *_POD_PROCESS_COLS,
        _POD_EPHEMERAL_COLS[0],
    ],
    CONTAINER_STATS.name: [
        "tick",
        "pod",
        "container",
        "present",
        *_CONTAINER_NAME_COLS,
        _CONTAINER_MEMORY_COLS[0],
        _CONTAINER_MEMORY_COLS[3],
        *_lean_fs(_CONTAINER_ROOTFS_COLS),
        *_lean_fs(_CONTAINER_LOGS_COLS),
    ],
    VOLUME_STATS.name: ["tick", "pod", "volume", "present", _VOLUME_COLS[0], *_lean_fs(_VOLUME_COLS[1:])],
}
"""The columns a lean build reads (working sets, process counts, bytes and inodes used), with every time
column (a tick whose times the reference cannot read back is built by the reference)."""


class _Rows:
    """One table's rows in a window, sorted (stably) by ``keys`` (tick first), as summary_codec.decode
    orders them; columns become Python lists when first read (times as µs)."""

    def __init__(self, frame: pl.DataFrame, keys: Sequence[str]) -> None:
        self.frame = frame.sort(list(keys), maintain_order=True)
        spans = (
            self.frame.with_row_index("_i")
            .group_by("tick", maintain_order=True)
            .agg(pl.col("_i").first().alias("_s"), pl.len().alias("_n"))
        )
        self.by_tick: dict[int, tuple[int, int]] = {
            t: (s, s + n)
            for t, s, n in zip(spans["tick"].to_list(), spans["_s"].to_list(), spans["_n"].to_list(), strict=True)
        }
        """tick → its rows ``[start, end)``."""
        self._lists: dict[str, list[Any]] = {}

    def col(self, name: str) -> list[Any]:
        found = self._lists.get(name)
        if found is None:
            series = self.frame[name]
            if isinstance(series.dtype, pl.Datetime):
                series = series.dt.epoch("us")
            found = self._lists[name] = series.to_list()
        return found

    def first(self, tick: int) -> dict[str, Any]:
        return self.frame.row(self.by_tick[tick][0], named=True)

    def rows(self, tick: int) -> list[dict[str, Any]]:
        """Every row at ``tick``, for the reference's decode."""
        span = self.by_tick.get(tick)
        return [] if span is None else self.frame.slice(span[0], span[1] - span[0]).to_dicts()

    def memory(
        self, cols: list[str], bit: int, start: int, end: int, lean: bool, keep: Iterable[bool]
    ) -> list[MemoryStats | None]:
        """The rows' MemoryStats (None where the group is absent or ``keep`` is false); ``lean``: the working
        set only, all that ranking and the eviction message read of a pod's or container's memory."""
        present = self.col("present")[start:end]
        if lean:
            return [
                MemoryStats(None, None, None, w, None) if b & bit and k else None
                for b, w, k in zip(present, self.col(cols[3])[start:end], keep, strict=False)
            ]
        stamp = _stamp
        return [
            MemoryStats(None if t is None else stamp(t), a, u, w, r) if b & bit and k else None
            for b, k, t, a, u, w, r in zip(present, keep, *(self.col(c)[start:end] for c in cols), strict=False)
        ]

    def fs(
        self, cols: list[str], bit: int, start: int, end: int, lean: bool, keep: Iterable[bool]
    ) -> list[FsStats | None]:
        """The rows' FsStats (None where the group is absent or ``keep`` is false); ``lean``: the bytes and
        inodes used only, all that disk ranking and the eviction message read of a container's or volume's
        filesystem."""
        present = self.col("present")[start:end]
        if lean:
            return [
                FsStats(None, None, None, u, None, None, i) if b & bit and k else None
                for b, u, i, k in zip(
                    present, self.col(cols[3])[start:end], self.col(cols[6])[start:end], keep, strict=False
                )
            ]
        stamp = _stamp
        return [
            FsStats(None if t is None else stamp(t), a, c, u, f, n, i) if b & bit and k else None
            for b, k, t, a, c, u, f, n, i in zip(present, keep, *(self.col(c)[start:end] for c in cols), strict=False)
        ]


class _PodTables:
    """A window's pod, container and (when a pass needs filesystems) volume rows, and the direct build of
    parse_summary's PodStats from them."""

    def __init__(self, collect: Callable[[Table, Sequence[str] | None], pl.DataFrame], full: bool) -> None:
        self._collect = collect
        self.full = full
        """Every column (a WHOLE build, the reference's decode), else those a lean build reads (_LEAN)."""
        pods = collect(POD_STATS, None if full else _LEAN[POD_STATS.name])
        self.pods = _Rows(pods, ("tick", "pod"))
        self.odd: set[int] = {int(t) for t in pods.filter(pl.struct("tick", "pod").is_duplicated())["tick"]}
        containers = collect(CONTAINER_STATS, None if full else _LEAN[CONTAINER_STATS.name])
        self.containers = _Rows(containers, ("tick", "pod", "container"))
        self._orphans(containers)
        self._orphans(collect(VOLUME_STATS, ["tick", "pod", "time"]))
        self.odd.update(_unreadable_times(pods))
        self._volumes: _Rows | None = None

    def _orphans(self, entries: pl.DataFrame) -> None:
        """decode fails on an entry without its pod: at those ticks the reference says how."""
        self.odd.update(int(t) for t in entries.join(self.pods.frame, on=["tick", "pod"], how="anti")["tick"])
        self.odd.update(_unreadable_times(entries))

    def volumes(self) -> _Rows:
        if self._volumes is None:
            columns = None if self.full else _LEAN[VOLUME_STATS.name]
            self._volumes = _Rows(self._collect(VOLUME_STATS, columns), ("tick", "pod", "volume"))
        return self._volumes

    def rows(self, table: Table, tick: int) -> list[dict[str, Any]]:
        """The table's rows at ``tick`` (for the reference's decode)."""
        rows = self.pods if table is POD_STATS else self.containers if table is CONTAINER_STATS else self.volumes()
        return rows.rows(tick)

    def build(self, tick: int, parts: int, uids: AbstractSet[str] | None = None) -> tuple[PodStats, ...]:
        """parse_summary's ``pods`` of the decoded summary at ``tick`` (WHOLE: equal to the reference's), else
        only what a pass ranking for ``parts`` reads: refs, plus working sets (MEMORY), process counts
        (PROCESSES), the containers' and volumes' bytes and inodes used (FILESYSTEMS), and those only for
        the pods with a UID in ``uids`` (the pass's candidates; the others keep their refs). Raises _Odd
        where the build is not exact."""
        if tick in self.odd:
            raise _Odd
        span = self.pods.by_tick.get(tick)
        if span is None:
            return ()
        start, end = span
        p = self.pods
        indices = p.col("pod")[start:end]
        present, pod_uids = p.col("present")[start:end], p.col("pod_uid")[start:end]
        keep: list[bool] | repeat[bool] = repeat(True)
        kept: set[int] | None = None
        if uids is not None:
            keep = [(u or "") in uids for u in pod_uids]
            kept = {pod for pod, k in zip(indices, keep, strict=True) if k}
        nothing = repeat(None)
        lean = parts != WHOLE
        memory = p.memory(_POD_MEMORY_COLS, _POD_MEMORY, start, end, lean, keep) if parts & MEMORY else nothing
        ephemeral = p.fs(_POD_EPHEMERAL_COLS, _POD_EPHEMERAL, start, end, lean, keep) if parts == WHOLE else nothing
        process: Iterable[ProcessStats | None] = nothing
        if parts & PROCESSES:
            process = [
                ProcessStats(c) if b & _POD_PROCESS and k else None
                for b, c, k in zip(present, p.col(_POD_PROCESS_COLS[0])[start:end], keep, strict=False)
            ]
        no_entries = repeat(())
        containers: Iterable[tuple[ContainerStats, ...]] = no_entries
        if parts & (MEMORY | FILESYSTEMS):
            found = self._containers(tick, parts, kept)
            containers = [found.get(pod, ()) for pod in indices]
        volumes: Iterable[tuple[VolumeStats, ...]] = no_entries
        if parts & FILESYSTEMS:
            found_volumes = self._volume_stats(tick, lean, kept)
            volumes = [found_volumes.get(pod, ()) for pod in indices]
        name_col, namespace_col = _POD_REF_COLS
        return tuple(
            PodStats(
                PodReference(
                    name if bits & _POD_REF and name else "",
                    namespace if bits & _POD_REF and namespace else "",
                    uid or "",
                ),
                cs,
                mem,
                vs,
                eph,
                proc,
            )
            for bits, name, namespace, uid, cs, mem, vs, eph, proc in zip(
                present,
                p.col(name_col)[start:end],
                p.col(namespace_col)[start:end],
                pod_uids,
                containers,
                memory,
                volumes,
                ephemeral,
                process,
                strict=False,
            )
        )

    @staticmethod
    def _per_pod(rows: _Rows, tick: int, items: list[Any], kept: set[int] | None) -> dict[int, tuple[Any, ...]]:
        """The tick's entries (``items``, one per row of the tick, sorted by pod) grouped by pod, in row order
        (only the ``kept`` pods')."""
        start, end = rows.by_tick[tick]
        out: dict[int, tuple[Any, ...]] = {}
        first, current = 0, None
        for i, pod in enumerate(rows.col("pod")[start:end]):
            if pod != current:
                if current is not None and (kept is None or current in kept):
                    out[current] = tuple(items[first:i])
                first, current = i, pod
        if current is not None and (kept is None or current in kept):
            out[current] = tuple(items[first:])
        return out

    @staticmethod
    def _keep(rows: _Rows, start: int, end: int, kept: set[int] | None) -> list[bool] | repeat[bool]:
        return repeat(True) if kept is None else [pod in kept for pod in rows.col("pod")[start:end]]

    def _containers(self, tick: int, parts: int, kept: set[int] | None) -> dict[int, tuple[ContainerStats, ...]]:
        rows = self.containers
        span = rows.by_tick.get(tick)
        if span is None:
            return {}
        start, end = span
        keep = self._keep(rows, start, end, kept)
        nothing = repeat(None)
        lean, files = parts != WHOLE, parts & FILESYSTEMS
        memory = (
            rows.memory(_CONTAINER_MEMORY_COLS, _CONTAINER_MEMORY, start, end, lean, keep)
            if parts & MEMORY
            else nothing
        )
        rootfs = rows.fs(_CONTAINER_ROOTFS_COLS, _CONTAINER_ROOTFS, start, end, lean, keep) if files else nothing
        logs = rows.fs(_CONTAINER_LOGS_COLS, _CONTAINER_LOGS, start, end, lean, keep) if files else nothing
        items = [
            ContainerStats(name if bits & _CONTAINER_NAME and name else "", mem, root, log) if k else None
            for bits, name, k, mem, root, log in zip(
                rows.col("present")[start:end],
                rows.col(_CONTAINER_NAME_COLS[0])[start:end],
                keep,
                memory,
                rootfs,
                logs,
                strict=False,
            )
        ]
        return self._per_pod(rows, tick, items, kept)

    def _volume_stats(self, tick: int, lean: bool, kept: set[int] | None) -> dict[int, tuple[VolumeStats, ...]]:
        rows = self.volumes()
        span = rows.by_tick.get(tick)
        if span is None:
            return {}
        start, end = span
        keep = self._keep(rows, start, end, kept)
        name_col, *fs_cols = _VOLUME_COLS
        items = [
            (VolumeStats(name or "", fs) if fs is not None else VolumeStats("", FsStats())) if k else None
            for name, fs, k in zip(
                rows.col(name_col)[start:end], rows.fs(fs_cols, _VOLUME, start, end, lean, keep), keep, strict=False
            )
        ]
        return self._per_pod(rows, tick, items, kept)


class SummaryWindow:
    """Up to ``SUMMARY_WINDOW`` ticks of one node: node tables read at once, pod tables when first needed."""

    def __init__(self, node: NodeColumns, ticks: Sequence[int]) -> None:
        self.node = node
        self.ticks = list(ticks)
        self.parsed: dict[tuple[int, int], Summary] = {}
        """(tick, parts) → the parsed summary of every pod (SummaryAt.built), whichever variant asks."""
        self._pods: _PodTables | None = None
        self._collect = partial(_collect_ticks, node, self.ticks)  # not a method: the pod tables keep it
        self._node = _Rows(self._collect(NODE_STATS, None), ("tick",))
        self._system = _Rows(self._collect(SYSTEM_STATS, None), ("tick",))

    def has(self, tick: int) -> bool:
        return tick in self._node.by_tick

    def pod_tables(self, full: bool = False) -> _PodTables:
        """The window's pod tables, read when first needed: the columns lean builds read, then every column
        once a build needs them."""
        if self._pods is None or (full and not self._pods.full):
            self._pods = _PodTables(self._collect, full)
        return self._pods

    def node_part(self, tick: int) -> dict[str, Any]:
        """The summary without its pods (the node's signals; what decides a pass nothing can be evicted at)."""
        return decode(self._node.first(tick), self._system.rows(tick), [], [], [])

    def whole(self, tick: int) -> dict[str, Any]:
        pods = self.pod_tables(full=True)
        return decode(self._node.first(tick), self._system.rows(tick), *(pods.rows(t, tick) for t in SERIES[2:]))


def _collect_ticks(node: NodeColumns, ticks: list[int], table: Table, columns: Sequence[str] | None) -> pl.DataFrame:
    """One table's rows of ``node`` at ``ticks`` (only ``columns``, when given)."""
    lo, hi = min(ticks), max(ticks)
    frame = node._scan(table.name, (lo, hi)).filter(pl.col("tick").is_between(lo, hi) & pl.col("tick").is_in(ticks))
    return node._collect(table.name, frame if columns is None else frame.select(columns))


class SummaryAt:
    """One tick's recorded summary, decoded on demand: whole, or its node part only; parsed once per window
    and tick whichever settings variant asks (the parsed stats are frozen values, never changed by a pass)."""

    def __init__(self, window: SummaryWindow, tick: int) -> None:
        self.window, self.tick = window, tick

    def whole(self) -> dict[str, Any]:
        return self.window.whole(self.tick)

    def node_part(self) -> dict[str, Any]:
        return self.window.node_part(self.tick)

    def parsed(self, *, whole: bool, source: str) -> Summary:
        return self.built(WHOLE if whole else NODE_PART, source=source)

    @property
    def can_build(self) -> bool:
        """The pods' stats can be built in parts: the recorded summary itself, not a rewritten one."""
        return type(self).parsed is SummaryAt.parsed

    def built(self, parts: int, *, source: str, uids: AbstractSet[str] | None = None) -> Summary:
        """parse_summary of the decoded summary, the pods' stats built straight from the columns with only
        ``parts`` of them (WHOLE: every field; NODE_PART: no pods), for the pods with a UID in ``uids`` (None:
        all; the others keep their refs): what a pass reads when only one signal can be reclaimed. Equal to
        the reference's parse where built (tests/replay/test_summary_build.py). A subclass that rewrites the
        summary (``parsed`` overridden) gets its whole parse."""
        if not self.can_build:
            return self.parsed(whole=parts != NODE_PART, source=source)
        if parts == WHOLE:
            uids = None
        window = self.window
        key = (self.tick, parts)
        found = window.parsed.get(key) if uids is None else None
        if found is not None:
            return found
        node = window.parsed.get((self.tick, NODE_PART))
        if node is None:
            node = window.parsed[self.tick, NODE_PART] = parse_summary(self.node_part(), source=source)
        if parts == NODE_PART:
            return node
        try:
            found = Summary(node=node.node, pods=window.pod_tables(full=parts == WHOLE).build(self.tick, parts, uids))
        except _Odd:
            found = parse_summary(self.whole(), source=source)
        if uids is None:  # a pass's own candidates' stats are not kept: they die with the pass
            window.parsed[key] = found
        return found


class Summaries(Mapping[int, SummaryAt]):
    """The summaries a chunk's delegated passes may need (a superset of ticks), read ``SUMMARY_WINDOW``
    ticks at a time from the first one asked for, since passes ask in tick order."""

    def __init__(self, node: NodeColumns, ticks: Sequence[int]) -> None:
        self.node = node
        self.ticks = sorted(ticks)
        self._index = {t: i for i, t in enumerate(self.ticks)}
        self._window: SummaryWindow | None = None
        self._in_window: set[int] = set()

    def __getitem__(self, tick: int) -> SummaryAt:
        if self._window is None or tick not in self._in_window:
            i = self._index[tick]  # KeyError: a tick the chunk did not ask for
            self._window = SummaryWindow(self.node, self.ticks[i : i + SUMMARY_WINDOW])
            self._in_window = set(self._window.ticks)
        if not self._window.has(tick):
            raise KeyError(tick)
        return SummaryAt(self._window, tick)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ticks)

    def __len__(self) -> int:
        return len(self.ticks)


def _tick_times(ticks: Sequence[int], infos: dict[int, TickInfo]) -> pl.DataFrame:
    us = timedelta(microseconds=1)
    return pl.DataFrame(
        {"tick": ticks, "_t": [(infos[t].time - EPOCH) // us for t in ticks]},
        schema={"tick": pl.UInt32, "_t": pl.Int64},
    ).with_columns(pl.col("_t").cast(pl.Datetime("us", "UTC")))


class GroupColumns:
    """A few nodes' columns read together: one query per table (and tick range) for all of them, since a
    query's cost is mostly finding and decoding the row groups, not the rows one node keeps."""

    def __init__(self, rec: Recording, nodes: Sequence[str], ticks: Mapping[str, Sequence[TickInfo]]) -> None:
        self.rec = rec
        self.nodes = list(nodes)
        stats = self._collect(
            NODE_STATS.name,
            self._scan(NODE_STATS.name).select(
                "node", "tick", pl.coalesce("memory_time", "fs_time", "rlimit_time").alias("sampled")
            ),
        )
        by_node = {str(k[0]): df for k, df in stats.partition_by("node", as_dict=True).items()}
        empty = stats.clear()
        self.columns = {n: NodeColumns(self, n, ticks[n], by_node.get(n, empty)) for n in self.nodes}
        self._range: tuple[int, int] | None = None
        self._rows: dict[str, tuple[pl.DataFrame, pl.DataFrame]] = {}

    def _scan(self, table: str, ticks: tuple[int, int] | None = None) -> pl.LazyFrame:
        return self.rec.scan(table, ticks).filter(pl.col("node").is_in(self.nodes))

    def _collect(self, table: str, frame: pl.LazyFrame) -> pl.DataFrame:
        return self.rec._collect(table, frame)

    def ranges(self, size: int = CHUNK_TICKS) -> list[tuple[int, int]]:
        """Tick ranges ``[lo, hi)`` of ``size`` ticks holding some node's passes (at most ``size`` each)."""
        starts = sorted({t // size * size for c in self.columns.values() for t in c.pass_ticks})
        return [(lo, lo + size) for lo in starts]

    def rows(self, lo: int, hi: int) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
        """Per node, the node_stats signal columns and ``pods`` system container rows of ticks in ``[lo, hi)``."""
        if self._range != (lo, hi):
            in_range = pl.col("tick").is_between(lo, hi - 1)
            node_rows = self._collect(
                NODE_STATS.name,
                self._scan(NODE_STATS.name, (lo, hi - 1)).filter(in_range).select("node", *NODE_COLUMNS),
            )
            pods_rows = self._collect(
                SYSTEM_STATS.name,
                self._scan(SYSTEM_STATS.name, (lo, hi - 1))
                .filter(in_range & (pl.col("name") == "pods"))
                .select("node", *PODS_COLUMNS),
            )
            nodes = {str(k[0]): df.drop("node") for k, df in node_rows.partition_by("node", as_dict=True).items()}
            pods = {str(k[0]): df.drop("node") for k, df in pods_rows.partition_by("node", as_dict=True).items()}
            empty_nodes, empty_pods = node_rows.drop("node").clear(), pods_rows.drop("node").clear()
            self._rows = {n: (nodes.get(n, empty_nodes), pods.get(n, empty_pods)) for n in self.nodes}
            self._range = (lo, hi)
        return self._rows

    def node_summaries(self) -> dict[str, dict[str, Any]]:
        """The node part of each node's first pass's summary (what topology inference reads)."""
        first = {n: c.pass_ticks[0] for n, c in self.columns.items() if c.pass_ticks}
        if not first:
            return {}
        keys = pl.DataFrame(
            {"node": list(first), "tick": list(first.values())}, schema={"node": pl.String, "tick": pl.UInt32}
        )
        wanted = pl.col("tick").is_in(list(set(first.values())))
        span = (min(first.values()), max(first.values()))
        node_rows = self._collect(
            NODE_STATS.name,
            self._scan(NODE_STATS.name, span).filter(wanted).join(keys.lazy(), on=["node", "tick"], how="semi"),
        )
        system = self._collect(
            SYSTEM_STATS.name,
            self._scan(SYSTEM_STATS.name, span).filter(wanted).join(keys.lazy(), on=["node", "tick"], how="semi"),
        )
        out = {}
        for node in first:
            row = node_rows.filter(pl.col("node") == node).row(0, named=True)
            out[node] = decode(row, system.filter(pl.col("node") == node).to_dicts(), [], [], [])
        return out

    def storage_usage(self, pods: Mapping[str, Iterable[Pod]]) -> dict[str, StorageUsage]:
        """localStorageEviction's checks for these nodes (``pods``: every version of each node's pods)."""
        return storage_usage_many(pods, self._scan, self._collect)


class NodeColumns:
    """One node of a :class:`GroupColumns`: its passes, chunks and the summaries the reference needs."""

    def __init__(self, group: GroupColumns, node: str, ticks: Sequence[TickInfo], stats: pl.DataFrame) -> None:
        self._group = weakref.ref(group)  # the group holds its nodes: no cycle for the collector to find
        self.rec = group.rec
        self.node = node
        self.infos = {t.index: t for t in ticks}
        ok = {i for i, t in self.infos.items() if t.ok}
        self.pass_ticks = sorted({int(t) for t in stats["tick"].unique().to_list() if int(t) in ok})
        earliest = [self.infos[t].time for t in self.pass_ticks[:1]]
        sampled = stats.filter(pl.col("tick").is_in(self.pass_ticks))["sampled"].min()
        if isinstance(sampled, datetime):
            earliest.append(sampled)
        self.earliest: datetime | None = min(earliest) if earliest else None
        """No pass's manager clock (the stats' sample time, else the tick time) is earlier than this."""

    @property
    def group(self) -> GroupColumns:
        group = self._group()
        assert group is not None, "a node's columns outlived their group"
        return group

    def _scan(self, table: str, ticks: tuple[int, int] | None = None) -> pl.LazyFrame:
        """The node's rows of ``table`` (only the part files with a tick in ``ticks``, when given)."""
        return self.rec.scan(table, ticks).filter(pl.col("node") == self.node)

    def _collect(self, table: str, frame: pl.LazyFrame) -> pl.DataFrame:
        return self.rec._collect(table, frame)

    def chunk(self, lo: int, hi: int) -> Chunk | None:
        """This node's passes with a tick in ``[lo, hi)`` (None: it has none there)."""
        ticks = [t for t in self.pass_ticks if lo <= t < hi]
        if not ticks:
            return None
        node_rows, pods_rows = self.group.rows(lo, hi)[self.node]
        wanted = pl.col("tick").is_in(ticks)
        node_rows = node_rows.filter(wanted).unique(subset=["tick"], keep="first", maintain_order=True).sort("tick")
        infos = {t: self.infos[t] for t in ticks}
        return Chunk(node_rows, pods_rows.filter(wanted), _tick_times(ticks, infos), infos)

    def chunks(self, size: int = CHUNK_TICKS) -> Iterator[Chunk]:
        for lo, hi in self.group.ranges(size):
            found = self.chunk(lo, hi)
            if found is not None:
                yield found

    def summaries(self, ticks: Sequence[int]) -> Summaries:
        """Whole summaries of ``ticks``, read a window at a time as the passes ask for them."""
        return Summaries(self, ticks)

    def late_stats(self, versions: Sequence[PodVersion], earliest: datetime) -> dict[int, list[str]]:
        """Per tick, the stats' pod UIDs whose pod object was first observed after the replay's start
        (NodeRun.pods_at adds such a pod's first version), with duplicates, in summary order."""
        first: dict[str, datetime] = {}
        for v in versions:
            if not v.deleted:
                first.setdefault(v.key, v.observed)
        late = [uid for uid, at in first.items() if at > earliest]  # else in force at every pass
        if not late:
            return {}
        frame = (
            self._scan(POD_STATS.name)
            .filter(pl.col("pod_uid").is_in(late))
            .select("tick", "pod", "pod_uid")
            .sort("tick", "pod")
        )
        out: dict[int, list[str]] = {}
        for tick, _pod, uid in self._collect(POD_STATS.name, frame).iter_rows():
            out.setdefault(int(tick), []).append(uid)
        return out


def _prune(columns: Sequence[str], least: int) -> pl.Expr:
    """Holds for every row whose ``columns`` (int64, null as 0) sum to more than ``least``, and is answered by
    Parquet row-group statistics (one column above its share, compared unsigned as stored), so row groups
    far below every limit are not even decoded."""
    if least < 0:
        return pl.lit(True)
    share = least // len(columns)
    found = pl.col(columns[0]) > share
    for c in columns[1:]:
        found = found | (pl.col(c) > share)
    return found


@dataclass
class StorageLimits:
    """The smallest local-storage limit any version of a pod sets, per check (keys start with the node)."""

    pod: dict[tuple[str, str], int]
    volume: dict[tuple[str, str, str], int]
    container: dict[tuple[str, str, str], int]

    def update(self, other: StorageLimits) -> None:
        """Another set of nodes' limits added (the nodes are distinct: the keys too)."""
        self.pod.update(other.pod)
        self.volume.update(other.volume)
        self.container.update(other.container)


def storage_usage_many(
    pods: Mapping[str, Iterable[Pod]],
    scan: Callable[[str], pl.LazyFrame],
    collect: Callable[[str, pl.LazyFrame], pl.DataFrame],
) -> dict[str, StorageUsage]:
    """localStorageEviction's three checks (eviction_manager.go: emptyDirLimitEviction,
    podEphemeralStorageLimitEviction, containerEphemeralStorageLimitEviction) as joins of the smallest
    limit any version of a pod sets with the nodes' pod, volume and container tables (``scan(table)``:
    the rows of the nodes in ``pods``, node → every version of its pods). Rows under the smallest limit
    of a check are dropped first on numbers alone (the Parquet reader then decodes the UIDs and names of
    the few rows left)."""
    return storage_usage_of(storage_limits(pods), list(pods), scan, collect)


def storage_limits(pods: Mapping[str, Iterable[Pod]]) -> StorageLimits:
    """The limits :func:`storage_usage_of` compares with (node → every version of its pods)."""
    pod_limits: dict[tuple[str, str], int] = {}
    volume_limits: dict[tuple[str, str, str], int] = {}
    container_limits: dict[tuple[str, str, str], int] = {}
    for node, versions in pods.items():
        for pod in versions:
            uid = pod.uid
            # the 1.26/1.27 form (sidecars not summed) is never above the 1.28+ one: a bound for every version
            limit = podutil.pod_limits(pod, sidecars_known=False).get("ephemeral-storage")
            if limit is not None:
                pod_limits[node, uid] = min(pod_limits.get((node, uid), 1 << 63), _floor(limit))
            for volume in pod.volumes:
                size = volume.empty_dir_size_limit
                if volume.source == "emptyDir" and size is not None and size.sign() == 1:
                    key = (node, uid, volume.name)
                    volume_limits[key] = min(volume_limits.get(key, 1 << 63), _floor(size))
            for container in (*pod.containers, *pod.init_containers):
                limit = container.limits.get("ephemeral-storage")
                if limit is not None and limit.int_value() != 0:
                    key = (node, uid, container.name)
                    container_limits[key] = min(container_limits.get(key, 1 << 63), _floor(limit))
    return StorageLimits(pod_limits, volume_limits, container_limits)


def storage_usage_of(
    found_limits: StorageLimits,
    nodes: Iterable[str],
    scan: Callable[[str], pl.LazyFrame],
    collect: Callable[[str, pl.LazyFrame], pl.DataFrame],
) -> dict[str, StorageUsage]:
    """:func:`storage_usage_many` from limits already gathered (a live view keeps them while the pods stay)."""
    pod_limits, volume_limits, container_limits = found_limits.pod, found_limits.volume, found_limits.container
    pods_volumes: set[tuple[str, int]] = set()
    with_rootfs: set[tuple[str, int]] = set()
    logs_only: set[tuple[str, int]] = set()

    def limits(found: Mapping[Any, int], keys: tuple[str, ...]) -> pl.DataFrame:
        cols: dict[str, list[Any]] = {k: [key[i] for key in found] for i, k in enumerate(keys)}
        return pl.DataFrame(
            {**cols, "lim": list(found.values())}, schema={**dict.fromkeys(keys, pl.String), "lim": pl.Int64}
        )

    def ticks(df: pl.DataFrame) -> set[tuple[str, int]]:
        return set(df.select("node", pl.col("tick").cast(pl.Int64)).unique().iter_rows())

    if pod_limits:
        used = pl.col("ephemeral_used_bytes").reinterpret(signed=True).fill_null(0)
        least = min(pod_limits.values())
        rows = collect(
            POD_STATS.name,
            scan(POD_STATS.name)
            .filter(_prune(("ephemeral_used_bytes",), least), used > least)
            .select("node", "tick", "pod_uid", used.alias("used")),
        )
        pods_volumes |= ticks(
            rows.join(limits(pod_limits, ("node", "pod_uid")), on=["node", "pod_uid"]).filter(
                pl.col("used") > pl.col("lim")
            )
        )
    if volume_limits:
        used = pl.col("used_bytes").reinterpret(signed=True)
        least = min(volume_limits.values())
        rows = collect(
            VOLUME_STATS.name,
            scan(VOLUME_STATS.name)
            .filter(_prune(("used_bytes",), least), used > least)
            .select("node", "tick", "pod_uid", "name", used.alias("used")),
        )
        pods_volumes |= ticks(
            rows.join(limits(volume_limits, ("node", "pod_uid", "name")), on=["node", "pod_uid", "name"]).filter(
                pl.col("used") > pl.col("lim")
            )
        )
    if container_limits:
        logs = pl.col("logs_used_bytes").reinterpret(signed=True).fill_null(0)
        rootfs = pl.col("rootfs_used_bytes").reinterpret(signed=True).fill_null(0)
        least = min(container_limits.values())
        rows = collect(
            CONTAINER_STATS.name,
            scan(CONTAINER_STATS.name)
            .filter(_prune(("logs_used_bytes", "rootfs_used_bytes"), least), logs + rootfs > least)
            .select("node", "tick", "pod_uid", "name", logs.alias("logs"), (logs + rootfs).alias("total")),
        )
        over = rows.join(limits(container_limits, ("node", "pod_uid", "name")), on=["node", "pod_uid", "name"]).filter(
            pl.col("total") > pl.col("lim")
        )
        with_rootfs |= ticks(over)
        logs_only |= ticks(over.filter(pl.col("logs") > pl.col("lim")))

    def of(found: set[tuple[str, int]], node: str) -> frozenset[int]:
        return frozenset(t for n, t in found if n == node)

    return {node: StorageUsage(of(pods_volumes, node), of(with_rootfs, node), of(logs_only, node)) for node in nodes}
