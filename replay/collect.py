"""The one producer of results: node partials in, a :class:`~replay.results.ReplayResult` out.

Every way of replaying a node (the engine's columnar path, the per-tick reference, any process or
Ray worker) hands over a :class:`NodePartial`, accumulated by one :class:`NodeAccumulator`;
:class:`ResultBuilder` takes partials in node order through :meth:`ResultBuilder.add` and
:meth:`ResultBuilder.finish` computes what spans nodes (eviction ids, matches with reality, the
settings digest, notes).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from kube.quantity import Quantity
from recordings.reader import Recording
from replay.counterfactual import NOTE as COUNTERFACTUAL_NOTE
from replay.impact import OVERCOMMIT_RESOURCES, PodTotals, explain_ranking, overcommit_lead, owner_impact, pod_totals
from replay.kernel import kernel_kills, ready_transitions, too_fast
from replay.kubelet.api import Pod, parse_nodes
from replay.kubelet.manager import NO_ACTIVE_PODS, FsTopology, SyncResult
from replay.kubelet.manager import Eviction as KubeletEviction
from replay.kubelet.ranking import RankFacts, pod_priority, rank_facts
from replay.kubelet.thresholds import Threshold, ThresholdValue, get_threshold_quantity
from replay.matching import admission_rejections, match, real_evictions, recording_interval
from replay.reference import NodeRun, Pass, Replay
from replay.results import (
    CONDITIONS_SCHEMA,
    OVERCOMMIT_SCHEMA,
    SIGNALS_SCHEMA,
    Eviction,
    Match,
    NodeResult,
    RankedPod,
    ReplayResult,
    ThresholdSetting,
)
from replay.settings import NodeSettings, SettingsRequest, settings_digest

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _passes(count: int) -> str:
    return f"{count} pass" if count == 1 else f"{count} passes"


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
        out.append(
            ThresholdSetting(
                i, t.signal, t.operator, quantity, percentage, t.grace_period, t.is_hard, mr_q, mr_p, t.describe()
            )
        )
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


def allocatable(run: NodeRun) -> dict[str, int]:
    """The node object's allocatable memory and ephemeral-storage (the recording's latest node object)."""
    raw = run.rec.node_object_at(run.node)
    nodes = parse_nodes(raw, source=f"recording node {run.node}") if raw is not None else ()
    if not nodes:
        return {}
    return {r: nodes[0].allocatable[r].int_value() for r in OVERCOMMIT_RESOURCES if r in nodes[0].allocatable}


def eviction_record(
    p: Pass, run: NodeRun, eviction: KubeletEviction, eviction_id: int, *, rankings: bool = True
) -> Eviction:
    """One eviction as the results model keeps it: the threshold, the observation, the full ranking and impact.
    ``rankings`` False: no ranking (a search keeps every candidate's evictions on every node, each ranking every
    pod of its node: what made its memory grow with the nodes)."""
    result: SyncResult = p.result
    pod = eviction.pod
    threshold = (
        result.threshold_to_reclaim if eviction.cause == getattr(result.threshold_to_reclaim, "signal", None) else None
    )
    observed = threshold_value = None
    ranking: tuple[RankedPod, ...] = ()
    if threshold is not None:
        obs = result.observations.get(threshold.signal)
        if obs is not None:
            observed = _int(obs.available)
            threshold_value = get_threshold_quantity(threshold.value, obs.capacity).int_value()
    if threshold is not None and rankings:
        facts = rank_facts(
            result.ranking,
            result.stats,
            threshold.signal,
            run.topology.dedicated_image_fs,
            run.topology.split_container_image_fs,
            run.settings.profile,
        )
        ranking = explain_ranking(
            tuple(
                RankedPod(
                    i,
                    f.namespace,
                    f.pod,
                    ranked.uid,
                    ranked.qos_class,
                    f.priority,
                    f.has_stats,
                    f.exceeds_request,
                    _int(f.usage),
                    _int(f.request),
                    _int(f.usage_above_request),
                    f.process_count,
                    f.critical,
                    rank_reason(f),
                )
                for i, (f, ranked) in enumerate(zip(facts, result.ranking, strict=True), 1)
            ),
            pod.uid,
            threshold.signal,
        )
    owner_kind, owner_name = _owner(pod)
    comes_back, impact = owner_impact(owner_kind, owner_name)
    return Eviction(
        id=eviction_id,
        node=p.node,
        tick=p.tick,
        time=p.time,
        namespace=pod.namespace,
        pod=pod.name,
        uid=pod.uid,
        owner_kind=owner_kind,
        owner_name=owner_name,
        qos=pod.qos_class,
        priority=pod_priority(pod),
        cause=eviction.cause,
        signal=threshold.signal if threshold else None,
        hard=threshold.is_hard if threshold else None,
        observed_available=observed,
        threshold_value=threshold_value,
        grace_period_override=eviction.grace_period_override,
        message=eviction.message,
        annotations=dict(eviction.annotations),
        ranking=ranking,
        comes_back=comes_back,
        impact=impact,
        map_order_alternatives=(
            tuple(t.describe() for t in result.map_order_alternatives) if threshold is not None else ()
        ),
    )


@dataclass
class NodePartial:
    """One node's share of a ReplayResult under one settings request (eviction ids local, from 0)."""

    node: str
    settings: NodeSettings
    topology: FsTopology
    topology_source: str
    thresholds: list[Threshold] | None
    """The manager's thresholds (None: no manager, no pass)."""
    gaps: int
    counterfactual_removed: int
    passes: int
    reasons: dict[str, int]
    errors: list[str]
    first: datetime | None
    last: datetime | None
    first_eviction: datetime | None
    evictions: list[Eviction]
    signals: pl.LazyFrame
    """In memory, or a scan of the node's file in the run's spool directory."""
    conditions: pl.DataFrame
    """Every interval, those still on at the end with ``to`` null."""
    overcommit: pl.LazyFrame


