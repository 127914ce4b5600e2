"""``evictlens watch --listen ADDR``: the live view as Prometheus metrics, with the official client.

A custom collector on a registry of its own builds every series from the engine's latest state at each
scrape, so a node that goes away takes its series with it and the cardinality stays bounded: per node
and signal the observed value, per threshold its value and the seconds until it is met at the current
trend, one info series per node for the pod that would go first, one stale and one series per pressure
condition. Names follow the Prometheus conventions (``evictlens_live_`` prefix, base units in the name:
``_bytes`` for bytes, ``_seconds``; inode and PID counts have no unit suffix)::

    evictlens_live_signal_observed_bytes{node,signal}           memory/fs signals now (bytes)
    evictlens_live_signal_observed{node,signal}                 inodesFree, pid.available now (count)
    evictlens_live_threshold_bytes{node,signal,kind}            kind: hard | soft
    evictlens_live_threshold{node,signal,kind}                  count thresholds
    evictlens_live_seconds_to_threshold{node,signal,kind}       0: already met; absent: no trend / moving away
    evictlens_live_next_to_go_info{node,namespace,pod,uid,resource}   1
    evictlens_live_node_stale{node}                             1: the node did not answer (not healthy)
    evictlens_live_node_condition{node,condition}               1: MemoryPressure/DiskPressure/PIDPressure reported
    evictlens_live_last_tick_timestamp_seconds{node}            the node's latest decided tick's time (the tick's,
                                                                the same for every node of a tick, not the stats'
                                                                sample time the manager's clock follows)
    evictlens_live_events_total{node,kind}                      watch's JSON lines by kind

The scrape runs on the server's thread; it reads a snapshot the watch loop swaps in after each poll.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
)
from prometheus_client.registry import Collector

from kube.errors import InputError
from kube.signals import (
    IMAGEFS_INODES_FREE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    PRESSURE_CONDITIONS,
)

from .model import LiveEvent, NodeNow

PREFIX = "evictlens_live"
COUNT_SIGNALS = frozenset({NODEFS_INODES_FREE, IMAGEFS_INODES_FREE, "containerfs.inodesFree", PID_AVAILABLE})
"""Signals measured in a count (inodes, processes); every other signal is bytes."""


def _unit(signal: str) -> str:
    return "" if signal in COUNT_SIGNALS else "_bytes"


class LiveCollector(Collector):
    """The series of the latest state; :meth:`update` after each poll, :meth:`collect` at each scrape."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: Mapping[str, NodeNow] = {}
        self._events: dict[tuple[str, str], int] = {}

    def update(self, nodes: Mapping[str, NodeNow], events: Sequence[LiveEvent] = ()) -> None:
        counts = dict(self._events)
        for e in events:
            counts[(e.node, e.kind)] = counts.get((e.node, e.kind), 0) + 1
        with self._lock:
            self._nodes, self._events = dict(nodes), counts

    def collect(self) -> Iterable[Any]:
        with self._lock:
            nodes, events = self._nodes, self._events
        observed = {
            u: GaugeMetricFamily(
                f"{PREFIX}_signal_observed{u}",
                f"Eviction signal observed at the node's latest tick ({'bytes' if u else 'count'})",
                labels=["node", "signal"],
            )
            for u in ("_bytes", "")
        }
        threshold = {
            u: GaugeMetricFamily(
                f"{PREFIX}_threshold{u}",
                f"Eviction threshold resolved on the node ({'bytes' if u else 'count'}); kind hard or soft",
                labels=["node", "signal", "kind"],
            )
            for u in ("_bytes", "")
        }
        seconds = GaugeMetricFamily(
            f"{PREFIX}_seconds_to_threshold",
            "Seconds until the threshold is met at the current trend (0: already met; absent: no trend or moving away)",
            labels=["node", "signal", "kind"],
        )
        victim = InfoMetricFamily(
            f"{PREFIX}_next_to_go",
            "The pod the eviction manager would evict first now (ranking on the current usage)",
            labels=["node"],
        )
        stale = GaugeMetricFamily(
            f"{PREFIX}_node_stale",
            "1 when the node did not answer at its latest tick",
            labels=["node"],
        )
        condition = GaugeMetricFamily(
            f"{PREFIX}_node_condition",
            "1 when the eviction manager reports this pressure condition on the node",
            labels=["node", "condition"],
        )
        last = GaugeMetricFamily(
            f"{PREFIX}_last_tick_timestamp_seconds",
            "Time of the node's latest decided tick (the recording's time)",
            labels=["node"],
        )
        counted = CounterMetricFamily(
            f"{PREFIX}_events",
            "Changes watch reported (its JSON lines), by kind",
            labels=["node", "kind"],
        )
        for name in sorted(nodes):
            now = nodes[name]
            for signal, value in sorted(now.signals.items()):
                observed[_unit(signal)].add_metric([name, signal], float(value))
            for f in now.forecasts:
                threshold[_unit(f.signal)].add_metric([name, f.signal, f.threshold_kind], float(f.threshold))
                if f.seconds_to_threshold is not None:
                    seconds.add_metric(
                        [name, f.signal, f.threshold_kind],
                        float(f.seconds_to_threshold),
                    )
            ntg = now.next_to_go
            if ntg is not None:
                victim.add_metric(
                    [name],
                    {
                        "namespace": ntg.namespace,
                        "pod": ntg.pod,
                        "uid": ntg.uid,
                        "resource": ntg.resource,
                    },
                )
            stale.add_metric([name], 1.0 if now.stale else 0.0)
            for cond in PRESSURE_CONDITIONS:
                condition.add_metric([name, cond], 1.0 if cond in now.conditions else 0.0)
            last.add_metric([name], (now.time_us if now.tick_time_us is None else now.tick_time_us) / 1e6)
        for (node, kind), n in sorted(events.items()):
            counted.add_metric([node, kind], float(n))
        yield from (
            *observed.values(),
            *threshold.values(),
            seconds,
            victim,
            stale,
            condition,
            last,
            counted,
        )


class MetricsServer:
    """``/metrics`` on ADDR (``:9100``, ``127.0.0.1:0``, ``[::1]:9100``), served by prometheus_client's own
    server on a daemon thread from a registry holding only :class:`LiveCollector`."""

    def __init__(self, addr: str, collector: LiveCollector) -> None:
        from prometheus_client import start_http_server

        from recordings.recorder.health import parse_listen

        host, port = parse_listen(addr)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        try:
            self._server, self._thread = start_http_server(port, host or "0.0.0.0", registry=self.registry)
        except OSError as exc:
            raise InputError(f"cannot listen on {addr}: {exc.strerror or exc}", field="--listen") from None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
