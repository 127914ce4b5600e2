"""The one CLI edge of evictlens: how every command ends, whichever package defines it.

``evictlens`` (:mod:`replay.cli`), ``kubectl evictlens`` and ``python -m recordings.cli`` all run
their commands through :func:`run_command`, so every command ends the same way:

* exit 0 (done), 1 (a finding, e.g. conformance failures; a recorder that cannot reach the
  cluster or write the disk, :class:`~kube.errors.RecorderError`; also an unexpected
  error), 2 (bad input: an :class:`~kube.errors.InputError`, or an argparse usage error)
  or 3 (credentials the cluster refused, :class:`~kube.errors.CredentialError`), with one
  line on stderr naming what is wrong (the status is the error class's ``exit_code``;
  :data:`~kube.errors.EXIT_STATUS_HELP` says it for ``--help``);
* an unexpected exception prints one line and "run with --debug for the traceback"; ``--debug``
  (or ``EVICTLENS_DEBUG=1``) prints the traceback;
* SIGTERM and SIGHUP (``kill``, a closed terminal) unwind the command as Ctrl-C does, so its
  temporary files and half-written outputs are removed (the default action would leave them), and
  end it with 128 + the signal, silently; a command with its own handlers (``record``, ``watch``,
  ``tui --live``) replaces these;
* a reader that goes away (``evictlens info REC | head``) ends the command quietly, as ``kubectl``
  does (a Go program dies of SIGPIPE: exit status 141, nothing on stderr), including the flush of
  stdout at interpreter exit.

It lives in ``recordings`` (the bottom layer) so that ``python -m recordings.cli`` needs nothing
from ``replay``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn, TypeAlias

from kube.errors import EXIT_BAD_INPUT, EXIT_FINDING, EvictlensError, printable

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "OneLineParser", "SubParsers", "add_debug_argument", "run_command"]

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
_DEBUG_ENV = "EVICTLENS_DEBUG"


class OneLineParser(argparse.ArgumentParser):
    """argparse prints the usage block plus a message; a usage error here is one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {' '.join(message.split())} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def add_debug_argument(parser: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    """``--debug`` on the top-level parser and, without overriding it, on each subcommand."""
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS if subcommand else False,
        help=f"show the traceback of an unexpected error (or set {_DEBUG_ENV}=1)",
    )


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwind (``finally`` blocks and ``atexit`` run), then exit 128 + signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, _frame: object) -> None:
    signal.signal(signum, signal.SIG_DFL)  # a second one while unwinding ends the process at once
    raise _Terminated(signum)


@contextlib.contextmanager
def _unwind_on_termination() -> Iterator[None]:
    """Install :func:`_terminate` where the default action stands; put back what was there after."""
    installed: list[signal.Signals] = []
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_DFL:
                signal.signal(sig, _terminate)
                installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            if signal.getsignal(sig) is _terminate:
                signal.signal(sig, signal.SIG_DFL)


def run_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run ``args.func(args)``; every way it can end becomes an exit status."""
    try:
        with _unwind_on_termination():
            return _run(parser, argv)
    except _Terminated as stop:  # arrived between the command's end and the handlers' removal
        return 128 + stop.signum


def _run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args: argparse.Namespace | None = None
    try:
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int] = args.func
        status = int(func(args))
        sys.stdout.flush()  # a closed pipe shows here, inside the edge, not at interpreter exit
        return status
    except BrokenPipeError:
        if not _stdout_is_broken():
            return _unexpected(parser, args)
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except EvictlensError as err:
        _say(parser, args, err.one_line())
        return err.exit_code
    except KeyboardInterrupt:
        _say(parser, args, "interrupted")
        return EXIT_INTERRUPTED
    except _Terminated as stop:
        return 128 + stop.signum
    except Exception:  # the CLI edge: a bug is one line unless --debug asks for the traceback
        return _unexpected(parser, args)


def _unexpected(parser: argparse.ArgumentParser, args: argparse.Namespace | None) -> int:
    exc = sys.exc_info()[1]
    assert exc is not None
    if (args is not None and getattr(args, "debug", False)) or os.environ.get(_DEBUG_ENV, "") not in ("", "0"):
        import traceback

        traceback.print_exc()
        return EXIT_FINDING
    text = " ".join(str(exc).split()) or type(exc).__name__
    _say(parser, args, f"internal error: {type(exc).__name__}: {text} (run with --debug for the traceback)")
    return EXIT_FINDING


def _say(parser: argparse.ArgumentParser, args: argparse.Namespace | None, message: str) -> None:
    command = getattr(args, "command", None)
    prog = f"{parser.prog} {command}" if command else parser.prog
    with contextlib.suppress(OSError):  # stderr gone too: nothing left to tell
        print(f"{prog}: {printable(message)}", file=sys.stderr, flush=True)


def _stdout_is_broken() -> bool:
    """True when stdout is a pipe or socket whose reader has gone (POLLERR on the write end)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return True  # no real stdout to check: the error can only have come from writing to it


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
