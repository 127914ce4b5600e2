"""What the TUI was given and how it becomes a result: no widgets here, only blocking steps for workers.

A results directory (``result.json``) opens lazily (:mod:`tui.results_dir`); a recording
(``manifest.json``) is replayed with its recorded settings by the engine, which reports progress as
nodes finish (the same callback the CLI's progress bar takes).
"""

from __future__ import annotations

import os
import sys
import tarfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kube.errors import InputError
from recordings.reader import Recording
from replay.settings import SettingsRequest
from tui.results_view import ResultsView

Kind = Literal["results", "recording", "packed"]


def classify(path: Path) -> Kind:
    """A results directory, a recording, or a packed recording (``.evictlens.tar``, opened unpacked into a
    temporary directory); anything else is a one-line :class:`InputError`."""
    from recordings.pack import SUFFIX

    if not path.exists():
        raise InputError("no such file or directory", source=str(path))
    if path.is_file() and path.name.endswith(SUFFIX):
        return "packed"
    if path.is_file() and tarfile.is_tarfile(path):
        raise InputError(
            f"a tar file not named *{SUFFIX}; if it is a packed recording, evictlens unpack it "
            "(evictlens unpack FILE DIR) and open the directory",
            source=str(path),
        )
    if path.is_dir() and (path / "result.json").is_file():
        return "results"
    if path.is_dir() and (path / "manifest.json").is_file():
        return "recording"
    what = "a directory" if path.is_dir() else "a file"
    raise InputError(
        f"{what} that is neither a recording (no manifest.json) nor a results directory "
        "(no result.json); give a directory written by evictlens record / import / replay -o",
        source=str(path),
    )


@dataclass
class ReplayJob:
    """One replay of a recording on the engine (nodes over ``jobs`` processes); :meth:`run` gives the result."""

    recording: Path
    request: SettingsRequest
    label: str
    jobs: int = 0
    """Local processes (0: all cores)."""
    opened: Recording | None = None
    """The recording already open (a what-if of a result that has it), else opened here."""

    def __post_init__(self) -> None:
        from recordings.reader import open_recording
        from replay.engine import select_nodes, total_passes

        self.rec = self.opened or open_recording(self.recording)
        self.names = select_nodes(self.rec, None)
        self.total = total_passes(self.rec, self.names)

    def run(self, advance: Callable[[int], None]) -> ResultsView:
        """Replay (blocking: a worker's job); ``advance(n)`` as passes finish."""
        from replay.engine import replay

        start_process_helpers()
        (result,) = replay(
            self.rec, [self.request], self.names, jobs=self.jobs or os.cpu_count() or 1, progress=advance
        )
        return ResultsView.from_result(result, self.label, str(self.recording), self.request, opened=self.rec)


_HELPERS = threading.Lock()


def start_process_helpers() -> None:
    """Start multiprocessing's resource tracker and fork server with a real ``sys.stderr``.

    The tracker is handed ``sys.stderr.fileno()``; inside Textual ``sys.stderr`` is a capture whose fileno()
    is -1, and the engine's process pool failed with "bad value(s) in fds_to_keep". Started once here with
    /dev/null in its place (the tracker's warnings must not draw over the screen), every later pool reuses them.
    """
    import multiprocessing
    from multiprocessing import forkserver, resource_tracker

    with _HELPERS:
        try:
            if sys.stderr.fileno() >= 0:
                return
        except (AttributeError, OSError, ValueError):
            pass
        saved = sys.stderr
        with open(os.devnull, "w") as null:
            sys.stderr = null
            try:
                resource_tracker.ensure_running()
                if "forkserver" in multiprocessing.get_all_start_methods():
                    forkserver.ensure_running()
            finally:
                sys.stderr = saved


def describe_request(request: SettingsRequest) -> str:
    """One line for a result's settings: the version, every flag given, and the closed loop when chosen."""
    version = request.kubelet_version or "per node"
    flags = ", ".join(f"{k} {v}" for k, v in request.overrides.given().items())
    return (
        f"kubelet {version}" + (f"; {flags}" if flags else "") + ("; counterfactual" if request.counterfactual else "")
    )
