"""Snapshots of the main screens of the bundled sample at a fixed size (``--snapshot-update`` to refresh).

Nothing on these screens depends on the clock or on where the sample was generated.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Select

from tui.app import make_app

SIZE = (120, 40)
Compare = Callable[..., bool]


def _after(*keys: str, whatif: str | None = None) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run(pilot: Pilot[Any]) -> None:
        app = pilot.app
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
        if whatif is not None:
            await pilot.press("w")
            app.screen.query_one("#version", Select).value = whatif
            await pilot.press("ctrl+r")
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("ctrl+o")
            await pilot.pause()
            app.clear_notifications()
            await pilot.pause()

    return run


def test_overview_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_after())


def test_timeline_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_after("enter"))


def test_timeline_snapshot_80x24_legend_outside_the_plot(snap_compare: Compare, sample_cache: Path) -> None:
    """At 80×24 the legend is a line under the plot: the curve, the threshold and the eviction mark show."""
    assert snap_compare(make_app(cache=sample_cache), terminal_size=(80, 24), run_before=_after("enter"))


def test_timeline_snapshot_160x48_legend_outside_the_plot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=(160, 48), run_before=_after("enter"))


def test_eviction_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_after("tab", "enter"))


def test_compare_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_after(whatif="1.32"))


def test_help_snapshot(snap_compare: Compare, sample_cache: Path) -> None:
    assert snap_compare(make_app(cache=sample_cache), terminal_size=SIZE, run_before=_after("enter", "question_mark"))
