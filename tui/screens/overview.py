"""Screen 1: every node of the result, its pressure and evictions; and every eviction, predicted or real."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Header, Input, Static

from replay.views import CONDITIONS, SHORT_SIGNAL
from tui.fmt import fmt_clock, fmt_duration, fmt_ratio, fmt_signal_value
from tui.messages import UseResult
from tui.results_view import ResultsView
from tui.screens.base import ResultsScreen
from tui.widgets.record_table import Column, Record, RecordTable


def node_table(view: ResultsView, overcommit: dict[str, float]) -> tuple[list[Column], list[Record]]:
    signals = view.signal_names()
    lowest = {(r["node"], r["signal"]): r["lowest"] for r in view.lowest_available().iter_rows(named=True)}
    pressure = view.pressure_seconds()
    predicted: dict[str, int] = {}
    for e in view.result.evictions:
        predicted[e.node] = predicted.get(e.node, 0) + 1
    real: dict[str, int] = {}
    for m in view.result.matches:
        real[m.real.node or "?"] = real.get(m.real.node or "?", 0) + 1
    columns = [Column("node", "node"), Column("kubelet", "kubelet")]
    columns += [Column(f"pressure_{c}", c.removesuffix("Pressure") + " pressure", fmt_duration, right=True)
                for c in CONDITIONS]
    columns += [Column(f"lowest_{s}", f"low {SHORT_SIGNAL.get(s, s)}", _signal_fmt(s), right=True)
                for s in signals]
    columns += [Column("predicted", "predicted", right=True), Column("real", "real", right=True),
                Column("overcommit", "peak mem limits/alloc", fmt_ratio, right=True)]
    records = []
    for n in view.nodes:
        values: list[Any] = [n.node, n.kubelet_version]
        values += [pressure.get((n.node, c)) for c in CONDITIONS]
        values += [lowest.get((n.node, s)) for s in signals]
        values += [predicted.get(n.node, 0), real.get(n.node, 0), overcommit.get(n.node)]
        style = "bold" if predicted.get(n.node) or real.get(n.node) else ""
        records.append(Record(n.node, tuple(values), style))
    return columns, records


def _status(view: ResultsView, eviction_id: int) -> str:
    e = view.eviction(eviction_id)
    m = view.match_for(e)
    if m is None:
        return "predicted only"
    return "real, same message" if m.same_message else "real, message differs"


def _hard(value: bool | None) -> str:
    return "—" if value is None else ("hard" if value else "soft")


def _signal_fmt(signal: str) -> Callable[[Any], str]:
    return lambda v: fmt_signal_value(signal, v)


def eviction_table(view: ResultsView) -> tuple[list[Column], list[Record]]:
    columns = [Column("pod", "pod"), Column("node", "node"), Column("time", "time", fmt_clock),
               Column("cause", "cause"), Column("hard", "kind", _hard),
               Column("status", "vs. the recording")]
    records = [Record(f"e{e.id}", (f"{e.namespace}/{e.pod}", e.node, e.time, e.cause, e.hard, _status(view, e.id)))
               for e in view.result.evictions]
    records += [Record(f"r{i}", (f"{m.real.namespace}/{m.real.pod}", m.real.node, m.real.time, "—", None,
                                 "real only: not predicted"), "yellow")
                for i, m in enumerate(view.result.matches) if m.predicted_id is None]
    return columns, records


class OverviewScreen(ResultsScreen):
    TITLE = "Overview"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("q", "app.quit", "Quit"),
        Binding("r", "next_result", "Next result"),
    ]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(id="overview-title")
        yield Input(placeholder="filter nodes and pods by name", id="filter", classes="hidden")
        yield RecordTable(id="nodes")
        yield Static("Evictions — enter opens one", classes="section")
        yield RecordTable(id="evictions")
        yield Footer()

    def on_mount(self) -> None:
        self.results_changed()
        self.query_one("#nodes", RecordTable).focus()

    def results_changed(self) -> None:
        view = self.view
        self.sub_title = view.label
        real = len(view.result.matches)
        same = sum(1 for m in view.result.matches if m.same_message)
        title = Text.assemble(
            (f"{view.label}", "bold"), f"  ·  {len(view.nodes)} nodes · {len(view.result.evictions)} predicted "
            f"evictions · {real} real, {same} with the exact message",
            ("" if len(self.el_app.results) == 1 else f"  ·  result {self.el_app.current + 1} of "
             f"{len(self.el_app.results)} (r: next)"))
        self.query_one("#overview-title", Static).update(title)
        self.query_one("#nodes", RecordTable).show(*node_table(view, view.overcommit()))
        self.query_one("#evictions", RecordTable).show(*eviction_table(view))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("hidden")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.add_class("hidden")
        self.query_one("#nodes", RecordTable).focus()

    @on(Input.Changed, "#filter")
    def _filter(self, event: Input.Changed) -> None:
        for table in self.query(RecordTable):
            table.set_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one("#nodes", RecordTable).focus()

    @on(DataTable.RowSelected, "#nodes")
    def _open_node(self, event: DataTable.RowSelected) -> None:
        from tui.screens.timeline import TimelineScreen

        if event.row_key.value is not None:
            self.app.push_screen(TimelineScreen(str(event.row_key.value)))

    @on(DataTable.RowSelected, "#evictions")
    def _open_eviction(self, event: DataTable.RowSelected) -> None:
        key = str(event.row_key.value)
        if key.startswith("e"):
            from tui.screens.eviction import EvictionScreen

            self.app.push_screen(EvictionScreen(int(key[1:])))
        else:
            self.notify("a real eviction the replay did not predict: its message is in the recording's events",
                        severity="warning")

    def action_next_result(self) -> None:
        self.post_message(UseResult((self.el_app.current + 1) % len(self.el_app.results)))
