"""The kernel and the kubelet's container restarts inside a scenario: who the OOM killer takes, and when it comes back.

The generator evaluates this model every :data:`STEP` (1 s) between the kubelet's passes, so memory that runs
out between two passes reaches the kernel first, as on a node (recordings/SCENARIOS.md §8):

* **a container at its own limit** (its cgroup's ``memory.max`` = ``resources.limits.memory``): the memcg OOM
  killer kills it (a container is one process here, and the kubelet sets ``memory.oom.group`` on cgroup v2);
* **the pods' cgroup at its limit** (``kubepods``: capacity − kube-reserved − system-reserved when
  ``enforceNodeAllocatable`` has ``pods``): a memcg OOM in ``kubepods``, victim among the pods' containers;
* **the node out of memory** (node working set ≥ capacity): a global OOM, victim among the pods' containers
  (system daemons run at −999 or in their own slices: not modelled as victims).

The victim is chosen by ``kube.oom.select_victim`` (mm/oom_kill.c ``oom_badness``) with the kubelet's
``oom_score_adj`` (pkg/kubelet/qos/policy.go). The killed container ends with ``OOMKilled``, exit code 137
(containerd/CRI-O report the cgroup's ``oom_kill`` that way). A global OOM's victim is what cadvisor's oomparser
reports with ``VictimContainerName`` ``/`` (the kernel's global-OOM line has no ``oom_memcg``), so the kubelet's OOM
watcher (pkg/kubelet/oom/oom_watcher_linux.go) records ``SystemOOM`` on the Node with :func:`system_oom_message`;
a cgroup OOM (``oom_memcg`` = the container's or ``/kubepods``) gives no event.

Restarts follow the kubelet: ``restartPolicy`` Always/OnFailure (and sidecars) restart an OOM-killed container,
Never leaves it terminated; the crash-loop back-off is :class:`Backoff`, a port of client-go
util/flowcontrol/backoff.go as kubelet.go builds it (``NewBackOff(backOffPeriod=10s, MaxContainerBackOff=300s)``,
no jitter) and kuberuntime_manager.go ``doBackOff`` uses it: ``IsInBackOffSince(key, finishedAt)`` then
``Next(key, finishedAt)`` when the container is started again. The first restart is immediate (no entry yet),
then 10 s, 20 s, … 300 s; an entry not updated for 10 min starts over (kubelet.go sets ``HasExpiredFunc`` to a
fixed 600 s; client-go's own rule, 2 × the maximum, gave the same 600 s while the maximum was always 300 s). The
alpha gate ``ReduceDefaultCrashLoopBackOffDecay`` (1.33+, off by default, PR #130711) makes it 1 s … 60 s, still
reset after 600 s.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .units import SECOND

STEP = SECOND
"""The kernel model's resolution between two kubelet passes."""
PLEG_RELIST = SECOND
"""The kubelet notices a dead container at its next PLEG relist (pleg/generic.go: relist period 1 s)."""
BACKOFF_PERIOD = 10 * SECOND
MAX_CONTAINER_BACKOFF = 300 * SECOND
REDUCED_BACKOFF_PERIOD = SECOND
REDUCED_MAX_BACKOFF = 60 * SECOND
STABLE_AFTER = 600 * SECOND
"""kubelet.go ``crashLoopBackOff.HasExpiredFunc``: an entry not updated for longer than this starts over."""
EXIT_OOM = 137
OOM_KILLED = "OOMKilled"
CRASH_LOOP = "CrashLoopBackOff"
TASK_COMM_LEN = 16
FIRST_PID = 4000
NODE_STATUS_UNKNOWN = "NodeStatusUnknown"
STOPPED_POSTING = "Kubelet stopped posting node status."
UNREACHABLE = "node.kubernetes.io/unreachable"
STARVED_SUMMARY = "the kubelet did not answer: starved of memory (the node is thrashing)"


def node_monitor_grace(minor: int) -> int:
    """kube-controller-manager ``--node-monitor-grace-period``: 40 s, 50 s from 1.32 (PR #126287); the kubelet's
    version stands for the control plane's."""
    return (50 if minor >= 32 else 40) * SECOND


@dataclass
class _Entry:
    backoff: int
    last_update: int


