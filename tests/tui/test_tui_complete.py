"""Issue 27: the TUI complete at 80×24 — help that scrolls with the domain keys first, ``:`` and ``/`` on every
screen (the input has the keys at once), the sort in the table's title, plots that keep the dip and the 0 in view,
the kernel kill opened like an eviction, what-if results in view and named one way."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from pilot_wait import (
    eviction_ready,
    focused_id,
    kill_ready,
    overview_ready,
    press_when,
    showing,
    timeline_ready,
    until,
)
from rich.text import Text
from textual.widgets import Select, Static
from textual.widgets._footer import FooterKey

from recordings.reader import open_recording
from recordings.scenarios import load_bundled
from replay.engine import replay_recording
from replay.scenario import run_scenario
from replay.views import node_signals
from tui.app import EvictlensApp, make_app
from tui.kill_model import kill_facts
from tui.screens.compare import CompareScreen
from tui.screens.help import DOMAIN, HelpScreen, HelpTable
from tui.screens.kill import KillScreen
from tui.screens.overview import OverviewScreen
from tui.screens.pod import PodScreen
from tui.screens.timeline import TimelineScreen
from tui.screens.whatif import WhatIfScreen, result_name
from tui.timeline_model import TimelineModel
from tui.widgets.record_table import RecordTable
from tui.widgets.signal_plot import SignalPlot, y_ticks

SMALL = (80, 24)
pytestmark = pytest.mark.anyio


def _app(sample_cache: Path, tmp_path: Path, target: Path | None = None) -> EvictlensApp:
    return make_app(target, cache=sample_cache, export_dir=tmp_path)


def _plain(app: EvictlensApp, selector: str) -> str:
    content = app.screen.query_one(selector, Static).content
    return content.plain if isinstance(content, Text) else str(content)


@pytest.fixture(scope="module")
def k3d_rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled k3d-operator-pod scenario: memory.available dips to 972Mi under a 1Gi hard threshold."""
    out = tmp_path_factory.mktemp("k3d") / "rec"
    run_scenario(load_bundled("k3d-operator-pod"), out)
    return out


# -- 1. help -----------------------------------------------------------------------------------------------------
async def test_help_scrolls_lists_the_domain_keys_first_and_help_is_first_in_the_footer(
    sample_cache: Path, tmp_path: Path
) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        # the footer is composed after the screen's first frame: wait for its keys, then read the first
        await until(pilot, lambda: overview_ready(app) and bool(app.screen.query(FooterKey)), "the overview's footer")
        keys = [k for k in app.screen.query(FooterKey)]
        assert keys and keys[0].action == "help"  # at 80 columns the rest is cut, never ? Help
        await pilot.press("question_mark")
        await until(pilot, lambda: showing(app, HelpScreen) and focused_id(app) == "help-table", "the help")
        table = app.screen.query_one(HelpTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[0] for r in rows[1 : 1 + len(DOMAIN)]] == [d[0] for d in DOMAIN]
        assert not any(re.search(r"[A-Z][a-z]+(Screen|Table|Input)\b", c) for r in rows for c in r)
        headings = [r[1] for r in rows if not r[0]]
        assert {"Node timeline", "Eviction", "Kernel kill", "Pod", "Compare", "What-if"} <= set(headings)
        assert table.row_count > table.size.height  # more than fits at 80×24: it must scroll
        await pilot.press("G")
        await until(pilot, lambda: table.cursor_row == table.row_count - 1 and table.scroll_y > 0, "scrolled down")
        await pilot.press("k", "k")
        await until(pilot, lambda: table.cursor_row == table.row_count - 3, "k moves up")
        await pilot.press("g")
        await until(pilot, lambda: table.scroll_y == 0, "back to the top")
        await pilot.press("escape")
        await until(pilot, lambda: overview_ready(app), "closed")


# -- 2. : and / everywhere -----------------------------------------------------------------------------------------
async def test_colon_on_the_timeline_takes_every_key_typed_at_once(sample_cache: Path, tmp_path: Path) -> None:
    """``:eviction alloc`` typed in one go on the timeline: none of its letters (i: zoom, o: zoom out, n: next
    eviction, l: next pass, …) reach the timeline, and it opens the eviction."""
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen) and timeline.model is not None
        before = (timeline.model.cursor, timeline.model.window, timeline.model.signal)
        await pilot.press(":", *"eviction alloc", "enter")
        await until(pilot, lambda: eviction_ready(app), "the eviction")
        assert (timeline.model.cursor, timeline.model.window, timeline.model.signal) == before
        assert not any(isinstance(s, CompareScreen) for s in app.screen_stack)
        # on the eviction: :node opens the node's timeline
        await pilot.press(":", *"node kind", "enter")
        await until(pilot, lambda: timeline_ready(app, other_than=timeline), "the node's timeline from the eviction")


