"""A poll's events come in time order and a real eviction is flagged against what was decided before it, however
the frames arrive: one at a time, or all at once from the parts of a writer that finalized before the first
poll (the reader then reads every tick and every real eviction in one go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from live_feed import feed

from live.engine import LiveEngine
from live.model import LiveEvent
from recordings import format as fmt
from replay.cli import main


@pytest.fixture(scope="module")
def qos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("qos") / "rec"
    assert main(["scenario", "--sample", "qos-contest", "-o", str(where)]) == 0
    return where


def _flags(events: list[LiveEvent]) -> list[tuple[Any, ...]]:
    return sorted(
        (e.node, e.details["uid"], e.time_us, e.details["predicted"], e.details.get("message_matches"))
        for e in events
        if e.kind in ("real-eviction", "kernel-kill")
    )


def _polled_each_tick(src: Path, dst: Path) -> list[LiveEvent]:
    engines: list[LiveEngine] = []
    events: list[LiveEvent] = []
    feed(src, dst, lambda _t: events.extend(engines[0].poll()), on_open=lambda: engines.append(LiveEngine(dst)))
    return events


@pytest.mark.parametrize("fold_every", [1000, 4])
def test_a_writer_that_finalized_before_the_first_poll(qos: Path, tmp_path: Path, fold_every: int) -> None:
    each = _polled_each_tick(qos, tmp_path / "each")
    assert any(e.kind == "real-eviction" and e.details["predicted"] for e in each)
    engines: list[LiveEngine] = []

    def opened_after_the_first_tick(tick: int) -> None:
        if not engines:
            engines.append(LiveEngine(tmp_path / "late"))

    feed(qos, tmp_path / "late", opened_after_the_first_tick, fold_every=fold_every)  # finalized: all in parts
    assert not fmt.list_segments(tmp_path / "late")
    events = engines[0].poll()
    times = [e.time_us for e in events]
    assert times == sorted(times)
    assert _flags(events) == _flags(each)
    kinds = {"predicted-eviction", "pressure-start", "pressure-end"}
    assert sorted((e.kind, e.node, e.time_us) for e in events if e.kind in kinds) == sorted(
        (e.kind, e.node, e.time_us) for e in each if e.kind in kinds
    )
