"""Typed, immutable views of the Kubernetes objects the eviction manager reads.

Three inputs, each trimmed to the fields the port and the replay use:

* the kubelet Summary API — ``k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go``
  (kubernetes/kubernetes ``staging/src/k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go``);
* core/v1 Pods and Nodes — ``k8s.io/api/core/v1/types.go``.

Parsing follows Go's ``encoding/json`` where it matters for the port: absent and ``null`` are the
same (every optional field is a pointer or a map), unknown fields are ignored, counters are
unsigned 64-bit integers (a float or a bool is an error, not a value), and quantities use the
apimachinery grammar. Where Go would silently take a zero value for a malformed document we raise
:class:`~replay.errors.InputError` naming the source, the JSON path and what was expected, because
an offline replay is only as good as its input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from dataclasses import field as _field
from datetime import UTC, date, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any, Literal

from replay.errors import InputError
from replay.kubelet.quantity import Quantity

__all__ = [
    "Container",
    "ContainerKind",
    "ContainerStats",
    "ContainerStatus",
    "FsStats",
    "MemoryStats",
    "Node",
    "NodeCondition",
    "NodeStats",
    "Pod",
    "PodReference",
    "PodResources",
    "PodStats",
    "ProcessStats",
    "RlimitStats",
    "RuntimeStats",
    "Summary",
    "Taint",
    "Toleration",
    "Volume",
    "VolumeStats",
    "parse_node",
    "parse_nodes",
    "parse_pod",
    "parse_pod_stats",
    "parse_pods",
    "parse_summary",
    "pod_qos_class",
]

SUMMARY_HINT = "a Summary API object (kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary)"
PODS_HINT = "pods (kubelet /pods, kubectl get pods -o json|yaml, or a Pod)"
NODES_HINT = "nodes (kubectl get nodes -o json|yaml, or a Node)"
UINT64_MAX = 2**64 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

_EMPTY_QUANTITIES: Mapping[str, Quantity] = MappingProxyType({})
_EMPTY_STRINGS: Mapping[str, str] = MappingProxyType({})


def _no_quantities() -> Mapping[str, Quantity]:
    """Default for resource-list fields (a shared read-only empty mapping)."""
    return _EMPTY_QUANTITIES


# --------------------------------------------------------------------------------------------
# Summary API (stats/v1alpha1 types.go)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FsStats:
    """``FsStats``: one filesystem; every counter is an optional ``*uint64``."""

    time: datetime | None = None
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """``MemoryStats``: ``availableBytes`` is omitted when the cgroup has no memory limit."""

    time: datetime | None = None
    available_bytes: int | None = None
    usage_bytes: int | None = None
    working_set_bytes: int | None = None
    rss_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class ContainerStats:
    """``ContainerStats``: also used for ``node.systemContainers`` (``kubelet``, ``runtime``, ``pods``)."""

    name: str
    memory: MemoryStats | None = None
    rootfs: FsStats | None = None
    logs: FsStats | None = None


@dataclass(frozen=True, slots=True)
class VolumeStats:
    """``VolumeStats``: FsStats fields sit inline next to ``name`` in the JSON."""

    name: str
    fs: FsStats


@dataclass(frozen=True, slots=True)
class PodReference:
    """``PodReference``: the eviction manager looks pod stats up by ``uid``."""

    name: str
    namespace: str
    uid: str


@dataclass(frozen=True, slots=True)
class ProcessStats:
    """``ProcessStats``: PID-pressure ranking uses ``process_count`` (absent on 1.16/docker)."""

    process_count: int | None = None


@dataclass(frozen=True, slots=True)
class PodStats:
    """``PodStats``: one running pod. Init containers may appear in ``containers`` (Windows, docker)."""

    pod_ref: PodReference
    containers: tuple[ContainerStats, ...] = ()
    memory: MemoryStats | None = None
    volumes: tuple[VolumeStats, ...] = ()
    ephemeral_storage: FsStats | None = None
    process_stats: ProcessStats | None = None


@dataclass(frozen=True, slots=True)
class RuntimeStats:
    """``RuntimeStats``: ``containerFs`` exists in the schema since 1.29."""

    image_fs: FsStats | None = None
    container_fs: FsStats | None = None


@dataclass(frozen=True, slots=True)
class RlimitStats:
    """``RlimitStats``: ``maxpid``/``curproc`` are ``*int64`` upstream (signed, unlike the rest)."""

    time: datetime | None = None
    maxpid: int | None = None
    curproc: int | None = None


@dataclass(frozen=True, slots=True)
class NodeStats:
    """``NodeStats``: the node-level observations (memory, nodefs, imagefs/containerfs, pids)."""

    node_name: str
    memory: MemoryStats | None = None
    system_containers: tuple[ContainerStats, ...] = ()
    fs: FsStats | None = None
    runtime: RuntimeStats | None = None
    rlimit: RlimitStats | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """``Summary``: what ``GET /stats/summary`` returns."""

    node: NodeStats
    pods: tuple[PodStats, ...] = ()


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
# Field access with a JSON path, so every error says where it is
# --------------------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_$-]+")


@dataclass(frozen=True, slots=True)
class _At:
    """Where a value sits: the source (file or label) and the JSON path inside it."""

    source: str
    path: str

    def key(self, key: str) -> _At:
        if _PLAIN_KEY.fullmatch(key):
            return _At(self.source, f"{self.path}.{key}" if self.path else key)
        return _At(self.source, f"{self.path}[{_go_quote(key)}]")

    def index(self, i: int) -> _At:
        return _At(self.source, f"{self.path}[{i}]")

    def error(self, problem: str) -> InputError:
        return InputError(problem, source=self.source, field=self.path or None)


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({_go_quote(shown)})"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _as_object(value: Any, at: _At, what: str = "an object") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise at.error(f"expected {what}, got {_describe(value)}")
    for key in value:
        if not isinstance(key, str):
            raise at.error(f"expected {what} with string keys, got the key {_describe(key)}")
    return value


def _object(obj: Mapping[str, Any], key: str, at: _At) -> Mapping[str, Any] | None:
    value = obj.get(key)
    return None if value is None else _as_object(value, at.key(key))


def _list(obj: Mapping[str, Any], key: str, at: _At) -> Iterator[tuple[Any, _At]]:
    """Items of an optional list with their paths; absent or null is empty."""
    value = obj.get(key)
    if value is None:
        return
    here = at.key(key)
    if not isinstance(value, list | tuple):
        raise here.error(f"expected a list, got {_describe(value)}")
    for i, item in enumerate(value):
        yield item, here.index(i)


def _objects(obj: Mapping[str, Any], key: str, at: _At) -> Iterator[tuple[Mapping[str, Any], _At]]:
    for item, here in _list(obj, key, at):
        yield _as_object(item, here), here


def _string(obj: Mapping[str, Any], key: str, at: _At) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise at.key(key).error(f"expected a string, got {_describe(value)}")
    return value


def _optional_string(obj: Mapping[str, Any], key: str, at: _At) -> str | None:
    return None if obj.get(key) is None else _string(obj, key, at)


def _integer(obj: Mapping[str, Any], key: str, at: _At, low: int, high: int, what: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.key(key).error(f"expected {what}, got {_describe(value)}")
    if not low <= value <= high:
        raise at.key(key).error(f"expected {what} between {low} and {high}, got {value}")
    return value


def _uint64(obj: Mapping[str, Any], key: str, at: _At) -> int | None:
    return _integer(obj, key, at, 0, UINT64_MAX, "a non-negative integer")


def _int64(obj: Mapping[str, Any], key: str, at: _At) -> int | None:
    return _integer(obj, key, at, INT64_MIN, INT64_MAX, "an integer")


def _int32(obj: Mapping[str, Any], key: str, at: _At) -> int | None:
    return _integer(obj, key, at, INT32_MIN, INT32_MAX, "an integer")


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def _time(obj: Mapping[str, Any], key: str, at: _At) -> datetime | None:
    """``metav1.Time``: RFC 3339 or null. Sub-microsecond digits are truncated (datetime's limit)."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, datetime):  # a YAML loader that resolves timestamps
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    expected = "an RFC 3339 time such as 2024-05-19T08:14:14Z"
    if not isinstance(value, str):
        raise at.key(key).error(f"expected {expected}, got {_describe(value)}")
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise at.key(key).error(f"expected {expected}, got {_describe(value)}")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        offset = timedelta(0)
        if not zulu:
            offset = timedelta(hours=int(off_h), minutes=int(off_m)) * (1 if sign == "+" else -1)
        stamp = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=timezone(offset),
        )
        return stamp.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise at.key(key).error(f"expected {expected}, got {_describe(value)} ({exc})") from None


