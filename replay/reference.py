"""The per-tick reference path: one eviction manager per node, driven pass by pass on whole summaries.

Each node's recorded ticks become ``synchronize`` passes at the stats' sample time, with the pods
the kubelet had active *at that time* (a pod the kubelet evicted turns ``Failed`` a moment later;
a recorder that polls after that must not hide it from the decision it caused). This is the oracle:
the engine (:mod:`replay.engine`, the columnar :mod:`replay.fast` path) is held equal to it by
property tests, and ``--reference`` runs it instead. :class:`NodeRun` is also where the engine
resolves a node's settings and follows its pods.

What a replay cannot know is said in its notes: pods the replay evicts keep appearing in later
summaries (the recording shows what really happened), so they are only removed from the candidates.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from kube.errors import InputError
from recordings.pod_timeline import PodsInForce, PodVersion, index_pods_by_node
from recordings.reader import Recording, TickInfo
from replay.context import active_pods, infer_topology
from replay.counterfactual import disk_emptydirs, hold_pods, really_evicted, remove_pods
from replay.kubelet.api import Node, Pod, Summary, parse_nodes, parse_pods, parse_summary
from replay.kubelet.manager import EvictionManager, FsTopology, SyncResult
from replay.settings import NodeSettings, SettingsRequest, resolve_node


def system_container_names(rec: Recording, node: str) -> list[str]:
    """The system containers ``node``'s summaries report (read only when nothing else names its OS)."""
    frame = rec.scan("system_container_stats").filter(pl.col("node") == node).select("name").unique().collect()
    return [str(n) for n in frame["name"].to_list() if n is not None]


def sample_time(summary: Summary) -> datetime | None:
    """When the stats were taken: what the kubelet's observations are stamped with (memory first)."""
    node = summary.node
    for stamp in (
        node.memory.time if node.memory else None,
        node.fs.time if node.fs else None,
        node.rlimit.time if node.rlimit else None,
    ):
        if stamp is not None:
            return stamp
    return None


@dataclass(frozen=True)
class Pass:
    """One synchronize pass of one node."""

    node: str
    tick: int
    tick_time: datetime
    """When the recorder's tick started (its poll time)."""
    time: datetime
    """The stats' sample time, used as the manager's clock and to pick the pods in force."""
    result: SyncResult
    candidates: tuple[Pod, ...]


