"""What the TUI was given and how it becomes a result: no widgets here, only blocking steps for workers.

A results directory (``result.json``) opens lazily (:mod:`tui.results_dir`); a recording
(``manifest.json``) is replayed with its recorded settings by the engine, which reports progress as
nodes finish (the same callback the CLI's progress bar takes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from recordings.errors import InputError
from replay.settings import SettingsRequest
from tui.results_view import ResultsView

Kind = Literal["results", "recording"]


def classify(path: Path) -> Kind:
    """A results directory or a recording; anything else is a one-line :class:`InputError`."""
    if not path.exists():
        raise InputError("no such file or directory", source=str(path))
    if path.is_dir() and (path / "result.json").is_file():
        return "results"
    if path.is_dir() and (path / "manifest.json").is_file():
        return "recording"
    what = "a directory" if path.is_dir() else "a file"
    raise InputError(f"{what} that is neither a recording (no manifest.json) nor a results directory "
                     "(no result.json); give a directory written by evictlens record / import / replay -o",
                     source=str(path))


@dataclass
class ReplayJob:
    """One replay of a recording on the engine (nodes over ``jobs`` processes); :meth:`run` gives the result."""

    recording: Path
    request: SettingsRequest
    label: str
    jobs: int = 0
    """Local processes (0: all cores)."""

    def __post_init__(self) -> None:
        from recordings.reader import open_recording
        from replay.engine import select_nodes, total_passes

        self.rec = open_recording(self.recording)
        self.names = select_nodes(self.rec, None)
        self.total = total_passes(self.rec, self.names)

    def run(self, advance: Callable[[int], None]) -> ResultsView:
        """Replay (blocking: a worker's job); ``advance(n)`` as passes finish."""
        import os

        from replay.engine import replay

        (result,) = replay(self.rec, [self.request], self.names, jobs=self.jobs or os.cpu_count() or 1,
                           progress=advance)
        return ResultsView.from_result(result, self.label, str(self.recording), self.request, opened=self.rec)


def describe_request(request: SettingsRequest) -> str:
    """One line for a result's settings: the version, every flag given, and the closed loop when chosen."""
    version = request.kubelet_version or "per node"
    flags = ", ".join(f"{k} {v}" for k, v in request.overrides.given().items())
    return (f"kubelet {version}" + (f"; {flags}" if flags else "")
            + ("; counterfactual" if request.counterfactual else ""))
