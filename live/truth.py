"""What really happened, as it arrives: real evictions and kernel kills, each once, flagged against what the live
engine said about the pod (its own eviction of it, or the message it would get when it last sat first to go).

The recording's ``evictions`` rows (an Evicted Event and the pod's Failed status: one eviction) and
``kernel_events`` rows (OOMKilled containers, the kubelet's SystemOOM Events whose count grows as repeats are
aggregated) arrive between ticks; deduplicated as recordings.reader.Recording.evictions/kernel_events read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from live.model import LiveEvent
from live.tail import Frame
from recordings.kernel import NODE_READY, SYSTEM_OOM, row_key
from recordings.reader import ADMISSION_REJECTION_PREFIX
from replay.textdiff import inline_diff

__all__ = ["GroundTruth", "Said"]


@dataclass
class Said:
    """What the engine said about one node's pods."""

    predicted: dict[str, tuple[int, str, int]] = field(default_factory=dict)
    """Pod UID → (time µs, message, tick) of the eviction the engine decided."""
    next_message: dict[str, str] = field(default_factory=dict)
    """Pod UID → the message it would get, when it last sat first to go."""


class GroundTruth:
    """Real evictions and kernel kills from the frames, each once (see the module docstring)."""

    def __init__(self) -> None:
        self._seen_evictions: set[str] = set()
        self._seen_kernel: set[tuple[Any, ...]] = set()
        self._oom_counts: dict[Any, int] = {}

    def events(self, frame: Frame, said: Mapping[str, Said], pod_node: Mapping[str, str]) -> list[LiveEvent]:
        out = self._evictions(frame.rows("evictions"), said, pod_node)
        out.extend(self._kernel(frame.rows("kernel_events"), said))
        return out

    def _evictions(
        self, rows: Iterable[dict[str, Any]], said: Mapping[str, Said], pod_node: Mapping[str, str]
    ) -> list[LiveEvent]:
        events = []
        for row in rows:
            message = row.get("message") or ""
            if message.startswith(ADMISSION_REJECTION_PREFIX):  # refused at admission: no eviction
                continue
            key = row.get("uid") or f"{row.get('namespace')}/{row.get('name')}"
            if key in self._seen_evictions:
                continue
            self._seen_evictions.add(key)
            node = row.get("node") or pod_node.get(key) or ""
            at = int(row.get("time") or row["observed"])
            details = {
                "namespace": row.get("namespace"),
                "pod": row.get("name"),
                "uid": row.get("uid"),
                "message": message,
                "source": row.get("source"),
                **against_prediction(said.get(node), row.get("uid"), message, at),
            }
            events.append(LiveEvent("real-eviction", node, at, details))
        return events

    def _kernel(self, rows: Iterable[dict[str, Any]], said: Mapping[str, Said]) -> list[LiveEvent]:
        events = []
        for row in rows:
            if row["kind"] == NODE_READY:
                continue
            key = row_key(row)
            if key in self._seen_kernel:
                continue
            self._seen_kernel.add(key)
            kills = 1
            if row["kind"] == SYSTEM_OOM:  # recordings.reader.Recording.kernel_events: an Event's count grows
                event = row["uid"] or row["message"]
                before = self._oom_counts.get(event, 0)
                count = row["count"] or 1
                if count <= before:
                    continue
                self._oom_counts[event] = count
                kills = count - before if before else count
            node = row.get("node") or ""
            at = int(row.get("time") or row["observed"])
            details: dict[str, object] = {"kind": row["kind"], "reason": row.get("reason")}
            details.update(message=row.get("message"), kills=kills)
            if row["kind"] == SYSTEM_OOM:  # the kubelet's Event names a process, not a pod
                details.update(namespace=None, pod=None, uid=None, container=None)
                details.update(victim=row.get("victim"), pid=row.get("pid"))
            else:
                details.update(namespace=row.get("namespace"), pod=row.get("name"), uid=row.get("uid"))
                details["container"] = row.get("container")
                details.update(against_prediction(said.get(node), row.get("uid"), None, at))
            events.append(LiveEvent("kernel-kill", node, at, details))
        return events


def against_prediction(said: Said | None, uid: str | None, message: str | None, at: int) -> dict[str, object]:
    """How a real eviction or kill compares with what the engine said: its own eviction of the pod, else the
    message the pod would have got when it last sat first; the exact difference (``[-predicted-]{+real+}``)."""
    if said is None or not uid:
        return {"predicted": False}
    out: dict[str, object]
    if uid in said.predicted:
        when, predicted, tick = said.predicted[uid]
        out = {"predicted": True, "predicted_time_us": when, "predicted_tick": tick}
        out["seconds_after_prediction"] = (at - when) / 1e6
    elif uid in said.next_message:
        predicted = said.next_message[uid]
        out = {"predicted": False, "was_next_to_go": True}
    else:
        return {"predicted": False}
    out["predicted_message"] = predicted
    if message is not None:
        out["message_matches"] = predicted == message
        out["message_diff"] = "" if predicted == message else inline_diff(predicted, message)
    return out
