"""The node timeline's state: one node's signals over its passes, a cursor, a zoom window, eviction marks.

Plain data and arithmetic, no widgets: the timeline screen moves the cursor and the window here and
draws what :meth:`TimelineModel.plot` returns. Long series are reduced to the plot's width by the
minimum of each bucket (the lowest available is what crosses a threshold, so it must not vanish).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from replay.results import Eviction, KernelKill, Match, NodeResult, ThresholdSetting, TooFast
from replay.views import is_bytes, signal_key

MIN_WINDOW = 8


def condition_of(signal: str) -> str:
    """The node condition a signal's thresholds raise (eviction_manager.go: signalToNodeCondition)."""
    if signal.startswith(("memory", "allocatableMemory")):
        return "MemoryPressure"
    return "PIDPressure" if signal.startswith("pid") else "DiskPressure"


def bucket_min(series: Sequence[int | None], xs: Sequence[int], step: int, hi: int) -> list[float | None]:
    """The lowest value of each ``step``-wide bucket starting at ``xs`` (up to ``hi``): a plot narrower than its
    passes keeps every dip the threshold would see, not an average that hides it."""
    out: list[float | None] = []
    for x in xs:
        bucket = [v for v in series[x : min(x + step, hi + 1)] if v is not None]
        out.append(float(min(bucket)) if bucket else None)
    return out


@dataclass(frozen=True)
class Marker:
    index: int
    """Position in the node's passes."""
    kind: str
    """``predicted``, ``real``, or ``kernel`` (a recorded kernel OOM kill, at the first pass at or after it)."""
    pod: str
    eviction_id: int | None


@dataclass(frozen=True)
class Band:
    condition: str
    first: int
    last: int


@dataclass(frozen=True)
class PlotData:
    """What the plot widget draws: x positions are pass indexes."""

    signal: str
    unit: str
    scale: float
    xs: list[int]
    ys: list[float | None]
    thresholds: list[tuple[str, list[float | None]]]
    bands: list[Band]
    markers: list[Marker]
    cursor: int
    window: tuple[int, int]
    x_labels: list[tuple[int, str]]
    y_range: tuple[float, float]
    """The y axis: 0 to the top of the window's values, or zoomed around the thresholds (``z``)."""
    zoomed: bool = False
    races: list[tuple[int, int]] = field(default_factory=list)
    """Too fast for the loop (the node's ``too_fast`` on this signal): (pass before, pass after) where memory
    ran out between two passes, clipped to the window."""


@dataclass(frozen=True)
class CursorValue:
    signal: str
    available: int | None
    capacity: int | None
    thresholds: list[tuple[ThresholdSetting, int | None, bool | None]]
    """(threshold, its value at this pass, met)"""


