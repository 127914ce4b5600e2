"""Recordings built tick by tick through the real writer, with exact times, for replay tests.

The bundled kind-sidecars sample (one kind worker, a pod with three sidecars) is the raw material:
``sidecar_recording`` writes its summary at chosen times and available memory, and its pods,
node object and Evicted events observed at chosen moments.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from recordings import format as fmt
from recordings.writer import RecordingWriter

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "recordings" / "samples" / "kind-sidecars"
T0 = datetime(2024, 5, 20, 10, 15, 0, tzinfo=UTC)
POD_UID = "0d4e3c1a-6c1f-4a53-9a55-3d2f8f1b7e01"
MESSAGE_1_30 = (
    "The node was low on resource: memory. Threshold quantity: 1536Mi, available: 1516448Ki. "
    "Container el1 was using 48Ki, request is 0, has larger consumption of memory. "
    "Container el2 was using 48Ki, request is 0, has larger consumption of memory. "
    "Container el3 was using 48Ki, request is 0, has larger consumption of memory. "
)
LOW = 1516448 * 1024


def micros(when: datetime) -> int:
    return (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def sample(name: str) -> Any:
    return json.loads((SAMPLE / name).read_text())


def retime(obj: Any, when: str) -> Any:
    if isinstance(obj, dict):
        return {k: (when if k == "time" else retime(v, when)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [retime(v, when) for v in obj]
    return obj


def summary_at(when: datetime, available: int, node: str = "kind-worker") -> dict[str, Any]:
    s: dict[str, Any] = retime(copy.deepcopy(sample("summary.json")), stamp(when))
    s["node"]["memory"]["availableBytes"] = available
    s["node"]["nodeName"] = node
    return s


@dataclass
class Tick:
    time: datetime
    summaries: dict[str, dict[str, Any] | None]
    """node → summary (None: a gap)."""


@dataclass
class Observation:
    observed: datetime
    kind: str
    body: dict[str, Any]
    deleted: bool = False
    node: str | None = None


@dataclass
class Plan:
    ticks: list[Tick] = field(default_factory=list)
    objects: list[Observation] = field(default_factory=list)


def write(root: Path, plan: Plan, *, fold_after: Sequence[int] = ()) -> Path:
    """Write ``plan`` as a finished recording: objects interleaved with ticks by their times.

    ``fold_after``: fold the journal into a part after these tick indexes and leave the parts apart
    (as a crashed recorder leaves them), instead of finalizing into one part.
    """
    writer = RecordingWriter(root, fmt.Manifest(source="import"))
    pending = sorted(plan.objects, key=lambda o: o.observed)
    for tick in sorted(plan.ticks, key=lambda t: t.time):
        while pending and pending[0].observed <= tick.time:
            o = pending.pop(0)
            writer.observe(o.kind, o.body, observed=micros(o.observed), deleted=o.deleted, node=o.node)
        t = writer.begin_tick(micros(tick.time))
        for node, summary in tick.summaries.items():
            if summary is None:
                t.add_gap(node, "timeout for GET summary")
            else:
                t.add_summary(node, summary, scraped=micros(tick.time))
        writer.commit(t)
        if t.index in fold_after:
            writer.fold()
    for o in pending:
        writer.observe(o.kind, o.body, observed=micros(o.observed), deleted=o.deleted, node=o.node)
    if fold_after:
        writer.flush_objects()
        writer.fold()
        writer.close_after_failure()
    else:
        writer.finalize()
    return root


def pods(node: str = "kind-worker") -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = sample("pods.json")["items"]
    for p in items:
        p["spec"]["nodeName"] = node
    return items


def node_object(name: str = "kind-worker", version: str = "v1.30.0") -> dict[str, Any]:
    obj: dict[str, Any] = sample("node.json")
    obj["metadata"]["name"] = name
    obj["status"]["nodeInfo"]["kubeletVersion"] = version
    return obj


def failed(pod: dict[str, Any], message: str) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    out["status"].update(phase="Failed", reason="Evicted", message=message)
    return out


def evicted_event(pod: dict[str, Any], message: str, when: datetime) -> dict[str, Any]:
    meta = pod["metadata"]
    return {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": f"{meta['name']}.evicted", "namespace": meta["namespace"], "uid": "ev-" + meta["uid"]},
        "involvedObject": {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
        "reason": "Evicted",
        "type": "Warning",
        "message": message,
        "lastTimestamp": stamp(when),
        "firstTimestamp": stamp(when),
        "source": {"component": "kubelet", "host": pod["spec"]["nodeName"]},
    }


CONFIGZ = {
    "kubeletconfig": {
        "evictionHard": {"memory.available": "1.5Gi"},
        "evictionPressureTransitionPeriod": "5m0s",
        "enforceNodeAllocatable": ["pods"],
    }
}
"""What the kind worker's /configz shows (the sample's kubelet-config.yaml, defaulted)."""


def sidecar_recording(
    root: Path,
    *,
    interval: float = 10.0,
    tick_offset: float = 0.0,
    failed_after: float = 1.0,
    lows: Sequence[bool] = (False, False, True, True, True),
    version: str = "v1.30.0",
    configz: dict[str, Any] | None = CONFIGZ,
    fold_after: Sequence[int] = (),
) -> Path:
    """The kubelet samples stats every ``interval`` s; the recorder's tick ``i`` starts ``tick_offset`` s after
    sample ``i``; the first low sample makes the kubelet evict alloc-sidecars ``failed_after`` s later (pod
    Failed and an Evicted event, as a real cluster shows them)."""
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    for p in pods():
        plan.objects.append(Observation(start, "pod", p))
    plan.objects.append(Observation(start, "node", node_object(version=version)))
    if configz is not None:
        plan.objects.append(Observation(start, "configz", configz, node="kind-worker"))
    evicted = False
    for i, low in enumerate(lows):
        sampled = T0 + timedelta(seconds=interval * i)
        plan.ticks.append(
            Tick(
                sampled + timedelta(seconds=tick_offset), {"kind-worker": summary_at(sampled, LOW if low else 4 << 30)}
            )
        )
        if low and not evicted:
            evicted = True
            when = sampled + timedelta(seconds=failed_after)
            pod = pods()[0]
            plan.objects.append(Observation(when, "pod", failed(pod, MESSAGE_1_30)))
            plan.objects.append(Observation(when, "event", evicted_event(pod, MESSAGE_1_30, when)))
    return write(root, plan, fold_after=fold_after)
