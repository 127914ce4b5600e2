"""A kernel OOM kill, opened like an eviction: what the kernel killed, in which cgroup memory ran out, who the
candidates were (``oom_score_adj`` and ``oom_badness``, kube/oom.py), what the kubelet saw at its last pass before
the kill and why it did not evict, and (flight/whatif.py, checked by the engine) what would have made it act.

Plain data, no widgets; :func:`kill_facts` reads the recording (a worker's job). How far it holds: the badness of
a container is computed from its last recorded RSS (the Summary API's ``rssBytes``, else its working set) at the
kubelet's last pass before the kill, not from the kernel's own count at the instant of the kill; processes outside
the pods (the kubelet at -999, system daemons) are not recorded and not among the candidates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from kube.oom import (
    container_memory_limit,
    container_oom_score_adjust,
    oom_badness,
    pod_qos_class,
    select_victim,
    total_pages,
)
from recordings.kernel import SYSTEM_OOM
from recordings.reader import Recording
from replay.kernel import SAME_KILL_S, SIGNAL
from replay.results import KernelKill, NodeResult, ReplayResult, ThresholdSetting

AT_LIMIT = 0.9
"""A cgroup whose last recorded usage was at least this share of its limit is the one that ran out (flight/explain.py
uses the same share for a container at its limit)."""


@dataclass(frozen=True)
class Candidate:
    """A container the OOM killer of that cgroup could pick (one process each, as far as the recording tells)."""

    pod: str
    container: str
    rss: int | None
    oom_score_adj: int | None
    badness: int | None
    """``oom_badness`` in pages (None: never chosen, adj -1000, or no RSS recorded)."""
    chosen: bool = False
    """The one ``select_bad_process`` picks from these."""
    killed: bool = False
    """The one the recording says was killed."""


@dataclass(frozen=True)
class ThresholdAtPass:
    text: str
    hard: bool
    value: int | None
    met: bool
    grace_s: float
    met_for_s: float | None
    """How long it had been met without a break at that pass (None: not met)."""


@dataclass(frozen=True)
class LastPass:
    tick: int
    time: datetime
    available: int | None
    capacity: int | None
    thresholds: list[ThresholdAtPass]
    lead_s: float
    """Seconds from the pass to the kill."""


@dataclass(frozen=True)
class KillFacts:
    kill: KernelKill
    told_as: list[KernelKill]
    """The same kill as each source told it (a ``SystemOOM`` Event and the ``OOMKilled`` container)."""
    victim: str
    container: str | None
    qos: str | None
    limit: int | None
    """The killed container's memory limit (None: none)."""
    scope: str
    """The cgroup that ran out: ``container``, ``pod``, ``kubepods``, ``node`` or ``unknown``."""
    scope_text: str
    candidates: list[Candidate]
    totalpages: int | None
    last_pass: LastPass | None
    why_not: str
    evictions_before: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _minor(version: str) -> int:
    try:
        return int(version.lstrip("v").split(".")[1])
    except (IndexError, ValueError):
        return 99


def _rss(stats: Mapping[str, Any]) -> int | None:
    memory = stats.get("memory") or {}
    value = memory.get("rssBytes", memory.get("workingSetBytes"))
    return value if isinstance(value, int) else None


def _usage(stats: Mapping[str, Any]) -> int | None:
    memory = stats.get("memory") or {}
    value = memory.get("workingSetBytes")
    return value if isinstance(value, int) else None


def last_pass(series: pl.DataFrame, node: NodeResult, when: datetime) -> LastPass | None:
    """The node's last pass at or before ``when`` on ``memory.available``, each threshold met or not and for how
    long (a soft one evicts only once met for its grace period: eviction_manager.go thresholdsMetGracePeriod)."""

    rows = series.filter((pl.col("signal") == SIGNAL) & (pl.col("time") <= when)).sort("tick")
    if rows.is_empty():
        return None
    tick = rows["tick"][-1]
    at = rows.filter(pl.col("tick") == tick)
    first = at.row(0, named=True)
    shown: list[ThresholdAtPass] = []
    by_id: dict[int, ThresholdSetting] = {t.id: t for t in node.thresholds if t.signal == SIGNAL and t.operator}
    for r in at.iter_rows(named=True):
        t = by_id.get(r["threshold_id"])
        if t is None or any(s.text == t.text for s in shown):
            continue
        met_for: float | None = None
        if r["met"]:
            streak = rows.filter(pl.col("threshold_id") == t.id).select("time", "met")
            start = r["time"]
            for time, met in reversed(list(streak.iter_rows())):
                if not met:
                    break
                start = time
            met_for = (r["time"] - start).total_seconds()
        shown.append(
            ThresholdAtPass(t.text, t.hard, r["threshold_value"], bool(r["met"]), t.grace_period_ns / 1e9, met_for)
        )
    return LastPass(
        int(tick), first["time"], first["available"], first["capacity"], shown, (when - first["time"]).total_seconds()
    )


