"""The one error type for bad input, carried to the CLI edge and printed as a single line.

Every parser in the port raises :class:`InputError` naming *where* (file or flag), *what*
(field) and *what was expected*, so users never see a traceback for a typo in their data.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input: malformed file, unknown signal, unparsable quantity, missing field.

    ``source`` is the file, flag or vector the input came from; ``field`` the JSON path or
    key inside it; ``problem`` what is wrong or what was expected.
    """

    def __init__(self, problem: str, *, source: str | None = None, field: str | None = None) -> None:
        self.problem = problem
        self.source = source
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ": ".join(part for part in (self.source, self.field) if part)
        return f"{where}: {self.problem}" if where else self.problem

    def within(self, *, source: str | None = None, field: str | None = None) -> InputError:
        """Return a copy placed in a wider context (an outer source, a field prefix)."""
        new_field = self.field
        if field:
            new_field = f"{field}.{self.field}" if self.field else field
        return InputError(self.problem, source=self.source or source, field=new_field)
