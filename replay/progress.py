"""Progress for long work: a rich bar on stderr when it is a terminal, nothing otherwise.

Front ends loop over a generator and call ``advance``; nothing passes callbacks into the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(label: str, total: int, *, enabled: bool = True) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; the bar disappears when done (the caller prints the final summary)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield lambda n: None
        return
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
