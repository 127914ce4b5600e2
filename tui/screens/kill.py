"""Screen 3 for a kernel kill (a ✖ row): what the kernel killed and where memory ran out, the candidates'
``oom_score_adj`` and badness, what the kubelet saw at its last pass before the kill and why it did not act, and what
would have made it act in time (checked by the engine) — the facts in :mod:`tui.kill_model`."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from replay.replay_report import fmt_bytes
from replay.results import KernelKill
from tui.fmt import fmt_clock
from tui.kill_model import Candidate, KillFacts
from tui.messages import CursorMoved
from tui.screens.base import ResultsScreen
from tui.widgets.keys_footer import KeysFooter
from tui.widgets.record_table import Column, Record, RecordTable
from tui.widgets.title_header import TitleHeader


def candidate_records(candidates: list[Candidate]) -> tuple[list[Column], list[Record]]:
    def mark(c: Candidate) -> str:
        return " ".join(m for m, on in (("◀ killed", c.killed), ("highest badness", c.chosen)) if on)

    columns = [
        Column("pod", "pod"),
        Column("container", "container"),
        Column("rss", "rss", fmt_bytes, right=True),
        Column("oom_score_adj", "oom_score_adj", right=True),
        Column("badness", "badness", lambda v: "never" if v is None else f"{v:,}", right=True),
        Column("note", ""),
    ]
    records = [
        Record(
            f"{c.pod}/{c.container}",
            (c.pod, c.container, c.rss, c.oom_score_adj, c.badness, mark(c)),
            "bold red" if c.killed else ("yellow" if c.chosen else ""),
        )
        for c in candidates
    ]
    return columns, records


def head_text(f: KillFacts) -> Text:
    k = f.kill
    out = Text()
    out.append("✖ kernel OOM kill: ", style="bold red")
    out.append(f.victim, style="bold")
    out.append(f"  on {k.node or '?'} at {fmt_clock(k.time)}\n")
    told = []
    for t in f.told_as or [k]:
        if t.kind == "SystemOOM":
            told.append(f"SystemOOM Event ({t.message or 'no message'})")
        else:
            told.append(f"container {t.container or '?'} OOMKilled" + (f", exit {t.exit_code}" if t.exit_code else ""))
    out.append("told by: " + "; ".join(told) + "\n")
    out.append(f"container {f.container or '—'} · limit {fmt_bytes(f.limit) if f.limit else 'none'}")
    out.append(f" · QoS {f.qos or '—'}")
    return out


def pass_text(f: KillFacts) -> Text:
    out = Text()
    last = f.last_pass
    if last is not None:
        out.append(f"{fmt_clock(last.time)} (tick {last.tick}, {last.lead_s:.1f} s before the kill): ")
        out.append(f"memory.available {fmt_bytes(last.available)}")
        for t in last.thresholds:
            state = "MET" if t.met else "not met"
            extra = f" for {t.met_for_s:.0f}s of {t.grace_s:.0f}s grace" if t.met and not t.hard else ""
            out.append(f"\n  {t.text}: ")
            out.append(state + extra, style="bold red" if t.met else "")
        out.append("\n")
    out.append("why it did not act: ", style="bold")
    out.append(f.why_not)
    if f.evictions_before:
        out.append(f"\nevictions on the node before the kill: {', '.join(f.evictions_before[-3:])}", style="dim")
    return out


class KillScreen(ResultsScreen):
    TITLE = "Kernel kill"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "timeline", "Timeline"),
        Binding("v", "pod", "Pod view"),
    ]

    def __init__(self, index: int, nth: int = 1) -> None:
        super().__init__()
        self.index = index
        """Position in ``result.kernel_kills``."""
        self.nth = nth
        self.facts: KillFacts | None = None
        self.acts: tuple[str | None, str, str] | None = None

    @property
    def kill(self) -> KernelKill:
        return self.view.result.kernel_kills[self.index]

    def export_object(self) -> str:
        k = self.kill
        return f"{k.namespace}-{k.pod}" if k.pod else (k.victim or k.node or "")

    def selected_node(self) -> str | None:
        return self.kill.node

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield from self.bars()
        with VerticalScroll(id="kill-body"):
            yield Static(Text(f"reading the recording around the kill at {fmt_clock(self.kill.time)}…"), id="kill-head")
            yield Static("Where memory ran out", classes="section")
            yield Static(id="kill-scope")
            yield Static("The kubelet's last pass before the kill", classes="section")
            yield Static(id="kill-pass")
            yield Static("What would have made it act in time (checked by the engine)", classes="section")
            yield Static("replaying the node with it…", id="kill-acts")
            yield Static("Candidates of that cgroup's OOM killer (oom_badness, kube/oom.py)", classes="section")
            yield RecordTable(id="candidates")
            yield Static(id="kill-notes")
        yield KeysFooter()

    def on_mount(self) -> None:
        k = self.kill
        self.sub_title = f"{k.namespace}/{k.pod}" if k.pod else (k.victim or "")
        if self.el_app.cursor_time != k.time:
            self.post_message(CursorMoved(k.time))
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False, name="the kill's facts")
    def load(self) -> None:
        from tui.kill_model import kill_facts, what_would_act

        view = self.view
        kill = self.kill
        rec = view.world()
        series = view.node_series(kill.node) if kill.node else None
        if series is None:
            self.app.call_from_thread(self.notify, "this kill names no node", severity="warning")
            return
        facts = kill_facts(rec, view.result, series, kill)
        self.app.call_from_thread(self._facts, facts)
        if rec is None:
            acts: tuple[str | None, str, str] = (None, "the recording is not on disk: nothing to replay", "")
        else:
            acts = what_would_act(rec, view.result, facts)
        self.app.call_from_thread(self._acts, acts)

    def _facts(self, f: KillFacts) -> None:
        self.facts = f
        self.query_one("#kill-head", Static).update(head_text(f))
        self.query_one("#kill-scope", Static).update(Text(f.scope_text))
        self.query_one("#kill-pass", Static).update(pass_text(f))
        self.query_one("#candidates", RecordTable).show(*candidate_records(f.candidates))
        notes = [f"totalpages {f.totalpages:,} (the cgroup's limit in 4 KiB pages)"] if f.totalpages else []
        notes += [*f.notes, "badness = rss pages + oom_score_adj × totalpages / 1000 (mm/oom_kill.c oom_badness)"]
        self.query_one("#kill-notes", Static).update(Text("\n".join(notes), style="dim"))

    def _acts(self, acts: tuple[str | None, str, str]) -> None:
        self.acts = acts
        setting, derived, check = acts
        out = Text()
        if setting:
            out.append(setting + "\n", style="bold green")
        else:
            out.append("no eviction setting would have: ", style="bold")
        out.append(derived)
        if check:
            out.append("\n" + check, style="bold" if setting else "")
        self.query_one("#kill-acts", Static).update(out)

    def action_timeline(self) -> None:
        """The node's timeline on memory, the cursor on the pass at or after the kill (the first that saw what it
        freed)."""
        from tui.screens.timeline import TimelineScreen

        k = self.kill
        if k.node is None:
            self.notify("this kill names no node: no timeline to open", severity="warning")
            return
        self.app.push_screen(TimelineScreen(k.node, "memory.available", k.time, after=True))

    def action_pod(self) -> None:
        from tui.screens.pod import PodScreen

        k = self.kill
        f = self.facts
        pod = next((t for t in (f.told_as if f else [k]) if t.pod), None)
        if pod is None or pod.node is None:
            self.notify("the kernel named a process, not a pod: no pod view", severity="warning")
            return
        self.app.push_screen(PodScreen(pod.node, pod.namespace or "", pod.pod or "", pod.uid or ""))