class NodeAccumulator:
    """What one node's passes add up to, whichever path ran them: counts, condition intervals, evictions and
    the signal and overcommit frames (appended per pass or per chunk)."""

    def __init__(self, node: str, *, frames: bool = True, rankings: bool = True) -> None:
        self.node = node
        self.frames = frames
        """Build the signal and overcommit frames (a what-if without an output directory, or a tuning search,
        needs only counts, conditions and evictions)."""
        self.rankings = rankings
        """Keep each eviction's ranking (a tuning search without an output directory reads none)."""
        self.passes = 0
        self.reasons: Counter[str] = Counter()
        self.errors: list[str] = []
        self.first: datetime | None = None
        self.last: datetime | None = None
        self.open: dict[str, tuple[datetime, int]] = {}
        self.first_eviction: datetime | None = None
        self.evictions: list[Eviction] = []
        self.signal_frames: list[pl.DataFrame] = []
        self.over_frames: list[pl.DataFrame] = []
        self._cond_rows: dict[str, list[Any]] = {name: [] for name in CONDITIONS_SCHEMA.names()}

    def counted(self, reasons: Iterable[str], first: datetime, last: datetime) -> None:
        """Passes (in order) from ``first`` to ``last``, each ending for its reason."""
        before = self.passes
        self.reasons.update(reasons)
        self.passes = sum(self.reasons.values())
        if self.passes > before:
            self.first = self.first or first
            self.last = last

    def error(self, message: str | None) -> None:
        if message:
            self.errors.append(message)

    def conditions(self, tick: int, when: datetime, conditions: Sequence[str]) -> None:
        """The node conditions reported at a pass: those gone are closed there, new ones opened."""
        on = set(conditions)
        for condition in sorted(set(self.open) - on):
            start, start_tick = self.open.pop(condition)
            self._close(condition, start, start_tick, when, tick)
        for condition in conditions:
            self.open.setdefault(condition, (when, tick))

    def _close(
        self, condition: str, start: datetime, start_tick: int, end: datetime | None, end_tick: int | None
    ) -> None:
        for name, value in (
            ("node", self.node),
            ("condition", condition),
            ("from", start),
            ("to", end),
            ("from_tick", start_tick),
            ("to_tick", end_tick),
        ):
            self._cond_rows[name].append(value)

    def evicted(self, p: Pass, run: NodeRun, eviction: KubeletEviction) -> Eviction:
        self.first_eviction = self.first_eviction or p.time
        record = eviction_record(p, run, eviction, len(self.evictions), rankings=self.rankings)
        self.evictions.append(record)
        return record

    def partial(self, run: NodeRun, thresholds: Sequence[Threshold] | None, spool: Path | None = None) -> NodePartial:
        """The node's share; conditions still on stay open (``to`` null). With a ``spool`` directory the two
        frames that grow with passes are written there and the partial holds scans of them, so neither a
        worker's pipe nor the parent's memory carries them."""
        for condition, (start, start_tick) in self.open.items():
            self._close(condition, start, start_tick, None, None)
        self.open = {}
        signals = _spooled(_concat(self.signal_frames, SIGNALS_SCHEMA), spool)
        overcommit = _spooled(_concat(self.over_frames, OVERCOMMIT_SCHEMA), spool)
        self.signal_frames, self.over_frames = [], []
        return NodePartial(
            self.node,
            run.settings,
            run.topology,
            run.topology_source,
            None if thresholds is None else list(thresholds),
            run.gaps,
            run.counterfactual_removed,
            self.passes,
            dict(self.reasons),
            self.errors,
            self.first,
            self.last,
            self.first_eviction,
            self.evictions,
            signals,
            pl.DataFrame(self._cond_rows, schema=CONDITIONS_SCHEMA),
            overcommit,
        )


