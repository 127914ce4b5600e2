"""The live overview: every node now against its thresholds, who goes next and when; events as they arrive.

Redrawn in place on each poll that brought something (:meth:`LiveScreen.live_changed`); the tables keep their
selection, sort and filter. The panel under the nodes says the highlighted node's next to go with its exact
message and each forecast with the estimator that made it; with an event highlighted, the event (a real
eviction: its message against the predicted one, byte for byte).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import Worker

from live.model import LiveEvent, NodeNow
from replay.replay_report import marked_diff
from replay.views import SHORT_SIGNAL, signal_key
from tui.fmt import fmt_signal_value
from tui.live_messages import OpenLiveEvent, StopLive
from tui.live_model import LiveState, Row, fmt_seconds, soonest, to_datetime
from tui.messages import worker_failure
from tui.widgets.record_table import Column, Record, RecordTable
from tui.widgets.title_header import TitleHeader

if TYPE_CHECKING:
    from tui.live_app import LiveApp

KIND_LABEL = {
    "warning": "⚠ warning",
    "predicted-eviction": "▼ predicted",
    "real-eviction": "◆ EVICTED",
    "kernel-kill": "✖ OOM KILL",
    "pressure-start": "pressure on",
    "pressure-end": "pressure off",
    "stale": "⏸ stale",
}
KIND_STYLE = {
    "warning": "yellow",
    "predicted-eviction": "bold",
    "real-eviction": "bold red",
    "kernel-kill": "bold red",
    "pressure-start": "orange1",
    "stale": "yellow",
}


class LiveScreen(Screen[None]):
    """A screen of the live view: redrawn when a poll brings something."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("q", "back", "Back", show=False),
    ]
    ready = False
    """Mounted, its widgets there (the app redraws only such a screen; the screen draws itself on mount)."""

    @property
    def live_app(self) -> LiveApp:
        return cast("LiveApp", self.app)

    @property
    def live(self) -> LiveState:
        return self.live_app.live

    def live_changed(self) -> None:
        """A poll brought new ticks or events."""

    def action_back(self) -> None:
        self.dismiss()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        failed = worker_failure(event)
        if failed is not None:
            self.post_message(failed)


def _text(value: Any) -> str:
    return "—" if value is None else str(value)


def node_records(state: LiveState) -> tuple[list[Column], list[Record]]:
    """A row per node: stale marked, its conditions, the soonest threshold at the trend, next to go, then each
    signal that has a threshold (its value now; red when a threshold is met)."""
    signals = sorted({s for n in state.nodes.values() for s, v in n.thresholds.items() if v}, key=signal_key)
    columns = [
        Column("node", "node"),
        Column("conditions", "conditions", lambda v: Text(v or "—", style="orange1" if v else "")),
        Column(
            "to_threshold",
            "to threshold",
            lambda v: Text(fmt_seconds(v), style="bold red" if v == 0 else ""),
            right=True,
        ),
        Column("on", "on"),
        Column("next", "next to go"),
    ]
    columns += [Column(f"now_{s}", SHORT_SIGNAL.get(s, s), _now_fmt(s), right=True) for s in signals]
    columns += [Column("tick", "last tick"), Column("kubelet", "kubelet")]
    records = []
    for name in sorted(state.nodes):
        n = state.nodes[name]
        first = soonest(n.forecasts)
        on = None if first is None else f"{SHORT_SIGNAL.get(first.signal, first.signal)} {first.threshold_kind}"
        nxt = None if n.next_to_go is None else f"{n.next_to_go.namespace}/{n.next_to_go.pod}"
        if n.catching_up is not None:  # not known before the history is replayed: never shown as none
            nxt = "…"
        values: list[Any] = [
            name,
            "…" if n.catching_up is not None else ", ".join(n.conditions),
            None if first is None else first.seconds_to_threshold,
            on,
            nxt,
        ]
        values += [(n.signals.get(s), _met(n, s)) for s in signals]
        values += [to_datetime(n.time_us).strftime("%H:%M:%S"), n.kubelet_version]
        style = "yellow" if n.stale else ("bold" if n.conditions else "")
        records.append(Record(name, tuple(values), style, "⏸" if n.stale else ""))
    return columns, records


