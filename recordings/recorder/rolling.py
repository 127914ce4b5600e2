"""``record --retain``: the rolling window's settings, and what a restarted recorder does first.

A Deployment restarts its pod with the same arguments (after SIGTERM, SIGKILL, its own OOM kill), so
with ``--retain`` a directory that already holds a recording is resumed, never refused: the writer
adopts the journal (cutting off a torn tail), continues the tick numbers, and the recorder marks the
time nobody recorded as one gap tick (FORMAT.md §3.3). The writer's lock keeps a second recorder out.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from ..writer import FOLD_EVERY_TICKS, RecordingWriter

PARTS_PER_WINDOW = 4
"""A part holds at most a quarter of the window: what is kept is at most 1¼ windows plus the journal."""


def fold_every(retain: float, interval: float) -> int:
    """Ticks per part under ``--retain``: whole parts leave the window, so parts are kept small against it."""
    return max(1, min(FOLD_EVERY_TICKS, int(retain / interval) // PARTS_PER_WINDOW))


def configure(writer: RecordingWriter, retain: float | None, interval: float) -> None:
    if retain is not None:
        writer.fold_every = fold_every(retain, interval)


def resume(writer: RecordingWriter, nodes: Iterable[str], interval: float, *, listed: Iterable[str]) -> None:
    """After a resumed recorder's first lists: objects no longer listed are marked deleted, and the time
    no recorder ran becomes one gap tick. ``listed``: the kinds whose first complete list came in."""
    if not writer.resumed:
        return
    gone = writer.forget_unseen(tuple(listed))
    last = writer.last_tick
    marked = writer.mark_restart(sorted(nodes), interval)
    what = f"resumed the recording after tick {last}" if last is not None else "resumed the recording"
    if marked:
        what += f"; the time no recorder ran is gap tick {writer.last_tick}"
    if gone:
        what += f"; {gone} objects gone meanwhile marked deleted"
    print(f"evictlens record: {what}", file=sys.stderr, flush=True)
