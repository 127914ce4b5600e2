"""A scripted stand-in for ``live.engine.LiveEngine`` (the interface in live/model.py): the test pushes what the
next poll finds, the live view polls it as it polls the real engine."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from live.model import Forecast, LiveEvent, NextToGo, NodeNow
from tui.live_source import LiveSource

T0 = 1_735_689_600_000_000  # 2025-01-01T00:00:00Z in µs
MI = 1 << 20


class FakeEngine:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeNow] = {}
        self._pending: list[LiveEvent] = []
        self._last: int | None = None
        self.polls = 0

    def push(self, nodes: Sequence[NodeNow], events: Sequence[LiveEvent] = ()) -> None:
        with self._lock:
            for n in nodes:
                self._nodes[n.node] = n
                self._last = max(self._last or 0, n.time_us)
            self._pending += events

    def poll(self) -> list[LiveEvent]:
        with self._lock:
            self.polls += 1
            out, self._pending = self._pending, []
            return out

    def nodes(self) -> Mapping[str, NodeNow]:
        with self._lock:
            return dict(self._nodes)

    @property
    def last_tick_time_us(self) -> int | None:
        return self._last


def node(
    tick: int,
    available: int,
    *,
    name: str = "worker-1",
    conditions: tuple[str, ...] = (),
    seconds: float | None = None,
    stale: bool = False,
) -> NodeNow:
    """A memory-only node at ``tick`` (10 s apart) with a 500Mi hard threshold and java next to go."""
    time_us = T0 + tick * 10_000_000
    forecast = Forecast(
        name,
        "memory.available",
        available,
        500 * MI,
        "hard",
        seconds,
        None if seconds is None else -1.0 * MI,
        "Theil–Sen slope over the last 300 s (30 samples)",
        None if seconds is not None else "no trend (flat)",
    )
    nxt = NextToGo(
        name,
        "default",
        "java",
        "uid-java",
        "memory",
        MESSAGE,
        "over its request by the most",
        f"ranking on the current usage at tick {tick}",
    )
    return NodeNow(
        name,
        tick,
        time_us,
        stale,
        "no answer for 30 s" if stale else None,
        "v1.33.0",
        {"memory.available": available},
        {"memory.available": (500 * MI,)},
        conditions,
        nxt,
        (forecast,),
    )


MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 500Mi, available: 480Mi. "
    "Container java was using 3Gi, request is 1Gi, has larger consumption of memory. "
)


def event(kind: str, tick: int, **details: object) -> LiveEvent:
    return LiveEvent(kind, details.pop("node", "worker-1"), T0 + tick * 10_000_000, details)  # type: ignore[arg-type]


def source(root: Path, label: str = "a fake recording") -> LiveSource:
    """A source whose directory exists (the view starts its engine at once), polled 20 times a second."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_bytes(orjson.dumps({"options": {"interval": "1s"}}))
    return LiveSource(root, label, interval_seconds=0.2)
