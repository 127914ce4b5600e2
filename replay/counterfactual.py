"""Closed-loop replay (``--counterfactual``): take an evicted pod's recorded usage off the node's signals.

A recording shows what really happened. When the replay evicts a pod that really kept running,
every later summary still carries that pod's usage, so the node looks as pressed as it really
was and the replay goes on to evict the next pod, and the next. With ``--counterfactual`` each
later summary is rewritten as if the pod had gone at its eviction (``replay/COUNTERFACTUAL.md``):

- memory at once: its working set is added to ``node.memory.availableBytes`` and taken off the
  node's ``workingSetBytes`` / ``usageBytes`` / ``rssBytes``, and likewise in the ``pods`` system
  container (``allocatableMemory.available``);
- disk as the kubelet frees it when the pod has terminated: its containers' writable layers and
  logs (removed with the dead containers) and its local emptyDir volumes (torn down with the pod's
  volumes), each from the filesystem it lives on for the node's topology (helpers.go:
  buildSignalToRankFunc's fs sets); images are shared and stay;
- processes: its process count off ``rlimit.curproc``;
- its entry in ``pods`` is dropped.

The functions are pure: they take and return Summary-shaped dicts (the recording's decoded form)
and never touch the input.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from replay.kubelet.api import Pod
from replay.kubelet.manager import FsTopology

_SIGNED = 1 << 63


@dataclass(frozen=True)
class Freed:
    """What one pod's removal took off one summary (for notes and tests)."""

    uid: str
    memory_working_set: int = 0
    nodefs_bytes: int = 0
    nodefs_inodes: int = 0
    rootfs_bytes: int = 0
    rootfs_inodes: int = 0
    processes: int = 0


def _num(obj: Mapping[str, Any] | None, key: str) -> int:
    if not obj:
        return 0
    value = obj.get(key)
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def _memory(stats: Mapping[str, Any]) -> tuple[int, int, int]:
    """(working set, usage, rss) of a pod: its pod-level cgroup when reported, else the sum of its containers."""
    pod_memory = stats.get("memory")
    if isinstance(pod_memory, Mapping) and isinstance(pod_memory.get("workingSetBytes"), int):
        return (_num(pod_memory, "workingSetBytes"), _num(pod_memory, "usageBytes"), _num(pod_memory, "rssBytes"))
    ws = usage = rss = 0
    for c in stats.get("containers") or ():
        mem = c.get("memory") if isinstance(c, Mapping) else None
        ws += _num(mem, "workingSetBytes")
        usage += _num(mem, "usageBytes")
        rss += _num(mem, "rssBytes")
    return ws, usage, rss


def pod_footprint(stats: Mapping[str, Any], emptydir_volumes: Collection[str] = ()) -> Freed:
    """What removing one pod's stats entry frees, by where it lives.

    ``emptydir_volumes``: the names of the pod's disk-backed emptyDir volumes (from its Pod object);
    other volumes in the stats (secrets and projected volumes on tmpfs, PVCs, hostPath) stay.
    """
    ws, _usage, _rss = _memory(stats)
    logs_b = logs_i = root_b = root_i = vol_b = vol_i = 0
    for c in stats.get("containers") or ():
        if not isinstance(c, Mapping):
            continue
        root_b += _num(c.get("rootfs"), "usedBytes")
        root_i += _num(c.get("rootfs"), "inodesUsed")
        logs_b += _num(c.get("logs"), "usedBytes")
        logs_i += _num(c.get("logs"), "inodesUsed")
    for v in stats.get("volume") or ():
        if not isinstance(v, Mapping) or v.get("pvcRef"):
            continue
        if v.get("name") not in emptydir_volumes:
            continue
        vol_b += _num(v, "usedBytes")
        vol_i += _num(v, "inodesUsed")
    procs = _num(stats.get("process_stats"), "process_count")
    uid = str((stats.get("podRef") or {}).get("uid") or "")
    return Freed(uid, ws, logs_b + vol_b, logs_i + vol_i, root_b, root_i, procs)


def _add_memory(mem: dict[str, Any] | None, ws: int, usage: int, rss: int) -> None:
    if not mem:
        return
    if isinstance(mem.get("availableBytes"), int):
        mem["availableBytes"] += ws
    for key, amount in (("workingSetBytes", ws), ("usageBytes", usage), ("rssBytes", rss)):
        if isinstance(mem.get(key), int):
            mem[key] = max(0, mem[key] - amount)


def _free_fs(fs: dict[str, Any] | None, nbytes: int, inodes: int) -> None:
    """Give ``nbytes``/``inodes`` back to one filesystem, never above its capacity."""
    if not fs:
        return
    if isinstance(fs.get("availableBytes"), int):
        fs["availableBytes"] += nbytes
        if isinstance(fs.get("capacityBytes"), int):
            fs["availableBytes"] = min(fs["availableBytes"], fs["capacityBytes"])
    if isinstance(fs.get("usedBytes"), int):
        fs["usedBytes"] = max(0, fs["usedBytes"] - nbytes)
    free = fs.get("inodesFree")
    if isinstance(free, int) and free < _SIGNED:  # no inode accounting reports 2^64-1: leave it be
        fs["inodesFree"] = free + inodes
        if isinstance(fs.get("inodes"), int):
            fs["inodesFree"] = min(fs["inodesFree"], fs["inodes"])
        if isinstance(fs.get("inodesUsed"), int):
            fs["inodesUsed"] = max(0, fs["inodesUsed"] - inodes)