@dataclass
class TimelineModel:
    node: NodeResult
    series: pl.DataFrame
    conditions: pl.DataFrame
    evictions: list[Eviction]
    real: list[Match]
    kills: list[KernelKill] = field(default_factory=list)
    """The node's kernel OOM kills (``ReplayResult.kernel_kills``, one per kill: ``ResultsView.kills``): marked, and
    n / p stop at them too."""
    ticks: list[int] = field(init=False)
    times: list[datetime] = field(init=False)
    signals: list[str] = field(init=False)
    signal: str = field(init=False)
    cursor: int = field(init=False, default=0)
    window: tuple[int, int] = field(init=False)
    zoom_y: bool | None = field(init=False, default=None)
    """The y axis around the thresholds (True), 0 to the top (False), or None: zoomed when the thresholds
    would sit on the 0 line (below a tenth of the window's top)."""
    _values: dict[str, list[int | None]] = field(init=False, default_factory=dict)
    _by_threshold: dict[tuple[str, int], list[int | None]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        passes = self.series.select("tick", "time").unique("tick").sort("tick")
        self.ticks = passes["tick"].to_list()
        self.times = passes["time"].to_list()
        self.signals = sorted(set(self.series["signal"].to_list()), key=signal_key)
        self.signal = self.signals[0] if self.signals else ""
        first_signal = next(
            (e.signal for e in sorted(self.evictions, key=lambda e: (e.time, e.id)) if e.signal in self.signals), None
        )
        if first_signal:  # open on the signal the node's first eviction was for (imagefs, inodes …)
            self.signal = first_signal
        self.window = (0, max(0, len(self.ticks) - 1))
        first = self.first_eviction()
        self.cursor = first if first is not None else 0

    # -- data ---------------------------------------------------------------------------------
    def _index(self) -> dict[int, int]:
        return {t: i for i, t in enumerate(self.ticks)}

    def values(self, signal: str) -> list[int | None]:
        if signal not in self._values:
            out: list[int | None] = [None] * len(self.ticks)
            rows = self.series.filter(pl.col("signal") == signal).unique("tick", keep="first")
            idx = self._index()
            for tick, available in rows.select("tick", "available").iter_rows():
                out[idx[tick]] = available
            self._values[signal] = out
        return self._values[signal]

    def threshold_values(self, signal: str, threshold_id: int) -> list[int | None]:
        key = (signal, threshold_id)
        if key not in self._by_threshold:
            out: list[int | None] = [None] * len(self.ticks)
            rows = self.series.filter((pl.col("signal") == signal) & (pl.col("threshold_id") == threshold_id))
            idx = self._index()
            for tick, value in rows.select("tick", "threshold_value").iter_rows():
                out[idx[tick]] = value
            self._by_threshold[key] = out
        return self._by_threshold[key]

    def thresholds_of(self, signal: str) -> list[ThresholdSetting]:
        """The signal's thresholds that can be met: not the kubelet's zero containerfs copies (no operator;
        UpdateContainerFsThresholds adds them even when nobody configured one), each drawn and listed once."""
        first: dict[str, ThresholdSetting] = {}
        for t in self.node.thresholds:
            if t.signal == signal and t.operator:
                first.setdefault(t.text, t)
        return list(first.values())

    def index_at(self, when: datetime | None) -> int:
        """The first pass at or after ``when`` (the last pass if none)."""
        if when is None or not self.times:
            return 0
        return min(bisect_left(self.times, when), len(self.times) - 1)

    def bands(self) -> list[Band]:
        out = []
        idx = self._index()
        for row in self.conditions.iter_rows(named=True):
            first = idx.get(row["from_tick"], 0)
            last = idx.get(row["to_tick"], len(self.ticks) - 1) if row["to_tick"] is not None else len(self.ticks) - 1
            out.append(Band(row["condition"], first, last))
        return out

    def markers(self) -> list[Marker]:
        idx = self._index()
        out = [Marker(idx.get(e.tick, self.index_at(e.time)), "predicted", e.pod, e.id) for e in self.evictions]
        out += [Marker(self.index_at(m.real.time), "real", m.real.pod or "?", m.predicted_id) for m in self.real]
        out += [Marker(self.index_at(k.time), "kernel", k.pod or k.victim or "?", None) for k in self.kills]
        return sorted(out, key=lambda m: (m.index, m.kind))

    def races(self, signal: str) -> list[tuple[int, int, TooFast]]:
        """(pass before, pass after, the moment) of each time ``signal`` ran out between two passes
        (``node.too_fast``)."""
        idx = self._index()
        return [
            (idx[t.from_tick], idx[t.to_tick], t)
            for t in self.node.too_fast
            if t.signal == signal and t.from_tick in idx and t.to_tick in idx
        ]

    def first_eviction(self) -> int | None:
        marks = self.markers()
        return marks[0].index if marks else None

    # -- moving -------------------------------------------------------------------------------
    def _clamp(self, i: int) -> int:
        return max(0, min(len(self.ticks) - 1, i))

    def move(self, steps: int) -> None:
        self.cursor = self._clamp(self.cursor + steps)
        self._follow()

    def goto(self, index: int) -> None:
        self.cursor = self._clamp(index)
        self._follow()

    def _follow(self) -> None:
        lo, hi = self.window
        if self.cursor < lo or self.cursor > hi:
            width = hi - lo
            lo = self._clamp(self.cursor - width // 2)
            self.window = (lo, self._clamp(lo + width))

    def zoom(self, factor: float) -> None:
        """Narrow (factor < 1) or widen the window around the cursor."""
        lo, hi = self.window
        width = max(MIN_WINDOW, round((hi - lo + 1) * factor))
        total = len(self.ticks)
        if width >= total:
            self.window = (0, max(0, total - 1))
            return
        lo = max(0, min(total - width, self.cursor - width // 2))
        self.window = (lo, lo + width - 1)

    def jump(self, forward: bool) -> Marker | None:
        """Move to the next (or previous) marker (an eviction, predicted or real, or a kernel kill); None when there
        is none that way."""
        marks = self.markers()
        pick = (
            [m for m in marks if m.index > self.cursor][:1]
            if forward
            else [m for m in marks if m.index < self.cursor][-1:]
        )
        if not pick:
            return None
        self.goto(pick[0].index)
        return pick[0]

    def next_signal(self, step: int = 1) -> None:
        if self.signals:
            self.signal = self.signals[(self.signals.index(self.signal) + step) % len(self.signals)]

    def evictions_at_cursor(self) -> list[Eviction]:
        idx = self._index()
        return [e for e in self.evictions if idx.get(e.tick) == self.cursor]

    # -- what is shown ------------------------------------------------------------------------
    def at_cursor(self) -> list[CursorValue]:
        tick = self.ticks[self.cursor] if self.ticks else -1
        rows = self.series.filter(pl.col("tick") == tick)
        out = []
        for signal in self.signals:
            mine = rows.filter(pl.col("signal") == signal)
            if mine.is_empty():
                out.append(CursorValue(signal, None, None, []))
                continue
            by_id = {r["threshold_id"]: r for r in mine.iter_rows(named=True)}
            first = mine.row(0, named=True)
            out.append(
                CursorValue(
                    signal,
                    first["available"],
                    first["capacity"],
                    [
                        (t, by_id.get(t.id, {}).get("threshold_value"), by_id.get(t.id, {}).get("met"))
                        for t in self.thresholds_of(signal)
                    ],
                )
            )
        return out

    def active_conditions(self) -> list[str]:
        return [b.condition for b in self.bands() if b.first <= self.cursor <= b.last]

    def plot(self, width: int) -> PlotData:
        lo, hi = self.window
        signal = self.signal
        values = self.values(signal)
        step = max(1, (hi - lo + 1) // max(1, width))
        xs = list(range(lo, hi + 1, step))

        def reduce(series: list[int | None]) -> list[float | None]:
            return bucket_min(series, xs, step, hi)

        thresholds = []
        for t in self.thresholds_of(signal):
            kind = "hard" if t.hard else "soft"
            thresholds.append((f"{kind} {t.text.split(' ')[0]}", reduce(self.threshold_values(signal, t.id))))
        ys = reduce(values)
        (bottom, top), zoomed = self._y_range(ys, [v for _l, series in thresholds for v in series])
        # the unit of what the axis shows: zoomed on a 100Mi threshold of an 8Gi node reads in MiB
        if is_bytes(signal):
            unit, scale = ("GiB", float(1 << 30)) if max(top, -bottom) >= 4 << 30 else ("MiB", float(1 << 20))
        else:
            unit, scale = "count", 1.0

        def scaled(series: list[float | None]) -> list[float | None]:
            return [None if v is None else v / scale for v in series]

        ys = scaled(ys)
        thresholds = [(label, scaled(series)) for label, series in thresholds]
        y_range = (bottom / scale, top / scale)
        n_labels = 4
        positions = sorted({lo + (hi - lo) * k // max(1, n_labels - 1) for k in range(n_labels)})
        labels = [(p, self.times[p].strftime("%H:%M:%S")) for p in positions if p < len(self.times)]
        return PlotData(
            signal,
            unit,
            scale,
            xs,
            ys,
            thresholds,
            [b for b in self.bands() if b.last >= lo and b.first <= hi and b.condition == condition_of(signal)],
            [m for m in self.markers() if lo <= m.index <= hi],
            self.cursor,
            (lo, hi),
            labels,
            y_range,
            zoomed,
            [(max(a, lo), min(b, hi)) for a, b, _t in self.races(signal) if b >= lo and a <= hi],
        )

    def _y_range(self, ys: list[float | None], limits: list[float | None]) -> tuple[tuple[float, float], bool]:
        """0 to the top of what is drawn, or 0 to three times the highest threshold (a 67Mi reading against a
        100Mi threshold is on the 0 line of a 0–8Gi axis, in the middle of a 0–300Mi one). Zoomed by itself only
        when the signal comes that near: a 2.5Gi → 927Mi fall never below 300Mi would be a flat line at the
        zoomed top (``z`` still zooms)."""
        values = [v for v in ys if v is not None]
        marks = [v for v in limits if v is not None and v > 0]
        top = max([*values, *marks], default=1.0) * 1.05 or 1.0
        bottom = min(0.0, min(values, default=0.0))
        if not marks:
            return (bottom, top), False
        near = max(marks) * 3
        zoom = self.zoom_y if self.zoom_y is not None else near * 3.3 < top and any(v < near for v in values)
        if not zoom or near >= top:
            return (bottom, top), False
        return (bottom, near), True

    def toggle_zoom_y(self) -> None:
        shown = self.plot(80).zoomed
        self.zoom_y = not shown
