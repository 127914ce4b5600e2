"""The recorder's own metrics for ``record --listen`` (``/metrics``), with the official client.

One :class:`RecorderMetrics` per recorder, on a registry of its own (never the process-wide
default: two recorders in one test process must not share series).  The recorder loop and the
flight recorder's incident code call its methods; the HTTP server thread only reads.  Names and
units follow Prometheus' naming conventions (``_total`` counters, ``_seconds``, ``_bytes``,
``_timestamp_seconds``), every name under ``evictlens_recorder_``.

Per-node failures carry a ``reason`` label normalised to a fixed set (:data:`FAILURE_REASONS`):
the raw error text names paths and addresses, and a label per distinct text would grow without
bound.  The window kept and the bytes on disk are read at scrape time (a callback and a walk of
the recording directory), on the server thread, never on the tick loop.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .. import format as fmt

PREFIX = "evictlens_recorder"
FAILURE_REASONS = (
    "timeout",
    "connection",
    "tls",
    "http_404",
    "http_429",
    "http_4xx",
    "http_5xx",
    "no_address",
    "unusable_summary",
    "other",
)
INCIDENT_KINDS = ("evicted", "oom_killed", "system_oom", "other")
# The reasons as the cluster spells them (Event reason, container termination reason) → the label.
_KIND_ALIASES = {"Evicted": "evicted", "OOMKilled": "oom_killed", "SystemOOM": "system_oom"}
# Ticks take from milliseconds (a few nodes) to most of an interval (hundreds of nodes at 1 s).
TICK_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_HTTP = re.compile(r"\bHTTP (\d{3})\b")


def failure_reason(error: str | None) -> str:
    """One of :data:`FAILURE_REASONS` for a node's gap text (``PollResult.error``, a tick's note)."""
    text = (error or "").strip()
    lower = text.lower()
    if lower.startswith("timeout") or "timeout" in lower.split(" for ")[0]:
        return "timeout"
    m = _HTTP.search(text)
    if m:
        code = int(m.group(1))
        if code in (404, 429):
            return f"http_{code}"
        return "http_5xx" if code >= 500 else "http_4xx"
    if lower.startswith("unusable summary") or "not a pod list" in lower or "invalid json" in lower:
        return "unusable_summary"
    if "no address" in lower:
        return "no_address"
    if any(w in lower for w in ("certificate", "ssl", "tls")):
        return "tls"
    if any(w in lower for w in ("connect", "reset", "refused", "readerror", "writeerror", "protocol", "closed")):
        return "connection"
    return "other"


@dataclass(frozen=True)
class Window:
    """What the recording directory holds now: its first and last tick (Unix seconds)."""

    first: float | None
    last: float | None


class _Scraped(Collector):
    """Series computed when scraped: bytes on disk and the window the recording keeps."""

    def __init__(self, root: Path, window: Callable[[], Window | None]) -> None:
        self.root = root
        self.window = window

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            f"{PREFIX}_disk_bytes", "Bytes the recording directory takes on disk.", value=fmt.dir_bytes(self.root)
        )
        w = self.window()
        if w is None or w.first is None or w.last is None:
            return
        yield GaugeMetricFamily(
            f"{PREFIX}_window_seconds",
            "Time between the first and the last tick the recording keeps.",
            value=max(0.0, w.last - w.first),
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_window_first_tick_timestamp_seconds", "Time of the oldest tick kept.", value=w.first
        )
        yield GaugeMetricFamily(
            f"{PREFIX}_window_last_tick_timestamp_seconds", "Time of the newest tick kept.", value=w.last
        )


class RecorderMetrics:
    """The recorder's counters and gauges, and the state ``/healthz`` and ``/readyz`` answer from."""

    def __init__(self, root: Path, *, window: Callable[[], Window | None] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.window_source: Callable[[], Window | None] = window or (lambda: None)
        self.ticks = Counter(f"{PREFIX}_ticks", "Ticks committed to the recording.", registry=r)
        self.node_failures = Counter(
            f"{PREFIX}_node_failures",
            "Node ticks recorded as gaps, by normalised reason.",
            ["reason"],
            registry=r,
        )
        for reason in FAILURE_REASONS:
            self.node_failures.labels(reason)
        self.tick_duration = Histogram(
            f"{PREFIX}_tick_duration_seconds",
            "Time from a tick's start to its commit (polls and write).",
            buckets=TICK_BUCKETS,
            registry=r,
        )
        self.tick_lag = Gauge(
            f"{PREFIX}_tick_lag_seconds", "How late the last tick started behind its schedule.", registry=r
        )
        self.late_ticks = Counter(
            f"{PREFIX}_late_ticks", "Tick slots skipped because the recorder was behind schedule.", registry=r
        )
        self.window_shrinks = Counter(
            f"{PREFIX}_window_shrinks",
            "Times the oldest data was dropped early because the volume ran out of space.",
            registry=r,
        )
        self.incidents = Counter(f"{PREFIX}_incidents", "Incidents explained, by kind.", ["kind"], registry=r)
        for kind in INCIDENT_KINDS:
            self.incidents.labels(kind)
        self.last_incident = Gauge(
            f"{PREFIX}_last_incident_timestamp_seconds",
            "Time of the last incident (0: none since the recorder started).",
            registry=r,
        )
        self.ready_gauge = Gauge(
            f"{PREFIX}_ready", "1 once a tick is committed and while the writer works, else 0.", registry=r
        )
        self.last_tick_gauge = Gauge(
            f"{PREFIX}_last_tick_timestamp_seconds", "Time the last tick was committed.", registry=r
        )
        r.register(_Scraped(root, lambda: self.window_source()))
        self._lock = threading.Lock()
        self._ready = False
        self._not_ready_reason = "no tick committed yet"
        self._heartbeat = time.monotonic()
        self._last_tick_end: float | None = None
        self._shrinks_seen = 0

    # -- called by the recorder loop ------------------------------------------------------
    def heartbeat(self) -> None:
        """The event loop is alive (called by a task every second)."""
        self._heartbeat = time.monotonic()

    def tick_finished(self, *, duration: float, lag: float, failures: Iterable[str | None]) -> None:
        """One tick committed: ``failures`` holds each gap's error text."""
        self.ticks.inc()
        self.tick_duration.observe(max(0.0, duration))
        self.tick_lag.set(max(0.0, lag))
        for error in failures:
            self.node_failures.labels(failure_reason(error)).inc()
        self.last_tick_gauge.set(time.time())
        with self._lock:
            self._last_tick_end = time.monotonic()
            self._ready, self._not_ready_reason = True, ""
        self.ready_gauge.set(1)

    def late(self, slots: int) -> None:
        if slots > 0:
            self.late_ticks.inc(slots)

    def window_shrunk(self, times: int = 1) -> None:
        """The volume filled up and the oldest data went before its time."""
        if times > 0:
            self.window_shrinks.inc(times)

    def window_shrinks_now(self, total: int) -> None:
        """The writer's own count of shrinks (``RecordingWriter.window_shrinks``): count what is new."""
        with self._lock:
            new, self._shrinks_seen = total - self._shrinks_seen, max(total, self._shrinks_seen)
        self.window_shrunk(new)

    def not_ready(self, reason: str) -> None:
        """The writer stopped or failed: ``/readyz`` answers 503 with ``reason``."""
        with self._lock:
            self._ready, self._not_ready_reason = False, reason
        self.ready_gauge.set(0)

    # -- called by the flight recorder (flight/) ------------------------------------------
    def incident(self, kind: str, at: float | None = None) -> None:
        """An incident of ``kind`` at ``at`` (Unix s): one of :data:`INCIDENT_KINDS` or the cluster's spelling
        (``Evicted``, ``OOMKilled``, ``SystemOOM``); anything else counts as ``other``."""
        kind = _KIND_ALIASES.get(kind, kind)
        self.incidents.labels(kind if kind in INCIDENT_KINDS else "other").inc()
        self.last_incident.set(time.time() if at is None else at)

    # -- read by the HTTP server thread ---------------------------------------------------
    def health(self, *, stale_after: float) -> tuple[bool, str]:
        """Alive: the loop beat within ``stale_after`` s and, once ticking, a tick ended within it."""
        now = time.monotonic()
        if now - self._heartbeat > stale_after:
            return False, f"the event loop has not run for {now - self._heartbeat:.0f}s"
        with self._lock:
            last = self._last_tick_end
        if last is not None and now - last > stale_after:
            return False, f"no tick for {now - last:.0f}s"
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        with self._lock:
            return self._ready, self._not_ready_reason or "ok"
