"""The TUI's data side, no Textual: lazy results directories, the timeline's cursor arithmetic, alignment."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from recordings.reader import open_recording
from replay.engine import replay_recording
from replay.results_io import load, write
from tui.export import to_csv
from tui.loading import classify
from tui.results_dir import open_results_dir
from tui.results_view import ResultsView
from tui.timeline_model import TimelineModel


def test_a_results_directory_opens_with_its_large_frames_scanned_not_read(results_dir: Path) -> None:
    loaded = load(results_dir)
    view = open_results_dir(results_dir)
    assert view.result == loaded  # every field but the frames
    assert view.result.conditions.equals(loaded.conditions)
    assert isinstance(view.result.signals, pl.LazyFrame) and isinstance(view.result.overcommit, pl.LazyFrame)
    signals = loaded.signals.collect()
    assert view.node_series("kind-worker").height == signals.height
    lowest = view.lowest_available().filter(pl.col("signal") == "memory.available")["lowest"].item()
    assert lowest == signals.filter(pl.col("signal") == "memory.available")["available"].min()


def test_classify_tells_results_from_recordings(results_dir: Path, sample_rec: Path) -> None:
    assert classify(results_dir) == "results"
    assert classify(sample_rec) == "recording"


def _model(sample_rec: Path) -> TimelineModel:
    view = ResultsView.from_result(replay_recording(open_recording(sample_rec)), "t", str(sample_rec))
    return TimelineModel(
        view.node("kind-worker"),
        view.node_series("kind-worker"),
        view.result.conditions,
        view.evictions_of("kind-worker"),
        view.real_of("kind-worker"),
    )


def test_timeline_zoom_keeps_the_cursor_in_the_window_and_jumps_stop_at_the_ends(sample_rec: Path) -> None:
    model = _model(sample_rec)
    marks = model.markers()
    assert model.cursor == marks[0].index
    model.zoom(0.5)
    lo, hi = model.window
    assert lo <= model.cursor <= hi and hi - lo + 1 < len(model.ticks)
    model.goto(0)
    assert model.window[0] == 0
    assert model.jump(forward=False) is None and model.cursor == 0
    assert model.jump(forward=True) == marks[0]
    model.zoom(100)
    assert model.window == (0, len(model.ticks) - 1)


def test_the_plot_reduces_a_long_window_by_the_minimum_of_each_bucket(sample_rec: Path) -> None:
    model = _model(sample_rec)
    data = model.plot(width=3)
    values = [v for v in model.values("memory.available") if v is not None]
    assert len(data.xs) <= len(model.ticks) and min(v for v in data.ys if v is not None) == min(values) / data.scale
    assert [label for label, _ in data.thresholds] == ["hard memory.available<1536Mi"]
    assert [b.condition for b in data.bands] == ["MemoryPressure"]


def test_csv_export_writes_raw_values() -> None:
    assert to_csv(["node", "lowest"], [("n1", 1610612736), ("n2", None)]) == "node,lowest\nn1,1610612736\nn2,\n"


def test_a_newer_progress_message_replaces_an_older_one_of_the_same_replay() -> None:
    from tui.messages import ReplayProgress

    assert ReplayProgress("a", 5, 10).can_replace(ReplayProgress("a", 4, 10))
    assert not ReplayProgress("a", 5, 10).can_replace(ReplayProgress("b", 4, 10))


def test_a_nodes_current_value_reads_back_as_the_same_flag(results_dir: Path) -> None:
    """ctrl+u's field values: the thresholds someone set (not the kubelet's allocatable and containerfs copies),
    exact quantities, percentages, soft grace periods in Go's duration form — each one the flag parses."""
    import dataclasses

    from replay.kubelet.thresholds import parse_threshold_config
    from tui.screens.whatif import current_value

    node = open_results_dir(results_dir).node("kind-worker")
    hard = node.thresholds[0]
    soft = dataclasses.replace(
        hard, id=9, hard=False, quantity=None, percentage=0.10000000149011612, grace_period_ns=90 * 10**9
    )
    inodes = dataclasses.replace(hard, id=10, signal="nodefs.inodesFree", quantity=5000, text="x")
    node = dataclasses.replace(node, thresholds=(*node.thresholds, soft, inodes))
    assert current_value(node, "hard") == "memory.available<1536Mi,nodefs.inodesFree<5000"
    assert current_value(node, "soft") == "memory.available<10%"
    assert current_value(node, "soft-grace") == "memory.available=1m30s"
    assert current_value(node, "transition") == "5m0s" and current_value(node, "max-grace") == "0"

    def as_map(field: str, sep: str) -> dict[str, str]:
        return dict(s.split(sep, 1) for s in current_value(node, field).split(","))

    parsed = parse_threshold_config([], as_map("hard", "<"), as_map("soft", "<"), as_map("soft-grace", "="), None)
    assert len(parsed) == 3  # the kubelet's own parser takes them


def test_a_results_directory_gives_back_the_settings_it_was_replayed_with(sample_rec: Path, tmp_path: Path) -> None:
    """The ranking at a moment of a what-if written with -o replays that what-if's settings, not the recorded
    ones: the request is rebuilt from result.json."""
    from replay.kubelet.config import FlagOverrides
    from replay.settings import SettingsRequest

    asked = SettingsRequest(
        kubelet_version="1.32",
        overrides=FlagOverrides(eviction_hard=("memory.available<2Gi",), eviction_max_pod_grace_period=30),
        label="tighter",
    )
    write(replay_recording(open_recording(sample_rec), asked), tmp_path / "out")
    request, notes = open_results_dir(tmp_path / "out").settings_request()
    assert notes == ()
    assert request.describe() == asked.describe()


def test_a_closed_loop_results_details_read_the_scenario_run_again_not_the_recorded_run(jvm_spike_rec: Path) -> None:
    """jvm-spike as recorded: the kernel kills java at 03:24 and nothing is evicted. With a 1Gi hard threshold
    the regenerated run evicts it at 03:00: its containers and that moment come from the regenerated run."""
    from datetime import datetime

    from replay.engine import Moment, replay
    from replay.kubelet.config import FlagOverrides
    from replay.moment import explain_moment
    from replay.podview import containers_at
    from replay.settings import SettingsRequest

    rec = jvm_spike_rec
    request = SettingsRequest(label="1Gi", overrides=FlagOverrides(eviction_hard=("memory.available<1Gi",)))
    (result,) = replay(open_recording(rec), [request], jobs=1)
    (evicted,) = result.evictions
    view = ResultsView.from_result(result, "1Gi", str(rec), request)
    assert view.closed_loop
    world = view.world()
    assert world is not None and world.root != rec and view.world() is world  # regenerated once
    assert [c.name for c in containers_at(world, evicted)] == ["orders"]
    inputs = view.moment_inputs()
    assert inputs is not None and inputs.closed_loop and inputs.recording is world
    at = Moment(at=datetime.fromisoformat("2025-01-01T00:03:00+00:00"))
    explanation = explain_moment(inputs.recording, inputs.request, evicted.node, at, closed_loop=True)
    assert [e.message for e in explanation.result.evictions] == [evicted.message]
    assert explanation.notes[-1].startswith("closed loop")
