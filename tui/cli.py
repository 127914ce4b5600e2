"""``evictlens tui [REC | RESULTS]``: the subcommand's arguments and handler.

Registered as a command plugin (``[project.entry-points."evictlens.commands"]`` in pyproject.toml), so the
core never names the UI; Textual is imported only when the command runs, so ``evictlens --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

SUMMARY = "browse a recording's replay or a results directory in a terminal UI"


def run_tui(args: argparse.Namespace) -> int:
    import sys

    from kube.errors import InputError
    from tui.app import make_app
    from tui.live_cli import run_live, wants_live

    def interactive() -> None:
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise InputError(
                "needs an interactive terminal (stdin and stdout); for scripts use evictlens replay --json or -o DIR"
                + (" (live: evictlens watch)" if wants_live(args) else ""),
                field="tui",
            )

    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"expected a number of processes of at least 1, got {args.jobs}", field="--jobs")
    if wants_live(args):  # the live view checks its flags and source before the terminal
        return run_live(args, Path(args.export_dir) if args.export_dir else None, args.jobs or 0, interactive)
    if args.target is not None:  # a bad path fails here, in one line, not in a full-screen box seconds later
        check_target(Path(args.target))
    interactive()
    app = make_app(args.target, export_dir=Path(args.export_dir) if args.export_dir else None, jobs=args.jobs or 0)
    status = app.run()
    return int(app.return_code or status or 0)


def check_target(path: Path) -> None:
    """What ``evictlens tui PATH`` was given, checked before the terminal goes full-screen: a recording, a
    results directory or a packed recording (:func:`tui.loading.classify`), a recording's manifest readable."""
    from tui.loading import classify

    if classify(path) == "recording":
        from recordings.reader import open_recording

        open_recording(path)


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "tui",
        help=SUMMARY,
        description="Browse in a terminal UI: a recording (replayed with its recorded settings, with progress), "
        "a results directory (evictlens replay -o DIR), or with no argument the bundled sidecar sample. "
        "Press ? for the keys, ctrl+p for every action by name.",
        epilog="examples:\n  evictlens tui\n  evictlens tui rec/\n  evictlens tui out/\n"
        "  evictlens tui --live --sample jvm-spike --speed 10\n  evictlens tui --live --context prod\n"
        "  evictlens tui rec/ --follow",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target",
        nargs="?",
        metavar="REC|RESULTS",
        help="a recording directory or a results directory (default: the bundled sample)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        default=None,
        help="replay a recording's nodes (and each what-if) over N local processes (default: all cores)",
    )
    p.add_argument("--export-dir", metavar="DIR", help="where ctrl+e / ctrl+j write tables (default: .)")
    from tui.live_cli import add_live_arguments

    add_live_arguments(p)
    p.set_defaults(func=run_tui)
