"""Messages of the live view: the poll worker's findings up to the app, and what the live screens ask of it
(screens never drive the app: they post, it acts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.message import Message

from live.model import LiveEvent, NodeNow


class LivePolled(Message):
    """A poll found something: every node now, the new events, where the recording stands."""

    def __init__(
        self, nodes: Mapping[str, NodeNow], events: Sequence[LiveEvent], last_time_us: int | None, finished: bool
    ) -> None:
        super().__init__()
        self.nodes = nodes
        self.events = events
        self.last_time_us = last_time_us
        self.finished = finished


class OpenLiveEvent(Message):
    """Open an event of the list: an eviction or a kill as any other (a replay of the recording now), else the
    node's live timeline."""

    def __init__(self, event: LiveEvent) -> None:
        super().__init__()
        self.event = event


class StopLive(Message):
    """Quit: the writer this process started stops first."""
