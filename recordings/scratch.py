"""Scratch directories that a killed process does not leave behind for good.

Why: a replay keeps its frames in a temporary directory for as long as the results live, and a TUI keeps its
unpacked or regenerated recordings there. Python removes them on a normal exit and on the signals the CLI edge
unwinds, but a SIGKILL, an OOM kill or a power cut leaves them in ``/tmp``, one per run (a busy box had 80).
Each is named ``PREFIX-PID-XXXX``, and the next process asking for one with the same prefix removes those whose
process is gone (the same rule as a recording's snapshots, :func:`recordings.snapshot.sweep_orphans`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from . import format as fmt

__all__ = ["process_alive", "scratch_dir", "scratch_path", "sweep_scratch"]


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A new 0700 ``PREFIX-PID-XXXX`` directory in the temporary directory, removed when the object is (or at
    exit); orphans of the same prefix are removed first."""
    with contextlib.suppress(OSError):
        sweep_scratch(prefix)
    return tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-")


def scratch_path(prefix: str) -> Path:
    """As :func:`scratch_dir`, for a directory its caller removes itself."""
    with contextlib.suppress(OSError):
        sweep_scratch(prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


def sweep_scratch(prefix: str, where: Path | None = None) -> list[Path]:
    """Remove ``PREFIX-PID-*`` directories whose process is gone; return them.

    Names without a pid (written before it was added) are left alone: nothing tells whether they are in use.
    A reused pid keeps an orphan until that process ends too (harmless: it is only kept longer)."""
    base = where if where is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    for entry in os.scandir(base):
        if not entry.name.startswith(prefix):
            continue
        pid, dash, _rest = entry.name[len(prefix) :].partition("-")
        if not dash or not pid.isdigit() or process_alive(int(pid)):
            continue
        try:
            mine = entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid()
        except OSError:
            mine = False
        if not mine:
            continue
        fmt.remove_tree(Path(entry.path))
        removed.append(Path(entry.path))
    return removed


def process_alive(pid: int) -> bool:
    """Whether ``pid`` names a running process (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OverflowError:
        return False
    return True
