"""``tui --live --sample jvm-spike``: the bundled scenario played into a growing recording, followed by the real
live engine. The play's clock is the test's: a warning shows while the kill is still to come, then the kill row
arrives flagged against it, and it opens like any other kill (the node's timeline of a replay of the recording
as it is now)."""

from __future__ import annotations

from typing import Any

import pytest
from pilot_wait import kill_ready, showing, until

from tui.live_app import LiveApp
from tui.live_source import sample_source
from tui.screens.kill import KillScreen
from tui.screens.live_overview import LiveOverviewScreen
from tui.screens.timeline import TimelineScreen
from tui.widgets.record_table import RecordTable

pytestmark = pytest.mark.anyio


class Clock:
    """The play's monotonic clock, moved by the test (the player waits on it, never the test on the player)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _events(app: Any) -> list[str]:
    try:
        table = app.screen.query_one("#live-events", RecordTable)
    except Exception:
        return []
    return [" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]


def _has(app: Any, text: str) -> bool:
    return any(text in row for row in _events(app))


async def test_a_warning_shows_before_the_kill_and_the_kill_row_after(sample_cache: Any) -> None:
    clock = Clock()
    source = sample_source("jvm-spike", "10", clock=clock)  # a tick (10 s) each second of the clock
    app = LiveApp(source)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
            await until(pilot, lambda: app.live.last_time_us is not None, "the first tick")
            clock.now = 15.0  # 00:02:30 in the scenario: java's memory heads for the threshold, no kill yet
            await until(pilot, lambda: _has(app, "⚠ warning"), "a warning")
            assert not _has(app, "OOM KILL"), _events(app)
            assert _has(app, "memory hard")
            clock.now = 1000.0  # the rest of the play
            await until(pilot, lambda: _has(app, "✖ OOM KILL"), "the kernel's kill")
            await until(pilot, lambda: app.finished, "the end of the play")
            rows = _events(app)
            kill = next(r for r in rows if "orders-jvm" in r and "OOM KILL" in r)
            assert "warned" in kill and "before" in kill, rows
            # the kill opens like any other kill: its detail, from a replay of the recording now; t its timeline
            table = app.screen.query_one("#live-events", RecordTable)
            table.focus()
            index = next(i for i, r in enumerate(_events(app)) if "orders-jvm" in r and "OOM KILL" in r)
            table.move_cursor(row=index)
            await pilot.press("enter")
            await until(pilot, lambda: kill_ready(app), "the kill's detail")
            kill_screen = showing(app, KillScreen)
            assert kill_screen is not None and kill_screen.kill.node == "worker-1"
            await pilot.press("t")
            await until(pilot, lambda: getattr(showing(app, TimelineScreen), "model", None) is not None, "its timeline")
            screen = app.screen
            assert isinstance(screen, TimelineScreen) and screen.model is not None
            assert screen.node == "worker-1" and screen.model.signal == "memory.available"
            assert screen.model.kills, "the replayed timeline marks the kill"
            await pilot.press("escape")
            await until(pilot, lambda: showing(app, KillScreen), "back to the kill")
            await pilot.press("escape")
            await until(pilot, lambda: showing(app, LiveOverviewScreen), "back to the live overview")
    finally:
        source.stop()
        source.close()


async def test_a_real_eviction_opens_as_any_other_eviction() -> None:
    """sidecar-stress: the scenario's kubelet evicts alloc-sidecars; the row says the message is the predicted one,
    and enter opens the eviction's own screen (a replay of the recording as it is now), its diff against the real
    message included."""
    from tui.screens.eviction import EvictionScreen

    source = sample_source("sidecar-stress", "max")
    app = LiveApp(source)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
            await until(pilot, lambda: _has(app, "◆ EVICTED"), "the real eviction")
            row = next(r for r in _events(app) if "◆ EVICTED" in r)
            assert "default/alloc-sidecars" in row and "✔ same message" in row, row
            assert _has(app, "▼ predicted")
            table = app.screen.query_one("#live-events", RecordTable)
            table.focus()
            table.move_cursor(row=next(i for i, r in enumerate(_events(app)) if "◆ EVICTED" in r))
            await until(
                pilot,
                lambda: "the predicted message, byte for byte" in str(app.screen.query_one("#live-detail").render()),
                "the detail",
            )
            await pilot.press("enter")
            await until(pilot, lambda: showing(app, EvictionScreen), "the eviction's screen")
            screen = app.screen
            assert isinstance(screen, EvictionScreen) and screen.eviction.pod == "alloc-sidecars"
            await until(pilot, lambda: "byte for byte" in str(screen.query_one("#diff").render()), "its diff")
            await pilot.press("escape")
            await until(pilot, lambda: showing(app, LiveOverviewScreen), "back to the live overview")
    finally:
        source.stop()
        source.close()


async def test_following_a_recording_its_timeline_shows_the_ticks_before_the_view(tmp_path: Any) -> None:
    """``tui REC --follow`` on a recording already ten ticks along: the overview starts at its last tick, and the
    node's live timeline shows those ten ticks too (replayed from a snapshot), then the ones arriving."""
    from live.play import ScenarioPlayer, load_sample
    from tui.live_source import follow_source
    from tui.screens.live_timeline import LiveTimelineScreen

    clock = Clock()
    player = ScenarioPlayer(load_sample("jvm-spike"), tmp_path / "rec", speed=10, clock=clock).start()
    try:
        await until_plain(lambda: player.ticks_committed >= 1, "tick 0 (the play's clock starts there)")
        clock.now = 10.0  # ticks 1..10 are due
        await until_plain(lambda: player.ticks_committed >= 11, "ticks 0..10 written")
        app = LiveApp(follow_source(tmp_path / "rec"))
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
            await until(pilot, lambda: "worker-1" in app.live.nodes, "the node")
            await until(pilot, lambda: app.live.nodes["worker-1"].tick >= 10, "tick 10")
            await pilot.press("enter")
            await until(pilot, lambda: showing(app, LiveTimelineScreen), "the live timeline")
            screen = app.screen
            assert isinstance(screen, LiveTimelineScreen)
            await until(pilot, lambda: screen.model.points and screen.model.points[0].tick == 0, "the ticks before")
            assert [p.tick for p in screen.model.points] == list(range(len(screen.model.points)))
            assert screen.model.points[0].thresholds["memory.available"]
            clock.now = 13.0
            await until(pilot, lambda: screen.model.points[-1].tick >= 13, "new ticks after them")
    finally:
        player.stop()
        player.join(60)


async def until_plain(condition: Any, what: str) -> None:
    """Before the app runs: wait on ``condition`` (the player's thread writes meanwhile)."""
    import anyio

    with anyio.fail_after(120):
        while not condition():
            await anyio.sleep(0.02)
