"""One replay result as the TUI needs it: the small parts in memory, the signals frame behind a lazy scan.

A results directory of a 100-node day holds millions of signal rows. The overview needs only one
aggregate per node and signal, and the timeline needs one node's rows when that node is opened,
so the signals stay a :class:`polars.LazyFrame` (a Parquet scan, or an in-memory frame after a
replay run here) and are collected per question. Everything else is the results model itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from replay.results import Eviction, Match, NodeResult, ReplayResult
from replay.settings import SettingsRequest

CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure")
SIGNAL_ORDER = (
    "memory.available", "allocatableMemory.available", "nodefs.available", "nodefs.inodesFree",
    "imagefs.available", "imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree", "pid.available",
)
"""Signals in the order the kubelet's signal table lists them (api/types.go); others sort after."""

SHORT_SIGNAL = {
    "memory.available": "memory", "allocatableMemory.available": "alloc memory",
    "nodefs.available": "nodefs", "nodefs.inodesFree": "nodefs inodes", "imagefs.available": "imagefs",
    "imagefs.inodesFree": "imagefs inodes", "containerfs.available": "containerfs",
    "containerfs.inodesFree": "containerfs inodes", "pid.available": "pids",
}


def is_bytes(signal: str) -> bool:
    """Byte-valued signals (the others count inodes or processes)."""
    return not (signal.endswith("inodesFree") or signal == "pid.available")


def signal_key(signal: str) -> tuple[int, str]:
    return (SIGNAL_ORDER.index(signal) if signal in SIGNAL_ORDER else len(SIGNAL_ORDER), signal)


@dataclass
class ResultsView:
    """A loaded result: the model without its big frame, plus a lazy scan of the signals."""

    label: str
    result: ReplayResult
    signals: pl.LazyFrame
    origin: str
    """Where it came from: a results directory, or the recording replayed here."""
    request: SettingsRequest | None = None
    """What was asked, when it was replayed in this session (None for a results directory)."""
    _series: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    _overview: pl.DataFrame | None = field(default=None, repr=False)

    @classmethod
    def from_result(cls, result: ReplayResult, label: str, origin: str,
                    request: SettingsRequest | None = None) -> ResultsView:
        return cls(label, result, result.signals, origin, request)

    # -- the small parts ------------------------------------------------------------------
    @property
    def nodes(self) -> tuple[NodeResult, ...]:
        return self.result.nodes

    def node(self, name: str) -> NodeResult:
        return self.result.node(name)

    def recording(self) -> Path | None:
        """The replayed recording, when it is still on disk (for pods, containers and usage)."""
        path = Path(self.result.recording)
        return path if (path / "manifest.json").is_file() else None

    def evictions_of(self, node: str | None = None) -> list[Eviction]:
        return [e for e in self.result.evictions if node is None or e.node == node]

    def eviction(self, eviction_id: int) -> Eviction:
        for e in self.result.evictions:
            if e.id == eviction_id:
                return e
        raise KeyError(eviction_id)

    def real_of(self, node: str | None = None) -> list[Match]:
        """Every real eviction the recording kept (each as its match, predicted or not)."""
        return [m for m in self.result.matches if node is None or m.real.node == node]

    def match_for(self, eviction: Eviction) -> Match | None:
        for m in self.result.matches:
            if m.predicted_id == eviction.id:
                return m
        return None

    # -- aggregates -----------------------------------------------------------------------
    def pressure_seconds(self) -> dict[tuple[str, str], float]:
        """(node, condition) → seconds the condition was on; an open interval ends at the node's last pass."""
        last: Mapping[str, datetime | None] = {n.node: n.last_time for n in self.nodes}
        out: dict[tuple[str, str], float] = {}
        for row in self.result.conditions.iter_rows(named=True):
            end = row["to"] or last.get(row["node"]) or row["from"]
            key = (row["node"], row["condition"])
            out[key] = out.get(key, 0.0) + max(0.0, (end - row["from"]).total_seconds())
        return out

    def lowest_available(self) -> pl.DataFrame:
        """node, signal, lowest: the minimum available per node and signal (one lazy aggregation)."""
        if self._overview is None:
            self._overview = (self.signals.select("node", "signal", "available")
                              .group_by("node", "signal").agg(pl.col("available").min().alias("lowest"))
                              .collect())
        return self._overview

    def overcommit(self, resource: str = "memory") -> dict[str, float]:
        """Node → the highest Σ limits / allocatable of ``resource`` over the replay (from the overcommit frame)."""
        frame = getattr(self.result, "overcommit", None)
        if frame is None:
            return {}
        peaks = (frame.filter((pl.col("resource") == resource) & (pl.col("allocatable") > 0))
                 .group_by("node").agg((pl.col("limits") / pl.col("allocatable")).max().alias("peak")).collect())
        return {row[0]: row[1] for row in peaks.iter_rows()}

    def signal_names(self) -> list[str]:
        return sorted(set(self.lowest_available()["signal"].to_list()), key=signal_key)

    def node_series(self, node: str) -> pl.DataFrame:
        """One node's signal rows (tick, time, signal, available, capacity, threshold), collected on first use."""
        if node not in self._series:
            self._series[node] = (self.signals.filter(pl.col("node") == node)
                                  .select("tick", "time", "signal", "available", "capacity", "threshold_id",
                                          "threshold_value", "met", "actionable")
                                  .sort("tick", "signal", "threshold_id").collect())
        return self._series[node]
