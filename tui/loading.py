"""What the TUI was given and how it becomes a result: no widgets here, only blocking steps for workers.

A results directory (``result.json``) opens lazily (:mod:`tui.results_dir`); a recording
(``manifest.json``) is replayed with its recorded settings, one pass at a time, so the worker can
post progress between passes (the same generator the CLI's progress bar consumes).
"""

from __future__ import annotations

from collections.abc import Iterator
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
    """One replay of a recording, run pass by pass; :meth:`finish` gives the result."""

    recording: Path
    request: SettingsRequest
    label: str

    def __post_init__(self) -> None:
        from recordings.reader import open_recording
        from replay.collect import ResultBuilder
        from replay.engine import Replay

        self.rec = open_recording(self.recording)
        self.replay = Replay(self.rec, self.request)
        self.builder = ResultBuilder(self.replay)

    @property
    def total(self) -> int:
        return self.replay.total_passes

    def passes(self) -> Iterator[int]:
        """Run every pass; yields how many are done after each."""
        for done, p in enumerate(self.replay.passes(), 1):
            self.builder.add(p)
            yield done

    def finish(self) -> ResultsView:
        result = self.builder.finish()
        return ResultsView.from_result(result, self.label, str(self.recording), self.request)


def describe_request(request: SettingsRequest) -> str:
    """One line for a result's settings: the version and every flag given."""
    version = request.kubelet_version or "per node"
    flags = ", ".join(f"{k} {v}" for k, v in request.overrides.given().items())
    return f"kubelet {version}" + (f"; {flags}" if flags else "")
