"""Screen 5: two results side by side, evictions aligned by pod, message differences marked; each result's kernel
kills (issue 17 item 3) in the title, and a pod the kernel killed in one and evicted or kept in the other among
the rows (✖)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from recordings.console import plural
from replay.compare import EvictionPair, align
from replay.kernel import Judged, judge
from replay.replay_report import kill_victim, marked_diff
from replay.results import Eviction, KernelKill, ReplayResult
from tui.fmt import fmt_clock
from tui.results_view import ResultsView
from tui.screens.base import ResultsScreen
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.record_table import Column, Record, RecordTable
from tui.widgets.title_header import TitleHeader

if TYPE_CHECKING:
    pass

STATUS_STYLE = {"message differs": "bold yellow", "only in A": "red", "only in B": "green"}
KILL_STYLE = "bold red"


def kernel_summary(result: ReplayResult) -> Text:
    """``✖ 1 kernel kill (first 00:03:24 on worker-1) · memory ran out between passes 1 time · ⚠ NotReady
    worker-1``: what counts against the result (:func:`replay.kernel.judge`: in a closed loop all of it, on a
    recording only before the node's horizon, the rest "not judged")."""
    kernel: Judged = judge(result)
    kills = len(kernel.kills)
    out = Text()
    if kills:
        first = kernel.kills[0]
        out.append(f"✖ {plural(kills, 'kernel kill')}", style=KILL_STYLE)
        out.append(f" (first {first.time.strftime('%H:%M:%S')} on {first.node or '?'}: {kill_victim(first)})")
    else:
        out.append("0 kernel kills")
    if kernel.too_fast:
        out.append(f" · memory ran out between passes {plural(len(kernel.too_fast), 'time')}", style="red")
    if kernel.not_ready_nodes:
        out.append(f" · ⚠ NotReady {', '.join(kernel.not_ready_nodes)}", style=KILL_STYLE)
    apart = len(kernel.kills_not_judged) + kernel.too_fast_not_judged
    if apart:
        out.append(f" · {apart} after its horizon, not judged", style="yellow")
    return out


def _when(e: Eviction | None, k: KernelKill | None) -> datetime | None:
    """A side's time: its eviction's, else its kernel kill's (the difference column says which)."""
    return e.time if e is not None else (k.time if k is not None else None)


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
            (
                f"{p.namespace}/{p.pod}",
                p.node,
                _when(p.a, p.a_kill),
                _when(p.b, p.b_kill),
                p.status,
            ),
            KILL_STYLE if p.killed else STATUS_STYLE.get(p.status, ""),
            "✖" if p.killed else "",
        )
        for p in pairs
    ]
    return columns, records


def pair_text(pair: EvictionPair, a_label: str, b_label: str) -> Text:
    out = Text()
    for side, label, e, k in (("A", a_label, pair.a, pair.a_kill), ("B", b_label, pair.b, pair.b_kill)):
        out.append(f"{side} · {label}\n", style="bold")
        if k is not None:
            out.append(
                f"✖ the kernel OOM-killed {kill_victim(k)} at {fmt_clock(k.time)} (not the kubelet)\n", style=KILL_STYLE
            )
        out.append((e.message if e else "(not evicted)") + "\n\n")
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
        yield TitleHeader()
        yield Static(id="compare-title")
        yield from self.bars()
        yield RecordTable(id="pairs")
        with VerticalScroll(id="compare-messages"):
            yield Static(id="pair-detail")
        yield KeysFooter()

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
                " · ",
                kernel_summary(self.a.result),
                "\n",
                ("B: ", "bold"),
                self.b.label,
                " · ",
                kernel_summary(self.b.result),
                f"\n{len(self.pairs)} pods evicted or OOM-killed in either · {differ} differ",
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
