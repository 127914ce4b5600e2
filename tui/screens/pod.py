"""Screen 4: one pod's usage against its requests and limits over time, and what happened to it."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import polars as pl
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static
from textual_plotext import PlotextPlot

from replay.podview import PodSeries
from replay.replay_report import fmt_bytes
from replay.results import Eviction
from tui.fmt import fmt_clock
from tui.screens.base import ResultsScreen
from tui.screens.eviction import impact_of
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.signal_plot import y_ticks
from tui.widgets.title_header import TitleHeader

CONTAINER_COLORS = (
    ("green+", "bright_green"),
    ("cyan+", "bright_cyan"),
    ("magenta+", "bright_magenta"),
    ("orange+", "orange1"),
    ("white", "white"),
    ("gray+", "grey70"),
)
"""(plotext colour, the same in rich) of each container's line and its legend mark."""


class PodScreen(ResultsScreen):
    TITLE = "Pod"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "toggle_resource", "Memory / disk"),
        Binding("t", "timeline", "Timeline"),
        Binding("z", "zoom_y", "Zoom: usage / request and limit"),
    ]

    def __init__(self, node: str, namespace: str, pod: str, uid: str) -> None:
        super().__init__()
        self.node, self.namespace, self.pod, self.uid = node, namespace, pod, uid
        self.series: PodSeries | None = None
        self.per_container: pl.DataFrame | None = None
        self.resource = "memory"
        self.whole = False
        """The y axis up to the request and limit too (``z``); else scaled to the usage, the two marked at the top
        edge when above it."""

    def export_object(self) -> str:
        return f"{self.namespace}-{self.pod}"

    def selected_node(self) -> str | None:
        return self.node

    def cursor_moved(self, when: datetime | None) -> None:
        self.draw()

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield Static(f"{self.namespace}/{self.pod} on {self.node}", id="pod-title")
        yield from self.bars("filter the overview's nodes and pods by name (enter: back there)")
        yield PlotextPlot(id="pod-plot")
        yield Static(id="pod-legend")
        yield Static(id="pod-cursor")
        yield Static(id="pod-story")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = f"{self.namespace}/{self.pod}"
        self.query_one("#pod-story", Static).update(self.story())
        self.load()

    def results_changed(self) -> None:
        self.query_one("#pod-story", Static).update(self.story())

    @work(thread=True, exit_on_error=False, name="the pod's usage")
    def load(self) -> None:
        from replay.podview import container_series, pod_series

        rec = self.view.world()
        if rec is None:
            self.app.call_from_thread(
                self.query_one("#pod-title", Static).update, "the recording is not on disk: no usage to show"
            )
            return
        if not self.uid:  # opened by name (a ranking at a moment): the pod's uid on this node
            from replay.podview import pods_named

            hits = [
                h
                for h in pods_named(rec, f"{self.namespace}/{self.pod}")
                if h[0] == self.node and (h[1], h[2]) == (self.namespace, self.pod)
            ]
            self.uid = hits[0][3] if hits else ""
        series = pod_series(rec, self.node, self.namespace, self.pod, self.uid)
        per_container = container_series(rec, self.node, self.uid)
        self.app.call_from_thread(self._ready, series, per_container)

    def _ready(self, series: PodSeries, per_container: pl.DataFrame) -> None:
        self.series = series
        self.per_container = per_container
        self.draw()

    def draw(self) -> None:
        series = self.series
        if series is None:
            return
        plot = self.query_one(PlotextPlot)
        plt = plot.plt
        plt.clear_figure()
        frame = series.frame
        key: list[tuple[str, str, str]] = []
        if self.resource == "memory":
            column, request, limit = "memory", series.memory_request, series.memory_limit
        else:
            column, request, limit = "disk", series.disk_request, series.disk_limit
        xs = list(range(frame.height))
        values = [v / (1 << 20) if v is not None else 0.0 for v in frame[column].to_list()]
        if xs:
            ticks = frame["tick"].to_list()
            at = {t: i for i, t in enumerate(ticks)}
            usage_top = max(values, default=0.0) * 1.15 or 1.0
            whole_top = max([*values, *((v or 0) / (1 << 20) for v in (request, limit))], default=1.0) * 1.1 or 1.0
            top = whole_top if self.whole else max(usage_top, min(whole_top, usage_top * 1.5))
            # the legend is a line under the plot (plotext's own sits over the top left of the data)
            plt.plot(xs, values, color="blue+", marker="braille")
            key.append(("⣿", "blue", f"{column} (pod)"))
            per = self.per_container
            if per is not None and per["container"].n_unique() > 1:  # one container: its line is the pod's
                for ((name,), rows), (color, style) in zip(
                    per.group_by("container", maintain_order=True), CONTAINER_COLORS * 8, strict=False
                ):
                    cx = [at[t] for t in rows["tick"].to_list() if t in at]
                    cy = [
                        (v or 0) / (1 << 20)
                        for t, v in zip(rows["tick"].to_list(), rows[column].to_list(), strict=True)
                        if t in at
                    ]
                    plt.plot(cx, cy, marker="dot", color=color)
                    key.append(("•", style, str(name)))
            for value, name, color in ((request, "request", "yellow"), (limit, "limit", "red")):
                if value is None:
                    continue
                if value / (1 << 20) <= top:
                    plt.plot(xs, [value / (1 << 20)] * len(xs), color=color, marker="─")
                    key.append(("──", color, name))
                else:  # off the scale of the usage: an arrow at the top edge, the value in the legend
                    plt.scatter([xs[-1]], [top], marker="▲", color=color)
                    key.append(("▲", color, f"{name} {fmt_bytes(value)} above (z: show)"))
            evicted = [i for i, t in enumerate(ticks) if any(e.tick == t for e in self._evictions())]
            if evicted:
                plt.scatter(evicted, [top / 1.1 * 1.05] * len(evicted), marker="▼", color="red+")
                key.append(("▼", "bold red", "predicted eviction"))
            times = frame["time"].to_list()
            cursor = self.el_app.cursor_time
            if cursor is not None and times and times[0] is not None and times[0] <= cursor <= times[-1]:
                plt.vline(next(i for i, t in enumerate(times) if t is not None and t >= cursor), "white")
            plt.ylim(0, top)  # from 0: a 119–130 MiB wobble is a wobble, not the whole height
            levels = [v / (1 << 20) for v in (request, limit) if v is not None and v / (1 << 20) <= top]
            height = max(2, plot.size.height - 5) if plot.size.height else None
            plt.yticks(*y_ticks(0.0, top, "MiB", marks=levels, rows=height))
            marks = sorted({0, len(xs) // 2, len(xs) - 1})
            plt.xticks([float(m) for m in marks], [times[i].strftime("%H:%M:%S") if times[i] else "" for i in marks])
        plt.ylabel("MiB")
        plt.title(f"{self.namespace}/{self.pod}: {column} (request {fmt_bytes(request)}, limit {fmt_bytes(limit)})")
        plot.refresh()
        legend = Text()
        for mark, style, label in key:
            legend.append("  " if legend else "")
            legend.append(mark, style=style)
            legend.append(f" {label}")
        self.query_one("#pod-legend", Static).update(legend)
        at_cursor = self.at_cursor(column)
        self.query_one("#pod-cursor", Static).update(at_cursor)
        self.query_one("#pod-cursor", Static).display = bool(at_cursor)
        kinds = ", ".join(f"{n} ({k})" for n, k in series.containers) or "no pod object recorded"
        self.query_one("#pod-title", Static).update(f"{self.namespace}/{self.pod} on {self.node} · {kinds}")

    def at_cursor(self, column: str) -> Text:
        """The pod (and each container) at the shared moment: the node's pass at or before the cursor."""
        series = self.series
        cursor = self.el_app.cursor_time
        out = Text()
        if series is None or cursor is None:
            return out
        rows = series.frame.filter(pl.col("time") <= cursor).tail(1)
        if rows.is_empty():
            out.append(f"at the cursor ({fmt_clock(cursor)}): before the pod's first sample", style="dim")
            return out
        tick, when, value = rows["tick"].item(), rows["time"].item(), rows[column].item()
        out.append(f"at the cursor {fmt_clock(when)} (tick {tick}): ", style="bold")
        out.append(f"{column} {fmt_bytes(value)}")
        per = self.per_container
        if per is not None and per["container"].n_unique() > 1:
            here = per.filter(pl.col("tick") == tick)
            parts = [f"{name} {fmt_bytes(v)}" for name, v in here.select("container", column).iter_rows()]
            out.append(" · " + ", ".join(parts) if parts else "")
        return out

    def action_timeline(self) -> None:
        """The node's timeline at the shared moment, on top: its cursor moves this view (back with escape)."""
        from tui.screens.timeline import TimelineScreen

        self.app.push_screen(TimelineScreen(self.node, at=self.el_app.cursor_time))

    def _evictions(self) -> list[Eviction]:
        return [
            e
            for e in self.view.evictions_of(self.node)
            if e.uid == self.uid or (e.namespace, e.pod) == (self.namespace, self.pod)
        ]

    def story(self) -> Text:
        out = Text()
        out.append("What happened: ", style="bold")
        mine = [
            e
            for e in self.view.evictions_of(self.node)
            if e.uid == self.uid or (e.namespace, e.pod) == (self.namespace, self.pod)
        ]
        for e in mine:
            out.append(f"\n▼ predicted eviction at {fmt_clock(e.time)} ({e.cause}): ", style="red")
            out.append(e.message)
            out.append(f"\n  {impact_of(e)[1]}")
        for m in self.view.real_of(self.node):
            if m.real.uid == self.uid or (m.real.namespace, m.real.pod) == (self.namespace, self.pod):
                out.append(f"\n◆ really evicted at {fmt_clock(m.real.time)} ({m.real.source})", style="green")
        if not mine:
            out.append(f"not evicted in {self.view.label}")
        return out

    def action_zoom_y(self) -> None:
        self.whole = not self.whole
        self.draw()

    def action_toggle_resource(self) -> None:
        self.resource = "disk" if self.resource == "memory" else "memory"
        self.draw()
