"""Pod QoS class: pkg/apis/core/v1/helper/qos/qos.go (ComputePodQOS), pod-level resources included."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kube.quantity import Quantity

# --------------------------------------------------------------------------------------------
# QoS (pkg/apis/core/v1/helper/qos/qos.go: ComputePodQOS)
# --------------------------------------------------------------------------------------------

_QOS_RESOURCES = ("cpu", "memory")

if TYPE_CHECKING:
    from replay.kubelet.objects import Pod


def _is_pod_level_resource(name: str) -> bool:
    """component-helpers resource/helpers.go ``IsSupportedPodLevelResource`` (newest form)."""
    return name in _QOS_RESOURCES or name.startswith("hugepages-")


def _pod_level_resources_set(pod: Pod) -> bool:
    """component-helpers resource/helpers.go ``IsPodLevelResourcesSet``."""
    if pod.resources is None:
        return False
    names = [*pod.resources.requests, *pod.resources.limits]
    return any(_is_pod_level_resource(name) for name in names)


def _add_positive(total: dict[str, Quantity], resources: Mapping[str, Quantity]) -> None:
    """``processResourceList``: sum the cpu/memory quantities that are > 0."""
    zero = Quantity.zero()
    for name, quantity in resources.items():
        if name in _QOS_RESOURCES and quantity.cmp(zero) > 0:
            total[name] = quantity if name not in total else quantity.add(total[name])


def _has_cpu_and_memory_limits(limits: Mapping[str, Quantity]) -> bool:
    """``getQOSResources(limits).HasAll(memory, cpu)``."""
    zero = Quantity.zero()
    return all(name in limits and limits[name].cmp(zero) > 0 for name in _QOS_RESOURCES)


def pod_qos_class(pod: Pod, *, pod_level_resources: bool = True) -> str:
    """Port of ``ComputePodQOS`` (pkg/apis/core/v1/helper/qos/qos.go).

    Regular and init containers count (ephemeral containers cannot set resources). With the
    ``PodLevelResources`` gate on (beta, default on since 1.34) and cpu/memory/hugepages set in
    ``spec.resources``, the pod-level requests and limits decide instead.
    """
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    if pod_level_resources and pod.resources is not None and _pod_level_resources_set(pod):
        _add_positive(requests, pod.resources.requests)
        _add_positive(limits, pod.resources.limits)
        guaranteed = _has_cpu_and_memory_limits(pod.resources.limits)
    else:
        for container in (*pod.containers, *pod.init_containers):
            _add_positive(requests, container.requests)
            _add_positive(limits, container.limits)
            if not _has_cpu_and_memory_limits(container.limits):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, request in requests.items():
            if name not in limits or limits[name].cmp(request) != 0:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"
