"""One node's eviction manager carried forward pass by pass, as a recording being written gains ticks.

``replay`` decides a finished recording; the live view (:mod:`live`) must decide each tick as it arrives,
keeping the manager's state (conditions, grace periods, the pressure transition period, the last
observations, minimum reclaim) instead of replaying from the start. :class:`NodeStepper` is that state
with the replay's own rules: the same settings resolution, topology inference, pods in force at the
stats' sample time (replay/reference.py: NodeRun.pods_at), candidates and ``synchronize``, so stepping
every tick of a recording decides what ``replay`` decides on it. :meth:`NodeStepper.resume` starts from
a recording's existing ticks on the fast path (replay/fast/driver.py: replay_node_until), so a live view
opened on a long recording does not replay it pass by pass.

:func:`first_to_go` ranks the candidates for a signal as the manager would if that signal's threshold
were reclaimed now (eviction_manager.go: signalToRankFunc, helpers.go: evictionMessage).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kube.errors import InputError
from kube.signals import SIGNAL_TO_RESOURCE
from recordings.pod_timeline import PodsInForce, PodVersion
from recordings.reader import Recording
from replay.context import active_pods, infer_topology
from replay.kubelet import pods as podutil
from replay.kubelet.api import Pod, Summary, parse_nodes, parse_pods, parse_summary
from replay.kubelet.manager import EvictionManager, FsTopology, SyncResult
from replay.kubelet.message import eviction_message
from replay.kubelet.thresholds import Threshold
from replay.reference import Pass, sample_time
from replay.settings import NodeSettings, SettingsRequest, resolve_node

__all__ = ["FirstToGo", "NodeStepper", "Pass", "first_to_go"]


class NodeStepper:
    """One node under one request: its settings, manager, pods in force and the pods it evicted."""

    def __init__(self, node: str, request: SettingsRequest, settings: NodeSettings) -> None:
        if request.counterfactual:
            raise InputError("a live view decides what happens; --counterfactual is for replays", field="settings")
        self.node = node
        self.request = request
        self.settings = settings
        self.topology: FsTopology = request.topology or FsTopology()
        self.manager: EvictionManager | None = None
        self.evicted_uids: set[str] = set()
        self._versions: list[PodVersion] = []
        self._pods = PodsInForce(self._versions)
        self._parsed: dict[int, Pod] = {}
        self.last: Pass | None = None
        self.last_summary: Summary | None = None

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

    @classmethod
    def resume(
        cls, rec: Recording, request: SettingsRequest, node: str, versions: list[PodVersion], until_tick: int
    ) -> NodeStepper:
        """The node's state after its last pass at or before ``until_tick``, replayed on the fast path."""
        from replay.fast.driver import replay_node_until

        run, found = replay_node_until(rec, request, node, {node: versions}, until_tick=until_tick)
        stepper = cls(node, request, run.settings)
        stepper.topology = run.topology
        stepper.manager = run.manager
        stepper.evicted_uids = set(run.evicted_uids)
        stepper.last = found
        for v in versions:
            stepper.add_pod_version(v)
        return stepper

    # -- input ----------------------------------------------------------------------------------
    def add_pod_version(self, version: PodVersion) -> None:
        """A pod version bound to this node, in observation order (recordings.pod_timeline.index_pods_by_node)."""
        self._pods.append(version)

    def _pod(self, version: PodVersion) -> Pod:
        pod = self._parsed.get(version.seq)
        if pod is None:
            pod = parse_pods(version.decode(), source=f"recording pod {version.key}")[0]
            self._parsed[version.seq] = pod
        return pod

    def pods_at(self, when: datetime, summary: Summary) -> list[Pod]:
        """replay/reference.py: NodeRun.pods_at — in force at ``when``, plus pods with stats whose object was
        observed only later (known here only once their object has arrived)."""
        in_force = self._pods.at(when)
        pods = [self._pod(v) for v in in_force.values()]
        for stats in summary.pods:
            uid = stats.pod_ref.uid
            if uid and uid not in in_force:
                first = self._pods.first_version(uid)
                if first is not None and first.observed > when:
                    pods.append(self._pod(first))
        return pods

    def candidates(self, when: datetime, summary: Summary) -> list[Pod]:
        return [p for p in active_pods(self.pods_at(when, summary), self.node) if p.uid not in self.evicted_uids]

    # -- one pass -------------------------------------------------------------------------------
    def step(self, tick: int, tick_time: datetime, raw_summary: Mapping[str, Any]) -> Pass:
        """One synchronize pass on a recorded tick with data (replay/reference.py: NodeRun.passes)."""
        summary = parse_summary(dict(raw_summary), source=f"recording {self.node} tick {tick}")
        if self.manager is None:
            if self.request.topology is None:
                self.topology, _source = infer_topology(summary)
            self.manager = EvictionManager(
                self.settings.config, self.settings.profile, self.topology, platform=self.settings.platform
            )
        when = sample_time(summary) or tick_time
        candidates = self.candidates(when, summary)
        result: SyncResult = self.manager.synchronize(summary, candidates, when)
        for eviction in result.evictions:
            self.evicted_uids.add(eviction.pod.uid)
        self.last = Pass(self.node, tick, tick_time, when, result, tuple(candidates))
        self.last_summary = summary
        return self.last


@dataclass(frozen=True)
class FirstToGo:
    """The pod a pass reclaiming ``threshold`` would evict now, and the message it would get."""

    pod: Pod
    resource: str
    message: str
    position: int
    """Its place in the ranking (critical pods ahead of it are skipped, as synchronize skips them)."""
    skipped_critical: tuple[str, ...]


def first_to_go(stepper: NodeStepper, threshold: Threshold) -> FirstToGo | None:
    """eviction_manager.go: synchronize from ``rank(activePods, statsFunc)`` on, for ``threshold``, on the last
    pass's stats and candidates: the first non-critical pod of the ranking and its message. None: no manager
    yet, no ranking for the signal, or no pod to evict."""
    manager, last = stepper.manager, stepper.last
    if manager is None or last is None:
        return None
    resource = SIGNAL_TO_RESOURCE.get(threshold.signal)
    rank = manager.signal_to_rank_func.get(threshold.signal)
    if resource is None or rank is None or not last.candidates:
        return None
    stats = last.result.stats
    ranked: list[Pod] = list(last.candidates)
    rank(ranked, stats)
    return _first(ranked, resource, threshold, manager, last.result)


def _first(
    ranked: Sequence[Pod], resource: str, threshold: Threshold, manager: EvictionManager, result: SyncResult
) -> FirstToGo | None:
    skipped: list[str] = []
    for i, pod in enumerate(ranked):
        if podutil.is_critical_pod(pod):
            skipped.append(pod.name)
            continue
        message, _annotations = eviction_message(
            resource, pod, result.stats.get(pod.uid), [threshold], result.observations, manager.profile
        )
        return FirstToGo(pod, resource, message, i, tuple(skipped))
    return None
