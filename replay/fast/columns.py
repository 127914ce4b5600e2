"""One node's columns, read from the recording in tick chunks with only the columns the fast path needs.

Request-independent, so a what-if replay with several settings reads them once: the passes'
signal inputs (node_stats and the ``pods`` system container), the local-storage usage of pods that
have a limit somewhere in their recorded versions, and whole summaries for the few ticks where the
reference code has to run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from recordings.pod_timeline import PodVersion
from recordings.reader import Recording, TickInfo
from recordings.schema import CONTAINER_STATS, NODE_STATS, POD_STATS, SERIES, SYSTEM_STATS, VOLUME_STATS
from recordings.summary_codec import decode
from replay.fast.signals import NODE_COLUMNS, PODS_COLUMNS
from replay.kubelet import pods as podutil
from replay.kubelet.api import Pod
from replay.kubelet.quantity import Quantity

CHUNK_TICKS = 8192
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


class NodeColumns:
    def __init__(self, rec: Recording, node: str, ticks: Sequence[TickInfo]) -> None:
        self.rec = rec
        self.node = node
        self.infos = {t.index: t for t in ticks}
        stats = self._collect(NODE_STATS.name, self._scan(NODE_STATS.name).select(
            "tick", pl.coalesce("memory_time", "fs_time", "rlimit_time").alias("sampled")))
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

    def chunks(self, size: int = CHUNK_TICKS) -> Iterator[Chunk]:
        for start in range(0, len(self.pass_ticks), size):
            ticks = self.pass_ticks[start:start + size]
            lo, hi = ticks[0], ticks[-1]
            in_range = pl.col("tick").is_between(lo, hi) & pl.col("tick").is_in(ticks)
            node_rows = self._collect(NODE_STATS.name, self._scan(NODE_STATS.name).filter(in_range)
                                      .select(NODE_COLUMNS)).unique(subset=["tick"], keep="first",
                                                                     maintain_order=True).sort("tick")
            pods_rows = self._collect(SYSTEM_STATS.name, self._scan(SYSTEM_STATS.name)
                                      .filter(in_range & (pl.col("name") == "pods")).select(PODS_COLUMNS))
            infos = {t: self.infos[t] for t in ticks}
            tick_times = pl.DataFrame({"tick": ticks, "_t": [infos[t].time for t in ticks]},
                                      schema={"tick": pl.UInt32, "_t": pl.Datetime("us", "UTC")})
            yield Chunk(node_rows, pods_rows, tick_times, infos)

    def node_summary(self, tick: int) -> dict[str, Any]:
        """The node part of one tick's summary (what topology inference reads)."""
        node_rows = self._collect(NODE_STATS.name, self._scan(NODE_STATS.name).filter(pl.col("tick") == tick))
        system = self._collect(SYSTEM_STATS.name, self._scan(SYSTEM_STATS.name).filter(pl.col("tick") == tick))
        return decode(node_rows.row(0, named=True), system.to_dicts(), [], [], [])

    def summaries(self, ticks: Sequence[int]) -> dict[int, Callable[[], dict[str, Any]]]:
        """Whole summaries of ``ticks``, decoded on demand (one filtered scan per table)."""
        if not ticks:
            return {}
        wanted = pl.col("tick").is_between(min(ticks), max(ticks)) & pl.col("tick").is_in(list(ticks))
        parts = {}
        for table in SERIES:
            df = self._collect(table.name, self._scan(table.name).filter(wanted))
            parts[table.name] = {int(k[0]): v for k, v in df.partition_by("tick", as_dict=True).items()}
        out: dict[int, Callable[[], dict[str, Any]]] = {}
        for tick, node_df in parts[NODE_STATS.name].items():

            def make(tick: int = tick, node_df: pl.DataFrame = node_df) -> dict[str, Any]:
                def rows(name: str) -> list[dict[str, Any]]:
                    df = parts[name].get(tick)
                    return [] if df is None else df.to_dicts()

                return decode(node_df.row(0, named=True), *(rows(t.name) for t in SERIES[1:]))

            out[tick] = make
        return out

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

    def storage_usage(self, pods: Iterable[Pod]) -> StorageUsage:
        """localStorageEviction's three checks over this node's tables, for every version of its pods."""
        return storage_usage(pods, self._scan, self._collect)