@dataclass
class NodeRun:
    """The replay of one node: its settings, its manager, its pods cursor."""

    rec: Recording
    node: str
    request: SettingsRequest
    pod_versions: list[PodVersion]
    settings: NodeSettings = field(init=False)
    topology: FsTopology = field(init=False)
    topology_source: str = field(init=False, default="")
    manager: EvictionManager | None = field(init=False, default=None)
    ticks: list[TickInfo] = field(init=False)
    evicted_uids: set[str] = field(init=False, default_factory=set)
    counterfactual_removed: int = field(init=False, default=0)
    """Pod stats entries ``--counterfactual`` took off later summaries."""
    _emptydirs: dict[str, tuple[str, ...]] = field(init=False, default_factory=dict)
    _pods: PodsInForce = field(init=False)
    ticks_given: InitVar[list[TickInfo] | None] = None
    parsed_given: InitVar[dict[int, Pod] | None] = None
    _parsed: dict[int, Pod] = field(init=False, default_factory=dict)

    def __post_init__(self, ticks_given: list[TickInfo] | None, parsed_given: dict[int, Pod] | None) -> None:
        node_obj = _node_object(self.rec, self.node)
        self.settings = resolve_node(
            self.request,
            self.node,
            node_obj,
            self.rec.configz(self.node),
            (v.decode() for v in self.pod_versions if not v.deleted),
            lambda: system_container_names(self.rec, self.node),
        )
        self.topology = self.request.topology or FsTopology()
        self.topology_source = "as given on the command line" if self.request.topology else ""
        self.ticks = self.rec.ticks(self.node) if ticks_given is None else ticks_given
        if parsed_given is not None:
            self._parsed = parsed_given  # another variant's: the same pod versions, parsed once
        self._pods = PodsInForce(self.pod_versions)

    @property
    def gaps(self) -> int:
        return sum(1 for t in self.ticks if not t.ok)

    @property
    def ok_ticks(self) -> int:
        return sum(1 for t in self.ticks if t.ok)

    def _pod(self, version: PodVersion) -> Pod:
        pod = self._parsed.get(version.seq)
        if pod is None:
            pod = parse_pods(version.decode(), source=f"recording pod {version.key}")[0]
            self._parsed[version.seq] = pod
        return pod

    def pods_at(self, when: datetime, summary: Summary) -> list[Pod]:
        """The pods in force at ``when``, plus any with stats whose object was observed only later."""
        in_force = self._pods.at(when)
        pods = [self._pod(v) for v in in_force.values()]
        for stats in summary.pods:
            uid = stats.pod_ref.uid
            if uid and uid not in in_force:
                first = self._pods.first_version(uid)
                if first is not None and first.observed > when:
                    pods.append(self._pod(first))
        return pods

    def passes(self, *, until_tick: int | None = None) -> Iterator[Pass]:
        """Every recorded tick with data, in order, as a synchronize pass (stop after ``until_tick``)."""
        info_by_tick = {t.index: t for t in self.ticks}
        # counterfactual, the other direction: pods the recording shows evicted (UID → when) are held at their
        # last stats entry while this replay has not evicted them (replay/COUNTERFACTUAL.md)
        really = really_evicted(self.rec, self.node) if self.request.counterfactual else {}
        last_stats: dict[str, dict[str, Any]] = {}
        running: dict[str, Pod | None] = {}
        for tick, raw_summary in self.rec.summaries(self.node):
            if until_tick is not None and tick > until_tick:
                return
            info = info_by_tick.get(tick)
            if info is None or not info.ok:
                continue
            if really:
                for entry in raw_summary.get("pods") or ():
                    uid = (entry.get("podRef") or {}).get("uid") if isinstance(entry, dict) else None
                    if uid in really and uid not in self.evicted_uids:
                        last_stats[uid] = entry
            if self.request.counterfactual and self.evicted_uids:
                raw_summary, freed = remove_pods(
                    raw_summary, self.evicted_uids, self.topology, emptydir_volumes=self._emptydirs
                )
                self.counterfactual_removed += len(freed)
            summary = parse_summary(raw_summary, source=f"recording {self.node} tick {tick}")
            if self.manager is None:
                if self.request.topology is None:
                    self.topology, self.topology_source = infer_topology(summary)
                self.manager = EvictionManager(
                    self.settings.config, self.settings.profile, self.topology, platform=self.settings.platform
                )
            when = sample_time(summary) or info.time
            held: dict[str, dict[str, Any]] = {}
            if really:
                present = {s.pod_ref.uid for s in summary.pods}
                held = {
                    uid: last_stats[uid]
                    for uid, at in really.items()
                    if uid in last_stats and uid not in self.evicted_uids and uid not in present and when >= at
                }
            held_pods: list[Pod] = []
            if held:
                for uid in held:
                    if uid not in running:
                        versions = [self._pod(v) for v in self.pod_versions if v.key == uid and not v.deleted]
                        found = next((p for p in reversed(versions) if p.phase not in ("Succeeded", "Failed")), None)
                        running[uid] = found
                        if found is not None:
                            self._emptydirs[uid] = disk_emptydirs(found)
                    pod = running[uid]
                    if pod is not None:
                        held_pods.append(pod)
                held = {uid: entry for uid, entry in held.items() if running[uid] is not None}
                raw_summary = hold_pods(raw_summary, held, self.topology, emptydir_volumes=self._emptydirs)
                summary = parse_summary(raw_summary, source=f"recording {self.node} tick {tick} (pods held)")
            in_force = [p for p in self.pods_at(when, summary) if p.uid not in held]
            candidates = [p for p in active_pods([*in_force, *held_pods], self.node) if p.uid not in self.evicted_uids]
            result = self.manager.synchronize(summary, candidates, when)
            for eviction in result.evictions:
                self.evicted_uids.add(eviction.pod.uid)
                self._emptydirs[eviction.pod.uid] = disk_emptydirs(eviction.pod)
            yield Pass(self.node, tick, info.time, when, result, tuple(candidates))


def _node_object(rec: Recording, node: str) -> Node | None:
    raw = rec.node_object_at(node)
    if raw is None:
        return None
    found = parse_nodes(raw, source=f"recording node {node}")
    return found[0] if found else None


def select_nodes(rec: Recording, nodes: Sequence[str] | None) -> list[str]:
    """The nodes to replay: all, or those asked for (unknown names are an error naming the ones there are);
    a recording with no ticks or a node with only gaps is an error (listed as skipped with skip_bad)."""
    names = rec.nodes()
    if nodes:
        unknown = sorted(set(nodes) - set(names))
        if unknown:
            raise InputError(
                f"no such node in the recording: {', '.join(unknown)}; it has {', '.join(names)}", field="--node"
            )
        names = [n for n in names if n in nodes]
    return rec.check_replayable(names if nodes else None)  # None: all nodes, so an empty one gets the hint


class Replay:
    """A recording under one set of settings: one :class:`NodeRun` per node, settings resolved up front."""

    def __init__(
        self,
        rec: Recording,
        request: SettingsRequest,
        nodes: Sequence[str] | None = None,
        *,
        pods_by_node: Mapping[str, list[PodVersion]] | None = None,
    ) -> None:
        names = select_nodes(rec, nodes)
        self.rec = rec
        self.request = request
        pods = index_pods_by_node(rec.scan_objects().collect()) if pods_by_node is None else pods_by_node
        self.runs = [NodeRun(rec, n, request, pods.get(n, [])) for n in names]

    @property
    def total_passes(self) -> int:
        return sum(r.ok_ticks for r in self.runs)

    def passes(self) -> Iterator[Pass]:
        for run in self.runs:
            yield from run.passes()
