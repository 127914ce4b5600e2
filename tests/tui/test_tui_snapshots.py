"""Snapshots of the main screens of the bundled sample at a fixed size (``--snapshot-update`` to refresh).

Nothing on these screens depends on the clock or on where the sample was generated.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pilot_wait import (
    containers_shown,
    focused_id,
    overview_ready,
    press_when,
    showing,
    timeline_ready,
    until,
    working,
)
from textual.pilot import Pilot
from textual.widgets import DataTable, Select, Static

from tui.app import make_app
from tui.screens.compare import CompareScreen
from tui.screens.help import HelpScreen
from tui.screens.timeline import TimelineScreen
from tui.screens.whatif import WhatIfScreen
from tui.widgets.signal_plot import SignalPlot

SIZE = (120, 40)
Compare = Callable[..., bool]
RunBefore = Callable[[Pilot[Any]], Awaitable[None]]


def _timeline_drawn(pilot: Pilot[Any]) -> bool:
    """The timeline with its plot laid out and drawn, and the values at its cursor shown."""
    app = pilot.app
    if not timeline_ready(app):
        return False
    assert isinstance(app.screen, TimelineScreen)
    plot = app.screen.query_one(SignalPlot)
    title = str(app.screen.query_one("#timeline-title", Static).content)
    return plot.data is not None and plot.size.height > 0 and "(tick " in title


async def _overview(pilot: Pilot[Any]) -> None:
    await until(pilot, lambda: overview_ready(pilot.app), "the overview")


async def _timeline(pilot: Pilot[Any]) -> None:
    await press_when(pilot, lambda: overview_ready(pilot.app), "the overview", "enter")
    await until(pilot, lambda: _timeline_drawn(pilot), "the timeline drawn")


async def _eviction(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await press_when(pilot, lambda: overview_ready(app), "the overview", "tab")
    await press_when(pilot, lambda: focused_id(app) == "evictions", "the evictions table", "enter")
    await until(pilot, lambda: containers_shown(app), "the eviction detail with its containers")


async def _help(pilot: Pilot[Any]) -> None:
    await _timeline(pilot)
    await pilot.press("question_mark")
    await until(
        pilot,
        lambda: showing(pilot.app, HelpScreen) and pilot.app.screen.query_one("#help-table", DataTable).row_count,
        "the help",
    )


def _compare(version: str) -> RunBefore:
    async def run(pilot: Pilot[Any]) -> None:
        app: Any = pilot.app
        await press_when(pilot, lambda: overview_ready(app), "the overview", "w")
        await until(pilot, lambda: showing(app, WhatIfScreen) and focused_id(app) == "version", "the what-if form")
        form = app.screen
        assert isinstance(form, WhatIfScreen)
        form.query_one("#version", Select).value = version
        await pilot.press("ctrl+r")
        await until(
            pilot,
            lambda: len(app.results) == 2 and form.running is None and not working(app, "whatif"),
            "the what-if result",
        )
        await pilot.press("ctrl+o")
        await until(
            pilot,
            lambda: (c := showing(app, CompareScreen)) is not None and c.pairs and focused_id(app) == "pairs",
            "the comparison",
        )
        app.clear_notifications()
        await until(pilot, lambda: not app.screen.query("Toast"), "no notification on screen")

    return run


def test_overview_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_overview)


def test_timeline_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_timeline)


def test_timeline_snapshot_80x24_legend_outside_the_plot(snap_compare: Compare, sample_cache: Path) -> None:
    """At 80×24 the legend is a line under the plot: the curve, the threshold and the eviction mark show."""
    assert snap_compare(make_app(cache=sample_cache), terminal_size=(80, 24), run_before=_timeline)


def test_timeline_snapshot_160x48_legend_outside_the_plot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=(160, 48), run_before=_timeline)


def test_eviction_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_eviction)


def test_compare_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_compare("1.32"))


def test_help_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_help)
