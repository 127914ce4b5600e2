"""Screen 1: every node of the result, its pressure and evictions; and every eviction, predicted or real."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from replay.kernel import SAME_KILL_S
from replay.replay_report import fmt_bytes, kill_victim
from replay.results import Eviction, KernelKill, RankedPod
from replay.views import CONDITIONS, SHORT_SIGNAL
from tui.fmt import fmt_clock, fmt_duration, fmt_ratio, fmt_signal_value
from tui.messages import UseResult
from tui.results_view import ResultsView
from tui.screens.base import ResultsScreen
from tui.screens.confirm import ConfirmScreen
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.record_table import Column, Record, RecordTable
from tui.widgets.title_header import TitleHeader


def next_to_go(view: ResultsView, at: datetime | None = None) -> dict[str, tuple[str, str]]:
    """Node → (pod, how close) of the pod next in line on it, from the rankings of the result: the latest
    eviction at or before ``at`` (the timeline's cursor; None: the last one), the first ranked pod after the
    evicted one that can be evicted, with what kept it (``usage, 859.5Mi short`` as the CLI prints it)."""
    out: dict[str, tuple[str, str]] = {}
    latest: dict[str, Eviction] = {}
    for e in view.result.evictions:
        if at is not None and e.time > at:
            continue
        if e.node not in latest or (e.time, e.id) > (latest[e.node].time, latest[e.node].id):
            latest[e.node] = e
    for node, e in latest.items():
        evicted = next((r for r in e.ranking if r.decided_by == "evicted" or r.uid == e.uid), None)
        after = [r for r in e.ranking if not r.critical and (evicted is None or r.rank > evicted.rank)]
        if after:
            out[node] = (f"{after[0].namespace}/{after[0].pod}", decided_text(e, after[0]))
    return out


def decided_text(e: Eviction, r: RankedPod) -> str:
    """What kept a ranked pod from being the one evicted, as ``evictlens replay`` prints it
    (replay_report.impact_lines): ``usage, 859.5Mi short``, ``priority +1000``, ``evicted``."""
    how = r.decided_by or "—"
    if r.margin is not None and how in ("usage", "processes"):
        how += f", {fmt_bytes(r.margin) if e.signal != 'pid.available' else r.margin} short"
    elif r.margin is not None and how == "priority":
        how += f" {r.margin:+d}"
    return how


def node_table(
    view: ResultsView, overcommit: dict[str, float], at: datetime | None = None
) -> tuple[list[Column], list[Record]]:
    signals = view.signal_names()
    lowest = {(r["node"], r["signal"]): r["lowest"] for r in view.lowest_available().iter_rows(named=True)}
    pressure = view.pressure_seconds()
    predicted: dict[str, int] = {}
    for e in view.result.evictions:
        predicted[e.node] = predicted.get(e.node, 0) + 1
    real: dict[str, int] = {}
    for m in view.result.matches:
        real[m.real.node or "?"] = real.get(m.real.node or "?", 0) + 1
    kills: dict[str, int] = {}
    for k in view.kills():
        kills[k.node or "?"] = kills.get(k.node or "?", 0) + 1
    # what happened first (an 80-column terminal shows node, evictions and kills), then why, then the setting
    columns = [
        Column("node", "node", _node_fmt(view.not_ready())),
        Column("predicted", "predicted", right=True),
        Column("real", "real", right=True),
        Column("kernel_kills", "kernel kills", _kills_fmt, right=True),
    ]
    columns += [
        Column(f"pressure_{c}", c.removesuffix("Pressure") + " pressure", fmt_duration, right=True) for c in CONDITIONS
    ]
    columns += [Column("next", "next to go"), Column("next_margin", "kept by")]
    columns += [Column(f"lowest_{s}", f"low {SHORT_SIGNAL.get(s, s)}", _signal_fmt(s), right=True) for s in signals]
    columns += [Column("overcommit", "peak mem limits/alloc", fmt_ratio, right=True), Column("kubelet", "kubelet")]
    parted = any(n.horizon is not None for n in view.nodes)  # the column only when a node parts ways
    if parted:
        columns += [Column("horizon", "as recorded until", fmt_clock)]
    upcoming = next_to_go(view, at)
    records = []
    for n in view.nodes:
        values: list[Any] = [n.node, predicted.get(n.node, 0), real.get(n.node, 0), kills.get(n.node, 0)]
        values += [pressure.get((n.node, c)) for c in CONDITIONS]
        values += [*upcoming.get(n.node, (None, None))]
        values += [lowest.get((n.node, s)) for s in signals]
        values += [overcommit.get(n.node), n.kubelet_version]
        if parted:
            values += [n.horizon]
        style = "bold" if predicted.get(n.node) or real.get(n.node) or kills.get(n.node) else ""
        records.append(Record(n.node, tuple(values), style))
    return columns, records


def _status(view: ResultsView, eviction_id: int) -> str:
    e = view.eviction(eviction_id)
    m = view.match_for(e)
    if m is None:
        return "predicted only"
    return "real, same message" if m.same_message else "real, message differs"


def _hard(value: bool | str | None) -> str:
    """An eviction's threshold kind (hard/soft); a kernel kill's own kind (``OOMKilled``, ``SystemOOM``)."""
    if isinstance(value, str):
        return value
    return "—" if value is None else ("hard" if value else "soft")


def _node_fmt(not_ready: dict[str, str]) -> Callable[[Any], str | Text]:
    """The node's name, marked ``⚠ NotReady`` when its Ready condition went False or Unknown (as kubectl says)."""

    def fmt(value: Any) -> str | Text:
        if value in not_ready:
            return Text.assemble(str(value), (" ⚠ NotReady", "bold red"))
        return str(value)

    return fmt


def _kills_fmt(value: Any) -> str | Text:
    return Text(f"✖ {value}", style="bold red") if value else str(value)


def _signal_fmt(signal: str) -> Callable[[Any], str]:
    return lambda v: fmt_signal_value(signal, v)


def eviction_table(view: ResultsView) -> tuple[list[Column], list[Record]]:
    columns = [
        Column("pod", "pod"),
        Column("node", "node"),
        Column("time", "time", fmt_clock),
        Column("cause", "cause"),
        Column("hard", "kind", _hard),
        Column("status", "vs. the recording"),
    ]
    records = [
        Record(f"e{e.id}", (f"{e.namespace}/{e.pod}", e.node, e.time, e.cause, e.hard, _status(view, e.id)))
        for e in view.result.evictions
    ]
    records += [
        Record(
            f"r{i}",
            (f"{m.real.namespace}/{m.real.pod}", m.real.node, m.real.time, "—", None, "real only: not predicted"),
            "yellow",
        )
        for i, m in enumerate(view.result.matches)
        if m.predicted_id is None
    ]
    records += kill_records(view)
    when = {r.key: r.values[2] for r in records}
    return columns, sorted(records, key=lambda r: (when[r.key] is None, when[r.key] or datetime.min))


KILL_STATUS = "kernel OOM kill: not the kubelet"


def kill_records(view: ResultsView) -> list[Record]:
    """One row per process the kernel killed (``view.kills()``), keyed ``k<index in result.kernel_kills>.<n>``
    (an aggregated ``SystemOOM`` Event stands for ``count`` kills): a container with the node-wide kill it was
    (the ``SystemOOM`` Event naming its process) as its cause, a process the kubelet's Event alone names."""
    index = {id(k): i for i, k in enumerate(view.result.kernel_kills)}
    seen: dict[int, int] = {}
    out = []
    for k in view.kills():
        i = index[id(k)]
        seen[i] = seen.get(i, 0) + 1
        out.append(
            Record(
                f"k{i}.{seen[i]}",
                (kill_victim(k), k.node, k.time, kill_cause(view, k), k.kind, KILL_STATUS),
                "red",
                "✖",
            )
        )
    return out


def kill_cause(view: ResultsView, k: KernelKill) -> str:
    """``node out of memory (java, pid 4001)`` when a ``SystemOOM`` on the node is this kill (within
    ``SAME_KILL_S``), else what the container's status says (``exit 137``)."""
    system = k if k.kind == "SystemOOM" else None
    if system is None:
        system = next(
            (
                s
                for s in view.result.kernel_kills
                if s.kind == "SystemOOM" and s.node == k.node and abs((s.time - k.time).total_seconds()) <= SAME_KILL_S
            ),
            None,
        )
    if system is not None:
        named = ", ".join(
            p for p in (system.victim, f"pid {system.pid}" if system.pid is not None else None) if p is not None
        )
        return "node out of memory" + (f" ({named})" if named else "")
    return f"exit {k.exit_code}" if k.exit_code is not None else "container OOMKilled"


class OverviewScreen(ResultsScreen):
    TITLE = "Overview"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("q", "quit", "Quit"),
        Binding("r", "next_result", "Next result"),
    ]

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield Static(id="overview-title")
        yield from self.bars("filter nodes and pods by name (enter: into the results)")
        yield RecordTable(id="nodes")
        yield Static("Evictions and kernel kills (✖) — enter opens one", classes="section")
        yield RecordTable(id="evictions")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.results_changed()
        self.query_one("#nodes", RecordTable).focus()

    def results_changed(self) -> None:
        view = self.view
        self.sub_title = view.label
        real = len(view.result.matches)
        same = sum(1 for m in view.result.matches if m.same_message)
        kills, races = len(view.kills()), len(view.races())
        whatifs = len(self.el_app.results) - 1
        title = Text.assemble(
            (f"{view.label}", "bold"),
            f"  ·  {len(view.nodes)} nodes · {len(view.result.evictions)} predicted "
            f"evictions · {real} real, {same} with the exact message · ",
            (f"{kills} kernel kill{'' if kills == 1 else 's'}", "bold red" if kills else ""),
            (
                (f" · memory ran out between passes {races} time{'' if races == 1 else 's'}", "bold red")
                if races
                else ""
            ),
            ("" if len(self.el_app.results) == 1 else f"  ·  {whatifs} what-if{'s' if whatifs > 1 else ''} (r: next)"),
        )
        self.query_one("#overview-title", Static).update(title)
        self.query_one("#nodes", RecordTable).show(*node_table(view, view.overcommit(), self.el_app.cursor_time))
        self.query_one("#evictions", RecordTable).show(*eviction_table(view))

    def selected_node(self) -> str | None:
        """The highlighted node row; with the evictions table focused, the highlighted eviction's node."""
        evictions = self.query_one("#evictions", RecordTable)
        if self.focused is evictions:
            key = evictions.selected_key()
            record = next((r for r in evictions.records if r.key == key), None)
            return None if record is None else str(record.values[1])
        return self.query_one("#nodes", RecordTable).selected_key()

    def action_clear_filter(self) -> None:
        """Escape on the overview (the bottom screen): close the filter (and clear it) or the command input."""
        self.close_bars()

    def action_quit(self) -> None:
        """Quit; with what-if results (lost on quitting) only once the user says yes."""
        whatifs = len(self.el_app.results) - 1
        if whatifs <= 0:
            self.app.exit()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.exit()

        self.app.push_screen(
            ConfirmScreen(
                f"Quit? The {whatifs} what-if result{'s' if whatifs > 1 else ''} of this session will be lost "
                "(replay --kubelet-version/--eviction-hard … -o DIR keeps one)."
            ),
            answered,
        )

    @on(DataTable.RowSelected, "#nodes")
    def _open_node(self, event: DataTable.RowSelected) -> None:
        from tui.screens.timeline import TimelineScreen

        if event.row_key.value is not None:
            self.app.push_screen(TimelineScreen(str(event.row_key.value)))

    @on(DataTable.RowSelected, "#evictions")
    def _open_eviction(self, event: DataTable.RowSelected) -> None:
        self._open_eviction_key(str(event.row_key.value))

    def _open_eviction_key(self, key: str) -> None:
        from tui.screens.jump import open_eviction_key

        open_eviction_key(self, key)

    def cursor_moved(self, when: datetime | None) -> None:
        """Next to go follows the timeline's cursor (the rankings up to that moment)."""
        self.query_one("#nodes", RecordTable).show(*node_table(self.view, self.view.overcommit(), when))

    def action_next_result(self) -> None:
        self.post_message(UseResult((self.el_app.current + 1) % len(self.el_app.results)))
