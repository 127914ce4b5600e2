"""Turning a stream of synchronize passes into the results model.

One :class:`ResultBuilder` per replay: ``add`` each :class:`~replay.engine.Pass` as it comes (the
CLI advances its progress bar in the same loop), then ``finish``. Signal rows are kept as column
lists and become one polars frame at the end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl

from replay.counterfactual import NOTE as COUNTERFACTUAL_NOTE
from replay.engine import NodeRun, Pass, Replay
from replay.impact import OVERCOMMIT_RESOURCES, PodTotals, explain_ranking, overcommit_lead, owner_impact, pod_totals
from replay.kubelet.api import Pod, parse_nodes
from replay.kubelet.manager import Eviction as KubeletEviction
from replay.kubelet.manager import SyncResult
from replay.kubelet.quantity import Quantity
from replay.kubelet.ranking import RankFacts, pod_priority, rank_facts
from replay.kubelet.thresholds import Threshold, ThresholdValue, get_threshold_quantity
from replay.matching import match, real_evictions, recording_interval
from replay.results import (
    CONDITIONS_SCHEMA,
    OVERCOMMIT_SCHEMA,
    SIGNALS_SCHEMA,
    Eviction,
    NodeResult,
    RankedPod,
    ReplayResult,
    ThresholdSetting,
)
from replay.settings import settings_digest

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

NOTES = (
    "each pass sees the pods active at the stats' sample time (a pod the kubelet evicted or that failed after "
    "that moment still counts for that decision)",
    "the recording shows what really happened: a pod the replay evicts keeps its recorded stats afterwards, "
    "so it is only removed from the eviction candidates",
    "node-level reclaim (image/container GC) is assumed to free nothing; the next recorded tick shows what it did",
)


def _int(q: Quantity | None) -> int | None:
    return None if q is None else q.int_value()


def _value_parts(value: ThresholdValue | None) -> tuple[int | None, float | None]:
    if value is None:
        return None, None
    if value.quantity is not None:
        return value.quantity.int_value(), None
    return None, value.percentage


def threshold_settings(thresholds: Sequence[Threshold]) -> tuple[ThresholdSetting, ...]:
    out = []
    for i, t in enumerate(thresholds):
        quantity, percentage = _value_parts(t.value)
        mr_q, mr_p = _value_parts(t.min_reclaim)
        out.append(ThresholdSetting(i, t.signal, t.operator, quantity, percentage, t.grace_period, t.is_hard,
                                    mr_q, mr_p, t.describe()))
    return tuple(out)


def rank_reason(f: RankFacts) -> str:
    """Why a pod sits where it does, in the comparators' order (ranking.go: rankMemoryPressure …)."""
    parts = []
    if not f.has_stats:
        parts.append("no stats: ranked first")
    elif f.process_count is not None:
        parts.append(f"{f.process_count} processes")
    elif f.exceeds_request:
        parts.append("usage above request")
    elif f.exceeds_request is False:
        parts.append("usage within request")
    parts.append(f"priority {f.priority}")
    if f.usage_above_request is not None:
        parts.append(f"usage − request {f.usage_above_request}")
    if f.critical:
        parts.append("critical pod: never evicted")
    return "; ".join(parts)


def _owner(pod: Pod) -> tuple[str | None, str | None]:
    if not pod.owner_kinds:
        return None, None
    names = pod.owner_names or ("",) * len(pod.owner_kinds)
    return pod.owner_kinds[0], names[0] or None


class _NodeState:
    def __init__(self, run: NodeRun) -> None:
        self.run = run
        self.passes = 0
        self.reasons: Counter[str] = Counter()
        self.errors: list[str] = []
        self.first: datetime | None = None
        self.last: datetime | None = None
        self.open: dict[str, tuple[datetime, int]] = {}
        self.last_tick = -1
        self.allocatable = _allocatable(run)
        self.first_eviction: datetime | None = None


def _allocatable(run: NodeRun) -> dict[str, int]:
    """The node object's allocatable memory and ephemeral-storage (the recording's latest node object)."""
    raw = run.rec.node_object_at(run.node)
    nodes = parse_nodes(raw, source=f"recording node {run.node}") if raw is not None else ()
    if not nodes:
        return {}
    return {r: nodes[0].allocatable[r].int_value() for r in OVERCOMMIT_RESOURCES if r in nodes[0].allocatable}


