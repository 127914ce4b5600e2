"""What every results screen shares: back on ``escape``/``q`` (as in k9s), hooks the app calls on changes,
and its workers' failures passed up to the app's one handler."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, cast

from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker

from tui.messages import worker_failure

if TYPE_CHECKING:
    from datetime import datetime

    from tui.app import EvictlensApp
    from tui.results_view import ResultsView


class ResultsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back"),
        Binding("q", "back", "Back", show=False),
    ]

    @property
    def el_app(self) -> EvictlensApp:
        return cast("EvictlensApp", self.app)

    @property
    def view(self) -> ResultsView:
        return self.el_app.view

    def action_back(self) -> None:
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
