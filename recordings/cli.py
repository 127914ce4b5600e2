"""Command-line subcommands ``record``, ``import``, ``pack``, ``unpack`` and ``info``.

``replay.cli`` mounts them with :func:`add_subcommands`; ``python -m recordings.cli`` runs
them standalone.  Every failure ends as exit code ≠ 0 and one line on stderr naming the
file, field or flag and what was expected — the handlers catch errors themselves so the
host CLI needs no knowledge of :class:`RecordingError`.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from .errors import RecordingError

Handler = Callable[[argparse.Namespace], int]
EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def guarded(fn: Handler) -> Handler:
    """Turn every error into one line on stderr and an exit code."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except RecordingError as exc:
            print(f"evictlens {args.command}: {exc.one_line()}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except KeyboardInterrupt:
            print(f"evictlens {args.command}: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:  # the CLI edge: never a traceback
            text = " ".join(str(exc).split()) or type(exc).__name__
            print(f"evictlens {args.command}: internal error: {type(exc).__name__}: {text}", file=sys.stderr)
            return EXIT_FAILED

    return run


@guarded
def cmd_import(args: argparse.Namespace) -> int:
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

        counts = import_files(args.files, Path(args.output), node=args.node, append=args.append, progress=progress)
    print(
        f"imported {counts.get('ticks', 0)} ticks, {counts.get('nodes', 0)} nodes, "
        f"{counts.get('objects', 0)} objects, {counts.get('evictions', 0)} evictions from {len(args.files)} files "
        f"into {args.output} in {time.monotonic() - started:.1f}s"
    )
    return 0


@guarded
def cmd_pack(args: argparse.Namespace) -> int:
    from .pack import SUFFIX, pack

    dest = Path(args.output or str(Path(args.recording).resolve()) + SUFFIX)
    size = pack(Path(args.recording), dest)
    print(f"packed {args.recording} into {dest} ({size} bytes)")
    return 0


@guarded
def cmd_unpack(args: argparse.Namespace) -> int:
    from .pack import unpack

    result = unpack(Path(args.file), Path(args.output))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"unpacked {result.files} files into {args.output} (complete: checksums and counts verified)")
    return 0


@guarded
def cmd_info(args: argparse.Namespace) -> int:
    from .errors import RecordingError
    from .reader import open_recording
    from .summary_codec import format_time

    rec = open_recording(args.recording)  # checks every part against its checksums (schema v2)
    verified = rec.verify() if args.verify else None  # and decodes every file
    counts = rec.count_rows()
    m = rec.manifest
    fmt_manifest = "manifest.json"
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
    if verified is not None and m.schema_version < 2:
        notes.append("schema v1 has no checksums: --verify decoded every file instead")
    first, last = rec.time_range()
    span = (format_time(first), format_time(last)) if first is not None and last is not None else None
    size = rec.size_bytes()
    info = {
        "manifest": orjson.loads(m.to_json()),
        "time_range": {"first_tick": span[0], "last_tick": span[1]} if span else None,
        "counts": counts,
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


@guarded
def cmd_record(args: argparse.Namespace) -> int:
    from .recorder.main import run_record

    return run_record(args)


def add_subcommands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rec = subparsers.add_parser("record", help="record a live cluster into a recording directory")
    from .recorder.options import add_record_arguments

    add_record_arguments(rec)
    rec.set_defaults(func=cmd_record, command="record")

    imp = subparsers.add_parser("import", help="build a recording from kubectl / kubelet JSON files")
    imp.add_argument(
        "files",
        nargs="+",
        metavar="FILE[@TIME]",
        help="summary, pods, nodes, events or /configz files; @TIME overrides a summary's time",
    )
    imp.add_argument("-o", "--output", required=True, help="recording directory to create")
    imp.add_argument("--node", help="node a /configz (or a summary without nodeName) belongs to")
    imp.add_argument("--append", action="store_true", help="add to an existing recording")
    imp.set_defaults(func=cmd_import, command="import")

    pk = subparsers.add_parser("pack", help="pack a recording directory into one file")
    pk.add_argument("recording")
    pk.add_argument("-o", "--output", help="output file (default: DIR.evictlens.tar)")
    pk.set_defaults(func=cmd_pack, command="pack")

    up = subparsers.add_parser("unpack", help="unpack a packed recording into a directory")
    up.add_argument("file")
    up.add_argument("-o", "--output", required=True, help="directory to create")
    up.set_defaults(func=cmd_unpack, command="unpack")

    inf = subparsers.add_parser("info", help="print a recording's manifest and counts")
    inf.add_argument("recording")
    inf.add_argument("--json", action="store_true", help="machine-readable output")
    inf.add_argument(
        "--verify",
        action="store_true",
        help="decode every Parquet file and journal frame and check every part against its checksums "
        "(exit 2 naming the first damaged file), e.g. info rec --verify",
    )
    inf.set_defaults(func=cmd_info, command="info")


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus a message; keep the message to one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="evictlens")
    subs: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(
        dest="command", required=True, parser_class=_OneLineParser
    )
    add_subcommands(subs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
