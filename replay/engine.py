"""Replaying a recording: one eviction manager per node, driven tick by tick, checked against reality.

The recording gives, per node and tick, a Summary-shaped dict and the pods in force; this module
feeds them to :class:`~replay.kubelet.manager.EvictionManager` at the tick's time and collects what
the kubelet would have done (evictions, node-condition changes), then matches the predictions with
the real ``Evicted`` events and pod statuses the recording kept as ground truth.

What a replay cannot know is said in its notes: pods the replay evicts keep appearing in later
summaries (the recording shows what really happened), so they are only removed from the candidates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from recordings.reader import Recording
from replay.context import active_pods, infer_topology, resolve_profile
from replay.errors import InputError
from replay.kubelet.api import Node, Pod, parse_nodes, parse_pods, parse_summary
from replay.kubelet.config import EvictionConfig, config_from_flags, config_from_kubelet_configuration
from replay.kubelet.manager import EvictionManager, FsTopology
from replay.kubelet.versions import VersionProfile

Progress = Callable[[int], None]
"""Called with the number of passes just made."""


@dataclass(frozen=True)
class PredictedEviction:
    node: str
    tick: int
    time: datetime
    namespace: str
    pod: str
    uid: str
    cause: str
    grace_period_override: int
    message: str
    annotations: Mapping[str, str]


@dataclass(frozen=True)
class RealEviction:
    node: str | None
    namespace: str | None
    pod: str | None
    uid: str | None
    message: str | None
    time: datetime | None
    source: str


@dataclass(frozen=True)
class Match:
    real: RealEviction
    predicted: PredictedEviction | None

    @property
    def same_message(self) -> bool:
        return self.predicted is not None and self.real.message == self.predicted.message


@dataclass(frozen=True)
class NodeReplay:
    node: str
    kubelet_version: str
    version_note: str
    config_source: str
    topology: FsTopology
    passes: int
    gaps: int
    predicted: tuple[PredictedEviction, ...]
    condition_changes: tuple[tuple[datetime, tuple[str, ...]], ...]
    reasons: Mapping[str, int]
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplayReport:
    nodes: tuple[NodeReplay, ...]
    matches: tuple[Match, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def predicted(self) -> tuple[PredictedEviction, ...]:
        return tuple(e for n in self.nodes for e in n.predicted)


def _node_object(rec: Recording, node: str) -> Node | None:
    raw = rec.node_object_at(node)
    if raw is None:
        return None
    found = parse_nodes(raw, source=f"recording node {node}")
    return found[0] if found else None


def _config_for(rec: Recording, node: str, override: EvictionConfig | None, os: str,
                prof: VersionProfile) -> EvictionConfig:
    """The configuration given on the command line, else the recorded /configz, else the defaults."""
    if override is not None:
        return override
    configz = rec.configz(node)
    if configz is not None:
        doc = configz if "kubeletconfig" in configz else {"kubeletconfig": configz}
        return config_from_kubelet_configuration(doc, source=f"recorded /configz of {node}", profile=prof)
    return config_from_flags(prof, os=os)


def replay_node(
    rec: Recording,
    node: str,
    *,
    version: str | None,
    feature_gates: Mapping[str, bool] | None,
    config: EvictionConfig | None,
    topology: FsTopology | None,
    progress: Progress | None = None,
) -> NodeReplay:
    """Run one node's recorded ticks through a fresh eviction manager."""
    node_obj = _node_object(rec, node)
    prof, version_note = resolve_profile(version, node_obj, feature_gates)
    os = node_obj.os if node_obj is not None and node_obj.os else "linux"
    cfg = _config_for(rec, node, config, os, prof)
    ticks = {t.index: t for t in rec.ticks(node)}
    gaps = sum(1 for t in ticks.values() if not t.ok)
    manager: EvictionManager | None = None
    chosen_topology = topology or FsTopology()
    evicted_uids: set[str] = set()
    predicted: list[PredictedEviction] = []
    changes: list[tuple[datetime, tuple[str, ...]]] = []
    reasons: Counter[str] = Counter()
    errors: list[str] = []
    last_conditions: tuple[str, ...] = ()
    passes = 0
    pods_cache: tuple[list[object], list[Pod]] | None = None
    for tick, raw_summary in rec.summaries(node):
        info = ticks.get(tick)
        if info is None:
            continue
        summary = parse_summary(raw_summary, source=f"recording {node} tick {tick}")
        if manager is None:
            if topology is None:
                chosen_topology, _ = infer_topology(summary)
            manager = EvictionManager(cfg, prof, chosen_topology, platform=os)
        raw_pods = rec.pods_at(node, info.time)
        if pods_cache is None or pods_cache[0] != raw_pods:
            pods_cache = (list(raw_pods), list(parse_pods({"kind": "PodList", "items": raw_pods},
                                                           source=f"recording {node} pods")))
        candidates = [p for p in active_pods(pods_cache[1], node) if p.uid not in evicted_uids]
        result = manager.synchronize(summary, candidates, info.time)
        passes += 1
        if progress is not None:
            progress(1)
        if result.error:
            errors.append(result.error)
        reasons[result.reason if not result.evictions else "evicted"] += 1
        if result.node_conditions != last_conditions:
            changes.append((info.time, tuple(result.node_conditions)))
            last_conditions = tuple(result.node_conditions)
        for eviction in result.evictions:
            evicted_uids.add(eviction.pod.uid)
            predicted.append(PredictedEviction(
                node, tick, info.time, eviction.pod.namespace, eviction.pod.name, eviction.pod.uid, eviction.cause,
                eviction.grace_period_override, eviction.message, dict(eviction.annotations),
            ))
    return NodeReplay(
        node=node, kubelet_version=prof.version, version_note=version_note, config_source=cfg.describe(),
        topology=chosen_topology, passes=passes, gaps=gaps, predicted=tuple(predicted),
        condition_changes=tuple(changes), reasons=dict(reasons), errors=tuple(dict.fromkeys(errors)),
    )


