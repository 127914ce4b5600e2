"""One node's eviction manager carried forward as a recording being written gains ticks.

``replay`` decides a finished recording; the live view (:mod:`live`) decides each tick as it arrives,
keeping the manager's state (conditions, grace periods, the pressure transition period, the last
observations, minimum reclaim) instead of replaying from the start. :class:`NodeStepper` is that state,
driven by the fast path's own pieces on the new ticks' rows: the signals and threshold masks
(replay/fast/signals.py), the state machine (replay/fast/passes.py: FastManager.run, so quiet passes cost
a few integer operations), and at a pass where a threshold is actionable or a local-storage limit may be
exceeded the reference manager loaded with the machine's state, on the pods' stats built straight from the
rows (replay/fast/columns.py: SummaryAt, replay/fast/driver.py: _synchronize_built). Nodes the fast path
does not model (Windows, a failed first pass, thresholds outside the columns) are stepped on the reference
manager, whole summary by whole summary (replay/reference.py: NodeRun.passes). Either way the decisions are
the replay's.

Many nodes at once (one query for all their signals, start-up on the fast path): replay/incremental_nodes.py.
:func:`first_to_go` ranks
the candidates for a threshold as the manager would if it were reclaimed now (eviction_manager.go:
signalToRankFunc, helpers.go: evictionMessage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import polars as pl

from kube.errors import InputError
from kube.signals import SIGNAL_TO_RESOURCE, SIGNALS
from recordings.pod_timeline import PodsInForce, PodVersion
from recordings.schema import ALL_SCHEMAS, NODE_STATS, POD_STATS, SERIES, SYSTEM_STATS
from recordings.summary_codec import decode
from replay.context import active_pods, infer_topology
from replay.fast import lean
from replay.fast.columns import (
    SummaryAt,
    SummaryWindow,
)
from replay.fast.loop import to_datetime, to_us
from replay.fast.passes import FastManager
from replay.fast.signals import NODE_COLUMNS, PODS_COLUMNS, observations
from replay.kubelet import pods as podutil
from replay.kubelet.api import Pod, Summary, parse_nodes, parse_pods, parse_summary
from replay.kubelet.manager import Eviction, EvictionManager, FsTopology, SyncResult
from replay.kubelet.message import eviction_message
from replay.kubelet.signals import make_signal_observations
from replay.kubelet.thresholds import Threshold, get_threshold_quantity
from replay.reference import NodeRun, sample_time
from replay.settings import NodeSettings, SettingsRequest, resolve_node

__all__ = ["Decided", "FirstToGo", "NodeRows", "NodeStepper", "first_to_go", "signals_seen", "tick_times_frame"]

FAST, REFERENCE, NO_THRESHOLDS = "fast", "reference", "no thresholds"
COMPACT_EVERY = 360
"""Passes between two compactions of a node's pod versions (an hour at 10 s)."""


class NodeRows:
    """One node's rows of the series tables at a few new ticks (``tables`` may hold other nodes' too: each
    table is filtered to the node when first read): what the fast path's summary builder reads (it scans a
    replay/fast/columns.py NodeColumns; this stands in for one)."""

    def __init__(self, node: str, tables: Mapping[str, pl.DataFrame]) -> None:
        self.node = node
        self._tables = tables
        self._mine: dict[str, pl.DataFrame] = {}

    def table(self, name: str) -> pl.DataFrame:
        found = self._mine.get(name)
        if found is None:
            every = self._tables.get(name)
            found = (
                pl.DataFrame(schema=ALL_SCHEMAS[name]) if every is None else every.filter(pl.col("node") == self.node)
            )
            self._mine[name] = found
        return found

    def _scan(self, table: str, ticks: tuple[int, int] | None = None) -> pl.LazyFrame:
        return self.table(table).lazy()

    def _collect(self, table: str, frame: pl.LazyFrame) -> pl.DataFrame:
        return frame.collect()

    def summary(self, tick: int) -> dict[str, Any]:
        """The whole Summary-shaped dict at ``tick`` (summary_codec.decode, as the reader gives it)."""
        rows = [self.table(t.name).filter(pl.col("tick") == tick).to_dicts() for t in SERIES]
        return decode(rows[0][0], *rows[1:])


