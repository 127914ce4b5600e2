"""Rendering an :class:`~replay.explain.Explanation`: rich tables for people, one JSON document for tools."""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from replay.explain import Explanation
from replay.kubelet.manager import SyncResult
from replay.kubelet.ranking import RankFacts


def _opt(value: object) -> str:
    return "—" if value is None else str(value)


def _ranking_table(title: str, facts: tuple[RankFacts, ...], evicted: str | None) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("#", "pod", "stats", "exceeds request", "priority", "usage", "request", "usage − request", "note"):
        table.add_column(col, justify="right" if col in ("#", "priority") else "left",
                         overflow="fold", no_wrap=col in ("pod", "usage", "request", "usage − request"))
    for i, f in enumerate(facts, 1):
        if not f.has_stats:
            why = "no stats: evicted first"
        elif f.exceeds_request:
            why = "usage above request"
        else:
            why = ""
        if f.critical:
            why = (why + "; " if why else "") + "critical pod: never evicted"
        if evicted == f.pod:
            why = (why + "; " if why else "") + "EVICTED"
        exceeds = "yes" if f.exceeds_request else ("no" if f.exceeds_request is not None else "—")
        usage = _opt(f.usage) if f.process_count is None else f"{f.process_count} processes"
        table.add_row(str(i), f"{f.namespace}/{f.pod}" if f.namespace else f.pod, "yes" if f.has_stats else "no",
                      exceeds, str(f.priority), usage, str(f.request), _opt(f.usage_above_request), why)
    return table


def _verdict(console: Console, result: SyncResult, heading: str) -> None:
    console.print(f"[bold]{heading}[/bold]")
    if result.error:
        console.print(f"  [red]synchronize failed:[/red] {result.error}")
        return
    if result.node_event:
        console.print(f"  node event (Warning, EvictionThresholdMet): {result.node_event}")
    if result.node_reclaim:
        console.print(f"  node-level reclaim first: {', '.join(result.node_reclaim)}")
    if not result.evictions:
        console.print(f"  [green]no pod would be evicted[/green]: {result.reason}")
        if result.critical_skipped:
            console.print(f"  critical pods skipped: {', '.join(result.critical_skipped)}")
        return
    for eviction in result.evictions:
        pod = eviction.pod
        console.print(f"  [red]evicted:[/red] {pod.namespace + '/' if pod.namespace else ''}{pod.name} "
                      f"(cause {eviction.cause}, grace period override {eviction.grace_period_override}s)")
        console.print("  Event: type Warning, reason Evicted, message:")
        console.print(Text("    " + repr(eviction.message)))
        if eviction.annotations:
            console.print("  annotations:")
            for key, value in eviction.annotations.items():
                console.print(Text(f"    {key}: {value!r}"))
    if result.critical_skipped:
        console.print(f"  critical pods ranked before it but never evicted: {', '.join(result.critical_skipped)}")


def print_explanation(e: Explanation, console: Console | None = None) -> None:
    if console is None:
        console = Console(highlight=False)
        if not console.is_terminal:
            console = Console(highlight=False, width=132)  # pipes and CI logs: do not squeeze tables to 80
    console.print(f"[bold]node[/bold] {e.node_name or '(unnamed)'} — kubelet {e.kubelet_version} ({e.version_note})")
    console.print(f"config: {e.config_source}")
    console.print(f"{e.topology_note}")
    console.print(f"{e.pods_note}")
    for note in e.notes:
        console.print(f"note: {note}")
    for key, value in e.node_facts:
        console.print(f"node object: {key}: {value}")

    table = Table(title="signals against thresholds", title_justify="left")
    for col in ("signal", "available", "capacity", "threshold", "threshold quantity", "met"):
        table.add_column(col)
    for row in e.observations:
        if not row.thresholds:
            table.add_row(row.signal, row.available, row.capacity, "—", "—", "")
        for i, (desc, quantity, met) in enumerate(row.thresholds):
            table.add_row(row.signal if i == 0 else "", row.available if i == 0 else "",
                          row.capacity if i == 0 else "", desc, quantity, "[red]MET[/red]" if met else "no")
    console.print(table)
    conditions = ", ".join(e.result.node_conditions) or "none"
    console.print(f"node conditions after this pass: {conditions}")
    _verdict(console, e.result, "verdict")
    evicted = e.result.evictions[0].pod.name if e.result.evictions else None
    if e.ranking:
        resource = e.result.resource_to_reclaim or ""
        signal = e.result.threshold_to_reclaim.signal if e.result.threshold_to_reclaim else ""
        console.print(_ranking_table(f"ranking for {resource} ({signal})", e.ranking, evicted))
    if e.hypothetical is not None:
        _verdict(console, e.hypothetical, e.hypothetical_note)
        if e.hypothetical_ranking:
            hyp_evicted = e.hypothetical.evictions[0].pod.name if e.hypothetical.evictions else None
            console.print(_ranking_table("ranking", e.hypothetical_ranking, hyp_evicted))


def _result_json(result: SyncResult, ranking: tuple[RankFacts, ...]) -> dict[str, Any]:
    return {
        "error": result.error,
        "reason": result.reason,
        "node_conditions": list(result.node_conditions),
        "thresholds_met": [t.describe() for t in result.thresholds_met],
        "thresholds_actionable": [t.describe() for t in result.thresholds_actionable],
        "threshold_to_reclaim": result.threshold_to_reclaim.describe() if result.threshold_to_reclaim else None,
        "resource_to_reclaim": result.resource_to_reclaim,
        "node_event": result.node_event,
        "node_reclaim": list(result.node_reclaim),
        "evictions": [
            {
                "pod": e.pod.name,
                "namespace": e.pod.namespace,
                "uid": e.pod.uid,
                "cause": e.cause,
                "message": e.message,
                "annotations": dict(e.annotations),
                "grace_period_override": e.grace_period_override,
                "pod_status": e.pod_status,
            }
            for e in result.evictions
        ],
        "critical_skipped": list(result.critical_skipped),
        "ranking": [
            {
                "pod": f.pod,
                "namespace": f.namespace,
                "has_stats": f.has_stats,
                "exceeds_request": f.exceeds_request,
                "priority": f.priority,
                "usage": _opt(f.usage) if f.usage is not None else None,
                "request": str(f.request),
                "usage_above_request": str(f.usage_above_request) if f.usage_above_request is not None else None,
                "process_count": f.process_count,
                "critical": f.critical,
            }
            for f in ranking
        ],
    }


def explanation_json(e: Explanation) -> str:
    doc: dict[str, Any] = {
        "node": e.node_name,
        "kubelet_version": e.kubelet_version,
        "kubelet_version_source": e.version_note,
        "config": e.config_source,
        "topology": {
            "dedicated_image_fs": e.topology.dedicated_image_fs,
            "split_container_image_fs": e.topology.split_container_image_fs,
            "note": e.topology_note,
        },
        "pods": e.pods_note,
        "node_object": dict(e.node_facts),
        "notes": list(e.notes),
        "observations": [
            {
                "signal": row.signal,
                "available": row.available,
                "capacity": row.capacity,
                "thresholds": [{"threshold": d, "quantity": q, "met": m} for d, q, m in row.thresholds],
            }
            for row in e.observations
        ],
        "result": _result_json(e.result, e.ranking),
        "if_sustained": (
            {"note": e.hypothetical_note, **_result_json(e.hypothetical, e.hypothetical_ranking)}
            if e.hypothetical is not None else None
        ),
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
