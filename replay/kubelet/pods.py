"""Pod predicates the eviction manager relies on: criticality, QoS, tolerations, limits.

Mirrors pkg/kubelet/types/pod_update.go (IsCriticalPod, IsStaticPod, IsMirrorPod),
k8s.io/api core/v1 toleration.go (ToleratesTaint) and component-helpers resource/helpers.go
(PodLimits with default options: sidecar-aware init-container phases, overhead on non-zero limits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from replay.kubelet.api import Container, Pod, pod_qos_class
from replay.kubelet.quantity import Quantity

__all__ = ["is_critical_pod", "is_mirror_pod", "is_static_pod", "pod_limits", "pod_qos_class",
           "tolerates_memory_pressure_taint"]

CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
CONFIG_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
API_SERVER_SOURCE = "api"
SYSTEM_CRITICAL_PRIORITY = 2 * 1_000_000_000
TAINT_NODE_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"


def is_static_pod(pod: Pod) -> bool:
    """pod_update.go: IsStaticPod — a config.source annotation other than ``api``."""
    source = pod.annotations.get(CONFIG_SOURCE_ANNOTATION)
    return source is not None and source != API_SERVER_SOURCE


def is_mirror_pod(pod: Pod) -> bool:
    """pod_update.go: IsMirrorPod."""
    return CONFIG_MIRROR_ANNOTATION in pod.annotations


def is_critical_pod(pod: Pod) -> bool:
    """pod_update.go: IsCriticalPod — static, mirror, or priority ≥ system-critical (2e9)."""
    if is_static_pod(pod) or is_mirror_pod(pod):
        return True
    return pod.priority is not None and pod.priority >= SYSTEM_CRITICAL_PRIORITY


def tolerates_memory_pressure_taint(pod: Pod) -> bool:
    """corev1helpers.TolerationsTolerateTaint for ``node.kubernetes.io/memory-pressure:NoSchedule``."""
    for t in pod.tolerations:
        if t.effect and t.effect != "NoSchedule":
            continue
        if t.key and t.key != TAINT_NODE_MEMORY_PRESSURE:
            continue
        if t.operator in ("", "Equal") and t.value == "":
            return True
        if t.operator == "Exists":
            return True
    return False


def _add(total: dict[str, Quantity], extra: Mapping[str, Quantity]) -> None:
    for name, value in extra.items():
        total[name] = total[name].add(value) if name in total else value


def _max(total: dict[str, Quantity], other: Mapping[str, Quantity]) -> None:
    for name, value in other.items():
        if name not in total or value.cmp(total[name]) > 0:
            total[name] = value


def _aggregate(pod: Pod, of: Callable[[Container], Mapping[str, Quantity]],
               pod_level: Mapping[str, Quantity]) -> dict[str, Quantity]:
    """component-helpers resource: the container walk PodRequests and PodLimits share — sum over containers,
    sidecars added and tracked through the init phases, max with the init peak; pod-level values replace
    cpu/memory/hugepages."""
    total: dict[str, Quantity] = {}
    for container in pod.containers:
        _add(total, of(container))
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for container in pod.init_containers:
        values = dict(of(container))
        if container.restartable_init:
            _add(total, values)
            _add(sidecars, values)
            phase = dict(sidecars)
        else:
            phase = values
            _add(phase, sidecars)
        _max(init_peak, phase)
    _max(total, init_peak)
    for name, value in pod_level.items():
        if name in ("cpu", "memory") or name.startswith("hugepages-"):
            total[name] = value
    return total


def pod_limits(pod: Pod) -> dict[str, Quantity]:
    """component-helpers resource: PodLimits(pod, PodResourcesOptions{}); overhead is added to non-zero limits."""
    total = _aggregate(pod, lambda c: c.limits, pod.resources.limits if pod.resources is not None else {})
    for name, value in pod.overhead.items():
        if name in total and not total[name].is_zero():
            total[name] = total[name].add(value)
    return total


def pod_requests(pod: Pod) -> dict[str, Quantity]:
    """component-helpers resource: PodRequests(pod, PodResourcesOptions{}); overhead is added."""
    total = _aggregate(pod, lambda c: c.requests, pod.resources.requests if pod.resources is not None else {})
    _add(total, pod.overhead)
    return total
