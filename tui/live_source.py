"""Where ``evictlens tui --live`` / ``tui REC --follow`` reads from: a recording being written, and who writes it.

Three sources, one shape (:class:`LiveSource`: the recording's directory, and a way to stop its writer):
a recording another process writes (``--follow``: ``record``, the flight recorder), a bundled scenario
played into a growing recording in accelerated real time (``--sample NAME --speed N``: ``live.play``), and a
live cluster recorded in-process into a private temporary directory (``--live``: ``live``'s cluster source).
The TUI only follows the directory with :class:`live.engine.LiveEngine`; it never writes a recording itself.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from kube.errors import InputError
from recordings.scratch import scratch_dir

LOCK = "writer.lock"
"""recordings/FORMAT.md §3.1: a writer holds it for its whole lifetime (never copied into a snapshot)."""

PACE_ENV = "EVICTLENS_PLAY_PACE"
"""A test hook: the played sample's clock runs this many times faster than its ``--speed`` says (the pty test
plays ``--speed 10`` without waiting half a minute); unset in use."""


@dataclass
class LiveSource:
    """A recording being written and how it came to be: what the live view follows (one of live/sources.py's
    sources, seen through what the view asks of it)."""

    root: Path
    """The recording directory (it may not exist yet when a player or recorder is starting)."""
    label: str
    """What the title says it follows: ``rec/``, ``sample jvm-spike at 10×``, ``cluster (context prod)``."""
    start: Callable[[], None] = field(default=lambda: None)
    """Called once in the app's event loop (a cluster's recorder runs there: it installs signal handlers)."""
    following: Callable[[int | None], None] = field(default=lambda _tick: None)
    """The engine has opened the recording up to this tick (a played sample then commits its first tick)."""
    stop: Callable[[], None] = field(default=lambda: None)
    """Stops the writer this process started (a player, a recorder); nothing for ``--follow``."""
    close: Callable[[], None] = field(default=lambda: None)
    """Removes what the source made (a private temporary recording), after :attr:`stop`."""
    failure: Callable[[], str | None] = field(default=lambda: None)
    """The writer's failure as one line (a cluster that stopped answering, a scenario that failed), else None."""
    finish: Callable[[], Awaitable[None]] | None = None
    """Waits (in the app's loop) for the writer to end after :attr:`stop` (a cluster's recorder finalizing)."""
    finished: Callable[[], bool] = field(default=lambda: False)
    """The writer is done (a sample played to its end, a followed recording finalized): no more ticks."""
    interval_seconds: float = 10.0
    """The recording's tick interval, in the source's own time (the poll period follows it)."""
    speed: float = 1.0
    preview_first: bool = False
    """Show the newest tick (live/preview.py) before the engine has replayed the recording's history: a recording
    someone else has been writing for long (``--follow``)."""

    def poll_seconds(self) -> float:
        """How often the view asks the engine for new ticks: four times a tick at the source's pace, between
        20 times a second (a sample at 100× still leaves the UI its frames) and once a second."""
        if not math.isfinite(self.speed):
            return 0.05
        return max(0.05, min(1.0, self.interval_seconds / self.speed / 4))


def follow_source(path: Path) -> LiveSource:
    """A recording another process writes (``tui REC --follow``): refused in one line when none does
    (live/sources.py ``FollowSource``, as ``watch REC --follow``)."""
    from live.sources import FollowSource, writer_pid

    src = FollowSource(path)
    pid = writer_pid(path)
    return LiveSource(
        path,
        f"{path} (written by pid {pid})" if pid else str(path),
        finished=src.finished,
        interval_seconds=_interval(path) or 10.0,
        preview_first=True,
    )


def sample_source(
    name: str,
    speed_text: str | None,
    *,
    kubelet_version: str | None = None,
    clock: Callable[[], float] | None = None,
) -> LiveSource:
    """A bundled scenario (or a scenario file) played into a private growing recording at ``--speed``;
    ``clock`` (monotonic seconds) paces it (tests drive it; else the wall clock, times :data:`PACE_ENV`)."""
    from live.play import ScenarioPlayer, load_sample, parse_speed
    from live.sources import SampleSource

    speed = parse_speed(speed_text or "10")
    scenario = load_sample(name, kubelet_version=kubelet_version)
    pace = 1.0 if clock is not None else float(os.environ.get(PACE_ENV) or 1.0)
    if clock is None:
        clock = time.monotonic if pace == 1.0 else (lambda: time.monotonic() * pace)
    src = SampleSource(
        lambda out, hold: ScenarioPlayer(
            scenario, out, speed=speed, kubelet_version=kubelet_version, clock=clock, hold_first=hold
        )
    )

    def failure() -> str | None:
        error = src.error()
        return None if error is None else one_line(error)

    shown = "max" if not math.isfinite(speed) else f"{speed:g}×"
    return LiveSource(
        src.root,
        f"sample {name} played at {shown}",
        following=src.following,
        stop=src.stop,
        close=src.close,
        failure=failure,
        finished=src.finished,
        interval_seconds=scenario.interval / 1e6,
        speed=speed * pace,
    )


def cluster_source(forwarded: list[str]) -> LiveSource:
    """A live cluster recorded in this process (live/sources.py ``ClusterSource``: ``record``'s recorder with
    its access paths, RBAC, redaction and fault handling) into a private directory. The API server is reached
    here, before the screen goes full: no cluster → one line, exit 2."""
    import asyncio

    from live.sources import ClusterSource

    src = ClusterSource(forwarded)
    try:
        asyncio.run(src.preflight())
    except BaseException:
        src.close()
        raise

    def failure() -> str | None:
        task = src.task
        if task is None or not task.done() or task.cancelled() or task.exception() is None:
            return None
        return one_line(task.exception())  # type: ignore[arg-type]

    async def finish() -> None:
        task = src.task
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=30)
        except TimeoutError:
            task.cancel()
        except BaseException:  # its failure was shown while it ran (failure())
            return

    context = next((forwarded[i + 1] for i, f in enumerate(forwarded[:-1]) if f == "--context"), None)
    return LiveSource(
        src.root,
        f"cluster (context {context})" if context else "cluster (current context)",
        start=src.start,
        stop=src.stop,
        finish=finish,
        close=src.close,
        failure=failure,
        finished=src.finished,
        interval_seconds=src.opts.interval,
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


def one_line(exc: BaseException) -> str:
    from tui.messages import one_line as line

    return line(exc)


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

    # journal/ before parts/ (sorted): a fold between the two leaves its ticks in both (the reader skips the
    # segments a part covers), never in neither
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
    return scratch_dir(prefix)