def _concat(frames: list[pl.DataFrame], schema: pl.Schema) -> pl.DataFrame:
    frames = [f for f in frames if f.height]
    return pl.concat(frames, rechunk=True) if frames else pl.DataFrame(schema=schema)


def _spooled(df: pl.DataFrame, spool: Path | None) -> pl.LazyFrame:
    """``df`` as a scan of a new private file in ``spool`` (in memory without one, or when empty)."""
    if spool is None or not df.height:
        return df.lazy()
    from replay.outdir import write_parquet_private

    path = spool / f"{uuid.uuid4().hex}.parquet"
    write_parquet_private(df, path)
    return pl.scan_parquet(path)


def _concat_lazy(frames: list[pl.LazyFrame], schema: pl.Schema) -> pl.LazyFrame:
    return pl.concat(frames, how="vertical") if frames else pl.LazyFrame(schema=schema)


class ReferenceNode:
    """The per-tick reference's passes of one node into a :class:`NodeAccumulator` (row by row)."""

    def __init__(self, run: NodeRun, *, frames: bool = True, rankings: bool = True) -> None:
        self.run = run
        self.acc = NodeAccumulator(run.node, frames=frames, rankings=rankings)
        self.allocatable = allocatable(run)
        self._signals: dict[str, list[Any]] = {name: [] for name in SIGNALS_SCHEMA.names()}
        self._overcommit: dict[str, list[Any]] = {name: [] for name in OVERCOMMIT_SCHEMA.names()}
        self._totals: dict[int, tuple[Pod, PodTotals]] = {}

    def add(self, p: Pass) -> None:
        acc, result = self.acc, p.result
        acc.counted([result.reason if not result.evictions else "evicted"], p.time, p.time)
        acc.error(result.error)
        self._add_signals(p)
        acc.conditions(p.tick, p.time, result.node_conditions)
        self._add_overcommit(p)
        for eviction in result.evictions:
            acc.evicted(p, self.run, eviction)

    def _pod_totals(self, pod: Pod) -> PodTotals:
        found = self._totals.get(id(pod))
        if found is None or found[0] is not pod:
            found = self._totals[id(pod)] = (pod, pod_totals(pod))
        return found[1]

    def _add_overcommit(self, p: Pass) -> None:
        """Σ requests / Σ limits of the pods in force at this pass (the candidates: active, not yet evicted)."""
        totals = [self._pod_totals(pod) for pod in p.candidates]
        cols = self._overcommit
        for resource in OVERCOMMIT_RESOURCES:
            for name, value in (
                ("node", p.node),
                ("tick", p.tick),
                ("time", p.time),
                ("resource", resource),
                ("requests", sum(t.requests.get(resource, 0) for t in totals)),
                ("limits", sum(t.limits.get(resource, 0) for t in totals)),
                ("allocatable", self.allocatable.get(resource)),
                ("pods_without_limit", sum(1 for t in totals if resource in t.unbounded)),
            ):
                cols[name].append(value)

    def _add_signals(self, p: Pass) -> None:
        manager = self.run.manager
        thresholds = manager.thresholds if manager is not None else []
        met, actionable = p.result.thresholds_met, p.result.thresholds_actionable
        cols = self._signals
        for signal, obs in p.result.observations.items():
            available, capacity = _int(obs.available), _int(obs.capacity)
            on_signal: list[tuple[int | None, Threshold | None]] = [
                (i, t) for i, t in enumerate(thresholds) if t.signal == signal
            ]
            for tid, t in on_signal or [(None, None)]:
                cols["node"].append(p.node)
                cols["tick"].append(p.tick)
                cols["time"].append(p.time)
                cols["signal"].append(signal)
                cols["available"].append(available)
                cols["capacity"].append(capacity)
                cols["threshold_id"].append(tid)
                cols["threshold_value"].append(
                    None if t is None else get_threshold_quantity(t.value, obs.capacity).int_value()
                )
                cols["met"].append(None if t is None else t in met)
                cols["actionable"].append(None if t is None else t in actionable)

    def partial(self, spool: Path | None = None) -> NodePartial:
        if self.acc.frames:
            self.acc.signal_frames.append(pl.DataFrame(self._signals, schema=SIGNALS_SCHEMA))
            self.acc.over_frames.append(pl.DataFrame(self._overcommit, schema=OVERCOMMIT_SCHEMA))
        manager = self.run.manager
        return self.acc.partial(self.run, None if manager is None else manager.thresholds, spool)


