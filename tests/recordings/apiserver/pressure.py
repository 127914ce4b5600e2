"""Memory pressure on the fake kubelets, decided by the project's own port of the eviction manager.

Each fake kubelet samples its stats every ``period`` seconds, as cAdvisor's housekeeping does:
sample k is taken at ``k × period`` (its stats carry that time) and the Summary API serves the
cached sample until the next one.  At ``k × period + delta`` the kubelet's eviction manager runs
a ``synchronize`` pass on that sample with the node's active pods — here the port
(``replay.kubelet.manager.EvictionManager`` at kubelet 1.30, configured from the node's
``/configz``) — and evicts what it says, exactly as the real kubelet would: the pod turns
``Failed``/``Evicted`` with the port's message, an ``Evicted`` Event carries the message and
annotations, and later samples no longer carry the pod.

Once armed (``POST /_control/pressure``), the sidecar pod's ``el-sidecar1`` grows by
``GROWTH`` bytes a sample: the node's ``memory.available`` is ``threshold + 2.5 × GROWTH`` before,
then ``+1.5``, ``+0.5``, ``-0.5`` growths — the third armed sample crosses the threshold.
Everything is a pure function of the sample index and the pods still running, so catching up
after a late event loop computes the same thing the timers would have.

A node armed with ``"on_request": s`` decides on a sample the moment a summary request reads it at least
``s`` seconds into the sample (the recorder's tick phase: an earlier one is a late request of the tick
before, whose answer the recorder no longer waits for); the answer, read before, still carries the pod and
``latency_nodes`` holds it back: the request goes out before the eviction and the summary arrives after it
by causality, not by a margin a loaded machine can eat. ``delta`` is then only the fallback for a sample
nobody asked for.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from kube.quantity import Quantity
from replay.kubelet.config import config_from_kubelet_configuration
from replay.kubelet.manager import EvictionManager
from replay.kubelet.objects import parse_pods
from replay.kubelet.stats import parse_summary
from replay.kubelet.versions import profile

from .cluster import PRESSURE_KUBELET_VERSION, PRESSURE_THRESHOLD, SyntheticCluster

MI = 1024 * 1024
GROWTH = 100 * MI  # el-sidecar1 grows this much per sample once armed
HEADROOM = 2.5  # growths between memory.available and the threshold before arming
FILL_CONTAINER = "el-sidecar1"

Evicted = Callable[[dict[str, Any], str, dict[str, str], dict[str, Any]], None]
"""(pod, message, annotations, status changes): the app publishes the pod change and the Event."""


@dataclass
class NodeState:
    node: str
    manager: EvictionManager
    delta: float = 0.5
    on_request: float | None = None  # decide when a request reads the sample this far into it (delta: fallback)
    armed: int | None = None  # first sample index of the pressure
    next_k: int = 0  # the sample to take (or, once taken, to decide on)
    taken: bool = False
    cache: dict[int, bytes] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)  # UIDs of pods this kubelet evicted


class Pressure:
    def __init__(self, cluster: SyntheticCluster, period: float, evicted: Evicted) -> None:
        self.cluster = cluster
        self.period = period
        self.evicted = evicted
        self.threshold = Quantity.parse(PRESSURE_THRESHOLD).int_value()
        self.version = PRESSURE_KUBELET_VERSION.lstrip("v").rsplit(".", 1)[0]
        self.profile = profile(self.version)
        self.config = config_from_kubelet_configuration(cluster.configz_body, source="configz", profile=self.profile)
        start = math.floor(time.time() / period)
        self.nodes = {n: NodeState(n, EvictionManager(self.config, self.profile), next_k=start) for n in cluster.names}
        self.log: list[dict[str, Any]] = []  # every eviction, for the tests

    # -- control ----------------------------------------------------------------------------
    def arm(self, settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """Per node ``{"delta": s, "on_request": s}``; the pressure starts at the next sample boundary."""
        now = time.time()
        k = math.floor(now / self.period) + 1
        for node, conf in settings.items():
            st = self.nodes[node]
            self.advance(st, now)
            st.delta = float(conf.get("delta", st.delta))
            on_request = conf.get("on_request", st.on_request)
            st.on_request = None if on_request is None else float(on_request)
            assert 0 < st.delta < self.period, "the decision must come before the next sample"
            st.armed = k
        return {"armed": k * self.period, "period": self.period}

    def state(self) -> dict[str, Any]:
        return {"evictions": self.log, "period": self.period, "threshold": PRESSURE_THRESHOLD}

    # -- the kubelet's clock ----------------------------------------------------------------
    def summary(self, node: str, now: float) -> bytes:
        """The cached sample in force at ``now`` (taken at its sample time, not at request time)."""
        st = self.nodes[node]
        self.advance(st, now)
        k = math.floor(now / self.period)
        if k not in st.cache:  # the very first request, or a request racing its boundary
            st.cache[k] = self._sample(st, k)
        body = st.cache[k]
        due = st.on_request is not None and now - k * self.period >= st.on_request
        if due and st.taken and st.next_k == k:  # acts on this very sample while its answer is on the way
            self._decide(st, k)
            st.next_k, st.taken = k + 1, False
        return body

    def advance(self, st: NodeState, now: float) -> None:
        """Run every sample and decision due by ``now``, in order: sample k, then decide on k."""
        while True:
            k = st.next_k
            if not st.taken:
                if k * self.period > now:
                    return
                st.cache.setdefault(k, self._sample(st, k))
                st.taken = True
                for old in [c for c in st.cache if c < k - 4]:
                    del st.cache[old]
            else:
                if k * self.period + st.delta > now:
                    return
                self._decide(st, k)
                st.next_k, st.taken = k + 1, False

    def next_event(self) -> float:
        return min(st.next_k * self.period + (st.delta if st.taken else 0.0) for st in self.nodes.values())

    async def run(self) -> None:
        """The kubelets' housekeeping and eviction loops, whether or not anyone polls."""
        while True:
            await asyncio.sleep(max(0.0, self.next_event() - time.time()))
            now = time.time()
            for st in self.nodes.values():
                self.advance(st, now)

    # -- what a sample holds and what the manager decides ------------------------------------
    def available_at(self, st: NodeState, k: int) -> int:
        steps = 0 if st.armed is None else max(0, k - st.armed + 1)
        return self.threshold + int(HEADROOM * GROWTH) - steps * GROWTH

    def _sample(self, st: NodeState, k: int) -> bytes:
        uid = self.cluster.sidecar_uids[st.node]
        fill = None if uid in st.gone else (uid, FILL_CONTAINER, self.available_at(st, k))
        return self.cluster.summary(st.node, k * self.period, skip=frozenset(st.gone), fill=fill)

    def _decide(self, st: NodeState, k: int) -> None:
        raw = orjson.loads(st.cache[k])
        summary = parse_summary(raw, source=f"{st.node} sample {k}")
        active = [p for p in self.cluster.pods[st.node] if p["status"].get("phase") not in ("Failed", "Succeeded")]
        pods = list(parse_pods({"kind": "PodList", "items": active}, source=f"{st.node} pods"))
        now = datetime.fromtimestamp(k * self.period + st.delta, UTC)
        result = st.manager.synchronize(summary, pods, now)
        by_uid = {p["metadata"]["uid"]: p for p in active}
        for ev in result.evictions:
            pod = by_uid[ev.pod.uid]
            st.gone.add(ev.pod.uid)
            self.log.append(
                {
                    "node": st.node,
                    "sample": k,
                    "sample_time": k * self.period,
                    "decided": time.time(),
                    "namespace": ev.pod.namespace,
                    "pod": ev.pod.name,
                    "uid": ev.pod.uid,
                    "message": ev.message,
                    "annotations": dict(ev.annotations),
                    "signal": ev.cause,
                }
            )
            self.evicted(pod, ev.message, dict(ev.annotations), dict(ev.pod_status))
            self.log[-1]["published"] = time.time()  # the pod Failed and its Event out (stamped by this clock)
