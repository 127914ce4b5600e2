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
import weakref
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from replay.kubelet.api import Pod
from replay.kubelet.manager import FsTopology

if TYPE_CHECKING:
    from recordings.reader import Recording
    from replay.collect import NodePartial
    from replay.results import Eviction
    from replay.settings import SettingsRequest

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
    free_node_disk(
        node,
        sum(f.nodefs_bytes for f in freed),
        sum(f.nodefs_inodes for f in freed),
        sum(f.rootfs_bytes for f in freed),
        sum(f.rootfs_inodes for f in freed),
        sum(f.processes for f in freed),
        topology,
    )
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


def free_node_disk(
    node: dict[str, Any],
    logs_volumes_bytes: int,
    logs_volumes_inodes: int,
    layers_bytes: int,
    layers_inodes: int,
    processes: int,
    topology: FsTopology,
) -> None:
    """Give the removed pods' disk and processes back to the node part of a summary, in place: once per
    summary that had a removed entry (the capacity clamps apply even when nothing was used)."""
    on_nodefs = layers_on_nodefs(topology)
    amounts = {
        NODEFS: (
            logs_volumes_bytes + (layers_bytes if on_nodefs else 0),
            logs_volumes_inodes + (layers_inodes if on_nodefs else 0),
        ),
        LAYERS: (layers_bytes, layers_inodes),
    }
    runtime = node.get("runtime") or {}
    for name, share in fs_shares(topology).items():
        fs = node.get("fs") if name == "fs" else runtime.get(name)
        _free_fs(fs, *amounts[share])
    rlimit = node.get("rlimit")
    if isinstance(rlimit, dict) and isinstance(rlimit.get("curproc"), int):
        rlimit["curproc"] = max(0, rlimit["curproc"] - processes)


NOTE = (
    "--counterfactual: from the pass after each predicted eviction the pod's recorded usage is taken off its "
    "node's signals (memory at once, its writable layers, logs and emptyDir volumes from the filesystems they "
    "live on, its processes) and its stats are dropped; the replay no longer shows what really happened "
    "afterwards (replay/COUNTERFACTUAL.md)"
)


def disk_emptydirs(pod: Pod) -> tuple[str, ...]:
    """The pod's emptyDir volumes on disk (no ``medium: Memory``): torn down, and freed, when it terminates."""
    return tuple(v.name for v in pod.volumes if v.source == "emptyDir" and not v.empty_dir_medium)


# -- the other direction: a pod really evicted that the variant keeps ------------------------------------------

_REAL: weakref.WeakKeyDictionary[Any, dict[str, dict[str, datetime]]] = weakref.WeakKeyDictionary()


def really_evicted(rec: Recording, node: str) -> dict[str, datetime]:
    """UID → when the recording shows the pod evicted (its first Evicted event or failed status) on ``node``;
    admission rejections never ran and are not here, nor real evictions without a UID (nothing to hold)."""
    by_node = _REAL.get(rec)
    if by_node is None:
        from replay.matching import real_evictions

        by_node = {}
        for r in real_evictions(rec):
            if r.node and r.uid and r.time is not None:
                seen = by_node.setdefault(r.node, {})
                seen[r.uid] = min(seen.get(r.uid, r.time), r.time)
        _REAL[rec] = by_node
    return by_node.get(node, {})


def _take_memory(mem: dict[str, Any] | None, ws: int, usage: int, rss: int) -> None:
    if not mem:
        return
    if isinstance(mem.get("availableBytes"), int):
        mem["availableBytes"] = max(0, mem["availableBytes"] - ws)
    for key, amount in (("workingSetBytes", ws), ("usageBytes", usage), ("rssBytes", rss)):
        if isinstance(mem.get(key), int):
            mem[key] += amount


def _take_fs(fs: dict[str, Any] | None, nbytes: int, inodes: int) -> None:
    """Charge ``nbytes``/``inodes`` to one filesystem again, never below nothing available."""
    if not fs:
        return
    if isinstance(fs.get("availableBytes"), int):
        fs["availableBytes"] = max(0, fs["availableBytes"] - nbytes)
    if isinstance(fs.get("usedBytes"), int):
        fs["usedBytes"] += nbytes
    free = fs.get("inodesFree")
    if isinstance(free, int) and free < _SIGNED:
        fs["inodesFree"] = max(0, free - inodes)
        if isinstance(fs.get("inodesUsed"), int):
            fs["inodesUsed"] += inodes