def reference_partial(
    run: NodeRun, spool: Path | None = None, *, frames: bool = True, rankings: bool = True
) -> NodePartial:
    """One node on the per-tick reference path."""
    node = ReferenceNode(run, frames=frames, rankings=rankings)
    for p in run.passes():
        node.add(p)
    return node.partial(spool)


class ResultBuilder:
    """One request's node partials (in node order, from any path or worker) → one :class:`ReplayResult`."""

    def __init__(self, rec: Recording, request: SettingsRequest, *, spool: object = None) -> None:
        self.rec = rec
        self.request = request
        self.spool = spool
        """Kept by the result: what keeps spooled frames' files alive."""
        self._partials: list[NodePartial] = []
        self._evictions: list[Eviction] = []

    def add(self, partial: NodePartial) -> None:
        """A node's share; its evictions are numbered after those of the nodes added before it."""
        base = len(self._evictions)
        self._evictions.extend(replace(e, id=base + e.id) for e in partial.evictions)
        self._partials.append(partial)

    def finish(self, notes: Iterable[str] = ()) -> ReplayResult:
        nodes = []
        rec = self.rec
        interval = recording_interval(rec)
        evictions = tuple(self._evictions)
        matches = match(real_evictions(rec), evictions, interval)
        parted = horizons(matches, evictions)
        overcommit = _concat_lazy([p.overcommit for p in self._partials], OVERCOMMIT_SCHEMA)
        for p in self._partials:
            cfg = p.settings.config
            thresholds = p.thresholds if p.thresholds is not None else list(cfg.thresholds)
            nodes.append(
                NodeResult(
                    node=p.node,
                    kubelet_version=p.settings.profile.version,
                    version_source=p.settings.version_source,
                    platform=p.settings.platform,
                    dedicated_image_fs=p.topology.dedicated_image_fs,
                    split_container_image_fs=p.topology.split_container_image_fs,
                    topology_source=p.topology_source or "no data",
                    config_source=cfg.source,
                    settings_sources=dict(cfg.sources),
                    thresholds=threshold_settings(thresholds),
                    pressure_transition_period_ns=cfg.pressure_transition_period,
                    max_pod_grace_period_s=cfg.max_pod_grace_period_seconds,
                    passes=p.passes,
                    gaps=p.gaps,
                    errors=tuple(dict.fromkeys(p.errors)),
                    reasons=dict(p.reasons),
                    first_time=p.first,
                    last_time=p.last,
                    overcommit_lead_s=(
                        {}
                        if p.first_eviction is None
                        else overcommit_lead(p.overcommit.collect().iter_rows(named=True), p.first_eviction)
                    ),
                    horizon=parted.get(p.node, (None, ""))[0],
                    horizon_reason=parted.get(p.node, (None, ""))[1],
                )
            )
        settings = {**self.request.describe(), "digest": settings_digest([p.settings for p in self._partials])}
        extra = [*getattr(rec, "notes", [])]
        extra += [f"recording source ({rec.manifest.source}): {note}" for note in rec.manifest.notes]
        unfresh = rec.unfresh_pods()
        for p in self._partials:
            stale, missing = unfresh.get(p.node, (0, 0))
            if stale or missing:
                extra.append(
                    f"{p.node}: the recorder had no fresh pod list at {stale + missing} of its passes "
                    f"({stale} stale, {missing} missing): the pods in force there are the last ones listed, "
                    "so a pod started or gone since may be missing from, or still in, the ranking"
                )
        for p in self._partials:
            if p.reasons.get(NO_ACTIVE_PODS):
                extra.append(
                    f"{p.node}: no pods known at {_passes(p.reasons[NO_ACTIVE_PODS])} where a threshold was met "
                    f"(the recording holds no pod list for them), so nothing could be evicted there: pass the pod "
                    f"list (kubectl get pods -A --field-selector spec.nodeName={p.node} -o json)"
                )
        if rec.manifest.source == "scenario":
            extra.append(
                "a scenario recording: its 'real' evictions are those the scenario's own kubelet made in the "
                "closed loop that generated it (evicted pods stop using anything from then on)"
            )
        base_notes: tuple[str, ...] = NOTES
        if self.request.counterfactual:
            removed = sum(p.counterfactual_removed for p in self._partials)
            base_notes = (
                NOTES[0],
                f"{COUNTERFACTUAL_NOTE}; {removed} pod stats entries removed from later summaries",
                *NOTES[2:],
            )
        # the kernel's side (issue 17): its recorded kills, Ready transitions, memory gone between two passes
        signals = _concat_lazy([p.signals for p in self._partials], SIGNALS_SCHEMA)
        names = [p.node for p in self._partials]
        kills, earlier = kernel_kills(rec, names)
        if earlier:
            extra.append(
                f"{earlier} kernel kill{'s' if earlier != 1 else ''} from before the recording's first tick (a "
                "pod's last state) not counted: no setting replayed here could have changed "
                f"{'them' if earlier != 1 else 'it'}"
            )
        races = too_fast((p.signals for p in self._partials), nodes, kills)
        nodes = [replace(n, too_fast=races.get(n.node, ())) for n in nodes]
        return ReplayResult(
            recording=str(rec.root),
            interval_seconds=interval,
            settings=settings,
            nodes=tuple(nodes),
            evictions=evictions,
            matches=matches,
            notes=(*base_notes, *extra, *notes),
            signals=signals,
            conditions=_concat([p.conditions for p in self._partials], CONDITIONS_SCHEMA).sort(
                "node", "from", "condition"
            ),
            overcommit=overcommit,
            spool=self.spool,
            admission_rejections=tuple(admission_rejections(rec)),
            kernel_kills=kills,
            ready_transitions=ready_transitions(rec, names),
        )


