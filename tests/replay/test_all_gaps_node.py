"""Issue 19 §8: a node whose every tick is a gap stops replay and whatif in one line that says how to
go on (--skip-bad, --node); when the node was named with --node, the line is just what is wrong."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from recbuild import summary_at

from recordings import format as fmt
from recordings.writer import RecordingWriter
from replay.cli import main

T0 = 1_716_200_122_000_000
NO_DATA = "node node-b has no data: all 2 of its ticks are gaps (first: HTTP 503 for GET /stats/summary)"
HINT = "; pass --skip-bad to leave it out, or --node to choose the nodes"


@pytest.fixture
def rec(tmp_path: Path) -> Path:
    w = RecordingWriter(tmp_path / "rec", fmt.Manifest())
    for i in range(2):
        t = w.begin_tick(T0 + i * 10_000_000)
        summary = summary_at(datetime.fromtimestamp(t.time / 1e6, UTC), 2 << 30, node="node-a")
        t.add_summary("node-a", summary, scraped=t.time)
        t.add_gap("node-b", "HTTP 503 for GET /stats/summary")
        w.commit(t)
    w.finalize()
    return tmp_path / "rec"


@pytest.mark.parametrize("command", [["replay"], ["whatif", "--eviction-hard", "memory.available<1Gi"]])
def test_a_node_of_gaps_stops_the_run_saying_how_to_go_on(
    rec: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command[0], str(rec), *command[1:]]) == 2
    assert capsys.readouterr().err == f"evictlens {command[0]}: {rec}: {NO_DATA}{HINT}\n"
    assert main([command[0], str(rec), *command[1:], "--skip-bad"]) == 0


def test_a_node_of_gaps_asked_for_by_name_is_just_what_is_wrong(rec: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(rec), "--node", "node-b"]) == 2
    assert capsys.readouterr().err == f"evictlens replay: {rec}: {NO_DATA}\n"
