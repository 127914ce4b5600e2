"""Screen 3: one eviction — the exact message, containers, the ranking and why, what happens next, the diff."""

from __future__ import annotations

from typing import ClassVar

import orjson
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static, TextArea

from replay.impact import owner_impact
from replay.podview import ContainerRow
from replay.replay_report import fmt_bytes, marked_diff
from replay.results import Eviction, RankedPod
from tui.fmt import fmt_clock, fmt_signal_value
from tui.screens.base import ResultsScreen
from tui.widgets.record_table import Column, Record, RecordTable


def impact_of(e: Eviction) -> tuple[bool | None, str]:
    """The result's own impact; results written before it had one get it from the owner."""
    if e.impact:
        return e.comes_back, e.impact
    return owner_impact(e.owner_kind, e.owner_name)


def message_text(e: Eviction) -> str:
    lines = [e.message, "", "annotations:"]
    lines += [f"  {k}: {v}" for k, v in sorted(e.annotations.items())] or ["  (none)"]
    return "\n".join(lines)


def head_text(e: Eviction) -> Text:
    out = Text()
    out.append(f"{e.namespace}/{e.pod}", style="bold")
    out.append(f"  on {e.node} at {fmt_clock(e.time)} (tick {e.tick})\n")
    if e.signal:
        kind = "hard" if e.hard else "soft"
        out.append(f"{kind} threshold {e.signal}: available {fmt_signal_value(e.signal, e.observed_available)} "
                   f"< {fmt_signal_value(e.signal, e.threshold_value)}")
    else:
        out.append(f"cause: {e.cause} (a local-storage limit, not a node threshold)")
    out.append(f" · QoS {e.qos} · priority {e.priority} · grace period override {e.grace_period_override}s")
    return out


def container_records(rows: list[ContainerRow]) -> tuple[list[Column], list[Record]]:
    columns = [Column("container", "container"), Column("kind", "kind"),
               Column("memory", "memory", fmt_bytes, right=True),
               Column("memory_request", "mem request", fmt_bytes, right=True),
               Column("memory_limit", "mem limit", fmt_bytes, right=True),
               Column("disk", "disk", fmt_bytes, right=True),
               Column("disk_limit", "disk limit", fmt_bytes, right=True),
               Column("named", "in message", lambda v: "◀ offending" if v else "")]
    records = [Record(r.name, (r.name, r.kind, r.memory, r.memory_request, r.memory_limit, r.disk, r.disk_limit,
                               r.named), "bold red" if r.offending else ("yellow" if r.over_request else ""))
               for r in rows]
    return columns, records


def ranking_records(e: Eviction) -> tuple[list[Column], list[Record]]:
    columns = [Column("rank", "#", right=True), Column("pod", "pod"), Column("qos", "QoS"),
               Column("priority", "priority", right=True),
               Column("usage", "usage", lambda v: fmt_signal_value(e.signal or "memory.available", v), right=True),
               Column("request", "request", lambda v: fmt_signal_value(e.signal or "memory.available", v),
                      right=True),
               Column("reason", "why here")]

    def style(r: RankedPod) -> str:
        if r.uid == e.uid:
            return "bold red"
        return "dim" if r.critical else ""

    records = [Record(f"{r.namespace}/{r.pod}", (r.rank, f"{r.namespace}/{r.pod}", r.qos, r.priority, r.usage,
                                                 r.request, r.reason), style(r)) for r in e.ranking]
    return columns, records


class EvictionScreen(ResultsScreen):
    TITLE = "Eviction"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_message", "Copy message"),
        Binding("y", "copy_annotations", "Copy annotations"),
        Binding("v", "pod", "Pod view"),
    ]

    def __init__(self, eviction_id: int) -> None:
        super().__init__()
        self.eviction_id = eviction_id

    @property
    def eviction(self) -> Eviction:
        return self.view.eviction(self.eviction_id)

    def compose(self) -> ComposeResult:
        e = self.eviction
        yield Header(show_clock=False)
        with VerticalScroll(id="eviction-body"):
            yield Static(head_text(e), id="eviction-head")
            yield Static("Event message and annotations (c copies the message, y the annotations)",
                         classes="section")
            yield TextArea(message_text(e), read_only=True, soft_wrap=True, id="message")
            yield Static(id="diff")
            yield Static("Containers (red: named in the message or over a limit; yellow: over its request)",
                         classes="section")
            yield RecordTable(id="containers")
            yield Static("Ranking at that moment (enter: that pod's view)", classes="section")
            yield RecordTable(id="ranking")
            yield Static(id="impact")
        yield Footer()

    def on_mount(self) -> None:
        e = self.eviction
        self.sub_title = f"{e.namespace}/{e.pod}"
        self.query_one("#ranking", RecordTable).show(*ranking_records(e))
        comes_back, summary = impact_of(e)
        owner = f"owner {e.owner_kind}/{e.owner_name}" if e.owner_kind else "no owner"
        self.query_one("#impact", Static).update(Text.assemble(
            ("Impact: ", "bold"), (summary, "green" if comes_back else "yellow"), f"  ({owner})"))
        self.query_one("#diff", Static).update(self._diff(e))
        self.load_containers()

    def _diff(self, e: Eviction) -> Text:
        match = self.view.match_for(e)
        if match is None:
            return Text("No real eviction of this pod in the recording to compare with.", style="dim")
        if match.same_message:
            return Text("✔ the recording's real Event message is the same, byte for byte.", style="bold green")
        if match.real.message is None:
            return Text("The recording has the real eviction but not its message.", style="dim")
        return Text.assemble(("Against the real message (red: only in the real one; green: only predicted):\n",
                              "bold"), marked_diff(match.real.message, e.message))

    @work(thread=True, exit_on_error=False, name="containers of the evicted pod")
    def load_containers(self) -> None:
        from replay.podview import containers_at

        rec = self.view.open_recording()
        if rec is None:
            return
        rows = containers_at(rec, self.eviction)
        self.app.call_from_thread(self._containers, rows)

    def _containers(self, rows: list[ContainerRow]) -> None:
        self.query_one("#containers", RecordTable).show(*container_records(rows))

    def action_copy_message(self) -> None:
        self.app.copy_to_clipboard(self.eviction.message)
        self.notify("message copied (OSC 52 clipboard)", timeout=2)

    def action_copy_annotations(self) -> None:
        self.app.copy_to_clipboard(orjson.dumps(dict(self.eviction.annotations)).decode())
        self.notify("annotations copied as JSON", timeout=2)

    def action_pod(self) -> None:
        from tui.screens.pod import PodScreen

        e = self.eviction
        self.app.push_screen(PodScreen(e.node, e.namespace, e.pod, e.uid))

    @on(DataTable.RowSelected, "#ranking")
    def _open_ranked(self, event: DataTable.RowSelected) -> None:
        from tui.screens.pod import PodScreen

        e = self.eviction
        for r in e.ranking:
            if f"{r.namespace}/{r.pod}" == event.row_key.value:
                self.app.push_screen(PodScreen(e.node, r.namespace, r.pod, r.uid))
