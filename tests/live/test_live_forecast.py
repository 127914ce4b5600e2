"""The forecast's estimator as stated: Theil–Sen over the window, and each "no trend" reason."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from live.forecast import MIN_SAMPLES, WINDOW_S, SignalHistory, seconds_to

S = 1_000_000
GI = 1 << 30


def history(values: list[int], step_s: int = 10) -> SignalHistory:
    h = SignalHistory()
    for i, v in enumerate(values):
        h.add(i * step_s * S, v)
    return h


def test_a_steady_fall_reaches_the_threshold_at_its_pace() -> None:
    h = history([10 * GI - i * 100 * (1 << 20) for i in range(10)])  # 100Mi every 10 s
    trend = h.trend(16 * GI)
    assert trend.note is None and trend.slope_per_second is not None
    assert abs(trend.slope_per_second + 10 * (1 << 20)) < 1
    seconds, note = seconds_to(10 * GI - 900 * (1 << 20), GI, trend)
    assert note is None and seconds is not None and abs(seconds - (9 * GI - 900 * (1 << 20)) / (10 * (1 << 20))) < 1
    assert "Theil–Sen" in trend.method and "(10 samples)" in trend.method


def test_the_reasons_for_no_forecast() -> None:
    assert history([GI] * (MIN_SAMPLES - 1)).trend(16 * GI).note == f"too few samples ({MIN_SAMPLES - 1} of 5)"
    assert history([GI] * 10).trend(16 * GI).note == "no trend (flat)"
    scattered = [8 * GI + ((i * 7919) % 13 - 6) * 300 * (1 << 20) - i * 15 * (1 << 20) for i in range(20)]
    assert (history(scattered).trend(16 * GI).note or "").startswith("noisy (63% of pairwise slopes")
    rising = history([GI + i * 100 * (1 << 20) for i in range(10)]).trend(16 * GI)
    assert seconds_to(2 * GI, GI, rising) == (None, "moving away")
    assert seconds_to(GI - 1, GI, rising) == (0.0, "already met")


def test_samples_older_than_the_window_are_dropped() -> None:
    h = history([GI] * 100)
    assert len(h.samples) == WINDOW_S // 10 + 1


@given(st.lists(st.integers(0, 1 << 40), min_size=2, max_size=60), st.sampled_from((5, 10, 15)))
def test_the_kept_slopes_are_every_pair_in_the_window(values: list[int], step: int) -> None:
    h = history(values, step)
    samples = list(h.samples)
    pairs = [
        (vj - vi) * 1e6 / (tj - ti) for i, (ti, vi) in enumerate(samples) for tj, vj in samples[i + 1 :] if tj != ti
    ]
    assert h.slopes == sorted(pairs)
    if len(samples) >= MIN_SAMPLES:
        trend = h.trend(None)
        assert trend.slope_per_second == statistics.median(pairs)


def test_a_sample_again_at_the_same_time_replaces_the_last() -> None:
    h = history([GI, GI, GI, GI, GI])
    h.add(4 * 10 * S, 2 * GI)
    assert list(h.samples)[-1] == (40 * S, 2 * GI) and len(h.samples) == 5
    assert len(h.slopes) == 10
