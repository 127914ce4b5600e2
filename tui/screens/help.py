"""The ``?`` overlay: every binding active on the screen underneath, with its key."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


def binding_rows(screen: Screen[object]) -> list[tuple[str, str, str]]:
    """(key, what it does, where) of every binding with a description, the focused widget's first; an action
    bound to several keys (``+``, ``=``, ``i``) once, under its displayed key; actions off here not at all."""
    rows: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str, int]] = set()
    for key, active in screen.active_bindings.items():
        b = active.binding
        if not b.description or not active.enabled or (b.action, b.description, id(active.node)) in seen:
            continue
        seen.add((b.action, b.description, id(active.node)))
        where = "app" if active.node is screen.app else type(active.node).__name__
        rows.append((b.key_display or key, b.description, where))
    return rows


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("q", "dismiss", "Close", show=False),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(f"Keys — {self.under.title or type(self.under).__name__}", id="help-title")
            table: DataTable[str] = DataTable(id="help-table", cursor_type="row")
            table.add_columns("key", "action", "from")
            for row in binding_rows(self.under):
                table.add_row(*row)
            yield table
            yield Static("ctrl+p: command palette (every action above by name) · escape: close", id="help-foot")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
