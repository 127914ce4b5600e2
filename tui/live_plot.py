"""The live timeline's state: one node's recent points, a cursor pinned to now unless the user moves it.

The replayed timeline (:mod:`tui.timeline_model`) reads a finished result's signal frame; a growing recording has
none, so this draws the same :class:`~tui.timeline_model.PlotData` (on the same
:class:`~tui.widgets.signal_plot.SignalPlot`) from the points the live view kept
(:class:`tui.live_model.LiveState`): the node's last ticks as the engine decided them, its thresholds in force,
its pressure conditions as bands and the events as marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from live.model import LiveEvent
from replay.views import is_bytes, signal_key
from tui.live_model import Point, to_datetime
from tui.timeline_model import Band, Marker, PlotData, bucket_min, condition_of

MARK_KINDS = {"predicted-eviction": "predicted", "real-eviction": "real", "kernel-kill": "kernel"}
MIN_WINDOW = 8


@dataclass
class LiveTimeline:
    """Cursor and window over a node's points; ``pinned``: the cursor stays on the newest point as points come."""

    signal: str = ""
    cursor_tick: int | None = None
    pinned: bool = True
    width: int | None = None
    """Points in the window (None: all the points kept)."""
    zoom_y: bool = False
    kinds: dict[tuple[str, int], str] = field(default_factory=dict)
    """(signal, threshold value) → ``hard``/``soft``, from the node's forecasts (the points hold values only)."""
    points: list[Point] = field(default_factory=list)
    events: list[LiveEvent] = field(default_factory=list)

    def update(self, points: Sequence[Point], events: Sequence[LiveEvent]) -> None:
        """New points: pinned, the cursor moves to the newest; else it stays on its tick (the oldest point when
        its tick has aged out of the history)."""
        self.points = list(points)
        self.events = list(events)
        if not self.signal or self.signal not in self.signals():
            self.signal = self._first_signal()
        if self.pinned and self.points:
            self.cursor_tick = self.points[-1].tick

    def signals(self) -> list[str]:
        names = {s for p in self.points[-1:] for s in p.signals} | {s for p in self.points[-1:] for s in p.thresholds}
        return sorted(names, key=signal_key)

    def _first_signal(self) -> str:
        """The first signal with a threshold in the kubelet's order (memory first)."""
        with_threshold = [s for s in self.signals() if self.points and self.points[-1].thresholds.get(s)]
        return (with_threshold or self.signals() or [""])[0]

    @property
    def cursor(self) -> int:
        if not self.points:
            return 0
        if self.cursor_tick is None:
            return len(self.points) - 1
        ticks = [p.tick for p in self.points]
        return ticks.index(self.cursor_tick) if self.cursor_tick in ticks else 0

    def move(self, steps: int) -> None:
        if not self.points:
            return
        i = max(0, min(len(self.points) - 1, self.cursor + steps))
        self.cursor_tick = self.points[i].tick
        self.pinned = i == len(self.points) - 1 and steps > 0

    def pin(self) -> None:
        self.pinned = True
        if self.points:
            self.cursor_tick = self.points[-1].tick

    def zoom(self, factor: float) -> None:
        n = len(self.points)
        current = self.width or n
        self.width = max(MIN_WINDOW, round(current * factor))
        if self.width >= n:
            self.width = None

    def next_signal(self, step: int) -> None:
        names = self.signals()
        if names:
            i = names.index(self.signal) if self.signal in names else 0
            self.signal = names[(i + step) % len(names)]

    def window(self) -> tuple[int, int]:
        n = len(self.points)
        width = min(self.width or n, n)
        if self.pinned:
            return max(0, n - width), max(0, n - 1)
        lo = max(0, min(n - width, self.cursor - width // 2))
        return lo, max(0, lo + width - 1)

    def at_cursor(self) -> Point | None:
        return self.points[self.cursor] if self.points else None

    def markers(self) -> list[Marker]:
        out = []
        times = [p.time_us for p in self.points]
        for e in self.events:
            kind = MARK_KINDS.get(e.kind)
            if kind is None or not times or e.time_us < times[0]:
                continue
            index = next((i for i, t in enumerate(times) if t >= e.time_us), len(times) - 1)
            out.append(Marker(index, kind, str(e.details.get("pod") or "?"), None))
        return out

    def plot(self, columns: int) -> PlotData:
        lo, hi = self.window()
        signal = self.signal
        step = max(1, (hi - lo + 1) // max(1, columns))
        xs = list(range(lo, hi + 1, step))

        def reduce(values: list[int | None]) -> list[float | None]:
            return bucket_min(values, xs, step, hi)

        ys = reduce([p.signals.get(signal) for p in self.points])
        levels = max((len(in_force(p, signal)) for p in self.points), default=0)
        thresholds = []
        for k in range(levels):
            series = [_nth(p, signal, k) for p in self.points]
            last = next((v for v in reversed(series) if v is not None), None)
            kind = self.kinds.get((signal, last), "") if last is not None else ""
            thresholds.append((kind or (f"#{k + 1}" if levels > 1 else "the"), reduce(series)))
        limits = [v for _l, series in thresholds for v in series if v is not None and v > 0]
        values = [v for v in ys if v is not None]
        top = max([*values, *limits], default=1.0) * 1.05 or 1.0
        bottom = min(0.0, min(values, default=0.0))
        zoomed = bool(self.zoom_y and limits and max(limits) * 3 < top)
        if zoomed:
            top = max(limits) * 3
        if is_bytes(signal):
            unit, scale = ("GiB", float(1 << 30)) if max(top, -bottom) >= 4 << 30 else ("MiB", float(1 << 20))
        else:
            unit, scale = "count", 1.0

        def scaled(series: list[float | None]) -> list[float | None]:
            return [None if v is None else v / scale for v in series]

        positions = sorted({lo + (hi - lo) * k // 3 for k in range(4)})
        labels = [
            (p, to_datetime(self.points[p].time_us).strftime("%H:%M:%S")) for p in positions if p < len(self.points)
        ]
        return PlotData(
            signal,
            unit,
            scale,
            xs,
            scaled(ys),
            [(label, scaled(series)) for label, series in thresholds],
            [b for b in self.bands() if b.condition == condition_of(signal) and b.last >= lo and b.first <= hi],
            [m for m in self.markers() if lo <= m.index <= hi],
            self.cursor,
            (lo, hi),
            labels,
            (bottom / scale, top / scale),
            zoomed,
        )

    def bands(self) -> list[Band]:
        """Each condition's spells over the kept points."""
        out: list[Band] = []
        open_: dict[str, int] = {}
        for i, p in enumerate(self.points):
            for c in p.conditions:
                open_.setdefault(c, i)
            for c in [c for c in open_ if c not in p.conditions]:
                out.append(Band(c, open_.pop(c), i - 1))
        out += [Band(c, first, len(self.points) - 1) for c, first in open_.items()]
        return out


def in_force(point: Point, signal: str) -> tuple[int, ...]:
    """The signal's thresholds that can be met: not the kubelet's zero ``containerfs`` copies (never met)."""
    return tuple(v for v in point.thresholds.get(signal, ()) if v > 0)


def _nth(point: Point, signal: str, k: int) -> int | None:
    values = in_force(point, signal)
    return values[k] if k < len(values) else None
