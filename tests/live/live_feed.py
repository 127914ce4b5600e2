"""Feeding a finished recording into a new one tick by tick through the real writer, as a recorder would.

Each tick's rows (summaries, gaps, and the objects, evictions and kernel events observed before the next
tick) are put in the writer's tick and committed as one journal frame; ``on_commit`` runs after each
commit (a live engine polls there). ``fold_every`` makes the writer fold into parts more often.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from live.tail import Frame, recorded_frames
from recordings import format as fmt
from recordings.reader import open_recording
from recordings.writer import RecordingWriter

LOOSE = ("objects", "evictions", "kernel_events")


def _loose_rows(frame: Frame) -> Iterator[tuple[int, str, dict[str, Any]]]:
    for name in LOOSE:
        for row in frame.rows(name):
            yield row["observed"], name, row


def feed(
    src: Path,
    dst: Path,
    on_commit: Callable[[int], None] | None = None,
    *,
    on_open: Callable[[], None] | None = None,
    fold_every: int | None = None,
    finalize: bool = True,
) -> RecordingWriter:
    """Write ``src`` into ``dst`` tick by tick; returns the writer (closed when ``finalize``)."""
    rec = open_recording(src)
    frames = recorded_frames(rec)
    first = next(frames, None)
    loose: list[tuple[int, str, dict[str, Any]]] = []
    ticks: list[Frame] = []
    if first is not None:
        if first.tick is None:
            loose = sorted(_loose_rows(first), key=lambda r: r[0])
        else:
            ticks.append(first)
    writer = RecordingWriter(dst, fmt.Manifest(source="recorder", options={"interval": "10s"}))
    if fold_every is not None:
        writer.fold_every = fold_every
    if on_open is not None:
        on_open()
    i = 0
    pending = iter([*ticks, *frames])
    current = next(pending, None)
    while current is not None:
        following = next(pending, None)
        assert current.tick is not None
        writer.next_tick = current.tick
        tick = writer.begin_tick(at=current.time)
        for name in current.tables:
            for col, values in current.columns(name).items():
                tick.tables[name][col].extend(values)
        while i < len(loose) and (following is None or loose[i][0] < following.time):
            _at, name, row = loose[i]
            for col, value in row.items():
                tick.tables[name][col].append(value)
            i += 1
        writer.commit(tick)
        if on_commit is not None:
            on_commit(current.tick)
        current = following
    if finalize:
        writer.finalize()
    return writer
