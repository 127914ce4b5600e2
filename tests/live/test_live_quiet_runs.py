"""replay/fast/passes.py: the quiet runs found in Python for a few passes (the live engine steps a node one tick
at a time) are the polars query's, on random masks, clocks and local-storage ticks."""

from __future__ import annotations

import random

import polars as pl
import pytest

import replay.fast.passes as passes


@pytest.mark.parametrize("seed", range(4))
def test_small_runs_equal_the_query(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        n = rng.randint(0, 40)
        ticks = sorted(rng.sample(range(1000), n))
        m1s = [rng.choice([0, 0, 0, 1, 6]) for _ in range(n)]
        nows = [rng.randint(0, 10**9) for _ in range(n)]
        storage = set(rng.sample(ticks, rng.randint(0, min(3, n))))
        frame = pl.DataFrame(
            {"tick": ticks, "m1": m1s, "when": nows}, schema={"tick": pl.Int64, "m1": pl.Int64, "when": pl.Int64}
        )
        small = passes._runs(frame, ticks, nows, m1s, storage)
        with monkeypatch.context() as m:
            m.setattr(passes, "SMALL_RUNS", -1)
            query = passes._runs(frame, ticks, nows, m1s, storage)
        assert small == query, (ticks, m1s, nows, storage)
