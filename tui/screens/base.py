"""What every results screen shares: back on ``escape``/``q`` (as in k9s), ``:`` to jump and ``/`` to filter
(:mod:`tui.screens.jump`), hooks the app calls on changes, and its workers' failures passed up to the app's one
handler."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input
from textual.worker import Worker

from tui.messages import worker_failure

if TYPE_CHECKING:
    from datetime import datetime

    from tui.app import EvictlensApp
    from tui.results_view import ResultsView


class BarInput(Input):
    """The ``/`` and ``:`` inputs: focusable only while shown (never the screen's first focus, nor in tab's
    chain, while hidden)."""

    def allow_focus(self) -> bool:
        return not self.has_class("hidden") and super().allow_focus()


COMMAND_HINT = ":node NAME  ·  :pod NAME (any node)  ·  :eviction POD  ·  :kill POD"
FILTER_HINT = "filter by name (enter: into the rows)"


class ResultsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("q", "back", "Back", show=False),
        # priority: run as the app reads the key, before it forwards the next one (a burst typed after ``:``
        # would otherwise reach the table or the screen before the input has the focus)
        Binding("colon", "command", "Jump", key_display=":", priority=True),
        Binding("slash", "filter", "Filter", key_display="/", priority=True),
    ]

    _before_bar: Widget | None = None

    def bars(self, filter_hint: str = FILTER_HINT) -> ComposeResult:
        """The ``/`` filter and ``:`` command inputs, hidden until their key (every screen composes them)."""
        yield BarInput(placeholder=filter_hint, id="filter", classes="hidden")
        yield BarInput(placeholder=COMMAND_HINT, id="command", classes="hidden")

    def _open_bar(self, box_id: str, *, clear: bool) -> None:
        boxes = list(self.query(f"#{box_id}").results(Input))
        if isinstance(self.focused, Input) or not boxes:
            raise SkipAction()  # typed into a field (the what-if form's, the input itself): the key is its text
        box = boxes[0]
        if clear:
            box.value = ""
        if self.focused is not None and self.focused.id not in ("filter", "command"):
            self._before_bar = self.focused
        box.remove_class("hidden")
        # now, not in a callback (Widget.focus): every key after it, even already queued, goes to the input
        self.set_focus(box, scroll_visible=False)

    def close_bars(self) -> bool:
        """Hide the open filter/command input (the focus back where it was); False: none was open."""
        closed = False
        for box in self.query(Input):
            if box.id in ("filter", "command") and not box.has_class("hidden"):
                if box.id == "filter" and box.value:
                    box.value = ""
                box.add_class("hidden")
                closed = True
        if closed:
            self.set_focus(self._before_bar if self._before_bar is not None and self._before_bar.is_attached else None)
        return closed

    def action_command(self) -> None:
        self._open_bar("command", clear=True)

    def action_filter(self) -> None:
        self._open_bar("filter", clear=False)

    @on(Input.Submitted, "#command")
    def _command_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#command", Input).add_class("hidden")
        self.set_focus(self._before_bar if self._before_bar is not None and self._before_bar.is_attached else None)
        self.jump(event.value)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        from tui.widgets.record_table import RecordTable

        for table in self.query(RecordTable):
            table.set_filter(event.value)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        """Enter moves into the rows: the first table that still has some, on its first row; a screen without a
        table (a timeline, a pod) filters the overview's tables instead, back there."""
        from tui.widgets.record_table import RecordTable

        event.stop()
        tables = list(self.query(RecordTable))
        if not tables:
            self.query_one("#filter", Input).add_class("hidden")
            self.filter_overview(event.value)
            return
        shown = [t for t in tables if t.row_count]
        target = shown[0] if shown else tables[0]
        self.set_focus(target)
        if target.row_count:
            target.move_cursor(row=0)

    @property
    def el_app(self) -> EvictlensApp:
        return cast("EvictlensApp", self.app)

    @property
    def view(self) -> ResultsView:
        return self.el_app.view

    def jump(self, command: str) -> None:
        """``:node NAME``, ``:pod NAME``, ``:eviction POD``, ``:kill POD`` from any screen (:mod:`tui.screens.jump`)."""
        from tui.screens.jump import jump

        jump(self, command)

    def filter_overview(self, text: str) -> None:
        """Back to the overview (the bottom screen), its tables filtered by ``text``."""
        from tui.screens.jump import filter_overview

        filter_overview(self, text)

    def action_back(self) -> None:
        """Close an open filter/command input, else back one screen."""
        if not self.close_bars():
            self.dismiss()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of this screen raised: up to the app as :class:`~tui.messages.WorkFailed` (it bubbles)."""
        failed = worker_failure(event)
        if failed is not None:
            self.post_message(failed)

    def export_object(self) -> str:
        """The name of what the screen shows (a node, a pod), for export and screenshot file names."""
        return ""

    def selected_node(self) -> str | None:
        """The node of what the screen shows or has selected (the what-if form's ctrl+u reads its settings)."""
        return None

    def cursor_moved(self, when: datetime | None) -> None:
        """The timeline's cursor moved to ``when`` (the app's shared moment)."""

    def results_changed(self) -> None:
        """The current result switched, or a new one arrived."""

    def show_progress(self, label: str, done: int, total: int) -> None:
        """A replay advanced."""

    def show_started(self, label: str) -> None:
        """A what-if replay started under ``label``."""

    def show_failure(self, label: str, problem: str) -> None:
        """Some work failed (a replay, or a screen's loading)."""
