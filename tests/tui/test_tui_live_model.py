"""The live view's state without a screen: bounded history and events, the live timeline's pin, bands and marks."""

from __future__ import annotations

from live_fake import MI, event, node

from tui.live_model import HISTORY, MAX_EVENTS, LiveState, fmt_seconds, soonest
from tui.live_plot import LiveTimeline


def test_history_and_events_are_bounded_whatever_the_length() -> None:
    state = LiveState()
    for tick in range(HISTORY + 50):
        state.apply({"worker-1": node(tick, 2000 * MI)}, [event("warning", tick, signal="memory.available")], None)
    assert len(state.history["worker-1"]) == HISTORY
    assert state.history["worker-1"][0].tick == 50
    assert len(state.events) == min(MAX_EVENTS, HISTORY + 50)
    state.apply({"worker-1": node(HISTORY + 49, 2000 * MI)}, [event("next-to-go", 1)], None)
    assert len(state.history["worker-1"]) == HISTORY  # the same tick again adds no point; next-to-go is not listed


def test_the_timeline_stays_pinned_until_moved_and_pins_again() -> None:
    state = LiveState()
    model = LiveTimeline()
    for tick in range(5):
        state.apply({"worker-1": node(tick, (2000 - 100 * tick) * MI)}, [], None)
        model.update(list(state.history["worker-1"]), [])
    assert model.pinned and model.cursor_tick == 4 and model.signal == "memory.available"
    model.move(-2)
    assert not model.pinned and model.cursor_tick == 2
    state.apply({"worker-1": node(5, 1000 * MI)}, [], None)
    model.update(list(state.history["worker-1"]), [])
    assert model.cursor_tick == 2 and model.window() == (0, 5)
    model.move(10)  # to the newest point: pinned again
    assert model.pinned and model.cursor_tick == 5
    model.move(-1)
    model.pin()
    assert model.pinned and model.cursor_tick == 5


def test_bands_marks_and_thresholds_of_the_plot() -> None:
    state = LiveState()
    pressure = ("MemoryPressure",)
    for tick, available, conditions in [(0, 900, ()), (1, 450, pressure), (2, 400, pressure), (3, 900, ())]:
        state.apply({"worker-1": node(tick, available * MI, conditions=conditions)}, [], None)
    kill = event("kernel-kill", 2, pod="java")
    model = LiveTimeline(kinds={("memory.available", 500 * MI): "hard"})
    model.update(list(state.history["worker-1"]), [kill])
    data = model.plot(80)
    assert [(b.condition, b.first, b.last) for b in data.bands] == [("MemoryPressure", 1, 2)]
    assert [(m.index, m.kind, m.pod) for m in data.markers] == [(2, "kernel", "java")]
    assert [label for label, _series in data.thresholds] == ["hard"]
    assert data.unit == "MiB" and data.ys[1] == 450.0


def test_the_soonest_forecast_and_its_words() -> None:
    now = node(1, 900 * MI, seconds=250.0)
    first = soonest(now.forecasts)
    assert first is not None and first.seconds_to_threshold == 250.0
    assert soonest(node(1, 900 * MI).forecasts) is None  # no trend
    assert (fmt_seconds(250.0), fmt_seconds(0.0), fmt_seconds(None), fmt_seconds(7300.0)) == (
        "4m10s",
        "MET",
        "—",
        "2h01m",
    )