def horizons(matches: Sequence[Match], evictions: Sequence[Eviction]) -> dict[str, tuple[datetime, str]]:
    """Per node, the first moment the replay and the recording part ways, and why: a real eviction the replay
    does not make (or not within one interval of it), or an eviction the replay makes that the recording
    does not show. A real eviction whose node is unknown cannot be placed and parts nothing."""
    out: dict[str, tuple[datetime, str]] = {}

    def part(node: str, when: datetime, why: str) -> None:
        if node not in out or when < out[node][0]:
            out[node] = (when, why)

    by_id = {e.id: e for e in evictions}
    agreed: set[int] = set()
    for m in matches:
        r = m.real
        if m.predicted_id is not None:
            agreed.add(m.predicted_id)
            if m.within_interval is not False:
                continue
            e = by_id[m.predicted_id]
            assert r.time is not None  # within_interval is False only when both times are known
            part(
                e.node,
                min(e.time, r.time),
                f"the replay evicts {e.namespace}/{e.pod} at "
                f"{e.time.isoformat()}, the recording at {r.time.isoformat()}",
            )
        elif r.node and r.time is not None:
            part(r.node, r.time, f"the recording shows {r.namespace}/{r.pod} evicted, which the replay does not evict")
    for e in evictions:
        if e.id not in agreed:
            part(e.node, e.time, f"the replay evicts {e.namespace}/{e.pod}, which the recording does not show evicted")
    return out


def assemble(
    rec: Recording, request: SettingsRequest, partials: Iterable[NodePartial], notes: Iterable[str] = ()
) -> ReplayResult:
    builder = ResultBuilder(rec, request)
    for p in partials:
        builder.add(p)
    return builder.finish(notes)


def collect(replay: Replay, passes: Iterable[Pass]) -> ReplayResult:
    """The reference path's passes (of ``replay``'s runs, in any node order) → the result."""
    nodes = {run.node: ReferenceNode(run) for run in replay.runs}
    for p in passes:
        nodes[p.node].add(p)
    return assemble(replay.rec, replay.request, (n.partial() for n in nodes.values()))