def _met(n: NodeNow, signal: str) -> bool:
    value = n.signals.get(signal)
    return value is not None and any(value < t for t in n.thresholds.get(signal, ()))


def _now_fmt(signal: str) -> Any:
    def fmt(value: Any) -> str | Text:
        observed, met = value if isinstance(value, tuple) else (value, False)
        return Text(fmt_signal_value(signal, observed), style="bold red" if met else "")

    return fmt


def event_records(state: LiveState) -> tuple[list[Column], list[Record]]:
    """The events, newest first: what happened and, for a real eviction or a kill, against what was predicted."""
    columns = [
        Column("time", "time"),
        Column("event", "event"),
        Column("pod", "pod"),
        Column("vs", "vs. predicted"),
        Column("what", "what", _short),
        Column("node", "node"),
    ]
    records = []
    for row in reversed(state.events):
        e = row.event
        records.append(
            Record(
                f"e{row.index}",
                (
                    to_datetime(e.time_us).strftime("%H:%M:%S"),
                    KIND_LABEL.get(e.kind, e.kind),
                    _pod(e),
                    flag(state, row),
                    what(e),
                    e.node,
                ),
                KIND_STYLE.get(e.kind, ""),
            )
        )
    return columns, records


def _short(value: Any) -> str:
    """A message cut for its cell (the detail under the nodes shows it whole; an export has it whole)."""
    text = _text(value)
    return text if len(text) <= 48 else text[:47] + "…"


def _pod(e: LiveEvent) -> str | None:
    """The event's pod (a warning's next to go is in its detail and the node's row; a node-wide kill, a
    ``SystemOOM``, names a process, not a pod)."""
    details = e.details
    if e.kind == "warning" or (e.kind == "kernel-kill" and details.get("kind") == "SystemOOM"):
        return None
    pod, ns = details.get("pod"), details.get("namespace")
    if not pod:
        return None
    return f"{ns}/{pod}" if ns else str(pod)


def what(e: LiveEvent) -> str:
    d = e.details
    if e.kind == "warning":
        signal, kind, limit = str(d.get("signal")), d.get("threshold_kind"), d.get("threshold")
        seconds = d.get("seconds_to_threshold")
        when = fmt_seconds(float(seconds)) if isinstance(seconds, (int, float)) else "?"
        value = fmt_signal_value(signal, limit) if isinstance(limit, int) else ""
        return " ".join(str(p) for p in (SHORT_SIGNAL.get(signal, signal), kind, value, f"in {when}") if p)
    if e.kind in ("pressure-start", "pressure-end"):
        return _text(d.get("condition") or d.get("conditions"))
    if e.kind == "stale":
        return _text(d.get("reason") or d.get("stale_reason"))
    return _text(d.get("message") or d.get("victim") or d.get("reason"))


def predicted_message(state: LiveState, row: Row) -> str | None:
    """What was predicted for a real eviction's pod: the engine's own word, else the latest predicted row."""
    e = row.event
    own = e.details.get("predicted_message")
    if isinstance(own, str):
        return own
    earlier = state.predicted_for(e)
    message = None if earlier is None else earlier.event.details.get("message")
    return message if isinstance(message, str) else None


def flag(state: LiveState, row: Row) -> str | None:
    """A real eviction against the prediction: the same message byte for byte, a differing one, or none; a
    kernel kill: not the kubelet, and whether a warning came first on the node."""
    e = row.event
    if e.kind == "real-eviction":
        predicted = predicted_message(state, row)
        if predicted is None:
            return "✗ not predicted"
        same = predicted == e.details.get("message")
        if e.details.get("predicted") is False and e.details.get("was_next_to_go"):
            return "~ was next, " + ("same message" if same else "≠ message")
        return "✔ same message" if same else "≠ message differs"
    if e.kind == "kernel-kill":
        warned = [
            r.event.time_us
            for r in state.events
            if r.event.kind == "warning" and r.event.node == e.node and r.event.time_us <= e.time_us
        ]
        if not warned:
            return "no warning before"
        return f"warned {fmt_seconds((e.time_us - min(warned)) / 1e6)} before"
    return None


