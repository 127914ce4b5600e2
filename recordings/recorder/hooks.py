"""What the recorder tells the layers above it after each committed tick (the flight recorder's seam).

``recordings`` never imports what composes it with the engine (``flight/``): instead :class:`~.main.Recorder`
takes ``hooks`` and calls each one after a tick is durable, with what that tick stored that somebody may want
explained at once — the real ``Evicted`` events (or pods whose status says ``Evicted``) and the kernel's kills
(``OOMKilled`` containers, ``SystemOOM`` Events; recordings/kernel.py), exactly the rows the writer journalled
with the tick (writer.py ``_note_eviction`` / ``_note_kernel``). A hook runs on the recorder's event loop: it
must hand any real work to a thread of its own and return at once, or the next tick is late.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..kernel import OOM_KILLED, SYSTEM_OOM
from ..writer import Tick

KILL_KINDS = (OOM_KILLED, SYSTEM_OOM)


@dataclass(frozen=True)
class StoredTick:
    """One committed tick and the ground truth it stored (rows as the tables hold them; times in µs)."""

    root: Path
    index: int
    time: int
    """The tick's start, µs since the epoch (UTC)."""
    evictions: tuple[Mapping[str, Any], ...]
    """``evictions`` rows (source ``event`` or ``pod``): each real eviction the tick stored."""
    kills: tuple[Mapping[str, Any], ...]
    """``kernel_events`` rows of kind ``OOMKilled`` or ``SystemOOM`` the tick stored (no ``NodeReady``)."""


class RecorderHooks(Protocol):
    """Called on the recorder's event loop; never blocks it (see the module docstring)."""

    def tick_stored(self, stored: StoredTick) -> None: ...

    def stopped(self) -> None:
        """The recorder has finalized (or given up): finish or hand off what is pending, briefly."""
        ...


def rows(tick: Tick, table: str) -> list[dict[str, Any]]:
    """The rows of one of ``tick``'s tables (after :meth:`RecordingWriter.commit`, which adds the objects seen
    since the last tick) as dicts."""
    cols = tick.tables.get(table) or {}
    names = list(cols)
    count = len(cols[names[0]]) if names else 0
    return [{name: cols[name][i] for name in names} for i in range(count)]


def stored_tick(root: Path, tick: Tick) -> StoredTick:
    kills = tuple(r for r in rows(tick, "kernel_events") if r.get("kind") in KILL_KINDS)
    return StoredTick(root, tick.index, tick.time, tuple(rows(tick, "evictions")), kills)


def call_hooks(hooks: Sequence[RecorderHooks], method: str, *args: Any) -> None:
    """Call ``method`` on every hook; a hook that fails says so in one line and the recording goes on."""
    for hook in hooks:
        try:
            getattr(hook, method)(*args)
        except Exception as exc:  # a hook's bug must never cost a tick
            print(f"evictlens record: {type(hook).__name__}.{method} failed: {exc}", file=sys.stderr)
