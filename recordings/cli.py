"""Command-line subcommands ``record``, ``import``, ``pack``, ``unpack`` and ``info``.

``replay.cli`` mounts them (one ``add_*_parser`` per command, so it builds only the one it
runs); ``python -m recordings.cli`` runs them standalone.  Errors are not caught here: both
hosts end every command at the one CLI edge, :func:`recordings.cli_edge.run_command`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from .cli_edge import OneLineParser, SubParsers, add_debug_argument, run_command


def cmd_import(args: argparse.Namespace) -> int:
    if args.prometheus:
        from .prometheus.command import run_prometheus_import

        return run_prometheus_import(args)
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .importer import import_files

    started = time.monotonic()
    console = Console(stderr=True)
    columns = (TextColumn("{task.description:9}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True, disable=not console.is_terminal) as bar:
        tasks: dict[str, Any] = {}

        def progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        from kube.errors import InputError

        if not args.files:
            raise InputError("give the files to import, or --prometheus URL", source="import")
        if args.node and len(args.node) > 1:
            raise InputError("give one --node when importing files", source="--node")
        _refuse_prometheus_only(args)
        node = args.node[0] if args.node else None
        counts = import_files(
            args.files,
            Path(args.output),
            node=node,
            append=args.append,
            progress=progress,
            configz=[*args.configz, *args.config],
            events=[args.events] if args.events else [],
        )
    print(
        f"imported {counts.get('ticks', 0)} ticks, {counts.get('nodes', 0)} nodes, "
        f"{counts.get('objects', 0)} objects, {counts.get('evictions', 0)} evictions from {len(args.files)} files "
        f"into {args.output} in {time.monotonic() - started:.1f}s"
    )
    return 0


FILE_MODE_FLAGS = ("configz", "config", "events")
"""Flags of the Prometheus group a file import honours too (the rest only mean something to a server)."""


def _refuse_prometheus_only(args: argparse.Namespace) -> None:
    """A flag that only a Prometheus import reads, given with files, is refused rather than ignored."""
    from kube.errors import InputError

    for dest, (flag, default) in sorted(args.prometheus_only.items()):
        if dest not in FILE_MODE_FLAGS and getattr(args, dest) != default:
            raise InputError(
                f"{flag} is for import --prometheus; a file import reads times, nodes and settings from the files",
                source=flag,
            )


def cmd_pack(args: argparse.Namespace) -> int:
    from .pack import SUFFIX, pack

    dest = Path(args.output or str(Path(args.recording).resolve()) + SUFFIX)
    size = pack(Path(args.recording), dest)
    print(f"packed {args.recording} into {dest} ({size} bytes)")
    return 0


def cmd_unpack(args: argparse.Namespace) -> int:
    from .pack import unpack

    result = unpack(Path(args.file), Path(args.output))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"unpacked {result.files} files into {args.output} (complete: checksums and counts verified)")
    return 0


def _check_manifest(manifest: Any, source: str) -> None:
    """The manifest fields ``info`` prints have the types FORMAT.md gives them: a hand-edited or
    foreign manifest is one line naming the field, not an AttributeError."""
    from kube.errors import RecordingError

    def strings(value: Any) -> bool:
        return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())

    def numbers(value: Any) -> bool:
        return isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()
        )

    checks = (
        ("kubelet_versions", strings, "a map of node name to kubelet version"),
        ("counts", numbers, "a map of name to count"),
        ("options", lambda v: isinstance(v, dict), "a map of recorder options"),
        ("source", lambda v: isinstance(v, str), "a string"),
        ("server_version", lambda v: v is None or isinstance(v, str), "a version string or null"),
        ("start_time", lambda v: v is None or isinstance(v, str), "an RFC 3339 time or null"),
        ("end_time", lambda v: v is None or isinstance(v, str), "an RFC 3339 time or null"),
        ("finalized", lambda v: isinstance(v, bool), "true or false"),
    )
    for name, ok, expected in checks:
        value = getattr(manifest, name)
        if not ok(value):
            got = (
                type(value).__name__
                if not isinstance(value, (dict, list))
                else ("a list" if isinstance(value, list) else "a map with other values")
            )
            raise RecordingError(f"expected {expected}, got {got}", source=source, field=name)


def _recorder_counts(rec: Any) -> dict[str, int]:
    """What the recorder counted beside the rows (FORMAT.md §2): late ticks, and with
    --kubelet-direct the node ticks without a fresh pod list and the failed /pods fetches.

    ``pods_missed`` is counted from the ``ticks`` rows' notes, so an unfinalized recording shows it too.
    """
    import polars as pl

    from .recorder import PODS_MISSING, PODS_STALE

    m = rec.manifest
    out = {k: v for k, v in m.counts.items() if k in ("late_ticks", "pods_missed", "pods_fetch_failed")}
    if m.options.get("kubelet_direct"):
        noted = pl.col("ok") & pl.col("error").str.starts_with(PODS_STALE + ":").or_(
            pl.col("error").str.starts_with(PODS_MISSING + ":")
        )
        out["pods_missed"] = int(rec.scan_ticks().filter(noted).select(pl.len()).collect().item())
    return out


def cmd_info(args: argparse.Namespace) -> int:
    from kube.errors import RecordingError

    from .reader import open_recording
    from .summary_codec import format_time

    rec = open_recording(args.recording)  # checks every part against its checksums (schema v2)
    fmt_manifest = "manifest.json"
    _check_manifest(rec.manifest, str(rec.root / fmt_manifest))
    verified = rec.verify() if args.verify else None  # and decodes every file
    counts = rec.count_rows()
    m = rec.manifest
    recorder = _recorder_counts(rec)
    notes = list(rec.notes)
    if m.finalized:
        differ = [
            f"{k} {m.counts[k]} in manifest.json, {v} in the files"
            for k, v in counts.items()
            if k in m.counts and m.counts[k] != v
        ]
        if differ and args.verify:
            raise RecordingError(f"counts do not match: {'; '.join(differ)}", source=str(rec.root / fmt_manifest))
        notes += [f"counts do not match: {d}" for d in differ]
    counts = {**counts, "eviction_records": counts.get("evictions", 0), **rec.eviction_counts()}  # pods, not rows
    if verified is not None and m.schema_version < 2:
        notes.append("schema v1 has no checksums: --verify decoded every file instead")
    first, last = rec.time_range()
    span = (format_time(first), format_time(last)) if first is not None and last is not None else None
    size = rec.size_bytes()
    info = {
        "manifest": orjson.loads(m.to_json()),
        "time_range": {"first_tick": span[0], "last_tick": span[1]} if span else None,
        "counts": counts,
        "recorder_counts": recorder,
        "bytes_on_disk": size,
        "bytes_per_metric_sample": round(size / counts["metric_samples"], 4) if counts["metric_samples"] else None,
        "verified": verified,
        "notes": notes,
    }
    if args.json:
        print(orjson.dumps(info, option=orjson.OPT_INDENT_2).decode())
        return 0
    print(
        f"recording {args.recording}  (schema v{m.schema_version}, {'finalized' if m.finalized else 'NOT finalized'})"
    )
    when = f"{span[0]} .. {span[1]}" if span else "no ticks"
    print(f"  source {m.source}; server {m.server_version or '-'}; {when}")
    for node, version in sorted(m.kubelet_versions.items()):
        print(f"  kubelet {version} on {node}")
    for key, value in sorted(counts.items()):
        print(f"  {key:18} {value}")
    for key, value in sorted(recorder.items()):
        print(f"  {key:18} {value}")
    print(f"  {'bytes_on_disk':18} {size}")
    if info["bytes_per_metric_sample"] is not None:
        print(f"  {'bytes/sample':18} {info['bytes_per_metric_sample']}")
    if verified is not None:
        print(
            f"  verified {verified['files']} Parquet files in {verified['parts']} parts"
            f"{' against their checksums' if m.schema_version >= 2 else ''} and {verified['journal_frames']} "
            "journal frames: ok"
        )
    for note in notes:
        print(f"  note: {note}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from .recorder.main import run_record

    return run_record(args)


def add_record_parser(subparsers: SubParsers) -> None:
    from .recorder.options import EXIT_STATUS, add_record_arguments

    rec = subparsers.add_parser(
        "record",
        help="record a live cluster into a recording directory",
        description="Poll every node's Summary API (and list/watch pods, nodes and events) into a crash-safe "
        "recording until Ctrl-C or --duration. Credentials come from --kubeconfig/--context as with kubectl. "
        "Example: %(prog)s -o rec --interval 10s --duration 1h",
        epilog="Ctrl-C, SIGTERM and SIGHUP (a closed terminal) finish the tick in flight and finalize the recording. "
        + EXIT_STATUS,
    )
    add_record_arguments(rec)
    rec.set_defaults(func=cmd_record, command="record")


def add_import_parser(subparsers: SubParsers) -> None:
    imp = subparsers.add_parser(
        "import",
        help="build a recording from kubectl / kubelet JSON or YAML files",
        description="Turn files you already have (Summary API responses, pod/node/event lists, /configz) into a "
        "recording that replay reads. Example: %(prog)s summary.json pods.json configz.json -o rec",
    )
    imp.add_argument(
        "files",
        nargs="*",
        metavar="FILE[@TIME]",
        help="summary, pods, nodes, events or /configz files (kind recognised from the content); @TIME "
        "(RFC 3339) sets a summary's time, e.g. summary.json@2024-05-20T10:00:00Z",
    )
    imp.add_argument("-o", "--output", required=True, metavar="DIR", help="recording directory to create, e.g. rec")
    imp.add_argument(
        "--node",
        metavar="NAME",
        action="append",
        help="node a /configz (or a summary without nodeName) belongs to, e.g. kind-worker; with "
        "--prometheus: a node to import (repeatable; default every node)",
    )
    imp.add_argument("--append", action="store_true", help="add to an existing recording DIR instead of creating it")
    from .prometheus.command import add_prometheus_arguments

    before = len(imp._actions)
    add_prometheus_arguments(imp)
    group = {a.dest: (a.option_strings[-1], a.default) for a in imp._actions[before:] if a.option_strings}
    group.pop("prometheus", None)
    imp.set_defaults(func=cmd_import, command="import", prometheus_only=group)


def add_pack_parser(subparsers: SubParsers) -> None:
    pk = subparsers.add_parser(
        "pack",
        help="pack a recording directory into one file",
        description="Pack a recording into one file to attach to a bug report. Example: %(prog)s rec",
    )
    pk.add_argument("recording", metavar="RECORDING", help="recording directory, e.g. rec")
    pk.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="file to write (default: RECORDING.evictlens.tar), e.g. bug-123.evictlens.tar",
    )
    pk.set_defaults(func=cmd_pack, command="pack")


def add_unpack_parser(subparsers: SubParsers) -> None:
    up = subparsers.add_parser(
        "unpack",
        help="unpack a packed recording into a directory",
        description="Unpack a file written by evictlens pack. Example: %(prog)s rec.evictlens.tar -o rec",
    )
    up.add_argument("file", metavar="FILE", help="a packed recording, e.g. rec.evictlens.tar")
    up.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to create, e.g. rec")
    up.set_defaults(func=cmd_unpack, command="unpack")


def add_info_parser(subparsers: SubParsers) -> None:
    inf = subparsers.add_parser(
        "info",
        help="print a recording's manifest and counts",
        description="Show what a recording holds: source, time range, kubelet versions, row counts and size. "
        "Example: %(prog)s rec",
    )
    inf.add_argument("recording", metavar="RECORDING", help="recording directory, e.g. rec")
    inf.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    inf.add_argument(
        "--verify",
        action="store_true",
        help="decode every Parquet file and journal frame and check every part against its checksums "
        "(exit 2 naming the first damaged file), e.g. info rec --verify",
    )
    inf.set_defaults(func=cmd_info, command="info")


PARSERS: dict[str, Callable[[SubParsers], None]] = {
    "record": add_record_parser,
    "import": add_import_parser,
    "pack": add_pack_parser,
    "unpack": add_unpack_parser,
    "info": add_info_parser,
}
"""Each command's parser builder, for hosts that build only the command they run."""


def add_subcommands(subparsers: SubParsers) -> None:
    """Every recordings command, with ``--debug`` on each."""
    for name, add in PARSERS.items():
        add(subparsers)
        add_debug_argument(subparsers.choices[name], subcommand=True)


def build_parser() -> argparse.ArgumentParser:
    from kube.errors import EXIT_STATUS_HELP

    parser = OneLineParser(
        prog="evictlens", description="Record, import, pack and inspect evictlens recordings.", epilog=EXIT_STATUS_HELP
    )
    add_debug_argument(parser)
    subs: SubParsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser
    )
    add_subcommands(subs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
