"""The Compare screen shows each result's kernel kills (issue 17 item 3), as ``whatif`` does: on the bundled
jvm-spike, A (the recorded settings) loses the race to the kernel (java killed at 00:03:24, one kill told twice)
and B (the write-up's hard 10%, soft 20%/30s, regenerated closed-loop) evicts the JVM at 00:02:40 instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_wait import focused_id, overview_ready, press_when, showing, until
from rich.text import Text
from textual.widgets import Static

from recordings.reader import open_recording
from replay.engine import replay, replay_recording
from replay.settings import SettingsRequest
from replay.tune import Candidate
from tui.app import make_app
from tui.messages import ResultsReady
from tui.results_view import ResultsView
from tui.screens.compare import CompareScreen, kernel_summary, pair_records, pair_text
from tui.widgets.record_table import RecordTable

JVM = "orders-jvm-7d9c6b8f5-k2xqp"
SIZE = (140, 45)


@pytest.fixture(scope="module")
def views(jvm_rec: Path) -> tuple[ResultsView, ResultsView]:
    rec = open_recording(jvm_rec)
    advice = SettingsRequest(label="write-up", overrides=Candidate("10%", "10%", "20%", "30s").overrides())
    (b,) = replay(rec, [advice], jobs=1)
    a = ResultsView.from_result(replay_recording(rec), "as recorded", str(jvm_rec))
    return a, ResultsView.from_result(b, "write-up", str(jvm_rec))


def test_each_sides_kernel_kills_are_counted_once(views: tuple[ResultsView, ResultsView]) -> None:
    a, b = views
    assert kernel_summary(a.result).plain == (
        f"✖ 1 kernel kill (first 00:03:24 on worker-1: shop/{JVM} orders) · memory ran out between passes 1 time"
    )
    assert kernel_summary(b.result).plain == "0 kernel kills"


def test_a_pod_killed_in_a_and_evicted_in_b_is_one_marked_row(views: tuple[ResultsView, ResultsView]) -> None:
    a, b = views
    from replay.compare import align

    (pair,) = align(a.result, b.result)
    assert pair.pod == JVM and pair.a is None and pair.a_kill is not None and pair.b is not None
    assert pair.status == "only in B; kernel kill in A" and pair.killed
    _columns, (row,) = pair_records([pair])
    assert row.mark == "✖" and "red" in row.style
    assert row.values[2] == pair.a_kill.time and row.values[3] == pair.b.time  # A: the kill's time, B: the eviction's
    text = pair_text(pair, "A", "B").plain
    assert f"✖ the kernel OOM-killed shop/{JVM} orders at 2025-01-01 00:03:24 (not the kubelet)" in text
    assert (b.result.evictions[0].message + "\n") in text.split("B · B\n", 1)[1]


@pytest.mark.anyio
async def test_the_compare_screen_shows_the_kills_of_each_result(
    jvm_rec: Path, views: tuple[ResultsView, ResultsView], tmp_path: Path
) -> None:
    app = make_app(jvm_rec, cache=tmp_path / "cache", export_dir=tmp_path, jobs=1)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        app.post_message(ResultsReady(views[1]))
        await press_when(pilot, lambda: len(app.results) == 2 and overview_ready(app), "two results", "d")
        await until(
            pilot,
            lambda: (c := showing(app, CompareScreen)) is not None and c.pairs and focused_id(app) == "pairs",
            "the comparison",
        )
        title = app.screen.query_one("#compare-title", Static).content
        assert isinstance(title, Text)
        a_line, b_line, counts = title.plain.splitlines()
        assert "✖ 1 kernel kill (first 00:03:24" in a_line and b_line.endswith("write-up · 0 kernel kills")
        assert counts == "1 pods evicted or OOM-killed in either · 1 differ"
        table = app.screen.query_one("#pairs", RecordTable)
        assert table.row_count == 1
        app.clear_notifications()
