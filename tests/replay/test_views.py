"""replay.views and replay.compare.align: what front ends show of a result, computed from the result alone."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from recbuild import sidecar_recording

from recordings.reader import open_recording
from replay.compare import align
from replay.engine import replay_recording
from replay.kubelet.config import FlagOverrides
from replay.results import ReplayResult
from replay.settings import SettingsRequest
from replay.views import (
    SHORT_SIGNAL,
    SIGNAL_ORDER,
    is_bytes,
    lowest_available,
    node_signals,
    overcommit_peaks,
    pressure_seconds,
    signal_key,
)


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sidecar_recording(tmp_path_factory.mktemp("views") / "rec")


@pytest.fixture(scope="module")
def result(rec: Path) -> ReplayResult:
    return replay_recording(open_recording(rec))


def test_a_condition_still_on_at_the_end_counts_up_to_the_nodes_last_pass(result: ReplayResult) -> None:
    (row,) = result.conditions.to_dicts()
    assert row["to"] is None
    assert pressure_seconds(result) == {("kind-worker", "MemoryPressure"): 20.0}  # low from tick 2 to tick 4


def test_signals_sort_in_the_kubelets_order_and_only_bytes_are_bytes() -> None:
    shuffled = ["pid.available", "custom.signal", "nodefs.inodesFree", "memory.available", "imagefs.available"]
    assert sorted(shuffled, key=signal_key) == [
        "memory.available",
        "nodefs.inodesFree",
        "imagefs.available",
        "pid.available",
        "custom.signal",
    ]
    assert [s for s in SIGNAL_ORDER if is_bytes(s)] == [
        "memory.available",
        "allocatableMemory.available",
        "nodefs.available",
        "imagefs.available",
        "containerfs.available",
    ]
    assert set(SHORT_SIGNAL) == set(SIGNAL_ORDER)


def test_the_lazy_aggregates_equal_the_same_questions_asked_of_the_whole_frames(result: ReplayResult) -> None:
    signals = result.signals.collect()
    lowest = lowest_available(result.signals)
    expected = signals.group_by("node", "signal").agg(pl.col("available").min().alias("lowest"))
    assert lowest.sort("node", "signal").equals(expected.sort("node", "signal"))
    one = node_signals(result.signals, "kind-worker")
    assert one.height == signals.filter(pl.col("node") == "kind-worker").height
    assert one["tick"].is_sorted() and node_signals(result.signals, "nobody").is_empty()
    over = result.overcommit.collect().filter(pl.col("resource") == "memory")
    peaks = overcommit_peaks(result.overcommit)
    if over.filter(pl.col("allocatable") > 0).is_empty():
        assert peaks == {}
    else:
        assert peaks["kind-worker"] == pytest.approx((over["limits"] / over["allocatable"]).max())
    assert overcommit_peaks(None) == {}


def test_align_pairs_each_pods_first_eviction_in_two_results(rec: Path) -> None:
    recording = open_recording(rec)
    a = replay_recording(recording, SettingsRequest(kubelet_version="1.30"))
    b = replay_recording(recording, SettingsRequest(kubelet_version="1.32"))
    pairs = {p.pod: p for p in align(a, b)}
    pair = pairs["alloc-sidecars"]
    assert pair.status == "message differs" and pair.a is not None and pair.b is not None
    assert "el-sidecar1" not in pair.a.message and "el-sidecar1" in pair.b.message
    assert pair.first_time == min(pair.a.time, pair.b.time)
    times = [p.first_time for p in align(a, b)]
    assert times == sorted(t for t in times if t is not None)
    only_a = align(
        a,
        replay_recording(
            recording,
            SettingsRequest(
                label="none", kubelet_version="1.30", overrides=FlagOverrides(eviction_hard=("memory.available<1Mi",))
            ),
        ),
    )
    assert {p.status for p in only_a} == {"only in A"}
