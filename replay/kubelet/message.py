"""The text of eviction events, byte for byte: ``evictionMessage``, its annotations, and the others.

Mirrors pkg/kubelet/eviction/helpers.go: evictionMessage, getThresholdMetInfo and the message
format constants, per version (see :mod:`versions`): before 1.32 only ``spec.containers`` are
candidates (PR #124947); 1.27–1.31 may read requests from ``allocatedResources`` (PR #102884,
removed by #128269); 1.34+ adds the pod-level sentence (PR #132277). Every sentence ends with
``". "`` — a trailing space the kubelet really emits.
"""

from __future__ import annotations

from collections.abc import Sequence

from kube.quantity import Format, Quantity
from kube.signals import RESOURCE_EPHEMERAL_STORAGE, RESOURCE_MEMORY, SIGNAL_TO_RESOURCE
from replay.kubelet.api import Container, Pod, PodStats
from replay.kubelet.signals import go_int64, go_uint64
from replay.kubelet.thresholds import Observations, Threshold, get_threshold_quantity
from replay.kubelet.versions import VersionProfile

REASON_EVICTED = "Evicted"
NODE_LOW_MESSAGE_FMT = "The node was low on resource: {}. "
NODE_CONDITION_MESSAGE_FMT = "The node had condition: {}. "
THRESHOLD_MET_MESSAGE_FMT = "Threshold quantity: {}, available: {}. "
CONTAINER_MESSAGE_FMT = "Container {} was using {}, request is {}, has larger consumption of {}. "
POD_MESSAGE_FMT = "Pod {} was using {}, request is {}, has larger consumption of {}. "
CONTAINER_EPHEMERAL_STORAGE_MESSAGE_FMT = "Container {} exceeded its local ephemeral storage limit {}. "
POD_EPHEMERAL_STORAGE_MESSAGE_FMT = "Pod ephemeral local storage usage exceeds the total limit of containers {}. "
EMPTY_DIR_MESSAGE_FMT = "Usage of EmptyDir volume {} exceeds the limit {}. "

OFFENDING_CONTAINERS_KEY = "offending_containers"
OFFENDING_CONTAINERS_USAGE_KEY = "offending_containers_usage"
OFFENDING_POD_KEY = "offending_pod"
OFFENDING_POD_USAGE_KEY = "offending_pod_usage"
STARVED_RESOURCE_KEY = "starved_resource"