def storage_usage(pods: Iterable[Pod], scan: Callable[[str], pl.LazyFrame],
                  collect: Callable[[str, pl.LazyFrame], pl.DataFrame]) -> StorageUsage:
    """localStorageEviction's three checks (eviction_manager.go: emptyDirLimitEviction,
    podEphemeralStorageLimitEviction, containerEphemeralStorageLimitEviction) as joins of the smallest
    limit any version of a pod sets with one node's pod, volume and container tables (``scan(table)``).
    Rows under the smallest limit of a check are dropped first on numbers alone (the Parquet reader then
    decodes the UIDs and names of the few rows left)."""
    pod_limits: dict[str, int] = {}
    volume_limits: dict[tuple[str, str], int] = {}
    container_limits: dict[tuple[str, str], int] = {}
    for pod in pods:
        uid = pod.uid
        limit = podutil.pod_limits(pod).get("ephemeral-storage")
        if limit is not None:
            pod_limits[uid] = min(pod_limits.get(uid, 1 << 63), _floor(limit))
        for volume in pod.volumes:
            size = volume.empty_dir_size_limit
            if volume.source == "emptyDir" and size is not None and size.sign() == 1:
                key = (uid, volume.name)
                volume_limits[key] = min(volume_limits.get(key, 1 << 63), _floor(size))
        for container in (*pod.containers, *pod.init_containers):
            limit = container.limits.get("ephemeral-storage")
            if limit is not None and limit.int_value() != 0:
                key = (uid, container.name)
                container_limits[key] = min(container_limits.get(key, 1 << 63), _floor(limit))
    pods_volumes: set[int] = set()
    if pod_limits:
        lim = pl.DataFrame({"pod_uid": list(pod_limits), "lim": list(pod_limits.values())},
                           schema={"pod_uid": pl.String, "lim": pl.Int64})
        used = pl.col("ephemeral_used_bytes").reinterpret(signed=True).fill_null(0)
        rows = collect(POD_STATS.name, scan(POD_STATS.name).filter(used > min(pod_limits.values()))
                       .select("tick", "pod_uid", used.alias("used")))
        pods_volumes.update(rows.join(lim, on="pod_uid").filter(pl.col("used") > pl.col("lim"))["tick"].to_list())
    if volume_limits:
        lim = pl.DataFrame({"pod_uid": [k[0] for k in volume_limits], "name": [k[1] for k in volume_limits],
                            "lim": list(volume_limits.values())},
                           schema={"pod_uid": pl.String, "name": pl.String, "lim": pl.Int64})
        used = pl.col("used_bytes").reinterpret(signed=True)
        rows = collect(VOLUME_STATS.name, scan(VOLUME_STATS.name).filter(used > min(volume_limits.values()))
                       .select("tick", "pod_uid", "name", used.alias("used")))
        pods_volumes.update(rows.join(lim, on=["pod_uid", "name"]).filter(pl.col("used") > pl.col("lim"))["tick"]
                            .to_list())
    with_rootfs: set[int] = set()
    logs_only: set[int] = set()
    if container_limits:
        lim = pl.DataFrame({"pod_uid": [k[0] for k in container_limits],
                            "name": [k[1] for k in container_limits], "lim": list(container_limits.values())},
                           schema={"pod_uid": pl.String, "name": pl.String, "lim": pl.Int64})
        logs = pl.col("logs_used_bytes").reinterpret(signed=True).fill_null(0)
        rootfs = pl.col("rootfs_used_bytes").reinterpret(signed=True).fill_null(0)
        rows = collect(CONTAINER_STATS.name, scan(CONTAINER_STATS.name)
                       .filter(logs + rootfs > min(container_limits.values()))
                       .select("tick", "pod_uid", "name", logs.alias("logs"), (logs + rootfs).alias("total")))
        df = (rows.join(lim, on=["pod_uid", "name"]).filter(pl.col("total") > pl.col("lim"))
              .select("tick", (pl.col("logs") > pl.col("lim")).alias("by_logs")))
        with_rootfs.update(df["tick"].unique().to_list())
        logs_only.update(df.filter(pl.col("by_logs"))["tick"].unique().to_list())
    return StorageUsage(frozenset(int(t) for t in pods_volumes), frozenset(int(t) for t in with_rootfs),
                        frozenset(int(t) for t in logs_only))
