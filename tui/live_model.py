"""What the live view holds between polls: each node now, a bounded recent history per node, the events.

Plain data, no widgets. The engine (:class:`live.engine.LiveEngine`) carries each node's eviction-manager
state; this keeps only what the screens draw: the latest :class:`~live.model.NodeNow` per node, the last
:data:`HISTORY` decided ticks of each node (the live timeline's points) and the last :data:`MAX_EVENTS` events.
Memory is bounded by those two numbers whatever the recording's length.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from live.model import Forecast, LiveEvent, NodeNow

HISTORY = 360
"""Decided ticks kept per node for the live timeline (an hour at the kubelet's 10 s)."""
MAX_EVENTS = 500
"""Events kept for the list (the oldest go first)."""

LISTED = frozenset(
    {"warning", "predicted-eviction", "real-eviction", "kernel-kill", "pressure-start", "pressure-end", "stale"}
)
"""The event kinds the list shows (a next-to-go change shows in the node's row; ``fresh`` ends a stale spell)."""


def to_datetime(time_us: int) -> datetime:
    return datetime.fromtimestamp(time_us / 1e6, tz=UTC)


@dataclass(frozen=True)
class Point:
    """One decided tick of a node, as the live timeline draws it."""

    tick: int
    time_us: int
    signals: Mapping[str, int]
    thresholds: Mapping[str, tuple[int, ...]]
    conditions: tuple[str, ...]
    stale: bool


@dataclass(frozen=True)
class Row:
    """One event of the list: its index (the row's key), the event, and how the list flags it."""

    index: int
    event: LiveEvent


@dataclass
class LiveState:
    nodes: dict[str, NodeNow] = field(default_factory=dict)
    history: dict[str, deque[Point]] = field(default_factory=dict)
    events: deque[Row] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))
    polls: int = 0
    """Polls that brought something (the tests wait on it; the title shows the last tick's time)."""
    last_time_us: int | None = None
    _count: int = 0

    def apply(self, nodes: Mapping[str, NodeNow], events: Sequence[LiveEvent], last_time_us: int | None) -> None:
        """One poll's answer: every node's now (a point added when its tick moved on) and the new events."""
        for name, now in nodes.items():
            if now.catching_up is not None:  # the newest tick before the engine's: a timeline point once decided
                continue
            points = self.history.setdefault(name, deque(maxlen=HISTORY))
            if not points or points[-1].tick != now.tick:
                points.append(
                    Point(now.tick, now.time_us, dict(now.signals), dict(now.thresholds), now.conditions, now.stale)
                )
            elif now.stale != points[-1].stale:  # the same tick, now known to be stale
                points[-1] = Point(
                    now.tick, now.time_us, points[-1].signals, points[-1].thresholds, now.conditions, now.stale
                )
        self.nodes = dict(nodes)
        for event in events:
            if event.kind in LISTED:
                self.events.append(Row(self._count, event))
                self._count += 1
        self.last_time_us = last_time_us
        self.polls += 1

    def seed(self, node: str, points: Sequence[Point]) -> None:
        """Earlier ticks of ``node`` (from a replay of the recording), before the ones kept, as room allows."""
        kept = self.history.setdefault(node, deque(maxlen=HISTORY))
        first = kept[0].tick if kept else None
        earlier = [p for p in points if first is None or p.tick < first][-(HISTORY - len(kept)) :]
        if len(kept) < HISTORY and earlier:
            self.history[node] = deque([*earlier, *kept], maxlen=HISTORY)

    def row(self, index: int) -> Row | None:
        return next((r for r in self.events if r.index == index), None)

    def predicted_for(self, real: LiveEvent) -> Row | None:
        """The latest predicted eviction of the same pod on the same node before ``real``: what it is flagged
        against (the engine's own details name it when it knows better)."""
        pod = real.details.get("pod")
        for row in reversed(self.events):
            e = row.event
            if (
                e.kind == "predicted-eviction"
                and e.node == real.node
                and e.details.get("pod") == pod
                and e.time_us <= real.time_us
            ):
                return row
        return None


def soonest(forecasts: Sequence[Forecast]) -> Forecast | None:
    """The forecast that reaches its threshold first (an already-met one first of all); None: none trends."""
    timed = [f for f in forecasts if f.seconds_to_threshold is not None]
    return min(timed, key=lambda f: (f.seconds_to_threshold, f.threshold_kind != "hard")) if timed else None


def fmt_seconds(seconds: float | None) -> str:
    """``in 4m10s``; ``MET`` when already met; ``—`` without a trend."""
    if seconds is None:
        return "—"
    if seconds <= 0:
        return "MET"
    s = round(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{h}h{m:02d}m"
    return f"{m}m{sec:02d}s" if m else f"{sec}s"


def points_from_replay(series: Any, conditions: Any, before_tick: int, room: int) -> list[Point]:
    """The node's ticks before ``before_tick`` (the last ``room`` of them) as points, from a replay of the
    recording (``ResultsView.node_series`` rows and the node's condition intervals): a followed recording's
    timeline then shows its recent past, not only what arrived since the view opened."""
    import polars as pl

    rows = series.filter(pl.col("tick") < before_tick)
    ticks = sorted(set(rows["tick"].to_list()))[-room:] if room > 0 else []
    if not ticks:
        return []
    rows = rows.filter(pl.col("tick") >= ticks[0])
    signals: dict[int, dict[str, int]] = {t: {} for t in ticks}
    limits: dict[int, dict[str, list[int]]] = {t: {} for t in ticks}
    times: dict[int, int] = {}
    for tick, when, signal, available, value in rows.select(
        "tick", "time", "signal", "available", "threshold_value"
    ).iter_rows():
        times[tick] = int(when.timestamp() * 1_000_000)
        if available is not None:
            signals[tick][signal] = available
        if value is not None:
            limits[tick].setdefault(signal, []).append(value)
    spells = [(r["condition"], r["from_tick"], r["to_tick"]) for r in conditions.iter_rows(named=True)]
    return [
        Point(
            t,
            times.get(t, 0),
            signals[t],
            {s: tuple(v) for s, v in limits[t].items()},
            tuple(c for c, first, last in spells if first <= t and (last is None or t < last)),
            False,
        )
        for t in ticks
    ]
