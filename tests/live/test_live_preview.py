"""live/preview.py: the newest tick shown before the engine has replayed the history is what the engine shows
at that tick (signals, thresholds, forecasts: they do not depend on the history), and it says what it cannot
know yet (conditions, next to go) instead of showing them empty."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from live.engine import LiveEngine
from live.preview import CATCHING_UP, newest
from replay.cli import main

SCENARIOS = ("jvm-spike", "disk-pressure", "soft-grace", "pid-pressure", "local-storage-limits")


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_newest_tick_is_the_engines(name: str, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    assert main(["scenario", "--sample", name, "-o", str(rec)]) == 0
    preview = newest(rec)
    engine = LiveEngine(rec)
    decided = engine.nodes()
    assert preview.nodes and set(preview.nodes) == set(decided)
    assert preview.last_tick == engine.last_tick
    for node, shown in preview.nodes.items():
        assert shown.catching_up == CATCHING_UP and shown.conditions == () and shown.next_to_go is None
        want = replace(decided[node], conditions=(), next_to_go=None, catching_up=CATCHING_UP)
        assert shown == want


def test_an_empty_recording_has_nothing_to_show(tmp_path: Path) -> None:
    from recordings import format as fmt
    from recordings.writer import RecordingWriter

    RecordingWriter(tmp_path / "rec", fmt.Manifest(source="recorder")).finalize()
    preview = newest(tmp_path / "rec")
    assert preview.nodes == {} and preview.last_tick is None
