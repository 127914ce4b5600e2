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
    """One signal's recent (time µs, available) samples on one node."""

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: deque[tuple[int, int]] = deque()

    def add(self, time_us: int, available: int) -> None:
        if self.samples and time_us <= self.samples[-1][0]:
            if time_us == self.samples[-1][0]:
                self.samples[-1] = (time_us, available)
            return
        self.samples.append((time_us, available))
        horizon = time_us - int(WINDOW_S * 1_000_000)
        while self.samples and self.samples[0][0] < horizon:
            self.samples.popleft()

    def trend(self, capacity: int | None) -> Trend:
        n = len(self.samples)
        if n < MIN_SAMPLES:
            return Trend(None, n, f"too few samples ({n} of {MIN_SAMPLES})")
        slopes = _pairwise_slopes(list(self.samples))
        if not slopes:
            return Trend(None, n, "too few samples (no two at different times)")
        slope = _median(slopes)
        span = (self.samples[-1][0] - self.samples[0][0]) / 1e6
        scale = capacity if capacity else max(abs(v) for _t, v in self.samples) or 1
        if abs(slope) * max(span, 1.0) < FLAT_SHARE * scale:
            return Trend(slope, n, "no trend (flat)")
        same = sum(1 for s in slopes if (s > 0) == (slope > 0) and s != 0)
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


def _pairwise_slopes(samples: list[tuple[int, int]]) -> list[float]:
    out: list[float] = []
    for i, (ti, vi) in enumerate(samples):
        for tj, vj in samples[i + 1 :]:
            if tj != ti:
                out.append((vj - vi) * 1e6 / (tj - ti))
    return out


def _median(values: list[float]) -> float:
    values.sort()
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
