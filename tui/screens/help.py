"""The ``?`` overlay: the keys that answer questions first (jump, filter, what-if, compare, timeline …), then every
binding of the screen underneath, then each other screen's, grouped by screen under its title (never a class
name). It scrolls (j/k, PgDn/PgUp, g/G) at 80×24."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static

DOMAIN: tuple[tuple[str, str, str], ...] = (
    (":", "Jump: :node, :pod, :eviction, :kill NAME", "every screen"),
    ("/", "Filter by name", "every screen"),
    ("w", "What-if: replay with other settings", "everywhere"),
    ("d", "Compare two results", "everywhere"),
    ("t", "The node's timeline at this moment", "detail, pod view"),
    ("e", "Back to the eviction's own moment", "eviction"),
    ("z", "Zoom the plot (thresholds / usage)", "timeline, pod view"),
    ("n / p", "Next / previous eviction or kill", "timeline"),
    ("enter", "Open: timeline, eviction, kernel kill", "tables, timeline"),
    ("ctrl+e", "Export the table (CSV; ctrl+j JSON)", "tables"),
    ("q", "Back one screen (quits on the overview)", "every screen"),
)
"""The keys a user looks for first (issue 27: the domain keys before the rest)."""

WIDGETS = {"RecordTable": "tables", "DataTable": "tables", "Input": "text fields", "BarInput": "text fields"}
"""What a focused widget's bindings are listed under (the user's word for it, not its class)."""


def _where(screen: Screen[object], node: object) -> str:
    if node is screen.app:
        return "everywhere"
    if node is screen:
        return "this screen"
    return WIDGETS.get(type(node).__name__, "the focused field")


def binding_rows(screen: Screen[object]) -> list[tuple[str, str, str]]:
    """(key, what it does, where) of every binding with a description active on ``screen``, the focused widget's
    first; an action bound to several keys (``+``, ``=``, ``i``) once, under its displayed key; actions off here
    not at all."""
    rows: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str, int]] = set()
    for key, active in screen.active_bindings.items():
        b = active.binding
        if not b.description or not active.enabled or (b.action, b.description, id(active.node)) in seen:
            continue
        seen.add((b.action, b.description, id(active.node)))
        rows.append((b.key_display or key, b.description, _where(screen, active.node)))
    return rows


def class_rows(cls: type[Screen[Any]]) -> list[tuple[str, str]]:
    """(key, what) of a screen class's own bindings and its evictlens bases' (once per action), as declared."""
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    from tui.screens.base import ResultsScreen

    for klass in cls.__mro__:
        if klass is ResultsScreen or not klass.__module__.startswith("tui."):
            continue  # every screen's (back, jump, filter) are above; Textual's own are not this app's keys
        for b in vars(klass).get("BINDINGS", ()):
            if not isinstance(b, Binding) or not b.description or b.action in seen:
                continue
            seen.add(b.action)
            out.append((b.key_display or b.key.split(",")[0], b.description))
    return out


def other_screens() -> list[type[Screen[Any]]]:
    from tui.screens.compare import CompareScreen
    from tui.screens.eviction import EvictionScreen
    from tui.screens.kill import KillScreen
    from tui.screens.overview import OverviewScreen
    from tui.screens.pod import PodScreen
    from tui.screens.timeline import TimelineScreen
    from tui.screens.whatif import WhatIfScreen

    return [OverviewScreen, TimelineScreen, EvictionScreen, KillScreen, PodScreen, CompareScreen, WhatIfScreen]


class HelpTable(DataTable[str | Text]):
    """The help's rows, scrolled with the keys of the tables (j/k, g/G, PgDn/PgUp)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
        Binding("space", "page_down", "Page down", show=False),
    ]


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
        title = self.under.title or "this screen"
        with Vertical(id="help-box"):
            yield Static(f"Keys — {title}  (j/k, PgDn/PgUp, g/G scroll)", id="help-title")
            table: HelpTable = HelpTable(id="help-table", cursor_type="row")
            table.add_columns("key", "action", "where")
            heading = "bold underline"
            table.add_row(Text("", style=heading), Text("Finding out why", style=heading), "")
            for row in DOMAIN:
                table.add_row(*row)
            table.add_row("", Text(f"On this screen ({title})", style=heading), "")
            for row in binding_rows(self.under):
                table.add_row(*row)
            here = type(self.under)
            live = here.__module__.startswith("tui.screens.live")  # the live view has its own screens
            for cls in [] if live else other_screens():
                if issubclass(here, cls) or not issubclass(cls, Screen):
                    continue
                name = str(getattr(cls, "TITLE", "") or "")
                table.add_row("", Text(name, style=heading), "")
                for key, what in class_rows(cls):
                    table.add_row(key, what, "")
            yield table
            yield Static("ctrl+p: every action by name · escape: close", id="help-foot")

    def on_mount(self) -> None:
        self.query_one("#help-table", HelpTable).focus()

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
