"""A node signal over time with textual-plotext: thresholds, pressure, eviction marks, the cursor.

The legend is not drawn inside the plot (plotext puts it in the top left corner, over the data at 80×24):
:func:`legend` gives it as one line of text for under the plot. Pressure is a strip along the top row
(not a fill over the whole height: the curve and the cursor stay visible through it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text
from textual_plotext import PlotextPlot

from tui.timeline_model import PlotData

BAND_COLOR = "orange"
RACE_COLOR = "red"
MARKS = (("predicted", "▼", "red+", 0.92), ("real", "◆", "green+", 0.84), ("kernel", "✖", "red+", 0.76))
"""Eviction and kill marks: a row each (all show when they fall on the same pass)."""
THRESHOLD_COLORS = ("red", "magenta", "yellow", "cyan")


NICE = (1.0, 2.0, 2.5, 5.0)
"""Tick steps are one of these times a power of ten (counts skip 2.5 below 10: no fractional step)."""


def _steps(span: float, integer: bool) -> list[float]:
    power = 10.0 ** (math.floor(math.log10(span)) - 2)
    out = []
    for _ in range(5):
        out += [m * power for m in NICE if not integer or (m * power).is_integer()]
        power *= 10
    return out


def _label(value: float, decimals: int) -> str:
    return f"{value:,.{decimals}f}"


def y_ticks(
    bottom: float, top: float, unit: str, n: int = 5, *, marks: Sequence[float] = (), rows: int | None = None
) -> tuple[list[float], list[str]]:
    """Round ticks inside the axis, about ``n`` of them, each label different: as many decimals as the step
    needs (a 0–0.3 axis reads 0.00, 0.05, 0.10 …, never 0.1 twice); counts (inodes, processes) step by whole
    numbers and read as integers. ``marks`` (the thresholds) get a tick of their own, labelled with their value,
    so the row a threshold is drawn on reads as its value; with ``rows`` (the plot's height) no two ticks share
    a row (plotext would print one label over the other), and a mark's row is its own."""
    span = top - bottom
    integer = unit == "count"
    if not math.isfinite(span) or span <= 0:
        return [bottom], [f"{bottom:,.0f}" if integer else f"{bottom:,.1f}"]

    def ticks_of(step: float) -> list[float]:
        first, last = math.ceil(bottom / step - 1e-9), math.floor(top / step + 1e-9)
        return [round(k * step, 12) for k in range(first, last + 1)]

    candidates = [(abs(len(ticks_of(s)) - n), -s, s) for s in _steps(span, integer) if len(ticks_of(s)) >= 2]
    if candidates:
        step = min(candidates)[2]
        ticks = ticks_of(step)
        power = math.floor(math.log10(step) + 1e-9)
        # exact labels: 0.25 needs two decimals where 0.2 and 0.5 need one
        decimals = 0 if integer else max(0, -power + (1 if round(step / 10.0**power, 6) == 2.5 else 0))
    else:  # a count axis shorter than 1
        ticks, decimals = [float(math.ceil(bottom))], 0

    def row(value: float) -> float:
        return round((value - bottom) / span * (rows - 1)) if rows else value

    labelled: dict[float, tuple[float, int]] = {}  # row → (tick, decimals of its label)
    if bottom <= 0.0 <= top:  # an axis from 0 says so (issue 27: no 0 label where the axis starts at 0)
        labelled[row(0.0)] = (0.0, decimals)
    for mark in sorted({m for m in marks if bottom <= m <= top}):
        # its own value, up to two decimals finer than the axis (9.79 on a 0–60 axis, not 10)
        finer = (d for d in range(decimals, decimals + 2) if round(mark, d) == mark)
        exact = 0 if integer else next(finer, decimals + 2)
        labelled.setdefault(row(mark), (mark, exact))
    for tick in ticks:
        labelled.setdefault(row(tick), (tick, decimals))
    chosen = sorted(labelled.values())
    # one number format per axis: every label with the decimals the finest one needs (800.0, 1,024.0; not 800, 1,024.5)
    finest = max((d for _t, d in chosen), default=0)
    extra = 0
    while True:  # never two equal labels (a guard: exact labels of distinct ticks differ)
        labels = [_label(t, finest + extra) for t, _d in chosen]
        if len(set(labels)) == len(labels) or extra > 12:
            return [t for t, _d in chosen], labels
        extra += 1


def legend(data: PlotData) -> Text:
    """One line: each series once (a node's pressure condition once however many spells it had)."""
    out = Text()

    def item(mark: str, style: str, label: str) -> None:
        if out:
            out.append("  ")
        out.append(mark, style=style)
        out.append(f" {label}")

    item("⣿", "blue", data.signal)
    low = lowest(data)
    if low is not None:
        item("●", "bold bright_cyan", f"lowest {low[1]:,.1f} {data.unit}")
    for (label, _series), color in zip(data.thresholds, THRESHOLD_COLORS * 4, strict=False):
        item("──", color, f"{label} threshold")
    for condition in dict.fromkeys(b.condition for b in data.bands):
        item("▀▀", "orange1", condition)
    kinds = {m.kind for m in data.markers}
    if "predicted" in kinds:
        item("▼", "bold red", "predicted eviction")
    if "real" in kinds:
        item("◆", "bold green", "real eviction")
    if "kernel" in kinds:
        item("✖", "bold red", "kernel OOM kill")
    if data.races:
        item("▄▄", "red", "memory ran out between passes")
    item("│", "bold", "cursor")
    if data.zoomed:
        item("z", "bold", "zoomed on the thresholds (z: whole range)")
    return out


def lowest(data: PlotData) -> tuple[int, float] | None:
    """(x, value) of the window's lowest sample: drawn on top of everything (a dip to 845.7Mi on the 1,024
    threshold's row must not vanish under the line)."""
    points = [(y, x) for x, y in zip(data.xs, data.ys, strict=True) if y is not None]
    if not points:
        return None
    y, x = min(points)
    return x, y


class SignalPlot(PlotextPlot):
    """Draws a :class:`PlotData`; the screen decides what it holds."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data: PlotData | None = None

    def draw(self, data: PlotData) -> None:
        self.data = data
        plt = self.plt
        plt.clear_figure()
        lo, hi = data.window
        bottom, top = data.y_range
        points = [(x, y) for x, y in zip(data.xs, data.ys, strict=True) if y is not None]
        # the thresholds first, the signal over them: where both fall on one row, the signal shows
        for (_label, series), color in zip(data.thresholds, THRESHOLD_COLORS * 4, strict=False):
            tpoints = [(x, y) for x, y in zip(data.xs, series, strict=True) if y is not None and y <= top]
            if tpoints:
                plt.plot([p[0] for p in tpoints], [p[1] for p in tpoints], color=color, marker="─")
        if points:
            plt.plot([p[0] for p in points], [min(p[1], top) for p in points], color="blue+", marker="braille")
        for band in data.bands:
            first, last = max(band.first, lo), min(band.last, hi)
            xs = list(range(first, last + 1)) or [first]
            plt.plot(xs, [top] * len(xs), color=BAND_COLOR, marker="▀")
        plt.vline(data.cursor, "white")  # before the marks: an eviction at the cursor stays visible
        for first, last in data.races:  # the stretch between the two passes, along the bottom
            xs = list(range(first, last + 1))
            plt.plot(xs, [bottom] * len(xs), color=RACE_COLOR, marker="▄")
        for kind, marker, color, height in MARKS:
            marks = [m.index for m in data.markers if m.kind == kind]
            if marks:  # each kind a row lower: all show when they fall on the same pass
                y = bottom + (top - bottom) * height
                plt.scatter(marks, [y] * len(marks), marker=marker, color=color)
        low = lowest(data)
        if low is not None:  # last: the lowest sample is never under a line or a band
            plt.scatter([low[0]], [min(low[1], top)], marker="●", color="cyan+")
        plt.xlim(lo, max(hi, lo + 1))
        plt.ylim(bottom, top)
        plt.xticks([p for p, _ in data.x_labels], [label for _, label in data.x_labels])
        levels = [next((v for v in reversed(series) if v is not None), None) for _l, series in data.thresholds]
        rows = max(2, self.size.height - 5) if self.size.height else None  # title, frame, time labels, unit
        plt.yticks(*y_ticks(bottom, top, data.unit, marks=[v for v in levels if v is not None], rows=rows))
        plt.ylabel(data.unit)
        plt.title(f"{data.signal}  (available, {data.unit}{', zoomed' if data.zoomed else ''})")
        self.refresh()
