"""A scenario, tick by tick: the Summary API response of every node, and the objects in force.

The generator plays the node side of a cluster: containers use what their curves say, the node
reports the sum of its pods plus a system share exactly where the kubelet's Summary API puts it
(pkg/kubelet/stats: node memory = machine capacity − root-cgroup working set, the ``pods``
system container against the kubepods cgroup limit, container writable layers on the
containerfs, logs and emptyDir volumes on nodefs, ``rlimit`` from process counts), and the
pods, node object and /configz are emitted as the API server and kubelet would show them.

It is closed-loop through hooks the replay's kubelet calls: :meth:`ScenarioRun.evicted` (the pod
stops using anything, turns ``Failed``/``Evicted`` with the kubelet's message, and a controller-owned
pod asked to be recreated comes back under a new name after its delay), :meth:`set_node_conditions`
and an ``admit`` callback consulted when a pod starts (the kubelet's admission under pressure).
"""

from __future__ import annotations

import copy
import hashlib
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kube.duration import format_duration as _go_duration
from kube.oom import (
    container_memory_limit,
    container_oom_score_adjust,
    exhausted_below,
    select_victim,
    total_pages,
)

from ..summary_codec import format_time
from . import oomkiller
from .oomkiller import EXIT_OOM, OOM_KILLED, STEP, Backoff
from .schema import EPHEMERAL_SOURCES, ContainerUsage, NodeSpec, PodTemplate, Scenario, VolumeUsage
from .units import SECOND

AdmitFn = Callable[[str, Mapping[str, Any], int], "tuple[bool, str, str]"]
"""``(node, pod manifest, at) -> (admitted, reason, message)``."""

STATUS_DELAY = 1000
"""The pod status and event of an eviction land 1 ms after the pass that decided it: after the
summary that showed the pod, before the next one."""

PAGE = 4096
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery util/rand: what ReplicaSets use
_CONDITIONS = (
    (
        "MemoryPressure",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
        "node.kubernetes.io/memory-pressure",
    ),
    (
        "DiskPressure",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
        "KubeletHasDiskPressure",
        "kubelet has disk pressure",
        "node.kubernetes.io/disk-pressure",
    ),
    (
        "PIDPressure",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
        "KubeletHasInsufficientPID",
        "kubelet has insufficient PID available",
        "node.kubernetes.io/pid-pressure",
    ),
)


@dataclass(frozen=True)
class ObjectChange:
    """One object version to record: ``kind`` is pod, node, configz or event."""

    kind: str
    body: Mapping[str, Any]
    observed: int
    node: str


@dataclass(frozen=True)
class GeneratedTick:
    index: int
    time: int
    summaries: Mapping[str, dict[str, Any]]
    objects: tuple[ObjectChange, ...]
    """Object versions observed since the previous tick (at or before ``time``)."""
    gaps: Mapping[str, str] = field(default_factory=dict)
    """Nodes whose kubelet, starved of memory, answered no summary at this tick (node → the recorder's error);
    they are not in ``summaries`` and their kubelet takes no pass."""


@dataclass
class _Container:
    name: str
    offset: int
    end: int | None
    usage: ContainerUsage
    spec: Mapping[str, Any] = field(default_factory=dict)
    init: bool = False
    run_start: int = 0
    """When the current run started (absolute): the container's curves restart from here."""
    run_end: int | None = None
    down: bool = False
    """OOM-killed and not (yet) started again."""
    restart_at: int | None = None
    finished: int = 0
    restarts: int = 0
    last_term: dict[str, Any] | None = None
    limit: int | None = None
    adj: int = 0
    pid: int = 0
    process: str = ""

    def running(self, at: int) -> bool:
        return not self.down and self.run_start <= at and (self.run_end is None or at < self.run_end)

    @property
    def sidecar(self) -> bool:
        return self.init and self.spec.get("restartPolicy") == "Always"


@dataclass(frozen=True)
class KernelKill:
    """An OOM kill the kernel model made (also in the recording: the pod's ``OOMKilled`` status, and for a global
    OOM the ``SystemOOM`` Event)."""

    node: str
    pod: str
    """namespace/name"""
    uid: str
    container: str
    at: int
    scope: str
    """``container`` (its own limit), ``pods`` (the kubepods cgroup) or ``node`` (global: ``SystemOOM``)."""
    process: str
    pid: int
    restart_at: int | None
    """When the kubelet starts it again (after its crash-loop back-off), None when it stays terminated."""


@dataclass
class _Instance:
    template: PodTemplate
    generation: int
    start: int
    name: str
    uid: str
    containers: list[_Container]
    manifest: dict[str, Any] = field(default_factory=dict)
    started: bool = False
    stopped: int | None = None