@dataclass(frozen=True)
class Decided:
    """One pass: what the manager decided and what it saw."""

    tick: int
    tick_time_us: int
    time_us: int
    """The manager's clock: the stats' sample time, else the tick's."""
    conditions: tuple[str, ...]
    reason: str
    evictions: tuple[Eviction, ...]
    observed: Mapping[str, tuple[int, int | None]]
    """Signal → (available, capacity) as the manager observed them."""
    thresholds: tuple[tuple[Threshold, int], ...]
    """Each threshold in force with its value resolved against this pass's capacity."""
    reclaiming: Threshold | None
    """The threshold the pass reclaimed (None: none actionable, or not known without the reference)."""


class NodeStepper:
    """One node under one request: settings, manager (fast or reference), pods in force and the pods it evicted."""

    def __init__(self, node: str, request: SettingsRequest, settings: NodeSettings) -> None:
        if request.counterfactual:
            raise InputError("a live view decides what happens; --counterfactual is for replays", field="settings")
        self.node = node
        self.request = request
        self.settings = settings
        self.topology: FsTopology = request.topology or FsTopology()
        self.manager: EvictionManager | None = None
        self.fast: FastManager | None = None
        self.mode = ""
        self.mode_reason = ""
        self.evicted_uids: set[str] = set()
        self._versions: list[PodVersion] = []
        self._pods = PodsInForce(self._versions)
        self._parsed: dict[int, Pod] = {}
        self.limited: dict[str, list[Pod]] = {}
        """Pod key → its versions that set a local-storage limit (what incremental_nodes.storage_ticks reads)."""
        self.limited_generation = 0
        self.last: Decided | None = None
        self._rows: NodeRows | None = None
        self._window: SummaryWindow | None = None
        self._window_ticks: list[int] = []
        self._passes = 0
        self._last_summary: Summary | None = None

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        node: str,
        request: SettingsRequest,
        node_object: Mapping[str, Any] | None,
        configz: Mapping[str, Any] | None,
        pod_bodies: Iterable[Mapping[str, Any]] = (),
    ) -> NodeStepper:
        """Settings resolved as replay/reference.py: NodeRun does, from the objects known now."""
        parsed = parse_nodes(dict(node_object), source=f"node {node}") if node_object is not None else []
        settings = resolve_node(request, node, parsed[0] if parsed else None, configz, pod_bodies)
        return cls(node, request, settings)

    # -- pods -----------------------------------------------------------------------------------
    def add_pod_version(self, version: PodVersion) -> None:
        """A pod version bound to this node, in observation order (recordings.pod_timeline.index_pods_by_node)."""
        self._pods.append(version)
        if not version.deleted:
            pod = self._pod(version)
            if (
                podutil.pod_limits(pod).get("ephemeral-storage") is not None
                or any(v.source == "emptyDir" and v.empty_dir_size_limit is not None for v in pod.volumes)
                or any(c.limits.get("ephemeral-storage") is not None for c in (*pod.containers, *pod.init_containers))
            ):
                self.limited.setdefault(version.key, []).append(pod)
                self.limited_generation += 1

    def _pod(self, version: PodVersion) -> Pod:
        pod = self._parsed.get(version.seq)
        if pod is None:
            pod = parse_pods(version.decode(), source=f"recording pod {version.key}")[0]
            self._parsed[version.seq] = pod
        return pod

    def pods_at(self, when: datetime, summary: Summary) -> list[Pod]:
        """replay/reference.py: NodeRun.pods_at — in force at ``when``, plus pods with stats whose object was
        observed only later (known here once their object has arrived)."""
        return self._pods_with(when, [s.pod_ref.uid for s in summary.pods])

    def _pods_with(self, when: datetime, stats_uids: Iterable[str | None]) -> list[Pod]:
        in_force = self._pods.at(when)
        pods = [self._pod(v) for v in in_force.values()]
        for uid in stats_uids:
            if uid and uid not in in_force:
                first = self._pods.first_version(uid)
                if first is not None and first.observed > when:
                    pods.append(self._pod(first))
        return pods

    def _candidates(self, pods: Iterable[Pod]) -> list[Pod]:
        return [p for p in active_pods(list(pods), self.node) if p.uid not in self.evicted_uids]

    # -- passes ---------------------------------------------------------------------------------
    def advance(
        self,
        rows: NodeRows,
        tick_times: Mapping[int, int],
        storage: frozenset[int],
        frame: pl.DataFrame | None = None,
    ) -> list[Decided]:
        """The passes of the node's new ticks with data (``tick_times``: tick → tick time µs), in tick order;
        ``storage``: the ticks where a local-storage limit may be exceeded (incremental_nodes.storage_ticks); ``frame``:
        the ticks' threshold columns when incremental_nodes.step_nodes computed them for many nodes at once."""
        with_data = set((rows.table(NODE_STATS.name)["tick"] if frame is None else frame["tick"]).to_list())
        ticks = sorted(t for t in tick_times if t in with_data)
        if not ticks:
            return []
        self._rows, self._window, self._window_ticks = rows, None, ticks
        if self.manager is None:
            self._begin(rows, ticks[0], tick_times[ticks[0]])
        out: list[Decided] = []
        if self.mode == FAST:
            out = self._fast(rows, ticks, tick_times, storage, frame)
            ticks = ticks[len(out) :]
        for tick in ticks:
            out.append(self._reference(rows, tick, tick_times[tick]))
        if out:
            self.last = out[-1]
            self._passes += len(out)
            if self._passes >= COMPACT_EVERY:  # a long watch: versions no longer in force go, with their parses
                self._passes = 0
                kept = {v.seq for v in self._pods.compact()}
                self._parsed = {seq: pod for seq, pod in self._parsed.items() if seq in kept}
        return out

    def _begin(self, rows: NodeRows, tick: int, tick_time: int) -> None:
        """The node's first pass's set-up (replay/fast/driver.py: NodeReplay.start)."""
        summary = parse_summary(_node_part(rows, tick), source=f"recording {self.node} tick {tick}")
        if self.request.topology is None:
            self.topology, _source = infer_topology(summary)
        self.manager = self._new_manager()
        if not self.manager.thresholds and not self.settings.config.local_storage_capacity_isolation:
            self.mode = NO_THRESHOLDS
            return
        if self.settings.platform != "linux":
            self.mode, self.mode_reason = REFERENCE, f"platform {self.settings.platform}"
            return
        fast = FastManager.build(self.manager)
        if isinstance(fast, str):  # the build ran the first-pass set-up: the reference starts afresh
            self.manager = self._new_manager()
            self.mode, self.mode_reason = REFERENCE, fast
            return
        self.fast, self.mode = fast, FAST

    def _new_manager(self) -> EvictionManager:
        s = self.settings
        return EvictionManager(s.config, s.profile, self.topology, platform=s.platform)

    def window(self) -> SummaryWindow | None:
        """The last batch's summaries, built from its rows when first asked (delegated passes, a ranking)."""
        if self._window is None and self._rows is not None and self._window_ticks:
            self._window = SummaryWindow(cast(Any, self._rows), self._window_ticks)
        return self._window

    def stats_uids(self, tick: int) -> list[str | None]:
        """The pod UIDs of the last batch's stats at ``tick`` (pods with stats whose object came later)."""
        assert self._rows is not None
        return self._rows.table(POD_STATS.name).filter(pl.col("tick") == tick)["pod_uid"].to_list()

    def _fast(
        self,
        rows: NodeRows,
        ticks: list[int],
        tick_times: Mapping[int, int],
        storage: frozenset[int],
        frame: pl.DataFrame | None,
    ) -> list[Decided]:
        fast, manager = self.fast, self.manager
        assert fast is not None and manager is not None
        if frame is None:
            wanted = pl.col("tick").is_in(ticks)
            node_rows = (
                rows.table(NODE_STATS.name)
                .filter(wanted)
                .unique(subset=["tick"], keep="first", maintain_order=True)
                .sort("tick")
                .select(NODE_COLUMNS)
            )
            system = rows.table(SYSTEM_STATS.name)
            pods_rows = system.filter(wanted & (pl.col("name") == "pods")).select(PODS_COLUMNS)
            frame = fast.columns(observations(node_rows, pods_rows, tick_times_frame(ticks, tick_times)))
        uids_at: dict[int, list[str | None]] = {}
        results: dict[int, SyncResult] = {}

        def stats_uids(tick: int) -> list[str | None]:
            if tick not in uids_at:
                uids_at[tick] = self.stats_uids(tick)
            return uids_at[tick]

        def delegate(index: int, tick: int, when: datetime) -> SyncResult:
            """replay/fast/driver.py: NodeReplay._delegate, on this batch's rows."""
            window = self.window()
            assert window is not None
            recorded = SummaryAt(window, tick)
            source = f"recording {self.node} tick {tick}"
            candidates = self._candidates(self._pods_with(when, stats_uids(tick)))
            forced = tick in storage
            with lean.no_cyclic_gc():
                if not forced and all(podutil.is_critical_pod(p) for p in candidates):
                    result = manager.synchronize(recorded.parsed(whole=False, source=source), candidates, when)
                else:
                    from replay.fast.driver import _synchronize_built

                    result, candidates = _synchronize_built(
                        cast(NodeRun, self), manager, recorded, when, source, forced, candidates
                    )
            for eviction in result.evictions:
                self.evicted_uids.add(eviction.pod.uid)
            results[index] = result
            return result

        def evictable(tick: int, when: datetime) -> tuple[bool, bool]:
            candidates = self._candidates(self._pods_with(when, stats_uids(tick)))
            return any(not podutil.is_critical_pod(p) for p in candidates), bool(candidates)

        cp = fast.run(frame, storage, delegate, evictable)
        if fast.unmodelled is not None:  # the reference ran the first pass and holds the state from there on
            self.mode, self.mode_reason = REFERENCE, fast.unmodelled
        out = []
        seen = signals_seen(frame, fast.machine.thresholds)
        for i, tick in enumerate(cp.ticks):
            observed, resolved = seen[i]
            result = results.get(i)
            out.append(
                Decided(
                    tick,
                    tick_times[tick],
                    cp.now[i],
                    cp.conditions[i],
                    cp.reasons[i],
                    () if result is None else result.evictions,
                    observed,
                    resolved,
                    None if result is None else result.threshold_to_reclaim,
                )
            )
        return out

    def _reference(self, rows: NodeRows, tick: int, tick_time: int) -> Decided:
        """One pass on the reference manager and the whole summary (replay/reference.py: NodeRun.passes)."""
        manager = self.manager
        assert manager is not None
        source = f"recording {self.node} tick {tick}"
        if self.mode == NO_THRESHOLDS:  # synchronize returns before reading anything: the node's signals only
            summary = parse_summary(_node_part(rows, tick), source=source)
        else:
            summary = parse_summary(rows.summary(tick), source=source)
        when = sample_time(summary) or to_datetime(tick_time)
        if self.mode == NO_THRESHOLDS:
            result = manager.synchronize(summary, [], when)
        else:
            result = manager.synchronize(summary, self._candidates(self.pods_at(when, summary)), when)
        for eviction in result.evictions:
            self.evicted_uids.add(eviction.pod.uid)
        self._last_summary = summary
        observed = {
            s: (o.available.int_value(), None if o.capacity is None else o.capacity.int_value())
            for s, o in result.observations.items()
            if o.available is not None
        }
        resolved = tuple(
            (t, get_threshold_quantity(t.value, result.observations[t.signal].capacity).int_value())
            for t in manager.thresholds
            if t.signal in observed
        )
        return Decided(
            tick,
            tick_time,
            to_us(when),
            result.node_conditions,
            result.reason,
            result.evictions,
            observed,
            resolved,
            result.threshold_to_reclaim,
        )


