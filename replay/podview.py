"""One pod as the recording saw it: its containers at an eviction and its usage over time.

A result names the pod; the recording has its spec (requests, limits, which containers are init,
sidecar or ephemeral) and every tick's container stats. Memory usage is the working set (what the
kubelet ranks by); disk usage is rootfs + logs (ephemeral storage). Every read here pushes the node,
the pod and (for a moment) the tick into the scans, so a pod of a 100-node day costs one node's rows
of one pod, never whole tables (front ends: the TUI's eviction detail and pod view).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
import polars as pl

from kube.quantity import Quantity
from recordings.reader import Recording, to_micros
from recordings.summary_codec import EPOCH
from replay.results import Eviction

KINDS = ("regular", "init", "sidecar", "ephemeral")


@dataclass(frozen=True)
class ContainerRow:
    """One container of an evicted pod at the eviction's tick: usage against its request and limit."""

    name: str
    kind: str
    memory: int | None
    memory_request: int | None
    memory_limit: int | None
    disk: int | None
    disk_request: int | None
    disk_limit: int | None
    named: bool
    """Named in the eviction message / offending_containers annotation."""

    @property
    def over_request(self) -> bool:
        return (self.memory or 0) > (self.memory_request or 0) or (self.disk or 0) > (self.disk_request or 0)

    @property
    def offending(self) -> bool:
        return self.named or self.over_limit

    @property
    def over_limit(self) -> bool:
        return any(
            u is not None and lim is not None and u > lim
            for u, lim in ((self.memory, self.memory_limit), (self.disk, self.disk_limit))
        )


def _q(resources: dict[str, Any], group: str, name: str) -> int | None:
    value = (resources.get(group) or {}).get(name)
    if value is None:
        return None
    try:
        return Quantity.parse(str(value)).int_value()
    except ValueError:
        return None


def spec_containers(pod: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, kind, resources) of every container of a pod object, in spec order."""
    spec = pod.get("spec") or {}
    out = []
    for c in spec.get("initContainers") or []:
        out.append((c["name"], "sidecar" if c.get("restartPolicy") == "Always" else "init", c.get("resources") or {}))
    out.extend((c["name"], "regular", c.get("resources") or {}) for c in spec.get("containers") or [])
    out.extend((c["name"], "ephemeral", {}) for c in spec.get("ephemeralContainers") or [])
    return out


def _add(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _versions(rec: Recording, namespace: str, name: str, uid: str | None, at: datetime | None) -> pl.DataFrame:
    """The stored versions of one pod (by uid, or by namespace/name), observed at or before ``at``, in order."""
    who = (pl.col("namespace") == namespace) & (pl.col("name") == name)
    if uid:
        who = who | (pl.col("uid") == uid)
    wanted = (pl.col("kind") == "pod") & who
    if at is not None:
        wanted = wanted & (pl.col("observed") <= EPOCH + timedelta(microseconds=to_micros(at)))
    frame = rec.scan_objects().filter(wanted).select("observed", "namespace", "name", "uid", "deleted", "body")
    return rec._collect("objects", frame).sort("observed", maintain_order=True)


def find_pod(rec: Recording, node: str, namespace: str, name: str, at: datetime | None) -> dict[str, Any] | None:
    """The pod bound to ``node`` named ``namespace/name`` as of ``at`` (its latest version, not deleted);
    what :meth:`Recording.pods_at` would list, read for this one pod only."""
    df = _versions(rec, namespace, name, None, at)
    df = df.with_columns(pl.coalesce("uid", pl.col("namespace") + "/" + pl.col("name")).alias("_key"))
    last = df.group_by("_key", maintain_order=True).last()
    for body, deleted in zip(last["body"], last["deleted"], strict=True):
        if deleted:
            continue
        pod: dict[str, Any] = orjson.loads(body)
        if (pod.get("spec") or {}).get("nodeName") == node:
            return pod
    return None


def _any_version(rec: Recording, namespace: str, name: str, uid: str) -> dict[str, Any] | None:
    """The last version of the pod with ``uid`` that is not a tombstone (a pod deleted by the end)."""
    df = _versions(rec, namespace, name, uid, None).filter(pl.col("uid") == uid)
    bodies = [b for b, d in zip(df["body"], df["deleted"], strict=True) if not d]
    found: dict[str, Any] | None = orjson.loads(bodies[-1]) if bodies else None
    return found


def containers_at(rec: Recording, eviction: Eviction) -> list[ContainerRow]:
    """The evicted pod's containers with usage at the eviction's tick, request and limit."""
    pod = find_pod(rec, eviction.node, eviction.namespace, eviction.pod, eviction.time) or {}
    named = set(filter(None, eviction.annotations.get("offending_containers", "").split(",")))
    usage: dict[str, tuple[int | None, int | None]] = {}
    summary = rec.summary_at(eviction.node, eviction.tick) or {}
    for stats in summary.get("pods") or []:
        ref = stats.get("podRef") or {}
        if ref.get("uid") == eviction.uid or (ref.get("name"), ref.get("namespace")) == (
            eviction.pod,
            eviction.namespace,
        ):
            for c in stats.get("containers") or []:
                disk = _add((c.get("rootfs") or {}).get("usedBytes"), (c.get("logs") or {}).get("usedBytes"))
                usage[c["name"]] = ((c.get("memory") or {}).get("workingSetBytes"), disk)
    rows = []
    seen = set()
    for name, kind, res in spec_containers(pod):
        seen.add(name)
        mem, disk = usage.get(name, (None, None))
        rows.append(
            ContainerRow(
                name,
                kind,
                mem,
                _q(res, "requests", "memory"),
                _q(res, "limits", "memory"),
                disk,
                _q(res, "requests", "ephemeral-storage"),
                _q(res, "limits", "ephemeral-storage"),
                name in named,
            )
        )
    for name, (mem, disk) in usage.items():
        if name not in seen:  # stats without a spec (the pod object was not recorded)
            rows.append(ContainerRow(name, "regular", mem, None, None, disk, None, None, name in named))
    return rows


@dataclass(frozen=True)
class PodSeries:
    """One pod's memory working set and ephemeral storage per tick, summed over its containers."""

    frame: pl.DataFrame
    """tick, time, memory, disk"""
    memory_request: int | None
    memory_limit: int | None
    disk_request: int | None
    disk_limit: int | None
    containers: list[tuple[str, str]]


