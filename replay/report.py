"""Rendering an :class:`~replay.explain.Explanation`: rich tables for people, one JSON document for tools."""

from __future__ import annotations

from typing import Any

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kube.quantity import Quantity
from recordings.console import make_console, print_table
from replay.explain import Explanation, ObservationRow
from replay.impact import owner_impact
from replay.kubelet.api import Pod
from replay.kubelet.duration import format_duration
from replay.kubelet.manager import SyncResult
from replay.kubelet.map_order import describe_alternatives
from replay.kubelet.ranking import RankFacts


def _opt(value: object) -> str:
    return "—" if value is None else str(value)


def _quantity(text: str) -> Quantity | None:
    try:
        return Quantity.parse(text)
    except ValueError:
        return None


def _percent(part: Quantity, whole: Quantity) -> str:
    share = 100 * part.int_value() / whole.int_value() if whole.int_value() else 0.0
    return f"{share:.3g}%" if share < 100 else f"{share:.0f}%"


def _with_share(available: str, capacity: str) -> str:
    """``49Gi`` → ``49Gi (48.2%)``: the share of capacity, to set beside percentage thresholds."""
    part, whole = _quantity(available), _quantity(capacity)
    if part is None or whole is None or not whole.int_value():
        return available
    return f"{available} ({_percent(part, whole)})"


def _threshold_quantity(row: ObservationRow, desc: str, quantity: str) -> str:
    """A percentage threshold as its percentage and the bytes it resolves to: ``10% = 10508821455``.

    The percentage is the threshold's own text, as ``Threshold.describe()`` writes it (``signal<10% (...)``).
    """
    value = desc.removeprefix(f"{row.signal}<").split(" ", 1)[0]
    if desc.startswith(f"{row.signal}<") and value.endswith("%"):
        return f"{value} = {quantity}"
    return quantity


def _ranking_table(title: str, facts: tuple[RankFacts, ...], evicted: str | None) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("#", "pod", "stats", "exceeds request", "priority", "usage", "request", "usage − request", "note"):
        table.add_column(
            col,
            justify="right" if col in ("#", "priority") else "left",
            overflow="fold",
            no_wrap=col in ("pod", "usage", "request", "usage − request"),
        )
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
        table.add_row(
            str(i),
            f"{f.namespace}/{f.pod}" if f.namespace else f.pod,
            "yes" if f.has_stats else "no",
            exceeds,
            str(f.priority),
            usage,
            str(f.request),
            _opt(f.usage_above_request),
            why,
        )
    return table


def eviction_impact(pod: Pod) -> tuple[bool | None, str]:
    """Whether the evicted pod comes back, and why — the impact line a replay prints (replay.impact)."""
    if not pod.owner_kinds:
        return owner_impact(None, None)
    names = pod.owner_names or ("",) * len(pod.owner_kinds)
    return owner_impact(pod.owner_kinds[0], names[0] or None)


def _verdict(console: Console, result: SyncResult, heading: str) -> None:
    console.print(f"[bold]{heading}[/bold]")
    if result.error:
        console.print(f"  [red]synchronize failed:[/red] {result.error}")
        return
    if result.node_event:
        console.print(f"  node event (Warning, EvictionThresholdMet): {result.node_event}")
    if result.node_reclaim:
        console.print(f"  node-level reclaim first: {', '.join(result.node_reclaim)}")
    if result.map_order_alternatives and result.threshold_to_reclaim is not None:
        note = describe_alternatives(result.threshold_to_reclaim, result.map_order_alternatives)
        console.print(Text(f"  note: {note}", style="yellow"))
    if not result.evictions:
        console.print(f"  [green]no pod would be evicted[/green]: {result.reason}")
        if result.critical_skipped:
            console.print(f"  critical pods skipped: {', '.join(result.critical_skipped)}")
        return
    for eviction in result.evictions:
        pod = eviction.pod
        console.print(
            f"  [red]evicted:[/red] {pod.namespace + '/' if pod.namespace else ''}{pod.name} "
            f"(cause {eviction.cause}, grace period override {eviction.grace_period_override}s)"
        )
        console.print("  Event: type Warning, reason Evicted, message:")
        console.print(Text("    " + repr(eviction.message)))
        if eviction.annotations:
            console.print("  annotations:")
            for key, value in eviction.annotations.items():
                console.print(Text(f"    {key}: {value!r}"))
        comes_back, impact = eviction_impact(pod)
        console.print(Text.assemble("  impact: ", (impact, "" if comes_back else "bold red")))
    if result.critical_skipped:
        console.print(f"  critical pods ranked before it but never evicted: {', '.join(result.critical_skipped)}")


