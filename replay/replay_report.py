"""Rendering a :class:`~replay.results.ReplayResult` for people: per-node settings, evictions, ground truth.

Values stay integers in the model; this is the only place they become text.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from recordings.console import make_console, print_table
from replay.kernel import distinct_kills
from replay.kubelet.duration import format_duration
from replay.results import Eviction, KernelKill, NodeResult, ReplayResult, ThresholdSetting, TooFast
from replay.textdiff import diff_segments

_UNITS = ("", "Ki", "Mi", "Gi", "Ti", "Pi")


def fmt_bytes(value: int | None) -> str:
    """``1610612736`` → ``1.5Gi``; exact below 1Ki."""
    if value is None:
        return "—"
    n, unit = float(value), 0
    while abs(n) >= 1024 and unit < len(_UNITS) - 1:
        n /= 1024
        unit += 1
    return f"{value}" if unit == 0 else f"{n:.4g}{_UNITS[unit]}"


def fmt_time(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def fmt_threshold(t: ThresholdSetting) -> str:
    value = fmt_bytes(t.quantity) if t.quantity is not None else f"{(t.percentage or 0) * 100:g}%"
    kind = "hard" if t.hard else f"soft, grace {format_duration(t.grace_period_ns)}"
    reclaim = ""
    if t.min_reclaim_quantity or t.min_reclaim_percentage:
        mr = (
            fmt_bytes(t.min_reclaim_quantity)
            if t.min_reclaim_quantity is not None
            else f"{(t.min_reclaim_percentage or 0) * 100:g}%"
        )
        reclaim = f", min reclaim {mr}"
    return f"{t.signal}<{value} ({kind}{reclaim})"


def marked_diff(old: str, new: str) -> Text:
    """``old`` turned into ``new``: ``[-removed-]`` in red, ``{+added+}`` in green (marks survive a pipe)."""
    out = Text()
    for kind, text in diff_segments(old, new):
        if kind == "same":
            out.append(text)
        elif kind == "old":
            out.append(f"[-{text}-]", style="red")
        else:
            out.append(f"{{+{text}+}}", style="bold green")
    return out


def in_force(thresholds: Sequence[ThresholdSetting]) -> list[ThresholdSetting]:
    """The thresholds that can be met, each once: UpdateContainerFsThresholds (helpers.go) adds hard and soft
    ``containerfs.*`` copies even of a nodefs/imagefs threshold nobody configured — all zero, no operator, never
    met — and those read as ``containerfs.available<0% (hard)`` twice; they stay in the results, not here."""
    seen: set[str] = set()
    out = []
    for t in thresholds:
        text = fmt_threshold(t)
        if t.operator and text not in seen:
            seen.add(text)
            out.append(t)
    return out


def _settings_table(n: NodeResult) -> Table:
    table = Table(title=f"effective settings of {n.node}", title_justify="left", show_header=True, box=None)
    table.add_column("setting", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("from", overflow="fold")
    src = n.settings_sources
    table.add_row("kubelet version", n.kubelet_version, n.version_source)
    fields = ["evictionHard"]
    if any(not t.hard for t in n.thresholds):
        fields += ["evictionSoft", "evictionSoftGracePeriod"]
    if any(t.min_reclaim_quantity or t.min_reclaim_percentage for t in n.thresholds):
        fields.append("evictionMinimumReclaim")
    table.add_row(
        "thresholds",
        "\n".join(fmt_threshold(t) for t in in_force(n.thresholds)) or "none",
        "\n".join(f"{f}: {src[f]}" for f in fields if src.get(f)),
    )
    table.add_row(
        "pressure transition period",
        format_duration(n.pressure_transition_period_ns),
        src.get("evictionPressureTransitionPeriod", ""),
    )
    table.add_row("max pod grace period", f"{n.max_pod_grace_period_s}s", src.get("evictionMaxPodGracePeriod", ""))
    fs = "imagefs on its own device" if n.dedicated_image_fs else "imagefs shares nodefs"
    if n.split_container_image_fs:
        fs += ", containerfs split"
    table.add_row("filesystems", fs, n.topology_source)
    return table


def overcommit_lines(result: ReplayResult, n: NodeResult) -> list[str]:
    """Σ requests / Σ limits against allocatable at the node's first eviction (else its last pass), and how
    long the node had been overcommitted before that eviction."""
    import polars as pl

    df = result.overcommit.filter(pl.col("node") == n.node).collect()
    if df.is_empty():
        return []
    first = min((e.time for e in result.evictions if e.node == n.node), default=None)
    at = df.filter(df["time"] <= first) if first is not None else df
    if at.is_empty():
        return []
    tick = at["tick"].max()
    lines = []
    for row in at.filter(at["tick"] == tick).iter_rows(named=True):
        alloc = row["allocatable"]
        ratio = f" ({row['limits'] / alloc:.2f}× allocatable)" if alloc else ""
        over = alloc is not None and row["limits"] > alloc
        lead = n.overcommit_lead_s.get(row["resource"])
        when = "at the first eviction" if first is not None else "at the last pass"
        text = (
            f"  {row['resource']} {when}: requests {fmt_bytes(row['requests'])}, limits {fmt_bytes(row['limits'])}"
            f"{ratio} of allocatable {fmt_bytes(alloc)}"
        )
        if row["pods_without_limit"]:
            text += f"; {row['pods_without_limit']} pods without a limit"
        if over and lead is not None:
            text += f"; overcommitted for {lead:g}s before it"
        elif over:
            text += "; overcommitted"
        lines.append(text)
    return lines


def impact_lines(e: Eviction, *, next_in_line: int = 3) -> list[Text]:
    """Whether the pod comes back, and how close the next pods in the ranking came to being chosen."""
    style = "" if e.comes_back else "bold red"
    out = [Text.assemble("  impact: ", (e.impact or "not known", style))]
    evicted = next((r for r in e.ranking if r.decided_by == "evicted"), None)
    if evicted is not None:
        unit = "processes" if e.signal == "pid.available" else "bytes"
        for r in [r for r in e.ranking if r.rank > evicted.rank][:next_in_line]:
            how = r.decided_by
            if r.margin is not None and how in ("usage", "processes"):
                how += f", {fmt_bytes(r.margin) if unit == 'bytes' else r.margin} short"
            elif r.margin is not None and how == "priority":
                how += f" {r.margin:+d}"
            out.append(Text(f"  rank {r.rank} {r.namespace}/{r.pod}: kept by {how} ({r.reason})"))
    return out


def map_order_note(e: Eviction) -> str:
    """An eviction that is one of several decisions the kubelet could have made (replay.kubelet.map_order)."""
    n = len(e.map_order_alternatives) + 1
    return (
        f"one of {n} decisions the real kubelet could have made at this pass: it could as well have acted on "
        f"{', '.join(e.map_order_alternatives)} (Go map order: helpers.go thresholdsMetGracePeriod; byEvictionPriority "
        f"orders only memory first), with another outcome (node-level reclaim first or not, the message's threshold "
        "sentence, the ranking or the starved resource); the replay takes the configured order"
    )


def print_result(result: ReplayResult, *, output: str | None = None, console: Console | None = None) -> None:
    out = console or make_console()
    for n in result.nodes:
        out.print(
            f"[bold]node {n.node}[/bold] — kubelet {n.kubelet_version}: {n.passes} passes, {n.gaps} gaps, "
            f"{sum(1 for e in result.evictions if e.node == n.node)} predicted evictions"
        )
        print_table(out, _settings_table(n))
        for error in n.errors:
            out.print(f"  [red]synchronize failed:[/red] {error}")
        for row in result.conditions.filter(result.conditions["node"] == n.node).iter_rows(named=True):
            out.print(
                f"  {row['condition']} from {fmt_time(row['from'])} to "
                f"{fmt_time(row['to']) if row['to'] else 'the end of the recording'}"
            )
        for line in overcommit_lines(result, n):
            out.print(line, markup=False)
        if n.horizon is not None:
            out.print(f"  as recorded until {fmt_time(n.horizon)}, modelled after: {n.horizon_reason}", markup=False)
        for r in result.ready_transitions:
            if r.node == n.node:
                why = f" ({r.reason}{': ' + r.message if r.message else ''})" if r.reason else ""
                out.print(f"  Ready {r.status} from {fmt_time(r.time)}{why}", markup=False)
        for race in n.too_fast:
            out.print(f"  [bold red]{too_fast_text(race, result.interval_seconds)}[/bold red]")
    if result.evictions:
        table = Table(title="evictions the kubelet would make", title_justify="left")
        for col in ("#", "time", "node", "pod", "cause", "observed < threshold", "grace"):
            table.add_column(col, overflow="fold", no_wrap=col in ("#", "time"))
        for e in result.evictions:
            values = (
                f"{fmt_bytes(e.observed_available)} < {fmt_bytes(e.threshold_value)}"
                if e.threshold_value is not None
                else "limit exceeded"
            )
            table.add_row(
                str(e.id),
                fmt_time(e.time),
                e.node,
                f"{e.namespace}/{e.pod}",
                e.cause,
                values,
                f"{e.grace_period_override}s",
            )
        print_table(out, table)
        for e in result.evictions:
            out.print(f"[bold]#{e.id}[/bold] {e.namespace}/{e.pod} — Event (Warning, Evicted) message:")
            out.print(Text("  " + e.message), soft_wrap=True)
            for key, value in e.annotations.items():
                out.print(Text(f"  {key}: {value}"), soft_wrap=True)
            for impact in impact_lines(e):
                out.print(impact, soft_wrap=True)
            if e.map_order_alternatives:
                out.print(Text(f"  note: {map_order_note(e)}", style="yellow"), soft_wrap=True)
    if result.kernel_kills:
        print_table(out, kernel_kills_table(result.kernel_kills))
    if result.matches:
        table = Table(title="real evictions (ground truth) against the replay", title_justify="left")
        for col in ("pod", "predicted", "in time", "same message", "real message ([-only real-] {+only predicted+})"):
            table.add_column(col, overflow="fold")
        predicted = {e.id: e for e in result.evictions}
        for m in result.matches:
            hit = predicted.get(m.predicted_id) if m.predicted_id is not None else None
            text = Text(repr(m.real.message))
            if hit is not None and not m.same_message and m.real.message is not None:
                text = marked_diff(m.real.message, hit.message)
            in_time = {None: "—", True: "yes", False: "[red]no[/red]"}[m.within_interval]
            table.add_row(
                f"{m.real.namespace}/{m.real.pod}",
                "yes" if m.same_pod else "[red]no[/red]",
                in_time,
                "yes" if m.same_message else "no",
                text,
            )
        print_table(out, table)
    for note in result.notes:
        out.print(f"note: {note}", markup=False)
    where = f"; results in {output}" if output else ""
    out.print(
        f"{sum(n.passes for n in result.nodes)} passes over {len(result.nodes)} nodes: "
        f"{len(result.evictions)} predicted evictions; {ground_truth_summary(result)}{where}",
        markup=False,
    )


def kill_victim(k: KernelKill) -> str:
    """Who the kernel killed: ``ns/pod container`` or the SystemOOM event's process."""
    if k.pod is not None:
        return f"{k.namespace}/{k.pod} {k.container or ''}".rstrip()
    if k.victim is not None:
        return f"process {k.victim}" + (f" (pid {k.pid})" if k.pid is not None else "")
    return "a process (not named)"


