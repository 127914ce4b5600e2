"""``tui REC --follow`` on a long recording: the newest tick's signals, thresholds and forecasts are drawn before
the engine has replayed the history, marked as such (conditions and next to go "…", the title says what is being
replayed); once the engine is up its rows replace them."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import showing, until

from live.engine import LiveEngine
from replay.cli import main
from tui.live_app import LiveApp, _preview
from tui.live_source import LiveSource
from tui.screens.live_overview import LiveOverviewScreen
from tui.widgets.record_table import RecordTable

pytestmark = pytest.mark.anyio


def _static(app: Any, widget_id: str) -> str:
    return str(app.screen.query_one(widget_id).render())


def _cells(app: Any) -> list[list[str]]:
    table = app.screen.query_one("#live-nodes", RecordTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_newest_tick_first_then_the_engines_rows(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    assert main(["scenario", "--sample", "soft-grace", "-o", str(rec)]) == 0
    release = threading.Event()

    def engine(root: Path) -> LiveEngine:
        release.wait(120)  # the history "being replayed" until the test has seen the preview
        return LiveEngine(root)

    src = replace(LiveSource(rec, "rec", interval_seconds=0.2), preview_first=True, finished=lambda: False)
    app = LiveApp(src, engine=engine)
    app.make_preview = _preview
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
        await until(pilot, lambda: "catching up" in _static(app, "#live-title"), "the preview's title")
        rows = _cells(app)
        assert rows and all(row[1] == "…" and row[4] == "…" for row in rows), rows
        assert "newest tick" in _static(app, "#live-title")
        release.set()
        await until(pilot, lambda: "catching up" not in _static(app, "#live-title"), "the engine's title")
        await until(pilot, lambda: all(row[4] != "…" for row in _cells(app)), "the engine's rows")
        assert app.live.nodes and all(n.catching_up is None for n in app.live.nodes.values())
        release.set()
