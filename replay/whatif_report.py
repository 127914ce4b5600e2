"""A what-if comparison for people (rich tables) and on disk (``OUT/variant-N/`` + ``compare.json`` and
``compare.parquet``, written whole or not at all)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from replay.compare import Comparison, VariantSummary
    from replay.results import ReplayResult

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
            fmt_time(v.first_eviction),
            pressure,
            real,
            gone,
            _until(v),
        )
    out.print(table)
    for line in horizon_lines(c):
        out.print(line, markup=False, soft_wrap=True)
    if not c.pods:
        out.print("every variant evicts the same pods at the same times with the same messages")
    else:
        pods = Table(title="pods whose fate differs (first eviction per variant)", title_justify="left")
        pods.add_column("pod", overflow="fold")
        for v in c.variants:
            pods.add_column(f"#{v.index}", no_wrap=True)
        pods.add_column("impact", overflow="fold")
        for p in c.pods:
            impact = p.impact if p.comes_back is not False else f"[red]{p.impact}[/red]"
            pods.add_row(f"{p.namespace}/{p.pod}", *(fmt_time(e.time) if e else "—" for e in p.evictions), impact)
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
    out.print(f"{len(c.variants)} variants, {len(c.pods)} pods whose fate differs{where}", markup=False)