def why_not(last: LastPass | None, acted: list[str], raced: bool) -> str:
    """Why the kubelet's last pass before the kill did not evict (or did, too late)."""
    if last is None:
        return "the kubelet made no pass of this node before the kill: nothing it could have seen"
    if acted:
        return f"it did act: {'; '.join(acted)} — the kernel killed anyway ({last.lead_s:.1f} s after that pass)"
    if not last.thresholds:
        return "no memory.available threshold is configured on this node: the kubelet never evicts for memory"
    met = [t for t in last.thresholds if t.met]
    if not met:
        lowest = min((t for t in last.thresholds if t.value is not None), key=lambda t: t.value or 0, default=None)
        short = ""
        if lowest is not None and last.available is not None and lowest.value is not None:
            short = f" ({_mi(last.available - lowest.value)} above {lowest.text})"
        how = " memory then ran out between two passes," if raced else ""
        return (
            f"threshold not met: memory.available was {_mi(last.available)} at that pass{short};{how} the kill came "
            f"{last.lead_s:.1f} s later, before the next pass"
        )
    soft = [t for t in met if not t.hard and t.met_for_s is not None and t.met_for_s < t.grace_s]
    if soft and len(soft) == len(met):
        t = soft[0]
        return (
            f"met but grace running: {t.text} met for {t.met_for_s:.0f} s of its {t.grace_s:.0f} s grace period "
            f"(a soft threshold evicts only once met that long)"
        )
    return (
        f"threshold met ({', '.join(t.text for t in met)}) but no eviction at that pass: nothing the kubelet could "
        "evict, or its stats were older than the kill"
    )


def _mi(value: int | None) -> str:
    from replay.replay_report import fmt_bytes

    return fmt_bytes(value)


