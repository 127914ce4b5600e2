"""Pod QoS class: pkg/apis/core/v1/helper/qos/qos.go (``ComputePodQOS``), on requests/limits maps — the one
rule for the port (replay/kubelet/qos.py, parsed Pods) and the scenarios' kernel (kube/oom.py, manifests).

Every regular and init container counts, whatever its ``restartPolicy``: a sidecar is one more init container here,
so the class is the same on a 1.26/1.27 kubelet (no container ``restartPolicy`` in its API types) as from 1.28 on
(issue 29; docs/version-table.md) — nothing to switch by version."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kube.quantity import Quantity

QOS_RESOURCES = ("cpu", "memory")

Resources = tuple[Mapping[str, Quantity], Mapping[str, Quantity]]
"""(requests, limits) of one container, or of the pod (``spec.resources``)."""


def _add_positive(total: dict[str, Quantity], resources: Mapping[str, Quantity]) -> None:
    """``processResourceList``: sum the cpu/memory quantities that are > 0."""
    zero = Quantity.zero()
    for name, quantity in resources.items():
        if name in QOS_RESOURCES and quantity.cmp(zero) > 0:
            total[name] = quantity if name not in total else quantity.add(total[name])


def has_cpu_and_memory_limits(limits: Mapping[str, Quantity]) -> bool:
    """``getQOSResources(limits).HasAll(memory, cpu)``."""
    zero = Quantity.zero()
    return all(name in limits and limits[name].cmp(zero) > 0 for name in QOS_RESOURCES)


def compute_qos(containers: Iterable[Resources], pod_level: Resources | None = None) -> str:
    """``ComputePodQOS`` over the regular and init containers' (requests, limits), or the pod-level ones when
    ``PodLevelResources`` applies (the caller decides: gate on and cpu/memory/hugepages set in spec.resources)."""
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}
    guaranteed = True
    if pod_level is not None:
        _add_positive(requests, pod_level[0])
        _add_positive(limits, pod_level[1])
        guaranteed = has_cpu_and_memory_limits(pod_level[1])
    else:
        for container_requests, container_limits in containers:
            _add_positive(requests, container_requests)
            _add_positive(limits, container_limits)
            if not has_cpu_and_memory_limits(container_limits):
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