def pod_series(rec: Recording, node: str, namespace: str, name: str, uid: str) -> PodSeries:
    """The pod's usage at every tick of ``node`` and its total requests and limits (regular and sidecar
    containers, as the kubelet sums them); only this node's rows of this pod are read."""
    wanted = (pl.col("node") == node) & (pl.col("pod_uid") == uid)
    query = (
        rec.scan_container_stats()
        .filter(wanted)
        .group_by("tick")
        .agg(
            pl.col("memory_time").max().alias("time"),
            pl.col("memory_working_set_bytes").cast(pl.Int64).sum().alias("memory"),
            (
                pl.col("rootfs_used_bytes").cast(pl.Int64).fill_null(0)
                + pl.col("logs_used_bytes").cast(pl.Int64).fill_null(0)
            )
            .sum()
            .alias("disk"),
        )
        .with_columns(pl.col("tick").cast(pl.Int64))
        .sort("tick")
    )
    stats = rec._collect("container_stats", query)
    pod = find_pod(rec, node, namespace, name, None)
    if pod is None:  # deleted by the end of the recording: its last live version
        pod = _any_version(rec, namespace, name, uid) or {}
    containers = spec_containers(pod)

    def total(group: str, resource: str) -> int | None:
        return _add(*(_q(res, group, resource) for _n, kind, res in containers if kind in ("regular", "sidecar")))

    return PodSeries(
        stats,
        total("requests", "memory"),
        total("limits", "memory"),
        total("requests", "ephemeral-storage"),
        total("limits", "ephemeral-storage"),
        [(n, k) for n, k, _r in containers],
    )


def pods_named(rec: Recording, text: str) -> list[tuple[str, str, str, str]]:
    """(node, namespace, name, uid) of every pod the recording has stats of whose ``namespace/name`` contains
    ``text`` (case-insensitive), exact names first: the TUI's ``:pod`` jump across nodes."""
    query = (
        rec.scan("pod_stats")
        .select("node", "namespace", "name", "pod_uid")
        .unique()
        .filter(
            (pl.col("namespace") + "/" + pl.col("name")).str.to_lowercase().str.contains(text.lower(), literal=True)
        )
    )
    rows = rec._collect("pod_stats", query).iter_rows()
    found = [(str(n), str(ns), str(name), str(uid)) for n, ns, name, uid in rows]
    return sorted(found, key=lambda r: (r[2] != text and f"{r[1]}/{r[2]}" != text, r[2], r[0], r[1]))


def container_series(rec: Recording, node: str, uid: str) -> pl.DataFrame:
    """One pod's usage per container and tick (tick, container, memory, disk): the pod view's per-container
    lines (:func:`pod_series` is their sum)."""
    query = (
        rec.scan_container_stats()
        .filter((pl.col("node") == node) & (pl.col("pod_uid") == uid))
        .select(
            pl.col("tick").cast(pl.Int64),
            pl.col("name").alias("container"),
            pl.col("memory_working_set_bytes").cast(pl.Int64).alias("memory"),
            (
                pl.col("rootfs_used_bytes").cast(pl.Int64).fill_null(0)
                + pl.col("logs_used_bytes").cast(pl.Int64).fill_null(0)
            ).alias("disk"),
        )
        .sort("container", "tick")
    )
    return rec._collect("container_stats", query)