class ScenarioRun:
    """Iterate with :meth:`ticks`; call the hooks between ticks to close the loop."""

    def __init__(self, scenario: Scenario, *, admit: AdmitFn | None = None) -> None:
        self.scenario = scenario
        self.admit = admit
        self._pending: list[ObjectChange] = []
        self._waiting: list[_Instance] = [self._instance(t, 0, scenario.start + t.start) for t in scenario.pods]
        self._by_uid: dict[str, _Instance] = {}
        self._running: dict[str, list[_Instance]] = {n.name: [] for n in scenario.nodes}
        self._conditions: dict[str, dict[str, tuple[bool, int]]] = {}
        self._events: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.evictions: list[tuple[str, str, str, int, str]] = []
        """(node, namespace/name, uid, at, message) of every eviction fed back."""
        self.kernel_kills: list[KernelKill] = []
        self._backoff: dict[str, Backoff] = {
            n.name: oomkiller.backoff_for(n.kubelet.minor, n.kubelet.feature_gates) for n in scenario.nodes
        }
        self._pids: dict[str, int] = {n.name: oomkiller.FIRST_PID for n in scenario.nodes}
        self._last_step: int | None = None
        self._starving: dict[str, int | None] = {n.name: None for n in scenario.nodes}
        """Since when each node's kubelet is starved of memory (oomkiller.py: the node thrashing while the system
        daemons use more than their reservation)."""
        self._unknown: dict[str, int] = {}
        """Nodes the node controller marked Ready=Unknown, since when."""
        self._ready_since: dict[str, int] = {n.name: scenario.start for n in scenario.nodes}
        self._available: dict[str, int] = {}
        self._armed = False
        """The kubelet arms its memcg threshold notifiers at its first pass."""
        for node in scenario.nodes:
            self._conditions[node.name] = {c[0]: (False, scenario.start) for c in _CONDITIONS}
            self._queue("configz", node.kubelet.configz(), scenario.start, node.name)
            self._queue("node", self._node_object(node), scenario.start, node.name)

    # -- iteration -----------------------------------------------------------------------
    def ticks(self) -> Iterator[GeneratedTick]:
        sc = self.scenario
        index = 0
        for regular in range(sc.tick_count):
            at = sc.start + regular * sc.interval
            if self._last_step is not None:
                s = self._last_step + STEP
                while s < at:
                    if self._kernel_step(s):  # a memcg threshold notification: the kubelet's pass at once
                        yield self._tick(index, s)
                        index += 1
                    s += STEP
            self._start_pods(at)
            self._kernel_step(at)
            yield self._tick(index, at)
            index += 1
            self._armed = True

    def _tick(self, index: int, at: int) -> GeneratedTick:
        sc = self.scenario
        gaps = {n.name: oomkiller.STARVED_SUMMARY for n in sc.nodes if self.starving(n.name)}
        summaries = {node.name: self._summary(node, at) for node in sc.nodes if node.name not in gaps}
        return GeneratedTick(index, at, summaries, self._take(at), gaps)

    def drain(self) -> tuple[ObjectChange, ...]:
        """Object versions still queued after the last tick (the last evictions' status)."""
        return self._take(None)

    def starving(self, node: str) -> bool:
        """Whether the node's kubelet is starved of memory now: no summary, no eviction pass, no status."""
        return self._starving[node] is not None

    def pods_in_force(self, node: str) -> list[dict[str, Any]]:
        """The latest manifest of every pod bound to ``node`` that has started (any phase)."""
        return [i.manifest for i in self._by_uid.values() if i.template.node == node and i.started]

    # -- hooks ---------------------------------------------------------------------------
    def evicted(
        self,
        pod_uid: str,
        at: int,
        message: str,
        *,
        reason: str = "Evicted",
        conditions: list[dict[str, Any]] | None = None,
    ) -> None:
        """The kubelet evicted ``pod_uid`` at ``at``: it stops using anything from then on."""
        inst = self._by_uid.get(pod_uid)
        if inst is None or inst.stopped is not None:
            return
        inst.stopped = at
        node = inst.template.node
        self._running[node] = [i for i in self._running[node] if i is not inst]
        when = at + STATUS_DELAY
        status: dict[str, Any] = {
            k: v for k, v in inst.manifest.get("status", {}).items() if k in ("startTime", "qosClass")
        }
        status.update({"phase": "Failed", "reason": reason, "message": message})
        if conditions:
            status["conditions"] = [{**c, "lastTransitionTime": format_time(_whole(at))} for c in conditions]
        inst.manifest = {**inst.manifest, "status": status}
        self._queue("pod", inst.manifest, when, node)
        self._event(node, inst, reason, message, at, "Warning")
        self.evictions.append((node, f"{inst.template.namespace}/{inst.name}", inst.uid, at, message))
        if inst.template.recreate_after is not None:
            self._waiting.append(self._instance(inst.template, inst.generation + 1, at + inst.template.recreate_after))

    def set_node_conditions(self, node: str, conditions: tuple[str, ...] | list[str], at: int) -> None:
        """The kubelet's pressure conditions after a pass; the node object changes when they do."""
        current = self._conditions[node]
        changed = False
        for name, *_ in _CONDITIONS:
            value = name in conditions
            if current[name][0] != value:
                current[name] = (value, at)
                changed = True
        if changed:
            self._queue("node", self._node_object(self.scenario.node(node)), at + STATUS_DELAY, node)

    def node_event(self, node: str, reason: str, message: str, at: int) -> None:
        """A node event such as ``EvictionThresholdMet`` / ``Attempting to reclaim memory``."""
        self._event(node, None, reason, message, at, "Warning")

    # -- pods ----------------------------------------------------------------------------
    def _instance(self, template: PodTemplate, generation: int, start: int) -> _Instance:
        meta = template.manifest["metadata"]
        name = template.name if generation == 0 else _replacement_name(template, generation, self.scenario.digest)
        uid = str(meta.get("uid") or "") if generation == 0 else ""
        if not uid:
            key = f"evictlens-scenario/{self.scenario.name}/{template.namespace}/{name}/{generation}"
            uid = str(uuid.uuid5(uuid.NAMESPACE_URL, key))
        containers = _schedule(template)
        for c in containers:
            c.run_start = start + c.offset
            c.run_end = None if c.end is None else start + c.end
        return _Instance(template, generation, start, name, uid, containers)

    def _start_pods(self, at: int) -> None:
        due = sorted((i for i in self._waiting if i.start <= at), key=lambda i: i.start)
        self._waiting = [i for i in self._waiting if i.start > at]
        for inst in due:
            inst.manifest = self._manifest(inst)
            inst.started = True
            self._by_uid[inst.uid] = inst
            node = inst.template.node
            if self.admit is not None:
                admitted, reason, message = self.admit(node, inst.manifest, inst.start)
                if not admitted:
                    inst.stopped = inst.start
                    status = {
                        "phase": "Failed",
                        "reason": reason,
                        "message": message,
                        "startTime": format_time(_whole(inst.start)),
                    }
                    inst.manifest = {**inst.manifest, "status": status}
                    self._queue("pod", inst.manifest, inst.start, node)
                    self._event(node, inst, reason, message, inst.start, "Warning")
                    if inst.template.recreate_after is not None:
                        self._waiting.append(
                            self._instance(
                                inst.template,
                                inst.generation + 1,
                                inst.start + max(inst.template.recreate_after, SECOND),
                            )
                        )
                    continue
            self._running[node].append(inst)
            self._queue("pod", inst.manifest, inst.start, node)
            spec_node = self.scenario.node(node)
            for c in inst.containers:
                c.limit = container_memory_limit(c.spec)
                c.adj = container_oom_score_adjust(
                    inst.manifest, c.spec, spec_node.memory_capacity, minor=spec_node.kubelet.minor
                )
                c.process = oomkiller.process_name(c.spec)
                c.pid = self._pid(node)

    def _manifest(self, inst: _Instance) -> dict[str, Any]:
        pod = copy.deepcopy(dict(inst.template.manifest))
        meta = pod["metadata"]
        meta["name"] = inst.name
        meta["uid"] = inst.uid
        meta["creationTimestamp"] = format_time(_whole(inst.start))
        pod["spec"]["nodeName"] = inst.template.node
        status = {"phase": "Running", "startTime": format_time(_whole(inst.start))}
        qos = (inst.template.manifest.get("status") or {}).get("qosClass")
        if qos:
            status["qosClass"] = qos
        pod["status"] = status
        return pod

    # -- the kernel (oomkiller.py) ---------------------------------------------------------
    def _kernel_step(self, at: int) -> bool:
        """The kernel at ``at`` on every node; whether a kubelet's memcg threshold notifier fired."""
        self._last_step = at
        fired = False
        for node in self.scenario.nodes:
            fired = self._node_kernel(node, at) or fired
        return fired

    def _node_kernel(self, node: NodeSpec, at: int) -> bool:
        running = self._running[node.name]
        for inst in list(running) if not self.starving(node.name) else []:  # a starved kubelet restarts nothing
            for c in inst.containers:
                if c.down and c.restart_at is not None and c.restart_at <= at:
                    self._restart(node.name, inst, c, c.restart_at if c.restart_at > at - STEP else at)
        usage: list[tuple[_Instance, _Container, int]] = []
        extra = 0
        for inst in running:
            for c in inst.containers:
                if c.running(at):
                    mem = _page(c.usage.memory.at(at - c.run_start))
                    if c.limit is not None and mem >= c.limit:
                        self._kill(node.name, inst, c, at, "container")
                        continue
                    usage.append((inst, c, mem))
            extra += self._tmpfs_bytes(inst, at)
        pods_ws = extra + sum(m for _, _, m in usage)
        limit = node.pods_memory_limit
        while limit is not None and usage and pods_ws >= limit:
            pods_ws -= self._oom(node.name, usage, limit, at, "pods")
        system = node.system.memory.at(at - self.scenario.start)
        fired = self._memcg_notified(node, node.memory_capacity - system - pods_ws)
        while usage and system + pods_ws >= node.memory_capacity:
            pods_ws -= self._oom(node.name, usage, node.memory_capacity, at, "node")
        available = node.memory_capacity - system - pods_ws
        thrashing = available <= exhausted_below(node.memory_capacity)
        self._starve(node, thrashing and system > node.kubelet.reserved("memory"), at)
        return fired and not self.starving(node.name)

    def _memcg_notified(self, node: NodeSpec, available: int) -> bool:
        """``kernelMemcgNotification``: the root memory cgroup's usage crossed a level the kubelet armed at its
        last pass (capacity − a ``memory.available`` threshold; memory_threshold_notifier.go), either way."""
        before = self._available.get(node.name)
        self._available[node.name] = available
        if not (self._armed and node.kubelet.memcg_notification) or before is None:
            return False
        levels = node.kubelet.memory_thresholds(node.memory_capacity)
        return any((before > level) != (available > level) for level in levels)

    def _starve(self, node: NodeSpec, starving: bool, at: int) -> None:
        """The kubelet starves while the node thrashes with the system daemons over their reservation; after the
        node controller's grace period without a status the node turns Ready=Unknown, and Ready again (the kubelet
        posts its status) once the node stops thrashing."""
        since = self._starving[node.name]
        if starving:
            if since is None:
                self._starving[node.name] = at
            elif node.name not in self._unknown and at - since >= oomkiller.node_monitor_grace(node.kubelet.minor):
                self._unknown[node.name] = at
                self._queue("node", self._node_object(node), at, node.name)
            return
        if since is None:
            return
        self._starving[node.name] = None
        if self._unknown.pop(node.name, None) is not None:
            self._ready_since[node.name] = at
            current = self._conditions[node.name]
            for name in current:
                current[name] = (current[name][0], at)
            self._queue("node", self._node_object(node), at + STATUS_DELAY, node.name)

    def _oom(self, node: str, usage: list[tuple[_Instance, _Container, int]], limit: int, at: int, scope: str) -> int:
        """One OOM kill among ``usage`` (scan order: container start order); the bytes it frees."""
        order = sorted(range(len(usage)), key=lambda i: (usage[i][1].run_start, i))
        chosen = select_victim(((i, usage[i][2], usage[i][1].adj) for i in order), total_pages(limit))
        if chosen is None:
            usage.clear()
            return 0
        inst, c, mem = usage.pop(chosen)
        self._kill(node, inst, c, at, scope)
        return mem

    def _tmpfs_bytes(self, inst: _Instance, at: int) -> int:
        total = 0
        for vol in inst.manifest["spec"].get("volumes") or []:
            empty_dir = vol.get("emptyDir")
            usage = inst.template.volumes.get(vol["name"])
            if usage is not None and isinstance(empty_dir, Mapping) and empty_dir.get("medium") == "Memory":
                total += _page(usage.used.at(at - inst.start))
        return total

    def _pid(self, node: str) -> int:
        self._pids[node] += 1
        return self._pids[node]

    def _kill(self, node: str, inst: _Instance, c: _Container, at: int, scope: str) -> None:
        """The kernel kills ``c`` (exit 137, ``OOMKilled``); the kubelet restarts it per the pod's policy."""
        c.down = True
        c.finished = at
        term = {
            "exitCode": EXIT_OOM,
            "reason": OOM_KILLED,
            "startedAt": format_time(_whole(c.run_start)),
            "finishedAt": format_time(_whole(at)),
        }
        spec = inst.manifest["spec"]
        key = f"{inst.uid}/{c.name}"
        if oomkiller.restarts(spec, c.spec, init=c.init):
            c.restart_at = self._backoff[node].restart_at(key, at)
        else:
            c.restart_at = None
        c.last_term = term
        if scope == "node":
            self._event(node, None, "SystemOOM", oomkiller.system_oom_message(c.process, c.pid), at, "Warning")
        ns, name = inst.template.namespace, inst.name
        self.kernel_kills.append(
            KernelKill(node, f"{ns}/{name}", inst.uid, c.name, at, scope, c.process, c.pid, c.restart_at)
        )
        backing_off = c.restart_at is not None and c.restart_at > at + oomkiller.PLEG_RELIST
        if backing_off:
            self._event_on(
                node, inst, "BackOff", oomkiller.backoff_event(c.name, name, ns, inst.uid), at + oomkiller.PLEG_RELIST
            )
        if self._pod_failed(inst, c, at):
            self._fail_pod(node, inst, at)
            return
        inst.manifest = {**inst.manifest, "status": self._pod_status(inst, at)}
        self._queue("pod", inst.manifest, at + STATUS_DELAY, node)

    def _pod_failed(self, inst: _Instance, killed: _Container, at: int) -> bool:
        """restartPolicy Never: a failed init container fails the pod; so do regular containers all terminated."""
        if killed.restart_at is not None:
            return False
        if killed.init and not killed.sidecar:
            return True
        regular = [c for c in inst.containers if not c.init]
        return all((c.down and c.restart_at is None) or (c.run_end is not None and at >= c.run_end) for c in regular)

    def _fail_pod(self, node: str, inst: _Instance, at: int) -> None:
        inst.stopped = at
        self._running[node] = [i for i in self._running[node] if i is not inst]
        for c in inst.containers:
            if c.running(at):  # the kubelet stops what is left (sidecars) once the pod is done
                c.down, c.finished = True, at
        status = self._pod_status(inst, at)
        status["phase"] = "Failed"
        inst.manifest = {**inst.manifest, "status": status}
        self._queue("pod", inst.manifest, at + STATUS_DELAY, node)
        if inst.template.recreate_after is not None:
            self._waiting.append(self._instance(inst.template, inst.generation + 1, at + inst.template.recreate_after))

    def _restart(self, node: str, inst: _Instance, c: _Container, at: int) -> None:
        """The kubelet starts the container again (``Next`` on its back-off); its curves start over."""
        self._backoff[node].next(f"{inst.uid}/{c.name}", c.finished, at)
        old = c.run_start
        length = None if c.run_end is None else c.run_end - c.run_start
        c.down, c.restart_at = False, None
        c.restarts += 1
        c.run_start = at
        c.run_end = None if length is None else at + length
        c.pid = self._pid(node)
        if c.init and not c.sidecar:  # the containers after it start that much later
            later = inst.containers[inst.containers.index(c) + 1 :]
            for other in later:
                if other.run_start > c.finished:
                    other.run_start += at - old
                    other.run_end = None if other.run_end is None else other.run_end + at - old
        inst.manifest = {**inst.manifest, "status": self._pod_status(inst, at)}
        self._queue("pod", inst.manifest, at + STATUS_DELAY, node)

    def _pod_status(self, inst: _Instance, at: int) -> dict[str, Any]:
        """The pod's status with its container statuses as the kubelet reports them after a kill or a restart."""
        status: dict[str, Any] = {
            k: v for k, v in inst.manifest.get("status", {}).items() if k in ("phase", "startTime", "qosClass")
        }
        init_statuses: list[dict[str, Any]] = []
        statuses: list[dict[str, Any]] = []
        for c in inst.containers:
            cs: dict[str, Any] = {"name": c.name, "restartCount": c.restarts}
            image = c.spec.get("image")
            if image:
                cs["image"] = image
            if c.down and c.restart_at is None:
                state: dict[str, Any] = {"terminated": c.last_term}
            elif c.down:
                assert c.restart_at is not None
                if c.restart_at > c.finished + oomkiller.PLEG_RELIST:
                    delay = format_go_duration(self._backoff[inst.template.node].get(f"{inst.uid}/{c.name}"))
                    message = oomkiller.backoff_message(delay, c.name, inst.name, inst.template.namespace, inst.uid)
                    state = {"waiting": {"reason": oomkiller.CRASH_LOOP, "message": message}}
                else:
                    state = {"terminated": c.last_term}
            elif c.run_start > at:
                state = {"waiting": {"reason": "PodInitializing"}}
            elif c.run_end is not None and at >= c.run_end:
                state = {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": format_time(_whole(c.run_start)),
                        "finishedAt": format_time(_whole(c.run_end)),
                    }
                }
            else:
                state = {"running": {"startedAt": format_time(_whole(c.run_start))}}
            cs["state"] = state
            terminated_now = state.get("terminated") is c.last_term
            cs["lastState"] = {"terminated": c.last_term} if c.last_term is not None and not terminated_now else {}
            cs["ready"] = "running" in state
            cs["started"] = "running" in state
            (init_statuses if c.init else statuses).append(cs)
        if init_statuses:
            status["initContainerStatuses"] = init_statuses
        status["containerStatuses"] = statuses
        return status

    def _event_on(self, node: str, inst: _Instance, reason: str, message: str, at: int) -> None:
        self._event(node, inst, reason, message, at, "Warning")

    # -- the Summary API -------------------------------------------------------------------
    def _summary(self, node: NodeSpec, at: int) -> dict[str, Any]:
        ts = format_time(at)
        rel = at - self.scenario.start
        sysu = node.system
        mem_cap = node.memory_capacity
        pods: list[dict[str, Any]] = []
        pods_ws = pods_procs = 0
        logs_bytes = logs_inodes = vol_bytes = vol_inodes = root_bytes = root_inodes = 0
        nodefs, imagefs = node.nodefs, node.imagefs or node.nodefs
        root_on_imagefs = node.imagefs is not None and not node.split
        entries = []
        for inst in self._running[node.name]:
            prel = at - inst.start
            containers = []
            ws = procs = eph = eph_inodes = 0
            for c in inst.containers:
                if not c.running(at):
                    continue
                crel = at - c.run_start
                u = c.usage
                mem, rootfs, logs = _page(u.memory.at(crel)), _page(u.rootfs.at(crel)), _page(u.logs.at(crel))
                r_in, l_in, p = u.rootfs_inodes.at(crel), u.logs_inodes.at(crel), u.processes.at(crel)
                ws += mem
                procs += p
                eph += rootfs + logs
                eph_inodes += r_in + l_in
                root_bytes += rootfs
                root_inodes += r_in
                logs_bytes += logs
                logs_inodes += l_in
                containers.append((c.name, c.run_start, mem, rootfs, r_in, logs, l_in))
            volumes = []
            for vol in inst.manifest["spec"].get("volumes") or []:
                usage = inst.template.volumes.get(vol["name"])
                empty_dir = vol.get("emptyDir")
                if usage is None and empty_dir is None:
                    continue
                usage = usage or VolumeUsage()
                used, inodes = _page(usage.used.at(prel)), usage.inodes.at(prel)
                in_memory = isinstance(empty_dir, Mapping) and empty_dir.get("medium") == "Memory"
                if in_memory:
                    ws += used  # tmpfs pages are charged to the pod's memory cgroup
                elif any(k in EPHEMERAL_SOURCES for k in vol):
                    eph += used
                    eph_inodes += inodes
                if not in_memory:
                    vol_bytes += used
                    vol_inodes += inodes
                volumes.append((vol["name"], used, inodes, in_memory))
            pods_ws += ws
            pods_procs += procs
            entries.append((inst, containers, volumes, ws, procs, eph, eph_inodes))
        node_ws = sysu.memory.at(rel) + pods_ws
        sys_nodefs, sys_nodefs_inodes = sysu.nodefs.at(rel), sysu.nodefs_inodes.at(rel)
        images, image_inodes = sysu.imagefs.at(rel), sysu.imagefs_inodes.at(rel)
        nodefs_used = sys_nodefs + logs_bytes + vol_bytes + (0 if root_on_imagefs else root_bytes)
        nodefs_inodes = sys_nodefs_inodes + logs_inodes + vol_inodes + (0 if root_on_imagefs else root_inodes)
        image_used = images + (root_bytes if root_on_imagefs else 0)
        image_inodes_used = image_inodes + (root_inodes if root_on_imagefs else 0)
        if node.imagefs is None:
            nodefs_used += images
            nodefs_inodes += image_inodes
        nodefs_stats = _fs(ts, nodefs.capacity, nodefs_used, nodefs.inodes, nodefs_inodes)
        if node.imagefs is not None:
            image_stats = _fs(ts, imagefs.capacity, image_used, imagefs.inodes, image_inodes_used)
        else:  # one device: imageFs reports the images' usage against the shared filesystem
            image_stats = {
                **nodefs_stats,
                "usedBytes": image_used + root_bytes,
                "inodesUsed": image_inodes_used + root_inodes,
            }
        # containerFs: the device holding writable layers (nodefs when split, KEP-4191)
        container_stats = nodefs_stats if node.split else image_stats
        root_dev = image_stats if root_on_imagefs else nodefs_stats
        mem_available = max(0, node.memory_capacity - node_ws)
        for inst, containers, volumes, ws, procs, eph, eph_inodes in entries:
            pods.append(
                {
                    "podRef": {"name": inst.name, "namespace": inst.template.namespace, "uid": inst.uid},
                    "startTime": format_time(_whole(inst.start)),
                    "containers": [
                        {
                            "name": name,
                            "startTime": format_time(_whole(started)),
                            "memory": {"time": ts, "usageBytes": mem, "workingSetBytes": mem, "rssBytes": mem},
                            "rootfs": _used(ts, root_dev, rootfs, r_in),
                            "logs": _used(ts, nodefs_stats, logs, l_in),
                        }
                        for name, started, mem, rootfs, r_in, logs, l_in in containers
                    ],
                    "memory": {"time": ts, "usageBytes": ws, "workingSetBytes": ws, "rssBytes": ws},
                    "volume": [
                        {
                            "name": name,
                            **_used(ts, _tmpfs(mem_cap, mem_available) if mem else nodefs_stats, used, inodes),
                        }
                        for name, used, inodes, mem in volumes
                    ],
                    "ephemeral-storage": _used(ts, nodefs_stats, eph, eph_inodes),
                    "process_stats": {"process_count": procs},
                }
            )
        pods_container: dict[str, Any] = {
            "name": "pods",
            "startTime": format_time(_whole(self.scenario.start)),
            "memory": {"time": ts, "usageBytes": pods_ws, "workingSetBytes": pods_ws},
        }
        if node.pods_memory_limit is not None:
            pods_container["memory"]["availableBytes"] = max(0, node.pods_memory_limit - pods_ws)
        return {
            "node": {
                "nodeName": node.name,
                "startTime": format_time(_whole(self.scenario.start - 3600 * SECOND)),
                "systemContainers": [pods_container],
                "memory": {
                    "time": ts,
                    "availableBytes": mem_available,
                    "usageBytes": node_ws,
                    "workingSetBytes": node_ws,
                    "rssBytes": node_ws,
                },
                "fs": nodefs_stats,
                "runtime": {"imageFs": image_stats, "containerFs": container_stats},
                "rlimit": {"time": ts, "maxpid": node.max_pids, "curproc": sysu.processes.at(rel) + pods_procs},
            },
            "pods": pods,
        }

    # -- objects ---------------------------------------------------------------------------
    def _node_object(self, node: NodeSpec) -> dict[str, Any]:
        conditions, taints = [], []
        unknown = self._unknown.get(node.name)
        for name, ok_reason, ok_message, bad_reason, bad_message, taint in _CONDITIONS:
            value, since = self._conditions[node.name][name]
            conditions.append(
                {
                    "type": name,
                    "status": "True" if value else "False",
                    "reason": bad_reason if value else ok_reason,
                    "message": bad_message if value else ok_message,
                    "lastTransitionTime": format_time(_whole(since)),
                }
            )
            if value:
                taints.append({"key": taint, "effect": "NoSchedule"})
        conditions.append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastTransitionTime": format_time(_whole(self._ready_since[node.name])),
            }
        )
        if unknown is not None:  # node_lifecycle_controller.go tryUpdateNodeHealth: every kubelet condition Unknown
            stamp = format_time(_whole(unknown))
            for c in conditions:
                c.update(status="Unknown", reason=oomkiller.NODE_STATUS_UNKNOWN, message=oomkiller.STOPPED_POSTING)
                c["lastTransitionTime"] = stamp
            taints += [{"key": oomkiller.UNREACHABLE, "effect": e} for e in ("NoSchedule", "NoExecute")]
        status = {
            "capacity": dict(node.capacity),
            "allocatable": dict(node.allocatable),
            "conditions": conditions,
            "nodeInfo": {
                "kubeletVersion": node.kubelet.version,
                "kubeProxyVersion": node.kubelet.version,
                "operatingSystem": "linux",
                "architecture": "amd64",
                "containerRuntimeVersion": "containerd://1.7.15",
            },
        }
        labels = {
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": node.name,
            **node.labels,
        }
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"evictlens-scenario/{self.scenario.name}/node/{node.name}"))
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node.name, "uid": uid, "labels": labels},
            "spec": {},
            "status": status,
        }
        if taints:
            body["spec"]["taints"] = taints
        return body

    def _event(self, node: str, inst: _Instance | None, reason: str, message: str, at: int, kind: str) -> None:
        target = ("Pod", inst.template.namespace, inst.name, inst.uid) if inst else ("Node", "", node, node)
        key = (node, *target[1:3], reason + "\0" + message)
        stamp = format_time(_whole(at))
        event = self._events.get(key)
        if event is None:
            digest = hashlib.sha256(f"{key}".encode()).hexdigest()[:16]
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{target[2]}.{digest}",
                    "namespace": target[1] or "default",
                    "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"evictlens-event/{digest}")),
                },
                "involvedObject": {
                    "kind": target[0],
                    "namespace": target[1] or None,
                    "name": target[2],
                    "uid": target[3],
                    "apiVersion": "v1",
                },
                "reason": reason,
                "message": message,
                "type": kind,
                "count": 0,
                "firstTimestamp": stamp,
                "source": {"component": "kubelet", "host": node},
            }
            if not target[1]:
                del event["involvedObject"]["namespace"]
            self._events[key] = event
        event["count"] += 1
        event["lastTimestamp"] = stamp
        self._queue("event", copy.deepcopy(event), at + STATUS_DELAY, node)

    def _queue(self, kind: str, body: Mapping[str, Any], observed: int, node: str) -> None:
        self._pending.append(ObjectChange(kind, body, observed, node))

    def _take(self, until: int | None) -> tuple[ObjectChange, ...]:
        due = [c for c in self._pending if until is None or c.observed <= until]
        self._pending = [c for c in self._pending if until is not None and c.observed > until]
        return tuple(sorted(due, key=lambda c: c.observed))


