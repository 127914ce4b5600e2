"""What an eviction costs and what led to it: who comes back, how overcommitted the node was, how close
the other pods came.

A node-pressure eviction leaves the pod ``Failed`` (eviction_manager.go: evictPod sets the phase);
only a controller that owns it replaces it. Overcommit is the scheduler's view ("Allocated resources"
of ``kubectl describe node``): Σ requests and Σ limits of the pods in force (component-helpers
resource/helpers.go: PodRequests, PodLimits) against the node's allocatable. The ranking's
"decided by" names the first comparator of the signal's chain (helpers.go: rankMemoryPressure,
rankPIDPressure, rankDiskPressureFunc) that put a pod behind the one evicted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from kube.signals import PID_AVAILABLE
from replay.kubelet.api import Pod
from replay.kubelet.pods import pod_limits, pod_requests
from replay.results import RankedPod

OVERCOMMIT_RESOURCES = ("memory", "ephemeral-storage")

CONTROLLERS: Mapping[str, str] = {
    "ReplicaSet": "its ReplicaSet creates a replacement (on any node that fits)",
    "ReplicationController": "its ReplicationController creates a replacement",
    "StatefulSet": "its StatefulSet recreates it under the same name once the Failed pod is deleted",
    "DaemonSet": "its DaemonSet deletes the Failed pod and recreates it on this node",
    "Job": "its Job creates a replacement (counted against backoffLimit unless a podFailurePolicy ignores "
    "DisruptionTarget)",
}


def owner_impact(owner_kind: str | None, owner_name: str | None) -> tuple[bool | None, str]:
    """Whether the evicted pod comes back, and one plain sentence saying why."""
    if owner_kind is None:
        return False, "stays Failed: a bare pod, nothing recreates it"
    if owner_kind in CONTROLLERS:
        return True, f"comes back: {CONTROLLERS[owner_kind]}"
    if owner_kind == "Node":
        return None, "a static pod's mirror: the kubelet, not a controller, decides whether it runs again"
    named = f"{owner_kind} {owner_name}" if owner_name else owner_kind
    return False, (
        f"stays Failed unless the operator of {named} handles node-pressure evictions: "
        "owned by a custom resource, no built-in controller recreates it"
    )


def unbounded(pod: Pod, resource: str) -> bool:
    """A running container (regular or sidecar) without a limit on ``resource`` and no pod-level limit."""
    if pod.resources is not None and resource in pod.resources.limits:
        return False
    running = [*pod.containers, *(c for c in pod.init_containers if c.restartable_init)]
    return any(resource not in c.limits for c in running)


@dataclass(frozen=True)
class PodTotals:
    """One pod's requests, limits and whether it is unbounded, per overcommit resource."""

    requests: Mapping[str, int]
    limits: Mapping[str, int]
    unbounded: frozenset[str]


def pod_totals(pod: Pod) -> PodTotals:
    req, lim = pod_requests(pod), pod_limits(pod)
    return PodTotals(
        {r: req[r].int_value() for r in OVERCOMMIT_RESOURCES if r in req},
        {r: lim[r].int_value() for r in OVERCOMMIT_RESOURCES if r in lim},
        frozenset(r for r in OVERCOMMIT_RESOURCES if unbounded(pod, r)),
    )


def overcommit_lead(rows: Iterable[Mapping[str, object]], first_eviction: datetime) -> dict[str, float]:
    """Resource → seconds the node had been overcommitted without a break at its first eviction.

    ``rows``: one node's overcommit rows (time, resource, limits, allocatable) in time order.
    """
    since: dict[str, datetime | None] = {}
    for row in rows:
        when = row["time"]
        if not isinstance(when, datetime) or when > first_eviction:
            break
        resource = str(row["resource"])
        limits, allocatable = row["limits"], row["allocatable"]
        over = isinstance(limits, int) and isinstance(allocatable, int) and limits > allocatable
        if not over:
            since[resource] = None
        elif since.get(resource) is None:
            since[resource] = when
    return {r: (first_eviction - t).total_seconds() for r, t in since.items() if t is not None}


def decided_by(pod: RankedPod, evicted: RankedPod, signal: str) -> tuple[str, int | None]:
    """The first comparator that put ``pod`` behind ``evicted`` (ranked later), and by how much.

    Memory and disk: stats, exceeds request, priority, usage − request; PID: priority, then stats
    and process count (helpers.go).
    """

    def stats() -> tuple[str, int | None] | None:
        return ("stats", None) if pod.has_stats != evicted.has_stats else None

    def priority() -> tuple[str, int | None] | None:
        return ("priority", pod.priority - evicted.priority) if pod.priority != evicted.priority else None

    if signal == PID_AVAILABLE:
        chain = [priority, stats]
        mine, theirs, name = pod.process_count, evicted.process_count, "processes"
    else:

        def exceeds() -> tuple[str, int | None] | None:
            return ("exceeds request", None) if pod.exceeds_request != evicted.exceeds_request else None

        chain = [stats, exceeds, priority]
        mine, theirs, name = pod.usage_above_request, evicted.usage_above_request, "usage"
    for step in chain:
        found = step()
        if found is not None:
            return found
    if mine is not None and theirs is not None and mine != theirs:
        return name, theirs - mine
    return "tie", None


def explain_ranking(ranking: tuple[RankedPod, ...], evicted_uid: str, signal: str | None) -> tuple[RankedPod, ...]:
    """The ranking with ``decided_by``/``margin`` filled in against the evicted pod."""
    from dataclasses import replace

    evicted = next((r for r in ranking if r.uid == evicted_uid), None)
    if evicted is None or signal is None:
        return ranking
    out = []
    for r in ranking:
        if r.uid == evicted_uid:
            out.append(replace(r, decided_by="evicted"))
        elif r.critical:
            out.append(replace(r, decided_by="critical"))
        elif r.rank < evicted.rank:
            out.append(replace(r, decided_by="ahead"))
        else:
            how, margin = decided_by(r, evicted, signal)
            out.append(replace(r, decided_by=how, margin=margin))
    return tuple(out)
