"""What the one engine says about an incident, on its window: plain data for report.json (report.txt renders it).

The window (flight/window.py) is replayed with the node's recorded settings (``replay.engine.replay``) and the
pass that matters is explained with the kubelet's own code (``replay.moment.explain_moment``, what ``evictlens
explain WINDOW --node N --tick K`` prints):

* an eviction: the replay's eviction matched to the real one (same pod, within an interval), its message against
  the real one byte for byte (``replay.textdiff``), the ranking at that pass and why each pod sat where it did;
* a kernel kill: the last pass before it, ``memory.available`` at the passes before the kill, whether memory ran out
  between two passes (``replay.kernel``), the killed container's ``oom_score_adj`` (kube/oom.py) and whether it
  sat at its own limit;
* the smallest setting change the engine can check: the window replayed again with it (flight/whatif.py).

The window starts ``before`` the incident, so manager state older than that (a threshold met earlier, a grace
period already running) is not seen; the report says so.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import orjson
import polars as pl

from kube.errors import InputError
from kube.oom import container_memory_limit, container_oom_score_adjust, pod_qos_class
from recordings.kernel import SYSTEM_OOM
from recordings.reader import Recording, to_micros
from replay.engine import Moment, replay
from replay.kernel import SIGNAL
from replay.results import Eviction, Match, NodeResult, ReplayResult
from replay.settings import SettingsRequest
from replay.textdiff import inline_diff

from .incident import EVICTED, Incident, stamp
from .whatif import smallest_change_for_eviction, smallest_change_for_kill

MI = 1024 * 1024
AT_LIMIT = 0.9
"""A container whose last recorded working set was at least this share of its memory limit sat at its limit."""


def _iso(when: datetime | None) -> str | None:
    return when.isoformat().replace("+00:00", "Z") if when is not None else None


def settings_json(n: NodeResult) -> dict[str, Any]:
    """The settings in force on the node and where each came from."""
    return {
        "kubelet_version": n.kubelet_version,
        "kubelet_version_source": n.version_source,
        "config_source": n.config_source,
        "sources": dict(n.settings_sources),
        "thresholds": [
            {"threshold": t.text, "hard": t.hard, "grace_period_ns": t.grace_period_ns, "signal": t.signal}
            for t in n.thresholds
        ],
        "pressure_transition_period_ns": n.pressure_transition_period_ns,
        "max_pod_grace_period_s": n.max_pod_grace_period_s,
    }


def ranking_json(e: Eviction) -> list[dict[str, Any]]:
    """Each pod of the ranking at the eviction's pass and what put it there (``decided_by`` against the evicted)."""
    return [
        {
            "rank": r.rank,
            "pod": f"{r.namespace}/{r.pod}",
            "qos": r.qos,
            "priority": r.priority,
            "usage": r.usage,
            "request": r.request,
            "exceeds_request": r.exceeds_request,
            "usage_above_request": r.usage_above_request,
            "decided_by": r.decided_by,
            "margin": r.margin,
            "why": r.reason,
        }
        for r in e.ranking
    ]


def _match(result: ReplayResult, inc: Incident) -> Match | None:
    found = [
        m
        for m in result.matches
        if m.real.node == inc.node
        and (
            (inc.uid is not None and m.real.uid == inc.uid)
            or (m.real.namespace, m.real.pod) == (inc.namespace, inc.pod)
        )
    ]
    found.sort(key=lambda m: (m.predicted_id is None, m.real.source != "event"))
    return found[0] if found else None


def _explanation(rec: Recording, node: str, moment: Moment) -> tuple[dict[str, Any] | None, str, str | None]:
    """(explanation JSON, its text, why there is none) of one pass, as ``evictlens explain`` gives it."""
    from rich.console import Console

    from replay.moment import explain_moment
    from replay.report import explanation_json, print_explanation

    try:
        e = explain_moment(rec, SettingsRequest(), node, moment)
    except InputError as exc:
        return None, "", exc.one_line()
    buf = io.StringIO()
    print_explanation(e, Console(file=buf, width=140, color_system=None, force_terminal=False, soft_wrap=True))
    return orjson.loads(explanation_json(e)), buf.getvalue(), None


def explain_incident(rec: Recording, inc: Incident, *, window: tuple[int, int]) -> dict[str, Any]:
    """The report document (without the incident and pack fields the caller adds)."""
    request = SettingsRequest()
    (result,) = replay(rec, [request], [inc.node], jobs=1, closed_loop=False)
    node = result.node(inc.node)
    doc: dict[str, Any] = {
        "settings": settings_json(node),
        "replay_notes": [*result.notes, *(f"window: {n}" for n in rec.manifest.notes[-1:])],
        "holds": (
            f"the window starts {stamp(window[0])}: the replay builds the eviction manager's state from there, so a "
            "threshold met or a grace period running since before it is not seen; every pass is the recorded one "
            "(settings as recorded, no counterfactual)"
        ),
    }
    if inc.kind == EVICTED:
        doc |= _eviction(rec, result, node, inc)
    else:
        doc |= _kill(rec, result, node, inc)
    return doc


