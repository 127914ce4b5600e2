"""Every error evictlens shows to a user, in one tree (as httpx keeps its exceptions in one module).

The tree lives in ``recordings`` because it is the bottom layer: ``replay`` imports from here,
``recordings`` never imports ``replay``.  Each error carries *where* (``source``: a file, flag,
URL or vector; ``line``; ``field``: a JSON path, key or column) and *what is wrong or expected*
(``problem``), and the CLI edge (:mod:`recordings.cli_edge`) prints it as one line with the
command's exit status::

    EvictlensError                 anything the CLI reports as one line, never as a traceback
    └── InputError                 bad input: a file, a flag, a conformance vector (exit 2)
        └── RecordingError         a recording, or a file being turned into one, is bad
            └── RecorderError      the live recorder cannot do its work (cluster, credentials, disk)
"""

from __future__ import annotations

import re
from typing import Self

__all__ = ["EXIT_BAD_INPUT", "EXIT_FINDING", "EXIT_OK", "EvictlensError", "InputError", "RecorderError",
           "RecordingError"]

EXIT_OK = 0
EXIT_FINDING = 1
"""The command worked and found something to report (e.g. conformance failures)."""
EXIT_BAD_INPUT = 2

_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


class EvictlensError(Exception):
    """Base of the tree: a failure the user can act on, printed as a single line.

    ``hint`` is advice appended after the problem (``use 24h``), kept apart so that ``problem``
    can mirror an upstream message exactly.
    """

    exit_code = EXIT_BAD_INPUT

    def __init__(
        self,
        problem: str,
        *,
        source: str | None = None,
        field: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.field = field
        self.line = line
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """``source: line N: field: problem; hint`` with the parts that are known, on one line."""
        where = ": ".join(
            part for part in (self.source, f"line {self.line}" if self.line is not None else None, self.field) if part
        )
        text = f"{where}: {self.problem}" if where else self.problem
        if self.hint:
            text = f"{text}; {self.hint}"
        return _LINE_BREAKS.sub(" ", text).strip()

    def within(self, *, source: str | None = None, field: str | None = None) -> Self:
        """Return a copy (same class) placed in a wider context: an outer source, a field prefix."""
        new_field = self.field
        if field:
            new_field = f"{field}.{self.field}" if self.field else field
        return type(self)(self.problem, source=self.source or source, field=new_field, line=self.line, hint=self.hint)


class InputError(EvictlensError, ValueError):
    """Bad input: malformed file, unknown signal, unparsable quantity or duration, missing field, bad flag."""


class RecordingError(InputError):
    """A bad recording (manifest, part, journal) or a bad file or flag given to record/import/pack/unpack."""


class RecorderError(RecordingError):
    """The live recorder cannot go on: unreachable or refusing API server, bad credentials, full disk."""
