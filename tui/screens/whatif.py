"""Screen 6: edit thresholds or the kubelet version (open or closed loop), re-run on the engine, switch between
results, compare. The form posts what the user asked for; the app runs it."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, DataTable, Input, Label, ProgressBar, Select, Static

from kube.duration import format_duration
from kube.errors import EvictlensError
from kube.quantity import Format, Quantity
from kube.signals import ALLOCATABLE_MEMORY_AVAILABLE
from replay.kubelet.config import FlagOverrides
from replay.kubelet.versions import KNOWN_VERSIONS
from replay.results import NodeResult, ThresholdSetting
from replay.settings import SettingsRequest
from replay.views import is_bytes
from tui.messages import CompareResults, RunWhatIf, UseResult
from tui.screens.base import ResultsScreen
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.record_table import Column, Record, RecordTable
from tui.widgets.title_header import TitleHeader

PER_NODE = "per node"
FIELDS = (
    ("hard", "--eviction-hard", "e.g. memory.available<1.5Gi"),
    ("soft", "--eviction-soft", "e.g. memory.available<2Gi"),
    ("soft-grace", "--eviction-soft-grace-period", "e.g. memory.available=1m30s"),
    ("transition", "--eviction-pressure-transition-period", "e.g. 1m (default 5m0s)"),
    ("max-grace", "--eviction-max-pod-grace-period", "seconds, e.g. 30"),
)


COUNTERFACTUAL_HINT = "closed loop: an evicted pod's usage leaves its node's later summaries"
"""The what-if form's checkbox (``--counterfactual``; the model and its limits: replay/COUNTERFACTUAL.md)."""


def _flag_value(t: ThresholdSetting) -> str:
    """A threshold's value as the flag takes it: ``10%``, ``1536Mi`` (exact, Go's canonical form), ``5000``."""
    if t.quantity is None:
        return f"{(t.percentage or 0) * 100:g}%"
    return str(Quantity.new(t.quantity, Format.BINARY_SI)) if is_bytes(t.signal) else str(t.quantity)


def _configurable(t: ThresholdSetting, hard: bool) -> bool:
    """A threshold someone set (not the kubelet's own copies: ``allocatableMemory.available`` from
    enforceNodeAllocatable, the ``containerfs.*`` ones UpdateContainerFsThresholds derives)."""
    return (
        t.hard == hard
        and bool(t.operator)
        and t.signal != ALLOCATABLE_MEMORY_AVAILABLE
        and not t.signal.startswith("containerfs.")
    )


def current_value(node: NodeResult, name: str) -> str:
    """What form field ``name`` holds for ``node`` as replayed: its flag's value now (ctrl+u on a field), so a
    what-if starts from the node's settings and changes one thing (a filled field replaces the whole flag)."""
    if name in ("hard", "soft"):
        texts = [f"{t.signal}<{_flag_value(t)}" for t in node.thresholds if _configurable(t, name == "hard")]
        return ",".join(dict.fromkeys(texts))
    if name == "soft-grace":
        soft = [t for t in node.thresholds if _configurable(t, False)]
        return ",".join(dict.fromkeys(f"{t.signal}={format_duration(t.grace_period_ns)}" for t in soft))
    if name == "transition":
        return format_duration(node.pressure_transition_period_ns)
    if name == "max-grace":
        return str(node.max_pod_grace_period_s)
    raise KeyError(name)


def request_from_form(version: str, values: dict[str, str], *, counterfactual: bool = False) -> SettingsRequest:
    """The form as a :class:`SettingsRequest`: each non-empty field is that kubelet flag; ``counterfactual``
    the closed-loop choice (open loop, as recorded, when off)."""

    def many(name: str) -> tuple[str, ...]:
        return (values[name].strip(),) if values.get(name, "").strip() else ()

    max_grace = values.get("max-grace", "").strip()
    if max_grace and not max_grace.lstrip("-").isdigit():
        raise EvictlensError("expected a whole number of seconds", field="--eviction-max-pod-grace-period")
    overrides = FlagOverrides(
        eviction_hard=many("hard"),
        eviction_soft=many("soft"),
        eviction_soft_grace_period=many("soft-grace"),
        eviction_pressure_transition_period=values.get("transition", "").strip() or None,
        eviction_max_pod_grace_period=int(max_grace) if max_grace else None,
    )
    return SettingsRequest(
        kubelet_version=None if version == PER_NODE else version, overrides=overrides, counterfactual=counterfactual
    )


