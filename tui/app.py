"""The evictlens Textual app and :func:`make_app`, the one factory the CLI and the tests use.

The app holds the loaded results (the first one as loaded or replayed with its recorded settings,
then each what-if run from inside) and runs every slow step in a thread worker that posts
:mod:`tui.messages`; screens read ``app.view`` and ask the app to run what-ifs.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from recordings.errors import EvictlensError
from replay.settings import SettingsRequest
from tui.loading import ReplayJob, classify, describe_request
from tui.messages import LoadFailed, ReplayProgress, ResultsReady
from tui.results_view import ResultsView
from tui.screens.base import ResultsScreen
from tui.screens.error import ErrorScreen
from tui.screens.help import HelpScreen
from tui.screens.loading import LoadingScreen
from tui.screens.overview import OverviewScreen
from tui.widgets.record_table import RecordTable

FIRST = "as recorded"


def one_line(exc: BaseException) -> str:
    """What the user sees of a failure: the error's one line; never a traceback."""
    if isinstance(exc, EvictlensError):
        return exc.one_line()
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"internal error: {type(exc).__name__}: {text}"


class EvictlensApp(App[int]):
    """Browse one recording's replay or results directory, and what-ifs of it."""

    CSS_PATH = "evictlens.tcss"
    TITLE = "evictlens"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("ctrl+e", "export('csv')", "Export CSV"),
        Binding("ctrl+j", "export('json')", "Export JSON", show=False),
        Binding("w", "whatif", "What-if"),
        Binding("d", "compare", "Compare"),
    ]

    def __init__(self, target: Path | None, *, cache: Path | None = None, export_dir: Path | None = None) -> None:
        super().__init__()
        self.target = target
        self.cache = cache
        self.export_dir = export_dir or Path.cwd()
        self.results: list[ResultsView] = []
        self.current = 0
        self.failed: str | None = None
        self._whatifs = 0

    # -- state --------------------------------------------------------------------------------
    @property
    def view(self) -> ResultsView:
        return self.results[self.current]

    def use(self, index: int) -> None:
        self.current = index
        self._notify_screens()

    def _notify_screens(self) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, ResultsScreen):
                screen.results_changed()

    # -- loading ------------------------------------------------------------------------------
    def on_mount(self) -> None:
        self.push_screen(LoadingScreen(self._target_name()))
        self.load_target()

    def _target_name(self) -> str:
        return "the bundled sample (sidecar-stress)" if self.target is None else str(self.target)

    @work(thread=True, group="load", exit_on_error=False)
    def load_target(self) -> None:
        label = FIRST
        try:
            if self.target is None:
                from tui.sample import sample_recording

                path, kind = sample_recording(self.cache), "recording"
            else:
                path = self.target
                kind = classify(path)
            if kind == "results":
                from tui.results_dir import open_results_dir

                view = open_results_dir(path, label=path.name)
                view.lowest_available()  # the overview's one aggregation, here in the worker
            else:
                view = self._replay(ReplayJob(path, SettingsRequest(label=label), label))
        except Exception as exc:  # the TUI edge: every failure becomes the error screen's one line
            self.post_message(LoadFailed(label, one_line(exc)))
            return
        self.post_message(ResultsReady(view))

    def _replay(self, job: ReplayJob) -> ResultsView:
        total = job.total
        self.post_message(ReplayProgress(job.label, 0, total))
        done = 0

        def advance(n: int) -> None:
            nonlocal done
            done += n
            self.post_message(ReplayProgress(job.label, done, total))

        view = job.run(advance)
        view.lowest_available()
        return view

    def run_whatif(self, request: SettingsRequest) -> str:
        """Replay the current result's recording with other settings, in a worker; returns its label."""
        recording = self.view.recording()
        if recording is None:
            raise EvictlensError("the recording of this result is not on disk; a what-if needs it",
                                 source=self.view.result.recording)
        self._whatifs += 1
        label = f"what-if {self._whatifs}: {describe_request(request)}"
        self._run_whatif(recording, SettingsRequest(
            kubelet_version=request.kubelet_version, feature_gates=request.feature_gates,
            baseline=request.baseline, overrides=request.overrides, topology=request.topology, label=label))
        return label

    @work(thread=True, group="whatif", exit_on_error=False)
    def _run_whatif(self, recording: Path, request: SettingsRequest) -> None:
        try:
            view = self._replay(ReplayJob(recording, request, request.label))
        except Exception as exc:
            self.post_message(LoadFailed(request.label, one_line(exc)))
            return
        self.post_message(ResultsReady(view))

    def on_replay_progress(self, message: ReplayProgress) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, (LoadingScreen, ResultsScreen)):
                screen.show_progress(message.label, message.done, message.total)

    def on_results_ready(self, message: ResultsReady) -> None:
        self.results.append(message.view)
        if len(self.results) == 1:
            self.switch_screen(OverviewScreen())
        else:
            self.notify(f"{message.view.label}: {len(message.view.result.evictions)} evictions", title="what-if done")
            self._notify_screens()

    def on_load_failed(self, message: LoadFailed) -> None:
        if not self.results:
            self.failed = message.problem
            self.switch_screen(ErrorScreen(self._target_name(), message.problem))
            return
        self.notify(message.problem, title=message.label, severity="error", timeout=10)
        for screen in self.screen_stack:
            if isinstance(screen, ResultsScreen):
                screen.show_failure(message.label, message.problem)

    # -- actions --------------------------------------------------------------------------------
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_whatif(self) -> None:
        from tui.screens.whatif import WhatIfScreen

        if self.results and not isinstance(self.screen, WhatIfScreen):
            self.push_screen(WhatIfScreen())

    def action_compare(self) -> None:
        from tui.screens.compare import CompareScreen, open_compare

        if self.results and not isinstance(self.screen, CompareScreen):
            open_compare(self)

    def action_export(self, fmt: str) -> None:
        from tui.export import export_table

        table = self._table_on_screen()
        if table is None:
            self.notify("no table on this screen to export", severity="warning")
            return
        columns, rows = table.export_rows()
        name = f"evictlens-{type(self.screen).__name__.removesuffix('Screen').lower()}-{table.id or 'table'}"
        path = export_table(self.export_dir, name, fmt, columns, rows)
        self.notify(f"{len(rows)} rows written to {path}", title=f"exported {fmt.upper()}")

    def _table_on_screen(self) -> RecordTable | None:
        focused = self.screen.focused
        if isinstance(focused, RecordTable):
            return focused
        tables = list(self.screen.query(RecordTable))
        return tables[0] if tables else None

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Every action bound on the screen, plus the app's own, in the command palette."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            binding = active.binding
            if not binding.description or binding.action in seen or binding.action.startswith("app.command"):
                continue
            seen.add(binding.action)
            yield SystemCommand(binding.description, f"key {binding.key_display or key}",
                                partial(self.run_action, binding.action, active.node))


def make_app(target: str | Path | None = None, *, cache: Path | None = None,
             export_dir: Path | None = None) -> EvictlensApp:
    """The app for ``evictlens tui [TARGET]``: a recording, a results directory, or (None) the sample."""
    return EvictlensApp(None if target is None else Path(target), cache=cache, export_dir=export_dir)
