"""The kernel's OOM killer as the kubelet arms it: ``oom_score_adj`` by QoS and the kernel's ``oom_badness``.

Ports, on plain Pod manifests (both the scenario generator and the replay read them):

* ``container_oom_score_adjust``: pkg/kubelet/qos/policy.go ``GetContainerOOMScoreAdjust`` — node-critical
  pods and Guaranteed pods −997, BestEffort 1000, Burstable ``1000 − 1000·request/capacity`` (integer
  division as Go's int64) clamped to [3, 999]; from 1.32 a sidecar (an init container with
  ``restartPolicy: Always``) is scored by the smaller of its own request and the regular containers' smallest
  (a missing request counting as 200Mi), plus 1 when its own request is not below that: at least the regular
  containers' highest adjustment, so it goes first (PR #128029, in v1.32.0; KEP-753; behind ``SidecarContainers``, on by
  default since 1.29). Before 1.32 a sidecar is scored by its own request like any container, which is also what
  a 1.26/1.27 kubelet does with it (no container ``restartPolicy`` in those API types: a plain init container;
  issue 29, docs/version-table.md). The pod-level-resources form of the
  formula (``PodLevelResources`` with ``spec.resources.requests`` set) is not ported: such pods use their
  container requests here.
* ``oom_badness``: mm/oom_kill.c — ``points = rss pages (+ swap + page tables) + adj · (totalpages / 1000)``,
  ``totalpages`` being the memory cgroup's limit for a cgroup OOM and RAM + swap for a global one; a task at
  ``OOM_SCORE_ADJ_MIN`` (−1000) is never chosen. ``select_bad_process`` keeps the last task scanned among equal
  scores (``points < chosen_points`` skips, ``==`` replaces).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kube.qos import compute_qos
from kube.quantity import Quantity

KUBELET_OOM_SCORE_ADJ = -999
KUBE_PROXY_OOM_SCORE_ADJ = -999
GUARANTEED_OOM_SCORE_ADJ = -997
BESTEFFORT_OOM_SCORE_ADJ = 1000
OOM_SCORE_ADJ_MIN = -1000
PAGE_SIZE = 4096
SYSTEM_NODE_CRITICAL = "system-node-critical"
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
"""pkg/apis/scheduling: ``SystemCriticalPriority``; a pod at or above it is critical (types.IsCriticalPod)."""
SIDECAR_RULE_MINOR = 32
"""PR #128029 first shipped in v1.32.0 (CHANGELOG-1.32.md, v1.32.0-alpha.3, Feature)."""

T = TypeVar("T")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _memory(resources: Mapping[str, Any], section: str) -> int | None:
    value = _mapping(resources.get(section)).get("memory")
    if value is None:
        return None
    return int(Quantity.parse(str(value)).int_value())


def container_memory_request(container: Mapping[str, Any]) -> int:
    """``Resources.Requests.Memory().Value()`` after API defaulting (a limit without a request: the limit)."""
    resources = _mapping(container.get("resources"))
    request = _memory(resources, "requests")
    if request is None:
        request = _memory(resources, "limits")
    return request or 0


def container_memory_limit(container: Mapping[str, Any]) -> int | None:
    """The container's memory limit in bytes (its cgroup's ``memory.max``), None when unlimited."""
    return _memory(_mapping(container.get("resources")), "limits")


def pod_qos_class(pod: Mapping[str, Any]) -> str:
    """v1qos.GetPodQOS: ``status.qosClass`` when set, else ``ComputePodQOS`` (kube/qos.py) over the regular and
    init containers, requests defaulted from limits as the API server does."""
    given = _mapping(pod.get("status")).get("qosClass")
    if isinstance(given, str) and given:
        return given
    spec = _mapping(pod.get("spec"))
    resources: list[tuple[dict[str, Quantity], dict[str, Quantity]]] = []
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = _mapping(_mapping(container).get("resources"))
        req = {k: Quantity.parse(str(v)) for k, v in _mapping(res.get("requests")).items()}
        lim = {k: Quantity.parse(str(v)) for k, v in _mapping(res.get("limits")).items()}
        for name, q in lim.items():  # API defaulting: requests default to limits
            req.setdefault(name, q)
        resources.append((req, lim))
    return compute_qos(resources)


def is_node_critical_pod(pod: Mapping[str, Any]) -> bool:
    """pkg/kubelet/types: ``IsNodeCriticalPod`` = critical (static, mirror, or priority ≥ 2·10⁹) and
    ``priorityClassName: system-node-critical``."""
    spec = _mapping(pod.get("spec"))
    if spec.get("priorityClassName") != SYSTEM_NODE_CRITICAL:
        return False
    annotations = _mapping(_mapping(pod.get("metadata")).get("annotations"))
    static = annotations.get("kubernetes.io/config.source", "api") != "api"
    mirror = "kubernetes.io/config.mirror" in annotations
    priority = spec.get("priority")
    high = isinstance(priority, int) and priority >= SYSTEM_CRITICAL_PRIORITY
    return static or mirror or high