def _eviction(rec: Recording, result: ReplayResult, node: NodeResult, inc: Incident) -> dict[str, Any]:
    match = _match(result, inc)
    predicted = None
    if match is not None and match.predicted_id is not None:
        predicted = next((e for e in result.evictions if e.id == match.predicted_id), None)
    real = inc.message if inc.message is not None else (match.real.message if match else None)
    out: dict[str, Any] = {"real_message": real}
    if predicted is not None:
        moment = Moment(tick=predicted.tick)
        same = real == predicted.message
        out |= {
            "predicted": {
                "pod": f"{predicted.namespace}/{predicted.pod}",
                "message": predicted.message,
                "annotations": dict(predicted.annotations),
                "tick": predicted.tick,
                "time": _iso(predicted.time),
                "signal": predicted.signal,
                "hard": predicted.hard,
                "observed_available": predicted.observed_available,
                "threshold_value": predicted.threshold_value,
                "impact": predicted.impact,
            },
            "same_message": same,
            "message_diff": None if same or real is None else inline_diff(real, predicted.message),
            "why_not_same": None if same else _why_differs(real, match),
            "ranking": ranking_json(predicted),
            "smallest_change": smallest_change_for_eviction(rec, node, predicted, inc),
        }
    else:
        others = [e for e in result.evictions if e.node == inc.node]
        near = min(others, key=lambda e: abs(to_micros(e.time) - inc.time), default=None)
        why = "the replay of the window does not evict this pod"
        if near is not None:
            why += f"; its nearest eviction is {near.namespace}/{near.pod} at {_iso(near.time)} (tick {near.tick})"
        else:
            why += " nor any other pod on this node"
        if node.horizon is not None:
            why += f"; the replay and the recording part ways at {_iso(node.horizon)}: {node.horizon_reason}"
        moment = Moment(at=_dt(inc.time))
        out |= {
            "predicted": None,
            "same_message": False,
            "message_diff": None,
            "why_not_same": why,
            "ranking": ranking_json(near) if near is not None else [],
            "smallest_change": None,
        }
    expl, text, missing = _explanation(rec, inc.node, moment)
    out |= {"moment": moment.describe(), "explanation": expl, "explanation_text": text, "no_explanation": missing}
    return out


def _why_differs(real: str | None, match: Match | None) -> str:
    if real is None:
        return "the recording kept no message for this eviction (a pod status without one, no Event)"
    if match is not None and match.message_diff:
        return f"the messages differ: {match.message_diff}"
    return "the messages differ (see message_diff)"


def _dt(us: int) -> datetime:
    from datetime import UTC

    return datetime.fromtimestamp(us / 1e6, UTC)


def passes_before(result: ReplayResult, node: str, until_us: int, count: int = 4) -> list[dict[str, Any]]:
    """``memory.available`` at the node's last ``count`` passes at or before ``until_us``, with the hard threshold."""
    hard = {t.id for t in result.node(node).thresholds if t.hard and t.signal == SIGNAL}
    rows = (
        result.signals.filter(
            (pl.col("node") == node) & (pl.col("signal") == SIGNAL) & (pl.col("time").dt.epoch("us") <= until_us)
        )
        .select("tick", "time", "available", "capacity", "threshold_id", "threshold_value")
        .collect()
    )
    if rows.is_empty():
        return []
    rows = rows.with_columns(hard=pl.when(pl.col("threshold_id").is_in(list(hard))).then(pl.col("threshold_value")))
    passes = (
        rows.group_by("tick")
        .agg(pl.col("time").first(), pl.col("available").first(), pl.col("capacity").first(), pl.col("hard").max())
        .sort("tick")
        .tail(count)
    )
    return [
        {
            "tick": int(r["tick"]),
            "time": _iso(r["time"]),
            "available": r["available"],
            "capacity": r["capacity"],
            "hard_threshold": r["hard"],
        }
        for r in passes.iter_rows(named=True)
    ]


