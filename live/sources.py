"""Where a live view's ticks come from: a recording being written, a played sample, or a cluster directly.

Each source ends as a recording directory growing tick by tick, which :class:`live.engine.LiveEngine`
follows; the watch loop (live/watch.py) only asks a source where it writes, whether it has finished, and
to stop. A sample or a cluster is written into a private temporary directory (0700, files 0600, as every
recording) that goes when the watch ends; a cluster is recorded by ``record``'s own recorder, in-process,
with its access paths, RBAC, redaction and fault handling (a node that does not answer is a gap: stale).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kube.errors import InputError, RecordingError
from recordings import format as fmt
from recordings.scratch import scratch_path

if TYPE_CHECKING:
    from recordings.recorder.main import Recorder
    from recordings.recorder.options import RecordOptions

    from .play import ScenarioPlayer

RETAIN = "15m"
"""A live cluster's private recording keeps only this much, or three intervals if that is longer (``record
--retain``, where it exists): the engine needs the recent ticks only, and a watch of days must not fill the disk."""


class Source(Protocol):
    root: Path

    def following(self, after_tick: int | None = None) -> None:
        """The engine has opened the recording, holding its ticks up to ``after_tick`` (a played sample then
        commits its first tick)."""

    def finished(self) -> bool: ...
    def stop(self) -> None: ...
    def close(self) -> None: ...


def writer_pid(root: Path) -> int | None:
    """The pid of the live process holding ``root``'s writer lock, else None (no lock, or its holder is gone).

    Read from ``writer.lock`` (recordings/format.py: the holder writes its pid, unlinks the file when done;
    one killed leaves it behind with a dead pid). An empty lock file is a writer starting: pid 0.
    """
    try:
        text = (root / fmt.LOCK).read_text("ascii", "replace").strip()
    except OSError:
        return None
    if not text:
        return 0
    if not text.isdigit():
        return None
    pid = int(text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid  # alive, another user's
    return pid


class FollowSource:
    """``watch REC --follow``: a recording another process (``record``, the flight recorder) is writing."""

    def __init__(self, root: Path) -> None:
        self.root = root
        if not root.is_dir():
            raise RecordingError("no such recording directory", source=str(root))
        if writer_pid(root) is None:
            done = fmt.MANIFEST if (root / fmt.MANIFEST).exists() else None
            what = "a finished recording" if done else "no recording being written"
            raise RecordingError(
                f"is not being written ({what}: no live process holds {fmt.LOCK}); --follow follows a recording "
                "that record or the flight recorder is writing (for a finished one: evictlens replay or tui)",
                source=str(root),
            )

    def following(self, after_tick: int | None = None) -> None:
        return None

    def finished(self) -> bool:
        return writer_pid(self.root) is None

    def stop(self) -> None:
        return None

    def close(self) -> None:
        return None


def private_dir(prefix: str) -> Path:
    """A new 0700 directory for a recording that lives as long as the watch (mkdtemp makes it 0700)."""
    return scratch_path(prefix)


class SampleSource:
    """``--sample NAME --speed N``: a bundled scenario played in real time (live/play.py) into a private dir."""

    def __init__(self, player_of: ScenarioPlayerFactory) -> None:
        self._tmp = private_dir("evictlens-watch-sample-")
        self.root = self._tmp / "rec"
        self._following = threading.Event()
        self.player = player_of(self.root, self._following).start()

    def following(self, after_tick: int | None = None) -> None:
        self._following.set()

    def finished(self) -> bool:
        return self.player.done

    def error(self) -> BaseException | None:
        return self.player.error

    def stop(self) -> None:
        self.player.stop()

    def close(self) -> None:
        self.player.stop()
        self.player.join(60)
        shutil.rmtree(self._tmp, ignore_errors=True)


class ScenarioPlayerFactory(Protocol):
    def __call__(self, out: Path, hold_first: threading.Event) -> ScenarioPlayer: ...


def record_options(forwarded: Sequence[str], out: Path) -> RecordOptions:
    """``record``'s options for a watch's in-process recorder: ``forwarded`` are record's own flags as the user
    gave them to watch (parsed by record's own parser, so they mean what they mean to ``record``), into ``out``,
    quiet, pods and events watched (real evictions), with a short ``--retain`` where record has it."""
    from kube.duration import parse_duration_seconds
    from recordings.cli_edge import OneLineParser
    from recordings.recorder.options import add_record_arguments, options_from_args

    parser = OneLineParser(prog="evictlens watch", add_help=False)
    add_record_arguments(parser)
    argv = ["-o", str(out), "--status", "none", *forwarded]
    opts = options_from_args(parser.parse_args(argv))
    if "--retain" not in parser._option_string_actions:
        return opts
    keep = max(parse_duration_seconds(RETAIN, flag="--retain"), 3 * opts.interval)  # record wants ≥ 2 intervals
    return options_from_args(parser.parse_args([*argv, "--retain", f"{keep:g}s"]))


class ClusterSource:
    """A live cluster: ``record``'s recorder run in this process's event loop into a private directory."""

    def __init__(self, forwarded: Sequence[str]) -> None:
        self._tmp = private_dir("evictlens-watch-")
        self.root = self._tmp / "rec"
        try:
            self.opts = record_options(forwarded, self.root)
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise
        self.recorder: Recorder | None = None
        self.task: asyncio.Task[int] | None = None

    async def preflight(self) -> None:
        """Reach the API server before anything starts: no cluster → one line (exit 2), refused credentials
        → one line (exit 3), as the recorder would say it, under ``watch``'s name."""
        from kube.errors import CredentialError
        from recordings.recorder.client import KubeClient, RequestFailed

        client = KubeClient.build(self.opts)
        try:
            await client.refresh_credentials()
            try:
                await client.get_json("/version", deadline=time.monotonic() + self.opts.timeout * 3)
                await client.get_json(
                    "/api/v1/nodes?limit=1",
                    deadline=time.monotonic() + self.opts.timeout * 3,
                )
            except RequestFailed as exc:  # 401/403 are CredentialErrors of their own (exit 3)
                if exc.refused_certificate is not None:
                    raise CredentialError(exc.refused_certificate, source=client.server) from None
                raise InputError(f"no cluster reachable: {exc}", source=client.server) from None
        finally:
            await client.close()

    def start(self) -> None:
        from recordings.recorder.main import Recorder

        self.recorder = Recorder(self.opts)
        self.task = asyncio.get_running_loop().create_task(self.recorder.run())

    def following(self, after_tick: int | None = None) -> None:
        return None

    def finished(self) -> bool:
        return self.task is not None and self.task.done()

    def exit_code(self) -> int:
        if self.task is None or not self.task.done() or self.task.cancelled():
            return 0
        return int(self.task.result()) if self.task.exception() is None else 1

    def stop(self) -> None:
        if self.recorder is not None:
            self.recorder.stop.set()

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)


def forwarded_record_flags(args: argparse.Namespace) -> list[str]:
    """watch's cluster flags, given back as ``record`` takes them."""
    out: list[str] = []
    for flag in (
        "kubeconfig",
        "context",
        "nodes",
        "interval",
        "duration",
        "kubelet_port",
        "kubelet_ca",
    ):
        value = getattr(args, flag, None)
        if value is not None:
            out += [f"--{flag.replace('_', '-')}", str(value)]
    if getattr(args, "concurrency", None) is not None:
        out += ["--concurrency", str(args.concurrency)]
    if getattr(args, "timeout", None) is not None:
        out += ["--timeout", str(args.timeout)]
    for flag in ("kubelet_direct", "http1"):
        if getattr(args, flag, False):
            out.append(f"--{flag.replace('_', '-')}")
    return out


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(path)
