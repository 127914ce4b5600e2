"""The ``evictlens`` command (and ``kubectl evictlens``): a thin argparse front over the port, the replay
and the recorder.

Start-up stays cheap: ``evictlens --help`` imports no command, and a command imports only its own
module (polars and the replay stack load only for the commands that use them). Every command ends
at the one CLI edge, :func:`recordings.cli_edge.run_command`: exit 0 / 1 (a finding) / 2 (bad
input), one line on stderr, a traceback only with ``--debug``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kube.errors import EXIT_FINDING, EXIT_OK, EXIT_STATUS_HELP
from recordings.cli_edge import OneLineParser, SubParsers, add_debug_argument, run_command


def _cmd_conformance(args: argparse.Namespace) -> int:
    from recordings.console import make_console
    from replay.conformance.runner import run_cases, summary_line
    from replay.conformance.vectors import load_cases

    console = make_console()
    cases = load_cases(args.paths)
    if args.kind:
        cases = [c for c in cases if c.kind in args.kind]
    results = run_cases(cases)
    for result in results:
        if result.status == "failed":
            basis = f" [{result.case.expect_basis}]" if "derived" in result.case.expect_basis else ""
            console.print(
                f"[red]FAIL[/red] {result.case.id} (kubelet {result.case.kubelet_version}){basis}", soft_wrap=True
            )
            for failure in result.failures:
                console.print(f"    {failure}", markup=False, soft_wrap=True)
        elif result.status == "skipped":
            console.print(f"[yellow]SKIP[/yellow] {result.case.id}: {'; '.join(result.failures)}", soft_wrap=True)
        elif args.verbose:
            console.print(f"[green]ok[/green]   {result.case.id}", soft_wrap=True)
    print(summary_line(results))
    return EXIT_FINDING if any(r.status == "failed" for r in results) else EXIT_OK


def _add_conformance(sub: SubParsers) -> None:
    conf = sub.add_parser(
        "conformance",
        help=_COMMANDS["conformance"].summary,
        description="Run kubelet-eviction conformance vectors (JSON files of cases with the kubelet's expected "
        "results) through the port. Exit 0 when all pass, 1 when any fails. "
        "Example: %(prog)s ../shared/conformance",
    )
    conf.add_argument(
        "paths", nargs="+", metavar="PATH", help="vector files or directories of them, e.g. ../shared/conformance"
    )
    conf.add_argument(
        "--kind",
        action="append",
        metavar="KIND",
        help="only cases of this kind (repeatable), e.g. --kind quantity --kind manager",
    )
    conf.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")
    conf.set_defaults(func=_cmd_conformance)


def _add_explain(sub: SubParsers) -> None:
    from replay.cli.explain import add_explain_parser

    add_explain_parser(sub)


def _add_replay(sub: SubParsers) -> None:
    from replay.cli.replay import add_replay_parser

    add_replay_parser(sub)


def _add_recordings(name: str) -> Callable[[SubParsers], None]:
    def add(sub: SubParsers) -> None:
        from recordings.cli import PARSERS

        PARSERS[name](sub)

    return add


@dataclass(frozen=True)
class _Command:
    summary: str
    """The line ``evictlens --help`` shows; equal to the help= its module gives (tested)."""
    add: Callable[[SubParsers], None]
    """Imports the command's module and adds its full parser."""


_COMMANDS: dict[str, _Command] = {
    "explain": _Command("what would the kubelet evict from this summary, and why", _add_explain),
    "replay": _Command("run a recording through the eviction manager and compare with the real evictions", _add_replay),
    "conformance": _Command("run kubelet-eviction conformance vectors through the port", _add_conformance),
    "import": _Command("build a recording from kubectl / kubelet JSON or YAML files", _add_recordings("import")),
    "pack": _Command("pack a recording directory into one file", _add_recordings("pack")),
    "unpack": _Command("unpack a packed recording into a directory", _add_recordings("unpack")),
    "info": _Command("print a recording's manifest and counts", _add_recordings("info")),
}

PLUGIN_GROUP = "evictlens.commands"
"""Entry points of other packages' commands (``evictlens tui`` is one): each names a module with ``SUMMARY``
(its --help line) and ``add_parser(sub)``, so the core never names the UI."""


def _plugins() -> dict[str, _Command]:
    from importlib.metadata import entry_points

    found = {}
    for ep in entry_points(group=PLUGIN_GROUP):
        if ep.name in _COMMANDS:
            continue
        try:
            module = ep.load()
        except ImportError:  # an uninstalled extra: its command is simply not there
            continue
        found[ep.name] = _Command(str(module.SUMMARY), module.add_parser)
    return found


def _add_scenario(sub: SubParsers) -> None:
    from replay.scenario_cli import add_scenario_parser

    add_scenario_parser(sub)


_COMMANDS["scenario"] = _Command(
    "build a recording from a scenario file: node pressure reproduced without a cluster", _add_scenario
)


def _add_whatif(sub: SubParsers) -> None:
    from replay.cli.whatif import add_whatif_parser

    add_whatif_parser(sub)


_COMMANDS["whatif"] = _Command(
    "replay one recording under several settings and compare who is evicted, and when", _add_whatif
)


def _add_tune(sub: SubParsers) -> None:
    from replay.cli.tune import add_tune_parser

    add_tune_parser(sub)


_COMMANDS["tune"] = _Command(
    "search eviction settings for a workload and recommend ones the kernel's OOM killer does not beat", _add_tune
)


class _VersionAction(argparse.Action):
    """``--version``, reading the installed version only when asked (importlib.metadata costs ~30 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("evictlens")
        except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
            number = "unknown"
        print(f"{parser.prog} {number}")
        parser.exit()


def _selected(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (the top-level options are all flags, so it is the first word)."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def build_parser(argv: Sequence[str] | None = None, *, prog: str = "evictlens") -> argparse.ArgumentParser:
    """The whole parser, or (given ``argv``) only the parser of the command ``argv`` runs.

    Other commands are placeholders with their one-line summary, enough for ``--help``.
    """
    parser = OneLineParser(
        prog=prog,
        description="Why was my pod evicted? Replay the kubelet's node-pressure eviction manager offline. "
        f"Example: {prog} explain --sample kind-sidecars",
        epilog=f"Run '{prog} COMMAND --help' for a command's options. {EXIT_STATUS_HELP}",
    )
    parser.add_argument("--version", action=_VersionAction)
    add_debug_argument(parser)
    sub: SubParsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser
    )
    selected = None if argv is None else _selected(argv)
    for name, command in {**_COMMANDS, **_plugins()}.items():
        if argv is None or name == selected:
            command.add(sub)
            add_debug_argument(sub.choices[name], subcommand=True)
        else:
            sub.add_parser(name, help=command.summary, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None, *, prog: str = "evictlens") -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return run_command(build_parser(args, prog=prog), args)


def kubectl_main() -> int:
    """``kubectl-evictlens``: kubectl finds it on PATH and runs it for ``kubectl evictlens ...``."""
    return main(prog="kubectl evictlens")


if __name__ == "__main__":
    sys.exit(main())
