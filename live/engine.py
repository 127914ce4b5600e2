"""The live engine: each node's eviction manager carried forward as a recording being written grows.

Start-up reads the recording once (parts + journal) and carries every node's manager to its last tick;
then :meth:`LiveEngine.poll` reads the frames finished since the last poll (live/tail.py), steps each
node's manager on its new tick (replay/incremental.py: NodeStepper, the replay's own rules) and says what
changed as :class:`~live.model.LiveEvent` s. :meth:`LiveEngine.nodes` is the state now: signals against
thresholds, conditions, the pod that would go first and the forecast (live/forecast.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from kube.signals import PRESSURE_CONDITIONS
from live.forecast import SignalHistory, seconds_to
from live.model import Forecast, LiveEvent, NextToGo, NodeNow
from live.tail import Frame, JournalTail, recorded_frames
from recordings.kernel import NODE_READY, SYSTEM_OOM, row_key
from recordings.pod_timeline import PodVersion
from recordings.reader import ADMISSION_REJECTION_PREFIX, open_recording
from recordings.schema import SERIES
from recordings.summary_codec import decode
from replay.fast.loop import to_datetime, to_us
from replay.incremental import NodeStepper, Pass, first_to_go
from replay.kubelet.thresholds import Threshold, get_threshold_quantity
from replay.settings import SettingsRequest
from replay.textdiff import inline_diff

__all__ = ["LiveEngine"]


class _NodeLive:
    """What the engine keeps per node between ticks."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stepper: NodeStepper | None = None
        self.versions: list[PodVersion] = []
        """Pod versions seen before the node's first tick with data (handed to its stepper then)."""
        self.history: dict[str, SignalHistory] = {}
        self.now: NodeNow | None = None
        self.conditions: tuple[str, ...] = ()
        self.next_key: tuple[str, str, str] | None = None
        self.warned: set[tuple[str, str, int]] = set()
        self.predicted: dict[str, tuple[int, str, int]] = {}
        """Pod UID → (time µs, message, tick) of the eviction this engine decided."""
        self.next_message: dict[str, str] = {}
        """Pod UID → the message it would get, when it last sat first (to flag a kill or an eviction)."""
        self.stale = False