def _kill(rec: Recording, result: ReplayResult, node: NodeResult, inc: Incident) -> dict[str, Any]:
    before = passes_before(result, inc.node, inc.time)
    # a race between two passes counts for a kill inside it or up to one interval after (a kill's time has whole
    # seconds; the pass after it may already show the memory it freed)
    slack = int((result.interval_seconds or 10.0) * 1e6)
    races = [
        {
            "from": _iso(t.from_time),
            "from_available": t.from_available,
            "to": _iso(t.to_time),
            "to_available": t.to_available,
            "threshold_value": t.threshold_value,
            "seconds": t.seconds,
            "kills_between": t.kills,
        }
        for t in node.too_fast
        if to_micros(t.from_time) <= inc.time <= to_micros(t.to_time) + slack
    ]
    kernel = {
        "kind": inc.kind,
        "victim": inc.victim,
        "pid": inc.pid,
        "container": inc.container,
        "message": inc.message,
        "memory_ran_out_between_passes": races,
        "passes_before": before,
        **_victim_facts(rec, inc, before),
    }
    kernel["cause"] = _cause(inc, kernel, before, races)
    moment = Moment(at=_dt(inc.time))
    expl, text, missing = _explanation(rec, inc.node, moment)
    evictions_before = [
        {"pod": f"{e.namespace}/{e.pod}", "time": _iso(e.time), "message": e.message}
        for e in result.evictions
        if e.node == inc.node and to_micros(e.time) <= inc.time
    ]
    return {
        "kernel": kernel,
        "evictions_before": evictions_before,
        "smallest_change": smallest_change_for_kill(rec, node, inc, before, kernel["cause"]),
        "moment": f"the last pass at or before the kill ({stamp(inc.time)})",
        "explanation": expl,
        "explanation_text": text,
        "no_explanation": missing,
    }


def _victim_facts(rec: Recording, inc: Incident, before: list[dict[str, Any]]) -> dict[str, Any]:
    """The killed container's QoS, oom_score_adj (kube/oom.py, the kubelet's policy.go) and limit against its last
    recorded working set."""
    if inc.kind == SYSTEM_OOM or inc.pod is None:
        return {"oom_score_adj": None, "note": "a SystemOOM names a process outside any pod's container (cgroup /)"}
    pods = [p for p in rec.pods_at(inc.node, _dt(inc.time)) if p.get("metadata", {}).get("uid") == inc.uid]
    if not pods:
        pods = [p for p in rec.pods_at(inc.node) if p.get("metadata", {}).get("uid") == inc.uid]
    if not pods:
        return {"oom_score_adj": None, "note": "the pod's manifest is not in the window"}
    pod = pods[0]
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    container = next((c for c in containers if c.get("name") == inc.container), None)
    capacity = next((p["capacity"] for p in reversed(before) if p.get("capacity")), None)
    version = rec.manifest.kubelet_versions.get(inc.node, "")
    minor = _minor(version)
    facts: dict[str, Any] = {"qos": pod_qos_class(pod)}
    if container is None:
        return facts | {"oom_score_adj": None, "note": f"container {inc.container} is not in the pod's manifest"}
    facts["oom_score_adj"] = (
        container_oom_score_adjust(pod, container, int(capacity), minor=minor) if capacity is not None else None
    )
    facts["oom_score_adj_rule"] = (
        f"pkg/kubelet/qos/policy.go GetContainerOOMScoreAdjust as kubelet 1.{minor} (memory capacity {capacity} bytes)"
        if capacity is not None
        else "no memory capacity recorded before the kill"
    )
    limit = container_memory_limit(container)
    facts["memory_limit"] = limit
    facts["last_working_set"] = _last_working_set(rec, inc, before)
    return facts


def _minor(version: str) -> int:
    try:
        return int(version.lstrip("v").split(".")[1])
    except (IndexError, ValueError):
        return 99


def _last_working_set(rec: Recording, inc: Incident, before: list[dict[str, Any]]) -> int | None:
    for p in reversed(before):
        summary = rec.summary_at(inc.node, p["tick"])
        for pod in (summary or {}).get("pods") or []:
            if (pod.get("podRef") or {}).get("uid") != inc.uid:
                continue
            for c in pod.get("containers") or []:
                if c.get("name") == inc.container:
                    ws = (c.get("memory") or {}).get("workingSetBytes")
                    if isinstance(ws, int):
                        return ws
    return None


def _cause(inc: Incident, kernel: Mapping[str, Any], before: list[dict[str, Any]], races: list[Any]) -> str:
    """Which OOM killer acted, as far as the recording tells."""
    if inc.kind == SYSTEM_OOM:
        return "node: the kernel's global OOM killer (the kubelet reported a SystemOOM: the node ran out of memory)"
    if races:
        return "node: memory.available ran out between two passes (the kernel's global OOM killer)"
    limit, ws = kernel.get("memory_limit"), kernel.get("last_working_set")
    if isinstance(limit, int) and isinstance(ws, int) and ws >= AT_LIMIT * limit:
        return (
            f"container limit: its working set was {ws} bytes at the last pass, {ws * 100 // limit}% of its "
            f"{limit}-byte limit (a cgroup OOM; no node-pressure setting acts on it)"
        )
    if before and isinstance(before[-1].get("available"), int):
        return (
            f"not determined: memory.available was {before[-1]['available']} bytes at the last pass and no pass "
            "shows it running out; the container's limit is "
            + (f"{limit} bytes" if isinstance(limit, int) else "unset")
        )
    return "not determined: no pass of this node before the kill in the window"
