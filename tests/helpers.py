"""Shared test fixtures: paths to ../shared, and small builders for pods, pod stats and summaries.

The builders produce the Kubernetes JSON shapes (core/v1 Pod, stats/v1alpha1 Summary) and run
them through the port's own parsers, so tests exercise the same path as real input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from replay.kubelet.api import Pod, PodStats, Summary, parse_pod, parse_pod_stats, parse_summary

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REALDATA = SHARED / "realdata"
CONFORMANCE = SHARED / "conformance"
SPEC = SHARED / "docs" / "kubelet-eviction-spec.md"

GI = 1024**3
MI = 1024**2
KI = 1024

JSON = dict[str, Any]


def realdata_summaries() -> list[Path]:
    """Every Summary API capture in realdata (``*/summary`` and ``*/*stats_summary*.json``)."""
    return sorted([*REALDATA.glob("*/summary"), *REALDATA.glob("*/*stats_summary*.json")])


def container(
    name: str,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    restart_policy: str | None = None,
) -> JSON:
    """A core/v1 Container JSON object."""
    out: JSON = {"name": name, "image": "busybox"}
    resources: JSON = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        out["resources"] = resources
    if restart_policy is not None:
        out["restartPolicy"] = restart_policy
    return out


def pod_json(
    name: str,
    *,
    containers: Sequence[JSON] | None = None,
    init_containers: Sequence[JSON] = (),
    ephemeral_containers: Sequence[JSON] = (),
    priority: int | None = None,
    annotations: Mapping[str, str] | None = None,
    termination_grace_period_seconds: int | None = None,
    volumes: Sequence[JSON] = (),
    tolerations: Sequence[JSON] = (),
    overhead: Mapping[str, str] | None = None,
    pod_resources: JSON | None = None,
    namespace: str = "default",
) -> JSON:
    """A core/v1 Pod JSON object whose UID is its name (as in the upstream tests)."""
    spec: JSON = {"containers": list(containers) if containers is not None else [container(name)]}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if ephemeral_containers:
        spec["ephemeralContainers"] = list(ephemeral_containers)
    if priority is not None:
        spec["priority"] = priority
    if termination_grace_period_seconds is not None:
        spec["terminationGracePeriodSeconds"] = termination_grace_period_seconds
    if volumes:
        spec["volumes"] = list(volumes)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if overhead:
        spec["overhead"] = dict(overhead)
    if pod_resources is not None:
        spec["resources"] = pod_resources
    meta: JSON = {"name": name, "namespace": namespace, "uid": name}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def make_pod(name: str, **kwargs: Any) -> Pod:
    """Parse :func:`pod_json` through the port's Pod parser."""
    return parse_pod(pod_json(name, **kwargs), source="test")


def container_stats_json(
    name: str,
    *,
    working_set: int | None = None,
    rootfs: int | None = None,
    logs: int | None = None,
    rootfs_inodes: int | None = None,
    logs_inodes: int | None = None,
) -> JSON:
    """A stats/v1alpha1 ContainerStats object; absent values are omitted, as the kubelet does."""
    out: JSON = {"name": name}
    if working_set is not None:
        out["memory"] = {"workingSetBytes": working_set}
    if rootfs is not None or rootfs_inodes is not None:
        out["rootfs"] = _drop_none({"usedBytes": rootfs, "inodesUsed": rootfs_inodes})
    if logs is not None or logs_inodes is not None:
        out["logs"] = _drop_none({"usedBytes": logs, "inodesUsed": logs_inodes})
    return out


def pod_stats_json(
    uid: str,
    *,
    containers: Sequence[JSON] = (),
    working_set: int | None = None,
    volumes: Sequence[JSON] = (),
    ephemeral_storage: int | None = None,
    process_count: int | None = None,
) -> JSON:
    """A stats/v1alpha1 PodStats object for the pod whose name and UID are ``uid``."""
    out: JSON = {"podRef": {"name": uid, "namespace": "default", "uid": uid}, "containers": list(containers)}
    if working_set is not None:
        out["memory"] = {"workingSetBytes": working_set}
    if volumes:
        out["volume"] = list(volumes)
    if ephemeral_storage is not None:
        out["ephemeral-storage"] = {"usedBytes": ephemeral_storage}
    if process_count is not None:
        out["process_stats"] = {"process_count": process_count}
    return out


def make_pod_stats(uid: str, **kwargs: Any) -> PodStats:
    return parse_pod_stats(pod_stats_json(uid, **kwargs), source="test")


def summary_json(
    *,
    memory_available: int | None = None,
    memory_working_set: int | None = None,
    time: str | None = None,
    nodefs: tuple[int, int] | None = None,
    nodefs_inodes: tuple[int, int] | None = None,
    imagefs: tuple[int, int] | None = None,
    rlimit: tuple[int, int] | None = None,
    pods: Sequence[JSON] = (),
) -> JSON:
    """A Summary API object. ``nodefs``/``imagefs`` are ``(available, capacity)`` bytes,
    ``nodefs_inodes`` is ``(free, total)``, ``rlimit`` is ``(maxpid, curproc)``."""
    node: JSON = {"nodeName": "node-1"}
    if memory_available is not None or memory_working_set is not None:
        node["memory"] = _drop_none(
            {"time": time, "availableBytes": memory_available, "workingSetBytes": memory_working_set}
        )
    fs: JSON = {}
    if nodefs is not None:
        fs.update({"availableBytes": nodefs[0], "capacityBytes": nodefs[1]})
    if nodefs_inodes is not None:
        fs.update({"inodesFree": nodefs_inodes[0], "inodes": nodefs_inodes[1]})
    if fs:
        node["fs"] = _drop_none({"time": time, **fs})
    if imagefs is not None:
        node["runtime"] = {
            "imageFs": _drop_none({"time": time, "availableBytes": imagefs[0], "capacityBytes": imagefs[1]})
        }
    if rlimit is not None:
        node["rlimit"] = _drop_none({"time": time, "maxpid": rlimit[0], "curproc": rlimit[1]})
    return {"node": node, "pods": list(pods)}


def make_summary(**kwargs: Any) -> Summary:
    return parse_summary(summary_json(**kwargs), source="test")


def _drop_none(obj: Mapping[str, Any]) -> JSON:
    return {k: v for k, v in obj.items() if v is not None}