def go_quote(text: str) -> str:
    """Go's ``%q`` / strconv.Quote for the names that appear in messages."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable():
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def get_threshold_met_info(
    resource: str, thresholds: Sequence[Threshold], observations: Observations
) -> tuple[Quantity, Quantity] | None:
    """helpers.go: getThresholdMetInfo — the first threshold of ``resource`` that has an observation."""
    for threshold in thresholds:
        if SIGNAL_TO_RESOURCE.get(threshold.signal) == resource:
            observed = observations.get(threshold.signal)
            if observed is not None:
                available = observed.available if observed.available is not None else Quantity.zero()
                return get_threshold_quantity(threshold.value, observed.capacity), available
    return None


def is_pod_level_resources_set(pod: Pod) -> bool:
    """component-helpers resource: IsPodLevelResourcesSet — cpu, memory or hugepages at pod level."""
    if pod.resources is None:
        return False
    names = [*pod.resources.requests, *pod.resources.limits]
    return any(n in ("cpu", "memory") or n.startswith("hugepages-") for n in names)


def _container_request(
    pod: Pod, container: Container, stats_name: str, resource: str, profile: VersionProfile
) -> Quantity:
    request = container.requests.get(resource, Quantity.zero())
    if profile.message_uses_allocated_resources and resource in (RESOURCE_MEMORY, "cpu"):
        status = next((s for s in pod.container_statuses if s.name == stats_name), None)
        if status is not None:
            request = status.allocated_resources.get(resource, Quantity.zero())
    return request


def eviction_message(
    resource: str,
    pod: Pod,
    pod_stats: PodStats | None,
    thresholds: Sequence[Threshold],
    observations: Observations,
    profile: VersionProfile,
) -> tuple[str, dict[str, str]]:
    """helpers.go: evictionMessage — the Event message and its annotations.

    ``pod_stats`` is what the stats lookup returned for the pod (``None``: no stats, in which
    case the message stops after the threshold sentence and the annotations are empty).
    """
    annotations: dict[str, str] = {}
    message = NODE_LOW_MESSAGE_FMT.format(resource)
    met = get_threshold_met_info(resource, thresholds, observations)
    if met is not None:
        message += THRESHOLD_MET_MESSAGE_FMT.format(met[0], met[1])
    if pod_stats is None:
        return message, annotations

    if (
        resource == RESOURCE_MEMORY
        and profile.pod_level_resources
        and is_pod_level_resources_set(pod)
        and pod.resources is not None
        and RESOURCE_MEMORY in pod.resources.requests
        and pod_stats.memory is not None
    ):
        usage_bytes = pod_stats.memory.working_set_bytes
        pod_usage = (
            Quantity.new(go_int64(usage_bytes), Format.BINARY_SI)
            if usage_bytes is not None
            else Quantity.zero(Format.BINARY_SI)
        )
        message += POD_MESSAGE_FMT.format(pod.name, pod_usage, pod.resources.requests[RESOURCE_MEMORY], resource)
        annotations[OFFENDING_POD_KEY] = pod.name
        annotations[OFFENDING_POD_USAGE_KEY] = str(pod_usage)

    candidates: tuple[Container, ...] = pod.containers
    if profile.message_includes_init_containers:
        candidates = (*pod.containers, *pod.init_containers)
    offenders: list[str] = []
    usages: list[str] = []
    for container_stats in pod_stats.containers:
        for container in candidates:
            if container.name != container_stats.name:
                continue
            request = _container_request(pod, container, container_stats.name, resource, profile)
            usage: Quantity | None = None
            if resource == RESOURCE_EPHEMERAL_STORAGE:
                rootfs, logs = container_stats.rootfs, container_stats.logs
                if (
                    rootfs is not None
                    and rootfs.used_bytes is not None
                    and logs is not None
                    and (logs.used_bytes is not None)
                ):
                    usage = Quantity.new(go_int64(go_uint64(rootfs.used_bytes + logs.used_bytes)), Format.BINARY_SI)
            elif resource == RESOURCE_MEMORY:
                mem = container_stats.memory
                if mem is not None and mem.working_set_bytes is not None:
                    usage = Quantity.new(go_int64(mem.working_set_bytes), Format.BINARY_SI)
            if usage is not None and usage.cmp(request) > 0:
                message += CONTAINER_MESSAGE_FMT.format(container.name, usage, request, resource)
                offenders.append(container.name)
                usages.append(str(usage))
            if profile.message_includes_init_containers:
                break  # PR #124947: the matching container was found
    annotations[OFFENDING_CONTAINERS_KEY] = ",".join(offenders)
    annotations[OFFENDING_CONTAINERS_USAGE_KEY] = ",".join(usages)
    annotations[STARVED_RESOURCE_KEY] = resource
    return message, annotations


def empty_dir_message(volume: str, limit: Quantity) -> str:
    """eviction_manager.go: emptyDirLimitEviction message."""
    return EMPTY_DIR_MESSAGE_FMT.format(go_quote(volume), go_quote(str(limit)))


def pod_ephemeral_storage_message(limit: Quantity) -> str:
    """eviction_manager.go: podEphemeralStorageLimitEviction message."""
    return POD_EPHEMERAL_STORAGE_MESSAGE_FMT.format(limit)


def container_ephemeral_storage_message(container: str, limit: Quantity) -> str:
    """eviction_manager.go: containerEphemeralStorageLimitEviction message."""
    return CONTAINER_EPHEMERAL_STORAGE_MESSAGE_FMT.format(container, go_quote(str(limit)))


def node_condition_message(conditions: Sequence[str]) -> str:
    """eviction_manager.go: Admit — ``fmt.Sprintf("%v", []NodeConditionType)`` is ``[A B]``."""
    return NODE_CONDITION_MESSAGE_FMT.format("[" + " ".join(conditions) + "]")
