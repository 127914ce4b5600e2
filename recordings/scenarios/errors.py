"""The one-line error of a bad scenario file: file, line and field, then what was expected."""

from __future__ import annotations

from ..errors import RecordingError


class ScenarioError(RecordingError):
    """``sidecar.yaml: line 12: pods[0].usage.el9: no container el9 in pod alloc (has el1, el2)``."""

    def __init__(self, problem: str, *, file: str, line: int | None = None, field: str | None = None) -> None:
        self.file = file
        self.line = line
        where = f"{file}: line {line}" if line is not None else file
        super().__init__(problem, source=where, field=field)
