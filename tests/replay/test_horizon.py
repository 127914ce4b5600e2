"""Where a replay stops being the recording's world: the per-node horizon."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from replay.collect import horizons
from replay.results import Eviction, Match, RealEviction

T0 = datetime(2024, 5, 20, 10, 0, tzinfo=UTC)


def _evicted(i: int, node: str, pod: str, second: int) -> Eviction:
    return Eviction(
        id=i,
        node=node,
        tick=second // 10,
        time=T0 + timedelta(seconds=second),
        namespace="default",
        pod=pod,
        uid=f"u-{pod}",
        owner_kind=None,
        owner_name=None,
        qos="BestEffort",
        priority=0,
        cause="memory",
        signal="memory.available",
        hard=True,
        observed_available=1,
        threshold_value=2,
        grace_period_override=0,
        message="m",
        annotations={},
    )


def _real(node: str | None, pod: str, second: int | None) -> RealEviction:
    return RealEviction(
        node, "default", pod, f"u-{pod}", "m", None if second is None else T0 + timedelta(seconds=second), "event"
    )


def test_agreeing_evictions_part_nothing() -> None:
    e = _evicted(0, "n0", "a", 30)
    assert horizons([Match(_real("n0", "a", 30), 0, True, True, True, None)], [e]) == {}


def test_an_eviction_the_recording_does_not_show_parts_the_node_there() -> None:
    got = horizons([], [_evicted(0, "n0", "a", 30), _evicted(1, "n0", "b", 20)])
    assert got["n0"][0] == T0 + timedelta(seconds=20)
    assert got["n0"][1] == "the replay evicts default/b, which the recording does not show evicted"


def test_a_real_eviction_the_replay_does_not_make_parts_it_at_the_real_time() -> None:
    got = horizons([Match(_real("n1", "x", 50), None, False, None, False, None)], [_evicted(0, "n1", "y", 90)])
    assert got["n1"] == (
        T0 + timedelta(seconds=50),
        "the recording shows default/x evicted, which the replay does not evict",
    )


def test_the_same_pod_evicted_at_another_time_parts_at_the_earlier_of_the_two() -> None:
    got = horizons([Match(_real("n0", "a", 100), 0, True, False, True, None)], [_evicted(0, "n0", "a", 40)])
    assert got["n0"][0] == T0 + timedelta(seconds=40) and "the recording at" in got["n0"][1]


def test_a_real_eviction_of_an_unknown_node_or_time_parts_nothing() -> None:
    assert (
        horizons(
            [
                Match(_real(None, "a", 10), None, False, None, False, None),
                Match(_real("n0", "b", None), None, False, None, False, None),
            ],
            [],
        )
        == {}
    )
