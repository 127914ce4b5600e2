"""Nodes' columns, read from the recording in tick chunks (a few nodes at a time) with only the columns
the fast path needs.

Request-independent, so a what-if replay with several settings reads them once: the passes'
signal inputs (node_stats and the ``pods`` system container), the local-storage usage of pods that
have a limit somewhere in their recorded versions, and whole summaries for the few ticks where the
reference code has to run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from recordings.pod_timeline import PodVersion
from recordings.reader import Recording, TickInfo
from recordings.schema import CONTAINER_STATS, NODE_STATS, POD_STATS, SERIES, SYSTEM_STATS, VOLUME_STATS, Table
from recordings.summary_codec import EPOCH, decode
from replay.fast.signals import NODE_COLUMNS, PODS_COLUMNS
from replay.kubelet import pods as podutil
from replay.kubelet.api import Pod, Summary, parse_summary
from replay.kubelet.quantity import Quantity

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


class SummaryWindow:
    """Up to ``SUMMARY_WINDOW`` ticks of one node: node tables read at once, pod tables when first needed."""

    def __init__(self, node: NodeColumns, ticks: Sequence[int]) -> None:
        self.node = node
        self.ticks = list(ticks)
        self._parts: dict[str, dict[int, pl.DataFrame]] = {}
        self.parsed: dict[tuple[int, bool], Summary] = {}
        self._read(SERIES[:2])

    def _read(self, tables: Sequence[Table]) -> None:
        ticks = self.ticks
        wanted = pl.col("tick").is_between(min(ticks), max(ticks)) & pl.col("tick").is_in(ticks)
        for table in tables:
            df = self.node._collect(table.name, self.node._scan(table.name).filter(wanted))
            self._parts[table.name] = {int(k[0]): v for k, v in df.partition_by("tick", as_dict=True).items()}

    def has(self, tick: int) -> bool:
        return tick in self._parts[NODE_STATS.name]

    def _rows(self, name: str, tick: int) -> list[dict[str, Any]]:
        df = self._parts[name].get(tick)
        return [] if df is None else df.to_dicts()

    def node_part(self, tick: int) -> dict[str, Any]:
        """The summary without its pods (the node's signals; what decides a pass nothing can be evicted at)."""
        return decode(self._parts[NODE_STATS.name][tick].row(0, named=True), self._rows(SYSTEM_STATS.name, tick),
                      [], [], [])

    def whole(self, tick: int) -> dict[str, Any]:
        if POD_STATS.name not in self._parts:
            self._read(SERIES[2:])
        return decode(self._parts[NODE_STATS.name][tick].row(0, named=True),
                      *(self._rows(t.name, tick) for t in SERIES[1:]))


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
        key = (self.tick, whole)
        found = self.window.parsed.get(key)
        if found is None:
            found = self.window.parsed[key] = parse_summary(self.whole() if whole else self.node_part(),
                                                            source=source)
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
            self._window = SummaryWindow(self.node, self.ticks[i:i + SUMMARY_WINDOW])
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
    return pl.DataFrame({"tick": ticks, "_t": [(infos[t].time - EPOCH) // us for t in ticks]},
                        schema={"tick": pl.UInt32, "_t": pl.Int64}).with_columns(
        pl.col("_t").cast(pl.Datetime("us", "UTC")))


class GroupColumns:
    """A few nodes' columns read together: one query per table (and tick range) for all of them, since a
    query's cost is mostly finding and decoding the row groups, not the rows one node keeps."""

    def __init__(self, rec: Recording, nodes: Sequence[str], ticks: Mapping[str, Sequence[TickInfo]]) -> None:
        self.rec = rec
        self.nodes = list(nodes)
        stats = self._collect(NODE_STATS.name, self._scan(NODE_STATS.name).select(
            "node", "tick", pl.coalesce("memory_time", "fs_time", "rlimit_time").alias("sampled")))
        by_node = {str(k[0]): df for k, df in stats.partition_by("node", as_dict=True).items()}
        empty = stats.clear()
        self.columns = {n: NodeColumns(self, n, ticks[n], by_node.get(n, empty)) for n in self.nodes}
        self._range: tuple[int, int] | None = None
        self._rows: dict[str, tuple[pl.DataFrame, pl.DataFrame]] = {}

    def _scan(self, table: str) -> pl.LazyFrame:
        return self.rec.scan(table).filter(pl.col("node").is_in(self.nodes))

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
            node_rows = self._collect(NODE_STATS.name, self._scan(NODE_STATS.name).filter(in_range)
                                      .select("node", *NODE_COLUMNS))
            pods_rows = self._collect(SYSTEM_STATS.name, self._scan(SYSTEM_STATS.name)
                                      .filter(in_range & (pl.col("name") == "pods")).select("node", *PODS_COLUMNS))
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
        keys = pl.DataFrame({"node": list(first), "tick": list(first.values())},
                            schema={"node": pl.String, "tick": pl.UInt32})
        wanted = pl.col("tick").is_in(list(set(first.values())))
        node_rows = self._collect(NODE_STATS.name, self._scan(NODE_STATS.name).filter(wanted)
                                  .join(keys.lazy(), on=["node", "tick"], how="semi"))
        system = self._collect(SYSTEM_STATS.name, self._scan(SYSTEM_STATS.name).filter(wanted)
                               .join(keys.lazy(), on=["node", "tick"], how="semi"))
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
        self.group = group
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

    def _scan(self, table: str) -> pl.LazyFrame:
        return self.rec.scan(table).filter(pl.col("node") == self.node)

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
        frame = (self._scan(POD_STATS.name).filter(pl.col("pod_uid").is_in(late))
                 .select("tick", "pod", "pod_uid").sort("tick", "pod"))
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


def storage_usage_many(pods: Mapping[str, Iterable[Pod]], scan: Callable[[str], pl.LazyFrame],
                       collect: Callable[[str, pl.LazyFrame], pl.DataFrame]) -> dict[str, StorageUsage]:
    """localStorageEviction's three checks (eviction_manager.go: emptyDirLimitEviction,
    podEphemeralStorageLimitEviction, containerEphemeralStorageLimitEviction) as joins of the smallest
    limit any version of a pod sets with the nodes' pod, volume and container tables (``scan(table)``:
    the rows of the nodes in ``pods``, node → every version of its pods). Rows under the smallest limit
    of a check are dropped first on numbers alone (the Parquet reader then decodes the UIDs and names of
    the few rows left)."""
    pod_limits: dict[tuple[str, str], int] = {}
    volume_limits: dict[tuple[str, str, str], int] = {}
    container_limits: dict[tuple[str, str, str], int] = {}
    for node, versions in pods.items():
        for pod in versions:
            uid = pod.uid
            limit = podutil.pod_limits(pod).get("ephemeral-storage")
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
    pods_volumes: set[tuple[str, int]] = set()
    with_rootfs: set[tuple[str, int]] = set()
    logs_only: set[tuple[str, int]] = set()

    def limits(found: Mapping[Any, int], keys: tuple[str, ...]) -> pl.DataFrame:
        cols: dict[str, list[Any]] = {k: [key[i] for key in found] for i, k in enumerate(keys)}
        return pl.DataFrame({**cols, "lim": list(found.values())},
                            schema={**dict.fromkeys(keys, pl.String), "lim": pl.Int64})

    def ticks(df: pl.DataFrame) -> set[tuple[str, int]]:
        return set(df.select("node", pl.col("tick").cast(pl.Int64)).unique().iter_rows())

    if pod_limits:
        used = pl.col("ephemeral_used_bytes").reinterpret(signed=True).fill_null(0)
        least = min(pod_limits.values())
        rows = collect(POD_STATS.name, scan(POD_STATS.name).filter(_prune(("ephemeral_used_bytes",), least),
                                                                   used > least)
                       .select("node", "tick", "pod_uid", used.alias("used")))
        pods_volumes |= ticks(rows.join(limits(pod_limits, ("node", "pod_uid")), on=["node", "pod_uid"])
                              .filter(pl.col("used") > pl.col("lim")))
    if volume_limits:
        used = pl.col("used_bytes").reinterpret(signed=True)
        least = min(volume_limits.values())
        rows = collect(VOLUME_STATS.name, scan(VOLUME_STATS.name).filter(_prune(("used_bytes",), least), used > least)
                       .select("node", "tick", "pod_uid", "name", used.alias("used")))
        pods_volumes |= ticks(rows.join(limits(volume_limits, ("node", "pod_uid", "name")),
                                        on=["node", "pod_uid", "name"]).filter(pl.col("used") > pl.col("lim")))
    if container_limits:
        logs = pl.col("logs_used_bytes").reinterpret(signed=True).fill_null(0)
        rootfs = pl.col("rootfs_used_bytes").reinterpret(signed=True).fill_null(0)
        least = min(container_limits.values())
        rows = collect(CONTAINER_STATS.name, scan(CONTAINER_STATS.name)
                       .filter(_prune(("logs_used_bytes", "rootfs_used_bytes"), least), logs + rootfs > least)
                       .select("node", "tick", "pod_uid", "name", logs.alias("logs"), (logs + rootfs).alias("total")))
        over = (rows.join(limits(container_limits, ("node", "pod_uid", "name")), on=["node", "pod_uid", "name"])
                .filter(pl.col("total") > pl.col("lim")))
        with_rootfs |= ticks(over)
        logs_only |= ticks(over.filter(pl.col("logs") > pl.col("lim")))

    def of(found: set[tuple[str, int]], node: str) -> frozenset[int]:
        return frozenset(t for n, t in found if n == node)

    return {node: StorageUsage(of(pods_volumes, node), of(with_rootfs, node), of(logs_only, node)) for node in pods}
