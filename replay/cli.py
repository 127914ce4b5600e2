"""The ``evictlens`` command: a thin argparse front over the port, the replay and the recorder.

Every user-facing failure becomes one line on stderr and a non-zero exit status; tracebacks are
for bugs only.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from replay.errors import InputError


def _cmd_conformance(args: argparse.Namespace) -> int:
    from rich.console import Console

    from replay.conformance.runner import run_cases, summary_line
    from replay.conformance.vectors import load_cases

    console = Console(highlight=False, soft_wrap=True)
    cases = load_cases(args.paths)
    if args.kind:
        cases = [c for c in cases if c.kind in args.kind]
    results = run_cases(cases)
    for result in results:
        if result.status == "failed":
            basis = f" [{result.case.expect_basis}]" if "derived" in result.case.expect_basis else ""
            console.print(f"[red]FAIL[/red] {result.case.id} (kubelet {result.case.kubelet_version}){basis}")
            for failure in result.failures:
                console.print(f"    {failure}", markup=False)
        elif result.status == "skipped":
            console.print(f"[yellow]SKIP[/yellow] {result.case.id}: {'; '.join(result.failures)}")
        elif args.verbose:
            console.print(f"[green]ok[/green]   {result.case.id}")
    print(summary_line(results))
    return 1 if any(r.status == "failed" for r in results) else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evictlens",
        description="Why was my pod evicted? Replay the kubelet's node-pressure eviction manager offline.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    conf = sub.add_parser("conformance", help="run kubelet-eviction conformance vectors through the port")
    conf.add_argument("paths", nargs="+", help="vector files or directories")
    conf.add_argument("--kind", action="append", help="only cases of this kind (repeatable)")
    conf.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")
    conf.set_defaults(func=_cmd_conformance)

    from replay.explain import add_explain_parser
    from replay.run import add_replay_parser

    add_explain_parser(sub)
    add_replay_parser(sub)
    try:
        from recordings.cli import add_subcommands
    except ImportError:  # pragma: no cover - recordings is part of the same distribution
        pass
    else:
        add_subcommands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as err:
        print(f"evictlens {args.command}: {err.one_line()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"evictlens {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