def real_evictions(rec: Recording) -> list[RealEviction]:
    """The ground truth the recording kept: Evicted events and pods failed with reason Evicted."""
    out = []
    for row in rec.evictions():
        out.append(RealEviction(row.get("node"), row.get("namespace"), row.get("name"), row.get("uid"),
                                row.get("message"), row.get("time") or row.get("observed"), str(row.get("source"))))
    return out


def match(real: list[RealEviction], predicted: tuple[PredictedEviction, ...]) -> tuple[Match, ...]:
    """Pair each real eviction with the replay's eviction of the same pod (by UID, else namespace/name)."""
    by_uid = {p.uid: p for p in predicted if p.uid}
    by_name = {(p.namespace, p.pod): p for p in predicted}
    seen: set[tuple[str | None, str | None, str | None]] = set()
    matches = []
    for r in real:
        key = (r.uid, r.namespace, r.pod)
        if key in seen:
            continue
        seen.add(key)
        found = by_uid.get(r.uid or "") or by_name.get((r.namespace or "", r.pod or ""))
        matches.append(Match(r, found))
    return tuple(matches)


def replay_recording(
    rec: Recording,
    *,
    version: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
    config: EvictionConfig | None = None,
    topology: FsTopology | None = None,
    nodes: list[str] | None = None,
    progress: Progress | None = None,
) -> ReplayReport:
    """Replay every (or the chosen) node of a recording and match the predictions with reality."""
    names = rec.nodes()
    if nodes:
        unknown = sorted(set(nodes) - set(names))
        if unknown:
            raise InputError(f"no such node in the recording: {', '.join(unknown)}; it has {', '.join(names)}",
                             field="--node")
        names = [n for n in names if n in nodes]
    results = tuple(
        replay_node(rec, n, version=version, feature_gates=feature_gates, config=config, topology=topology,
                    progress=progress)
        for n in names
    )
    predicted = tuple(e for r in results for e in r.predicted)
    notes = [
        "the recording shows what really happened: a pod the replay evicts keeps its recorded stats afterwards, "
        "so it is only removed from the eviction candidates",
        "node-level reclaim (image/container GC) is assumed to free nothing; the next recorded tick shows what it did",
    ]
    return ReplayReport(results, match(real_evictions(rec), predicted), tuple(notes))
