"""What a directory that is not a recording, or a damaged one, shows: the one-line problem, no traceback."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from kube.errors import EXIT_BAD_INPUT
from tui.widgets.title_header import TitleHeader


class ErrorScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit_bad", "Quit"),
        Binding("escape", "quit_bad", "Quit", show=False),
    ]

    def __init__(self, what: str, problem: str) -> None:
        super().__init__()
        self.what = what
        self.problem = problem

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        with Vertical(id="error-box"):
            yield Static("Cannot open this", id="error-title")
            yield Static(self.what, id="error-what", markup=False)
            yield Static(self.problem, id="error-problem", markup=False)
            yield Static(
                "evictlens tui opens a recording (evictlens record / import / scenario), a results "
                "directory (evictlens replay -o DIR), or with no argument the bundled sample.",
                id="error-hint",
            )
        yield Footer()

    def action_quit_bad(self) -> None:
        self.app.exit(EXIT_BAD_INPUT, return_code=EXIT_BAD_INPUT)
