"""Pilot tests of issue 20: k9s keys, `:`-jumps, quitting with what-ifs, every eviction openable, exports and
screenshots that never overwrite, a packed recording opened directly, the what-if form's keys."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from pilot_wait import (
    eviction_ready,
    focused_id,
    overview_ready,
    press_when,
    showing,
    timeline_ready,
    until,
    working,
)
from textual.pilot import Pilot
from textual.widgets import Button, Input, ProgressBar, Static

from recordings.pack import pack
from tui.app import EvictlensApp, make_app
from tui.screens.confirm import ConfirmScreen
from tui.screens.error import ErrorScreen
from tui.screens.eviction import EvictionScreen, RealEvictionScreen
from tui.screens.overview import OverviewScreen
from tui.screens.pod import PodScreen
from tui.screens.timeline import TimelineScreen
from tui.screens.whatif import WhatIfScreen
from tui.widgets.record_table import RecordTable

SIZE = (140, 45)
pytestmark = pytest.mark.anyio


def _app(sample_cache: Path, tmp_path: Path, target: Path | None = None) -> EvictlensApp:
    return make_app(target, cache=sample_cache, export_dir=tmp_path)


async def _overview(app: EvictlensApp, pilot: Pilot[int]) -> None:
    """The overview, mounted with its rows, its node table focused (keys before that go elsewhere)."""
    await until(pilot, lambda: overview_ready(app), "the overview")


async def _eviction(app: EvictlensApp, pilot: Pilot[int]) -> EvictionScreen:
    """From the overview, the evictions table's first row opened (tab, then enter once it has the focus)."""
    await press_when(pilot, lambda: overview_ready(app), "the overview", "tab")
    await press_when(pilot, lambda: focused_id(app) == "evictions", "the evictions table", "enter")
    await until(pilot, lambda: eviction_ready(app), "the eviction detail")
    assert isinstance(app.screen, EvictionScreen)
    return app.screen


async def _command(app: EvictlensApp, pilot: Pilot[int], command: str) -> None:
    """``:command`` typed on the overview, once its command box has the focus, and entered."""
    await press_when(pilot, lambda: overview_ready(app), "the overview", "colon")
    await press_when(pilot, lambda: focused_id(app) == "command", "the command box", *command, "enter")


async def _timeline(app: EvictlensApp, pilot: Pilot[int]) -> TimelineScreen:
    """From the overview, the first node's timeline, its signals loaded."""
    await press_when(pilot, lambda: overview_ready(app), "the overview", "enter")
    await until(pilot, lambda: timeline_ready(app), "the timeline")
    assert isinstance(app.screen, TimelineScreen)
    return app.screen


async def _whatif(app: EvictlensApp, pilot: Pilot[int]) -> WhatIfScreen:
    """``w`` once the screen under the form shows, then the form with its version list focused."""
    await until(pilot, lambda: overview_ready(app) or timeline_ready(app), "a screen to open the form on")
    await pilot.press("w")
    await until(pilot, lambda: showing(app, WhatIfScreen) and focused_id(app) == "version", "the what-if form")
    assert isinstance(app.screen, WhatIfScreen)
    return app.screen


def _whatif_done(app: EvictlensApp, form: WhatIfScreen) -> bool:
    """The what-if's result arrived and the form is idle again (its replay's worker ended)."""
    return len(app.results) == 2 and form.running is None and not working(app, "whatif")


def _plain(app: EvictlensApp, selector: str) -> str:
    content = app.screen.query_one(selector, Static).content
    return content.plain if hasattr(content, "plain") else str(content)


