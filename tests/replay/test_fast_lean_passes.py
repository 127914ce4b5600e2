"""Passes that evict are built lean (replay.fast.lean): only the pods' stats the reclaimed signal reads.

With thresholds so high that every pass is actionable, nearly every pass ranks and evicts: the engine
must still give the per-tick reference's results field for field, whichever signal is reclaimed (memory,
allocatable memory, PIDs, nodefs/imagefs bytes and inodes), with or without a dedicated imagefs,
among local-storage ticks, ties beyond Go's insertion-sort size and critical pods; several such variants
at once; and a wrong guess of the parts is caught and the pass run again whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_fast_equivalence import assert_same, reference, write

from recordings.reader import open_recording
from replay import engine
from replay.fast import lean
from replay.fast.columns import FILESYSTEMS, MEMORY, PROCESSES
from replay.kubelet.config import FlagOverrides
from replay.kubelet.manager import FsTopology
from replay.settings import SettingsRequest

GI = 1 << 30
USAGE = st.sampled_from([0, GI // 2, GI, GI, 2 * GI, 3 * GI])

ALWAYS = [  # every pass actionable: each reclaims a different signal (the first in eviction priority)
    ("memory.available<100Gi",),
    ("allocatableMemory.available<100Gi", "nodefs.available<99%"),
    ("pid.available<99%",),
    ("nodefs.available<99%",),
    ("imagefs.available<99%", "pid.available<99%"),
    ("nodefs.inodesFree<99%",),
    ("imagefs.inodesFree<99%",),
    ("memory.available<100Gi", "imagefs.available<99%", "nodefs.inodesFree<99%"),
]


@st.composite
def busy_pods(draw: Any, node: str, n_ticks: int) -> list[dict[str, Any]]:
    out = []
    for p in range(draw(st.integers(2, 16))):  # past 12: pdqsort's unstable steps decide ties
        requests: dict[str, str] = {}
        limits: dict[str, str] = {}
        if draw(st.booleans()):
            requests["memory"] = draw(st.sampled_from(["256Mi", "1Gi"]))
        if draw(st.booleans()):
            requests["ephemeral-storage"] = draw(st.sampled_from(["512Mi", "1Gi"]))
        if draw(st.integers(0, 3)) == 0:  # a local-storage limit: its ticks are run whole
            limits["ephemeral-storage"] = draw(st.sampled_from(["1Gi", "2Gi"]))
        volumes = []
        if draw(st.booleans()):
            volumes.append({"name": "scratch", "emptyDir": {"sizeLimit": draw(st.sampled_from(["1Gi", "4Gi"]))}})
        start = draw(st.integers(0, n_ticks - 1))
        out.append(
            {
                "obj": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{node}-p{p}",
                        "namespace": "default",
                        "uid": f"{node}-uid-{p}",
                        "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}],
                    },
                    "spec": {
                        "nodeName": node,
                        "priority": draw(st.sampled_from([0, 0, 0, 100, 2_000_001_000])),
                        "terminationGracePeriodSeconds": 30,
                        "containers": [{"name": "c", "resources": {"requests": requests, "limits": limits}}],
                        "volumes": volumes,
                    },
                    "status": {"phase": "Running"},
                },
                "start": start,
                "end": draw(st.one_of(st.none(), st.integers(start, n_ticks))),
                "late": draw(st.sampled_from([0, 0, 0, 1])),
                "usage": [draw(USAGE) for _ in range(n_ticks)],
                "disk": [draw(USAGE) for _ in range(n_ticks)],
            }
        )
    return out


@st.composite
def busy_recordings(draw: Any) -> dict[str, Any]:
    n_ticks = draw(st.integers(3, 8))
    nodes = {}
    for n in range(draw(st.integers(1, 2))):
        name = f"node-{n}"
        nodes[name] = {
            "pods": draw(busy_pods(name, n_ticks)),
            "mem": [draw(st.sampled_from([GI // 2, GI, 2 * GI])) for _ in range(n_ticks)],
            "fs": [draw(st.sampled_from([5, 10, 30])) for _ in range(n_ticks)],
            "pids": [draw(st.sampled_from([100, 950])) for _ in range(n_ticks)],
            "gap": [i > 0 and draw(st.integers(0, 9)) == 0 for i in range(n_ticks)],
            "stale": [draw(st.integers(0, 6)) == 0 for _ in range(n_ticks)],
            "imagefs": draw(st.booleans()),
        }
    return {"ticks": n_ticks, "nodes": nodes}


@st.composite
def busy_requests(draw: Any) -> SettingsRequest:
    topology = draw(st.sampled_from([None, FsTopology(False, False), FsTopology(True, False)]))
    return SettingsRequest(
        kubelet_version=draw(st.sampled_from(["1.30", "1.32"])),
        overrides=FlagOverrides(
            eviction_hard=draw(st.sampled_from(ALWAYS)),
            eviction_pressure_transition_period=draw(st.sampled_from([None, "0s"])),
        ),
        topology=topology,
        label=draw(st.text("abc", min_size=1, max_size=3)),
    )


@settings(
    max_examples=30,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=busy_recordings(), request=busy_requests(), window=st.sampled_from([1, 3, 256]))
def test_passes_that_evict_all_day_equal_the_reference(
    tmp_path_factory: Any, data: dict[str, Any], request: SettingsRequest, window: int
) -> None:
    from replay.fast import columns

    path = write(tmp_path_factory.mktemp("rec") / "rec", data)
    saved, columns.SUMMARY_WINDOW = columns.SUMMARY_WINDOW, window
    try:
        (fast,) = engine.replay(open_recording(path), [request])
    finally:
        columns.SUMMARY_WINDOW = saved
    assert_same(reference(path, request), fast)


@settings(
    max_examples=10,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=busy_recordings(), variants=st.lists(busy_requests(), min_size=2, max_size=3))
def test_busy_variants_sharing_summaries_each_equal_their_reference(
    tmp_path_factory: Any, data: dict[str, Any], variants: list[SettingsRequest]
) -> None:
    path = write(tmp_path_factory.mktemp("rec") / "rec", data)
    results = engine.replay(open_recording(path), variants)
    for request, result in zip(variants, results, strict=True):
        assert_same(reference(path, request), result)


def _spec(n_pods: int = 14) -> dict[str, Any]:
    n = 5
    pods = [
        {
            "obj": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{p}", "namespace": "default", "uid": f"u{p}"},
                "spec": {
                    "nodeName": "node-0",
                    "priority": p % 3,
                    "containers": [
                        {
                            "name": "c",
                            "resources": {
                                "requests": {"memory": "1Gi"} if p % 2 else {},
                                "limits": {"ephemeral-storage": "2Gi"} if p == 3 else {},
                            },
                        }
                    ],
                },
                "status": {"phase": "Running"},
            },
            "start": p % 3,
            "end": None,
            "usage": [GI * (p % 4)] * n,
            "disk": [GI * (p % 3)] * n,
        }
        for p in range(n_pods)
    ]
    return {
        "ticks": n,
        "nodes": {
            "node-0": {
                "pods": pods,
                "mem": [GI] * n,
                "fs": [10] * n,
                "pids": [950] * n,
                "gap": [False] * n,
                "stale": [False] * n,
                "imagefs": True,
            }
        },
    }


@pytest.mark.parametrize("hard", ALWAYS)
@pytest.mark.parametrize("guess", [0, MEMORY, PROCESSES, FILESYSTEMS])
def test_a_wrong_guess_of_the_parts_is_run_again_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hard: tuple[str, ...], guess: int
) -> None:
    path = write(tmp_path / "rec", _spec())
    request = SettingsRequest(overrides=FlagOverrides(eviction_hard=hard))
    monkeypatch.setattr(lean, "pass_parts", lambda manager, node, now: guess)
    (fast,) = engine.replay(open_recording(path), [request])
    assert fast.evictions
    assert_same(reference(path, request), fast)
