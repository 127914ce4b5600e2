"""``evictlens watch``'s loop: follow a source's growing recording with the engine, print the changes, serve them.

One asyncio loop in the main thread: a cluster's recorder (``record``'s own, live/sources.py) runs on it as a
task, the engine's poll runs on a worker thread (``asyncio.to_thread``) so a slow poll never holds up a tick,
and the metrics server has a thread of its own. After each poll the changes go out as JSON lines
(live/jsonl.py) and the node states into the metrics' snapshot (live/metrics.py). When the source has
finished (the sample played to its end, the followed writer let go of its lock, the recorder stopped) one
last poll reads what it wrote last, then the watch ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Protocol

from recordings import format as fmt

from .jsonl import dumps, event_json
from .metrics import LiveCollector
from .model import LiveEvent, NodeNow
from .sources import Source

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Engine(Protocol):
    def poll(self) -> list[LiveEvent]: ...
    def nodes(self) -> Mapping[str, NodeNow]: ...


EngineFactory = Callable[[Path, float], Engine]


def live_engine(root: Path, warn_seconds: float) -> Engine:
    from .engine import LiveEngine

    return LiveEngine(root, warn_seconds=warn_seconds)


@dataclass(frozen=True)
class WatchOptions:
    warn_seconds: float = 600.0
    poll_seconds: float = 0.25
    """How often the engine looks for new ticks (cheap when there is none)."""
    announce: bool = False
    """Say on stderr where the watch starts (``REC --follow``: the ticks already written are its starting state)."""


@dataclass
class WatchCounts:
    polls: int = 0
    lines: int = 0


async def watch(
    source: Source,
    opts: WatchOptions,
    out: BinaryIO,
    *,
    collector: LiveCollector | None = None,
    engine_factory: EngineFactory = live_engine,
    stop: asyncio.Event | None = None,
) -> WatchCounts:
    """Follow ``source`` until it has finished (or ``stop``); every change is one line on ``out``."""
    stop = stop or asyncio.Event()
    counts = WatchCounts()
    changes = Changes()
    engine: Engine | None = None
    while True:
        finished = source.finished()  # looked at before the poll: the last poll then sees the last tick
        if engine is None and (source.root / fmt.MANIFEST).exists():
            engine = await asyncio.to_thread(engine_factory, source.root, opts.warn_seconds)
            after = getattr(engine, "last_tick", None)
            source.following(after)
            if opts.announce:
                start = "its start" if after is None else f"tick {after}"
                print(f"evictlens watch: following {source.root} after {start}", file=sys.stderr, flush=True)
        if engine is not None:
            events = changes.keep(await asyncio.to_thread(engine.poll))
            counts.polls += 1
            nodes = engine.nodes()
            for event in events:
                out.write(dumps(event_json(event)))
                counts.lines += 1
            if events:
                out.flush()
            if collector is not None:
                collector.update(nodes, events)
        if finished or stop.is_set():
            return counts
        await _pause(engine, stop, opts.poll_seconds)


async def _pause(engine: Engine | None, stop: asyncio.Event, seconds: float) -> None:
    """Until the next poll: ``seconds``, or less when the writer appends a frame (the engine's ``wait``,
    live/wake.py) or the watch is stopped."""
    wait = getattr(engine, "wait", None)
    if wait is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=seconds)
        return
    woken = asyncio.ensure_future(asyncio.to_thread(wait, seconds))
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({woken, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if not woken.done():
        getattr(engine, "interrupt", lambda: None)()
        await woken
    stopped.cancel()


class Changes:
    """The engine's events that are changes for watch: ``next-to-go`` only when the pod (or the resource it is
    ranked for) changes, not each time its would-be message (which quotes the usage now) does."""

    def __init__(self) -> None:
        self._first: dict[str, tuple[object, object] | None] = {}
        self._conditions: dict[str, tuple[str, ...]] = {}

    def keep(self, events: list[LiveEvent]) -> list[LiveEvent]:
        """In time order (a poll that reads ticks already folded into a part gets its ground truth first)."""
        out = []
        for e in sorted(events, key=lambda e: e.time_us):
            if e.kind == "next-to-go":
                key = (e.details.get("uid"), e.details.get("resource")) if e.details.get("uid") else None
                if e.node in self._first and self._first[e.node] == key:
                    continue
                self._first[e.node] = key
            elif e.kind in (
                "pressure-start",
                "pressure-end",
            ):  # the node's conditions after the change, said
                cond, had = (
                    str(e.details.get("condition")),
                    self._conditions.get(e.node, ()),
                )
                now = (*had, cond) if e.kind == "pressure-start" else tuple(c for c in had if c != cond)
                self._conditions[e.node] = now = tuple(sorted(set(now)))
                e = replace(e, details={**e.details, "conditions": list(now)})
            out.append(e)
        return out


def install_stop(stop: asyncio.Event, sources: list[Source]) -> None:
    """Ctrl-C, SIGTERM, SIGHUP: stop following and stop the source started by then (a cluster's recorder puts its
    own handlers in place and finalizes)."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        stop.set()
        for source in sources:
            source.stop()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal)