async def test_j_k_g_G_move_in_a_table(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        detail = await _eviction(app, pilot)
        ranking = detail.query_one("#ranking", RecordTable)
        assert ranking.row_count >= 3
        ranking.focus()
        await press_when(pilot, lambda: focused_id(app) == "ranking", "the ranking focused", "G")
        await until(pilot, lambda: ranking.cursor_row == ranking.row_count - 1, "the last row")
        await pilot.press("g")
        await until(pilot, lambda: ranking.cursor_row == 0, "the first row")
        await pilot.press("j", "j")
        await until(pilot, lambda: ranking.cursor_row == 2, "two rows down")
        await pilot.press("k")
        await until(pilot, lambda: ranking.cursor_row == 1, "one row up")


async def test_colon_node_opens_that_nodes_timeline(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _command(app, pilot, "node worker")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        assert isinstance(app.screen, TimelineScreen) and app.screen.node == "kind-worker"
        await pilot.press("escape")
        await _command(app, pilot, "node nope")
        await until(
            pilot, lambda: any("no node matches 'nope'" in n.message for n in app._notifications), "the warning"
        )
        assert isinstance(app.screen, OverviewScreen)


async def test_colon_pod_finds_a_pod_by_name_on_any_node(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _command(app, pilot, "pod kindnet")
        await until(pilot, lambda: showing(app, PodScreen), "the pod view")
        screen = app.screen
        assert isinstance(screen, PodScreen)
        assert screen.namespace == "kube-system" and screen.pod.startswith("kindnet") and screen.uid
        await until(pilot, lambda: screen.series is not None, "the pod's usage")
        await pilot.press("escape")
        await _command(app, pilot, "po nothing-like-it")
        await until(pilot, lambda: any("no pod matches" in n.message for n in app._notifications), "the warning")
        assert isinstance(app.screen, OverviewScreen)


async def test_enter_in_the_filter_moves_into_the_results(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "slash")
        await press_when(pilot, lambda: focused_id(app) == "filter", "the filter box", *"alloc", "enter")
        # no node is named alloc: the evictions table, which still has its row, takes the focus
        await until(pilot, lambda: focused_id(app) == "evictions", "the evictions table focused")
        assert app.screen.query_one("#nodes", RecordTable).row_count == 0
        await pilot.press("enter")
        await until(pilot, lambda: eviction_ready(app), "the eviction detail")


async def test_q_on_the_overview_asks_before_losing_whatif_results(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _overview(app, pilot)
        app.results.append(dataclasses.replace(app.view, label="what-if 1: kubelet 1.32"))
        await pilot.press("q")
        await until(pilot, lambda: showing(app, ConfirmScreen), "the question")
        assert "1 what-if result" in _plain(app, "#confirm-question")
        await pilot.press("n")
        await until(pilot, lambda: overview_ready(app), "back on the overview")
        assert app.is_running and app.return_code is None
        await pilot.press("q")
        await press_when(pilot, lambda: showing(app, ConfirmScreen), "the question again", "y")
        await until(pilot, lambda: app.return_code is not None, "the app to quit")
    assert app.return_code == 0


@pytest.fixture
def real_only_results(results_dir: Path, tmp_path: Path) -> Path:
    """The sample's results with its one real eviction unmatched (as if the replay had not predicted it)."""
    out = tmp_path / "real-only"
    shutil.copytree(results_dir, out)
    doc = json.loads((out / "result.json").read_text())
    for m in doc["matches"]:
        m["predicted_id"] = None
        m["same_message"] = False
    (out / "result.json").write_text(json.dumps(doc))
    return out


async def test_a_real_eviction_the_replay_did_not_predict_opens_with_its_message_and_the_ranking(
    real_only_results: Path, sample_cache: Path, tmp_path: Path
) -> None:
    app = _app(sample_cache, tmp_path, real_only_results)
    async with app.run_test(size=SIZE) as pilot:
        await _overview(app, pilot)
        evictions = app.screen.query_one("#evictions", RecordTable)
        keys = [r.key for r in evictions.visible_records()]
        assert "r0" in keys
        evictions.focus()
        evictions.move_cursor(row=keys.index("r0"))
        await press_when(
            pilot,
            lambda: focused_id(app) == "evictions" and evictions.selected_key() == "r0",
            "the real eviction's row selected",
            "enter",
        )
        await until(pilot, lambda: isinstance(app.screen, RealEvictionScreen), "the real eviction's detail")
        screen = app.screen
        assert "The node was low on resource: memory." in screen.query_one("#message").text  # type: ignore[attr-defined]
        await until(pilot, lambda: "The replay at that moment" in _plain(app, "#moment"), "the replay's pass")
        assert "MET" in _plain(app, "#moment")
        ranking = screen.query_one("#ranking", RecordTable)
        assert ranking.records and ranking.records[0].values[1] == "default/alloc-sidecars"


async def test_the_ranking_says_what_kept_each_pod(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        detail = await _eviction(app, pilot)
        ranking = detail.query_one("#ranking", RecordTable)
        kept = {r.values[1]: r.values[6] for r in ranking.records}
        assert kept["default/alloc-sidecars"] == "evicted"
        assert set(kept.values()) <= {"evicted", "critical"}  # the sample's other pods are critical


async def test_exports_are_named_for_the_object_and_time_and_never_overwrite(
    sample_cache: Path, tmp_path: Path
) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await press_when(pilot, lambda: overview_ready(app), "the overview", "ctrl+e", "ctrl+e")
        # the second (same second) is -2, not over the first
        await until(pilot, lambda: len(list(tmp_path.glob("evictlens-overview-nodes-*.csv"))) == 2, "both exports")
        detail = await _eviction(app, pilot)
        detail.query_one("#ranking", RecordTable).focus()
        await press_when(pilot, lambda: focused_id(app) == "ranking", "the ranking focused", "ctrl+e")
        pattern = "evictlens-eviction-default-alloc-sidecars-ranking-*.csv"
        await until(pilot, lambda: list(tmp_path.glob(pattern)), "the ranking's export")
        (ranking,) = tmp_path.glob(pattern)
        assert ranking.read_text().startswith("rank,pod,")


async def test_the_timeline_offers_no_csv_export(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _timeline(app, pilot)
        assert not app.check_action("export", ("csv",))
        assert "Export CSV" not in {c.title for c in app.get_system_commands(app.screen)}


async def test_the_screenshot_goes_to_the_export_dir_without_downloads(
    sample_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home-without-downloads"))
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _overview(app, pilot)
        first = app.deliver_screenshot()  # what the palette's Screenshot calls
        second = app.deliver_screenshot()
        assert first and second and first != second
        assert Path(first).parent == tmp_path and Path(first).name.startswith("evictlens-overview-screenshot-")
        assert Path(first).read_text().startswith("<svg")


async def test_the_screenshot_defaults_to_the_current_directory(
    sample_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(cache=sample_cache)
    async with app.run_test(size=SIZE) as pilot:
        await _overview(app, pilot)
        path = app.deliver_screenshot()
        assert path is not None and Path(path).parent.resolve() == tmp_path.resolve()


async def test_a_packed_recording_opens_directly(sample_rec: Path, sample_cache: Path, tmp_path: Path) -> None:
    packed = tmp_path / "sample.evictlens.tar"
    pack(sample_rec, packed)
    app = _app(sample_cache, tmp_path, packed)
    async with app.run_test(size=SIZE) as pilot:
        await _overview(app, pilot)
        assert len(app.view.result.evictions) == 1
        unpacked = app.view.recording()
        assert unpacked is not None and unpacked.name == "sample"
    assert not unpacked.exists()  # the temporary copy goes with the app


async def test_a_tar_not_named_as_a_pack_says_evictlens_unpack(sample_cache: Path, tmp_path: Path) -> None:
    plain = tmp_path / "rec.tar"
    with tarfile.open(plain, "w") as tar:
        tar.add(tmp_path, arcname="x", recursive=False)
    app = _app(sample_cache, tmp_path, plain)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: showing(app, ErrorScreen), "the error screen")
        assert app.failed is not None and "evictlens unpack" in app.failed
        assert "evictlens unpack" in _plain(app, "#error-problem")


async def test_whatif_form_keys(sample_cache: Path, tmp_path: Path) -> None:
    """Progress idle before a run, ctrl+l to the results, and enter twice on Run starts one replay."""
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _whatif(app, pilot)
        assert not screen.query_one("#whatif-progress", ProgressBar).display
        await pilot.press("ctrl+l")
        await until(pilot, lambda: focused_id(app) == "results", "the results list focused")
        screen.query_one("#hard", Input).value = "memory.available<1Gi"
        run = screen.query_one("#run", Button)
        run.focus()
        await press_when(pilot, lambda: focused_id(app) == "run", "Run focused", "enter", "enter")
        await until(pilot, lambda: _whatif_done(app, screen), "the what-if result")
        assert len(app.results) == 2 and app._whatifs == 1 and not run.disabled


async def test_the_timeline_cursor_is_every_views_moment(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _timeline(app, pilot)
        model = screen.model
        assert model is not None
        before = model.cursor
        await pilot.press("right")
        await until(
            pilot,
            lambda: model.cursor == before + 1 and app.cursor_time == model.times[model.cursor],
            "the shared cursor one pass on",
        )
        legend = _plain(app, "#plot-legend")
        assert legend.count("MemoryPressure") == 1 and "predicted eviction" in legend


async def test_the_annotations_box_needs_no_scrolling_at_220x60(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=(220, 60)) as pilot:
        detail = await _eviction(app, pilot)
        message = detail.query_one("#message")
        assert "starved_resource: memory" in message.text  # type: ignore[attr-defined]
        # every line shows (once laid out: no scrolling)
        await until(pilot, lambda: message.size.height > 0 and message.max_scroll_y == 0, "every line showing")


async def test_the_pod_view_draws_each_container(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _command(app, pilot, "pod alloc-sidecars")
        await until(
            pilot,
            lambda: (pod := showing(app, PodScreen)) is not None and pod.per_container is not None,
            "the pod's usage per container",
        )
        screen = app.screen
        assert isinstance(screen, PodScreen) and screen.per_container is not None
        assert set(screen.per_container["container"].unique()) >= {"el1", "el-sidecar1"}
        legend = _plain(app, "#pod-legend")
        assert "el-sidecar1" in legend and "memory (pod)" in legend


async def test_ctrl_u_in_a_field_fills_it_with_the_selected_nodes_current_value(
    sample_cache: Path, tmp_path: Path
) -> None:
    """ctrl+u is "use selected" even inside a field (the Input's own ctrl+u would clear it): the node under the
    form (here the timeline's) gives its value as replayed, and the filled form replays the same evictions."""
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _timeline(app, pilot)
        screen = await _whatif(app, pilot)
        hard = screen.query_one("#hard", Input)
        hard.focus()
        await press_when(pilot, lambda: focused_id(app) == "hard", "--eviction-hard focused", *"junk")
        await until(pilot, lambda: hard.value == "junk", "the typed value")
        await pilot.press("ctrl+u")
        await until(pilot, lambda: hard.value == "memory.available<1536Mi", "the node's hard thresholds")
        transition = screen.query_one("#transition", Input)
        transition.focus()
        await press_when(pilot, lambda: focused_id(app) == "transition", "the transition period focused", "ctrl+u")
        await until(pilot, lambda: transition.value == "5m0s", "the node's transition period")
        max_grace = screen.query_one("#max-grace", Input)
        max_grace.focus()
        await press_when(pilot, lambda: focused_id(app) == "max-grace", "the max grace period focused", "ctrl+u")
        await until(pilot, lambda: max_grace.value == "0", "the node's max grace period")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: _whatif_done(app, screen), "the what-if result")
        first, filled = app.results
        assert [e.message for e in filled.result.evictions] == [e.message for e in first.result.evictions]
        assert filled.result.settings["overrides"]["--eviction-hard"] == "memory.available<1536Mi"


async def test_the_rankings_follow_the_timeline_cursor(sample_rec: Path, sample_cache: Path, tmp_path: Path) -> None:
    """An eviction's ranking is the one at the timeline's cursor: the eviction's own at its pass, the replay's
    own pass elsewhere (here a 4Gi what-if on the sample as a plain recording, where the recorded usage keeps the
    node under its threshold after the eviction), and back (e) to the eviction's."""
    from scenario_copy import without_scenario

    from replay.engine import Moment
    from replay.moment import explain_moment

    app = _app(sample_cache, tmp_path, without_scenario(sample_rec, tmp_path / "plain"))
    async with app.run_test(size=SIZE) as pilot:
        form = await _whatif(app, pilot)
        form.query_one("#hard", Input).value = "memory.available<4Gi"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: _whatif_done(app, form), "the what-if result")
        results = form.query_one("#results", RecordTable)
        await pilot.press("ctrl+l")
        await press_when(
            pilot,
            lambda: focused_id(app) == "results" and results.selected_key() == "1",
            "the what-if selected in the results list",
            "ctrl+u",
        )
        await press_when(pilot, lambda: app.current == 1, "the what-if in use", "escape")
        await until(pilot, lambda: overview_ready(app), "back on the overview")
        detail = await _eviction(app, pilot)
        e = detail.eviction
        ranking = detail.query_one("#ranking", RecordTable)
        own = [r.key for r in ranking.records]
        assert own == [f"{r.namespace}/{r.pod}" for r in e.ranking]

        await pilot.press("t")  # the node's timeline at the eviction's moment
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen) and timeline.model is not None
        model = timeline.model
        at = model.cursor
        assert model.ticks[at] == e.tick
        await pilot.press("right")
        await until(pilot, lambda: model.cursor == at + 1 and app.cursor_time == model.times[at + 1], "one pass on")
        next_tick = model.ticks[model.cursor]
        assert next_tick != e.tick
        await pilot.press("escape")
        await until(
            pilot,
            lambda: app.screen is detail and f"tick {next_tick}," in _plain(app, "#ranking-title"),
            "the ranking at the cursor",
        )
        rec = app.view.open_recording()
        assert rec is not None and app.view.request is not None
        there = explain_moment(rec, app.view.request, e.node, Moment(tick=next_tick))
        assert there.ranking, "the what-if keeps the node under its threshold after the eviction"
        assert [r.key for r in ranking.records] == [f"{f.namespace}/{f.pod}" for f in there.ranking] != own
        assert f"tick {next_tick}" in _plain(app, "#moment")

        await pilot.press("e")  # back to the eviction's own moment, for every view
        await until(pilot, lambda: [r.key for r in ranking.records] == own, "the eviction's own ranking")
        assert app.cursor_time == e.time and "tick" not in _plain(app, "#ranking-title")


async def test_the_pod_view_follows_the_timeline_cursor(sample_cache: Path, tmp_path: Path) -> None:
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _timeline(app, pilot)  # the node's timeline: its cursor on the eviction
        await pilot.press("escape")
        await _command(app, pilot, "pod alloc-sidecars")
        await until(
            pilot,
            lambda: (pod := showing(app, PodScreen)) is not None and pod.per_container is not None,
            "the pod's usage",
        )
        pod = app.screen
        assert isinstance(pod, PodScreen)
        before = _plain(app, "#pod-cursor")
        assert "at the cursor" in before and "el-sidecar1" in before
        await pilot.press("t")
        await until(pilot, lambda: timeline_ready(app), "the timeline")
        timeline = app.screen
        assert isinstance(timeline, TimelineScreen) and timeline.model is not None
        model = timeline.model
        at = model.cursor
        await pilot.press("left")
        await until(pilot, lambda: model.cursor == at - 1 and app.cursor_time == model.times[at - 1], "a pass back")
        tick = model.ticks[model.cursor]
        await pilot.press("escape")
        await until(
            pilot,
            lambda: app.screen is pod and f"(tick {tick})" in _plain(app, "#pod-cursor"),
            "back on the pod view at the cursor",
        )
        assert _plain(app, "#pod-cursor") != before


async def test_a_timeline_under_another_follows_its_cursor(sample_cache: Path, tmp_path: Path) -> None:
    """Timeline → eviction → t (a second timeline on top): moving the top cursor moves the one below (and the
    eviction between them), and the one below does not answer with a move of its own."""
    app = _app(sample_cache, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        below = await _timeline(app, pilot)
        assert below.model is not None
        bottom = below.model
        await pilot.press("enter")
        await until(pilot, lambda: eviction_ready(app), "the eviction detail")
        await pilot.press("t")
        await until(pilot, lambda: timeline_ready(app, other_than=below), "the second timeline")
        top = app.screen
        assert isinstance(top, TimelineScreen) and top.model is not None
        model = top.model
        at = model.cursor
        assert at >= 2
        await pilot.press("left", "left")
        await until(pilot, lambda: model.cursor == at - 2, "two passes back")
        moved = model.times[model.cursor]
        await until(
            pilot,
            lambda: app.cursor_time == moved and bottom.times[bottom.cursor] == moved,
            "the shared moment, on the timeline below too",
        )
        assert model.times[model.cursor] == moved  # the one below did not answer with a move of its own
