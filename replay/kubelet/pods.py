"""Pod predicates the eviction manager relies on: criticality, QoS, tolerations, limits.

Mirrors pkg/kubelet/types/pod_update.go (IsCriticalPod, IsStaticPod, IsMirrorPod),
k8s.io/api core/v1 toleration.go (ToleratesTaint), component-helpers resource/helpers.go
(PodLimits with default options: sidecar-aware init-container phases from 1.28, overhead on non-zero limits;
IsPodLevelResourcesSet) and pkg/api/v1/resource/helpers.go (GetResourceRequestQuantity, both forms; the
1.26/1.27 PodRequestsAndLimits/PodLimits that know no sidecars).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kube.quantity import Format, Quantity
from replay.kubelet.api import Container, Pod, pod_qos_class
from replay.kubelet.versions import VersionProfile

__all__ = [
    "RequestRule",
    "is_critical_pod",
    "is_mirror_pod",
    "is_pod_level_resources_set",
    "is_static_pod",
    "pod_limits",
    "pod_qos_class",
    "request_rule",
    "resource_request_quantity",
    "tolerates_memory_pressure_taint",
]

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


def is_supported_pod_level_resource(name: str) -> bool:
    """component-helpers resource: IsSupportedPodLevelResource — cpu, memory and hugepages-*."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def is_pod_level_resources_set(pod: Pod) -> bool:
    """component-helpers resource: IsPodLevelResourcesSet — pod-level requests *or* limits name a supported
    resource."""
    if pod.resources is None:
        return False
    return any(is_supported_pod_level_resource(n) for n in (*pod.resources.requests, *pod.resources.limits))


def _aggregate(
    pod: Pod,
    of: Callable[[Container], Mapping[str, Quantity]],
    pod_level: Mapping[str, Quantity],
    sidecars_known: bool = True,
) -> dict[str, Quantity]:
    """component-helpers resource: the container walk PodRequests and PodLimits share — sum over containers,
    sidecars added and tracked through the init phases, max with the init peak; pod-level values replace
    cpu/memory/hugepages. ``sidecars_known`` False is the 1.26/1.27 walk (no container ``restartPolicy`` in
    those API types): every init container only counts in the max (VersionProfile.restartable_init_containers)."""
    total: dict[str, Quantity] = {}
    for container in pod.containers:
        _add(total, of(container))
    sidecars: dict[str, Quantity] = {}
    init_peak: dict[str, Quantity] = {}
    for container in pod.init_containers:
        values = dict(of(container))
        if sidecars_known and container.restartable_init:
            _add(total, values)
            _add(sidecars, values)
            phase = dict(sidecars)
        else:
            phase = values
            _add(phase, sidecars)
        _max(init_peak, phase)
    _max(total, init_peak)
    for name, value in pod_level.items():
        if is_supported_pod_level_resource(name):
            total[name] = value
    return total


def pod_limits(pod: Pod, *, sidecars_known: bool = True) -> dict[str, Quantity]:
    """component-helpers resource: PodLimits(pod, PodResourcesOptions{}); overhead is added to non-zero limits.
    ``sidecars_known`` False: 1.26 PodRequestsAndLimits / 1.27 PodLimits (pkg/api/v1/resource/helpers.go),
    max(Σ containers, each init container) — a ``restartPolicy: Always`` init container is a plain one there."""
    total = _aggregate(
        pod, lambda c: c.limits, pod.resources.limits if pod.resources is not None else {}, sidecars_known
    )
    for name, value in pod.overhead.items():
        if name in total and not total[name].is_zero():
            total[name] = total[name].add(value)
    return total


def pod_requests(pod: Pod, *, sidecars_known: bool = True) -> dict[str, Quantity]:
    """component-helpers resource: PodRequests(pod, PodResourcesOptions{}); overhead is added. ``sidecars_known``
    as in :func:`pod_limits`."""
    total = _aggregate(
        pod, lambda c: c.requests, pod.resources.requests if pod.resources is not None else {}, sidecars_known
    )
    _add(total, pod.overhead)
    return total


RequestRule = tuple[bool, bool]
"""Which GetResourceRequestQuantity a kubelet runs: (the PodRequests form of 1.34+, PodLevelResources on)."""


def request_rule(profile: VersionProfile | None) -> RequestRule:
    """The rule ``profile`` ranks with; no profile is the 1.32-era rule (see VersionProfile's switch)."""
    if profile is None or not profile.ranking_request_uses_pod_requests:
        return (False, False)
    return (True, profile.gate("PodLevelResources"))


def resource_request_quantity(pod: Pod, resource: str, rule: RequestRule) -> Quantity:
    """pkg/api/v1/resource/helpers.go: GetResourceRequestQuantity — the pod's request that ranking compares
    usage with ("exceeds request", "usage − request").

    Up to 1.33: Σ regular containers, then the max with *every* init container (a sidecar counts like
    any init container, not added), then overhead when the total is non-zero. From 1.34 (PR #132277):
    ``PodRequests(pod, {SkipContainerLevelResources: gate && IsPodLevelResourcesSet(pod), ExcludeOverhead:
    true})`` — sidecars are summed with the containers and the init peak counts (KEP-753), supported
    pod-level requests (cpu, memory, hugepages) replace the container ones even with the gate off, and
    with the gate on and any pod-level value set the container walk is skipped, so a resource without a
    pod-level request (ephemeral-storage) has none — then overhead when non-zero.
    """
    fmt = Format.BINARY_SI if resource in ("memory", "storage", "ephemeral-storage") else Format.DECIMAL_SI
    request = Quantity.zero(fmt)
    pod_requests_form, pod_level_gate = rule
    if pod_requests_form:
        skip_containers = pod_level_gate and is_pod_level_resources_set(pod)
        total: dict[str, Quantity] = {} if skip_containers else _aggregate(pod, lambda c: c.requests, {})
        if pod.resources is not None:
            for name, level in pod.resources.requests.items():
                if is_supported_pod_level_resource(name):
                    total[name] = level
        found = total.get(resource)
        if found is not None:
            request = request.add(found)
    else:
        for container in pod.containers:
            value = container.requests.get(resource)
            if value is not None:
                request = request.add(value)
        for container in pod.init_containers:
            init = container.requests.get(resource)
            if init is not None and request.cmp(init) < 0:
                request = init
    overhead = pod.overhead.get(resource)
    if overhead is not None and not request.is_zero():
        request = request.add(overhead)
    return request
