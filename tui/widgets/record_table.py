"""A table of records that keeps the raw values: sort by any column, filter by name, export what is shown.

Cells are rendered from raw values by each column's formatter, so sorting compares numbers (not
``1.5Gi`` against ``512Mi``) and an export writes the values, not their rendering.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable


def plain(value: Any) -> str:
    return "—" if value is None else str(value)


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    fmt: Callable[[Any], str | Text] = plain
    right: bool = False


@dataclass(frozen=True)
class Record:
    key: str
    values: tuple[Any, ...]
    style: str = ""
    mark: str = ""
    """Drawn before the first cell (``✖`` on a kernel kill): a sign, not a value (never sorted, filtered or
    exported)."""


SORT_MARKS = {False: " ▲", True: " ▼"}


class RecordTable(DataTable[str | Text]):
    """Rows of raw values; ``s`` sorts by the next column (its header marked ▲/▼), ``S`` reverses, a header
    click sorts by it; ``j``/``k``/``g``/``G`` move as in k9s (and vi)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sort_next", "Sort column"),
        Binding("S", "sort_reverse", "Reverse sort"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "first_row", "First row", show=False),
        Binding("G", "last_row", "Last row", show=False),
    ]

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self.columns_spec: list[Column] = []
        self.records: list[Record] = []
        self.sort_column: int | None = None
        self.sort_descending = False
        self.filter_text = ""

    def show(self, columns: Sequence[Column], records: Sequence[Record]) -> None:
        """Replace the content (keeps the sort, the filter and, when still there, the selected row)."""
        keep = self.selected_key()
        if [c.key for c in columns] != [c.key for c in self.columns_spec]:
            self.sort_column = (
                None if self.sort_column is None or self.sort_column >= len(columns) else self.sort_column
            )
        self.columns_spec = list(columns)
        self.records = list(records)
        self._render_rows(keep)

    def visible_records(self) -> list[Record]:
        text = self.filter_text.lower()
        rows = [r for r in self.records if text in _name(r).lower()] if text else list(self.records)
        if self.sort_column is not None:
            i = self.sort_column
            present = [r for r in rows if r.values[i] is not None]
            missing = [r for r in rows if r.values[i] is None]
            present.sort(key=lambda r: _sort_key(r.values[i]), reverse=self.sort_descending)
            rows = present + missing
        return rows

    def header_label(self, index: int) -> str:
        """A column's header, with ▲ (ascending) or ▼ (descending) on the one sorted by."""
        label = self.columns_spec[index].label
        return label + SORT_MARKS[self.sort_descending] if index == self.sort_column else label

    def sort_title(self) -> str:
        """``sorted by real ▼`` (empty when unsorted): in the table's top border, shown even when the sorted column
        is scrolled off to the right."""
        if self.sort_column is None or self.sort_column >= len(self.columns_spec):
            return ""
        arrow = SORT_MARKS[self.sort_descending].strip()
        return f"sorted by {self.columns_spec[self.sort_column].label} {arrow} (s: next, S: reverse)"

    def _render_rows(self, keep: str | None = None) -> None:
        title = self.sort_title()
        self.border_title = title or None
        self.set_class(bool(title), "-sorted")
        self.clear(columns=True)
        for i, c in enumerate(self.columns_spec):
            self.add_column(self.header_label(i), key=c.key)
        for record in self.visible_records():
            cells: list[str | Text] = []
            for column, value in zip(self.columns_spec, record.values, strict=True):
                cell = column.fmt(value)
                text = cell if isinstance(cell, Text) else Text(cell)
                if record.mark and not cells:
                    text = Text.assemble(f"{record.mark} ", text)
                if record.style:
                    text.stylize(record.style)
                if column.right:
                    text.justify = "right"
                cells.append(text)
            self.add_row(*cells, key=record.key)
        if keep is not None:
            with contextlib.suppress(Exception):  # the row was filtered out
                self.move_cursor(row=self.get_row_index(keep))

    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:
            return None
        return None if key.value is None else str(key.value)

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._render_rows(self.selected_key())

    def sort_by(self, index: int, descending: bool | None = None) -> None:
        if descending is None:
            descending = not self.sort_descending if self.sort_column == index else False
        self.sort_column, self.sort_descending = index, descending
        self._render_rows(self.selected_key())

    def action_sort_next(self) -> None:
        """The next column; the first press the first one that changes the order (the rows come sorted by
        the first column, so sorting by it again would look like nothing happened)."""
        if not self.columns_spec:
            return
        if self.sort_column is None:
            self.sort_by(self._first_visible_sort(), False)
        else:
            self.sort_by((self.sort_column + 1) % len(self.columns_spec), False)

    def _first_visible_sort(self) -> int:
        now = [r.key for r in self.visible_records()]
        for i in range(1, len(self.columns_spec)):
            rows = [r for r in self.records if r.key in set(now)]
            present = sorted((r for r in rows if r.values[i] is not None), key=lambda r: _sort_key(r.values[i]))
            if [r.key for r in present] + [r.key for r in rows if r.values[i] is None] != now:
                return i
        return min(1, len(self.columns_spec) - 1)

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)

    def action_sort_reverse(self) -> None:
        self.sort_by(self.sort_column or 0, not self.sort_descending)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_index)

    def export_rows(self) -> tuple[list[str], list[tuple[Any, ...]]]:
        return [c.key for c in self.columns_spec], [r.values for r in self.visible_records()]


def _name(record: Record) -> str:
    """What ``/`` matches: the first column, or the first text one when it holds a number (a ranking's rank)."""
    first = record.values[0] if record.values else ""
    if not isinstance(first, (int, float)):
        return str(first)
    return next((v for v in record.values if isinstance(v, str)), str(first))


def _sort_key(value: Any) -> tuple[int, Any]:
    """Numbers before text, each compared with its own kind (a column may hold both: an eviction's hard/soft
    next to a kernel kill's kind)."""
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, str(value).lower())
