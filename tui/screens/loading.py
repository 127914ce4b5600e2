"""Shown while the recording is replayed (or the results directory read): a progress bar."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.screen import Screen
from textual.widgets import Footer, ProgressBar, Static

from tui.widgets.title_header import TitleHeader


class LoadingScreen(Screen[None]):
    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        with Middle(), Center():
            yield Static(f"Opening {self.what}", id="loading-what")
            yield ProgressBar(id="loading-bar", show_eta=False)
            yield Static("", id="loading-count")
        yield Footer()

    def show_progress(self, label: str, done: int, total: int) -> None:
        self.query_one(ProgressBar).update(total=total, progress=done)
        self.query_one("#loading-count", Static).update(f"replaying: {done} of {total} passes")
