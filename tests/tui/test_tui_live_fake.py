"""The live view against a scripted engine: it updates in place on each new tick, flags a real eviction against
the prediction, marks a stale node, and its timeline stays pinned to now unless the cursor is moved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from live_fake import MESSAGE, MI, FakeEngine, event, node, source
from pilot_wait import showing, until
from textual.widgets import DataTable

from tui.live_app import LiveApp
from tui.screens.help import HelpScreen
from tui.screens.live_overview import LiveOverviewScreen
from tui.screens.live_timeline import LiveTimelineScreen
from tui.widgets.record_table import RecordTable

pytestmark = pytest.mark.anyio


def _cells(app: Any, table_id: str) -> list[list[str]]:
    table = app.screen.query_one(table_id, RecordTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def _shows(app: Any, table_id: str, text: str) -> bool:
    try:
        return any(text in cell for row in _cells(app, table_id) for cell in row)
    except Exception:
        return False


def _tick(app: LiveApp) -> int | None:
    now = app.live.nodes.get("worker-1")
    return None if now is None else now.tick


def _static(app: Any, widget_id: str) -> str:
    return str(app.screen.query_one(widget_id).render())


async def test_the_overview_updates_in_place_on_each_new_tick(tmp_path: Path) -> None:
    fake = FakeEngine()
    app = LiveApp(source(tmp_path / "rec"), engine=lambda _root: fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
        await until(pilot, lambda: "waiting for the first tick" in _static(app, "#live-title"), "waiting")
        fake.push([node(0, 2000 * MI)])
        await until(
            pilot, lambda: _shows(app, "#live-nodes", "1.953Gi") or _shows(app, "#live-nodes", "2000Mi"), "tick 0"
        )
        assert "now 2025-01-01 00:00:00" in _static(app, "#live-title")
        fake.push(
            [node(1, 900 * MI, seconds=250.0)],
            [
                event(
                    "warning",
                    1,
                    signal="memory.available",
                    threshold_kind="hard",
                    threshold=500 * MI,
                    seconds_to_threshold=250.0,
                )
            ],
        )
        await until(pilot, lambda: _shows(app, "#live-nodes", "900Mi"), "tick 1 in place")
        assert app.screen.query_one("#live-nodes", RecordTable).row_count == 1  # the same row, updated
        assert _shows(app, "#live-nodes", "4m10s") and _shows(app, "#live-nodes", "default/java")
        await until(pilot, lambda: _shows(app, "#live-events", "⚠ warning"), "the warning row")
        assert _shows(app, "#live-events", "memory hard 500Mi in 4m10s")
        # the node's detail: next to go with the exact message, the forecast with its estimator
        detail = _static(app, "#live-detail")
        assert "next to go" in detail and "Threshold quantity: 500Mi" in detail
        assert "Theil–Sen slope over the last 300 s" in detail
        fake.push([node(2, 480 * MI, conditions=("MemoryPressure",), seconds=0.0)])
        await until(pilot, lambda: _shows(app, "#live-nodes", "MemoryPressure"), "pressure")
        assert _shows(app, "#live-nodes", "MET")


async def test_a_real_eviction_arrives_flagged_against_the_prediction(tmp_path: Path) -> None:
    fake = FakeEngine()
    app = LiveApp(source(tmp_path / "rec"), engine=lambda _root: fake)
    real = MESSAGE.replace("3Gi", "3100Mi")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
        fake.push(
            [node(3, 480 * MI, conditions=("MemoryPressure",), seconds=0.0)],
            [event("predicted-eviction", 3, pod="java", namespace="default", message=MESSAGE)],
        )
        await until(pilot, lambda: _shows(app, "#live-events", "▼ predicted"), "the predicted row")
        fake.push([node(4, 1500 * MI)], [event("real-eviction", 4, pod="java", namespace="default", message=real)])
        await until(pilot, lambda: _shows(app, "#live-events", "≠ message differs"), "the real row, flagged")
        rows = _cells(app, "#live-events")
        assert "◆ EVICTED" in rows[0][1]  # newest first
        # the diff, byte for byte, when the row is highlighted (the selection stays on its row as rows come: g)
        await pilot.press("tab", "g")
        await until(pilot, lambda: "real against predicted" in _static(app, "#live-detail"), "the diff")
        detail = _static(app, "#live-detail")
        assert "3[-100M-]{+G+}i" in detail  # the diff the eviction screen shows (replay_report.marked_diff)
        fake.push([node(5, 1500 * MI)], [event("real-eviction", 5, pod="other", namespace="default", message=MESSAGE)])
        await until(pilot, lambda: _shows(app, "#live-events", "✗ not predicted"), "an eviction nobody predicted")
        fake.push([node(6, 1500 * MI)], [event("kernel-kill", 6, pod="java", namespace="default", message="OOMKilled")])
        await until(pilot, lambda: _shows(app, "#live-events", "✖ OOM KILL"), "the kill row")
        assert _shows(app, "#live-events", "no warning before")


async def test_a_stale_node_is_marked_stale_not_healthy(tmp_path: Path) -> None:
    fake = FakeEngine()
    app = LiveApp(source(tmp_path / "rec"), engine=lambda _root: fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
        fake.push([node(0, 2000 * MI), node(0, 2000 * MI, name="worker-2")])
        await until(pilot, lambda: _shows(app, "#live-nodes", "worker-2"), "two nodes")
        fake.push(
            [node(1, 2000 * MI, name="worker-2", stale=True)],
            [event("stale", 1, node="worker-2", reason="no answer for 30 s")],
        )
        await until(pilot, lambda: _shows(app, "#live-nodes", "⏸ worker-2"), "worker-2 stale")
        assert "1 stale" in _static(app, "#live-title")
        assert _shows(app, "#live-events", "no answer for 30 s")
        await pilot.press("j")
        await until(pilot, lambda: "STALE" in _static(app, "#live-detail"), "the stale node's detail")


async def test_the_timeline_is_pinned_to_now_until_the_cursor_moves(tmp_path: Path) -> None:
    fake = FakeEngine()
    app = LiveApp(source(tmp_path / "rec"), engine=lambda _root: fake)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
        for tick in range(3):
            fake.push([node(tick, (2000 - 300 * tick) * MI)])
            await until(pilot, lambda t=tick: _tick(app) == t, f"tick {tick}")  # type: ignore[misc]
        await pilot.press("enter")
        await until(pilot, lambda: showing(app, LiveTimelineScreen), "the live timeline")
        screen = app.screen
        assert isinstance(screen, LiveTimelineScreen)
        await until(pilot, lambda: "(tick 2)" in _static(app, "#timeline-title"), "the cursor on now")
        fake.push([node(3, 1000 * MI)])
        await until(pilot, lambda: "(tick 3)" in _static(app, "#timeline-title"), "pinned: the cursor follows now")
        await pilot.press("h")
        await until(pilot, lambda: "(tick 2)" in _static(app, "#timeline-title"), "moved back")
        fake.push([node(4, 700 * MI)])
        await until(pilot, lambda: len(screen.model.points) == 5, "tick 4 arrived")
        assert "(tick 2)" in _static(app, "#timeline-title") and "held" in _static(app, "#timeline-title")
        await pilot.press("f")
        await until(pilot, lambda: "(tick 4)" in _static(app, "#timeline-title"), "pinned again")
        await pilot.press("question_mark")
        await until(pilot, lambda: showing(app, HelpScreen), "the help")
        table = app.screen.query_one("#help-table", DataTable)
        rows = [" ".join(map(str, table.get_row_at(i))) for i in range(table.row_count)]
        assert any("Follow now" in r for r in rows) and any("◀ tick" in r for r in rows), rows
