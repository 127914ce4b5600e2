"""Time to each threshold at the current trend, with the estimator stated.

Per node and signal the last :data:`WINDOW_S` seconds of observed values (the manager's own
observations: ``available`` as the kubelet computes it) are kept. The trend is the Theil–Sen slope (the
median of the slopes between every pair of samples: robust to a single outlier tick, no distribution
assumed). A forecast is made only when it is meaningful; otherwise it says why:

* fewer than :data:`MIN_SAMPLES` samples in the window → ``too few samples``;
* the threshold is met now (``threshold > available``, thresholds.go's strict comparison) → 0 s, ``already met``;
* ``|slope| × window`` under :data:`FLAT_SHARE` of the signal's capacity → ``no trend (flat)``;
* fewer than :data:`SIGN_AGREEMENT` of the pairwise slopes share the median's sign → ``noisy``;
* the value is rising (more available) → ``moving away``;
* else ``(available − threshold) / −slope`` seconds from the latest sample.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import deque
from dataclasses import dataclass

WINDOW_S = 300.0
"""The recent window the slope is fitted on."""
MIN_SAMPLES = 5
FLAT_SHARE = 0.005
"""A change over the whole window smaller than this share of capacity is no trend."""
SIGN_AGREEMENT = 0.65
"""The share of pairwise slopes that must agree with the median's sign."""

METHOD = (
    f"Theil–Sen slope over the last {WINDOW_S:.0f} s ({{n}} samples); no trend under {MIN_SAMPLES} samples, "
    f"when the change over the window is under {FLAT_SHARE:.1%} of capacity, or when under "
    f"{SIGN_AGREEMENT:.0%} of pairwise slopes share the median's sign"
)


@dataclass(frozen=True)
class Trend:
    """What the estimator says about one signal's recent values."""

    slope_per_second: float | None
    samples: int
    note: str | None
    """None: a usable downward or upward trend; else why there is none."""

    @property
    def method(self) -> str:
        return METHOD.format(n=self.samples)


class SignalHistory:
    """One signal's recent (time µs, available) samples on one node, with their pairwise slopes kept sorted:
    a new sample adds its slopes to the others, an expired one takes its own away (each the same float
    expression, so it is found again exactly), so the median costs a bisect, not a sort of every pair."""

    __slots__ = ("samples", "slopes")

    def __init__(self) -> None:
        self.samples: deque[tuple[int, int]] = deque()
        self.slopes: list[float] = []

    def add(self, time_us: int, available: int) -> None:
        if self.samples and time_us <= self.samples[-1][0]:
            if time_us < self.samples[-1][0]:
                return
            self._drop(self.samples.pop(), newest=True)
        for t, v in self.samples:
            if t != time_us:
                insort(self.slopes, _slope(t, v, time_us, available))
        self.samples.append((time_us, available))
        horizon = time_us - int(WINDOW_S * 1_000_000)
        while self.samples and self.samples[0][0] < horizon:
            self._drop(self.samples.popleft(), newest=False)

    def _drop(self, sample: tuple[int, int], *, newest: bool) -> None:
        t0, v0 = sample
        for t, v in self.samples:
            if t == t0:
                continue
            s = _slope(t, v, t0, v0) if newest else _slope(t0, v0, t, v)
            del self.slopes[bisect_left(self.slopes, s)]

    def trend(self, capacity: int | None) -> Trend:
        n = len(self.samples)
        if n < MIN_SAMPLES:
            return Trend(None, n, f"too few samples ({n} of {MIN_SAMPLES})")
        slopes = self.slopes
        if not slopes:
            return Trend(None, n, "too few samples (no two at different times)")
        mid = len(slopes) // 2
        slope = slopes[mid] if len(slopes) % 2 else (slopes[mid - 1] + slopes[mid]) / 2
        span = (self.samples[-1][0] - self.samples[0][0]) / 1e6
        scale = capacity if capacity else max(abs(v) for _t, v in self.samples) or 1
        if abs(slope) * max(span, 1.0) < FLAT_SHARE * scale:
            return Trend(slope, n, "no trend (flat)")
        same = len(slopes) - bisect_right(slopes, 0.0) if slope > 0 else bisect_left(slopes, 0.0)
        if same < SIGN_AGREEMENT * len(slopes):
            return Trend(slope, n, f"noisy ({same / len(slopes):.0%} of pairwise slopes share the trend's sign)")
        return Trend(slope, n, None)


def seconds_to(available: int, threshold: int, trend: Trend) -> tuple[float | None, str | None]:
    """(seconds until ``threshold > available`` at the trend, note) — 0.0 when met now."""
    if threshold > available:
        return 0.0, "already met"
    if trend.note is not None:
        return None, trend.note
    assert trend.slope_per_second is not None
    if trend.slope_per_second >= 0:
        return None, "moving away"
    # met once available < threshold: the distance to cover is (available - threshold) plus one unit
    return (available - threshold + 1) / -trend.slope_per_second, None


def _slope(t_old: int, v_old: int, t_new: int, v_new: int) -> float:
    """Units per second between two samples (times in µs)."""
    return (v_new - v_old) * 1e6 / (t_new - t_old)
