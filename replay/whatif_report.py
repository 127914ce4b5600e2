"""A what-if comparison for people (rich tables) and on disk (``OUT/variant-N/`` + ``compare.json`` and
``compare.parquet``, written whole or not at all)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from recordings.console import plural

if TYPE_CHECKING:
    from datetime import datetime

    from rich.console import Console

    from replay.compare import Comparison, PodOutcome, VariantSummary
    from replay.results import KernelKill, ReplayResult

COMPARE_JSON = "compare.json"
COMPARE_PARQUET = "compare.parquet"


def write_output(results: list[ReplayResult], comparison: Comparison, out: Path) -> None:
    """``out/variant-N/`` per variant plus the comparison, renamed into place whole; only a previous what-if
    output (or an empty directory) is replaced."""
    import orjson

    from replay.compare import to_document
    from replay.outdir import replacing_dir, write_parquet_private, write_private
    from replay.results_io import write

    with replacing_dir(Path(out), marker=COMPARE_JSON, what="a what-if output directory") as tmp:
        for i, result in enumerate(results):
            write(result, tmp / f"variant-{i}")
        write_private(tmp / COMPARE_JSON, orjson.dumps(to_document(comparison), option=orjson.OPT_INDENT_2) + b"\n")
        write_parquet_private(comparison.frame, tmp / COMPARE_PARQUET)


def _fmt_s(seconds: float) -> str:
    s = round(seconds)
    return (
        f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"
        if s >= 3600
        else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")
    )


def _until(v: VariantSummary) -> str:
    """The table's "as recorded until": the earliest node horizon, the end, or exact (a regenerated closed loop)."""
    from replay.replay_report import fmt_time

    if v.closed_loop:
        return "exact (closed loop)"
    until = v.as_recorded_until
    return "the end" if until is None else f"[yellow]{fmt_time(until)}[/yellow]"


def horizon_lines(c: Comparison) -> list[str]:
    """One line per variant × node whose replay parts ways with the recording (RESULTS.md ``horizon``)."""
    from replay.replay_report import fmt_time

    out = []
    for v in c.variants:
        if v.closed_loop:
            out.append(
                f"#{v.index}: closed loop: regenerated from the scenario with these settings (evicted pods "
                "stop, controllers recreate): exact throughout"
            )
            continue
        for node, (when, why) in sorted(v.horizons.items(), key=lambda kv: (kv[1][0], kv[0])):
            out.append(f"#{v.index} {node}: as recorded until {fmt_time(when)}, modelled after: {why}")
    return out


def kernel_cell(v: VariantSummary) -> str:
    """The table's "kernel kills": ``✖ 1`` in red (killed anyway), ``⚠ NotReady`` and the moments memory ran out
    between passes under it, and what a counterfactual variant cannot judge (after its horizon)."""
    lines = [f"[bold red]✖ {v.kernel_kills}[/bold red]" if v.kernel_kills else "0"]
    if v.too_fast:
        lines.append(f"[red]{v.too_fast} too fast[/red]")
    if v.not_ready_nodes:
        lines.append(f"[bold red]⚠ {len(v.not_ready_nodes)} NotReady[/bold red]")
    not_judged = v.kernel_kills_not_judged + v.too_fast_not_judged
    if not_judged:
        lines.append(f"[yellow]+{not_judged} not judged[/yellow]")
    return "\n".join(lines)


def _reports(kills: tuple[KernelKill, ...]) -> str:
    """``java, pid 4001; shop/orders-jvm orders``: who each report of one kill names."""
    from replay.replay_report import kill_victim

    named = []
    for k in kills:
        if k.pod is None and k.victim is not None:
            named.append(k.victim + (f", pid {k.pid}" if k.pid is not None else ""))
        elif k.pod is not None or k.victim is None:
            named.append(kill_victim(k))
    return "; ".join(dict.fromkeys(named))


def kernel_lines(c: Comparison) -> list[str]:
    """Per variant the kernel kills first, or NotReady, or memory ran out between passes; and what is not judged."""
    from replay.replay_report import fmt_time

    out = []
    for v in c.variants:
        k = v.first_kill
        if k is not None:
            before = (
                "no eviction before it"
                if v.first_eviction is None or v.first_eviction > k.time
                else f"after its first eviction at {fmt_time(v.first_eviction)}"
            )
            also = f" ({plural(v.kernel_kills, 'kernel kill')} in all)" if v.kernel_kills > 1 else ""
            out.append(
                f"#{v.index}: the kernel kills first, at {fmt_time(k.time)} on {k.node or '?'} "
                f"({_reports(v.first_kill_reports or (k,))}) — {before}{also}"
            )
        if v.too_fast:
            out.append(
                f"#{v.index}: memory ran out between two kubelet passes {plural(v.too_fast, 'time')} "
                "(too fast for the kubelet's loop; `evictlens replay` shows each)"
            )
        for node in v.not_ready_nodes:
            t = next(t for t in v.not_ready if t.node == node)
            why = f" ({t.reason})" if t.reason else ""
            out.append(f"#{v.index} {node}: Ready {t.status} at {fmt_time(t.time)}{why}: NotReady")
        apart = [plural(v.kernel_kills_not_judged, "real kernel kill")] if v.kernel_kills_not_judged else []
        if v.too_fast_not_judged:
            apart.append(f"memory ran out between passes {plural(v.too_fast_not_judged, 'time')}")
        if apart:
            out.append(
                f"#{v.index}: not judged, after its horizon (the recording no longer shows its world there): "
                + ", ".join(apart)
            )
    return out