async def test_colon_from_the_overview_under_load_never_leaks_d_or_enter(sample_cache: Path, tmp_path: Path) -> None:
    """``:`` then ``d`` and enter in one go (the issue's Compare and timeline opened by keys meant for the input)."""
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        await pilot.press(":", *"node d", "enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline of the node matching d")
        assert not any(isinstance(s, CompareScreen) for s in app.screen_stack)


async def test_escape_closes_the_input_before_going_back(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        timeline = app.screen
        await pilot.press(":", "x")
        await until(pilot, lambda: focused_id(app) == "command", "the command input")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen.query_one("#command").has_class("hidden"), "the input closed")
        assert app.screen is timeline
        await pilot.press("escape")
        await until(pilot, lambda: overview_ready(app), "back on the overview")


async def test_slash_filters_the_eviction_and_from_a_timeline_the_overview(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        await pilot.press(":", *"ev alloc", "enter")
        await until(pilot, lambda: eviction_ready(app), "the eviction")
        ranking = app.screen.query_one("#ranking", RecordTable)
        total = len(ranking.visible_records())
        assert total > 1
        await pilot.press("/", *"alloc-sidecars")
        await until(pilot, lambda: 0 < len(ranking.visible_records()) < total, "the ranking filtered")
        await pilot.press("escape")
        await until(pilot, lambda: len(ranking.visible_records()) == total, "the filter cleared")
        await pilot.press("t")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        await pilot.press("/", *"nomatch", "enter")
        await until(pilot, lambda: overview_ready(app) or showing(app, OverviewScreen) is not None, "the overview")
        nodes = app.screen.query_one("#nodes", RecordTable)
        await until(pilot, lambda: nodes.filter_text == "nomatch" and not nodes.row_count, "filtered there")


# -- 3. sort title --------------------------------------------------------------------------------------------------
async def test_the_sort_is_in_the_table_title(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        nodes = app.screen.query_one("#nodes", RecordTable)
        assert not nodes.border_title
        nodes.sort_by(len(nodes.columns_spec) - 1, True)  # the last column: off screen at 80 columns
        await until(pilot, lambda: bool(nodes.border_title), "the title")
        label = nodes.columns_spec[-1].label
        assert str(nodes.border_title).startswith(f"sorted by {label} ▼")
        assert nodes.has_class("-sorted")


# -- 4. plots -------------------------------------------------------------------------------------------------------
def _rendered(plot: SignalPlot, width: int, rows: int) -> list[str]:
    plot.plt.plotsize(width, rows)
    return re.sub(r"\x1b\[[0-9;]*m", "", plot.plt.build()).splitlines()


def test_the_k3d_dip_is_drawn_over_the_threshold_row_with_a_0_label(k3d_rec: Path) -> None:
    result = replay_recording(open_recording(k3d_rec))
    node = "k3d-dev-agent-0"
    model = TimelineModel(
        result.node(node),
        node_signals(result.signals, node),
        result.conditions.filter(result.conditions["node"] == node),
        [e for e in result.evictions if e.node == node],
        [],
    )
    model.signal = "memory.available"
    data = model.plot(66)
    plot = SignalPlot()
    plot.draw(data)
    lines = _rendered(plot, 74, 11)  # the plot's height at 80×24
    (dip,) = [line for line in lines if "●" in line]
    assert "─" in dip  # the lowest sample (972Mi) on the threshold's row, drawn over its line
    bottom, top = data.y_range
    _ticks, labels = y_ticks(bottom, top, data.unit, marks=[1024.0], rows=6)  # the rows of the plot at 80×24
    assert "0" in labels and "1,024" in labels  # the axis starts at 0 and says so; the threshold's own row
    assert len({len(label.partition(".")[2]) for label in labels}) == 1  # one number format on the axis
    _t, fine = y_ticks(0.0, 1200.0, "MiB", marks=[1024.5], rows=12)
    assert len({len(label.partition(".")[2]) for label in fine}) == 1 and "1,024.5" in fine


async def test_pod_view_scales_to_the_usage_and_z_shows_the_limit(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview")
        await pilot.press(":", *"pod alloc-sidecars", "enter")
        await until(pilot, lambda: (s := showing(app, PodScreen)) is not None and s.series is not None, "the pod")
        pod = app.screen
        assert isinstance(pod, PodScreen)
        assert not pod.whole and pod.series is not None
        # a limit far above the usage: the axis stays on the usage, the limit an arrow at the top edge
        pod.series = dataclasses.replace(pod.series, memory_limit=64 << 30)
        pod.draw()
        assert "limit 64Gi above (z: show)" in _plain(app, "#pod-legend")
        await pilot.press("z")
        await until(pilot, lambda: pod.whole and "── limit" in _plain(app, "#pod-legend"), "z: up to the limit")
        await pilot.press("z")
        await until(pilot, lambda: not pod.whole and "above (z: show)" in _plain(app, "#pod-legend"), "z: the usage")


async def test_the_timeline_header_names_ticks_as_the_cursor_does(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and screen.model is not None
        await pilot.press("plus", "plus")
        model = screen.model
        await until(pilot, lambda: f"ticks {model.ticks[model.window[0]]}–" in _plain(app, "#timeline-title"), "zoomed")
        title = _plain(app, "#timeline-title")
        lo, hi = model.window
        assert f"ticks {model.ticks[lo]}–{model.ticks[hi]}" in title and f"(tick {model.ticks[model.cursor]})" in title
        assert model.window[0] <= model.cursor <= model.window[1]


# -- 5. the kernel kill --------------------------------------------------------------------------------------------
def test_the_kill_facts_of_jvm_spike(jvm_rec: Path) -> None:
    rec = open_recording(jvm_rec)
    result = replay_recording(rec)
    kill = next(k for k in result.kernel_kills if k.kind == "OOMKilled")
    facts = kill_facts(rec, result, node_signals(result.signals, kill.node or ""), kill)
    assert facts.scope == "node" and "SystemOOM" in facts.scope_text
    assert facts.container == "orders" and facts.limit is None and facts.qos == "Burstable"
    (killed,) = [c for c in facts.candidates if c.killed]
    assert (
        killed.chosen
        and killed.oom_score_adj == 875
        and killed.badness == max(c.badness for c in facts.candidates if c.badness is not None)
    )
    assert any(c.oom_score_adj == -997 for c in facts.candidates)  # the Guaranteed cache, last
    assert facts.last_pass is not None and facts.last_pass.tick == 20 and facts.last_pass.lead_s == 4.0
    assert facts.why_not.startswith("threshold not met")


async def test_enter_on_a_kill_opens_its_detail(jvm_rec: Path, sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path, jvm_rec)
    async with app.run_test(size=SMALL) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "tab")
        await press_when(pilot, lambda: focused_id(app) == "evictions", "the evictions table", "enter")
        await until(pilot, lambda: kill_ready(app, checked=True), "the kill's detail, checked by the engine")
        screen = app.screen
        assert isinstance(screen, KillScreen)
        head = _plain(app, "#kill-head")
        assert "orders-jvm" in head and "container orders" in head and "limit none" in head
        assert "the node (cgroup /" in _plain(app, "#kill-scope")
        assert "why it did not act: threshold not met" in _plain(app, "#kill-pass")
        acts = _plain(app, "#kill-acts")
        assert "memory.available<928Mi" in acts and "evicts shop/orders-jvm" in acts
        candidates = screen.query_one("#candidates", RecordTable)
        assert any("◀ killed" in str(r.values[-1]) for r in candidates.records)
        await pilot.press("v")
        await until(pilot, lambda: showing(app, PodScreen) is not None, "the killed pod's view")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen, "back")
        await pilot.press(":", *"kill orders", "enter")  # :kill from any screen
        await until(pilot, lambda: kill_ready(app) and app.screen is not screen, "the kill again, by :kill")


# -- 6. what-if ----------------------------------------------------------------------------------------------------
async def test_a_whatif_result_stays_in_view_is_named_once_and_escape_goes_back_one_screen(
    sample_cache: Path, tmp_path: Path
) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "w")
        await until(pilot, lambda: showing(app, WhatIfScreen) and focused_id(app) == "version", "the what-if form")
        form = app.screen
        assert isinstance(form, WhatIfScreen)
        form.query_one("#version", Select).value = "1.32"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: len(app.results) == 2 and form.running is None, "the what-if result")
        results = form.query_one("#results", RecordTable)
        body = form.query_one("#whatif-body")

        def in_view() -> bool:
            row = results.region.y + 1 + results.cursor_row  # the header, then the rows
            return results.row_count == 2 and body.region.y <= row < body.region.bottom

        await until(pilot, in_view, "the new result's row on screen at 80×24")
        name = result_name(app.results[1].label)
        assert name == "what-if 1" and results.records[1].values[0] == name
        assert app.results[1].label.startswith(name + ": ")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: showing(app, CompareScreen) is not None, "compare")
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is form, "one press: the form")
        await pilot.press("escape")
        await until(pilot, lambda: showing(app, OverviewScreen) is not None, "two presses: the overview")
        assert "1 what-if (r: next)" in _plain(app, "#overview-title")
