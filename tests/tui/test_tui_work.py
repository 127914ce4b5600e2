"""Work the TUI hands to the engine and how it reports back: the what-if form's counterfactual choice runs on
replay.engine, every worker failure ends in the app's one handler, and an eviction opened from a results
directory shows its containers (read from the recording for one node's tick)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import eviction_ready, focused_id, overview_ready, press_when, showing, until
from recbuild import CONFIGZ, T0, Observation, Plan, Tick, node_object, pods, summary_at, write
from textual.widgets import Checkbox, Input, Static

import replay.engine
from replay.results import ReplayResult
from replay.settings import SettingsRequest
from tui.app import EvictlensApp, make_app
from tui.screens.error import ErrorScreen
from tui.screens.eviction import EvictionScreen
from tui.screens.whatif import WhatIfScreen
from tui.widgets.record_table import RecordTable

SIZE = (140, 45)
pytestmark = pytest.mark.anyio


def _notes(app: EvictlensApp) -> list[tuple[str, str]]:
    """(title, message) of every notification shown so far."""
    return [(n.title, n.message) for n in app._notifications]


async def _overview(app: EvictlensApp, pilot: Any) -> None:
    """The overview mounted with its rows, its node table focused (keys before that go to whatever had focus)."""
    await until(pilot, lambda: overview_ready(app), "the overview")


async def _whatif(app: EvictlensApp, pilot: Any) -> WhatIfScreen:
    """``w`` on the overview, then the form once it shows with its version list focused."""
    await press_when(pilot, lambda: overview_ready(app), "the overview", "w")
    await until(pilot, lambda: showing(app, WhatIfScreen) and focused_id(app) == "version", "the what-if form")
    assert isinstance(app.screen, WhatIfScreen)
    return app.screen


async def _open_eviction(app: EvictlensApp, pilot: Any) -> None:
    """The evictions table's first row opened from the overview (enter once the table has the focus)."""
    await press_when(pilot, lambda: overview_ready(app), "the overview", "tab")
    await press_when(pilot, lambda: focused_id(app) == "evictions", "the evictions table", "enter")


async def test_the_whatif_form_runs_the_engine_with_the_counterfactual_choice(
    sample_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[SettingsRequest]] = []
    engine_replay = replay.engine.replay

    def spy(rec: Any, requests: Sequence[SettingsRequest], *args: Any, **kwargs: Any) -> list[ReplayResult]:
        asked.append(list(requests))
        return engine_replay(rec, requests, *args, **kwargs)

    monkeypatch.setattr(replay.engine, "replay", spy)
    app = make_app(None, cache=sample_cache, export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        form = await _whatif(app, pilot)
        assert form.query_one("#counterfactual", Checkbox).value is False  # open loop unless asked
        form.query_one("#counterfactual", Checkbox).value = True
        form.query_one("#hard", Input).value = "memory.available<2Gi"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: len(app.results) == 2, "the what-if result")
        whatif = app.results[1]
        assert whatif.request is not None and whatif.request.counterfactual
        assert whatif.result.settings["counterfactual"] is True
        assert whatif.label.startswith("what-if 1") and whatif.label.endswith("; counterfactual")
        first, *whatif_calls = [[r.counterfactual for r in requests] for requests in asked]
        assert first == [False] and whatif_calls and all(all(c) for c in whatif_calls)
        assert asked[1][0].overrides.eviction_hard == ("memory.available<2Gi",)
        await until(pilot, lambda: any(t == "what-if done" for t, _m in _notes(app)), "the done notification")


async def test_a_failed_whatif_is_one_line_on_the_form_and_in_a_notification(
    sample_cache: Path, tmp_path: Path
) -> None:
    app = make_app(None, cache=sample_cache, export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        form = await _whatif(app, pilot)
        form.query_one("#hard", Input).value = "memory.available<lots"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: any(t.startswith("what-if 1") for t, _m in _notes(app)), "the failure")
        ((title, problem),) = [(t, m) for t, m in _notes(app) if t.startswith("what-if 1")]
        assert "--eviction-hard: " in problem and "'lots'" in problem
        assert "\n" not in problem and "Traceback" not in problem
        status = str(app.screen.query_one("#whatif-status", Static).content)
        assert status == f"{title}: {problem}"
        assert len(app.results) == 1