def kill_facts(rec: Recording | None, result: ReplayResult, series: pl.DataFrame, kill: KernelKill) -> KillFacts:
    """Everything the kill detail shows but the engine's check (:func:`what_would_act`)."""
    from replay.replay_report import kill_victim

    node_name = kill.node or ""
    node = result.node(node_name)
    told = [
        k
        for k in result.kernel_kills
        if k.node == kill.node and abs((k.time - kill.time).total_seconds()) <= SAME_KILL_S
    ]
    container_kill = kill if kill.kind != SYSTEM_OOM else next((k for k in told if k.kind != SYSTEM_OOM), None)
    system = next((k for k in told if k.kind == SYSTEM_OOM), None)
    last = last_pass(series, node, kill.time)
    slack = result.interval_seconds or 10.0
    raced = any(
        t.signal == SIGNAL and t.from_time <= kill.time and (kill.time - t.to_time).total_seconds() <= slack
        for t in node.too_fast
    )
    acted = [
        f"evicted {e.namespace}/{e.pod} at {e.time.strftime('%H:%M:%S')}"
        for e in result.evictions
        if e.node == node_name and last is not None and e.tick == last.tick
    ]
    before = [
        f"{e.namespace}/{e.pod} at {e.time.strftime('%H:%M:%S')}"
        for e in result.evictions
        if e.node == node_name and e.time <= kill.time
    ]
    notes: list[str] = []
    qos = limit = None
    candidates: list[Candidate] = []
    scope, scope_text, pages = "unknown", "the recording does not tell which cgroup ran out", None
    summary = rec.summary_at(node_name, last.tick) if rec is not None and last is not None else None
    pods = {(p.get("metadata") or {}).get("uid"): p for p in rec.pods_at(node_name, kill.time)} if rec else {}
    capacity = last.capacity if last is not None else None
    minor = _minor(node.kubelet_version)
    rows: list[tuple[str, str, str | None, int | None, int | None, int | None]] = []
    """(pod, container, uid, rss, adj, limit) of every container in the last pass's stats."""
    for pod_stats in (summary or {}).get("pods") or []:
        ref = pod_stats.get("podRef") or {}
        manifest = pods.get(ref.get("uid"))
        specs = {}
        if manifest is not None:
            spec = manifest.get("spec") or {}
            specs = {c.get("name"): c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]}
        for c in pod_stats.get("containers") or []:
            cspec = specs.get(c.get("name"))
            adj = (
                container_oom_score_adjust(manifest, cspec, capacity, minor=minor)
                if manifest is not None and cspec is not None and capacity
                else None
            )
            lim = container_memory_limit(cspec) if cspec is not None else None
            rows.append(
                (f"{ref.get('namespace')}/{ref.get('name')}", str(c.get("name")), ref.get("uid"), _rss(c), adj, lim)
            )
    victim_uid = container_kill.uid if container_kill is not None else None
    victim_container = container_kill.container if container_kill is not None else None
    mine = [r for r in rows if r[2] == victim_uid and r[1] == victim_container] if victim_uid else []
    if victim_uid and victim_uid in pods:
        qos = pod_qos_class(pods[victim_uid])
    if mine:
        limit = mine[0][5]
    elif container_kill is not None and victim_uid in pods:
        spec = pods[victim_uid].get("spec") or {}
        cspec = next((c for c in spec.get("containers") or [] if c.get("name") == victim_container), None)
        limit = container_memory_limit(cspec) if cspec is not None else None
    victim_ws = None
    for pod_stats in (summary or {}).get("pods") or []:
        if (pod_stats.get("podRef") or {}).get("uid") == victim_uid:
            for c in pod_stats.get("containers") or []:
                if c.get("name") == victim_container:
                    victim_ws = _usage(c)
    pod_rows = [r for r in rows if r[2] == victim_uid]
    pod_limit = sum(r[5] or 0 for r in pod_rows) if pod_rows and all(r[5] for r in pod_rows) else None
    pod_ws = sum(r[3] or 0 for r in pod_rows) if pod_rows else None
    kubepods = next(
        (s for s in (summary or {}).get("node", {}).get("systemContainers") or [] if s.get("name") == "pods"), None
    )
    kp_memory = (kubepods or {}).get("memory") or {}
    kp_usage, kp_avail = kp_memory.get("workingSetBytes"), kp_memory.get("availableBytes")
    if system is not None or raced:
        scope = "node"
        why = (
            "the kubelet reported a SystemOOM" if system is not None else "memory.available ran out between two passes"
        )
        scope_text = f"the node (cgroup /, the kernel's global OOM killer): {why}"
        pages = total_pages(capacity) if capacity else None
        cands = rows
    elif limit and victim_ws is not None and victim_ws >= AT_LIMIT * limit:
        scope = "container"
        scope_text = (
            f"the container's own cgroup (memory.max {_mi(limit)}): working set {_mi(victim_ws)} at the last pass, "
            f"{victim_ws * 100 // limit}% of its limit — no eviction setting acts on it"
        )
        pages, cands = total_pages(limit), mine
    elif pod_limit and pod_ws is not None and pod_ws >= AT_LIMIT * pod_limit:
        scope = "pod"
        scope_text = f"the pod's cgroup (memory.max {_mi(pod_limit)}, the sum of its containers' limits)"
        pages, cands = total_pages(pod_limit), pod_rows
    elif isinstance(kp_usage, int) and isinstance(kp_avail, int) and kp_usage >= AT_LIMIT * (kp_usage + kp_avail):
        scope = "kubepods"
        scope_text = (
            f"kubepods (every pod's parent cgroup, memory.max {_mi(kp_usage + kp_avail)}: capacity less reserved)"
        )
        pages, cands = total_pages(kp_usage + kp_avail), rows
    else:
        cands = mine or rows
        pages = total_pages(limit) if limit and mine else (total_pages(capacity) if capacity else None)
        notes.append(
            "no cgroup shows usage near its limit at the last pass: the memory grew after it (the stats are up to a "
            "pass old)"
        )
    scored = [
        (r, oom_badness(r[3], r[4], pages) if pages is not None and r[3] is not None and r[4] is not None else None)
        for r in cands
    ]
    chosen = select_victim(
        ((r, r[3], r[4]) for r, b in scored if b is not None and r[3] is not None and r[4] is not None), pages or 1
    )
    for r, b in sorted(scored, key=lambda x: (x[1] is None, -(x[1] or 0))):
        candidates.append(
            Candidate(
                r[0], r[1], r[3], r[4], b, chosen=r is chosen, killed=r[2] == victim_uid and r[1] == victim_container
            )
        )
    if scope == "node":
        notes.append(
            "processes outside the pods (the kubelet at -999, system daemons) are candidates too, not recorded"
        )
    if candidates and not any(c.rss for c in candidates):
        notes.append("no RSS recorded: badness from the working set")
    return KillFacts(
        kill=kill,
        told_as=told,
        victim=kill_victim(container_kill or kill),
        container=victim_container,
        qos=qos,
        limit=limit,
        scope=scope,
        scope_text=scope_text,
        candidates=candidates,
        totalpages=pages,
        last_pass=last,
        why_not=why_not(last, acted, raced),
        evictions_before=before,
        notes=notes,
    )


def what_would_act(rec: Recording, result: ReplayResult, facts: KillFacts) -> tuple[str | None, str, str]:
    """(the setting, how it was derived, the engine's check) that would have made the kubelet act before the kill
    (flight/whatif.py ``smallest_change_for_kill``: the node replayed again with it on the engine)."""
    from flight.explain import passes_before
    from flight.incident import Incident
    from flight.whatif import smallest_change_for_kill
    from recordings.reader import to_micros

    k = facts.kill
    node = k.node or ""
    when = to_micros(k.time)
    before = passes_before(result, node, when)
    cause = {
        "node": "node: the kernel's global OOM killer",
        "container": "container limit",
        "pod": "container limit",
        "kubepods": "node: kubepods ran out",
    }.get(facts.scope, "not determined")
    inc = Incident(k.kind, node, k.namespace, k.pod, k.uid, k.container, when, when, k.message, k.victim, k.pid)
    out = smallest_change_for_kill(rec, result.node(node), inc, before, cause)
    return out.get("setting"), str(out.get("derived", "")), str(out.get("engine_check", ""))
