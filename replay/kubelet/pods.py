"""Pod predicates the eviction manager relies on: criticality, QoS, tolerations, limits.

Mirrors pkg/kubelet/types/pod_update.go (IsCriticalPod, IsStaticPod, IsMirrorPod),
k8s.io/api core/v1 toleration.go (ToleratesTaint) and component-helpers resource/helpers.go
(PodLimits with default options: sidecar-aware init-container phases, overhead on non-zero limits).
"""

from __future__ import annotations

from replay.kubelet.api import Pod, pod_qos_class
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


def _add(total: dict[str, Quantity], extra: dict[str, Quantity]) -> None:
    for name, value in extra.items():
        total[name] = total[name].add(value) if name in total else value


def _max(total: dict[str, Quantity], other: dict[str, Quantity]) -> None:
    for name, value in other.items():
        if name not in total or value.cmp(total[name]) > 0:
            total[name] = value


def pod_limits(pod: Pod) -> dict[str, Quantity]:
    """component-helpers resource: PodLimits(pod, PodResourcesOptions{}).

    Sum over containers, sidecars added and tracked through the init phases, max with the init
    peak; pod-level limits replace cpu/memory/hugepages; overhead is added to non-zero limits only.
    """
    total: dict[str, Quantity] = {}
    for container in pod.containers:
        _add(total, dict(container.limits))
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for container in pod.init_containers:
        limits = dict(container.limits)
        if container.restartable_init:
            _add(total, limits)
            _add(sidecars, limits)
            phase = dict(sidecars)
        else:
            phase = dict(limits)
            _add(phase, sidecars)
        _max(init_peak, phase)
    _max(total, init_peak)
    if pod.resources is not None:
        for name, value in pod.resources.limits.items():
            if name in ("cpu", "memory") or name.startswith("hugepages-"):
                total[name] = value
    for name, value in pod.overhead.items():
        if name in total and not total[name].is_zero():
            total[name] = total[name].add(value)
    return total