def remove_pods(
    summary: Mapping[str, Any],
    uids: Collection[str],
    topology: FsTopology,
    *,
    emptydir_volumes: Mapping[str, Collection[str]] | None = None,
) -> tuple[dict[str, Any], tuple[Freed, ...]]:
    """``summary`` as it would read had the pods ``uids`` gone: a new dict and what each removal freed.

    Filesystems (helpers.go fs sets): logs and volumes live on nodefs; writable layers on nodefs
    unless imagefs is dedicated and not split (then on imagefs, which the containerfs then is).
    A filesystem the summary reports as the same device as nodefs (no dedicated imagefs; a split
    containerfs) gets the same bytes back.
    """
    if not uids:
        return dict(summary), ()
    out: dict[str, Any] = copy.deepcopy(dict(summary))
    pods = out.get("pods") or []
    keep, freed = [], []
    for stats in pods:
        uid = (stats.get("podRef") or {}).get("uid") if isinstance(stats, Mapping) else None
        if uid in uids:
            names = (emptydir_volumes or {}).get(str(uid), ())
            freed.append(pod_footprint(stats, names))
            free_node_memory(out.get("node") or {}, *_memory(stats))
        else:
            keep.append(stats)
    if not freed:
        return out, ()
    out["pods"] = keep
    node = out.setdefault("node", {})
    free_node_disk(node, sum(f.nodefs_bytes for f in freed), sum(f.nodefs_inodes for f in freed),
                   sum(f.rootfs_bytes for f in freed), sum(f.rootfs_inodes for f in freed),
                   sum(f.processes for f in freed), topology)
    return out, tuple(freed)


NODEFS, LAYERS = "nodefs", "layers"


def free_node_memory(node: dict[str, Any], ws: int, usage: int, rss: int) -> None:
    """Give one removed entry's memory back to the node part of a summary, in place: the node's and the
    ``pods`` system container's (allocatableMemory.available). For non-negative amounts (uint64 stats)
    several entries at once are the same as one after another."""
    _add_memory(node.get("memory"), ws, usage, rss)
    for sc in node.get("systemContainers") or ():
        if isinstance(sc, dict) and sc.get("name") == "pods":
            _add_memory(sc.get("memory"), ws, usage, rss)


def fs_shares(topology: FsTopology) -> dict[str, str]:
    """Which of the freed amounts each filesystem gets back (helpers.go: buildSignalToRankFunc's fs sets):
    ``NODEFS`` (logs and disk emptyDirs, plus the writable layers unless they live on imagefs), ``LAYERS``
    (the writable layers alone); a filesystem not named gets nothing. The one routing the summary
    rewrite and the fast path's columns (replay/fast/pod_usage.py) share."""
    if not topology.dedicated_image_fs:  # imagefs (and containerfs) report the nodefs device
        return {"fs": NODEFS, "imageFs": NODEFS, "containerFs": NODEFS}
    if not topology.split_container_image_fs:  # the layers live on the dedicated imagefs (= containerfs)
        return {"fs": NODEFS, "imageFs": LAYERS, "containerFs": LAYERS}
    return {"fs": NODEFS, "containerFs": NODEFS}  # split: the containerfs is nodefs, imagefs holds only images


def layers_on_nodefs(topology: FsTopology) -> bool:
    """Whether the writable layers are freed on nodefs (no dedicated imagefs, or a split containerfs)."""
    return not topology.dedicated_image_fs or topology.split_container_image_fs


def free_node_disk(node: dict[str, Any], logs_volumes_bytes: int, logs_volumes_inodes: int, layers_bytes: int,
                   layers_inodes: int, processes: int, topology: FsTopology) -> None:
    """Give the removed pods' disk and processes back to the node part of a summary, in place: once per
    summary that had a removed entry (the capacity clamps apply even when nothing was used)."""
    on_nodefs = layers_on_nodefs(topology)
    amounts = {NODEFS: (logs_volumes_bytes + (layers_bytes if on_nodefs else 0),
                        logs_volumes_inodes + (layers_inodes if on_nodefs else 0)),
               LAYERS: (layers_bytes, layers_inodes)}
    runtime = node.get("runtime") or {}
    for name, share in fs_shares(topology).items():
        fs = node.get("fs") if name == "fs" else runtime.get(name)
        _free_fs(fs, *amounts[share])
    rlimit = node.get("rlimit")
    if isinstance(rlimit, dict) and isinstance(rlimit.get("curproc"), int):
        rlimit["curproc"] = max(0, rlimit["curproc"] - processes)


NOTE = ("--counterfactual: from the pass after each predicted eviction the pod's recorded usage is taken off its "
        "node's signals (memory at once, its writable layers, logs and emptyDir volumes from the filesystems they "
        "live on, its processes) and its stats are dropped; the replay no longer shows what really happened "
        "afterwards (replay/COUNTERFACTUAL.md)")


def disk_emptydirs(pod: Pod) -> tuple[str, ...]:
    """The pod's emptyDir volumes on disk (no ``medium: Memory``): torn down, and freed, when it terminates."""
    return tuple(v.name for v in pod.volumes if v.source == "emptyDir" and not v.empty_dir_medium)
