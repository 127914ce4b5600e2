"""A tuning search for people (the Pareto front as a table, the recommended KubeletConfiguration, the evidence)
and on disk (``OUT/variant-N/`` as ``whatif -o`` writes them, ``tune.json``, ``recommended.yaml``; whole or not
at all)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from replay.tune import Outcome, Row

TUNE_JSON = "tune.json"
SNIPPET = "recommended.yaml"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def snippet(document: Mapping[str, Any]) -> str:
    """A KubeletConfiguration as YAML, every value quoted as the kubelet's docs write them (``"10%"``)."""
    lines = []
    for key, value in document.items():
        if isinstance(value, Mapping):
            lines.append(f"{key}:")
            lines += [f"  {k}: {_scalar(v)}" for k, v in value.items()]
        elif key in ("apiVersion", "kind"):
            lines.append(f"{key}: {value}")
        else:
            lines.append(f"{key}: {_scalar(value)}")
    return "\n".join(lines) + "\n"


def recommended_snippet(outcome: Outcome) -> str | None:
    pick = outcome.recommended
    if pick is None or pick.candidate is None:
        return None
    return snippet(pick.candidate.document())


def write_output(outcome: Outcome, out: Path) -> None:
    """``out/variant-N/`` per row (0: the current settings; ``evictlens tui out/variant-N`` opens one) with
    ``compare.json``/``compare.parquet``, the layout ``whatif -o`` writes, plus ``tune.json`` and, with a
    recommendation, ``recommended.yaml``; renamed into place whole, files 0600. Only an earlier tune output (or an
    empty directory) is replaced."""
    import orjson

    from replay.compare import compare
    from replay.compare import to_document as compare_document
    from replay.outdir import replacing_dir, write_parquet_private, write_private
    from replay.results_io import write
    from replay.tune import to_document
    from replay.whatif_report import COMPARE_JSON, COMPARE_PARQUET

    text = recommended_snippet(outcome)
    with replacing_dir(Path(out), marker=TUNE_JSON, what="a tune output directory") as tmp:
        for i, result in enumerate(outcome.results):
            write(result, tmp / f"variant-{i}")
        comparison = compare(list(outcome.results))  # as whatif -o writes it: variant 0 the current settings
        write_private(
            tmp / COMPARE_JSON, orjson.dumps(compare_document(comparison), option=orjson.OPT_INDENT_2) + b"\n"
        )
        write_parquet_private(comparison.frame, tmp / COMPARE_PARQUET)
        if text is not None:
            write_private(tmp / SNIPPET, text.encode())
        doc = to_document(outcome, text)
        write_private(tmp / TUNE_JSON, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def _duration(seconds: float) -> str:
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _row_cells(outcome: Outcome, r: Row, picked: bool) -> list[str]:
    from replay.replay_report import fmt_bytes, fmt_time

    kills = f"[red]{r.kernel_kills}[/red]" if r.kernel_kills else "0"
    cells = [("→ " if picked else "") + str(r.index), r.label, kills]
    if not outcome.closed_loop:
        cells.append(f"[red]{r.oom_risk}[/red]" if r.oom_risk else "0")
    if any(row.not_ready for row in outcome.rows):
        cells.append(f"[red]{r.not_ready}[/red]" if r.not_ready else "0")
    cells += [
        str(r.evictions),
        f"[yellow]{r.not_coming_back}[/yellow]" if r.not_coming_back else "0",
        _duration(r.pressure_s),
        fmt_bytes(r.withheld_bytes),
    ]
    if not outcome.closed_loop:
        until = "the end" if r.as_recorded_until is None else fmt_time(r.as_recorded_until)
        cells.append(until + (f" ({r.not_judged} not judged)" if r.not_judged else ""))
    return cells


def print_outcome(
    outcome: Outcome, *, output: str | None = None, console: Console | None = None, replay_as: str | None = None
) -> None:
    """The front with the current settings' row first, the evidence, the snippet. ``replay_as``: the command that
    replays the snippet (``evictlens replay --sample NAME --config FILE`` when a bundled scenario was tuned)."""
    from rich.console import Console
    from rich.table import Table

    from replay.tune import RULE, evidence

    out = console or Console(highlight=False)
    if console is None and not out.is_terminal:
        out = Console(highlight=False, width=160)
    mode = "closed loop, exact" if outcome.closed_loop else "counterfactual, as recorded until each horizon"
    title = "Pareto front" if outcome.front else "no candidate is eligible: the closest"
    table = Table(title=f"tune: {outcome.recording} ({mode}) — {title}", title_justify="left")
    columns = ["#", "settings", "kernel kills"]
    if not outcome.closed_loop:
        columns.append("OOM risk")
    if any(r.not_ready for r in outcome.rows):
        columns.append("node NotReady")
    columns += ["evictions", "won't come back", "under pressure", "withheld"]
    if not outcome.closed_loop:
        columns.append("as recorded until")
    for col in columns:
        table.add_column(col, overflow="fold", justify="left" if col in ("settings", "as recorded until") else "right")
    pick = outcome.recommended
    table.add_row(*_row_cells(outcome, outcome.rows[0], False), end_section=True)
    shown = (
        outcome.front
        or tuple(  # no front: the closest candidates instead
            sorted(outcome.rows[1:], key=lambda r: (r.kernel_kills, r.oom_risk or 0, r.not_ready, r.rank_key()))[:3]
        )
    )
    for r in shown:
        table.add_row(*_row_cells(outcome, r, r is pick))
    out.print(table)
    eligible = sum(1 for r in outcome.rows[1:] if r.eligible)
    out.print(
        f"{len(outcome.rows) - 1} candidates ({outcome.sampling}); {eligible} with 0 kernel kills"
        + (" and no node NotReady" if outcome.closed_loop else " and 0 OOM risk")
        + f"; {len(outcome.front)} on the Pareto front of evictions, pods that won't come back, node time under "
        "pressure and memory withheld from pods (capacity − allocatable, summed over nodes)",
        markup=False,
        soft_wrap=True,
    )
    if not outcome.closed_loop:
        out.print(
            "OOM risk: moments memory.available fell from above the candidate's hard threshold to exhaustion between "
            "two recorded passes (too fast for the kubelet's loop), before its horizon",
            markup=False,
            soft_wrap=True,
        )
    for note in outcome.notes:
        out.print(f"note: {note}", markup=False, soft_wrap=True)
    for line in evidence(outcome):
        out.print(line, markup=False, soft_wrap=True)
    if pick is None:
        from replay.tune import unavoidable

        same = unavoidable(outcome.rows)
        if same:
            first = same[0]
            out.print(
                f"{len(same)} kill(s) happen at the same moment under every candidate and the current settings (the "
                f"first: {first.what} on {first.node} at {first.time.strftime('%Y-%m-%dT%H:%M:%SZ')}): no setting "
                "searched prevents them; a container killed at its own memory limit needs a higher limit (or its "
                "pod evicted first)",
                markup=False,
                soft_wrap=True,
            )
        worst = min(outcome.rows[1:], key=lambda r: (r.kernel_kills, r.oom_risk or 0, r.not_ready, r.index))
        out.print(
            f"no candidate has 0 kernel kills{' and no node NotReady' if outcome.closed_loop else ' and 0 OOM risk'}: "
            f"the least is #{worst.index} ({worst.label}) with {worst.kernel_kills} kill(s)"
            + (f", {worst.not_ready} NotReady" if outcome.closed_loop else f" and {worst.oom_risk} OOM risk")
            + "; widen the search (a higher --memory-hard, a --memory-soft), reserve memory for the system, or "
            "set memory limits on the pods that grow",
            markup=False,
            soft_wrap=True,
        )
    else:
        out.print(f"recommended: #{pick.index} ({pick.label}); rule: {RULE}", markup=False, soft_wrap=True)
        text = recommended_snippet(outcome) or ""
        how = replay_as or f"evictlens replay {outcome.recording} --config FILE"
        out.print(f"# KubeletConfiguration; replay it: {how}", markup=False)
        out.print(text.rstrip("\n"), markup=False, soft_wrap=True)
    if output:
        opened = pick.index if pick else 0
        out.print(
            f"results in {output}: variant-N/ per candidate (evictlens tui {output}/variant-{opened}), {TUNE_JSON}"
            + (f", {SNIPPET}" if pick else ""),
            markup=False,
            soft_wrap=True,
        )
