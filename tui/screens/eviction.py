"""Screen 3: one eviction — the exact message, containers, the ranking and why, what happens next, the diff."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import ClassVar

import orjson
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static, TextArea
from textual.worker import get_current_worker

from kube.quantity import Quantity
from replay.explain import Explanation
from replay.impact import owner_impact
from replay.podview import ContainerRow
from replay.replay_report import fmt_bytes, marked_diff
from replay.results import Eviction, Match, RankedPod
from tui.fmt import fmt_clock, fmt_signal_value
from tui.messages import CursorMoved
from tui.screens.base import ResultsScreen
from tui.screens.overview import decided_text
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.record_table import Column, Record, RecordTable
from tui.widgets.title_header import TitleHeader


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
        out.append(
            f"{kind} threshold {e.signal}: available {fmt_signal_value(e.signal, e.observed_available)} "
            f"< {fmt_signal_value(e.signal, e.threshold_value)}"
        )
    else:
        out.append(f"cause: {e.cause} (a local-storage limit, not a node threshold)")
    out.append(f" · QoS {e.qos} · priority {e.priority} · grace period override {e.grace_period_override}s")
    return out


def container_records(rows: list[ContainerRow]) -> tuple[list[Column], list[Record]]:
    columns = [
        Column("container", "container"),
        Column("kind", "kind"),
        Column("memory", "memory", fmt_bytes, right=True),
        Column("memory_request", "mem request", fmt_bytes, right=True),
        Column("memory_limit", "mem limit", fmt_bytes, right=True),
        Column("disk", "disk", fmt_bytes, right=True),
        Column("disk_limit", "disk limit", fmt_bytes, right=True),
        Column("named", "in message", lambda v: "◀ offending" if v else ""),
    ]
    records = [
        Record(
            r.name,
            (r.name, r.kind, r.memory, r.memory_request, r.memory_limit, r.disk, r.disk_limit, r.named),
            "bold red" if r.offending else ("yellow" if r.over_request else ""),
        )
        for r in rows
    ]
    return columns, records


def ranking_records(e: Eviction) -> tuple[list[Column], list[Record]]:
    columns = [
        Column("rank", "#", right=True),
        Column("pod", "pod"),
        Column("qos", "QoS"),
        Column("priority", "priority", right=True),
        Column("usage", "usage", lambda v: fmt_signal_value(e.signal or "memory.available", v), right=True),
        Column("request", "request", lambda v: fmt_signal_value(e.signal or "memory.available", v), right=True),
        Column("decided_by", "kept by"),
        Column("reason", "why here"),
    ]

    def style(r: RankedPod) -> str:
        if r.uid == e.uid:
            return "bold red"
        return "dim" if r.critical else ""

    records = [
        Record(
            f"{r.namespace}/{r.pod}",
            (r.rank, f"{r.namespace}/{r.pod}", r.qos, r.priority, r.usage, r.request, decided_text(e, r), r.reason),
            style(r),
        )
        for r in e.ranking
    ]
    return columns, records


def moment_ranking(explanation: Explanation) -> tuple[list[Column], list[Record]]:
    """The replay's ranking at a moment (``explain --at``'s table): who it would have evicted first."""
    signal = explanation.result.threshold_to_reclaim.signal if explanation.result.threshold_to_reclaim else ""

    def amount(q: Quantity | None) -> int | None:
        return None if q is None else int(q.value)

    columns = [
        Column("rank", "#", right=True),
        Column("pod", "pod"),
        Column("priority", "priority", right=True),
        Column("usage", "usage", lambda v: fmt_signal_value(signal, v), right=True),
        Column("request", "request", lambda v: fmt_signal_value(signal, v), right=True),
        Column("exceeds", "over request", lambda v: "—" if v is None else ("yes" if v else "no")),
        Column("critical", "critical", lambda v: "critical" if v else ""),
    ]
    records = [
        Record(
            f"{f.namespace}/{f.pod}",
            (
                i + 1,
                f"{f.namespace}/{f.pod}",
                f.priority,
                amount(f.usage),
                amount(f.request),
                f.exceeds_request,
                f.critical,
            ),
            "dim" if f.critical else ("bold" if i == 0 else ""),
        )
        for i, f in enumerate(explanation.ranking)
    ]
    return columns, records


def moment_text(explanation: Explanation) -> Text:
    """What the replay's own pass saw at that moment: each signal that has a threshold against it, met ones in
    red (the signals nobody set a threshold for are counted, not listed: at 80×24 they pushed the ranking off)."""
    out = Text()
    out.append(f"The replay at that moment ({explanation.moment}):\n", style="bold")
    bare = 0
    for row in explanation.observations:
        # each threshold once, and none of the kubelet's zero containerfs copies (never met: nothing is below 0)
        shown = dict.fromkeys(t for t in row.thresholds if t[2] or t[1] != "0")
        if not shown:
            bare += 1
            continue
        out.append(f"  {row.signal}: available {row.available} of {row.capacity}")
        for describe, quantity, met in shown:
            out.append(f" · {describe} ({quantity})")
            if met:
                out.append(" MET", style="bold red")
        out.append("\n")
    if bare:
        out.append(f"  ({bare} other signals have no threshold)\n", style="dim")
    reclaim = explanation.result.threshold_to_reclaim
    if reclaim is None:
        out.append("no threshold to reclaim at this pass: the replay would not rank pods then", style="yellow")
    else:
        out.append(f"reclaiming {reclaim.signal}: the ranking below, first row first", style="bold")
    for note in explanation.notes:
        out.append(f"\n{note}", style="dim")
    return out


class MomentScreen(ResultsScreen):
    """An eviction's screen whose ranking follows the timeline's cursor: at the eviction's own pass the ranking
    it was made with; at another pass of the node the ranking of the eviction made there, else the replay's own
    pass at that tick (the engine's ``moment``, as ``explain --tick``). Off screen it waits: the replay of a
    moment runs when the screen shows again, for the latest cursor only."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "timeline", "Timeline"),
        Binding("e", "own_moment", "Eviction's moment"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.wanted: datetime | None = None
        """The moment asked for (the shared cursor), None: the eviction's own."""
        self.shown: tuple[int, datetime] | bool | None = False
        """The pass the ranking shows (None: the eviction's own; False: not drawn yet)."""

    def moment_node(self) -> str | None:
        return self.selected_node()

    def own_time(self) -> datetime | None:
        raise NotImplementedError

    def cursor_moved(self, when: datetime | None) -> None:
        self.wanted = when
        if self.is_current:
            self.follow()

    def on_screen_resume(self) -> None:
        self.follow()

    def follow(self) -> None:
        node = self.moment_node()
        if node is not None and self.wanted is not None:
            self.load_ranking(node, self.wanted)

    @work(thread=True, exclusive=True, group="moment", exit_on_error=False, name="the ranking at the cursor")
    def load_ranking(self, node: str, when: datetime) -> None:
        own = self.own_time()
        # the eviction's own moment needs no read of the node's passes (opening the detail stays one query)
        at = None if when == own else self.view.pass_at(node, when)
        if at is None or (own is not None and self.view.pass_at(node, own) == at):
            if self.shown is not None:
                self.app.call_from_thread(self.show_own)
            return
        if at == self.shown:
            return
        here = [e for e in self.view.evictions_of(node) if e.tick == at[0]]
        if here:
            self.app.call_from_thread(self.show_eviction_ranking, here[0], at)
            return
        from replay.engine import Moment
        from replay.moment import explain_moment

        inputs = self.view.moment_inputs()
        if inputs is None:
            why = Text(f"{fmt_clock(at[1])}: the recording is not on disk, no replay of that moment", style="yellow")
            self.app.call_from_thread(self.show_moment, at, why, ([], []))
            return
        explanation = explain_moment(
            inputs.recording, inputs.request, node, Moment(tick=at[0]), closed_loop=inputs.closed_loop
        )
        notes = inputs.notes
        text = moment_text(explanation)
        for note in notes:
            text.append(f"\n{note}", style="dim")
        if not get_current_worker().is_cancelled:  # a newer cursor asked meanwhile: its worker shows it
            self.app.call_from_thread(self.show_moment, at, text, moment_ranking(explanation))

    def show_own(self) -> None:
        """The eviction's own moment."""

    def show_eviction_ranking(self, e: Eviction, at: tuple[int, datetime]) -> None:
        text = Text.assemble(
            (f"At {fmt_clock(at[1])} (tick {at[0]}, the timeline's cursor) ", "bold"),
            f"the replay evicted {e.namespace}/{e.pod} on {e.node}: the ranking it made then (e: back).",
        )
        self.show_moment(at, text, ranking_records(e))

    def show_moment(self, at: tuple[int, datetime], text: Text, table: tuple[list[Column], list[Record]]) -> None:
        self.shown = at
        note = self.query_one("#moment", Static)
        note.update(text)
        note.remove_class("hidden")
        self.query_one("#ranking-title", Static).update(
            f"Ranking at {fmt_clock(at[1])} (tick {at[0]}, the timeline's cursor; e: the eviction's own; "
            "enter: that pod's view)"
        )
        self.query_one("#ranking", RecordTable).show(*table)

    def action_own_moment(self) -> None:
        own = self.own_time()
        if own is not None:
            self.post_message(CursorMoved(own))

    def action_timeline(self) -> None:
        """The node's timeline at the shared moment, on top: its cursor moves this view (back with escape)."""
        from tui.screens.timeline import TimelineScreen

        node = self.moment_node()
        if node is None:
            self.notify("the recording does not say on which node", severity="warning")
            return
        self.app.push_screen(TimelineScreen(node, at=self.el_app.cursor_time or self.own_time()))

    def open_ranked(self, key: str, uid: str = "") -> None:
        from tui.screens.pod import PodScreen

        node = self.moment_node()
        namespace, _, pod = key.partition("/")
        if node:
            self.app.push_screen(PodScreen(node, namespace, pod, uid))


class EvictionScreen(MomentScreen):
    TITLE = "Eviction"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_message", "Copy message"),
        Binding("y", "copy_annotations", "Copy annotations"),
        Binding("v", "pod", "Pod view"),
    ]

    def __init__(self, eviction_id: int) -> None:
        super().__init__()
        self.eviction_id = eviction_id

    def own_time(self) -> datetime | None:
        return self.eviction.time

    def export_object(self) -> str:
        e = self.view.eviction(self.eviction_id)
        return f"{e.namespace}-{e.pod}"

    def selected_node(self) -> str | None:
        return self.eviction.node

    @property
    def eviction(self) -> Eviction:
        return self.view.eviction(self.eviction_id)

    def compose(self) -> ComposeResult:
        e = self.eviction
        yield TitleHeader()
        yield from self.bars()
        with VerticalScroll(id="eviction-body"):
            yield Static(head_text(e), id="eviction-head")
            yield Static("Event message and annotations (c copies the message, y the annotations)", classes="section")
            yield TextArea(message_text(e), read_only=True, soft_wrap=True, id="message", show_cursor=False)
            yield Static(id="diff")
            yield Static(
                "Containers (red: named in the message or over a limit; yellow: over its request)", classes="section"
            )
            yield RecordTable(id="containers")
            yield Static("Ranking at that moment (enter: that pod's view)", classes="section", id="ranking-title")
            yield Static(id="moment", classes="hidden")
            yield RecordTable(id="ranking")
            yield Static(id="impact")
        yield KeysFooter()

    def on_mount(self) -> None:
        e = self.eviction
        self.sub_title = f"{e.namespace}/{e.pod}"
        self.show_own()
        if self.el_app.cursor_time != e.time:  # the eviction's moment is every view's now
            self.post_message(CursorMoved(e.time))
        comes_back, summary = impact_of(e)
        owner = f"owner {e.owner_kind}/{e.owner_name}" if e.owner_kind else "no owner"
        self.query_one("#impact", Static).update(
            Text.assemble(("Impact: ", "bold"), (summary, "green" if comes_back else "yellow"), f"  ({owner})")
        )
        self.query_one("#diff", Static).update(self._diff(e))
        self.load_containers()

    def show_own(self) -> None:
        self.shown = None
        self.query_one("#moment", Static).add_class("hidden")
        self.query_one("#ranking-title", Static).update("Ranking at that moment (enter: that pod's view)")
        self.query_one("#ranking", RecordTable).show(*ranking_records(self.eviction))

    def _diff(self, e: Eviction) -> Text:
        match = self.view.match_for(e)
        if match is None:
            return Text("No real eviction of this pod in the recording to compare with.", style="dim")
        if match.same_message:
            return Text("✔ the recording's real Event message is the same, byte for byte.", style="bold green")
        if match.real.message is None:
            return Text("The recording has the real eviction but not its message.", style="dim")
        return Text.assemble(
            ("Against the real message (red: only in the real one; green: only predicted):\n", "bold"),
            marked_diff(match.real.message, e.message),
        )

    @work(thread=True, exit_on_error=False, name="containers of the evicted pod")
    def load_containers(self) -> None:
        from replay.podview import containers_at

        rec = self.view.world()
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
        key = str(event.row_key.value)
        uids = {f"{r.namespace}/{r.pod}": r.uid for r in self.eviction.ranking}
        self.open_ranked(key, uids.get(key, ""))


class RealEvictionScreen(MomentScreen):
    """A real eviction the replay did not predict: the recording's message, and the replay's own pass at that
    moment (:func:`replay.moment.explain_moment`, the engine's ``moment``): what it saw and how it ranked."""

    TITLE = "Real eviction"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_message", "Copy message"),
        Binding("v", "pod", "Pod view"),
    ]

    def __init__(self, match_index: int) -> None:
        super().__init__()
        self.match_index = match_index

    @property
    def match(self) -> Match:
        return self.view.result.matches[self.match_index]

    def export_object(self) -> str:
        real = self.match.real
        return f"{real.namespace}-{real.pod}"

    def selected_node(self) -> str | None:
        return self.match.real.node

    def own_time(self) -> datetime | None:
        return self.match.real.time

    def compose(self) -> ComposeResult:
        real = self.match.real
        yield TitleHeader()
        yield from self.bars()
        with VerticalScroll(id="eviction-body"):
            head = Text()
            head.append(f"{real.namespace}/{real.pod}", style="bold")
            head.append(f"  on {real.node or '?'} at {fmt_clock(real.time)} · from {real.source}\n")
            head.append("really evicted; the replay did not predict it", style="bold yellow")
            yield Static(head, id="eviction-head")
            yield Static("The recorded message (c copies it)", classes="section")
            yield TextArea(
                real.message or "(the recording has this eviction but not its message)",
                read_only=True,
                soft_wrap=True,
                id="message",
                show_cursor=False,
            )
            yield Static("replaying the node up to that moment…", id="moment")
            yield Static(
                "Ranking at that moment, as the replay saw it (enter: that pod's view)",
                classes="section",
                id="ranking-title",
            )
            yield RecordTable(id="ranking")
        yield KeysFooter()

    def on_mount(self) -> None:
        real = self.match.real
        self.sub_title = f"{real.namespace}/{real.pod}"
        self.show_own()
        if real.time is not None and self.el_app.cursor_time != real.time:
            self.post_message(CursorMoved(real.time))

    def show_own(self) -> None:
        self.shown = None
        self.query_one("#ranking-title", Static).update(
            "Ranking at that moment, as the replay saw it (enter: that pod's view)"
        )
        self.load_moment()

    @work(thread=True, exclusive=True, group="own", exit_on_error=False, name="the replay at the real eviction")
    def load_moment(self) -> None:
        from replay.engine import Moment
        from replay.moment import explain_moment

        real = self.match.real
        inputs = self.view.moment_inputs()
        if inputs is None or real.node is None or real.time is None:
            why = (
                "the recording is not on disk" if inputs is None else "the recording does not say on which node or when"
            )
            self.app.call_from_thread(self.query_one("#moment", Static).update, f"{why}: no replay of that moment")
            return
        explanation = explain_moment(
            inputs.recording, inputs.request, real.node, Moment(at=real.time), closed_loop=inputs.closed_loop
        )
        notes = inputs.notes
        explanation = dataclasses.replace(explanation, notes=(*explanation.notes, *notes))
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._moment, explanation)

    def _moment(self, explanation: Explanation) -> None:
        if self.shown is not None:  # the cursor went elsewhere meanwhile: that moment shows
            return
        self.query_one("#moment", Static).update(moment_text(explanation))
        self.query_one("#ranking", RecordTable).show(*moment_ranking(explanation))

    def action_copy_message(self) -> None:
        self.app.copy_to_clipboard(self.match.real.message or "")
        self.notify("message copied (OSC 52 clipboard)", timeout=2)

    def action_pod(self) -> None:
        from tui.screens.pod import PodScreen

        real = self.match.real
        if real.node and real.pod and real.namespace:
            self.app.push_screen(PodScreen(real.node, real.namespace, real.pod, real.uid or ""))

    @on(DataTable.RowSelected, "#ranking")
    def _open_ranked(self, event: DataTable.RowSelected) -> None:
        self.open_ranked(str(event.row_key.value))
