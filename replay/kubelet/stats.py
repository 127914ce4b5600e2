"""Typed views of the kubelet Summary API (k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go).

Only the fields the eviction logic and the replay read. Every optional field is a pointer upstream, so
absent and ``null`` both become ``None`` here; counters are uint64 and stay exact Python ints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from replay.kubelet.jsonpath import (
    SUMMARY_HINT,
    _as_object,
    _At,
    _describe,
    _int64,
    _object,
    _objects,
    _string,
    _time,
    _uint64,
)

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
        system_containers=tuple(_container_stats(item, here) for item, here in _objects(obj, "systemContainers", at)),
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