Observed = dict[str, tuple[int, int | None]]
Resolved = tuple[tuple[Threshold, int], ...]


def signals_seen(frame: pl.DataFrame, thresholds: Sequence[Threshold]) -> list[tuple[Observed, Resolved]]:
    """Per row of a fast path's threshold columns (FastManager.columns): signal → (available, capacity) as the
    manager observes them, and each threshold with its value resolved against that capacity."""
    columns = {c: frame[c].to_list() for c in frame.columns}
    out = []
    for i in range(frame.height):
        observed = {
            signal: (columns[f"a{k}"][i], columns[f"c{k}"][i])
            for k, signal in enumerate(SIGNALS)
            if columns[f"a{k}"][i] is not None
        }
        resolved = tuple((t, columns[f"q{j}"][i]) for j, t in enumerate(thresholds) if columns[f"q{j}"][i] is not None)
        out.append((observed, resolved))
    return out


@dataclass(frozen=True)
class FirstToGo:
    """The pod a pass reclaiming ``threshold`` would evict now, and the message it would get."""

    pod: Pod
    resource: str
    message: str
    position: int
    """Its place in the ranking (critical pods ahead of it are skipped, as synchronize skips them)."""
    skipped_critical: tuple[str, ...]
    tick: int


def first_to_go(stepper: NodeStepper, threshold: Threshold) -> FirstToGo | None:
    """eviction_manager.go: synchronize from ``rank(activePods, statsFunc)`` on, for ``threshold``, at the last
    pass: its candidates ranked on that pass's stats, the first that is not critical and its message. None: no
    pass yet, no ranking function for the signal, or no pod to evict."""
    manager, last = stepper.manager, stepper.last
    resource = SIGNAL_TO_RESOURCE.get(threshold.signal)
    if manager is None or last is None or resource is None:
        return None
    rank = manager.signal_to_rank_func.get(threshold.signal)
    if rank is None:
        return None
    when = to_datetime(last.time_us)
    source = f"recording {stepper.node} tick {last.tick}"
    window = stepper.window() if stepper.mode == FAST else None
    if window is not None and window.has(last.tick):
        recorded = SummaryAt(window, last.tick)
        candidates = stepper._candidates(stepper._pods_with(when, stepper.stats_uids(last.tick)))
        if not candidates:
            return None
        summary = recorded.built(lean.parts_of(threshold.signal), source=source, uids={p.uid for p in candidates})
    elif stepper._last_summary is not None:
        summary = stepper._last_summary
        candidates = stepper._candidates(stepper.pods_at(when, summary))
    else:
        return None
    if not candidates:
        return None
    observations_, stats = make_signal_observations(summary, manager.platform)
    rank(candidates, stats)
    skipped: list[str] = []
    for i, pod in enumerate(candidates):
        if podutil.is_critical_pod(pod):
            skipped.append(pod.name)
            continue
        message, _annotations = eviction_message(
            resource, pod, stats.get(pod.uid), [threshold], observations_, manager.profile
        )
        return FirstToGo(pod, resource, message, i, tuple(skipped), last.tick)
    return None


def _node_part(rows: NodeRows, tick: int) -> dict[str, Any]:
    """The summary without its pods (the node's signals), as replay/fast/columns.py: SummaryWindow.node_part."""
    return decode(
        rows.table(NODE_STATS.name).filter(pl.col("tick") == tick).row(0, named=True),
        rows.table(SYSTEM_STATS.name).filter(pl.col("tick") == tick).to_dicts(),
        [],
        [],
        [],
    )


def tick_times_frame(ticks: Sequence[int], tick_times: Mapping[int, int]) -> pl.DataFrame:
    """(tick, tick time) of the passes, as replay/fast/columns.py: _tick_times gives them to ``observations``."""
    return pl.DataFrame(
        {"tick": list(ticks), "_t": [tick_times[t] for t in ticks]}, schema={"tick": pl.Int64, "_t": pl.Int64}
    ).with_columns(pl.col("_t").cast(pl.Datetime("us", "UTC")))
