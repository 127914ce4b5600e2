"""Messages workers post to the app: small dataclasses, progress replacing older progress still queued."""

from __future__ import annotations

from textual.message import Message

from tui.results_view import ResultsView


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


class LoadFailed(Message):
    """Loading or replaying failed; ``problem`` is the one-line error to show."""

    def __init__(self, label: str, problem: str) -> None:
        super().__init__()
        self.label = label
        self.problem = problem