def _quantity(value: Any, at: _At) -> Quantity:
    """``resource.Quantity.UnmarshalJSON``: a string, or a bare JSON number read as its text."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise at.error(f'expected a quantity such as "128Mi" or "500m", got {_describe(value)}')
    text = value if isinstance(value, str) else (str(value) if isinstance(value, int) else repr(value))
    try:
        return Quantity.parse(text)
    except InputError as exc:
        raise exc.within(source=at.source, field=at.path or None) from None


def _resource_list(obj: Mapping[str, Any] | None, key: str, at: _At) -> Mapping[str, Quantity]:
    """``v1.ResourceList``: resource name → quantity, in document order."""
    if obj is None:
        return _EMPTY_QUANTITIES
    resources = _object(obj, key, at)
    if not resources:
        return _EMPTY_QUANTITIES
    here = at.key(key)
    return MappingProxyType({name: _quantity(value, here.key(name)) for name, value in resources.items()})


def _string_map(obj: Mapping[str, Any], key: str, at: _At) -> Mapping[str, str]:
    """``map[string]string`` (labels, annotations): values must be strings, as in Go."""
    values = _object(obj, key, at)
    if not values:
        return _EMPTY_STRINGS
    here = at.key(key)
    for name, value in values.items():
        if not isinstance(value, str):
            raise here.key(name).error(f"expected a string, got {_describe(value)}")
    return MappingProxyType(dict(values))


# --------------------------------------------------------------------------------------------
# Summary parsing
# --------------------------------------------------------------------------------------------


def parse_summary(obj: Any, *, source: str) -> Summary:
    """Read a ``GET /stats/summary`` document (stats/v1alpha1 ``Summary``)."""
    at = _At(source, "")
    if isinstance(obj, list | tuple):
        raise at.error(f"expected {SUMMARY_HINT}, got a list")
    if not isinstance(obj, Mapping):
        raise at.error(f"expected {SUMMARY_HINT}, got {_describe(obj)}")
    top = _as_object(obj, at, SUMMARY_HINT)
    node = _object(top, "node", at)
    if node is None:
        kind = top.get("kind")
        looks_like = f"; this looks like a {kind}" if isinstance(kind, str) and kind else ""
        raise at.error(f"a summary without `node`: expected {SUMMARY_HINT}{looks_like}")
    return Summary(
        node=_node_stats(node, at.key("node")),
        pods=tuple(_pod_stats(item, here) for item, here in _objects(top, "pods", at)),
    )


def parse_pod_stats(obj: Any, *, source: str, field: str = "") -> PodStats:
    """Read one ``PodStats`` (an element of ``pods[]``); the conformance vectors hold them bare."""
    at = _At(source, field)
    return _pod_stats(_as_object(obj, at, "a PodStats object"), at)


def _fs_stats(obj: Mapping[str, Any] | None, at: _At) -> FsStats | None:
    if obj is None:
        return None
    return FsStats(
        time=_time(obj, "time", at),
        available_bytes=_uint64(obj, "availableBytes", at),
        capacity_bytes=_uint64(obj, "capacityBytes", at),
        used_bytes=_uint64(obj, "usedBytes", at),
        inodes_free=_uint64(obj, "inodesFree", at),
        inodes=_uint64(obj, "inodes", at),
        inodes_used=_uint64(obj, "inodesUsed", at),
    )


def _fs_field(obj: Mapping[str, Any], key: str, at: _At) -> FsStats | None:
    return _fs_stats(_object(obj, key, at), at.key(key))


def _memory_field(obj: Mapping[str, Any], key: str, at: _At) -> MemoryStats | None:
    memory = _object(obj, key, at)
    if memory is None:
        return None
    here = at.key(key)
    return MemoryStats(
        time=_time(memory, "time", here),
        available_bytes=_uint64(memory, "availableBytes", here),
        usage_bytes=_uint64(memory, "usageBytes", here),
        working_set_bytes=_uint64(memory, "workingSetBytes", here),
        rss_bytes=_uint64(memory, "rssBytes", here),
    )


def _container_stats(obj: Mapping[str, Any], at: _At) -> ContainerStats:
    return ContainerStats(
        name=_string(obj, "name", at),
        memory=_memory_field(obj, "memory", at),
        rootfs=_fs_field(obj, "rootfs", at),
        logs=_fs_field(obj, "logs", at),
    )


def _node_stats(obj: Mapping[str, Any], at: _At) -> NodeStats:
    runtime = _object(obj, "runtime", at)
    runtime_at = at.key("runtime")
    rlimit = _object(obj, "rlimit", at)
    rlimit_at = at.key("rlimit")
    return NodeStats(
        node_name=_string(obj, "nodeName", at),
        memory=_memory_field(obj, "memory", at),
        system_containers=tuple(
            _container_stats(item, here) for item, here in _objects(obj, "systemContainers", at)
        ),
        fs=_fs_field(obj, "fs", at),
        runtime=None
        if runtime is None
        else RuntimeStats(
            image_fs=_fs_field(runtime, "imageFs", runtime_at),
            container_fs=_fs_field(runtime, "containerFs", runtime_at),
        ),
        rlimit=None
        if rlimit is None
        else RlimitStats(
            time=_time(rlimit, "time", rlimit_at),
            maxpid=_int64(rlimit, "maxpid", rlimit_at),
            curproc=_int64(rlimit, "curproc", rlimit_at),
        ),
    )


def _pod_stats(obj: Mapping[str, Any], at: _At) -> PodStats:
    ref = _object(obj, "podRef", at) or {}
    ref_at = at.key("podRef")
    process = _object(obj, "process_stats", at)
    return PodStats(
        # podRef is a struct, not a pointer, upstream: an absent one decodes to empty strings.
        pod_ref=PodReference(
            name=_string(ref, "name", ref_at),
            namespace=_string(ref, "namespace", ref_at),
            uid=_string(ref, "uid", ref_at),
        ),
        containers=tuple(_container_stats(item, here) for item, here in _objects(obj, "containers", at)),
        memory=_memory_field(obj, "memory", at),
        volumes=tuple(
            VolumeStats(name=_string(item, "name", here), fs=_fs_stats(item, here) or FsStats())
            for item, here in _objects(obj, "volume", at)
        ),
        ephemeral_storage=_fs_field(obj, "ephemeral-storage", at),
        process_stats=None
        if process is None
        else ProcessStats(process_count=_uint64(process, "process_count", at.key("process_stats"))),
    )


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
        owner_kinds=tuple(
            _string(ref, "kind", here) for ref, here in _objects(meta, "ownerReferences", meta_at)
        ),
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
        return tuple(
            parse_pod(item, source=source, field=here.path) for item, here in _list(top, "items", at)
        )
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
# QoS (pkg/apis/core/v1/helper/qos/qos.go: ComputePodQOS)
# --------------------------------------------------------------------------------------------

_QOS_RESOURCES = ("cpu", "memory")


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
        return tuple(
            parse_node(item, source=source, field=here.path) for item, here in _list(top, "items", at)
        )
    return (parse_node(top, source=source),)
