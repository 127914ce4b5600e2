"""An incident: one real eviction or kernel kill the recorder stored, named once and found again after a restart.

Each ``Evicted`` pod is one incident, whether the tick stored its Event, its pod's status or both (the Event's
message and time preferred); each ``OOMKilled`` container termination and each ``SystemOOM`` kill is one
(recordings/kernel.py ``row_key``: a re-list after a restart repeats them, the key does not change).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from recordings.kernel import OOM_KILLED, SYSTEM_OOM, row_key
from recordings.reader import ADMISSION_REJECTION_PREFIX

EVICTED = "Evicted"
KINDS = (EVICTED, OOM_KILLED, SYSTEM_OOM)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def stamp(us: int) -> str:
    """µs since the epoch → ``2026-11-27T13:04:05Z``."""
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Incident:
    kind: str
    """``Evicted``, ``OOMKilled`` or ``SystemOOM``."""
    node: str
    namespace: str | None
    pod: str | None
    """The evicted or OOM-killed pod; None for a ``SystemOOM`` (the kubelet names only a process)."""
    uid: str | None
    container: str | None
    time: int
    """When it happened (the Event's or the termination's time), µs; when the cluster did not say, when stored."""
    observed: int
    """When the recorder stored it, µs."""
    message: str | None
    victim: str | None = None
    pid: int | None = None
    key: str = ""
    """What makes two sightings the same incident (kept in report.json, read back after a restart)."""

    @property
    def name(self) -> str:
        """The directory name: ``<time>-<node>-<kind>-<pod>``, safe as one path component."""
        when = datetime.fromtimestamp(self.time / 1e6, UTC).strftime("%Y%m%dT%H%M%SZ")
        who = self.pod or self.victim or "node"
        return _UNSAFE.sub("_", f"{when}-{self.node}-{self.kind.lower()}-{who}")[:200]

    @property
    def who(self) -> str:
        if self.pod:
            pod = f"{self.namespace}/{self.pod}" if self.namespace else self.pod
            return f"{pod} container {self.container}" if self.container else pod
        if self.victim:
            return f"process {self.victim}" + (f" (pid {self.pid})" if self.pid is not None else "")
        return "a process the kubelet did not name"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "node": self.node,
            "namespace": self.namespace,
            "pod": self.pod,
            "uid": self.uid,
            "container": self.container,
            "time": stamp(self.time),
            "time_us": self.time,
            "stored": stamp(self.observed),
            "stored_us": self.observed,
            "message": self.message,
            "victim": self.victim,
            "pid": self.pid,
            "key": self.key,
        }


def _time(row: Mapping[str, Any]) -> int:
    when = row.get("time")
    return int(when) if isinstance(when, int) else int(row["observed"])


def from_evictions(rows: Iterable[Mapping[str, Any]]) -> list[Incident]:
    """One incident per evicted pod among ``evictions`` rows (an Event beats a pod status for message and time).
    A pod refused at admission carries the same reason (``The node had condition: [...]``) and is no eviction
    (recordings/reader.py ``Recording.evictions``): no incident."""
    best: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        if not row.get("node") or str(row.get("message") or "").startswith(ADMISSION_REJECTION_PREFIX):
            continue
        key = str(row.get("uid") or f"{row.get('namespace')}/{row.get('name')}")
        if key not in best or (best[key].get("source") != "event" and row.get("source") == "event"):
            best[key] = row
    return [
        Incident(
            kind=EVICTED,
            node=str(row["node"]),
            namespace=row.get("namespace"),
            pod=row.get("name"),
            uid=row.get("uid"),
            container=None,
            time=_time(row),
            observed=int(row["observed"]),
            message=row.get("message"),
            key=f"{EVICTED}|{row['node']}|{key}",
        )
        for key, row in best.items()
    ]


def from_kills(rows: Iterable[Mapping[str, Any]]) -> list[Incident]:
    """One incident per ``kernel_events`` row of kind ``OOMKilled`` or ``SystemOOM``."""
    out = []
    for row in rows:
        if row.get("kind") not in (OOM_KILLED, SYSTEM_OOM) or not row.get("node"):
            continue
        system = row["kind"] == SYSTEM_OOM
        key = orjson.dumps(row_key({**row, "time": row.get("time")})).decode()
        out.append(
            Incident(
                kind=str(row["kind"]),
                node=str(row["node"]),
                namespace=None if system else row.get("namespace"),
                pod=None if system else row.get("name"),
                uid=None if system else row.get("uid"),
                container=row.get("container"),
                time=_time(row),
                observed=int(row["observed"]),
                message=row.get("message"),
                victim=row.get("victim"),
                pid=row.get("pid"),
                key=f"{row['kind']}|{row['node']}|{key}",
            )
        )
    return out