@dataclass
class Backoff:
    """client-go util/flowcontrol ``Backoff`` with the kubelet's clock made explicit (microseconds)."""

    initial: int = BACKOFF_PERIOD
    maximum: int = MAX_CONTAINER_BACKOFF
    entries: dict[str, _Entry] = field(default_factory=dict)

    def _expired(self, event_time: int, last_update: int) -> bool:
        """The kubelet's ``HasExpiredFunc``: stable when nothing happened for 600 s, whatever the maximum."""
        return event_time - last_update > STABLE_AFTER

    def get(self, key: str) -> int:
        entry = self.entries.get(key)
        return entry.backoff if entry else 0

    def in_backoff_since(self, key: str, event_time: int, now: int) -> bool:
        """``IsInBackOffSince``: ``now − event_time < backoff`` unless the entry is missing or expired."""
        entry = self.entries.get(key)
        if entry is None or self._expired(event_time, entry.last_update):
            return False
        return now - event_time < entry.backoff

    def next(self, key: str, event_time: int, now: int) -> None:
        """``Next``: a new entry at the initial period, else double it up to the maximum; ``lastUpdate = now``."""
        entry = self.entries.get(key)
        if entry is None or self._expired(event_time, entry.last_update):
            entry = _Entry(self.initial, now)
            self.entries[key] = entry
        else:
            entry.backoff = min(entry.backoff * 2, self.maximum)
        entry.last_update = now

    def restart_at(self, key: str, finished: int) -> int:
        """When the kubelet starts the container again after it finished at ``finished``: its first sync after the
        PLEG relist, or once ``IsInBackOffSince`` turns false (the pod worker requeues at the end of the back-off)."""
        entry = self.entries.get(key)
        first = finished + PLEG_RELIST
        if entry is None or self._expired(finished, entry.last_update):
            return first
        return max(first, finished + entry.backoff)


def backoff_for(minor: int, gates: Mapping[str, bool]) -> Backoff:
    """The kubelet's container back-off for version 1.``minor`` and its feature gates."""
    if minor >= 33 and gates.get("ReduceDefaultCrashLoopBackOffDecay"):
        return Backoff(REDUCED_BACKOFF_PERIOD, REDUCED_MAX_BACKOFF)
    return Backoff()


def restarts(pod_spec: Mapping[str, Any], container: Mapping[str, Any], *, init: bool) -> bool:
    """Whether the kubelet starts an OOM-killed container again: a sidecar always; otherwise the pod's
    ``restartPolicy`` (default Always) — Always and OnFailure restart a failed container, Never does not."""
    if init and container.get("restartPolicy") == "Always":
        return True
    return pod_spec.get("restartPolicy", "Always") in ("Always", "OnFailure")


def process_name(container: Mapping[str, Any]) -> str:
    """The victim's ``comm`` as the kernel prints it (``Killed process PID (NAME)``): the command's (else the image's)
    base name, at most 15 characters."""
    command = container.get("command")
    if isinstance(command, list) and command and isinstance(command[0], str) and command[0]:
        name = posixpath.basename(command[0])
    else:
        image = str(container.get("image") or container.get("name") or "")
        name = posixpath.basename(image.split("@", 1)[0])
        name = name.split(":", 1)[0] or str(container.get("name"))
    return name[: TASK_COMM_LEN - 1]


def system_oom_message(process: str | None, pid: int) -> str:
    """oom_watcher_linux.go: ``System OOM encountered[, victim process: NAME, pid: PID]``."""
    message = "System OOM encountered"
    if process and pid != 0:
        message = f"{message}, victim process: {process}, pid: {pid}"
    return message


def backoff_message(delay: str, container: str, pod: str, namespace: str, uid: str) -> str:
    """kuberuntime_manager.go doBackOff's error, the container's waiting message:
    ``back-off 10s restarting failed container=NAME pod=POD_NAMESPACE(UID)`` (format.Pod)."""
    return f"back-off {delay} restarting failed container={container} pod={pod}_{namespace}({uid})"


def backoff_event(container: str, pod: str, namespace: str, uid: str) -> str:
    """The ``BackOff`` event doBackOff records on the container."""
    return f"Back-off restarting failed container {container} in pod {pod}_{namespace}({uid})"
