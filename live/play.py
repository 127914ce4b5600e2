"""A bundled scenario played in (accelerated) real time into a recording being written.

``evictlens watch --sample NAME --speed N`` and ``evictlens tui --live --sample NAME --speed N`` show a
newcomer the live view without a cluster: the scenario's closed loop (replay/scenario.py: the generator,
the kubelet's eviction manager, the kernel's OOM killer) runs as ``evictlens scenario`` runs it, through
the same :class:`~recordings.writer.RecordingWriter`, but each tick is committed only when its time has
come: tick k at ``start + (t_k − t_0) / speed`` seconds of real time. Anything following the growing
recording (:class:`live.engine.LiveEngine`) then sees it as live.

Times are the scenario's own (2025-01-01T00:00:00Z onwards, as ``evictlens scenario`` writes them), not
shifted to the wall clock: the played recording is byte for byte the recording ``scenario`` would have
written, so ``replay`` on it gives the same answer, and at ``--speed 10`` a 10 s tick interval is one
second of real time. "Now" in the live view is the last committed tick.

The clock and the wait are injected (:class:`Pacer`), so tests check the pacing without waiting on it.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kube.errors import InputError

if TYPE_CHECKING:
    from recordings.scenarios import Scenario
    from replay.scenario import ScenarioOutcome

__all__ = ["Pacer", "ScenarioPlayer", "parse_speed"]


def parse_speed(text: str, *, flag: str = "--speed") -> float:
    """``10`` or ``10x`` (ten times real time), ``0.5``; ``max`` plays without waiting. Bad → one line."""
    raw = text.strip().lower()
    if raw in ("max", "inf"):
        return math.inf
    raw = raw.removesuffix("x")
    try:
        speed = float(raw)
    except ValueError:
        speed = math.nan
    if not math.isfinite(speed) or speed <= 0:
        raise InputError(
            f"expected a positive number of times real time (e.g. 10, 0.5 or max), got {text!r}",
            field=flag,
        )
    return speed


@dataclass
class Pacer:
    """Decides when each tick may be committed: tick time ``t`` (µs) at ``start + (t − t_0) / speed`` seconds.

    ``clock`` is monotonic seconds; ``wait(seconds)`` sleeps up to that long and returns True when told to
    stop meanwhile (a :class:`threading.Event`'s ``wait`` does both). A slow tick (the closed loop's own work)
    does not push later ticks late: the schedule is from the first tick, as ``record``'s is.
    """

    speed: float
    clock: Callable[[], float] = time.monotonic
    wait: Callable[[float], bool] = field(default_factory=lambda: threading.Event().wait)
    start: float | None = None
    first_us: int | None = None
    committed: list[tuple[int, float]] = field(default_factory=list)
    """(tick time µs, clock when released) of every tick let through: what the tests check."""

    def __call__(self, tick_us: int) -> bool:
        """Wait for ``tick_us``'s moment; True to commit it, False when told to stop."""
        if self.start is None or self.first_us is None:
            self.start, self.first_us = self.clock(), tick_us
        elif math.isfinite(self.speed):
            due = self.start + (tick_us - self.first_us) / 1e6 / self.speed
            while (left := due - self.clock()) > 0:
                if self.wait(left):
                    return False
        elif self.wait(0):
            return False
        self.committed.append((tick_us, self.clock()))
        return True


class ScenarioPlayer:
    """Plays ``scenario`` into ``out`` (a new or empty directory) on a thread of its own.

    ``start()`` returns at once; the recording's first tick is committed immediately, the next ones at the
    pace of :class:`Pacer`. ``stop()`` ends the play at the next tick (what was played is finalized, so the
    directory is then a finished, shorter recording); the play also ends by itself after the last tick.
    ``error`` holds what stopped it otherwise (a bad scenario: an :class:`~kube.errors.InputError`).
    ``hold_first``: the first tick waits until this is set (the follower has opened the new recording), so a
    follower sees every tick arrive, the first one too.
    """

    def __init__(
        self,
        scenario: Scenario,
        out: Path,
        *,
        speed: float,
        kubelet_flags: Sequence[str] = (),
        kubelet_version: str | None = None,
        feature_gates: Mapping[str, bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], bool] | None = None,
        hold_first: threading.Event | None = None,
    ) -> None:
        self.scenario, self.out = scenario, out
        self._hold = hold_first
        self._stop = threading.Event()
        self.pacer = Pacer(speed, clock=clock, wait=wait or self._stop.wait)
        self._flags, self._version, self._gates = (
            tuple(kubelet_flags),
            kubelet_version,
            feature_gates,
        )
        self._thread = threading.Thread(target=self._run, name="evictlens-play", daemon=True)
        self.outcome: ScenarioOutcome | None = None
        self.error: BaseException | None = None
        self._done = threading.Event()

    @property
    def interval_seconds(self) -> float:
        """The scenario's tick interval, in scenario seconds."""
        return self.scenario.interval / 1e6

    def start(self) -> ScenarioPlayer:
        self._thread.start()
        return self

    def run(self) -> ScenarioOutcome | None:
        """Play on the calling thread (tests; a caller that has its own thread)."""
        self._run()
        if self.error is not None:
            raise self.error
        return self.outcome

    def _run(self) -> None:
        from replay.scenario import run_scenario

        try:
            self.outcome = run_scenario(
                self.scenario,
                self.out,
                feature_gates=self._gates,
                kubelet_flags=self._flags,
                kubelet_version=self._version,
                pace=self._pace,
            )
        except BaseException as exc:  # the follower reports it; a thread has no one else to tell
            self.error = exc
        finally:
            self._done.set()

    def _pace(self, tick_us: int) -> bool:
        if not self.pacer.committed and self._hold is not None:
            # the follower is not looking yet: the recording exists (manifest written), its first tick waits
            while not self._hold.wait(0.05):
                if self._stop.is_set():
                    break
        if self._stop.is_set() and self.pacer.committed:
            return False
        return self.pacer(tick_us)

    def stop(self) -> None:
        self._stop.set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the play to end; True once it has."""
        return self._done.wait(timeout)

    @property
    def ticks_committed(self) -> int:
        return len(self.pacer.committed)


def load_sample(name: str, *, kubelet_version: str | None = None, kubelet_flags: Sequence[str] = ()) -> Scenario:
    """A bundled scenario (``evictlens scenario --list``) or a scenario file, with ``scenario``'s overrides."""
    from recordings.scenarios import bundled_names, load_bundled, load_scenario

    if name in bundled_names() or not Path(name).suffix:
        return load_bundled(name, kubelet_version=kubelet_version, kubelet_flags=kubelet_flags)
    return load_scenario(name, kubelet_version=kubelet_version, kubelet_flags=kubelet_flags)
