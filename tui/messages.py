"""Messages of the TUI: workers and screens post them, the app handles them (screens never drive the app).

Workers post progress and finished results; screens post what the user asked for (a what-if run,
another current result, a comparison) and bubble up to the app; a failed worker anywhere becomes one
:class:`WorkFailed` that the app shows in one place.
"""

from __future__ import annotations

from datetime import datetime

from textual.message import Message
from textual.worker import Worker, WorkerState

from kube.errors import EvictlensError
from replay.settings import SettingsRequest
from tui.results_view import ResultsView


def one_line(exc: BaseException) -> str:
    """What the user sees of a failure: the error's one line; never a traceback."""
    if isinstance(exc, EvictlensError):
        return exc.one_line()
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"internal error: {type(exc).__name__}: {text}"


class ReplayProgress(Message):
    """Passes done of a running replay; a newer one replaces an older still in the queue."""

    def __init__(self, label: str, done: int, total: int) -> None:
        super().__init__()
        self.label = label
        self.done = done
        self.total = total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ReplayProgress) and message.label == self.label


class ResultsReady(Message):
    """A result finished loading or replaying."""

    def __init__(self, view: ResultsView) -> None:
        super().__init__()
        self.view = view


class WorkFailed(Message):
    """A worker (the app's or a screen's) raised; ``problem`` is the one-line error to show."""

    def __init__(self, label: str, problem: str) -> None:
        super().__init__()
        self.label = label
        self.problem = problem


class RunWhatIf(Message):
    """Replay the current result's recording with these settings (the what-if form's Run)."""

    def __init__(self, request: SettingsRequest) -> None:
        super().__init__()
        self.request = request


class UseResult(Message):
    """Make result ``index`` the current one on every screen."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


class CompareResults(Message):
    """Open Compare: the first result against ``b_index`` (None: the current one, else the newest other)."""

    def __init__(self, b_index: int | None = None) -> None:
        super().__init__()
        self.b_index = b_index


class CursorMoved(Message):
    """The timeline's cursor is at ``when``: every open view shows that moment."""

    def __init__(self, when: datetime | None) -> None:
        super().__init__()
        self.when = when


def worker_failure(event: Worker.StateChanged) -> WorkFailed | None:
    """A worker that ended in error as the message the app shows (None for any other state change)."""
    if event.state != WorkerState.ERROR:
        return None
    error = event.worker.error
    return WorkFailed(
        event.worker.name or "background work",
        one_line(error) if error is not None else "internal error: the worker failed",
    )