class ResultBuilder:
    """Collects passes of one :class:`~replay.engine.Replay` into a :class:`ReplayResult`."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self._nodes = {run.node: _NodeState(run) for run in replay.runs}
        self._signals: dict[str, list[Any]] = {name: [] for name in SIGNALS_SCHEMA.names()}
        self._conditions: dict[str, list[Any]] = {name: [] for name in CONDITIONS_SCHEMA.names()}
        self._evictions: list[Eviction] = []
        self._overcommit: dict[str, list[Any]] = {name: [] for name in OVERCOMMIT_SCHEMA.names()}
        self._totals: dict[int, tuple[Pod, PodTotals]] = {}

    def add(self, p: Pass) -> None:
        state = self._nodes[p.node]
        result = p.result
        state.passes += 1
        state.first = state.first or p.time
        state.last = p.time
        state.last_tick = p.tick
        if result.error:
            state.errors.append(result.error)
        state.reasons[result.reason if not result.evictions else "evicted"] += 1
        self._add_signals(p, state)
        self._add_conditions(p, state)
        self._add_overcommit(p, state)
        for eviction in result.evictions:
            state.first_eviction = state.first_eviction or p.time
            self._evictions.append(self._eviction(p, state.run, eviction))

    def _pod_totals(self, pod: Pod) -> PodTotals:
        found = self._totals.get(id(pod))
        if found is None or found[0] is not pod:
            found = self._totals[id(pod)] = (pod, pod_totals(pod))
        return found[1]

    def _add_overcommit(self, p: Pass, state: _NodeState) -> None:
        """Σ requests / Σ limits of the pods in force at this pass (the candidates: active, not yet evicted)."""
        totals = [self._pod_totals(pod) for pod in p.candidates]
        cols = self._overcommit
        for resource in OVERCOMMIT_RESOURCES:
            for name, value in (("node", p.node), ("tick", p.tick), ("time", p.time), ("resource", resource),
                                ("requests", sum(t.requests.get(resource, 0) for t in totals)),
                                ("limits", sum(t.limits.get(resource, 0) for t in totals)),
                                ("allocatable", state.allocatable.get(resource)),
                                ("pods_without_limit", sum(1 for t in totals if resource in t.unbounded))):
                cols[name].append(value)

    def _add_signals(self, p: Pass, state: _NodeState) -> None:
        manager = state.run.manager
        thresholds = manager.thresholds if manager is not None else []
        met, actionable = p.result.thresholds_met, p.result.thresholds_actionable
        cols = self._signals
        for signal, obs in p.result.observations.items():
            available, capacity = _int(obs.available), _int(obs.capacity)
            on_signal: list[tuple[int | None, Threshold | None]] = [
                (i, t) for i, t in enumerate(thresholds) if t.signal == signal]
            for tid, t in on_signal or [(None, None)]:
                cols["node"].append(p.node)
                cols["tick"].append(p.tick)
                cols["time"].append(p.time)
                cols["signal"].append(signal)
                cols["available"].append(available)
                cols["capacity"].append(capacity)
                cols["threshold_id"].append(tid)
                cols["threshold_value"].append(
                    None if t is None else get_threshold_quantity(t.value, obs.capacity).int_value())
                cols["met"].append(None if t is None else t in met)
                cols["actionable"].append(None if t is None else t in actionable)

    def _add_conditions(self, p: Pass, state: _NodeState) -> None:
        on = set(p.result.node_conditions)
        for condition in sorted(set(state.open) - on):
            start, start_tick = state.open.pop(condition)
            self._close(p.node, condition, start, start_tick, p.time, p.tick)
        for condition in p.result.node_conditions:
            state.open.setdefault(condition, (p.time, p.tick))

    def _close(self, node: str, condition: str, start: datetime, start_tick: int, end: datetime | None,
               end_tick: int | None) -> None:
        for name, value in (("node", node), ("condition", condition), ("from", start), ("to", end),
                            ("from_tick", start_tick), ("to_tick", end_tick)):
            self._conditions[name].append(value)

    def _eviction(self, p: Pass, run: NodeRun, eviction: KubeletEviction) -> Eviction:
        result: SyncResult = p.result
        pod = eviction.pod
        threshold = result.threshold_to_reclaim if eviction.cause == getattr(
            result.threshold_to_reclaim, "signal", None) else None
        observed = threshold_value = None
        ranking: tuple[RankedPod, ...] = ()
        if threshold is not None:
            obs = result.observations.get(threshold.signal)
            if obs is not None:
                observed = _int(obs.available)
                threshold_value = get_threshold_quantity(threshold.value, obs.capacity).int_value()
            facts = rank_facts(result.ranking, result.stats, threshold.signal, run.topology.dedicated_image_fs,
                               run.topology.split_container_image_fs, run.settings.profile)
            ranking = explain_ranking(tuple(
                RankedPod(i, f.namespace, f.pod, ranked.uid, ranked.qos_class, f.priority, f.has_stats,
                          f.exceeds_request, _int(f.usage), _int(f.request), _int(f.usage_above_request),
                          f.process_count, f.critical, rank_reason(f))
                for i, (f, ranked) in enumerate(zip(facts, result.ranking, strict=True), 1)
            ), pod.uid, threshold.signal)
        owner_kind, owner_name = _owner(pod)
        comes_back, impact = owner_impact(owner_kind, owner_name)
        return Eviction(
            id=len(self._evictions), node=p.node, tick=p.tick, time=p.time, namespace=pod.namespace, pod=pod.name,
            uid=pod.uid, owner_kind=owner_kind, owner_name=owner_name, qos=pod.qos_class, priority=pod_priority(pod),
            cause=eviction.cause, signal=threshold.signal if threshold else None,
            hard=threshold.is_hard if threshold else None, observed_available=observed,
            threshold_value=threshold_value, grace_period_override=eviction.grace_period_override,
            message=eviction.message, annotations=dict(eviction.annotations), ranking=ranking,
            comes_back=comes_back, impact=impact,
        )

    def finish(self, notes: Iterable[str] = ()) -> ReplayResult:
        nodes = []
        overcommit = pl.DataFrame(self._overcommit, schema=OVERCOMMIT_SCHEMA)
        for name, state in self._nodes.items():
            for condition, (start, start_tick) in state.open.items():
                self._close(name, condition, start, start_tick, None, None)
            run = state.run
            thresholds = run.manager.thresholds if run.manager is not None else list(run.settings.config.thresholds)
            cfg = run.settings.config
            nodes.append(NodeResult(
                node=name, kubelet_version=run.settings.profile.version, version_source=run.settings.version_source,
                platform=run.settings.platform, dedicated_image_fs=run.topology.dedicated_image_fs,
                split_container_image_fs=run.topology.split_container_image_fs,
                topology_source=run.topology_source or "no data", config_source=cfg.source,
                settings_sources=dict(cfg.sources), thresholds=threshold_settings(thresholds),
                pressure_transition_period_ns=cfg.pressure_transition_period,
                max_pod_grace_period_s=cfg.max_pod_grace_period_seconds, passes=state.passes, gaps=run.gaps,
                errors=tuple(dict.fromkeys(state.errors)), reasons=dict(state.reasons),
                first_time=state.first, last_time=state.last,
                overcommit_lead_s=({} if state.first_eviction is None else overcommit_lead(
                    overcommit.filter(pl.col("node") == name).iter_rows(named=True), state.first_eviction)),
            ))
        rec = self.replay.rec
        interval = recording_interval(rec)
        evictions = tuple(self._evictions)
        settings = {**self.replay.request.describe(),
                    "digest": settings_digest([r.settings for r in self.replay.runs])}
        extra = [*getattr(rec, "notes", [])]
        if rec.manifest.source == "scenario":
            extra.append("a scenario recording: its 'real' evictions are those the scenario's own kubelet made in the "
                         "closed loop that generated it (evicted pods stop using anything from then on)")
        base_notes: tuple[str, ...] = NOTES
        if self.replay.request.counterfactual:
            removed = sum(r.counterfactual_removed for r in self.replay.runs)
            base_notes = (NOTES[0], f"{COUNTERFACTUAL_NOTE}; {removed} pod stats entries removed from later summaries",
                          *NOTES[2:])
        return ReplayResult(
            recording=str(rec.root), interval_seconds=interval, settings=settings, nodes=tuple(nodes),
            evictions=evictions, matches=match(real_evictions(rec), evictions, interval),
            notes=(*base_notes, *extra, *notes),
            signals=pl.DataFrame(self._signals, schema=SIGNALS_SCHEMA),
            conditions=pl.DataFrame(self._conditions, schema=CONDITIONS_SCHEMA).sort("node", "from", "condition"),
            overcommit=overcommit,
        )


def collect(replay: Replay, passes: Iterable[Pass]) -> ReplayResult:
    builder = ResultBuilder(replay)
    for p in passes:
        builder.add(p)
    return builder.finish()
