"""What the kernel (and the node's liveness) did, read off the objects a recording keeps: ground truth
beside the ``Evicted`` events, for the moments the kubelet's eviction loop came too late.

* a container terminated with reason ``OOMKilled`` (its memory cgroup hit its limit, or the node-wide
  OOM killer chose it): ``state.terminated`` / ``lastState.terminated`` of a pod's container statuses,
  the runtime's reason passed through by the kubelet (kubelet_pods.go: convertToAPIContainerStatuses,
  ``Reason: cs.Reason``; containerd and CRI-O say ``OOMKilled``, exit code 137). Every distinct
  termination (container, ``finishedAt``) is one kill, so successive pod versions give successive kills
  and a single version still gives its last one;
* the kubelet's ``SystemOOM`` Event on the Node (pkg/kubelet/oom/oom_watcher_linux.go: the kubelet
  reads ``/dev/kmsg`` and reports every OOM kill whose victim cgroup is ``/`` as
  ``System OOM encountered, victim process: NAME, pid: PID``); the Event's ``count`` grows when the
  kubelet's event recorder aggregates repeats, so each version keeps the cumulative count;
* the node's ``Ready`` condition at each ``lastTransitionTime`` (a node that stops posting status,
  e.g. a kubelet starved of memory, turns ``Unknown``; ``False`` with ``KubeletNotReady``).

Exit code 137 without reason ``OOMKilled`` is any SIGKILL (the kubelet's own kill at the end of a grace
period, a failed liveness probe): not counted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

OOM_KILLED = "OOMKilled"
SYSTEM_OOM = "SystemOOM"
NODE_READY = "NodeReady"
KINDS = (OOM_KILLED, SYSTEM_OOM, NODE_READY)

_VICTIM = re.compile(r"victim process: (?P<name>.*), pid: (?P<pid>\d+)")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def victim(message: str | None) -> tuple[str | None, int | None]:
    """``System OOM encountered, victim process: java, pid: 4242`` → (``java``, 4242); (None, None) when the
    kubelet did not know the process (the message is then just ``System OOM encountered``)."""
    found = _VICTIM.search(message or "")
    return (found["name"], int(found["pid"])) if found else (None, None)


def pod_rows(body: Mapping[str, Any], node: str | None) -> list[dict[str, Any]]:
    """Every OOMKilled termination a (redacted) pod version shows, current or last state of each container."""
    meta, status = _mapping(body.get("metadata")), _mapping(body.get("status"))
    out = []
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        statuses = status.get(key)
        for cs in statuses if isinstance(statuses, list) else []:
            cs = _mapping(cs)
            for which in ("lastState", "state"):
                term = _mapping(_mapping(cs.get(which)).get("terminated"))
                if term.get("reason") != OOM_KILLED:
                    continue
                out.append(
                    {
                        "kind": OOM_KILLED,
                        "source": "pod",
                        "node": node,
                        "namespace": meta.get("namespace"),
                        "name": meta.get("name"),
                        "uid": meta.get("uid"),
                        "container": cs.get("name"),
                        "reason": OOM_KILLED,
                        "message": None,
                        "victim": None,
                        "pid": None,
                        "exit_code": _int(term.get("exitCode")),
                        "restart_count": _int(cs.get("restartCount")),
                        "status": None,
                        "count": None,
                        "time": term.get("finishedAt") or term.get("startedAt"),
                    }
                )
    return out


def event_rows(body: Mapping[str, Any], node: str | None) -> list[dict[str, Any]]:
    """A ``SystemOOM`` Event (redacted) as one row carrying its cumulative ``count``."""
    if body.get("reason") != SYSTEM_OOM:
        return []
    inv = _mapping(body.get("involvedObject"))
    message = body.get("message")
    name, pid = victim(message if isinstance(message, str) else None)
    node = node or (inv.get("name") if inv.get("kind") == "Node" else None)
    return [
        {
            "kind": SYSTEM_OOM,
            "source": "event",
            "node": node,
            "namespace": None,
            "name": inv.get("name"),
            "uid": _mapping(body.get("metadata")).get("uid"),
            "container": None,
            "reason": SYSTEM_OOM,
            "message": message,
            "victim": name,
            "pid": pid,
            "exit_code": None,
            "restart_count": None,
            "status": None,
            "count": _int(body.get("count")) or 1,
            "time": body.get("lastTimestamp") or body.get("eventTime") or body.get("firstTimestamp"),
        }
    ]


def node_rows(body: Mapping[str, Any], node: str | None) -> list[dict[str, Any]]:
    """The ``Ready`` condition of a (redacted) node version, at its last transition."""
    meta = _mapping(body.get("metadata"))
    conditions = _mapping(body.get("status")).get("conditions")
    for c in conditions if isinstance(conditions, list) else []:
        c = _mapping(c)
        if c.get("type") == "Ready":
            return [
                {
                    "kind": NODE_READY,
                    "source": "node",
                    "node": node or meta.get("name"),
                    "namespace": None,
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "container": None,
                    "reason": c.get("reason"),
                    "message": c.get("message"),
                    "victim": None,
                    "pid": None,
                    "exit_code": None,
                    "restart_count": None,
                    "status": c.get("status"),
                    "count": None,
                    "time": c.get("lastTransitionTime"),
                }
            ]
    return []


def rows_of(kind: str, body: Mapping[str, Any], node: str | None) -> list[dict[str, Any]]:
    """The kernel_events rows (without ``observed``) an observed object version gives."""
    if kind == "pod":
        return pod_rows(body, node)
    if kind == "event":
        return event_rows(body, node)
    if kind == "node":
        return node_rows(body, node)
    return []


def row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two rows the same fact (a re-list after ``--append`` repeats them)."""
    if row["kind"] == OOM_KILLED:
        return (row["kind"], row["uid"] or f"{row['namespace']}/{row['name']}", row["container"], row["time"])
    if row["kind"] == SYSTEM_OOM:
        return (row["kind"], row["uid"] or row["message"], row["count"], row["time"])
    return (row["kind"], row["node"], row["status"], row["time"])
