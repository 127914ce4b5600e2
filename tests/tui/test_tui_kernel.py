"""Kernel kills next to the evictions (issue 17 item 3), on the bundled jvm-spike scenario: the kernel kills java
at 00:03:24, between the passes at 00:03:20 and 00:03:30, and the kubelet evicts nothing. The overview counts the
kill once (a SystemOOM Event and the OOMKilled container are one kill) and lists it among the evictions; Enter on
it opens the node's timeline at the pass after it, where the plot marks it."""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from pathlib import Path

import pytest
from pilot_wait import focused_id, kill_ready, overview_ready, press_when, showing, timeline_ready, until
from rich.text import Text
from textual.widgets import Static

from recordings.reader import open_recording
from replay.engine import replay_recording
from replay.results import ReadyTransition
from tui.app import make_app
from tui.results_view import ResultsView
from tui.screens.overview import eviction_table, node_table
from tui.screens.timeline import TimelineScreen
from tui.timeline_model import TimelineModel
from tui.widgets.record_table import RecordTable
from tui.widgets.signal_plot import SignalPlot, legend

NODE = "worker-1"
KILLED = "shop/orders-jvm-7d9c6b8f5-k2xqp orders"
SIZE = (140, 45)


@pytest.fixture(scope="module")
def jvm_view(jvm_rec: Path) -> ResultsView:
    return ResultsView.from_result(replay_recording(open_recording(jvm_rec)), "as recorded", str(jvm_rec))


def _model(view: ResultsView) -> TimelineModel:
    return TimelineModel(
        view.node(NODE),
        view.node_series(NODE),
        view.result.conditions,
        view.evictions_of(NODE),
        view.real_of(NODE),
        view.kills(NODE),
    )


def _clock(when: datetime) -> str:
    return when.strftime("%H:%M:%S")


def test_the_kill_told_twice_is_one_row_and_one_count(jvm_view: ResultsView) -> None:
    assert sorted(k.kind for k in jvm_view.result.kernel_kills) == ["OOMKilled", "SystemOOM"]
    columns, records = node_table(jvm_view, {})
    (node,) = records
    assert node.values[[c.key for c in columns].index("kernel_kills")] == 1
    _columns, rows = eviction_table(jvm_view)
    (kill,) = rows
    assert kill.key.startswith("k") and kill.mark == "✖" and "red" in kill.style
    who, node_name, when, cause, kind, status = kill.values
    assert (who, node_name, _clock(when), kind) == (KILLED, NODE, "00:03:24", "OOMKilled")
    assert cause == "node out of memory (java, pid 4001)" and "kernel" in status


def test_kills_sit_in_time_among_the_evictions(jvm_view: ResultsView, results_dir: Path) -> None:
    from tui.results_dir import open_results_dir

    sample = open_results_dir(results_dir)
    (e,) = sample.result.evictions
    kill = dataclasses.replace(jvm_view.result.kernel_kills[0], node=e.node)
    before = dataclasses.replace(kill, time=e.time.replace(year=e.time.year - 1))
    after = dataclasses.replace(kill, time=e.time.replace(year=e.time.year + 1))
    sample.result = dataclasses.replace(sample.result, kernel_kills=(before, after))
    _columns, rows = eviction_table(sample)
    assert [r.key[0] for r in rows] == ["k", "e", "k"]


def test_a_node_that_went_not_ready_is_marked(jvm_view: ResultsView) -> None:
    view = dataclasses.replace(jvm_view)
    went = ReadyTransition(NODE, jvm_view.result.kernel_kills[0].time, "Unknown", "NodeStatusUnknown", None)
    view.result = dataclasses.replace(jvm_view.result, ready_transitions=(*jvm_view.result.ready_transitions, went))
    columns, (record,) = node_table(view, {})
    cell = columns[0].fmt(record.values[0])
    assert isinstance(cell, Text) and cell.plain == f"{NODE} ⚠ NotReady"
    assert record.values[0] == NODE  # the marker is drawn, not a value (sorting, filtering, exports)
    columns, (record,) = node_table(jvm_view, {})
    assert columns[0].fmt(record.values[0]) == NODE  # Ready throughout: no marker