def print_explanation(e: Explanation, console: Console | None = None) -> None:
    if console is None:
        console = make_console()
    console.print(f"[bold]node[/bold] {e.node_name or '(unnamed)'} — kubelet {e.kubelet_version} ({e.version_note})")
    if e.moment:
        console.print(f"moment: {e.moment}")
    console.print(f"config: {e.config_source}")
    console.print(f"{e.topology_note}")
    console.print(f"{e.pods_note}")
    for note in e.notes:
        console.print(f"note: {note}")
    for key, value in e.node_facts:
        console.print(f"node object: {key}: {value}")

    table = Table(title="signals against thresholds", title_justify="left")
    for col in ("signal", "available", "capacity", "threshold", "threshold quantity", "met"):
        table.add_column(col, overflow="fold")
    for row in e.observations:
        available = _with_share(row.available, row.capacity)
        if not row.thresholds:
            table.add_row(row.signal, available, row.capacity, "—", "—", "")
        for i, (desc, quantity, met) in enumerate(row.thresholds):
            table.add_row(
                row.signal if i == 0 else "",
                available if i == 0 else "",
                row.capacity if i == 0 else "",
                desc,
                _threshold_quantity(row, desc, quantity),
                "[red]MET[/red]" if met else "no",
            )
    print_table(console, table)
    conditions = ", ".join(e.result.node_conditions) or "none"
    console.print(f"node conditions after this pass: {conditions}")
    _verdict(console, e.result, "verdict")
    evicted = e.result.evictions[0].pod.name if e.result.evictions else None
    if e.ranking:
        resource = e.result.resource_to_reclaim or ""
        signal = e.result.threshold_to_reclaim.signal if e.result.threshold_to_reclaim else ""
        print_table(console, _ranking_table(f"ranking for {resource} ({signal})", e.ranking, evicted))
    _print_state(console, e)
    if e.hypothetical is not None:
        _verdict(console, e.hypothetical, e.hypothetical_note)
        if e.hypothetical_ranking:
            hyp_evicted = e.hypothetical.evictions[0].pod.name if e.hypothetical.evictions else None
            print_table(console, _ranking_table("ranking", e.hypothetical_ranking, hyp_evicted))


def _print_state(console: Console, e: Explanation) -> None:
    """What the manager carries to the next pass: streaks, grace periods running, conditions held."""
    state = e.state
    if state is None:
        return
    for desc, since in state.thresholds_first_observed:
        console.print(f"manager: {desc} met since {since.isoformat()}", markup=False)
    for desc, left in state.grace_remaining:
        console.print(f"manager: {desc} waits {format_duration(left)} more for its grace period", markup=False)
    for condition, until in state.conditions_held:
        console.print(
            f"manager: {condition} held by the pressure transition period until {until.isoformat()}", markup=False
        )


def _state_json(e: Explanation) -> dict[str, Any] | None:
    if e.state is None:
        return None
    return {
        "thresholds_first_observed": {d: t.isoformat() for d, t in e.state.thresholds_first_observed},
        "grace_remaining_ns": dict(e.state.grace_remaining),
        "conditions_last_observed": {c: t.isoformat() for c, t in e.state.conditions_last_observed},
        "conditions_held_until": {c: t.isoformat() for c, t in e.state.conditions_held},
    }


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
        "map_order_alternatives": [t.describe() for t in result.map_order_alternatives],
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
                "impact": eviction_impact(e.pod)[1],
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
        "moment": e.moment or None,
        "manager_state": _state_json(e),
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
            if e.hypothetical is not None
            else None
        ),
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
