"""What a front end shows of a result, computed from the result alone: signal order and names, how long
each condition held, the lowest reading per signal, the overcommit peaks, one node's signal rows.

The large frames are :class:`polars.LazyFrame` scans (a results directory's Parquet, or a replay's
spooled frames), so each question here is one lazy query that reads only the columns (and for a node,
the rows) it needs; the TUI caches the answers, the CLI could print them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import polars as pl

from kube.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    PRESSURE_CONDITIONS,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    SIGNAL_TO_RESOURCE,
)
from replay.results import ReplayResult

CONDITIONS = PRESSURE_CONDITIONS
"""The node conditions eviction thresholds raise, in the kubelet's order."""

SIGNAL_ORDER = (
    MEMORY_AVAILABLE,
    ALLOCATABLE_MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    PID_AVAILABLE,
)
"""Signals in the order the kubelet's signal table lists them (api/types.go); others sort after."""

SHORT_SIGNAL: Mapping[str, str] = {
    MEMORY_AVAILABLE: "memory",
    ALLOCATABLE_MEMORY_AVAILABLE: "alloc memory",
    NODEFS_AVAILABLE: "nodefs",
    NODEFS_INODES_FREE: "nodefs inodes",
    IMAGEFS_AVAILABLE: "imagefs",
    IMAGEFS_INODES_FREE: "imagefs inodes",
    CONTAINERFS_AVAILABLE: "containerfs",
    CONTAINERFS_INODES_FREE: "containerfs inodes",
    PID_AVAILABLE: "pids",
}
"""A column header's worth of each signal's name."""

NODE_SIGNAL_COLUMNS = (
    "tick",
    "time",
    "signal",
    "available",
    "capacity",
    "threshold_id",
    "threshold_value",
    "met",
    "actionable",
)


def is_bytes(signal: str) -> bool:
    """Byte-valued signals (the others count inodes or processes; helpers.go: signalToResource)."""
    resource = SIGNAL_TO_RESOURCE.get(signal)
    if resource is not None:
        return resource in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE)
    return not (signal.endswith("inodesFree") or signal.startswith("pid."))


def signal_key(signal: str) -> tuple[int, str]:
    """Sort key: the kubelet's order, unknown signals after, by name."""
    return (SIGNAL_ORDER.index(signal) if signal in SIGNAL_ORDER else len(SIGNAL_ORDER), signal)


def pressure_seconds(result: ReplayResult) -> dict[tuple[str, str], float]:
    """(node, condition) → seconds the condition was on; an interval still open ends at the node's last pass."""
    last: Mapping[str, datetime | None] = {n.node: n.last_time for n in result.nodes}
    out: dict[tuple[str, str], float] = {}
    for row in result.conditions.iter_rows(named=True):
        end = row["to"] or last.get(row["node"]) or row["from"]
        key = (row["node"], row["condition"])
        out[key] = out.get(key, 0.0) + max(0.0, (end - row["from"]).total_seconds())
    return out


def lowest_available(signals: pl.LazyFrame) -> pl.DataFrame:
    """node, signal, lowest: the minimum available per node and signal (one aggregation over three columns)."""
    return (
        signals.select("node", "signal", "available")
        .group_by("node", "signal")
        .agg(pl.col("available").min().alias("lowest"))
        .sort("node", "signal")
        .collect()
    )


def overcommit_peaks(overcommit: pl.LazyFrame | pl.DataFrame | None, resource: str = "memory") -> dict[str, float]:
    """Node → the highest Σ limits / allocatable of ``resource`` over the replay (nodes without allocatable
    left out)."""
    if overcommit is None:
        return {}
    peaks = (
        overcommit.lazy()
        .filter((pl.col("resource") == resource) & (pl.col("allocatable") > 0))
        .group_by("node")
        .agg((pl.col("limits") / pl.col("allocatable")).max().alias("peak"))
        .collect()
    )
    return {row[0]: row[1] for row in peaks.iter_rows()}


def node_signals(signals: pl.LazyFrame, node: str) -> pl.DataFrame:
    """One node's signal rows (:data:`NODE_SIGNAL_COLUMNS`) in tick, signal, threshold order; the node
    predicate is pushed into the scan."""
    return (
        signals.filter(pl.col("node") == node)
        .select(*NODE_SIGNAL_COLUMNS)
        .sort("tick", "signal", "threshold_id")
        .collect()
    )