def _schedule(template: PodTemplate) -> list[_Container]:
    """When each container runs, relative to the pod's start: init containers one after another
    (each for its ``runFor``, default 0), sidecars from their turn on, then the regular and ephemeral ones."""
    spec = template.manifest["spec"]
    out: list[_Container] = []
    offset = 0
    for c in spec.get("initContainers") or []:
        usage = template.containers.get(c["name"], ContainerUsage())
        if c.get("restartPolicy") == "Always":
            end = None if usage.run_for is None else offset + usage.run_for
            out.append(_Container(c["name"], offset, end, usage, c, True))
        else:
            run = usage.run_for or 0
            out.append(_Container(c["name"], offset, offset + run, usage, c, True))
            offset += run
    # ephemeral (debug) containers are added to a running pod: they start with the regular containers (a later
    # start is a curve that starts later) and count in the pod's stats like any container
    for c in [*spec["containers"], *(spec.get("ephemeralContainers") or [])]:
        usage = template.containers.get(c["name"], ContainerUsage())
        out.append(_Container(c["name"], offset, None if usage.run_for is None else offset + usage.run_for, usage, c))
    return out


def _replacement_name(template: PodTemplate, generation: int, digest: str) -> str:
    """A controller's replacement: same name for a StatefulSet, else ``generateName`` + 5 characters."""
    meta = template.manifest["metadata"]
    owners = [r for r in meta.get("ownerReferences") or [] if isinstance(r, Mapping) and r.get("controller")]
    if owners and owners[0].get("kind") == "StatefulSet":
        return template.name
    base = str(meta.get("generateName") or "")
    if not base:
        head, sep, tail = template.name.rpartition("-")
        suffixed = sep and len(tail) == 5 and all(ch.isdigit() or "a" <= ch <= "z" for ch in tail)
        base = f"{head}-" if suffixed else template.name + "-"
    seed = hashlib.sha256(f"{digest}/{template.namespace}/{template.name}/{generation}".encode()).digest()
    return base + "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in seed[:5])