def kernel_kills_table(kills: Sequence[KernelKill]) -> Table:
    """The kernel's kills (ground truth), one row each, next to the evictions."""
    table = Table(title="kernel OOM kills (ground truth: the kernel acted, not the kubelet)", title_justify="left")
    for col in ("time", "node", "kind", "killed", "details"):
        table.add_column(col, overflow="fold", no_wrap=col == "time")
    for k in kills:
        if k.kind == "OOMKilled":
            details = f"exit code {k.exit_code if k.exit_code is not None else '—'}"
            if k.restart_count is not None:
                details += f", restarts {k.restart_count}"
        else:
            details = k.message or ""
        if k.count > 1:
            details += f" (×{k.count})"
        table.add_row(fmt_time(k.time), k.node or "—", k.kind, kill_victim(k), details)
    return table


def too_fast_text(t: TooFast, interval_seconds: float | None) -> str:
    """``too fast for a 10 s loop: 1.2Gi in 8 s (memory.available 1.3Gi at 10:00:00Z, above 100Mi; …)``."""
    loop = round(interval_seconds if interval_seconds else (t.to_time - t.from_time).total_seconds(), 1)
    above = f", above {fmt_bytes(t.threshold_value)}" if t.threshold_value is not None else ""
    then = (
        f"{t.kills} kernel kill{'' if t.kills == 1 else 's'} before the next pass"
        if t.kills
        else f"{fmt_bytes(t.to_available)} at {fmt_time(t.to_time)}"
    )
    return (
        f"too fast for a {loop:g} s loop: {fmt_bytes(t.fell_bytes)} in {round(t.seconds, 1):g} s ({t.signal} "
        f"{fmt_bytes(t.from_available)} at {fmt_time(t.from_time)}{above}; then {then})"
    )


def ground_truth_summary(result: ReplayResult) -> str:
    """``3 real evictions: 2 matched by the replay, 1 with the exact message`` — "predicted" names the replay's
    own evictions only; admission rejections are counted apart, never as real evictions."""
    real = len(result.matches)
    matched = sum(1 for m in result.matches if m.same_pod)
    exact = sum(1 for m in result.matches if m.same_message)
    text = f"{real} real eviction{'' if real == 1 else 's'}"
    if real:
        text += f": {matched} matched by the replay, {exact} with the exact message"
    refused = len(result.admission_rejections)
    if refused:
        text += f"; {refused} admission rejection{'' if refused == 1 else 's'} (not evictions, not scored)"
    # a SystemOOM Event and the OOMKilled container it names are one kill, told twice
    kills = len(distinct_kills(result.kernel_kills))
    if kills:
        text += f"; {kills} kernel OOM kill{'' if kills == 1 else 's'}"
    races = sum(len(n.too_fast) for n in result.nodes)
    if races:
        text += f"; memory ran out between two passes {races} time{'' if races == 1 else 's'}"
    return text