def result_name(label: str) -> str:
    """A result's one name everywhere (this list, the overview, compare, notifications): ``what-if 2`` of
    ``what-if 2: --eviction-hard …`` (the app's label), the first result's label whole (``as recorded``)."""
    head, sep, _rest = label.partition(": ")
    return head if sep and head.startswith("what-if ") else label


class WhatIfScreen(ResultsScreen):
    TITLE = "What-if"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run", "Run what-if"),
        Binding("ctrl+o", "compare", "Compare with selected"),
        # priority: in a field ctrl+u would otherwise clear it (the Input's own delete-left-all)
        Binding("ctrl+u", "use", "Use selected", priority=True),
        Binding("ctrl+l", "focus_results", "Results list"),
        # priority: focus moves before the next key is dispatched, so what is typed straight after Tab
        # lands in the next field (a non-priority Tab reaches the screen only after the focused field
        # was already handed the keys behind it)
        Binding("tab", "app.focus_next", "Next field", show=False, priority=True),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
    ]

    running: str | None = None
    """The what-if replay under way (its label), None when idle: Run is off meanwhile (one run at a time)."""

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield from self.bars()
        with VerticalScroll(id="whatif-body"):
            yield Static(
                "Replay the same recording with other settings. Empty fields keep each node's "
                "recorded configuration; each filled one replaces that field, as the kubelet's flag would; "
                "ctrl+u in a field fills it with the selected node's current value.",
                classes="section",
            )
            with Horizontal(classes="form-row"):
                yield Label("kubelet version", classes="form-label")
                yield Select(
                    [(PER_NODE + " (as recorded)", PER_NODE), *((v, v) for v in KNOWN_VERSIONS)],
                    value=PER_NODE,
                    allow_blank=False,
                    id="version",
                )
            for name, flag, hint in FIELDS:
                with Horizontal(classes="form-row"):
                    yield Label(flag, classes="form-label")
                    yield Input(placeholder=hint, id=name)
            with Horizontal(classes="form-row"):
                yield Label("--counterfactual", classes="form-label")
                yield Checkbox(COUNTERFACTUAL_HINT, id="counterfactual")
            with Horizontal(classes="form-row"):
                yield Button("Run (ctrl+r)", id="run", variant="primary")
                yield Button("Compare with selected (ctrl+o)", id="compare")
                yield Button("Use selected (ctrl+u)", id="use")
            with Vertical(id="whatif-run"):
                yield ProgressBar(id="whatif-progress", show_eta=False, classes="hidden")
                yield Static("nothing running: fill in a field, then ctrl+r", id="whatif-status")
            yield Static(
                "Results (ctrl+l; enter or ctrl+u switches every screen to the selected one; "
                "ctrl+o compares as recorded with it)",
                classes="section",
            )
            yield RecordTable(id="results")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.results_changed()
        self.query_one("#version", Select).focus()

    def results_changed(self) -> None:
        app = self.el_app
        if self.running is not None and any(v.label == self.running for v in app.results):
            self._set_running(None)
            self.query_one("#whatif-progress", ProgressBar).add_class("hidden")
            self.query_one("#whatif-status", Static).update(f"{self.running_done()}: done")
        columns = [
            # the counts before the settings' label, which can be long (seen at 80 columns)
            Column("result", "result"),
            Column("current", ""),
            Column("evictions", "evictions", right=True),
            Column("kills", "kernel kills", right=True),
            Column("exact", "real with exact message", right=True),
            Column("label", "settings"),
        ]
        records = [
            Record(
                str(i),
                (
                    result_name(v.label),
                    "▶ current" if i == app.current else "",
                    len(v.result.evictions),
                    len(v.kills()),
                    sum(1 for m in v.result.matches if m.same_message),
                    v.label.partition(": ")[2] if i else "the recorded settings",
                ),
            )
            for i, v in enumerate(app.results)
        ]
        table = self.query_one("#results", RecordTable)
        grown = len(records) != len(table.records)
        table.show(columns, records)
        table.move_cursor(row=len(records) - 1)
        if grown:  # a run finished: its row in view (at 80×24 the list is below the form)
            self.call_after_refresh(self.query_one("#whatif-body").scroll_end, animate=False)

    def show_progress(self, label: str, done: int, total: int) -> None:
        if label != self.running:
            return
        bar = self.query_one("#whatif-progress", ProgressBar)
        bar.remove_class("hidden")
        bar.update(total=total, progress=done)
        self.query_one("#whatif-status", Static).update(f"{label}: {done} of {total} passes")

    def show_started(self, label: str) -> None:
        self._set_running(label)
        bar = self.query_one("#whatif-progress", ProgressBar)
        bar.remove_class("hidden")
        bar.update(total=None, progress=0)
        self.query_one("#whatif-status", Static).update(f"{label}: starting")

    def show_failure(self, label: str, problem: str) -> None:
        if label == self.running:
            self._set_running(None)
            self.query_one("#whatif-progress", ProgressBar).add_class("hidden")
        self.query_one("#whatif-status", Static).update(Text(f"{label}: {problem}", style="bold red"))

    def _set_running(self, label: str | None) -> None:
        self.running = label
        self.query_one("#run", Button).disabled = label is not None

    def action_focus_results(self) -> None:
        self.query_one("#results", RecordTable).focus()

    def form_values(self) -> dict[str, str]:
        return {name: self.query_one(f"#{name}", Input).value for name, _f, _h in FIELDS}

    def running_done(self) -> str:
        return self.el_app.results[-1].label

    def action_run(self) -> None:
        if self.running is not None:
            self.notify(f"{self.running} is still running", severity="warning", timeout=3)
            return
        version = str(self.query_one("#version", Select).value)
        try:
            request = request_from_form(
                version, self.form_values(), counterfactual=self.query_one("#counterfactual", Checkbox).value
            )
        except EvictlensError as err:
            self.show_failure("what-if", err.one_line())
            return
        self._set_running("what-if")  # until the app names it (show_started): a second enter does nothing
        self.post_message(RunWhatIf(request))

    def _selected(self) -> int | None:
        key = self.query_one("#results", RecordTable).selected_key()
        return None if key is None else int(key)

    def action_compare(self) -> None:
        index = self._selected()
        self.post_message(CompareResults(index if index else None))

    def action_use(self) -> None:
        """ctrl+u: in a form field, the selected node's current value of it; elsewhere the selected result
        on every screen."""
        focused = self.focused
        names = [name for name, _f, _h in FIELDS]
        if isinstance(focused, Input) and focused.id in names:
            self.fill_from_selected(focused)
            return
        self.use_selected_result()

    def use_selected_result(self) -> None:
        index = self._selected()
        if index is not None:
            self.post_message(UseResult(index))

    def node_under_form(self) -> NodeResult | None:
        """The node of what was selected under the form (a timeline's node, an eviction's, the overview's
        highlighted row), in the current result; the only node of a one-node result."""
        below = self.app.screen_stack[:-1]
        for screen in reversed(below):
            if isinstance(screen, ResultsScreen):
                name = screen.selected_node()
                if name is not None and any(n.node == name for n in self.view.nodes):
                    return self.view.node(name)
        return self.view.nodes[0] if len(self.view.nodes) == 1 else None

    def fill_from_selected(self, field: Input) -> None:
        node = self.node_under_form()
        if node is None:
            self.notify("select a node first (a row of the overview, a timeline or an eviction)", severity="warning")
            return
        field.value = current_value(node, str(field.id))
        field.cursor_position = len(field.value)
        self.notify(f"{field.id}: {node.node}'s value in {self.view.label}", timeout=3)

    @on(DataTable.RowSelected, "#results")
    def _row(self) -> None:
        self.use_selected_result()

    @on(Button.Pressed, "#run")
    def _run(self) -> None:
        self.action_run()

    @on(Button.Pressed, "#compare")
    def _compare(self) -> None:
        self.action_compare()

    @on(Button.Pressed, "#use")
    def _use(self) -> None:
        self.use_selected_result()
