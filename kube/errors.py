"""Every error evictlens shows to a user, in one tree (as httpx keeps its exceptions in one module).

The tree lives in ``recordings`` because it is the bottom layer: ``replay`` imports from here,
``recordings`` never imports ``replay``.  Each error carries *where* (``source``: a file, flag,
URL or vector; ``line``; ``field``: a JSON path, key or column) and *what is wrong or expected*
(``problem``), and the CLI edge (:mod:`recordings.cli_edge`) prints it as one line with the
command's exit status::

    EvictlensError                 anything the CLI reports as one line, never as a traceback
    ├── InputError                 bad input: a file, a flag, a conformance vector (exit 2)
    │   └── RecordingError         a recording, or a file being turned into one, is bad
    └── RecorderError              the live recorder cannot do its work: the API server or a kubelet
        │                          cannot be reached, the disk is full (exit 1, as kubectl exits 1)
        └── CredentialError        the cluster refused the credentials: 401, 403, a failing exec
                                   plugin, a rejected client certificate (exit 3)

A network failure is not bad input: retrying the same command later may work, so it must not
exit 2, which scripts read as "fix the command line".
"""

from __future__ import annotations

import re
from typing import Self

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_CREDENTIALS",
    "EXIT_FINDING",
    "EXIT_OK",
    "EXIT_STATUS_HELP",
    "CredentialError",
    "EvictlensError",
    "InputError",
    "RecorderError",
    "RecordingError",
]

EXIT_OK = 0
EXIT_FINDING = 1
"""The command worked and found something to report (e.g. conformance failures)."""
EXIT_BAD_INPUT = 2
EXIT_CREDENTIALS = 3
"""The cluster refused the credentials (401, 403, exec plugin, client certificate): fix the kubeconfig or RBAC."""
EXIT_STATUS_HELP = (
    "Exit status: 0 done, 1 a finding (e.g. conformance failures), a recorder that could not reach the "
    "cluster or write the disk, or an unexpected error, 2 bad input, 3 credentials refused by the cluster."
)
"""The exit statuses in one sentence, for the ``--help`` of every command host."""

_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with terminal control characters written as ``\\x1b``: a name taken from a file (a tar member, a
    pod, a label) must not clear the screen or move the cursor when an error names it."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


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
        return printable(_LINE_BREAKS.sub(" ", text).strip())

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


class RecorderError(EvictlensError):
    """The live recorder cannot go on: an unreachable API server or kubelet, a full disk (exit 1)."""

    exit_code = EXIT_FINDING


class CredentialError(RecorderError):
    """The credential itself is unusable (token rejected, RBAC, exec plugin failed, client certificate
    refused): retrying will not help, the recorder stops with exit 3."""

    exit_code = EXIT_CREDENTIALS