async def test_a_screens_worker_failure_reaches_the_apps_one_handler(
    sample_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import replay.podview

    def broken(*_args: object) -> object:
        raise RuntimeError("boom  in\nthe reader")

    monkeypatch.setattr(replay.podview, "containers_at", broken)
    app = make_app(None, cache=sample_cache, export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _open_eviction(app, pilot)
        await until(pilot, lambda: eviction_ready(app), "the eviction detail")
        await until(pilot, lambda: _notes(app), "a notification")
        assert _notes(app) == [("containers of the evicted pod", "internal error: RuntimeError: boom in the reader")]
        assert isinstance(app.screen, EvictionScreen)  # the detail stays; only its containers are missing


async def test_a_failure_before_any_result_is_the_error_screen(
    sample_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tui.loading import ReplayJob

    def broken(*_args: object) -> object:
        raise RuntimeError("no luck")

    monkeypatch.setattr(ReplayJob, "run", broken)
    app = make_app(None, cache=sample_cache, export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: showing(app, ErrorScreen), "the error screen")
        assert str(app.screen.query_one("#error-problem", Static).content) == "internal error: RuntimeError: no luck"
        assert app.failed == "internal error: RuntimeError: no luck"
        await pilot.press("q")
        await until(pilot, lambda: app.return_code is not None, "the app to quit")
    assert app.return_code == 2


async def test_a_whatif_of_a_result_whose_recording_is_gone_says_so(
    results_dir: Path, sample_cache: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(results_dir, out)
    doc = json.loads((out / "result.json").read_text())
    doc["recording"] = str(tmp_path / "gone")
    (out / "result.json").write_text(json.dumps(doc))
    app = make_app(out, cache=sample_cache, export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _whatif(app, pilot)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: _notes(app), "the failure")
        ((title, problem),) = _notes(app)
        assert title == "what-if" and problem.startswith(str(tmp_path / "gone")) and "not on disk" in problem


async def test_an_eviction_opened_from_a_results_directory_shows_its_containers(
    results_dir: Path, sample_cache: Path, tmp_path: Path
) -> None:
    app = make_app(results_dir, cache=sample_cache, export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _open_eviction(app, pilot)
        await until(pilot, lambda: eviction_ready(app), "the eviction detail")
        table = app.screen.query_one("#containers", RecordTable)
        await until(pilot, lambda: table.records, "the containers")
        rows = {r.key: r for r in table.records}
        assert set(rows) >= {"el1", "el-sidecar1"} and rows["el1"].style == "bold red"
        assert _notes(app) == []


def _two_nodes(root: Path) -> Path:
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    plan.objects += [Observation(start, "pod", p) for p in pods()]
    plan.objects += [Observation(start, "node", node_object(n)) for n in ("kind-worker", "other")]
    plan.objects.append(Observation(start, "configz", CONFIGZ, node="kind-worker"))
    for i in range(4):
        when = T0 + timedelta(seconds=10 * i)
        plan.ticks.append(Tick(when, {n: summary_at(when, 4 << 30, n) for n in ("kind-worker", "other")}))
    return write(root, plan)


async def test_a_recording_replays_over_worker_processes_inside_the_tui(sample_cache: Path, tmp_path: Path) -> None:
    """Textual's captured stderr has no file descriptor; the engine's process pool still starts (it failed with
    "bad value(s) in fds_to_keep" before the multiprocessing helpers were started with a real one)."""
    app = make_app(_two_nodes(tmp_path / "rec"), cache=sample_cache, export_dir=tmp_path, jobs=2)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.results or app.failed, "the replay")
        assert app.failed is None
        await _overview(app, pilot)
        assert [n.node for n in app.view.nodes] == ["kind-worker", "other"]


NAVIGATION = {"push_screen", "call_from_thread", "copy_to_clipboard", "exit"}
"""What a screen may still ask of the app directly: to show a screen, to run on its thread, the clipboard, to quit."""


def test_screens_post_messages_instead_of_driving_the_app() -> None:
    """Work (a what-if, another current result, a comparison) is asked for with a message that bubbles up."""
    import ast

    screens = Path(__file__).resolve().parents[2] / "tui" / "screens"
    calls: set[str] = set()
    for path in screens.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr in ("app", "el_app")
                and isinstance(node.func.value.value, ast.Name)
                and node.func.value.value.id == "self"
            ):
                calls.add(f"{path.name}: {node.func.attr}")
    assert {c for c in calls if c.split(": ")[1] not in NAVIGATION} == set()
