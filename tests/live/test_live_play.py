"""The sample player: a bundled scenario committed tick by tick at interval / speed, on an injected clock."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from kube.errors import InputError
from live.play import Pacer, ScenarioPlayer, load_sample, parse_speed
from recordings.reader import open_recording

TEN_S = 10_000_000


class FakeClock:
    """Monotonic seconds that move only when the player waits."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        return False


def test_pacer_releases_each_tick_at_interval_over_speed() -> None:
    fake = FakeClock()
    pace = Pacer(10.0, clock=fake.clock, wait=fake.wait)
    for k in range(4):
        assert pace(1_000_000_000_000 + k * TEN_S)
    assert [round(at - 100.0, 6) for _t, at in pace.committed] == [0.0, 1.0, 2.0, 3.0]


def test_pacer_keeps_its_schedule_after_a_slow_tick() -> None:
    fake = FakeClock()
    pace = Pacer(2.0, clock=fake.clock, wait=fake.wait)
    assert pace(0)
    fake.now += 12.0  # the closed loop took 12 s of real time: ticks 1 and 2 are already due
    assert pace(TEN_S) and pace(2 * TEN_S)
    assert pace(3 * TEN_S)
    assert [round(at - 100.0, 6) for _t, at in pace.committed] == [0.0, 12.0, 12.0, 15.0]


def test_pacer_stops_when_its_wait_is_interrupted() -> None:
    fake = FakeClock()
    pace = Pacer(1.0, clock=fake.clock, wait=lambda s: True)
    assert pace(0)
    assert not pace(TEN_S)
    assert len(pace.committed) == 1


@pytest.mark.parametrize(("text", "speed"), [("10", 10.0), ("10x", 10.0), ("0.5", 0.5), ("max", math.inf)])
def test_parse_speed(text: str, speed: float) -> None:
    assert parse_speed(text) == speed


@pytest.mark.parametrize("text", ["0", "-1", "fast", "nan", ""])
def test_parse_speed_refuses_in_one_line(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_speed(text)
    assert err.value.one_line().startswith("--speed: expected a positive number")


def test_played_sample_is_the_scenario_recording_at_speed(tmp_path: Path, jvm_spike_rec: Path) -> None:
    fake = FakeClock()
    player = ScenarioPlayer(load_sample("jvm-spike"), tmp_path / "rec", speed=10, clock=fake.clock, wait=fake.wait)
    outcome = player.run()
    assert outcome is not None and outcome.ticks == 31 == player.ticks_committed
    # 31 ticks 10 s apart at 10× real time: 30 s of (fake) real time, one second per tick
    assert round(fake.now - 100.0, 6) == 30.0
    played, generated = open_recording(tmp_path / "rec"), open_recording(jvm_spike_rec)
    assert played.manifest.finalized
    assert played.time_range() == generated.time_range()  # the scenario's own times, not shifted
    assert played.count_rows() == generated.count_rows()


def test_a_follower_sees_the_recording_grow(tmp_path: Path) -> None:
    """Held at tick 3's wait, the recording being written holds ticks 0..2 (journal frames) and is locked."""
    from rec_support_live import journal_ticks

    reached, release = threading.Event(), threading.Event()
    now = [0.0]

    def wait(seconds: float) -> bool:
        if len(player.pacer.committed) == 3:
            reached.set()
            assert release.wait(60)
        now[0] += seconds
        return False

    player = ScenarioPlayer(load_sample("jvm-spike"), tmp_path / "rec", speed=1, clock=lambda: now[0], wait=wait)
    player.start()
    assert reached.wait(60)
    assert journal_ticks(tmp_path / "rec") == [0, 1, 2]
    assert (tmp_path / "rec" / "writer.lock").exists()
    release.set()
    assert player.join(60) and player.error is None
    assert not (tmp_path / "rec" / "writer.lock").exists()


def test_stop_finalizes_what_was_played(tmp_path: Path) -> None:
    fake = FakeClock()
    player = ScenarioPlayer(load_sample("jvm-spike"), tmp_path / "rec", speed=1, clock=fake.clock, wait=fake.wait)

    def wait(seconds: float) -> bool:
        if len(player.pacer.committed) == 5:
            player.stop()
            return True
        return fake.wait(seconds)

    player.pacer.wait = wait
    outcome = player.run()
    assert outcome is not None and outcome.ticks == 5
    rec = open_recording(tmp_path / "rec")
    assert rec.manifest.finalized and rec.count_rows()["ticks"] == 5
