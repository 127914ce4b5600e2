"""Waiting in Pilot tests on what the screen shows or the app holds, with a generous deadline (no fixed sleeps).

A key sent before the screen it is meant for shows goes to whatever has the focus then (the screen under it,
another widget), and ``app.workers.wait_for_complete()`` does not wait for a worker that a message still in
the queue will start: every key waits first on what its screen shows (:func:`press_when`), and every
assertion on what a key did waits for it (:func:`until`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Header, Static

from tui.screens.eviction import EvictionScreen
from tui.screens.kill import KillScreen
from tui.screens.overview import OverviewScreen
from tui.screens.timeline import TimelineScreen
from tui.widgets.record_table import RecordTable

DEADLINE = 120.0
"""Seconds a wait may take: generous, the suite runs on a loaded 2-core machine."""

S = TypeVar("S", bound=Screen[Any])


async def until(pilot: Pilot[Any], condition: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    """Let the app run (workers finish, messages are handled) until ``condition()`` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:.0f} s for {what}")
        await pilot.pause(0.02)


async def press_when(pilot: Pilot[Any], condition: Callable[[], object], what: str, *keys: str) -> None:
    """Press ``keys`` once the screen shows ``what`` (``condition()`` holds): not into the screen before it."""
    await until(pilot, condition, what)
    await pilot.press(*keys)


def showing(app: App[Any], kind: type[S]) -> S | None:
    """The app's top screen if it is a ``kind`` and mounted (composed, ``on_mount`` run), with every header of
    the stack showing its screen's title, else None."""
    screen = app.screen
    return screen if isinstance(screen, kind) and screen.is_mounted and headers_current(app) else None


def headers_current(app: App[Any]) -> bool:
    """Every screen's header shows its (sub)title: Textual's Header updates it in a callback that fails if the
    app ends first (``NoMatches: HeaderTitle``), and a test that ends on a screen just shown ends the app."""
    for screen in app.screen_stack:
        for header in screen.query(Header):
            titles = [t for t in header.query("HeaderTitle") if isinstance(t, Static)]
            if not titles or str(titles[0].content) != str(header.format_title()):
                return False
    return True


def focused_id(app: App[Any]) -> str | None:
    """The id of the widget with the focus on the top screen (None: none has it)."""
    return getattr(app.screen.focused, "id", None)


def overview_ready(app: App[Any]) -> bool:
    """The overview, its node rows shown and the node table focused (where its keys go)."""
    screen = showing(app, OverviewScreen)
    return screen is not None and screen.query_one("#nodes", RecordTable).row_count > 0 and focused_id(app) == "nodes"


def timeline_ready(app: App[Any], other_than: Screen[Any] | None = None) -> bool:
    """A node's timeline (not ``other_than``), its signals loaded and its cursor every view's moment."""
    screen = showing(app, TimelineScreen)
    if screen is None or screen is other_than or screen.model is None:
        return False
    model = screen.model
    return not model.times or getattr(app, "cursor_time", None) == model.times[model.cursor]


def eviction_ready(app: App[Any]) -> bool:
    """A predicted eviction's detail, at its own moment (the app's cursor on it) with its own ranking shown."""
    screen = showing(app, EvictionScreen)
    return (
        screen is not None
        and screen.shown is None
        and getattr(app, "cursor_time", None) == screen.eviction.time
        and screen.query_one("#ranking", RecordTable).row_count > 0
    )


def kill_ready(app: App[Any], *, checked: bool = False) -> bool:
    """A kernel kill's detail at its own moment (the app's cursor on it) with its facts read (``checked``: and the
    engine's check of what would have acted)."""
    screen = showing(app, KillScreen)
    return (
        screen is not None
        and screen.facts is not None
        and getattr(app, "cursor_time", None) == screen.kill.time
        and (not checked or screen.acts is not None)
    )


def containers_shown(app: App[Any]) -> bool:
    """An eviction's detail with its containers read from the recording (a worker of the screen)."""
    return eviction_ready(app) and bool(app.screen.query_one("#containers", RecordTable).records)


def working(app: App[Any], group: str) -> bool:
    """A worker of ``group`` not finished (a worker a queued message will start is not one yet: wait on what
    it shows too)."""
    return any(w.group == group and not w.is_finished for w in app.workers)
