"""The TUI's node table says until when each node's replay is as recorded, once a node parts ways with it."""

from __future__ import annotations

from pathlib import Path

from recbuild import sidecar_recording

from recordings.reader import open_recording
from replay.engine import replay
from replay.kubelet.config import FlagOverrides
from replay.settings import SettingsRequest
from tui.fmt import fmt_clock
from tui.results_view import ResultsView
from tui.screens.overview import node_table


def _table(tmp_path: Path, request: SettingsRequest) -> tuple[list[str], list[tuple[object, ...]]]:
    rec = open_recording(sidecar_recording(tmp_path / "rec"))
    (result,) = replay(rec, [request], jobs=1)
    columns, records = node_table(ResultsView("r", result, result.signals, "here"), {})
    return [c.label for c in columns], [r.values for r in records]


def test_a_node_that_parts_ways_shows_as_recorded_until(tmp_path: Path) -> None:
    low = SettingsRequest(label="low", overrides=FlagOverrides(eviction_hard=("memory.available<100Mi",)))
    labels, rows = _table(tmp_path, low)
    assert labels[-1] == "as recorded until"
    (row,) = rows
    assert row[-1] is not None and fmt_clock(row[-1])[:4] == "2024"  # type: ignore[arg-type]


def test_without_a_horizon_the_table_has_no_such_column(tmp_path: Path) -> None:
    labels, _rows = _table(tmp_path, SettingsRequest(counterfactual=True))  # the recorded eviction, once
    assert "as recorded until" not in labels