def test_the_plot_marks_the_kill_and_the_stretch_between_the_passes(jvm_view: ResultsView) -> None:
    model = _model(jvm_view)
    data = model.plot(60)
    kills = [m.index for m in data.markers if m.kind == "kernel"]
    assert [_clock(model.times[i]) for i in kills] == ["00:03:30"]  # the pass at or after 00:03:24
    ((first, last),) = data.races
    assert (_clock(model.times[first]), _clock(model.times[last])) == ("00:03:20", "00:03:30")
    text = legend(data).plain
    assert "✖ kernel OOM kill" in text and "ran out between passes" in text
    plot = SignalPlot()
    plot.draw(data)
    plot.plt.plotsize(70, 16)
    drawn = re.sub(r"\x1b\[[0-9;]*m", "", plot.plt.build())
    assert "✖" in drawn and "▄" in drawn


def test_the_legend_names_kills_and_races_only_when_there_are_some(results_dir: Path) -> None:
    from tui.results_dir import open_results_dir

    view = open_results_dir(results_dir)
    node = view.nodes[0].node
    model = TimelineModel(
        view.node(node), view.node_series(node), view.result.conditions, view.evictions_of(node), view.real_of(node)
    )
    text = legend(model.plot(60)).plain
    assert "kernel" not in text and "between passes" not in text


def test_a_fall_that_never_nears_the_thresholds_is_not_zoomed(jvm_view: ResultsView) -> None:
    """2.5Gi → 927Mi against a 100Mi threshold: zoomed on 0–300Mi it would be a flat line at the top."""
    model = _model(jvm_view)
    data = model.plot(60)
    assert not data.zoomed and data.y_range[1] > 2000  # MiB: the whole fall shows
    model.toggle_zoom_y()
    assert model.plot(60).zoomed  # z still zooms


@pytest.mark.anyio
async def test_overview_lists_the_kill_and_enter_opens_its_detail_then_t_the_timeline_at_it(
    jvm_rec: Path, tmp_path: Path, sample_cache: Path
) -> None:
    app = make_app(jvm_rec, cache=sample_cache, export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        title = app.screen.query_one("#overview-title", Static).content
        plain = title.plain if isinstance(title, Text) else str(title)
        assert "0 predicted evictions" in plain and "1 kernel kill" in plain
        assert "memory ran out between passes 1 time" in plain
        evictions = app.screen.query_one("#evictions", RecordTable)
        await until(pilot, lambda: evictions.row_count == 1, "the kill's row")
        (row,) = evictions.visible_records()
        assert row.values[0] == KILLED and row.values[4] == "OOMKilled"
        await pilot.press("tab")
        await press_when(pilot, lambda: focused_id(app) == "evictions", "the evictions table", "enter")
        # the kill opens like an eviction (issue 27 item 5); t: the node's timeline at it
        await press_when(pilot, lambda: kill_ready(app), "the kill's detail", "t")
        await until(pilot, lambda: timeline_ready(app), "the node's timeline")
        screen = showing(app, TimelineScreen)
        assert screen is not None and screen.model is not None
        model = screen.model
        assert _clock(model.times[model.cursor]) == "00:03:30" and model.signal == "memory.available"
        plot = screen.query_one(SignalPlot)
        await until(pilot, lambda: plot.data is not None, "the plot drawn")
        assert plot.data is not None
        assert any(m.kind == "kernel" and m.index == model.cursor for m in plot.data.markers)
        shown = screen.query_one("#plot-legend", Static).content
        assert "kernel OOM kill" in (shown.plain if isinstance(shown, Text) else str(shown))
        events = screen.query_one("#cursor-events", Static).content
        assert "too fast for a 10 s loop" in (events.plain if isinstance(events, Text) else str(events))


def test_the_kind_column_sorts_with_evictions_and_kills_in_it(jvm_view: ResultsView, results_dir: Path) -> None:
    """An eviction's hard/soft (a bool) and a kill's kind (text) share a column: sorting by it does not fail."""
    from tui.results_dir import open_results_dir

    sample = open_results_dir(results_dir)
    (e,) = sample.result.evictions
    sample.result = dataclasses.replace(
        sample.result, kernel_kills=(dataclasses.replace(jvm_view.result.kernel_kills[1], node=e.node),)
    )
    columns, rows = eviction_table(sample)
    table = RecordTable()
    table.columns_spec, table.records = columns, rows
    table.sort_column = [c.key for c in columns].index("hard")
    assert [r.key[0] for r in table.visible_records()] == ["e", "k"]
    table.sort_descending = True
    assert [r.key[0] for r in table.visible_records()] == ["k", "e"]
