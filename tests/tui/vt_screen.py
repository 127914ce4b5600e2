"""Just enough of a terminal to read what ``evictlens tui`` shows in a pseudo-terminal.

Textual positions every line it paints with a cursor move (CUP) and styles it with SGR; the
raw byte stream therefore holds stale and partial text, and waiting on it (pexpect's
``expect``) can match a screen that is already gone.  :class:`Screen` replays the stream onto
a grid of cells, and :func:`wait_for_screen` reads the child until the grid shows (and no
longer shows) given texts: tests wait on what the screen shows, never on timing.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Sequence
from typing import Any

import pexpect  # type: ignore[import-untyped]

# CSI (ESC [ params intermediates final), OSC (ESC ] ... BEL or ST), or a two-character escape
# (never ESC [ or ESC ]: those are the start of a CSI or OSC whose rest is still to come).
_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]*[0-Z\\^-~])")
_LONGEST_PENDING = 4096  # an escape still unterminated after this many characters is not one


class Screen:
    """A ``rows`` × ``cols`` grid fed with a terminal's output: CUP, CR, LF and text; all else is skipped."""

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.cells = [[" "] * cols for _ in range(rows)]
        self.row = self.col = 0
        self._pending = ""

    def feed(self, data: str) -> None:
        data, self._pending = self._pending + data, ""
        i = 0
        while i < len(data):
            ch = data[i]
            if ch == "\x1b":
                match = _SEQUENCE.match(data, i)
                if match is None:
                    if len(data) - i < _LONGEST_PENDING:
                        self._pending = data[i:]  # the rest of the sequence comes with the next read
                        return
                    i += 1
                    continue
                self._control(match.group(0))
                i = match.end()
                continue
            if ch == "\n":
                self.row = min(self.row + 1, self.rows - 1)
            elif ch == "\r":
                self.col = 0
            elif ch >= " ":
                self._put(ch)
            i += 1

    def _control(self, seq: str) -> None:
        if seq.startswith("\x1b[") and seq[-1] in "Hf" and not seq.startswith("\x1b[?"):
            parts = [*seq[2:-1].split(";"), "", ""][:2]
            self.row = min(max(int(parts[0] or 1), 1), self.rows) - 1
            self.col = min(max(int(parts[1] or 1), 1), self.cols) - 1
        elif seq == "\x1b[2J":
            self.cells = [[" "] * self.cols for _ in range(self.rows)]

    def _put(self, ch: str) -> None:
        if unicodedata.combining(ch):
            return
        width = 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
        if self.col + width <= self.cols:
            self.cells[self.row][self.col] = ch
            if width == 2:
                self.cells[self.row][self.col + 1] = ""
        self.col = min(self.col + width, self.cols)

    def text(self) -> str:
        return "\n".join("".join(row) for row in self.cells)


def wait_for_screen(
    child: Any, screen: Screen, shows: Sequence[str] = (), hides: Sequence[str] = (), timeout: float = 120
) -> None:
    """Read ``child`` into ``screen`` until every text of ``shows`` is on it and none of ``hides``.

    The deadline is generous (a loaded 2-core machine); on failure the message holds the screen.
    """
    deadline = time.monotonic() + timeout
    while True:
        text = screen.text()
        if all(s in text for s in shows) and not any(h in text for h in hides):
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(
                f"the screen did not show {list(shows)} without {list(hides)} in {timeout:.0f}s:\n{text}"
            )
        try:
            screen.feed(child.read_nonblocking(65536, timeout=min(1.0, left)))
        except pexpect.TIMEOUT:
            continue
        except pexpect.EOF:
            raise AssertionError(f"the program ended before the screen showed {list(shows)}:\n{text}") from None


def close_child(child: Any) -> None:
    """End a pexpect child for good: ``close(force=True)`` gives a SIGKILLed process 0.1 s to be reaped and raises
    "Could not terminate the child" when a loaded box takes longer; then wait for it (it is already killed)."""
    try:
        child.close(force=True)
    except pexpect.ExceptionPexpect:
        child.ptyproc.kill(9)
        child.ptyproc.wait()