class LiveEngine:
    """A recording being written, decided tick by tick (see the module docstring)."""

    def __init__(
        self, root: Path | str, *, warn_seconds: float = 600.0, settings: SettingsRequest | None = None
    ) -> None:
        self.root = Path(root)
        self.warn_seconds = warn_seconds
        self.request = settings or SettingsRequest()
        self._nodes: dict[str, _NodeLive] = {}
        self._node_objects: dict[str, dict[str, Any] | None] = {}
        self._configz: dict[str, dict[str, Any] | None] = {}
        self._pod_node: dict[str, str] = {}
        self._seq = 0
        self._seen_evictions: set[str] = set()
        self._seen_kernel: set[tuple[Any, ...]] = set()
        self._oom_counts: dict[Any, int] = {}
        self._last_tick_time: int | None = None
        self.last_tick: int | None = None
        self.notes: list[str] = []
        rec = open_recording(self.root)
        self.notes.extend(rec.notes)
        observed: int | None = None
        for frame in recorded_frames(rec):
            self._apply(frame, quiet=True)
            for o in frame.tables.get("objects", {}).get("observed", []):
                observed = o if observed is None else max(observed, o)
        self._tail = JournalTail(self.root, after_tick=self.last_tick, after_observed=observed)

    # -- the interface ----------------------------------------------------------------------------
    def poll(self) -> list[LiveEvent]:
        """Read the ticks finished since the last poll, carry each node's state forward, say what changed."""
        events: list[LiveEvent] = []
        for frame in self._tail.read():
            events.extend(self._apply(frame, quiet=False))
        return events

    def nodes(self) -> Mapping[str, NodeNow]:
        return {name: n.now for name, n in sorted(self._nodes.items()) if n.now is not None}

    @property
    def last_tick_time_us(self) -> int | None:
        return self._last_tick_time

    # -- one frame ---------------------------------------------------------------------------------
    def _apply(self, frame: Frame, *, quiet: bool) -> list[LiveEvent]:
        events: list[LiveEvent] = []
        self._objects(frame.rows("objects"))
        events.extend(self._evictions(frame.rows("evictions")))
        events.extend(self._kernel(frame.rows("kernel_events")))
        if frame.tick is not None:
            events.extend(self._tick(frame))
            self.last_tick = frame.tick
            self._last_tick_time = frame.time
        return [] if quiet else events

    def _node(self, name: str) -> _NodeLive:
        found = self._nodes.get(name)
        if found is None:
            found = self._nodes[name] = _NodeLive(name)
        return found

    def _objects(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            kind = row["kind"]
            if kind == "pod":
                key = row["uid"] or f"{row['namespace']}/{row['name']}"
                node = row["node"]
                if node is not None:
                    self._pod_node[key] = node
                elif row["deleted"]:
                    node = self._pod_node.get(key)
                if node is None:  # pending (unbound): recordings.pod_timeline.index_pods_by_node leaves it out
                    continue
                version = PodVersion(to_datetime(row["observed"]), key, self._seq, row["body"], bool(row["deleted"]))
                self._seq += 1
                live = self._node(node)
                if live.stepper is not None:
                    live.stepper.add_pod_version(version)
                else:
                    live.versions.append(version)
            elif kind == "node" and row["name"]:
                self._node_objects[row["name"]] = None if row["deleted"] else orjson.loads(row["body"])
            elif kind == "configz" and row["node"]:
                self._configz[row["node"]] = None if row["deleted"] else orjson.loads(row["body"])

    def _tick(self, frame: Frame) -> list[LiveEvent]:
        events: list[LiveEvent] = []
        series: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for table in SERIES:
            for row in frame.rows(table.name):
                series.setdefault(row["node"], {}).setdefault(table.name, []).append(row)
        for row in frame.rows("ticks"):
            name = row["node"]
            live = self._node(name)
            if not row["ok"]:
                events.extend(self._gap(live, frame, row["error"] or "no data"))
                continue
            rows = series.get(name, {})
            node_rows = rows.get(SERIES[0].name)
            if not node_rows:
                events.extend(self._gap(live, frame, "no node stats in this tick"))
                continue
            summary = decode(node_rows[0], *(rows.get(t.name, []) for t in SERIES[1:]))
            if live.stepper is None:
                live.stepper = NodeStepper.start(
                    name,
                    self.request,
                    self._node_objects.get(name),
                    self._configz.get(name),
                    (v.decode() for v in live.versions if not v.deleted),
                )
                for v in live.versions:
                    live.stepper.add_pod_version(v)
                live.versions = []
            p = live.stepper.step(frame.tick or 0, to_datetime(row["time"]), summary)
            events.extend(self._after_pass(live, p))
        return events

    def _gap(self, live: _NodeLive, frame: Frame, error: str) -> list[LiveEvent]:
        if live.now is not None:
            live.now = replace(live.now, stale=True, stale_reason=error)
        if live.stale:
            return []
        live.stale = True
        return [LiveEvent("stale", live.name, frame.time, {"tick": frame.tick, "reason": error})]

    # -- after a pass: the state now, and what changed ---------------------------------------------
    def _after_pass(self, live: _NodeLive, p: Pass) -> list[LiveEvent]:
        stepper = live.stepper
        assert stepper is not None and stepper.manager is not None
        manager, result = stepper.manager, p.result
        now_us = to_us(p.time)
        events: list[LiveEvent] = []
        if live.stale:
            live.stale = False
            events.append(LiveEvent("fresh", live.name, now_us, {"tick": p.tick}))
        signals: dict[str, int] = {}
        capacities: dict[str, int | None] = {}
        for signal, obs in result.observations.items():
            if obs.available is not None:
                signals[signal] = obs.available.int_value()
                capacities[signal] = obs.capacity.int_value() if obs.capacity is not None else None
                live.history.setdefault(signal, SignalHistory()).add(now_us, signals[signal])
        thresholds: dict[str, list[int]] = {}
        forecasts: list[Forecast] = []
        resolved: list[tuple[Threshold, int]] = []
        for threshold in manager.thresholds:
            seen = result.observations.get(threshold.signal)
            if seen is None or threshold.signal not in signals:
                continue
            value = get_threshold_quantity(threshold.value, seen.capacity).int_value()
            thresholds.setdefault(threshold.signal, []).append(value)
            resolved.append((threshold, value))
            trend = live.history[threshold.signal].trend(capacities[threshold.signal])
            seconds, note = seconds_to(signals[threshold.signal], value, trend)
            forecasts.append(
                Forecast(
                    live.name,
                    threshold.signal,
                    signals[threshold.signal],
                    value,
                    "hard" if threshold.is_hard else "soft",
                    seconds,
                    trend.slope_per_second,
                    trend.method,
                    note,
                )
            )
        target = _target(result.threshold_to_reclaim, resolved, forecasts, signals, capacities)
        next_to_go = None
        if target is not None:
            found = first_to_go(stepper, target)
            if found is not None:
                pod = found.pod
                next_to_go = NextToGo(
                    live.name,
                    pod.namespace,
                    pod.name,
                    pod.uid,
                    found.resource,
                    found.message,
                    f"first in the kubelet's ranking for {target.signal}"
                    + (
                        f" (critical pods ahead of it skipped: {', '.join(found.skipped_critical)})"
                        if found.skipped_critical
                        else ""
                    ),
                    f"ranking on the current usage at tick {p.tick}, were {target.signal}'s threshold reclaimed now",
                )
                live.next_message[pod.uid] = found.message
        conditions = tuple(c for c in PRESSURE_CONDITIONS if c in result.node_conditions) + tuple(
            c for c in result.node_conditions if c not in PRESSURE_CONDITIONS
        )
        live.now = NodeNow(
            live.name,
            p.tick,
            now_us,
            False,
            None,
            stepper.settings.profile.version,
            signals,
            {k: tuple(v) for k, v in thresholds.items()},
            conditions,
            next_to_go,
            tuple(forecasts),
        )
        # what changed
        for c in conditions:
            if c not in live.conditions:
                events.append(LiveEvent("pressure-start", live.name, now_us, {"condition": c, "tick": p.tick}))
        for c in live.conditions:
            if c not in conditions:
                events.append(LiveEvent("pressure-end", live.name, now_us, {"condition": c, "tick": p.tick}))
        live.conditions = conditions
        key = None if next_to_go is None else (next_to_go.uid, next_to_go.resource, next_to_go.message)
        if key != live.next_key:
            live.next_key = key
            events.append(
                LiveEvent(
                    "next-to-go",
                    live.name,
                    now_us,
                    {"tick": p.tick, **({} if next_to_go is None else _ntg(next_to_go))},
                )
            )
        for f in forecasts:
            fkey = (f.signal, f.threshold_kind, f.threshold)
            warn = f.seconds_to_threshold is not None and f.seconds_to_threshold < self.warn_seconds
            if warn and fkey not in live.warned:
                live.warned.add(fkey)
                events.append(
                    LiveEvent(
                        "warning",
                        live.name,
                        now_us,
                        {
                            "tick": p.tick,
                            "signal": f.signal,
                            "threshold": f.threshold,
                            "threshold_kind": f.threshold_kind,
                            "observed": f.observed,
                            "seconds_to_threshold": f.seconds_to_threshold,
                            "slope_per_second": f.slope_per_second,
                            "method": f.method,
                            **({} if next_to_go is None else {"next_to_go": _ntg(next_to_go)}),
                        },
                    )
                )
            elif not warn:
                live.warned.discard(fkey)
        for eviction in result.evictions:
            pod = eviction.pod
            live.predicted[pod.uid] = (now_us, eviction.message, p.tick)
            events.append(
                LiveEvent(
                    "predicted-eviction",
                    live.name,
                    now_us,
                    {
                        "tick": p.tick,
                        "namespace": pod.namespace,
                        "pod": pod.name,
                        "uid": pod.uid,
                        "message": eviction.message,
                        "signal": eviction.cause,
                        "grace_period_seconds": eviction.grace_period_override,
                    },
                )
            )
        return events

    # -- ground truth -------------------------------------------------------------------------------
    def _evictions(self, rows: Iterable[dict[str, Any]]) -> list[LiveEvent]:
        events = []
        for row in rows:
            message = row.get("message") or ""
            if message.startswith(ADMISSION_REJECTION_PREFIX):
                continue
            key = row.get("uid") or f"{row.get('namespace')}/{row.get('name')}"
            if key in self._seen_evictions:
                continue
            self._seen_evictions.add(key)
            node = row.get("node") or self._pod_node.get(key) or ""
            at = row.get("time") or row["observed"]
            details = {
                "namespace": row.get("namespace"),
                "pod": row.get("name"),
                "uid": row.get("uid"),
                "message": message,
                "source": row.get("source"),
                **self._against_prediction(node, row.get("uid"), message),
            }
            events.append(LiveEvent("real-eviction", node, int(at), details))
        return events

    def _kernel(self, rows: Iterable[dict[str, Any]]) -> list[LiveEvent]:
        events = []
        for row in rows:
            if row["kind"] == NODE_READY:
                continue
            key = row_key(row)
            if key in self._seen_kernel:
                continue
            self._seen_kernel.add(key)
            if row["kind"] == SYSTEM_OOM:
                event = row["uid"] or row["message"]
                before = self._oom_counts.get(event, 0)
                count = row["count"] or 1
                if count <= before:
                    continue
                self._oom_counts[event] = count
            node = row.get("node") or ""
            at = row.get("time") or row["observed"]
            details: dict[str, object] = {
                "kind": row["kind"],
                "namespace": row.get("namespace"),
                "pod": row.get("name"),
                "uid": row.get("uid"),
                "container": row.get("container"),
                "reason": row.get("reason"),
                "message": row.get("message"),
            }
            if row["kind"] != SYSTEM_OOM:
                details.update(self._against_prediction(node, row.get("uid"), None))
            events.append(LiveEvent("kernel-kill", node, int(at), details))
        return events

    def _against_prediction(self, node: str, uid: str | None, message: str | None) -> dict[str, object]:
        """How a real eviction or kill compares with what this engine said: its own eviction of the pod, else the
        message the pod would have got when it last sat first; the exact difference ([-predicted-]{+real+})."""
        live = self._nodes.get(node)
        if live is None or not uid:
            return {"predicted": False}
        if uid in live.predicted:
            at, predicted, tick = live.predicted[uid]
            out: dict[str, object] = {"predicted": True, "predicted_time_us": at, "predicted_tick": tick}
            out["predicted_message"] = predicted
        elif uid in live.next_message:
            predicted = live.next_message[uid]
            out = {"predicted": False, "was_next_to_go": True, "predicted_message": predicted}
        else:
            return {"predicted": False}
        if message is not None:
            out["message_matches"] = predicted == message
            out["message_diff"] = "" if predicted == message else inline_diff(predicted, message)
        return out


def _ntg(n: NextToGo) -> dict[str, object]:
    return {
        "namespace": n.namespace,
        "pod": n.pod,
        "uid": n.uid,
        "resource": n.resource,
        "message": n.message,
        "reason": n.reason,
        "basis": n.basis,
    }


def _target(
    reclaiming: Threshold | None,
    resolved: list[tuple[Threshold, int]],
    forecasts: list[Forecast],
    signals: Mapping[str, int],
    capacities: Mapping[str, int | None],
) -> Threshold | None:
    """The threshold the next-to-go ranking is for: the one the manager reclaims now; else the one the forecast
    reaches first; else the one with the least headroom (a share of its signal's capacity)."""
    if reclaiming is not None:
        return reclaiming
    if not resolved:
        return None
    timed = [(f.seconds_to_threshold, i) for i, f in enumerate(forecasts) if f.seconds_to_threshold is not None]
    if timed:
        return resolved[min(timed)[1]][0]

    def headroom(item: tuple[Threshold, int]) -> float:
        threshold, value = item
        cap = capacities.get(threshold.signal) or max(abs(signals[threshold.signal]), 1)
        return (signals[threshold.signal] - value) / cap

    return min(resolved, key=headroom)[0]
