"""Pod QoS class: pkg/apis/core/v1/helper/qos/qos.go (ComputePodQOS), pod-level resources included."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kube.qos import QOS_RESOURCES, compute_qos

# --------------------------------------------------------------------------------------------
# QoS (pkg/apis/core/v1/helper/qos/qos.go: ComputePodQOS)
# --------------------------------------------------------------------------------------------

if TYPE_CHECKING:
    from replay.kubelet.objects import Pod


def _is_pod_level_resource(name: str) -> bool:
    """component-helpers resource/helpers.go ``IsSupportedPodLevelResource`` (newest form)."""
    return name in QOS_RESOURCES or name.startswith("hugepages-")


def _pod_level_resources_set(pod: Pod) -> bool:
    """component-helpers resource/helpers.go ``IsPodLevelResourcesSet``."""
    if pod.resources is None:
        return False
    names = [*pod.resources.requests, *pod.resources.limits]
    return any(_is_pod_level_resource(name) for name in names)


def pod_qos_class(pod: Pod, *, pod_level_resources: bool = True) -> str:
    """Port of ``ComputePodQOS`` (pkg/apis/core/v1/helper/qos/qos.go).

    Regular and init containers count (ephemeral containers cannot set resources). With the
    ``PodLevelResources`` gate on (beta, default on since 1.34) and cpu/memory/hugepages set in
    ``spec.resources``, the pod-level requests and limits decide instead.
    """
    if pod_level_resources and pod.resources is not None and _pod_level_resources_set(pod):
        return compute_qos((), (pod.resources.requests, pod.resources.limits))
    return compute_qos((c.requests, c.limits) for c in (*pod.containers, *pod.init_containers))
