"""The recordings package's one error type, printed by the CLI as a single line.

It mirrors ``replay.errors.InputError`` in shape (problem, source, field) without importing
``replay``: data flows recordings → replay, never the other way.
"""

from __future__ import annotations


class RecordingError(ValueError):
    """Bad recording, bad input file, bad flag or a failed recorder: never shown as a traceback.

    ``source`` names the file, flag or URL; ``field`` the JSON path, column or line inside it;
    ``problem`` what is wrong or what was expected.
    """

    def __init__(self, problem: str, *, source: str | None = None, field: str | None = None) -> None:
        self.problem = problem
        self.source = source
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ": ".join(part for part in (self.source, self.field) if part)
        text = f"{where}: {self.problem}" if where else self.problem
        return " ".join(text.split())

    def within(self, *, source: str | None = None, field: str | None = None) -> RecordingError:
        """Return a copy placed in a wider context (an outer file, a field prefix)."""
        new_field = self.field
        if field:
            new_field = f"{field}.{self.field}" if self.field else field
        return RecordingError(self.problem, source=self.source or source, field=new_field)
