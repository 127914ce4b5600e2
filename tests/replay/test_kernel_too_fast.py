"""``too_fast`` reads each node's passes in columns and judges only the pairs that can qualify; the reference walks
every pair. Property test: both give the same moments on random passes, thresholds and kernel kills."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from recordings.kernel import OOM_KILLED, SYSTEM_OOM
from replay.kernel import SIGNAL, too_fast, too_fast_reference
from replay.results import SIGNALS_SCHEMA, KernelKill, NodeResult

T0 = datetime(2026, 11, 27, 12, tzinfo=UTC)
MI = 1 << 20
GI = 1 << 30


def _kill(node: str, seconds: float, kind: str, count: int) -> KernelKill:
    return KernelKill(
        node=node,
        namespace=None,
        pod=None,
        uid=None,
        container=None,
        time=T0 + timedelta(seconds=seconds),
        kind=kind,
        message=None,
        victim=None,
        pid=None,
        exit_code=None,
        restart_count=None,
        count=count,
        source="event",
    )


# available: near the 64Mi floor, near a threshold, plenty, or unknown
_available = st.one_of(st.none(), st.sampled_from([0, 32 * MI, 64 * MI, 64 * MI + 1, 100 * MI, 500 * MI, 2 * GI]))
_capacity = st.one_of(st.none(), st.sampled_from([4 * GI, 8 * GI, 64 * GI, 6_710_886_500]))


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[list[pl.DataFrame], list[Any], list[KernelKill]]:
    frames, nodes, kills = [], [], []
    for n in range(draw(st.integers(1, 3))):
        node = f"node-{n}"
        thresholds = [
            SimpleNamespace(id=i, signal=SIGNAL, hard=draw(st.booleans()), value=draw(st.sampled_from([100, 200, 500])))
            for i in range(draw(st.integers(0, 2)))
        ]
        nodes.append(SimpleNamespace(node=node, thresholds=thresholds))
        rows = []
        for tick in range(draw(st.integers(0, 12))):
            when = T0 + timedelta(seconds=10 * tick)
            available, capacity = draw(_available), draw(_capacity)
            for t in thresholds or [None]:
                rows.append(
                    {
                        "node": node,
                        "tick": tick,
                        "time": when,
                        "signal": SIGNAL,
                        "available": available,
                        "capacity": capacity,
                        "threshold_id": None if t is None else t.id,
                        "threshold_value": None if t is None else t.value * MI,
                        "met": None,
                        "actionable": None,
                    }
                )
            if draw(st.booleans()):  # another signal's row on the same pass is never read
                rows.append({**rows[-1], "signal": "nodefs.available", "available": 0})
        frames.append(pl.DataFrame(rows, schema=SIGNALS_SCHEMA))
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from([SYSTEM_OOM, SYSTEM_OOM, OOM_KILLED]))
            kills.append(_kill(node, draw(st.integers(-5, 130)), kind, draw(st.integers(0, 2))))
    return frames, nodes, kills


@given(_cluster())
def test_the_columnar_too_fast_finds_the_same_moments_as_the_pair_by_pair_reference(
    cluster: tuple[list[pl.DataFrame], list[Any], list[KernelKill]],
) -> None:
    frames, nodes, kills = cluster
    results = cast(list[NodeResult], nodes)
    expected = too_fast_reference(pl.concat(frames).lazy(), results, kills)
    assert too_fast([f.lazy() for f in frames], results, kills) == expected


def test_a_fall_to_exhaustion_and_a_system_oom_between_passes_are_both_found() -> None:
    rows = [
        ("n", 0, 2 * GI),
        ("n", 1, 32 * MI),  # fell from 2Gi to below the 64Mi floor between two passes
        ("n", 2, 2 * GI),
        ("n", 3, 2 * GI),  # a SystemOOM at 25 s, between ticks 2 and 3
    ]
    frame = pl.DataFrame(
        [
            {
                "node": node,
                "tick": tick,
                "time": T0 + timedelta(seconds=10 * tick),
                "signal": SIGNAL,
                "available": available,
                "capacity": 8 * GI,
                "threshold_id": None,
                "threshold_value": None,
                "met": None,
                "actionable": None,
            }
            for node, tick, available in rows
        ],
        schema=SIGNALS_SCHEMA,
    )
    node = cast(NodeResult, SimpleNamespace(node="n", thresholds=[]))
    races = too_fast([frame.lazy()], [node], [_kill("n", 25, SYSTEM_OOM, 1)])["n"]
    assert [(r.from_tick, r.to_tick, r.kills) for r in races] == [(0, 1, 0), (2, 3, 1)]