def _is_sidecar(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    if container.get("restartPolicy") != "Always":
        return False
    inits = _mapping(pod.get("spec")).get("initContainers") or []
    return any(_mapping(c).get("name") == container.get("name") for c in inits)


def container_oom_score_adjust(
    pod: Mapping[str, Any], container: Mapping[str, Any], memory_capacity: int, *, minor: int = 99
) -> int:
    """policy.go ``GetContainerOOMScoreAdjust`` for a kubelet of version 1.``minor``."""
    if is_node_critical_pod(pod):
        return GUARANTEED_OOM_SCORE_ADJ
    qos = pod_qos_class(pod)
    if qos == "Guaranteed":
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == "BestEffort":
        return BESTEFFORT_OOM_SCORE_ADJ
    capacity = max(1, memory_capacity)
    adjust = 1000 - _go_div(1000 * container_memory_request(container), capacity)
    if minor >= SIDECAR_RULE_MINOR and _is_sidecar(pod, container):
        # min(the sidecar's request, the regular containers' smallest), a missing request counted as the
        # scheduler's DefaultMemoryRequest (resourcehelper.MinRegularContainerResourceList/MinResourceList with
        # NonMissingContainerRequests); +1 when that minimum is at most the sidecar's own request: the sidecar
        # is killed before the regular container with the smallest request
        regular = _mapping(pod.get("spec")).get("containers") or []
        smallest = min([_request_or_default(_mapping(c)) for c in regular], default=None)
        own = _request_or_default(container)
        least = own if smallest is None else min(own, smallest)
        adjust = 1000 - _go_div(1000 * least, capacity)
        if least <= container_memory_request(container):
            adjust += 1
    if adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adjust == BESTEFFORT_OOM_SCORE_ADJ:
        return adjust - 1
    return adjust


DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
"""pkg/scheduler/util: ``DefaultMemoryRequest``, what a container without a memory request counts as."""


def _request_or_default(container: Mapping[str, Any]) -> int:
    resources = _mapping(container.get("resources"))
    request = _memory(resources, "requests")
    if request is None:
        request = _memory(resources, "limits")
    return DEFAULT_MEMORY_REQUEST if request is None else request


def _go_div(a: int, b: int) -> int:
    """Go's int64 division truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def oom_badness(rss_bytes: int, adj: int, totalpages: int) -> int | None:
    """mm/oom_kill.c ``oom_badness``: None (LONG_MIN, never chosen) at ``OOM_SCORE_ADJ_MIN``."""
    if adj == OOM_SCORE_ADJ_MIN:
        return None
    return rss_bytes // PAGE_SIZE + adj * (totalpages // 1000)


def select_victim(candidates: Iterable[tuple[T, int, int]], totalpages: int) -> T | None:
    """``select_bad_process`` over ``(task, rss bytes, oom_score_adj)`` in scan order: the highest badness, the
    last scanned among equals; None when no task can be chosen."""
    chosen: T | None = None
    best: int | None = None
    for task, rss, adj in candidates:
        points = oom_badness(rss, adj, totalpages)
        if points is None or (best is not None and points < best):
            continue
        chosen, best = task, points
    return chosen


EXHAUSTED_FLOOR = 64 << 20
EXHAUSTED_FRACTION = 0.01


def exhausted_below(capacity: int | None) -> int:
    """Memory counts as exhausted at ``memory.available`` ≤ ``max(64Mi, 1% of capacity)``: the kernel keeps its
    watermarks and the working set still holds some reclaimable pages, so available rarely reads 0 — the node is
    reclaiming (thrashing) by then. The replay's too-fast moments and the scenarios' starving kubelet use it."""
    return max(EXHAUSTED_FLOOR, int((capacity or 0) * EXHAUSTED_FRACTION))


def total_pages(limit_bytes: int) -> int:
    """A memory limit (cgroup ``memory.max``, or RAM for a global OOM; no swap) in pages."""
    return limit_bytes // PAGE_SIZE


__all__: Sequence[str] = (
    "BESTEFFORT_OOM_SCORE_ADJ",
    "GUARANTEED_OOM_SCORE_ADJ",
    "KUBELET_OOM_SCORE_ADJ",
    "container_memory_limit",
    "container_memory_request",
    "container_oom_score_adjust",
    "exhausted_below",
    "is_node_critical_pod",
    "oom_badness",
    "pod_qos_class",
    "select_victim",
    "total_pages",
)
