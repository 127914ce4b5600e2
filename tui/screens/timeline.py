"""Screen 2: one node's signals over time against their thresholds, with a cursor, zoom and eviction jumps."""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime
from typing import ClassVar

import polars as pl
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Static

from replay.replay_report import kill_victim, too_fast_text
from replay.views import SHORT_SIGNAL
from tui.fmt import fmt_clock, fmt_signal_value
from tui.messages import CursorMoved
from tui.screens.base import ResultsScreen
from tui.screens.overview import kill_cause
from tui.timeline_model import TimelineModel
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.signal_plot import SignalPlot, legend
from tui.widgets.title_header import TitleHeader


def pass_index(model: TimelineModel, when: datetime) -> int:
    """The index of the node's last pass at or before ``when`` (its first pass when ``when`` is earlier)."""
    return max(0, bisect_right(model.times, when) - 1)


def cursor_table(model: TimelineModel) -> Table:
    table = Table(box=None, expand=True, show_edge=False, pad_edge=False, collapse_padding=True)
    # at 80 columns the signal's name gives way first: the value and MET stay whole
    table.add_column("signal", no_wrap=True, overflow="ellipsis")
    table.add_column("met", no_wrap=True, min_width=3)
    table.add_column("available", no_wrap=True, min_width=9)
    table.add_column("threshold", no_wrap=True, overflow="ellipsis")
    for value in model.at_cursor():
        label = SHORT_SIGNAL.get(value.signal, value.signal)
        style = "bold reverse" if value.signal == model.signal else ""
        thresholds = (
            " ".join(
                f"{'hard' if t.hard else 'soft'} {fmt_signal_value(value.signal, v)}" for t, v, _met in value.thresholds
            )
            or "—"
        )
        met = any(m for _t, _v, m in value.thresholds)
        table.add_row(
            Text(label, style=style),
            Text("MET", style="bold red") if met else Text("·"),
            fmt_signal_value(value.signal, value.available),
            thresholds,
        )
    return table


