"""Screen 5: two results side by side, evictions aligned by pod, message differences marked."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static

from replay.compare import EvictionPair, align
from replay.replay_report import marked_diff
from tui.fmt import fmt_clock
from tui.results_view import ResultsView
from tui.screens.base import ResultsScreen
from tui.widgets.record_table import Column, Record, RecordTable

if TYPE_CHECKING:
    pass

STATUS_STYLE = {"message differs": "bold yellow", "only in A": "red", "only in B": "green"}


def pair_records(pairs: list[EvictionPair]) -> tuple[list[Column], list[Record]]:
    columns = [
        Column("pod", "pod"),
        Column("node", "node"),
        Column("a_time", "A time", fmt_clock),
        Column("b_time", "B time", fmt_clock),
        Column("status", "difference"),
    ]
    records = [
        Record(
            p.key,
            (f"{p.namespace}/{p.pod}", p.node, p.a.time if p.a else None, p.b.time if p.b else None, p.status),
            STATUS_STYLE.get(p.status, ""),
        )
        for p in pairs
    ]
    return columns, records


def pair_text(pair: EvictionPair, a_label: str, b_label: str) -> Text:
    out = Text()
    out.append(f"A · {a_label}\n", style="bold")
    out.append((pair.a.message if pair.a else "(not evicted)") + "\n\n")
    out.append(f"B · {b_label}\n", style="bold")
    out.append((pair.b.message if pair.b else "(not evicted)") + "\n\n")
    if pair.a and pair.b and pair.a.message != pair.b.message:
        out.append("A → B (red: only in A; green: only in B)\n", style="bold")
        out.append_text(marked_diff(pair.a.message, pair.b.message))
    return out


class CompareScreen(ResultsScreen):
    TITLE = "Compare"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("x", "swap", "Swap A/B")]

    def __init__(self, a: ResultsView, b: ResultsView) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.pairs: list[EvictionPair] = []

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static(id="compare-title")
        yield RecordTable(id="pairs")
        with VerticalScroll(id="compare-messages"):
            yield Static(id="pair-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.fill()
        self.query_one("#pairs", RecordTable).focus()

    def fill(self) -> None:
        self.pairs = align(self.a.result, self.b.result)
        differ = sum(1 for p in self.pairs if p.status != "same message")
        self.query_one("#compare-title", Static).update(
            Text.assemble(
                ("A: ", "bold"),
                self.a.label,
                "\n",
                ("B: ", "bold"),
                self.b.label,
                f"\n{len(self.pairs)} pods evicted in either · {differ} differ",
            )
        )
        self.query_one("#pairs", RecordTable).show(*pair_records(self.pairs))
        self._detail(self.pairs[0] if self.pairs else None)

    def _detail(self, pair: EvictionPair | None) -> None:
        text = pair_text(pair, self.a.label, self.b.label) if pair else Text("Neither result evicts anything.")
        self.query_one("#pair-detail", Static).update(text)

    @on(DataTable.RowHighlighted, "#pairs")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        for p in self.pairs:
            if p.key == event.row_key.value:
                self._detail(p)

    def action_swap(self) -> None:
        self.a, self.b = self.b, self.a
        self.fill()