def hold_pods(
    summary: Mapping[str, Any],
    held: Mapping[str, Mapping[str, Any]],
    topology: FsTopology,
    *,
    emptydir_volumes: Mapping[str, Collection[str]] | None = None,
) -> dict[str, Any]:
    """``summary`` as it would read had the pods ``held`` (UID → their last recorded stats entry) kept running
    at that usage: each entry back in ``pods`` and its usage charged to the node, by the same routing
    :func:`remove_pods` frees it (memory to the node and the ``pods`` container, writable layers, logs and disk
    emptyDirs to their filesystems, processes to ``rlimit.curproc``). The inverse of :func:`remove_pods` for a
    pod the recording no longer shows; available never below 0."""
    out: dict[str, Any] = copy.deepcopy(dict(summary))
    if not held:
        return out
    node = out.setdefault("node", {})
    pods = out.setdefault("pods", [])
    taken = []
    for uid, stats in held.items():
        entry = copy.deepcopy(dict(stats))
        pods.append(entry)
        taken.append(pod_footprint(entry, (emptydir_volumes or {}).get(uid, ())))
        ws, usage, rss = _memory(entry)
        _take_memory(node.get("memory"), ws, usage, rss)
        for sc in node.get("systemContainers") or ():
            if isinstance(sc, dict) and sc.get("name") == "pods":
                _take_memory(sc.get("memory"), ws, usage, rss)
    on_nodefs = layers_on_nodefs(topology)
    logs_b, logs_i = sum(f.nodefs_bytes for f in taken), sum(f.nodefs_inodes for f in taken)
    root_b, root_i = sum(f.rootfs_bytes for f in taken), sum(f.rootfs_inodes for f in taken)
    amounts = {
        NODEFS: (logs_b + (root_b if on_nodefs else 0), logs_i + (root_i if on_nodefs else 0)),
        LAYERS: (root_b, root_i),
    }
    runtime = node.get("runtime") or {}
    for name, share in fs_shares(topology).items():
        _take_fs(node.get("fs") if name == "fs" else runtime.get(name), *amounts[share])
    rlimit = node.get("rlimit")
    if isinstance(rlimit, dict) and isinstance(rlimit.get("curproc"), int):
        rlimit["curproc"] += sum(f.processes for f in taken)
    return out


HELD_NOTE = (
    "held (modelled): a pod the recording shows evicted that this variant had not evicted by then is kept "
    "running at its last recorded usage (its last stats entry before it disappeared) from its real eviction "
    "on, charged to its node's signals and back among the candidates (replay/COUNTERFACTUAL.md)"
)


def held_by(rec: Recording, node: str, evictions: Iterable[Eviction]) -> list[str]:
    """The UIDs really evicted on ``node`` that the replay's ``evictions`` do not evict at or before that time:
    the pods the counterfactual replay holds at their last usage."""
    made: dict[str, datetime] = {}
    for e in evictions:
        if e.node == node:
            made[e.uid] = min(made.get(e.uid, e.time), e.time)
    return [uid for uid, when in really_evicted(rec, node).items() if uid not in made or made[uid] > when]


def hold_real_evictions(
    rec: Recording,
    requests: Sequence[SettingsRequest],
    names: Sequence[str],
    partials: list[list[NodePartial]],
    *,
    rerun: bool,
    spool: Path | None = None,
    frames: bool = True,
    rankings: bool = True,
) -> list[list[str]]:
    """For each counterfactual request, the nodes with a real eviction it does not make: with ``rerun`` (the
    columnar path, which does not model the hold) those nodes are replayed again on the per-tick reference,
    whose passes hold the pods (:class:`replay.reference.NodeRun`), their partials replaced in place. Returns
    each request's notes."""
    notes: list[list[str]] = [[] for _ in requests]
    affected = [
        (i, j)
        for i, request in enumerate(requests)
        if request.counterfactual
        for j, p in enumerate(partials[i])
        if held_by(rec, p.node, p.evictions)
    ]
    if not affected:
        return notes
    if rerun:
        from recordings.pod_timeline import index_pods_by_node, pods_of_nodes
        from replay.collect import ReferenceNode
        from replay.reference import NodeRun

        nodes = sorted({partials[i][j].node for i, j in affected})
        pods = index_pods_by_node(pods_of_nodes(rec.scan_objects(), nodes))
        for i, j in affected:
            name = partials[i][j].node
            ref = ReferenceNode(NodeRun(rec, name, requests[i], pods.get(name, [])), frames=frames, rankings=rankings)
            for one in ref.run.passes():
                ref.add(one)
            partials[i][j] = ref.partial(spool)
    for i, j in affected:
        part = partials[i][j]
        held = held_by(rec, part.node, part.evictions)
        if held:
            where = " (replayed on the per-tick reference path, which models it)" if rerun else ""
            notes[i].append(f"{part.node}: {len(held)} pod(s) {HELD_NOTE}{where}")
    return notes
