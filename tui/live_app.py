"""``evictlens tui --live`` / ``tui REC --follow``: the app following a recording being written.

A thread worker polls :class:`live.engine.LiveEngine` (each node's eviction-manager state carried forward tick by
tick) at the source's pace and posts :class:`LivePolled` up; the app folds it into :class:`~tui.live_model.LiveState`
and the live screens redraw in place. The UI never waits on the engine. An eviction or a kernel kill opens like
any other: the recording as it is now is copied (:func:`tui.live_source.snapshot`), its node replayed by the one
engine, and the replayed result's own screens (eviction detail, real eviction, timeline) shown on it.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import polars as pl
from textual import on
from textual.events import Mount
from textual.message import Message
from textual.worker import get_current_worker

from kube.errors import EvictlensError
from live.model import LiveEvent, NodeNow
from tui.app import EvictlensApp
from tui.live_messages import LivePolled, OpenLiveEvent, StopLive
from tui.live_model import HISTORY, LiveState, Point, to_datetime
from tui.live_source import LiveSource, private_tempdir
from tui.messages import WorkFailed
from tui.results_view import ResultsView

if TYPE_CHECKING:
    from live.preview import Preview


class Engine(Protocol):
    """What the view asks of the engine (live/engine.py ``LiveEngine``)."""

    def poll(self) -> list[LiveEvent]: ...

    def nodes(self) -> Mapping[str, NodeNow]: ...

    @property
    def last_tick_time_us(self) -> int | None: ...


def live_engine(warn_seconds: float) -> Callable[[Path], Engine]:
    """The engine following ``root``; a forecast under ``warn_seconds`` is a warning."""

    def make(root: Path) -> Engine:
        from live.engine import LiveEngine

        return LiveEngine(root, warn_seconds=warn_seconds)

    return make


def _preview(root: Path) -> Preview | None:
    from live.preview import newest

    return newest(root)


class SnapshotReady(Message):
    """A node of the recording as it is now, replayed: open ``event`` on it."""

    def __init__(self, view: ResultsView, event: LiveEvent) -> None:
        super().__init__()
        self.view = view
        self.event = event


class LiveApp(EvictlensApp):
    """The live overview first; the replayed screens on top of it when an eviction or kill is opened."""

    def __init__(
        self,
        source: LiveSource,
        *,
        engine: Callable[[Path], Engine] | None = None,
        export_dir: Path | None = None,
        jobs: int = 0,
    ) -> None:
        super().__init__(source.root, export_dir=export_dir, jobs=jobs)
        self.source = source
        self.make_engine = engine or live_engine(600.0)
        self.make_preview: Callable[[Path], Preview | None] | None = None if engine is not None else _preview
        """The newest tick before the engine (``--follow``); none with an engine given (the tests' fakes)."""
        self.catching_up = False
        """The overview shows a preview: the engine is still replaying the history."""
        self.live = LiveState()
        self.finished = False
        self.phase = "waiting for the recording to start…"
        """What the overview's title says before the first tick."""
        self._stop = threading.Event()
        self._engine: Engine | None = None
        """The engine the poll worker made (to interrupt its wait when the app ends)."""
        self._snapshots: list[tempfile.TemporaryDirectory[str]] = []

    async def on_mount(self, event: Mount) -> None:  # type: ignore[override]
        from tui.screens.live_overview import LiveOverviewScreen

        event.prevent_default()  # not the base app's loading of a recording (Textual calls each class's handler)

        await self.push_screen(LiveOverviewScreen())
        self._signals(install=True)  # before the source starts: a cluster's recorder puts its own in place
        self.source.start()
        self.run_worker(self._poll_loop, name="following the recording", group="live", thread=True, exit_on_error=False)

    def _target_name(self) -> str:
        return self.source.label

    def _poll_loop(self) -> None:
        """Poll until the app ends: the engine once the recording exists, then its new ticks at the source's pace
        (a wait on an event the app sets when it ends, so quitting never waits a poll period)."""
        worker = get_current_worker()
        engine: Engine | None = None
        last: tuple[int | None, int] | None = None
        while not worker.is_cancelled and not self._stop.is_set():
            failure = self.source.failure()
            if failure is not None:
                raise EvictlensError(failure)
            if engine is None and (self.source.root / "manifest.json").is_file():
                if self.source.preview_first and self.make_preview is not None:
                    self._preview()
                if not self.catching_up:  # else the title says what is being replayed, over the preview
                    self.call_from_thread(self._starting, "reading the recording so far (each node to its last tick)…")
                engine = self._engine = self.make_engine(self.source.root)
                self.source.following(getattr(engine, "last_tick", None))
            if engine is not None:
                finished = self.source.finished()  # before the poll: a tick written meanwhile is still read
                events = sorted(engine.poll(), key=lambda e: e.time_us)
                nodes = engine.nodes()
                now = (engine.last_tick_time_us, len(nodes))
                if events or now != last or finished:
                    last = now
                    self.post_message(LivePolled(dict(nodes), list(events), engine.last_tick_time_us, finished))
                if finished:
                    return
            wait = getattr(engine, "wait", None)  # the engine's: woken by the writer's append (live/wake.py)
            if wait is None:
                self._stop.wait(self.source.poll_seconds())
            else:
                wait(self.source.poll_seconds())

    def _preview(self) -> None:
        """The newest tick first (live/preview.py): signals, thresholds and forecasts at once; conditions and the
        pod next to go once the engine has replayed the history (the title and each row say so)."""
        assert self.make_preview is not None
        self.call_from_thread(self._starting, "reading the newest tick…")
        preview = self.make_preview(self.source.root)
        if preview is None or not preview.nodes:
            return
        self.phase = (
            f"catching up: replaying the {preview.ticks:,} ticks written so far; shown meanwhile: tick "
            f"{preview.last_tick}'s signals, thresholds and forecasts (conditions and next to go once replayed)"
        )
        self.catching_up = True
        self.post_message(LivePolled(dict(preview.nodes), [], preview.last_time_us, False))

    def _starting(self, what: str) -> None:
        from tui.screens.live_overview import LiveOverviewScreen

        self.phase = what
        for screen in self.screen_stack:
            if isinstance(screen, LiveOverviewScreen) and screen.ready:
                screen.live_changed()

    def on_live_polled(self, message: LivePolled) -> None:
        from tui.screens.live_overview import LiveScreen

        if all(n.catching_up is None for n in message.nodes.values()):
            self.catching_up = False  # the engine's first answer (its ticks are the timeline's from here)
        self.live.apply(message.nodes, message.events, message.last_time_us)
        self.finished = message.finished
        for screen in self.screen_stack:
            if isinstance(screen, LiveScreen) and screen.ready:  # composed: a poll can come before that
                screen.live_changed()

    def on_work_failed(self, message: WorkFailed) -> None:
        """Live, a failure never replaces the overview: a notification, and the overview's title says it."""
        from tui.screens.live_overview import LiveOverviewScreen

        message.prevent_default()  # never the base app's error screen
        self.notify(message.problem, title=message.label, severity="error", timeout=10)
        for screen in self.screen_stack:
            if isinstance(screen, LiveOverviewScreen):
                screen.show_failure(message.label, message.problem)

    @on(StopLive)
    def stop_live(self, message: StopLive) -> None:
        """In a worker of the app's loop: the UI still draws while a recorder finalizes."""
        self.run_worker(self.shutdown(), name="stopping", group="quit", exclusive=True, exit_on_error=False)

    async def shutdown(self) -> None:
        """Quit: the writer this process started stops first (a cluster's recorder finalizes in this loop)."""
        self._stop.set()
        self._interrupt()
        self.source.stop()
        if self.source.finish is not None:
            self.notify("stopping the recorder…", timeout=30)
            await self.source.finish()
        self.exit()

    def _interrupt(self) -> None:
        """The poll worker's wait ends now (quitting never waits a poll period)."""
        interrupt = getattr(self._engine, "interrupt", None)
        if interrupt is not None:
            interrupt()

    def _signals(self, *, install: bool) -> None:
        """SIGTERM / SIGHUP (the terminal closed) end the view as ``q`` does, so the writer this process started
        stops and its private recording goes (a killed process would leave it behind)."""
        import asyncio
        import signal

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                if install:
                    loop.add_signal_handler(sig, self.exit)
                else:
                    loop.remove_signal_handler(sig)

    def on_unmount(self) -> None:
        self._signals(install=False)
        self._stop.set()
        self._interrupt()
        self.source.stop()  # its owner closes it (removes a private recording) once the app has ended
        for tmp in self._snapshots:
            tmp.cleanup()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """What-ifs and Compare need a whole result: not on a recording still being written."""
        if action in ("whatif", "compare"):
            return False
        return super().check_action(action, parameters)

    # -- opening an eviction or a kill ---------------------------------------------------------
    @on(OpenLiveEvent)
    def open_live_event(self, message: OpenLiveEvent) -> None:
        self.open_event(message.event)

    def open_event(self, event: LiveEvent) -> None:
        """A predicted or real eviction or a kernel kill: its node replayed on a snapshot of the recording (a
        worker), then the screen any replayed eviction opens; anything else: the node's live timeline."""
        if event.kind not in ("predicted-eviction", "real-eviction", "kernel-kill"):
            from tui.screens.live_timeline import LiveTimelineScreen

            self.push_screen(LiveTimelineScreen(event.node))
            return
        self.notify(f"replaying {event.node} up to now to open it…", timeout=3)
        self.run_worker(
            lambda: self._snapshot(event),
            name="the recording as it is now",
            group="snapshot",
            thread=True,
            exclusive=True,
            exit_on_error=False,
        )

    def replay_node(self, node: str, into: Path) -> ResultsView:
        """``node`` of the recording as it is now (a snapshot under ``into``), replayed by the one engine."""
        from recordings.reader import open_recording
        from replay.engine import replay
        from replay.settings import SettingsRequest
        from tui.live_source import snapshot

        for attempt in range(3):  # a fold may take journal segments away while they are copied: copy again
            try:
                root = snapshot(self.source.root, into / str(attempt))
                break
            except FileNotFoundError:
                if attempt == 2:
                    raise
        rec = open_recording(root)
        request = SettingsRequest(label="as recorded")
        (result,) = replay(rec, [request], [node])
        return ResultsView.from_result(result, f"{node} as recorded until now", str(root), request, opened=rec)

    def seed_history(self, node: str) -> None:
        """The node's recent past before the view opened (a worker's job): its ticks replayed from a snapshot,
        put in front of the points kept, then the screens redrawn."""
        from tui.live_model import points_from_replay

        worker = get_current_worker()
        while self.catching_up and not self._stop.is_set() and not worker.is_cancelled:
            self._stop.wait(0.1)  # the newest tick is shown, the engine not up yet: its first ticks come first
        kept = self.live.history.get(node)
        if not kept or len(kept) >= HISTORY or kept[0].tick == 0:
            return
        with private_tempdir("evictlens-live-seed-") as tmp:
            view = self.replay_node(node, Path(tmp))
            conditions = view.result.conditions.filter(pl.col("node") == node)
            points = points_from_replay(view.node_series(node), conditions, kept[0].tick, HISTORY - len(kept))
        self.call_from_thread(self._seeded, node, points)

    def _seeded(self, node: str, points: list[Point]) -> None:
        from tui.screens.live_overview import LiveScreen

        self.live.seed(node, points)
        for screen in self.screen_stack:
            if isinstance(screen, LiveScreen) and screen.ready:
                screen.live_changed()

    def _snapshot(self, event: LiveEvent) -> None:
        # the previous one's screens are gone (events open from the live overview only): its files go now
        for old in self._snapshots:
            old.cleanup()
        self._snapshots.clear()
        tmp = private_tempdir("evictlens-live-")
        self._snapshots.append(tmp)
        self.post_message(SnapshotReady(self.replay_node(event.node, Path(tmp.name)), event))

    @on(SnapshotReady)
    def snapshot_ready(self, message: SnapshotReady) -> None:
        from tui.screens.eviction import EvictionScreen, RealEvictionScreen
        from tui.screens.kill import KillScreen
        from tui.screens.timeline import TimelineScreen

        self.results = [message.view]
        self.current = 0
        event, view = message.event, message.view
        when = to_datetime(event.time_us)
        pod = event.details.get("pod")
        if event.kind == "kernel-kill":  # the kill's detail, as a kill row of a finished result opens
            kills = view.result.kernel_kills
            near = [i for i, k in enumerate(kills) if k.node == event.node and (pod is None or k.pod in (pod, None))]
            if near:
                self.push_screen(KillScreen(min(near, key=lambda i: abs((kills[i].time - when).total_seconds()))))
            else:
                self.push_screen(TimelineScreen(event.node, "memory.available", when, after=True))
            return
        if event.kind == "real-eviction":
            for i, m in enumerate(view.result.matches):
                if m.real.node == event.node and m.real.pod == pod:
                    self.push_screen(
                        EvictionScreen(m.predicted_id) if m.predicted_id is not None else RealEvictionScreen(i)
                    )
                    return
        mine = [e for e in view.result.evictions if e.node == event.node and e.pod == pod]
        if mine:
            self.push_screen(EvictionScreen(min(mine, key=lambda e: abs((e.time - when).total_seconds())).id))
            return
        self.push_screen(TimelineScreen(event.node, at=when))
        self.notify(f"the replay of {event.node} has no such eviction of {pod}: its timeline at that moment", timeout=5)
