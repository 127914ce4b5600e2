"""The ``manager`` vector kind: a fresh eviction manager driven through the case's passes.

Summaries are given whole on the first step and as RFC 7386 merge patches afterwards; a
``summary_after_reclaim_patch`` says what the Summary API returns after node-level reclaim. A step may
also list ``map_order_alternatives`` (signals; this repository's extension, not in the shared schema):
the thresholds the real kubelet could have acted on instead, by Go map order (replay.kubelet.map_order).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from replay.conformance.vectors import Case, thresholds, timestamp
from replay.kubelet.api import Pod, Summary, parse_pod, parse_summary
from replay.kubelet.config import EvictionConfig
from replay.kubelet.duration import parse_duration
from replay.kubelet.manager import CONTAINER_GC, IMAGE_GC, EvictionManager, FsTopology, SyncResult
from replay.kubelet.versions import VersionProfile


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _eq(label: str, got: object, want: object) -> list[str]:
    return [] if got == want else [f"{label}: got {got!r}, want {want!r}"]


def check_manager(case: Case, profile: VersionProfile) -> list[str]:
    inp = case.input
    node = inp["node"]
    config = EvictionConfig(
        thresholds=tuple(thresholds(node.get("thresholds") or [])),
        pressure_transition_period=parse_duration(str(node.get("pressure_transition_period", "5m0s"))),
        max_pod_grace_period_seconds=int(node.get("max_pod_grace_period_seconds", 0)),
        local_storage_capacity_isolation=bool(node.get("local_storage_capacity_isolation", False)),
        source=case.id,
    )
    topology = FsTopology(bool(node.get("dedicated_image_fs")), bool(node.get("split_container_image_fs")))
    after_reclaim: dict[str, Summary | None] = {"summary": None}
    gc_calls: list[str] = []

    def reclaimer(signal: str, funcs: Sequence[str], summary: Summary) -> Summary | None:
        gc_calls.extend(funcs)
        return after_reclaim["summary"] or summary

    manager = EvictionManager(config, profile, topology, reclaimer)
    pods: list[Pod] = [parse_pod(p, source=case.id, field=f"input.pods[{i}]") for i, p in enumerate(inp["pods"])]
    admission = [parse_pod(p, source=case.id, field="input.admission_pods") for p in inp.get("admission_pods") or []]
    failures: list[str] = []
    raw_summary: Any = None
    for n, step in enumerate(inp["steps"]):
        label = f"step {n}"
        if "summary" in step:
            raw_summary = step["summary"]
        else:
            raw_summary = merge_patch(raw_summary, step.get("summary_patch") or {})
        summary = parse_summary(raw_summary, source=case.id)
        if "summary_after_reclaim_patch" in step:
            after_reclaim["summary"] = parse_summary(
                merge_patch(raw_summary, step["summary_after_reclaim_patch"]), source=case.id
            )
        else:
            after_reclaim["summary"] = None
        if step.get("pods") is not None:
            pods = [parse_pod(p, source=case.id, field=f"{label}.pods") for p in step["pods"]]
        gc_calls.clear()
        result = manager.synchronize(summary, pods, timestamp(step["now"]))
        for want in (step.get("expect") or {}, step.get("derived") or {}):
            failures += _check_step(label, want, result, manager, admission, gc_calls)
    return failures


def _check_step(
    label: str,
    want: Mapping[str, Any],
    result: SyncResult,
    manager: EvictionManager,
    admission: list[Pod],
    gc_calls: list[str],
) -> list[str]:
    f: list[str] = []
    if "error" in want:
        f += _eq(f"{label} error", result.error, want["error"])
    for condition, value in (want.get("node_conditions") or {}).items():
        f += _eq(f"{label} {condition}", manager.is_under_pressure(condition), value)
    kills = result.evictions
    if "pod_killed" in want:
        f += _eq(f"{label} pod_killed", bool(kills), want["pod_killed"])
    if "killed_pods" in want:
        f += _eq(f"{label} killed_pods", [e.pod.name for e in kills], list(want["killed_pods"]))
    if "grace_period_override" in want:
        f += _eq(
            f"{label} grace_period_override",
            [e.grace_period_override for e in kills],
            [want["grace_period_override"]] * max(1, len(kills)),
        )
    if "message" in want:
        f += _eq(f"{label} message", kills[0].message if kills else None, want["message"])
    if "messages" in want:
        f += _eq(f"{label} messages", [e.message for e in kills], list(want["messages"]))
    if "pod_status" in want:
        got = kills[0].pod_status if kills else None
        f += _eq(f"{label} pod_status", _status(got), _status(want["pod_status"]))
    for name, admit in (want.get("admit") or {}).items():
        pod = next((p for p in admission if p.name == name), None)
        if pod is None:
            f.append(f"{label}: admission pod {name} not in the case")
            continue
        f += _eq(f"{label} admit {name}", manager.admit(pod).admit, admit)
    if "image_gc_invoked" in want:
        f += _eq(f"{label} image_gc_invoked", IMAGE_GC in gc_calls, want["image_gc_invoked"])
    if "container_gc_invoked" in want:
        f += _eq(f"{label} container_gc_invoked", CONTAINER_GC in gc_calls, want["container_gc_invoked"])
    if "map_order_alternatives" in want:  # this repository's extension (issue 29): decisions left to Go map order
        alternatives = [t.signal for t in result.map_order_alternatives]
        f += _eq(f"{label} map_order_alternatives", alternatives, list(want["map_order_alternatives"]))
    return f


def _status(status: Mapping[str, Any] | None) -> Any:
    if status is None:
        return None
    keep = ("type", "status", "reason", "message")
    return {
        "phase": status.get("phase"),
        "reason": status.get("reason"),
        "message": status.get("message"),
        "conditions": [{k: c.get(k) for k in keep} for c in status.get("conditions") or []],
    }
