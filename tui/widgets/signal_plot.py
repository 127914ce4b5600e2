"""A node signal over time with textual-plotext: thresholds, pressure bands, eviction marks, the cursor."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from tui.timeline_model import PlotData

BAND_COLOR = "orange"
THRESHOLD_COLORS = ("red", "magenta", "yellow", "cyan")


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
        values = [v for v in data.ys if v is not None]
        for _label, series in data.thresholds:
            values.extend(v for v in series if v is not None)
        top = max(values, default=1.0) * 1.05 or 1.0
        bottom = min(0.0, min(values, default=0.0))
        for band in data.bands:
            first, last = max(band.first, lo), min(band.last, hi)
            xs = list(range(first, last + 1)) or [first]
            plt.plot(xs, [top] * len(xs), fillx=True, color=BAND_COLOR, marker="░", label=band.condition)
        points = [(x, y) for x, y in zip(data.xs, data.ys, strict=True) if y is not None]
        if points:
            plt.plot([p[0] for p in points], [p[1] for p in points], color="blue+", marker="braille",
                     label=f"{data.signal} available")
        for (label, series), color in zip(data.thresholds, THRESHOLD_COLORS * 4, strict=False):
            tpoints = [(x, y) for x, y in zip(data.xs, series, strict=True) if y is not None]
            if tpoints:
                plt.plot([p[0] for p in tpoints], [p[1] for p in tpoints], color=color, marker="─", label=label)
        for kind, marker, color, height, label in (("predicted", "▼", "red+", top, "predicted eviction"),
                                                   ("real", "◆", "green+", top * 0.92, "real eviction"),
                                                   ("kernel", "✖", "magenta+", top * 0.84, "kernel OOM kill")):
            marks = [m.index for m in data.markers if m.kind == kind]
            if marks:  # each kind a row lower: all show when they fall on the same pass
                plt.scatter(marks, [height] * len(marks), marker=marker, color=color, label=label)
        plt.vline(data.cursor, "white")
        plt.xlim(lo, max(hi, lo + 1))
        plt.ylim(bottom, top)
        plt.xticks([p for p, _ in data.x_labels], [label for _, label in data.x_labels])
        plt.ylabel(data.unit)
        plt.title(f"{data.signal}  (available, {data.unit})")
        self.refresh()
