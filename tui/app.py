"""The evictlens Textual app and :func:`make_app`, the one factory the CLI and the tests use.

The app holds the loaded results (the first one as loaded or replayed with its recorded settings,
then each what-if run from inside) and runs every slow step in a thread worker that posts
:mod:`tui.messages`; screens read ``app.view`` and post messages up (run a what-if, use a result,
compare). A worker that raises, the app's or a screen's, ends in one handler (:meth:`on_work_failed`):
before any result the error screen, after it a notification, always one line.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker

from kube.errors import EvictlensError
from recordings.console import plural
from recordings.scratch import scratch_dir
from replay.settings import SettingsRequest
from tui.loading import ReplayJob, classify, describe_request
from tui.messages import (
    CompareResults,
    CursorMoved,
    ReplayProgress,
    ResultsReady,
    RunWhatIf,
    UseResult,
    WorkFailed,
    worker_failure,
)
from tui.results_view import ResultsView
from tui.screens.base import ResultsScreen
from tui.screens.error import ErrorScreen
from tui.screens.help import HelpScreen
from tui.screens.loading import LoadingScreen
from tui.screens.overview import OverviewScreen
from tui.widgets.record_table import RecordTable

FIRST = "as recorded"


class EvictlensApp(App[int]):
    """Browse one recording's replay or results directory, and what-ifs of it."""

    CSS_PATH = "evictlens.tcss"
    TITLE = "evictlens"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("f1", "help", "Help"),  # in a text field ? is a character: the footer shows f1 there instead
        Binding("ctrl+e", "export('csv')", "Export CSV"),
        Binding("ctrl+j", "export('json')", "Export JSON", show=False),
        Binding("w", "whatif", "What-if"),
        Binding("d", "compare", "Compare"),
    ]

    def __init__(
        self, target: Path | None, *, cache: Path | None = None, export_dir: Path | None = None, jobs: int = 0
    ) -> None:
        super().__init__()
        self.jobs = jobs
        """Local processes the engine replays nodes over (0: all cores), as ``replay --jobs``."""
        self.target = target
        self.cache = cache
        self.export_dir = export_dir or Path.cwd()
        self.results: list[ResultsView] = []
        self.current = 0
        self.failed: str | None = None
        self._whatifs = 0
        self.cursor_time: datetime | None = None
        """The timeline's cursor (None until one moves): every open view shows this moment."""
        self._unpacked: tempfile.TemporaryDirectory[str] | None = None

    # -- state --------------------------------------------------------------------------------
    @property
    def view(self) -> ResultsView:
        return self.results[self.current]

    def use(self, index: int) -> None:
        self.current = index
        self._notify_screens()

    @on(CursorMoved)
    def cursor_moved(self, message: CursorMoved) -> None:
        self.set_cursor(message.when)

    def set_cursor(self, when: datetime | None) -> None:
        """The timeline's cursor moved: every open view (overview's next to go, pod view) follows."""
        self.cursor_time = when
        for screen in self.screen_stack:
            if isinstance(screen, ResultsScreen):
                screen.cursor_moved(when)

    def _notify_screens(self) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, ResultsScreen):
                screen.results_changed()

    # -- loading ------------------------------------------------------------------------------
    async def on_mount(self) -> None:
        # mounted before the work starts: a failure within milliseconds must not replace a half-mounted screen
        await self.push_screen(LoadingScreen(self._target_name()))
        self.run_worker(self._load_target, name=FIRST, group="load", thread=True, exit_on_error=False)

    def _target_name(self) -> str:
        return "the bundled sample (sidecar-stress)" if self.target is None else str(self.target)

    def _load_target(self) -> None:
        """The first result: a results directory read lazily, or the recording replayed (a worker's job)."""
        if self.target is None:
            from tui.sample import sample_recording

            path, kind = sample_recording(self.cache), "recording"
        else:
            path = self.target
            kind = classify(path)
            if kind == "packed":
                path, kind = self._unpack(path), "recording"
        if kind == "results":
            from tui.results_dir import open_results_dir

            view = open_results_dir(path, label=path.name)
            view.lowest_available()  # the overview's one aggregation, here in the worker
        else:
            view = self._replay(ReplayJob(path, SettingsRequest(label=FIRST), FIRST, self.jobs))
        self.post_message(ResultsReady(view))

    def _unpack(self, packed: Path) -> Path:
        """A packed recording unpacked into a temporary directory (removed when the app ends), as
        ``evictlens unpack`` would (recordings/pack.py)."""
        from recordings.pack import unpack

        self._unpacked = scratch_dir("evictlens-tui-")
        dest = Path(self._unpacked.name) / packed.name.removesuffix(".evictlens.tar")
        unpack(packed, dest)
        return dest

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

    # -- what screens ask for -------------------------------------------------------------------
    @on(RunWhatIf)
    def run_whatif(self, message: RunWhatIf) -> None:
        """Replay the current result's recording with the form's settings on the engine, in a worker."""
        recording = self.view.recording()
        if recording is None:
            self.post_message(
                WorkFailed(
                    "what-if",
                    EvictlensError(
                        "the recording of this result is not on disk; a what-if needs it",
                        source=self.view.result.recording,
                    ).one_line(),
                )
            )
            return
        self._whatifs += 1
        label = f"what-if {self._whatifs}: {describe_request(message.request)}"
        request = dataclasses.replace(message.request, label=label)
        for screen in self.screen_stack:
            if isinstance(screen, ResultsScreen):
                screen.show_started(label)
        self.run_worker(
            partial(self._run_whatif, self.view, recording, request),
            name=label,
            group="whatif",
            thread=True,
            exit_on_error=False,
        )

    def _run_whatif(self, of: ResultsView, recording: Path, request: SettingsRequest) -> None:
        job = ReplayJob(recording, request, request.label, self.jobs, opened=of.open_recording())
        self.post_message(ResultsReady(self._replay(job)))

    @on(UseResult)
    def use_result(self, message: UseResult) -> None:
        if 0 <= message.index < len(self.results):
            self.use(message.index)
            self.notify(f"now showing: {self.view.label}", timeout=3)

    @on(CompareResults)
    def compare_results(self, message: CompareResults) -> None:
        from tui.screens.compare import CompareScreen

        if len(self.results) < 2:
            self.notify("only one result so far: run a what-if (w) to have something to compare", severity="warning")
            return
        b_index = message.b_index
        if b_index is None:
            b_index = self.current if self.current != 0 else len(self.results) - 1
        self.push_screen(CompareScreen(self.results[0], self.results[b_index]))

    # -- what workers report ----------------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The app's own workers: an error becomes :class:`WorkFailed` (screens forward theirs the same way)."""
        failed = worker_failure(event)
        if failed is not None:
            self.post_message(failed)

    def on_replay_progress(self, message: ReplayProgress) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, (LoadingScreen, ResultsScreen)):
                screen.show_progress(message.label, message.done, message.total)

    def on_unmount(self) -> None:
        if self._unpacked is not None:
            self._unpacked.cleanup()

    def on_results_ready(self, message: ResultsReady) -> None:
        self.results.append(message.view)
        if len(self.results) == 1:
            self.switch_screen(OverviewScreen())
            # the eviction detail and pod view read the recording: opened now, while the user looks around
            self.run_worker(
                message.view.open_recording,
                name="opening the recording",
                group="recording",
                thread=True,
                exit_on_error=False,
            )
        else:
            self.notify(
                f"{message.view.label}: {plural(len(message.view.result.evictions), 'eviction')}", title="what-if done"
            )
            self._notify_screens()

    def on_work_failed(self, message: WorkFailed) -> None:
        """The one place a failure shows: the error screen before any result, else a notification and the
        screens' own line (the what-if form's status)."""
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
        from tui.screens.compare import CompareScreen

        if self.results and not isinstance(self.screen, CompareScreen):
            self.post_message(CompareResults())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Export only where there is a table (else not in the footer, the help or the palette)."""
        if action == "export":
            return self._table_on_screen() is not None
        return True

    def action_export(self, fmt: str) -> None:
        from tui.export import export_table

        table = self._table_on_screen()
        if table is None:
            self.notify("no table on this screen to export", severity="warning")
            return
        columns, rows = table.export_rows()
        path = export_table(self.export_dir, self._export_name(table.id or "table"), fmt, columns, rows)
        self.notify(f"{len(rows)} rows written to {path}", title=f"exported {fmt.upper()}")

    def _export_name(self, what: str) -> str:
        """``evictlens-<screen>-<object>-<table>``: the node, pod or result the screen shows."""
        screen = self.screen
        kind = type(screen).__name__.removesuffix("Screen").lower()
        obj = screen.export_object() if isinstance(screen, ResultsScreen) else ""
        return "-".join(p for p in ("evictlens", kind, obj, what) if p)

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """The palette's screenshot: an SVG into ``--export-dir`` (default: the current directory), named for
        the screen and the time, never over another file (Textual's default is ~/Downloads, often missing)."""
        from tui.export import export_path, write_new

        directory = Path(path) if path else self.export_dir
        target = directory / filename if filename else export_path(directory, self._export_name("screenshot"), "svg")
        try:
            written = write_new(target, self.export_screenshot())
        except OSError as exc:
            self.notify(f"{directory}: {exc.strerror or exc}", title="screenshot not saved", severity="error")
            return None
        self.notify(str(written), title="screenshot saved")
        return str(written)

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
            yield SystemCommand(
                binding.description,
                f"key {binding.key_display or key}",
                partial(self.run_action, binding.action, active.node),
            )


def make_app(
    target: str | Path | None = None, *, cache: Path | None = None, export_dir: Path | None = None, jobs: int = 0
) -> EvictlensApp:
    """The app for ``evictlens tui [TARGET]``: a recording, a results directory, or (None) the sample;
    ``jobs``: local processes for replays (0: all cores)."""
    return EvictlensApp(None if target is None else Path(target), cache=cache, export_dir=export_dir, jobs=jobs)
