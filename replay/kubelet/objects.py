"""Typed views of core/v1 Pods and Nodes (k8s.io/api/core/v1/types.go), as the eviction manager reads them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from dataclasses import field as _field
from datetime import datetime
from typing import Any, Literal

from kube.quantity import Quantity
from replay.kubelet.jsonpath import (
    NODES_HINT,
    PODS_HINT,
    _as_object,
    _At,
    _describe,
    _int32,
    _int64,
    _list,
    _no_quantities,
    _object,
    _objects,
    _optional_string,
    _quantity,
    _resource_list,
    _string,
    _string_map,
    _time,
)
from replay.kubelet.qos import pod_qos_class

# --------------------------------------------------------------------------------------------
# core/v1 Pod and Node
# --------------------------------------------------------------------------------------------

ContainerKind = Literal["regular", "init", "ephemeral"]


@dataclass(frozen=True, slots=True)
class Container:
    """A container of any kind; ``restart_policy`` is the container-level field (sidecars)."""

    name: str
    kind: ContainerKind
    requests: Mapping[str, Quantity] = _field(default_factory=_no_quantities)
    limits: Mapping[str, Quantity] = _field(default_factory=_no_quantities)
    restart_policy: str | None = None

    @property
    def restartable_init(self) -> bool:
        """A native sidecar: an init container with ``restartPolicy: Always`` (K8s 1.28+)."""
        return self.kind == "init" and self.restart_policy == "Always"


@dataclass(frozen=True, slots=True)
class Volume:
    """A pod volume, reduced to its source kind; disk ranking and the emptyDir limit need no more."""

    name: str
    source: str
    empty_dir_medium: str | None = None
    empty_dir_size_limit: Quantity | None = None


@dataclass(frozen=True, slots=True)
class ContainerStatus:
    """Status resources: ``allocatedResources`` (IPPVS, 1.27–1.31) and ``resources``."""

    name: str
    allocated_resources: Mapping[str, Quantity] = _field(default_factory=_no_quantities)
    resources_requests: Mapping[str, Quantity] = _field(default_factory=_no_quantities)
    resources_limits: Mapping[str, Quantity] = _field(default_factory=_no_quantities)


@dataclass(frozen=True, slots=True)
class Toleration:
    """``Toleration`` (``tolerationSeconds`` is not needed by the port)."""

    key: str
    operator: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class PodResources:
    """Pod-level ``spec.resources`` (PodLevelResources, beta 1.34)."""

    requests: Mapping[str, Quantity] = _field(default_factory=_no_quantities)
    limits: Mapping[str, Quantity] = _field(default_factory=_no_quantities)


@dataclass(frozen=True, slots=True)
class Pod:
    """A core/v1 Pod as the eviction manager sees it (kubelet ``/pods`` or the API server)."""

    name: str
    namespace: str
    uid: str
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    owner_kinds: tuple[str, ...]
    node_name: str
    priority: int | None
    priority_class_name: str
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...]
    ephemeral_containers: tuple[Container, ...]
    volumes: tuple[Volume, ...]
    overhead: Mapping[str, Quantity]
    resources: PodResources | None
    termination_grace_period_seconds: int | None
    tolerations: tuple[Toleration, ...]
    phase: str
    reason: str
    message: str
    qos_class: str
    container_statuses: tuple[ContainerStatus, ...]
    init_container_statuses: tuple[ContainerStatus, ...]
    deletion_timestamp: datetime | None
    owner_names: tuple[str, ...] = ()
    """Parallel to ``owner_kinds``: the owners' names (what a replay reports as an eviction's impact)."""


@dataclass(frozen=True, slots=True)
class NodeCondition:
    """``NodeCondition`` (MemoryPressure, DiskPressure, PIDPressure, Ready, ...)."""

    type: str
    status: str
    reason: str
    message: str
    last_transition_time: datetime | None
    last_heartbeat_time: datetime | None


@dataclass(frozen=True, slots=True)
class Taint:
    """``Taint`` (``timeAdded`` is not needed by the port)."""

    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Node:
    """A core/v1 Node: capacity/allocatable feed ``allocatableMemory.available``; conditions, taints."""

    name: str
    capacity: Mapping[str, Quantity]
    allocatable: Mapping[str, Quantity]
    conditions: tuple[NodeCondition, ...]
    taints: tuple[Taint, ...]
    kubelet_version: str
    os: str
    architecture: str
    labels: Mapping[str, str]


# --------------------------------------------------------------------------------------------
# Pod parsing
# --------------------------------------------------------------------------------------------


def parse_pod(obj: Any, *, source: str, field: str = "") -> Pod:
    """Read one core/v1 Pod (``kind`` may be absent, as in insights archives and kubelet output)."""
    at = _At(source, field)
    pod = _as_object(obj, at, "a Pod object")
    _check_kind(pod, at, "Pod", PODS_HINT)
    if "metadata" not in pod and "spec" not in pod:
        if "node" in pod and "pods" in pod:
            raise at.error(f"expected {PODS_HINT}, got a Summary API object")
        raise at.error(f"expected {PODS_HINT}: an object without `metadata` or `spec` is not a Pod")
    meta = _object(pod, "metadata", at) or {}
    meta_at = at.key("metadata")
    spec = _object(pod, "spec", at) or {}
    spec_at = at.key("spec")
    status = _object(pod, "status", at) or {}
    status_at = at.key("status")

    pod_resources = _object(spec, "resources", spec_at)
    resources = (
        None
        if pod_resources is None
        else PodResources(
            requests=_resource_list(pod_resources, "requests", spec_at.key("resources")),
            limits=_resource_list(pod_resources, "limits", spec_at.key("resources")),
        )
    )
    parsed = Pod(
        name=_string(meta, "name", meta_at),
        namespace=_string(meta, "namespace", meta_at),
        uid=_string(meta, "uid", meta_at),
        annotations=_string_map(meta, "annotations", meta_at),
        labels=_string_map(meta, "labels", meta_at),
        owner_kinds=tuple(_string(ref, "kind", here) for ref, here in _objects(meta, "ownerReferences", meta_at)),
        owner_names=tuple(_string(ref, "name", here) for ref, here in _objects(meta, "ownerReferences", meta_at)),
        node_name=_string(spec, "nodeName", spec_at),
        priority=_int32(spec, "priority", spec_at),
        priority_class_name=_string(spec, "priorityClassName", spec_at),
        containers=_containers(spec, "containers", spec_at, "regular"),
        init_containers=_containers(spec, "initContainers", spec_at, "init"),
        ephemeral_containers=_containers(spec, "ephemeralContainers", spec_at, "ephemeral"),
        volumes=tuple(_volume(item, here) for item, here in _objects(spec, "volumes", spec_at)),
        overhead=_resource_list(spec, "overhead", spec_at),
        resources=resources,
        termination_grace_period_seconds=_int64(spec, "terminationGracePeriodSeconds", spec_at),
        tolerations=tuple(
            Toleration(
                key=_string(item, "key", here),
                operator=_string(item, "operator", here),
                value=_string(item, "value", here),
                effect=_string(item, "effect", here),
            )
            for item, here in _objects(spec, "tolerations", spec_at)
        ),
        phase=_string(status, "phase", status_at),
        reason=_string(status, "reason", status_at),
        message=_string(status, "message", status_at),
        qos_class=_string(status, "qosClass", status_at),
        container_statuses=_statuses(status, "containerStatuses", status_at),
        init_container_statuses=_statuses(status, "initContainerStatuses", status_at),
        deletion_timestamp=_time(meta, "deletionTimestamp", meta_at),
    )
    if not parsed.qos_class:
        # GetPodQOS: status.qosClass when the API server has set it, else ComputePodQOS.
        parsed = replace(parsed, qos_class=pod_qos_class(parsed))
    return parsed


def parse_pods(obj: Any, *, source: str) -> tuple[Pod, ...]:
    """Read pods from a PodList, a ``kind: List``, a bare list, or a single Pod."""
    at = _At(source, "")
    if isinstance(obj, list | tuple):
        return tuple(parse_pod(item, source=source, field=at.index(i).path) for i, item in enumerate(obj))
    top = _as_object(obj, at, PODS_HINT)
    kind = top.get("kind")
    if kind in ("PodList", "List") or (kind is None and "items" in top):
        return tuple(parse_pod(item, source=source, field=here.path) for item, here in _list(top, "items", at))
    return (parse_pod(top, source=source),)


def _check_kind(obj: Mapping[str, Any], at: _At, expected: str, hint: str) -> None:
    kind = obj.get("kind")
    if kind is not None and kind != expected:
        raise at.key("kind").error(f"expected {hint}, got {_describe(kind)}")


def _containers(spec: Mapping[str, Any], key: str, at: _At, kind: ContainerKind) -> tuple[Container, ...]:
    containers = []
    for item, here in _objects(spec, key, at):
        resources = _object(item, "resources", here)
        resources_at = here.key("resources")
        containers.append(
            Container(
                name=_string(item, "name", here),
                kind=kind,
                requests=_resource_list(resources, "requests", resources_at),
                limits=_resource_list(resources, "limits", resources_at),
                restart_policy=_optional_string(item, "restartPolicy", here),
            )
        )
    return tuple(containers)


def _volume(obj: Mapping[str, Any], at: _At) -> Volume:
    """Reduce a ``v1.Volume`` to its source key (``emptyDir``, ``hostPath``, ``configMap``, ...)."""
    source = next((key for key, value in obj.items() if key != "name" and value is not None), "")
    medium: str | None = None
    size_limit: Quantity | None = None
    if source == "emptyDir":
        empty_dir = _object(obj, "emptyDir", at) or {}
        here = at.key("emptyDir")
        medium = _string(empty_dir, "medium", here)
        if empty_dir.get("sizeLimit") is not None:
            size_limit = _quantity(empty_dir["sizeLimit"], here.key("sizeLimit"))
    return Volume(
        name=_string(obj, "name", at),
        source=source,
        empty_dir_medium=medium,
        empty_dir_size_limit=size_limit,
    )


def _statuses(status: Mapping[str, Any], key: str, at: _At) -> tuple[ContainerStatus, ...]:
    statuses = []
    for item, here in _objects(status, key, at):
        resources = _object(item, "resources", here)
        resources_at = here.key("resources")
        statuses.append(
            ContainerStatus(
                name=_string(item, "name", here),
                allocated_resources=_resource_list(item, "allocatedResources", here),
                resources_requests=_resource_list(resources, "requests", resources_at),
                resources_limits=_resource_list(resources, "limits", resources_at),
            )
        )
    return tuple(statuses)


# --------------------------------------------------------------------------------------------
# Node parsing
# --------------------------------------------------------------------------------------------


def parse_node(obj: Any, *, source: str, field: str = "") -> Node:
    """Read one core/v1 Node (``kind`` may be absent, as in OpenShift insights archives)."""
    at = _At(source, field)
    node = _as_object(obj, at, "a Node object")
    _check_kind(node, at, "Node", NODES_HINT)
    if "metadata" not in node and "status" not in node:
        raise at.error(f"expected {NODES_HINT}: an object without `metadata` or `status` is not a Node")
    meta = _object(node, "metadata", at) or {}
    meta_at = at.key("metadata")
    spec = _object(node, "spec", at) or {}
    spec_at = at.key("spec")
    status = _object(node, "status", at) or {}
    status_at = at.key("status")
    info = _object(status, "nodeInfo", status_at) or {}
    info_at = status_at.key("nodeInfo")
    labels = _string_map(meta, "labels", meta_at)
    return Node(
        name=_string(meta, "name", meta_at),
        capacity=_resource_list(status, "capacity", status_at),
        allocatable=_resource_list(status, "allocatable", status_at),
        conditions=tuple(
            NodeCondition(
                type=_string(item, "type", here),
                status=_string(item, "status", here),
                reason=_string(item, "reason", here),
                message=_string(item, "message", here),
                last_transition_time=_time(item, "lastTransitionTime", here),
                last_heartbeat_time=_time(item, "lastHeartbeatTime", here),
            )
            for item, here in _objects(status, "conditions", status_at)
        ),
        taints=tuple(
            Taint(
                key=_string(item, "key", here),
                value=_string(item, "value", here),
                effect=_string(item, "effect", here),
            )
            for item, here in _objects(spec, "taints", spec_at)
        ),
        kubelet_version=_string(info, "kubeletVersion", info_at),
        # nodeInfo is what the kubelet reports; the well-known labels stand in when it was stripped.
        os=_string(info, "operatingSystem", info_at) or labels.get("kubernetes.io/os", ""),
        architecture=_string(info, "architecture", info_at) or labels.get("kubernetes.io/arch", ""),
        labels=labels,
    )


def parse_nodes(obj: Any, *, source: str) -> tuple[Node, ...]:
    """Read nodes from a NodeList, a ``kind: List``, a bare list, or a single Node."""
    at = _At(source, "")
    if isinstance(obj, list | tuple):
        return tuple(parse_node(item, source=source, field=at.index(i).path) for i, item in enumerate(obj))
    top = _as_object(obj, at, NODES_HINT)
    kind = top.get("kind")
    if kind in ("NodeList", "List") or (kind is None and "items" in top):
        return tuple(parse_node(item, source=source, field=here.path) for item, here in _list(top, "items", at))
    return (parse_node(top, source=source),)