def pod_cell(p: PodOutcome, index: int) -> str:
    """A pod in one variant: its first eviction's time, ``OOMKilled`` and when (red; yellow and "not judged" after
    the variant's horizon), both in time order, or —."""
    from replay.replay_report import fmt_time

    e, k = p.evictions[index], p.kill(index)
    parts: list[tuple[datetime, str]] = []
    if e is not None:
        parts.append((e.time, fmt_time(e.time)))
    if k is not None:
        judged = p.kills_judged[index]
        text = f"OOMKilled {fmt_time(k.time)}"
        parts.append((k.time, f"[bold red]{text}[/bold red]" if judged else f"[yellow]{text} (not judged)[/yellow]"))
    parts.sort(key=lambda part: part[0])
    return "\n".join(text for _, text in parts) or "—"


def print_comparison(c: Comparison, *, output: str | None = None, console: Console | None = None) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from replay.replay_report import fmt_time, marked_diff

    out = console or Console(highlight=False)
    if console is None and not out.is_terminal:
        out = Console(highlight=False, width=160)
    table = Table(title=f"what if: {c.recording}", title_justify="left")
    for col in (
        "#",
        "variant",
        "kubelet",
        "evictions",
        "pods",
        "kernel kills",
        "first eviction",
        "pressure",
        "real predicted",
        "not coming back",
        "as recorded until",
    ):
        table.add_column(col, overflow="fold", justify="right" if col in ("#", "evictions", "pods") else "left")
    for v in c.variants:
        pressure = ", ".join(f"{k} {_fmt_s(s)}" for k, s in v.pressure_s.items()) or "none"
        real = f"{v.matched}/{v.real} ({v.matched_exact} exact message)" if v.real else "— (none recorded)"
        gone = f"[red]{v.not_coming_back}[/red]" if v.not_coming_back else "0"
        table.add_row(
            str(v.index),
            v.label,
            ",".join(v.kubelet_versions),
            str(v.evictions),
            str(v.pods_evicted),
            kernel_cell(v),
            fmt_time(v.first_eviction),
            pressure,
            real,
            gone,
            _until(v),
        )
    out.print(table)
    for line in horizon_lines(c):
        out.print(line, markup=False, soft_wrap=True)
    for line in kernel_lines(c):
        out.print(line, markup=False, soft_wrap=True, style="red" if "not judged" not in line else "yellow")
    if not c.pods:
        out.print("every variant evicts the same pods at the same times with the same messages")
    else:
        pods = Table(
            title="pods whose fate differs (first eviction or kernel OOM kill per variant)", title_justify="left"
        )
        pods.add_column("pod", overflow="fold")
        for v in c.variants:
            pods.add_column(f"#{v.index}", no_wrap=True)
        pods.add_column("impact", overflow="fold")
        for p in c.pods:
            impact = p.impact if p.comes_back is not False else f"[red]{p.impact}[/red]"
            pods.add_row(f"{p.namespace}/{p.pod}", *(pod_cell(p, i) for i in range(len(p.evictions))), impact or "—")
        out.print(pods)
        differing = [p for p in c.pods if p.messages_differ]
        for p in differing:
            base = next(e for e in p.evictions if e is not None)
            msgs = Table(
                title=f"messages for {p.namespace}/{p.pod} (changes against #{p.evictions.index(base)} marked)",
                title_justify="left",
            )
            msgs.add_column("#", justify="right")
            msgs.add_column("variant", overflow="fold")
            msgs.add_column("message", overflow="fold")
            for v, e in zip(c.variants, p.evictions, strict=True):
                if e is not None:
                    msgs.add_row(
                        str(v.index),
                        v.label,
                        marked_diff(base.message, e.message) if e is not base else Text(e.message),
                    )
            out.print(msgs)
    where = f"; results in {output}" if output else ""
    killed = ", ".join(f"#{v.index} {v.kernel_kills}" for v in c.variants)
    out.print(
        f"{len(c.variants)} variants, {len(c.pods)} pods whose fate differs; kernel kills per variant: {killed}{where}",
        markup=False,
    )