class LiveOverviewScreen(LiveScreen):
    TITLE = "Live"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("t", "timeline", "Live timeline"),
        Binding("q", "quit", "Quit"),
    ]

    filter_text = ""
    """Nodes and events whose node or pod holds it (``/``)."""
    _events_shown: tuple[int, str] | None = None

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield Static(id="live-title")
        yield Input(
            placeholder="filter nodes and events by name (enter: into the results)", id="filter", classes="hidden"
        )
        yield RecordTable(id="live-nodes")
        yield Static(id="live-detail")
        yield Static(
            "Events, newest first (enter opens an eviction or a kill)",
            classes="section",
            id="live-events-title",
        )
        yield RecordTable(id="live-events")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.live_app.source.label
        self.ready = True
        self.live_changed()
        self.query_one("#live-nodes", RecordTable).focus()

    def live_changed(self) -> None:
        state = self.live
        self.query_one("#live-title", Static).update(self._title(state))
        self.query_one("#live-nodes", RecordTable).show(*node_records(state))
        shown = (state.events[-1].index if state.events else -1, self.filter_text)
        if shown != self._events_shown:  # the list is redrawn only when it changed (a quiet tick leaves it)
            self._events_shown = shown
            columns, records = event_records(state)
            self.query_one("#live-events", RecordTable).show(
                columns, [r for r in records if _matches(r, self.filter_text)]
            )
        self._detail()

    def _title(self, state: LiveState) -> Text:
        if state.last_time_us is None:
            return Text(f"waiting for the first tick: {self.live_app.phase}", style="bold")
        stale = sum(1 for n in state.nodes.values() if n.stale)
        pressure = sum(1 for n in state.nodes.values() if n.conditions)
        now = to_datetime(state.last_time_us).strftime("%Y-%m-%d %H:%M:%S")
        if getattr(self.live_app, "catching_up", False):
            return Text.assemble(
                ("◐ ", "bold yellow"),
                (f"newest tick {now}", "bold"),
                f" · {len(state.nodes)} nodes · ",
                (self.live_app.phase, "yellow"),
            )
        return Text.assemble(
            ("● " if not self.live_app.finished else "■ ", "bold green" if not self.live_app.finished else "dim"),
            (f"now {now}", "bold"),
            f" · {len(state.nodes)} nodes · ",
            (f"{pressure} under pressure", "bold orange1" if pressure else ""),
            (f" · {stale} stale" if stale else "", "bold yellow"),
            (" · finished (no more ticks)" if self.live_app.finished else "", "dim"),
        )

    def show_failure(self, label: str, problem: str) -> None:
        self.query_one("#live-title", Static).update(Text(f"stopped: {problem}", style="bold red"))

    def _detail(self) -> None:
        panel = self.query_one("#live-detail", Static)
        events = self.query_one("#live-events", RecordTable)
        if self.focused is events:
            key = events.selected_key()
            row = None if key is None else self.live.row(int(key[1:]))
            panel.update(self._event_detail(row) if row is not None else "")
            return
        name = self.query_one("#live-nodes", RecordTable).selected_key()
        node = None if name is None else self.live.nodes.get(name)
        panel.update(node_detail(node) if node is not None else "")

    def _event_detail(self, row: Row) -> Text:
        e = row.event
        out = Text()
        out.append(f"{KIND_LABEL.get(e.kind, e.kind)} on {e.node} at {to_datetime(e.time_us):%H:%M:%S}", style="bold")
        message = e.details.get("message")
        if e.kind == "real-eviction" and isinstance(message, str):
            predicted = predicted_message(self.live, row)
            if predicted is None:
                out.append("\nnot predicted; its message: ", style="yellow")
                out.append(message)
            elif predicted == message:
                out.append("\n✔ the predicted message, byte for byte: ", style="green")
                out.append(message)
            else:
                out.append(
                    "\nreal against predicted (red: only in the real one; green: only predicted):\n", style="bold"
                )
                out.append_text(marked_diff(message, predicted))
        else:
            out.append(f"\n{what(e)}")
            flagged = flag(self.live, row)
            if flagged:
                out.append(f" ({flagged})", style="bold")
        method, nxt = e.details.get("method"), e.details.get("next_to_go")
        if isinstance(method, str):
            out.append(f"\n{method}", style="dim")
        if isinstance(nxt, dict):
            out.append("\nnext to go then: ", style="bold")
            out.append(f"{nxt.get('namespace')}/{nxt.get('pod')}  ")
            out.append(str(nxt.get("message")), style="italic")
        would = e.details.get("predicted_message")
        if e.kind == "kernel-kill" and isinstance(would, str):
            out.append("\nthe kubelet would have evicted it with: ", style="bold")
            out.append(would, style="italic")
        opens = e.kind in ("predicted-eviction", "real-eviction", "kernel-kill")
        out.append("\nenter: open it" if opens else "\nenter: the node's live timeline", style="dim")
        return out

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def on_descendant_focus(self) -> None:
        self._detail()

    @on(DataTable.RowSelected, "#live-nodes")
    def _open_node(self, event: DataTable.RowSelected) -> None:
        from tui.screens.live_timeline import LiveTimelineScreen

        if event.row_key.value is not None:
            self.app.push_screen(LiveTimelineScreen(str(event.row_key.value)))

    @on(DataTable.RowSelected, "#live-events")
    def _open_event(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        row = None if key is None else self.live.row(int(str(key)[1:]))
        if row is not None:
            self.post_message(OpenLiveEvent(row.event))

    def action_timeline(self) -> None:
        from tui.screens.live_timeline import LiveTimelineScreen

        node = self.selected_node()
        if node is not None:
            self.app.push_screen(LiveTimelineScreen(node))

    def selected_node(self) -> str | None:
        events = self.query_one("#live-events", RecordTable)
        if self.focused is events:
            key = events.selected_key()
            row = None if key is None else self.live.row(int(key[1:]))
            return None if row is None else row.event.node
        return self.query_one("#live-nodes", RecordTable).selected_key()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.remove_class("hidden")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.add_class("hidden")
        self.query_one("#live-nodes", RecordTable).focus()

    @on(Input.Changed, "#filter")
    def _filter(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.query_one("#live-nodes", RecordTable).set_filter(event.value)
        self.live_changed()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#live-nodes", RecordTable).focus()

    def action_quit(self) -> None:
        self.post_message(StopLive())


def _matches(record: Record, text: str) -> bool:
    """The event's pod or node holds ``text``."""
    return not text or any(text.lower() in str(v).lower() for v in (record.values[2], record.values[5]))


def node_detail(n: NodeNow) -> Text:
    """The node's next to go with its exact message, and each forecast with how it was made."""
    out = Text()
    out.append(n.node, style="bold")
    out.append(f" · kubelet {n.kubelet_version} · tick {n.tick} at {to_datetime(n.time_us):%H:%M:%S}")
    if n.stale:
        out.append(f" · ⏸ STALE: {n.stale_reason or 'no answer recently'} (not healthy: unknown)", style="bold yellow")
    if n.conditions:
        out.append(f" · {', '.join(n.conditions)}", style="bold orange1")
    nxt = n.next_to_go
    if nxt is None:
        out.append("\nnext to go: none (no pod the manager could evict)", style="dim")
    else:
        out.append("\nnext to go: ", style="bold")
        out.append(f"{nxt.namespace}/{nxt.pod} ({nxt.resource})  ")
        out.append(nxt.message, style="italic")
        out.append(f"\n  {nxt.reason}; {nxt.basis}", style="dim")
    for f in sorted(n.forecasts, key=lambda f: (signal_key(f.signal), f.threshold_kind)):
        now, limit = fmt_signal_value(f.signal, f.observed), fmt_signal_value(f.signal, f.threshold)
        out.append(f"\n{f.signal} {now} → {f.threshold_kind} {limit}: ")
        when = fmt_seconds(f.seconds_to_threshold)
        out.append(when if when in ("MET", "—") else f"in {when}", style="bold red" if when == "MET" else "bold")
        out.append(f" ({'; '.join(p for p in (f.note, f.method) if p)})", style="dim")
    return out