class TimelineScreen(ResultsScreen):
    TITLE = "Node timeline"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "move(-1)", "◀ pass"),
        Binding("right,l", "move(1)", "pass ▶"),
        Binding("shift+left,H", "move(-10)", "◀ 10", show=False),
        Binding("shift+right,L", "move(10)", "10 ▶", show=False),
        Binding("home", "edge(0)", "First pass", show=False),
        Binding("end", "edge(1)", "Last pass", show=False),
        Binding("plus,equals_sign,i", "zoom(0.5)", "Zoom in", key_display="+"),
        Binding("minus,o", "zoom(2)", "Zoom out", key_display="-"),
        Binding("n,right_square_bracket", "jump(1)", "Next eviction/kill", key_display="n"),
        Binding("p,left_square_bracket", "jump(0)", "Prev eviction/kill", key_display="p"),
        Binding("tab,down,j", "signal(1)", "Next signal", key_display="tab"),
        Binding("shift+tab,up,k", "signal(-1)", "Prev signal", show=False),
        Binding("z", "zoom_y", "Zoom on thresholds"),
        Binding("enter", "open_eviction", "Open eviction/kill"),
    ]

    def __init__(
        self, node: str, signal: str | None = None, at: datetime | None = None, *, after: bool = False
    ) -> None:
        super().__init__()
        self.node = node
        self.signal = signal
        """The signal to open on (else the one the node's first eviction was for)."""
        self.at = at
        """The moment to open on (the node's pass at or before it; else its first eviction)."""
        self.after = after
        """Open on the pass at or after ``at`` instead (a kernel kill: the first pass that saw what it freed)."""
        self.model: TimelineModel | None = None

    def export_object(self) -> str:
        return self.node

    def selected_node(self) -> str | None:
        return self.node

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield Static(f"{self.node}: loading its signals…", id="timeline-title")
        yield from self.bars("filter the overview's nodes and pods by name (enter: back there)")
        yield SignalPlot(id="plot")
        yield Static(id="plot-legend")
        with Horizontal(id="timeline-bottom"):
            yield Static(id="cursor-values")
            yield Static(id="cursor-events")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = self.node
        self.load_series()

    def results_changed(self) -> None:
        self.load_series()

    @work(thread=True, exclusive=True, exit_on_error=False, name="the node's signals")
    def load_series(self) -> None:
        view = self.view
        series = view.node_series(self.node)
        model = TimelineModel(
            view.node(self.node),
            series,
            view.result.conditions.filter(pl.col("node") == self.node),
            view.evictions_of(self.node),
            view.real_of(self.node),
            view.kills(self.node),  # once each (replay.kernel.distinct_kills)
        )
        self.app.call_from_thread(self._ready, model)

    def _ready(self, model: TimelineModel) -> None:
        if self.model is not None and self.model.ticks == model.ticks:
            model.cursor, model.window, model.signal = self.model.cursor, self.model.window, self.model.signal
            model.zoom_y = self.model.zoom_y
        else:
            if self.signal in model.signals:
                model.signal = self.signal
            if self.at is not None and model.times:
                model.goto(model.index_at(self.at) if self.after else pass_index(model, self.at))
        self.model = model
        self.redraw()

    def cursor_moved(self, when: datetime | None) -> None:
        """Another view moved the shared moment (another node's timeline, an eviction opened): this node's
        pass at or before it, without answering with a move of its own."""
        model = self.model
        if model is None or when is None or not model.times or model.times[model.cursor] == when:
            return
        model.goto(pass_index(model, when))
        self.redraw(post=False)

    def redraw(self, *, post: bool = True) -> None:
        model = self.model
        if model is None:
            return
        if not model.ticks:
            self.query_one("#timeline-title", Static).update(f"{self.node}: no passes in this result")
            return
        lo, hi = model.window
        title = (
            f"{self.node} · kubelet {model.node.kubelet_version} · {self.view.label} · "
            f"ticks {model.ticks[lo]}–{model.ticks[hi]} ({hi - lo + 1} of {len(model.ticks)} passes) · "
            f"cursor {fmt_clock(model.times[model.cursor])} (tick {model.ticks[model.cursor]})"
        )
        self.query_one("#timeline-title", Static).update(title)
        plot = self.query_one(SignalPlot)
        data = model.plot(max(20, plot.size.width - 10))
        plot.draw(data)
        self.query_one("#plot-legend", Static).update(legend(data))
        when = model.times[model.cursor]
        if post and when != self.el_app.cursor_time:
            self.el_app.cursor_time = when  # at once: a redraw before the message is handled posts no second one
            self.post_message(CursorMoved(when))
        self.query_one("#cursor-values", Static).update(cursor_table(model))
        self.query_one("#cursor-events", Static).update(self._events_text(model))

    def _events_text(self, model: TimelineModel) -> Text:
        out = Text()
        conditions = model.active_conditions()
        out.append("conditions: ", style="bold")
        out.append(", ".join(conditions) if conditions else "none", style="orange1" if conditions else "")
        out.append("\n")
        here = model.evictions_at_cursor()
        for e in here:
            out.append("▼ predicted: ", style="bold red")
            out.append(f"{e.namespace}/{e.pod} ({e.cause}) — enter for detail\n")
        for m in model.real:
            if model.index_at(m.real.time) == model.cursor:
                out.append("◆ real: ", style="bold green")
                out.append(f"{m.real.namespace}/{m.real.pod}\n")
        for k in self.view.kills(self.node):  # once each: a SystemOOM and its OOMKilled container are one kill
            if model.index_at(k.time) == model.cursor:
                out.append("✖ kernel OOM kill: ", style="bold red")
                out.append(f"{kill_victim(k)}, {kill_cause(self.view, k)} at {k.time.strftime('%H:%M:%S')}\n")
        for _first, last, race in model.races(model.signal):
            if last == model.cursor:
                out.append("▄ ", style="bold red")
                out.append(too_fast_text(race, self.view.result.interval_seconds) + "\n")
        if not here:
            marks = model.markers()
            out.append(f"{len(marks)} eviction and kill marks on this node (n / p jump)", style="dim")
        return out

    def action_move(self, steps: int) -> None:
        if self.model:
            self.model.move(steps)
            self.redraw()

    def action_edge(self, last: int) -> None:
        if self.model:
            self.model.goto(len(self.model.ticks) - 1 if last else 0)
            self.redraw()

    def action_zoom(self, factor: float) -> None:
        if self.model:
            self.model.zoom(factor)
            self.redraw()

    def action_jump(self, forward: int) -> None:
        if self.model:
            if self.model.jump(bool(forward)) is None:
                self.notify("no more evictions or kernel kills that way", timeout=2)
            self.redraw()

    def action_signal(self, step: int) -> None:
        if self.model:
            self.model.next_signal(step)
            self.redraw()

    def action_zoom_y(self) -> None:
        if self.model:
            self.model.toggle_zoom_y()
            self.redraw()

    def action_open_eviction(self) -> None:
        """The predicted eviction at the cursor, else a real one the replay did not predict."""
        if not self.model:
            return
        from tui.screens.eviction import EvictionScreen, RealEvictionScreen

        here = self.model.evictions_at_cursor()
        if here:
            self.app.push_screen(EvictionScreen(here[0].id))
            return
        for i, m in enumerate(self.view.result.matches):
            if (
                m.real.node == self.node
                and m.predicted_id is None
                and self.model.index_at(m.real.time) == self.model.cursor
            ):
                self.app.push_screen(RealEvictionScreen(i))
                return
        for k in self.model.kills:
            if self.model.index_at(k.time) == self.model.cursor:
                from tui.screens.kill import KillScreen

                self.app.push_screen(KillScreen(self.view.result.kernel_kills.index(k)))
                return
        self.notify("no eviction at the cursor (n / p jump to one)", timeout=3)