def _fs(ts: str, capacity: int, used: int, inodes: int, inodes_used: int) -> dict[str, Any]:
    return {
        "time": ts,
        "availableBytes": max(0, capacity - used),
        "capacityBytes": capacity,
        "usedBytes": used,
        "inodesFree": max(0, inodes - inodes_used),
        "inodes": inodes,
        "inodesUsed": inodes_used,
    }


def _used(ts: str, device: Mapping[str, Any], used: int, inodes_used: int) -> dict[str, Any]:
    """FsStats of something stored on ``device``: the device's capacity and free space, its own usage."""
    return {
        "time": ts,
        "availableBytes": device["availableBytes"],
        "capacityBytes": device["capacityBytes"],
        "usedBytes": used,
        "inodesFree": device["inodesFree"],
        "inodes": device["inodes"],
        "inodesUsed": inodes_used,
    }


def _tmpfs(capacity: int, available: int) -> dict[str, Any]:
    return {"availableBytes": available, "capacityBytes": capacity, "inodesFree": 0, "inodes": 0}


def format_go_duration(micros: int) -> str:
    """A back-off as Go prints a ``time.Duration`` (``10s``, ``5m0s``)."""
    return _go_duration(micros * 1000)


def _page(value: int) -> int:
    """Pod memory and disk usage in whole 4 KiB pages / blocks, as the kernel accounts them."""
    return value - value % PAGE


def _whole(micros: int) -> int:
    """Object timestamps have second precision (metav1.Time)."""
    return micros - micros % SECOND
