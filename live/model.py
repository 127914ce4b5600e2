"""The live view's plain data: what each node's eviction manager says now, and where its trend leads.

Integers where the engine has integers (bytes, counts, µs since the epoch); formatted only when rendered.
``evictlens watch`` and ``evictlens tui --live`` read these from :class:`live.engine.LiveEngine`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["EVENT_KINDS", "Forecast", "LiveEvent", "NextToGo", "NodeNow"]

EVENT_KINDS = (
    "pressure-start",
    "pressure-end",
    "next-to-go",
    "warning",
    "predicted-eviction",
    "real-eviction",
    "kernel-kill",
    "stale",
    "fresh",
)


@dataclass(frozen=True)
class Forecast:
    """One threshold of one signal on one node: how far away it is at the current trend."""

    node: str
    signal: str
    """e.g. ``memory.available`` (kube vocabulary)."""
    observed: int
    """The current value (bytes / count)."""
    threshold: int
    """The threshold's value resolved on this node (bytes / count)."""
    threshold_kind: str
    """``hard`` | ``soft``."""
    seconds_to_threshold: float | None
    """None: no trend / moving away; 0.0: already met."""
    slope_per_second: float | None
    method: str
    """How it was made, e.g. "Theil–Sen slope over the last 300 s (30 samples)"."""
    note: str | None
    """"no trend (flat)", "noisy", "already met", "moving away", …"""


@dataclass(frozen=True)
class NextToGo:
    """The pod the manager would evict first if the node were starved of ``resource`` now."""

    node: str
    namespace: str
    pod: str
    uid: str
    resource: str
    """The starved resource the ranking is for (``memory``, ``ephemeral-storage``, ``pids``)."""
    message: str
    """The exact Evicted message the kubelet would emit."""
    reason: str
    """Why it sits first (the ranking's own words)."""
    basis: str
    """e.g. "ranking on the current usage at tick N"."""


@dataclass(frozen=True)
class NodeNow:
    """One node after its latest decided tick."""

    node: str
    tick: int
    time_us: int
    stale: bool
    """The node did not answer recently (a gap): shown as stale, never as healthy."""
    stale_reason: str | None
    kubelet_version: str
    signals: Mapping[str, int]
    """Observed value per signal this tick."""
    thresholds: Mapping[str, tuple[int, ...]]
    """Per signal: the hard/soft threshold values in force."""
    conditions: tuple[str, ...]
    """Node conditions the manager reports now (MemoryPressure, …)."""
    next_to_go: NextToGo | None
    forecasts: tuple[Forecast, ...]
    tick_time_us: int | None = None
    """The tick's own time, the same for every node of a tick (``time_us`` is the manager's clock: the node's
    stats' sample time, which differs by node within a tick); None where only ``time_us`` is known."""
    catching_up: str | None = None
    """Set on the newest tick shown before the engine has replayed the node's history (live/preview.py): what
    is not known yet (conditions, the pod next to go); None once the node is decided by the engine."""

    @classmethod
    def without_pass(
        cls,
        node: str,
        tick: int,
        time_us: int,
        *,
        stale: bool,
        reason: str | None,
        version: str,
        catching_up: str | None = None,
    ) -> NodeNow:
        """A node whose tick gave no pass (a gap, or one not replayed yet): nothing observed, nothing ranked."""
        return cls(
            node=node,
            tick=tick,
            time_us=time_us,
            stale=stale,
            stale_reason=reason,
            kubelet_version=version,
            signals={},
            thresholds={},
            conditions=(),
            next_to_go=None,
            forecasts=(),
            tick_time_us=time_us,
            catching_up=catching_up,
        )


@dataclass(frozen=True)
class LiveEvent:
    """Something that changed: one JSON line of ``watch``, one row of the live timeline."""

    kind: str
    """One of :data:`EVENT_KINDS`."""
    node: str
    time_us: int
    details: Mapping[str, object]
    """Plain JSON-able data: pod, message, predicted message, byte diff, …"""
