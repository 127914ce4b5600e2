"""Where ``evictlens tui --live`` / ``tui REC --follow`` reads from: a recording being written, and who writes it.

Three sources, one shape (:class:`LiveSource`: the recording's directory, and a way to stop its writer):
a recording another process writes (``--follow``: ``record``, the flight recorder), a bundled scenario
played into a growing recording in accelerated real time (``--sample NAME --speed N``: ``live.play``), and a
live cluster recorded in-process into a private temporary directory (``--live``: ``live``'s cluster source).
The TUI only follows the directory with :class:`live.engine.LiveEngine`; it never writes a recording itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kube.errors import InputError

LOCK = "writer.lock"
"""recordings/FORMAT.md §3.1: a writer holds an exclusive ``flock`` on it for its whole lifetime."""


def writer_pid(root: Path) -> int | None:
    """The pid of the process writing the recording at ``root`` (its ``writer.lock`` held), else None: a
    finished recording has no lock file, and one left by a killed writer is held by nobody. The probe is a
    shared lock taken and dropped at once (as ``pack`` does), so it never blocks the writer."""
    try:
        fd = os.open(root / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def check_follow(path: Path) -> None:
    """``tui REC --follow`` before going full-screen: a recording directory that a writer holds now, else one
    line (exit 2)."""
    if not (path / "manifest.json").is_file():
        raise InputError("expected a recording directory (with manifest.json) to follow", source=str(path))
    if writer_pid(path) is None:
        raise InputError(
            "is not being written (no writer holds writer.lock): --follow needs a recording that record, the "
            "flight recorder or scenario is writing now; open a finished one with evictlens tui REC",
            source=str(path),
        )


@dataclass
class LiveSource:
    """A recording being written and how it came to be: what the live view follows."""

    root: Path
    """The recording directory (it may not exist yet when a player or recorder is starting)."""
    label: str
    """What the title says it follows: ``rec/ (being written by pid 4242)``, ``sample jvm-spike at 10×``."""
    stop: Callable[[], None] = field(default=lambda: None)
    """Stops the writer this process started (a player, a recorder); nothing for ``--follow``."""
    failure: Callable[[], str | None] = field(default=lambda: None)
    """The writer's failure as one line (a cluster that stopped answering, a scenario that failed), else None."""
    finished: Callable[[], bool] = field(default=lambda: False)
    """The writer is done (a sample played to its end, a followed recording finalized): no more ticks."""
    interval_seconds: float = 10.0
    """The recording's tick interval, in the source's own time (the poll period follows it)."""
    speed: float = 1.0

    def poll_seconds(self) -> float:
        """How often the view asks the engine for new ticks: four times a tick at the source's pace, at least
        20 times a second at most (a sample at 100× still leaves the UI its frames)."""
        return max(0.05, min(1.0, self.interval_seconds / self.speed / 4))


def follow_source(path: Path) -> LiveSource:
    """A recording another process writes (``tui REC --follow``)."""
    check_follow(path)
    pid = writer_pid(path)
    interval = _interval(path)

    def finished() -> bool:
        return writer_pid(path) is None

    return LiveSource(
        path, f"{path} (being written by pid {pid})", finished=finished, interval_seconds=interval or 10.0
    )


def _interval(path: Path) -> float | None:
    """The tick interval the writer states (``options.interval``: a Go duration, or seconds), else None."""
    import orjson

    from kube.duration import parse_duration_seconds

    try:
        manifest = orjson.loads((path / "manifest.json").read_bytes())
        value = manifest["options"]["interval"]
        seconds = (
            float(value) if isinstance(value, (int, float)) else parse_duration_seconds(str(value), flag="interval")
        )
    except (OSError, ValueError, KeyError, TypeError, InputError, orjson.JSONDecodeError):
        return None
    return seconds if seconds > 0 else None


def snapshot(root: Path, into: Path) -> Path:
    """A copy of the recording as it is now (Parquet parts hard-linked where the file system allows, they
    never change once renamed into place; the journal and manifest copied), so a replay of a moment reads
    files a fold or the next tick cannot change under it. ``writer.lock`` and ``*.tmp`` stay out."""
    dest = into / root.name
    dest.mkdir(mode=0o700, parents=True)

    def copy(src: str, dst: str) -> object:
        if "/parts/" in src:
            with contextlib.suppress(OSError):
                os.link(src, dst)
                return dst
        return shutil.copy2(src, dst)

    for entry in sorted(root.iterdir()):
        if entry.name == LOCK or entry.name.endswith(".tmp"):
            continue
        if entry.is_dir():
            shutil.copytree(
                entry, dest / entry.name, copy_function=copy, ignore=shutil.ignore_patterns("*.tmp"), dirs_exist_ok=True
            )
        else:
            shutil.copy2(entry, dest / entry.name)
    return dest


def private_tempdir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A 0700 temporary directory (mkdtemp's own mode), removed when the view ends."""
    return tempfile.TemporaryDirectory(prefix=prefix)
