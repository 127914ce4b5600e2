"""Commands run in the test's own process, through the same CLI edge as ``evictlens``: a command that reads and
writes files and ends needs no fresh interpreter (0.4 s of CPU for its imports, more than many tests' own work)."""

from __future__ import annotations

import contextlib
import io
import subprocess
from collections.abc import Callable, Sequence


def run_here(main: Callable[[list[str]], int], argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """``main(argv)``: its exit status (argparse's own exits included), stdout and stderr, as ``subprocess.run``
    with ``capture_output=True, text=True`` gives them."""
    args = list(argv)
    out, err = io.TextIOWrapper(io.BytesIO(), "utf-8"), io.TextIOWrapper(io.BytesIO(), "utf-8")  # with .buffer
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as stop:  # --help, a usage error
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 2)
    text = []
    for stream in (out, err):
        stream.flush()
        buffer = stream.buffer
        assert isinstance(buffer, io.BytesIO)
        text.append(buffer.getvalue().decode())
    return subprocess.CompletedProcess(args, code, *text)


def evictlens_here(*args: str) -> subprocess.CompletedProcess[str]:
    """``evictlens ARGS`` in this process."""
    from replay.cli import main

    return run_here(main, args)
