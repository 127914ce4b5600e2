"""``evictlens replay``: a recording through the eviction manager, with a progress bar and a summary."""

from __future__ import annotations

import argparse
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from recordings.errors import RecordingError
from recordings.reader import open_recording
from replay.cli_args import add_kubelet_arguments, config_from_args, gates_from_args, topology_from_args
from replay.context import resolve_profile
from replay.engine import ReplayReport, replay_recording
from replay.errors import InputError


def report_json(report: ReplayReport) -> str:
    doc: dict[str, Any] = {
        "notes": list(report.notes),
        "nodes": [
            {
                "node": n.node, "kubelet_version": n.kubelet_version, "kubelet_version_source": n.version_note,
                "config": n.config_source, "passes": n.passes, "gaps": n.gaps, "errors": list(n.errors),
                "topology": {"dedicated_image_fs": n.topology.dedicated_image_fs,
                             "split_container_image_fs": n.topology.split_container_image_fs},
                "reasons": dict(n.reasons),
                "condition_changes": [{"time": t.isoformat(), "conditions": list(c)} for t, c in n.condition_changes],
                "evictions": [
                    {"time": e.time.isoformat(), "tick": e.tick, "namespace": e.namespace, "pod": e.pod, "uid": e.uid,
                     "cause": e.cause, "grace_period_override": e.grace_period_override, "message": e.message,
                     "annotations": dict(e.annotations)}
                    for e in n.predicted
                ],
            }
            for n in report.nodes
        ],
        "ground_truth": [
            {"namespace": m.real.namespace, "pod": m.real.pod, "real_message": m.real.message,
             "predicted": m.predicted is not None, "predicted_message": m.predicted.message if m.predicted else None,
             "same_message": m.same_message}
            for m in report.matches
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()


def print_report(report: ReplayReport, console: Console) -> None:
    for n in report.nodes:
        console.print(f"[bold]node[/bold] {n.node} — kubelet {n.kubelet_version} ({n.version_note}); {n.config_source}")
        console.print(f"  {n.passes} passes, {n.gaps} gaps in the recording, {len(n.predicted)} predicted evictions")
        for error in n.errors:
            console.print(f"  [red]synchronize failed:[/red] {error}")
        for when, conditions in n.condition_changes:
            console.print(f"  {when.isoformat()}  node conditions: {', '.join(conditions) or 'none'}")
        if n.predicted:
            table = Table(title=f"evictions the kubelet would make on {n.node}", title_justify="left")
            for col in ("time", "pod", "cause", "grace", "message"):
                table.add_column(col, overflow="fold")
            for e in n.predicted:
                table.add_row(e.time.isoformat(), f"{e.namespace}/{e.pod}", e.cause, f"{e.grace_period_override}s",
                              Text(repr(e.message)))
            console.print(table)
    if report.matches:
        table = Table(title="real evictions (ground truth) against the replay", title_justify="left")
        for col in ("pod", "predicted", "same message", "real message"):
            table.add_column(col, overflow="fold")
        for m in report.matches:
            table.add_row(f"{m.real.namespace}/{m.real.pod}", "yes" if m.predicted else "[red]no[/red]",
                          "yes" if m.same_message else "no", Text(repr(m.real.message)))
        console.print(table)
    for note in report.notes:
        console.print(f"note: {note}")
    predicted = len(report.predicted)
    matched = sum(1 for m in report.matches if m.predicted)
    exact = sum(1 for m in report.matches if m.same_message)
    console.print(f"{sum(n.passes for n in report.nodes)} passes over {len(report.nodes)} nodes: {predicted} predicted "
                  f"evictions; {len(report.matches)} real, {matched} predicted, {exact} with the exact message")


def run_replay(args: argparse.Namespace) -> int:
    gates = gates_from_args(args)
    try:
        rec = open_recording(args.recording)
        nodes = rec.nodes()
        total = sum(1 for n in (args.node or nodes) for t in rec.ticks(n) if t.ok)
    except RecordingError as err:
        raise InputError(str(err)) from None
    config = None
    if args.config or args.configz or args.eviction_hard or args.eviction_soft:
        config = config_from_args(args, resolve_profile(args.kubelet_version, None, gates)[0])
    console = Console(stderr=True)
    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=args.json or not console.is_terminal) as bar:
        task = bar.add_task("replay", total=total)
        report = replay_recording(rec, version=args.kubelet_version, feature_gates=gates, config=config,
                                  topology=topology_from_args(args), nodes=args.node,
                                  progress=lambda n: bar.advance(task, n))
    if args.json:
        print(report_json(report))
    else:
        out = Console(highlight=False)
        if not out.is_terminal:
            out = Console(highlight=False, width=132)
        print_report(report, out)
    return 0


def add_replay_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help="run a recording through the eviction manager and compare with the real evictions",
        description="Replay a recording tick by tick through the kubelet's eviction manager. Without "
        "configuration flags each node uses its recorded /configz (else the kubelet's defaults).",
    )
    p.add_argument("recording", help="a recording directory (evictlens record / import)")
    p.add_argument("--node", action="append", metavar="NAME", help="only this node (repeatable)")
    add_kubelet_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run_replay)
