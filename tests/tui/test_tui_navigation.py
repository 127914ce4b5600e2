"""Pilot tests: every screen reached and driven from the keyboard, as a user would."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import polars as pl
import pytest
from pilot_wait import (
    containers_shown,
    eviction_ready,
    focused_id,
    overview_ready,
    press_when,
    showing,
    timeline_ready,
    until,
)
from rich.console import Console
from rich.text import Text
from textual.widgets import Select, Static

from tui.app import EvictlensApp, make_app
from tui.screens.compare import CompareScreen
from tui.screens.eviction import EvictionScreen
from tui.screens.help import HelpScreen
from tui.screens.pod import PodScreen
from tui.screens.timeline import TimelineScreen
from tui.screens.whatif import WhatIfScreen
from tui.widgets.record_table import RecordTable

SIZE = (140, 45)
pytestmark = pytest.mark.anyio


def _app(sample_cache: Path, tmp_path: Path, target: Path | None = None) -> EvictlensApp:
    return make_app(target, cache=sample_cache, export_dir=tmp_path)


def _text(app: EvictlensApp, selector: str) -> str:
    """What a Static shows, as plain text (a rich Table rendered through a recording console)."""
    content = app.screen.query_one(selector, Static).content
    if isinstance(content, Text):
        return content.plain
    if isinstance(content, str):
        return content
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


async def test_the_bundled_sample_opens_on_the_overview(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        nodes = app.screen.query_one("#nodes", RecordTable)
        assert [r.key for r in nodes.visible_records()] == ["kind-worker"]
        evictions = app.screen.query_one("#evictions", RecordTable)
        assert [r.values[0] for r in evictions.visible_records()] == ["default/alloc-sidecars"]
        assert "as recorded" in _text(app, "#overview-title")


async def test_slash_filters_by_name_and_escape_clears(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "slash")
        await press_when(pilot, lambda: focused_id(app) == "filter", "the filter box", *"nope")
        nodes = app.screen.query_one("#nodes", RecordTable)
        evictions = app.screen.query_one("#evictions", RecordTable)
        await until(pilot, lambda: nodes.row_count == 0 and evictions.row_count == 0, "no row matching 'nope'")
        await pilot.press("escape")
        await until(pilot, lambda: nodes.row_count == 1 and focused_id(app) == "nodes", "the filter cleared")


async def test_s_sorts_by_the_next_column_with_a_marker_and_S_reverses(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "s")
        table = app.screen.query_one("#nodes", RecordTable)
        # not the first column: the rows come sorted by it already
        await until(pilot, lambda: (table.sort_column, table.sort_descending) == (1, False), "sorted by column 1")
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[1].endswith("▲") and not labels[0].endswith(("▲", "▼"))
        await pilot.press("s", "S")
        await until(pilot, lambda: (table.sort_column, table.sort_descending) == (2, True), "column 2 reversed")
        assert str(list(table.columns.values())[2].label).endswith("▼")


async def test_timeline_cursor_zoom_and_eviction_jumps(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and screen.model is not None
        model = screen.model
        eviction_at = model.cursor  # opens on the first eviction
        assert model.evictions_at_cursor()
        await pilot.press("home")
        await until(pilot, lambda: model.cursor == 0, "the first pass")
        await pilot.press("right", "right")
        await until(pilot, lambda: model.cursor == 2, "two passes on")
        await pilot.press("n")
        await until(pilot, lambda: model.cursor == eviction_at, "the next eviction")
        await pilot.press("end")
        await until(pilot, lambda: model.cursor == len(model.ticks) - 1, "the last pass")
        await pilot.press("p")
        await until(pilot, lambda: model.cursor == eviction_at, "the previous eviction")
        width = model.window[1] - model.window[0]
        await pilot.press("plus")
        await until(pilot, lambda: model.window[1] - model.window[0] < width, "zoomed in")
        await pilot.press("minus", "minus")
        await until(pilot, lambda: model.window == (0, len(model.ticks) - 1), "zoomed out to every pass")
        first = model.signal
        await pilot.press("tab")
        await until(pilot, lambda: model.signal != first, "the next signal")
        assert "available" in _text(app, "#cursor-values")
        await pilot.press("escape")
        await until(pilot, lambda: overview_ready(app), "back on the overview")


async def test_eviction_detail_shows_message_containers_ranking_and_impact(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
        await press_when(pilot, lambda: timeline_ready(app), "the timeline on its first eviction", "enter")
        await until(pilot, lambda: containers_shown(app), "the eviction detail with its containers")
        screen = app.screen
        assert isinstance(screen, EvictionScreen)
        assert "Container el1 was using" in screen.query_one("#message").text  # type: ignore[attr-defined]
        containers = {r.key: r for r in screen.query_one("#containers", RecordTable).records}
        assert set(containers) >= {"el1", "el-sidecar1"}
        assert containers["el1"].style == "bold red"  # named in the 1.30 message
        assert containers["el-sidecar1"].values[1] == "sidecar"
        ranking = screen.query_one("#ranking", RecordTable).records
        assert ranking[0].values[1] == "default/alloc-sidecars" and ranking[0].values[-1]
        assert "stays Failed" in _text(app, "#impact")
        assert "same, byte for byte" in _text(app, "#diff")
        await pilot.press("c")
        await until(pilot, lambda: app.clipboard.startswith("The node was low on resource: memory."), "the copy")
        await pilot.press("v")
        await until(
            pilot,
            lambda: (pod := showing(app, PodScreen)) is not None and pod.series is not None,
            "the pod view with its usage",
        )
        pod = app.screen
        assert isinstance(pod, PodScreen) and pod.series is not None and pod.series.frame.height > 0
        assert "predicted eviction" in _text(app, "#pod-story")
        await pilot.press("m")
        await until(pilot, lambda: pod.resource == "disk", "the pod's disk")
        await pilot.press("escape")
        await press_when(pilot, lambda: app.screen is screen, "back on the eviction detail", "escape")
        await press_when(pilot, lambda: timeline_ready(app), "back on the timeline", "escape")
        await until(pilot, lambda: overview_ready(app), "back on the overview")


async def test_compare_reads_el_sidecar1_in_the_1_32_message_and_not_in_the_1_30_one(
    sample_cache: Path, tmp_path: Path
) -> None:
    """The acceptance path: sample → its eviction → a 1.32 what-if → Compare."""
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "tab")
        await press_when(pilot, lambda: focused_id(app) == "evictions", "the evictions table", "enter")  # its first row
        await until(pilot, lambda: eviction_ready(app), "the eviction detail")
        assert isinstance(app.screen, EvictionScreen)
        assert "el-sidecar1" not in app.screen.eviction.message
        assert app.screen.eviction.message.startswith("The node was low on resource: memory.")
        await pilot.press("w")
        await until(pilot, lambda: showing(app, WhatIfScreen) and focused_id(app) == "version", "the what-if form")
        form = app.screen
        assert isinstance(form, WhatIfScreen)
        form.query_one("#version", Select).value = "1.32"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: len(app.results) == 2 and form.running is None, "the what-if result")
        assert app.results[1].request is not None
        assert app.results[1].request.kubelet_version == "1.32"
        await pilot.press("ctrl+o")
        await until(pilot, lambda: (c := showing(app, CompareScreen)) is not None and c.pairs, "the comparison")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        (pair,) = [p for p in screen.pairs if p.pod == "alloc-sidecars"]
        assert pair.status == "message differs"
        assert pair.a is not None and pair.b is not None
        assert "el-sidecar1" not in pair.a.message and "el-sidecar1" in pair.b.message
        detail = _text(app, "#pair-detail")
        a_part, b_part = detail.split("B · ", 1)
        assert "el-sidecar1" not in a_part.split("A → B")[0]
        assert "Container el-sidecar1 was using" in b_part
        await pilot.press("x")
        await until(pilot, lambda: screen.a.label.startswith("what-if 1"), "A and B swapped")
        await pilot.press("escape")
        results = form.query_one("#results", RecordTable)
        await press_when(
            pilot,
            lambda: app.screen is form and focused_id(app) == "version" and results.selected_key() == "1",
            "back on the form, the what-if selected",
            "ctrl+u",  # on the version list: use the selected (1.32) result on every screen
        )
        await until(
            pilot,
            lambda: app.view.label.startswith("what-if 1") and showing(app, WhatIfScreen),
            "the what-if result in use, every screen redrawn",
        )


async def test_question_mark_lists_every_binding_of_the_screen(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        timeline = app.screen
        await pilot.press("question_mark")
        await until(pilot, lambda: showing(app, HelpScreen) and app.screen.query("#help-table"), "the help")
        from tui.screens.help import binding_rows

        actions = {row[1] for row in binding_rows(timeline)}
        assert {
            "Zoom in",
            "Zoom out",
            "Next eviction/kill",
            "Prev eviction/kill",
            "Back",
            "Help",
            "What-if",
            "Zoom on thresholds",
        } <= actions
        assert "Export CSV" not in actions  # no table on the timeline
        described = [row[1] for row in binding_rows(timeline)]
        assert len(described) == len(set(described))  # "Zoom in" once, not for +, = and i
        table = app.screen.query_one("#help-table")
        from tui.screens.help import DOMAIN

        shown = [table.get_row_at(i) for i in range(table.row_count)]  # type: ignore[attr-defined]
        # the domain keys first, then this screen's every binding, then the other screens' (issue 27 item 1)
        assert [r[0] for r in shown[1 : 1 + len(DOMAIN)]] == [d[0] for d in DOMAIN]
        assert [tuple(r) for r in shown[2 + len(DOMAIN) : 2 + len(DOMAIN) + len(described)]] == binding_rows(timeline)
        assert not any("Screen" in str(c) or "Table" in str(c) for r in shown for c in r)  # no class names
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is timeline, "back on the timeline")


async def test_every_action_is_in_the_command_palette(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Filter", "What-if", "Compare", "Export CSV", "Export JSON", "Help", "Sort column"} <= titles


async def test_export_writes_the_table_on_screen_as_csv_and_json(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "ctrl+e", "ctrl+j")
        await until(
            pilot,
            lambda: [n for n in app._notifications if n.title == "exported JSON"],
            "both exports written",
        )
        (written,) = tmp_path.glob("evictlens-overview-nodes-*.csv")
        rows = list(csv.DictReader(written.open()))
        assert [r["node"] for r in rows] == ["kind-worker"]
        assert int(rows[0]["predicted"]) == 1 and int(rows[0]["lowest_memory.available"]) > 0
        (doc_path,) = tmp_path.glob("evictlens-overview-nodes-*.json")
        assert json.loads(doc_path.read_text())[0]["node"] == "kind-worker"
        assert written.stat().st_mode & 0o777 == 0o600


async def test_a_results_directory_opens_directly(results_dir: Path, sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path, results_dir)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        assert app.view.origin == str(results_dir) and app.view.request is None
        assert isinstance(app.view.result.signals, pl.LazyFrame)  # not read: only scanned
        await pilot.press("enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline")


async def test_q_on_the_overview_quits(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
        await press_when(pilot, lambda: timeline_ready(app), "the timeline", "q")  # back, as escape
        await press_when(pilot, lambda: overview_ready(app), "back on the overview", "q")
        await until(pilot, lambda: app.return_code is not None, "the app to quit")
    assert app.return_code == 0
