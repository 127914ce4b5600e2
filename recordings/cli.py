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
    from .importer import import_files

    counts = import_files(args.files, Path(args.output), node=args.node, append=args.append)
    print(
        f"imported {counts.get('ticks', 0)} ticks, {counts.get('nodes', 0)} nodes, "
        f"{counts.get('objects', 0)} objects into {args.output}"
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

    count = unpack(Path(args.file), Path(args.output))
    print(f"unpacked {count} files into {args.output}")
    return 0


@guarded
def cmd_info(args: argparse.Namespace) -> int:
    from .reader import open_recording

    rec = open_recording(args.recording)
    counts = rec.count_rows()
    size = rec.size_bytes()
    info = {
        "manifest": orjson.loads(rec.manifest.to_json()),
        "counts": counts,
        "bytes_on_disk": size,
        "bytes_per_metric_sample": round(size / counts["metric_samples"], 4) if counts["metric_samples"] else None,
    }
    if args.json:
        print(orjson.dumps(info, option=orjson.OPT_INDENT_2).decode())
        return 0
    m = rec.manifest
    print(
        f"recording {args.recording}  (schema v{m.schema_version}, {'finalized' if m.finalized else 'NOT finalized'})"
    )
    print(f"  source {m.source}; server {m.server_version or '-'}; {m.start_time or '-'} .. {m.end_time or '-'}")
    for node, version in sorted(m.kubelet_versions.items()):
        print(f"  kubelet {version} on {node}")
    for key, value in sorted(counts.items()):
        print(f"  {key:18} {value}")
    print(f"  {'bytes_on_disk':18} {size}")
    if info["bytes_per_metric_sample"] is not None:
        print(f"  {'bytes/sample':18} {info['bytes_per_metric_sample']}")
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
