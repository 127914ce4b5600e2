"""Where evictlens builds its rich consoles, so every command fits the terminal the same way.

* Width: ``COLUMNS`` when set; else the real terminal's width, found on stdout, stderr or stdin
  (so ``evictlens explain ... | less`` still fits the terminal); else, with no terminal at all
  (CI logs, files), :data:`PIPE_WIDTH` columns rather than rich's 80, which squeezes tables.
* Colour: ``NO_COLOR`` (https://no-color.org) turns it off, as does a stream that is not a terminal.
* A reader that goes away (``| head``) ends the command at the CLI edge, quietly, like any other write.
* Tables: :func:`print_table` never splits a header inside a word and never shortens a value with
  "…"; a table that cannot fit even then is printed as one "header: value" block per row.

In ``recordings`` (the bottom layer) so that the recorder's status line and the replay renderers
share it.
"""

from __future__ import annotations

import os
from typing import IO

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

__all__ = ["PIPE_WIDTH", "make_console", "plural", "print_table"]

PIPE_WIDTH = 132


def terminal_width() -> int | None:
    """``COLUMNS``, else the width of whichever standard stream is a terminal, else None."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (1, 2, 0):
        try:
            width = os.get_terminal_size(fd).columns
        except (OSError, ValueError):
            continue
        if width > 0:
            return width
    return None


class _Console(Console):
    """Leaves a closed pipe to the CLI edge (rich alone would exit 1 on its own)."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def make_console(*, stderr: bool = False, file: IO[str] | None = None) -> Console:
    """A console for people: terminal width (or :data:`PIPE_WIDTH`), no guessing of highlights."""
    return _Console(
        stderr=stderr,
        file=file,
        width=terminal_width() or PIPE_WIDTH,
        highlight=False,
        no_color=bool(os.environ.get("NO_COLOR")) or None,
        soft_wrap=False,
    )


def _header_words(table: Table) -> None:
    """Give every column at least the width of its header's longest word (headers wrap only at spaces)."""
    for column in table.columns:
        header = column.header.plain if isinstance(column.header, Text) else str(column.header)
        longest = max((len(word) for word in header.split()), default=1)
        column.min_width = max(column.min_width or 0, longest)
        if column.overflow == "ellipsis":
            column.overflow = "fold"  # a folded value is still the whole value


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` to fit ``console``; too narrow for its columns, print it as blocks of "header: value"."""
    _header_words(table)
    needed = Measurement.get(console, console.options.update_width(1 << 16), table).minimum
    if needed <= console.width:
        console.print(table)
        return
    if table.title:
        console.print(table.title, style="bold" if isinstance(table.title, str) else None)
    headers = [column.header for column in table.columns]
    for cells in zip(*(column.cells for column in table.columns), strict=True):
        for i, (header, cell) in enumerate(zip(headers, cells, strict=True)):
            value = cell if isinstance(cell, Text) else Text.from_markup(str(cell)) if isinstance(cell, str) else cell
            prefix = "- " if i == 0 else "  "
            if isinstance(value, Text):
                if not value.plain:
                    continue
                console.print(Text.assemble(f"{prefix}{header}: ", value), overflow="fold")
            else:
                console.print(f"{prefix}{header}:")
                console.print(value)


def plural(n: int, word: str) -> str:
    """``1 eviction``, ``2 evictions``: a count with its noun, as people write it."""
    return f"{n} {word}{'' if n == 1 else 's'}"
