"""The live engine: each node's eviction manager carried forward as a recording being written grows.

Start-up reads the recording once (parts + journal; a snapshot when its writer is live): every node's
manager is carried to a little before the last tick on the fast path (replay/incremental.py: resume_nodes)
and the last :data:`HISTORY_TICKS` ticks are stepped as live ones (quietly), so the forecast has its window.
Then :meth:`LiveEngine.poll` reads the frames finished since the last poll (live/tail.py), steps each node's
manager on its new ticks (replay/incremental.py: NodeStepper, the replay's own decisions) and says what
changed as :class:`~live.model.LiveEvent` s. :meth:`LiveEngine.nodes` is the state now: signals against
thresholds, conditions, the pod that would go first and the forecast (live/forecast.py).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from kube.signals import PRESSURE_CONDITIONS
from live.forecast import SignalHistory, seconds_to
from live.model import Forecast, LiveEvent, NextToGo, NodeNow
from live.tail import Frame, JournalTail, recorded_frames
from live.truth import GroundTruth, Said
from live.wake import JournalWake
from recordings.pod_timeline import PodVersion, index_pods_by_node
from recordings.reader import Recording, open_recording
from recordings.schema import SERIES
from replay.fast.loop import to_datetime, to_us
from replay.incremental import Decided, NodeStepper, first_to_go
from replay.incremental_nodes import StorageLimitsCache, resume_nodes, step_nodes
from replay.kubelet.thresholds import Threshold
from replay.settings import SettingsRequest

__all__ = ["HISTORY_TICKS", "NEXT_TO_GO_EVERY", "LiveEngine"]

HISTORY_TICKS = 40
"""Ticks stepped live at start-up (the forecast's window at a 10 s interval, and some): the rest on the fast path."""
NEXT_TO_GO_EVERY = 30
"""Away from pressure and warnings, a node's next-to-go ranking is refreshed every this many of its ticks
(staggered across nodes); under pressure, reclaiming or at an eviction, at every tick."""
WARNED_EVERY = 3
"""A node only warned (a forecast under ``warn_seconds``, no pressure yet) is ranked at the tick a warning starts
(its event names the pod) and then every this many of its ticks: ranking is most of a tick's work when many
nodes trend down together, and the ``basis`` says the tick each ranking is from."""
POLL_BATCH = 10
"""Ticks decided together when many wait (a poll after a pause): memory stays that many ticks' rows."""


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
        self.next_to_go: NextToGo | None = None
        self.next_key: tuple[str, str] | None = None
        self.next_tick = -1
        self.warned: set[tuple[str, str, int]] = set()
        self.said = Said()
        """What the engine said about its pods (to flag a real eviction or kill)."""
        self.stale = False
        self.phase = zlib.crc32(name.encode()) % NEXT_TO_GO_EVERY


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
        self._truth = GroundTruth()
        self._last_tick_time: int | None = None
        self.last_tick: int | None = None
        self.notes: list[str] = []
        self._limits = StorageLimitsCache()
        self.resumed: list[str] = []
        """Nodes start-up carried on the fast path (the rest of their ticks, and other nodes, stepped)."""
        self._wake = JournalWake(self.root)
        """Set up before the recording is read: a frame appended from now on wakes :meth:`wait`."""
        rec = open_recording(self.root)
        self.notes.extend(rec.notes)
        observed = self._start(rec)
        del rec  # a live writer's snapshot goes with it
        self._tail = JournalTail(self.root, after_tick=self.last_tick, after_observed=observed)

    # -- the interface ----------------------------------------------------------------------------
    def poll(self) -> list[LiveEvent]:
        """Read the ticks finished since the last poll, carry each node's state forward, say what changed."""
        events: list[LiveEvent] = []
        while frames := self._tail.read(limit=POLL_BATCH):
            events.extend(self._apply(frames, quiet=False))
        return sorted(events, key=lambda e: e.time_us)  # nodes' clocks differ; several ticks come together

    def wait(self, timeout: float) -> bool:
        """Block until the writer appends (live/wake.py: inotify; else the timeout is a plain poll period), the
        engine is :meth:`interrupt` ed, or ``timeout`` seconds; True when woken early. Then :meth:`poll`."""
        return self._wake.wait(timeout)

    def interrupt(self) -> None:
        """Wake a :meth:`wait` in another thread now (the follower is quitting)."""
        self._wake.interrupt()

    @property
    def event_driven(self) -> bool:
        """True when appends wake :meth:`wait` (inotify); False when it sleeps its timeout (a poll period)."""
        return self._wake.event_driven

    def close(self) -> None:
        """Let go of the wake-up's descriptors (also done when the engine is collected)."""
        self._wake.close()

    def feed(self, frames: Sequence[Frame]) -> list[LiveEvent]:
        """Decide frames given directly (as the tail reads them: live.tail.recorded_frames of another recording,
        for scores and benchmarks), as :meth:`poll` decides the journal's."""
        return self._apply(frames, quiet=False)

    def nodes(self) -> Mapping[str, NodeNow]:
        return {name: n.now for name, n in sorted(self._nodes.items()) if n.now is not None}

    @property
    def last_tick_time_us(self) -> int | None:
        return self._last_tick_time

    # -- start-up ---------------------------------------------------------------------------------
    def _start(self, rec: Recording) -> int | None:
        """Objects and ground truth as known, each node's manager to ``HISTORY_TICKS`` before the end on the
        fast path, then the rest as live ticks (events not reported). The newest object observation (µs)."""
        frames = recorded_frames(rec)
        first = next(frames, None)
        loose = first if first is not None and first.tick is None else Frame(None, 0)
        objects = loose.tables.get("objects")
        observed = None if objects is None or not objects.height else to_us(objects["observed"].max())  # type: ignore[arg-type]
        ticks = rec._collect("ticks", rec.scan("ticks").select("tick", "node", "ok"))
        last = ticks["tick"].max()
        cut = None if last is None else int(last) - HISTORY_TICKS  # type: ignore[arg-type]
        until: dict[str, int] = {}
        if cut is not None:
            before = ticks.filter(pl.col("ok") & (pl.col("tick") <= cut)).group_by("node").agg(pl.col("tick").max())
            until = {str(n): int(t) for n, t in before.iter_rows()}
        if until:
            pods = index_pods_by_node(rec.scan_objects().collect())
            self._seq = sum(len(v) for v in pods.values())
            self._objects(loose.rows("objects"), index=False)
            for name, stepper in resume_nodes(rec, self.request, until, pods).items():
                self._node(name).stepper = stepper
            self.resumed = sorted(until)
            self._ground_truth(loose)
            self.last_tick = cut
            after = recorded_frames(rec, after_tick=cut, chunk=POLL_BATCH)
            next(after, None)  # its tickless frame: the objects just read
            rest: Iterable[Frame] = after
        else:
            rest = [loose, *([] if first is None or first.tick is None else [first]), *frames]
        batch: list[Frame] = []
        for frame in rest:
            batch.append(frame)
            if len(batch) >= POLL_BATCH:
                self._apply(batch, quiet=True)
                batch = []
        if batch:
            self._apply(batch, quiet=True)
        return observed

    # -- frames ---------------------------------------------------------------------------------
    def _apply(self, frames: Sequence[Frame], *, quiet: bool) -> list[LiveEvent]:
        """Frames in runs that end at a frame with ground truth (what really happened is flagged against what was
        decided up to its frame's tick, not after it): each run as :meth:`_run`."""
        events: list[LiveEvent] = []
        start = 0
        for i, frame in enumerate(frames):
            if any(frame.tables.get(t) is not None and frame.tables[t].height for t in ("evictions", "kernel_events")):
                events.extend(self._run(frames[start : i + 1], quiet=quiet))
                start = i + 1
        if start < len(frames):
            events.extend(self._run(frames[start:], quiet=quiet))
        return events

    def _run(self, frames: Sequence[Frame], *, quiet: bool) -> list[LiveEvent]:
        """Objects first (pods are looked up by time), then the ticks as one batch per node, then what really
        happened (flagged against what was decided)."""
        for frame in frames:
            self._objects(frame.rows("objects"), index=True)
        ticks = [f for f in frames if f.tick is not None]
        events = self._ticks(ticks) if ticks else []
        for frame in frames:
            events.extend(self._ground_truth(frame))
        if ticks:
            self.last_tick = ticks[-1].tick
            self._last_tick_time = ticks[-1].time
        return [] if quiet else events

    def _node(self, name: str) -> _NodeLive:
        found = self._nodes.get(name)
        if found is None:
            found = self._nodes[name] = _NodeLive(name)
        return found

    def _objects(self, rows: Iterable[dict[str, Any]], *, index: bool) -> None:
        """Pod versions to their node's pods in force (as recordings.pod_timeline.index_pods_by_node assigns
        them: an unbound version to none, a tombstone to the node its pod was on); node objects and /configz."""
        for row in rows:
            kind = row["kind"]
            if kind == "pod":
                key = row["uid"] or f"{row['namespace']}/{row['name']}"
                node = row["node"]
                if node is not None:
                    self._pod_node[key] = node
                elif row["deleted"]:
                    node = self._pod_node.get(key)
                if node is None or not index:
                    continue
                observed = row["observed"]
                version = PodVersion(to_datetime(observed), key, self._seq, row["body"], bool(row["deleted"]))
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

    def _ticks(self, frames: Sequence[Frame]) -> list[LiveEvent]:
        """Every node's new ticks: gaps mark it stale; ticks with data go to its stepper as one batch."""
        tables: dict[str, pl.DataFrame] = {}
        for table in SERIES:
            parts = [f.tables[table.name] for f in frames if table.name in f.tables]
            if parts:
                tables[table.name] = pl.concat(parts) if len(parts) > 1 else parts[0]
        with_data = set(tables[SERIES[0].name]["node"].unique().to_list()) if SERIES[0].name in tables else set()
        ok: dict[str, dict[int, int]] = {}
        gaps: dict[str, list[tuple[int, int, str]]] = {}
        for frame in frames:
            for row in frame.rows("ticks"):
                if row["ok"] and row["node"] in with_data:
                    ok.setdefault(row["node"], {})[row["tick"]] = row["time"]
                else:
                    gaps.setdefault(row["node"], []).append((row["tick"], row["time"], row["error"] or "no data"))
        for name in ok:
            live = self._node(name)
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
        steppers = {n: s for n in ok if (s := self._nodes[n].stepper) is not None}
        decided_by_node = step_nodes(steppers, tables, ok, self._limits)
        events: list[LiveEvent] = []
        for name in sorted({*ok, *gaps}):
            live = self._node(name)
            decided = decided_by_node.get(name, [])
            steps: list[tuple[int, Decided | tuple[int, int, str]]] = [(d.tick, d) for d in decided]
            steps += [(g[0], g) for g in gaps.get(name, [])]
            steps.sort(key=lambda s: s[0])
            for i, (_tick, step) in enumerate(steps):
                if isinstance(step, Decided):
                    last = all(not isinstance(s, Decided) for _t, s in steps[i + 1 :])
                    events.extend(self._after_pass(live, step, rank=last))
                else:
                    events.extend(self._gap(live, *step))
        return events

    def _gap(self, live: _NodeLive, tick: int, time_us: int, error: str) -> list[LiveEvent]:
        if live.now is not None:
            live.now = replace(live.now, stale=True, stale_reason=error)
        else:  # never answered yet: shown stale with nothing observed, never as a healthy node
            info = ((self._node_objects.get(live.name) or {}).get("status") or {}).get("nodeInfo") or {}
            version = ".".join(str(info.get("kubeletVersion") or "").lstrip("v").split(".")[:2])
            live.now = NodeNow.without_pass(live.name, tick, time_us, stale=True, reason=error, version=version)
        if live.stale:
            return []
        live.stale = True
        return [LiveEvent("stale", live.name, time_us, {"tick": tick, "reason": error})]

    # -- after a pass: the state now, and what changed ---------------------------------------------
    def _after_pass(self, live: _NodeLive, d: Decided, *, rank: bool) -> list[LiveEvent]:
        stepper = live.stepper
        assert stepper is not None
        now_us = d.time_us
        events: list[LiveEvent] = []
        if live.stale:
            live.stale = False
            events.append(LiveEvent("fresh", live.name, now_us, {"tick": d.tick}))
        signals = {s: v[0] for s, v in d.observed.items()}
        tracked = {t.signal for t in stepper.manager.thresholds} if stepper.manager is not None else set()
        thresholds, forecasts = forecast(live.name, d.observed, d.thresholds, live.history, now_us, tracked)
        conditions = tuple(c for c in PRESSURE_CONDITIONS if c in d.conditions) + tuple(
            c for c in d.conditions if c not in PRESSURE_CONDITIONS
        )
        warn = [
            f for f in forecasts if f.seconds_to_threshold is not None and f.seconds_to_threshold < self.warn_seconds
        ]
        urgent = bool(conditions or d.evictions or d.reclaiming)
        new_warning = any((f.signal, f.threshold_kind, f.threshold) not in live.warned for f in warn)
        every = WARNED_EVERY if warn else NEXT_TO_GO_EVERY
        if rank and (urgent or new_warning or live.next_to_go is None or (d.tick - live.phase) % every == 0):
            live.next_to_go = self._next_to_go(live, d, forecasts)
        next_to_go = live.next_to_go
        live.now = NodeNow(
            node=live.name,
            tick=d.tick,
            time_us=now_us,
            stale=False,
            stale_reason=None,
            kubelet_version=stepper.settings.profile.version,
            signals=signals,
            thresholds={k: tuple(v) for k, v in thresholds.items()},
            conditions=conditions,
            next_to_go=next_to_go,
            forecasts=tuple(forecasts),
            tick_time_us=d.tick_time_us,
        )
        # what changed
        for kind, changed in (
            ("pressure-start", [c for c in conditions if c not in live.conditions]),
            ("pressure-end", [c for c in live.conditions if c not in conditions]),
        ):
            for c in changed:
                said = {"condition": c, "conditions": list(conditions), "tick": d.tick}
                events.append(LiveEvent(kind, live.name, now_us, said))
        live.conditions = conditions
        # a change of pod (or of the resource it is ranked for), not of the usage its message quotes
        key = None if next_to_go is None else (next_to_go.uid, next_to_go.resource)
        if key != live.next_key:
            live.next_key = key
            details: dict[str, object] = {"tick": d.tick}
            if next_to_go is not None:
                details.update(_ntg(next_to_go))
            events.append(LiveEvent("next-to-go", live.name, now_us, details))
        warned_now = {(f.signal, f.threshold_kind, f.threshold) for f in warn}
        for f in warn:
            fkey = (f.signal, f.threshold_kind, f.threshold)
            if fkey in live.warned:
                continue
            events.append(
                LiveEvent(
                    "warning",
                    live.name,
                    now_us,
                    {
                        "tick": d.tick,
                        "signal": f.signal,
                        "threshold": f.threshold,
                        "threshold_kind": f.threshold_kind,
                        "observed": f.observed,
                        "seconds_to_threshold": f.seconds_to_threshold,
                        "slope_per_second": f.slope_per_second,
                        "method": f.method,
                        "note": f.note,
                        **({} if next_to_go is None else {"next_to_go": _ntg(next_to_go)}),
                    },
                )
            )
        live.warned = warned_now
        for eviction in d.evictions:
            pod = eviction.pod
            live.said.predicted[pod.uid] = (now_us, eviction.message, d.tick)
            events.append(
                LiveEvent(
                    "predicted-eviction",
                    live.name,
                    now_us,
                    {
                        "tick": d.tick,
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

    def _next_to_go(self, live: _NodeLive, d: Decided, forecasts: Sequence[Forecast]) -> NextToGo | None:
        stepper = live.stepper
        assert stepper is not None
        chosen = _target(d, forecasts)
        if chosen is None:
            return None
        target, why = chosen
        found = first_to_go(stepper, target)
        if found is None:
            return None
        pod = found.pod
        reason = f"first in the kubelet's ranking for {target.signal}"
        if found.skipped_critical:
            reason += f" (critical pods ahead of it skipped: {', '.join(found.skipped_critical)})"
        live.said.next_message[pod.uid] = found.message
        return NextToGo(
            live.name,
            pod.namespace,
            pod.name,
            pod.uid,
            found.resource,
            found.message,
            reason,
            f"the kubelet's ranking on the usage at tick {found.tick}, were {target.describe()} reclaimed now ({why})",
        )

    def _ground_truth(self, frame: Frame) -> list[LiveEvent]:
        said = {name: n.said for name, n in self._nodes.items()}
        return self._truth.events(frame, said, self._pod_node)


def forecast(
    node: str,
    observed: Mapping[str, tuple[int, int | None]],
    resolved: Sequence[tuple[Threshold, int]],
    history: dict[str, SignalHistory],
    now_us: int,
    tracked: Iterable[str] = (),
) -> tuple[dict[str, list[int]], list[Forecast]]:
    """A pass's observations added to the node's signal histories (those with a threshold: ``resolved``'s and
    ``tracked``), then per threshold in force its value and the forecast (live/forecast.py)."""
    signals = {s: v[0] for s, v in observed.items()}
    for signal in ({t.signal for t, _v in resolved} | set(tracked)) & signals.keys():
        history.setdefault(signal, SignalHistory()).add(now_us, signals[signal])
    thresholds: dict[str, list[int]] = {}
    forecasts: list[Forecast] = []
    trends = {}
    for threshold, value in resolved:
        signal = threshold.signal
        thresholds.setdefault(signal, []).append(value)
        if signal not in trends:
            trends[signal] = history[signal].trend(observed[signal][1])
        trend = trends[signal]
        seconds, note = seconds_to(signals[signal], value, trend)
        kind = "hard" if threshold.is_hard else "soft"
        forecasts.append(
            Forecast(node, signal, signals[signal], value, kind, seconds, trend.slope_per_second, trend.method, note)
        )
    return thresholds, forecasts


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


def _target(d: Decided, forecasts: Sequence[Forecast]) -> tuple[Threshold, str] | None:
    """The threshold the next-to-go ranking is for, and why: the one the manager reclaims now; else the one the
    forecast reaches first; else the one with the least headroom (a share of its signal's capacity)."""
    if d.reclaiming is not None:
        return d.reclaiming, "the threshold reclaimed now"
    if not d.thresholds:
        return None
    timed = [(f.seconds_to_threshold, i) for i, f in enumerate(forecasts) if f.seconds_to_threshold is not None]
    if timed:
        return d.thresholds[min(timed)[1]][0], "the threshold the forecast reaches first"

    def headroom(i: int) -> float:
        threshold, value = d.thresholds[i]
        available, capacity = d.observed[threshold.signal]
        return (available - value) / (capacity or max(abs(available), 1))

    return d.thresholds[min(range(len(d.thresholds)), key=headroom)][0], "no trend: the threshold nearest now"
