"""One node's live timeline: its recent ticks against its thresholds, scrolling with the cursor pinned to now.

The points are the ones the live view kept (:data:`tui.live_model.HISTORY` per node), drawn by the replayed
timeline's own plot widget. Moving the cursor (``h``/``l``) unpins it: new ticks then arrive without moving it;
``end`` (or ``f``) pins it to now again.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Footer, Static

from replay.views import SHORT_SIGNAL
from tui.fmt import fmt_signal_value
from tui.live_model import fmt_seconds, to_datetime
from tui.live_plot import LiveTimeline, in_force
from tui.screens.live_overview import KIND_LABEL, LiveScreen, what
from tui.widgets.signal_plot import SignalPlot, legend
from tui.widgets.title_header import TitleHeader


class LiveTimelineScreen(LiveScreen):
    TITLE = "Live timeline"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "move(-1)", "◀ tick"),
        Binding("right,l", "move(1)", "tick ▶"),
        Binding("shift+left,H", "move(-10)", "◀ 10", show=False),
        Binding("shift+right,L", "move(10)", "10 ▶", show=False),
        Binding("end,f", "pin", "Follow now", key_display="f"),
        Binding("plus,equals_sign,i", "zoom(0.5)", "Zoom in", key_display="+"),
        Binding("minus,o", "zoom(2)", "Zoom out", key_display="-"),
        Binding("tab,down,j", "signal(1)", "Next signal", key_display="tab"),
        Binding("shift+tab,up,k", "signal(-1)", "Prev signal", show=False),
        Binding("z", "zoom_y", "Zoom on thresholds"),
    ]

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node
        self.model = LiveTimeline()

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield Static(f"{self.node}: waiting for its ticks…", id="timeline-title")
        yield SignalPlot(id="plot")
        yield Static(id="plot-legend")
        with Horizontal(id="timeline-bottom"):
            yield Static(id="cursor-values")
            yield Static(id="cursor-events")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.node
        self.ready = True
        self.live_changed()
        self.run_worker(
            lambda: self.live_app.seed_history(self.node),
            name="the node's recent past",
            group="seed",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def on_resize(self) -> None:
        self.redraw()

    def live_changed(self) -> None:
        events = [r.event for r in self.live.events if r.event.node == self.node]
        now = self.live.nodes.get(self.node)
        if now is not None:
            self.model.kinds.update({(f.signal, f.threshold): f.threshold_kind for f in now.forecasts})
        self.model.update(list(self.live.history.get(self.node, ())), events)
        self.redraw()

    def redraw(self) -> None:
        model = self.model
        point = model.at_cursor()
        if point is None:
            return
        lo, hi = model.window()
        state = "pinned to now (h/l move)" if model.pinned else "held (f: follow now)"
        self.query_one("#timeline-title", Static).update(
            Text.assemble(
                (f"{self.node} · ", "bold"),
                f"last {len(model.points)} ticks kept · {lo}–{hi} shown · cursor {to_datetime(point.time_us):%H:%M:%S} "
                f"(tick {point.tick}) · ",
                (state, "bold green" if model.pinned else "bold yellow"),
                (" · ⏸ STALE" if point.stale else "", "bold yellow"),
            )
        )
        plot = self.query_one(SignalPlot)
        data = model.plot(max(20, plot.size.width - 10))
        plot.draw(data)
        self.query_one("#plot-legend", Static).update(legend(data))
        self.query_one("#cursor-values", Static).update(self._values())
        self.query_one("#cursor-events", Static).update(self._events())

    def _values(self) -> Table:
        table = Table(box=None, expand=True, show_edge=False, pad_edge=False, collapse_padding=True)
        table.add_column("signal", no_wrap=True, overflow="ellipsis")
        table.add_column("met", no_wrap=True, min_width=3)
        table.add_column("now", no_wrap=True, min_width=9)
        table.add_column("thresholds", no_wrap=True, overflow="ellipsis")
        point = self.model.at_cursor()
        if point is None:
            return table
        for signal in self.model.signals():
            value = point.signals.get(signal)
            limits = in_force(point, signal)
            met = value is not None and any(value < t for t in limits)
            table.add_row(
                Text(SHORT_SIGNAL.get(signal, signal), style="bold reverse" if signal == self.model.signal else ""),
                Text("MET", style="bold red") if met else Text("·"),
                fmt_signal_value(signal, value),
                " ".join(fmt_signal_value(signal, t) for t in limits) or "—",
            )
        return table

    def _events(self) -> Text:
        out = Text()
        point = self.model.at_cursor()
        if point is None:
            return out
        out.append("conditions: ", style="bold")
        out.append(", ".join(point.conditions) or "none", style="orange1" if point.conditions else "")
        now = self.live.nodes.get(self.node)
        if now is not None and self.model.pinned:
            for f in now.forecasts:
                if f.signal == self.model.signal and f.seconds_to_threshold is not None:
                    out.append(f"\n{f.threshold_kind} in {fmt_seconds(f.seconds_to_threshold)}", style="bold")
                    out.append(f" ({f.method})", style="dim")
        here = [e for e in self.model.events if _tick_of(self.model, e.time_us) == self.model.cursor]
        for e in here:
            out.append(
                f"\n{KIND_LABEL.get(e.kind, e.kind)}: ",
                style="bold red" if "kill" in e.kind or "real" in e.kind else "bold",
            )
            out.append(what(e))
        return out

    def action_move(self, steps: int) -> None:
        self.model.move(steps)
        self.redraw()

    def action_pin(self) -> None:
        self.model.pin()
        self.redraw()

    def action_zoom(self, factor: float) -> None:
        self.model.zoom(factor)
        self.redraw()

    def action_signal(self, step: int) -> None:
        self.model.next_signal(step)
        self.redraw()

    def action_zoom_y(self) -> None:
        self.model.zoom_y = not self.model.zoom_y
        self.redraw()


def _tick_of(model: LiveTimeline, time_us: int) -> int | None:
    """The index of the first kept point at or after ``time_us`` (the tick that saw it)."""
    for i, p in enumerate(model.points):
        if p.time_us >= time_us:
            return i
    return None
