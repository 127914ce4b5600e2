"""A node's very first pass is judged by the thresholds as configured, before UpdateContainerFsThresholds.

eviction_manager.go synchronize copies ``m.config.Thresholds`` into ``thresholds`` before the
``m.dedicatedImageFs == nil`` block, and that block's ``thresholds, err := UpdateContainerFsThresholds(...)``
declares a new ``thresholds`` in the block's scope (1.29 through master): the first pass evaluates the
list without the containerfs copies (and with a user containerfs threshold the update then replaces);
every later pass evaluates the updated ``m.config.Thresholds``. The fast path must give the reference's
result field for field when a containerfs threshold is met right at that first pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from recordings.format import Manifest
from recordings.reader import open_recording
from recordings.summary_codec import format_time
from recordings.writer import RecordingWriter
from replay import engine
from replay.kubelet.config import FlagOverrides
from replay.kubelet.manager import FsTopology
from replay.settings import SettingsRequest

GI = 1 << 30
T0 = 1_716_200_000_000_000  # µs
STEP = 10_000_000
CAPACITY = 100 * GI

SHARED = "shared"
DEDICATED = "dedicated"
SPLIT = "split"


def _fs(percent: int, t: str, capacity: int = CAPACITY) -> dict[str, Any]:
    return {
        "time": t,
        "availableBytes": capacity * percent // 100,
        "capacityBytes": capacity,
        "usedBytes": capacity - capacity * percent // 100,
        "inodesFree": 10_000 * percent,
        "inodes": 1_000_000,
        "inodesUsed": 1_000_000 - 10_000 * percent,
    }


def _summary(node: str, spec: dict[str, Any], i: int) -> dict[str, Any]:
    """nodefs, imagefs and containerfs as the topology has them: a shared one is the same filesystem
    (same numbers), a dedicated imagefs has twice the capacity, a split containerfs three times."""
    t = format_time(T0 + i * STEP)
    topology = spec["topology"]
    nodefs = _fs(spec["nodefs"][i], t)
    imagefs = nodefs if topology == SHARED else _fs(spec["imagefs"][i], t, 2 * CAPACITY)
    containerfs = _fs(spec["containerfs"][i], t, 3 * CAPACITY) if topology == SPLIT else imagefs
    pods = []
    for p, disk in enumerate(spec["disk"]):
        pods.append(
            {
                "podRef": {"name": f"p{p}", "namespace": "default", "uid": f"uid-{p}"},
                "memory": {"time": t, "workingSetBytes": GI},
                "ephemeral-storage": {"time": t, "usedBytes": disk * GI, "inodesUsed": 3},
                "containers": [
                    {
                        "name": "c",
                        "memory": {"time": t, "workingSetBytes": GI},
                        "rootfs": {"time": t, "usedBytes": disk * GI // 2, "inodesUsed": 2},
                        "logs": {"time": t, "usedBytes": disk * GI // 4, "inodesUsed": 1},
                    }
                ],
            }
        )
    return {
        "node": {
            "nodeName": node,
            "memory": {"time": t, "availableBytes": 8 * GI, "workingSetBytes": 2 * GI},
            "fs": nodefs,
            "runtime": {"imageFs": dict(imagefs), "containerFs": dict(containerfs)},
            "rlimit": {"time": t, "maxpid": 1000, "curproc": 100},
            "systemContainers": [
                {"name": "pods", "memory": {"time": t, "availableBytes": 8 * GI, "workingSetBytes": 2 * GI}}
            ],
        },
        "pods": pods,
    }


def _pod(node: str, p: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"p{p}",
            "namespace": "default",
            "uid": f"uid-{p}",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}],
        },
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": 30, "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


def write(root: Path, spec: dict[str, Any]) -> Path:
    writer = RecordingWriter(root, Manifest(source="import"))
    node = "node-0"
    for p in range(len(spec["disk"])):
        writer.observe("pod", _pod(node, p), observed=T0 - 1, node=node)
    for i in range(spec["ticks"]):
        at = T0 + i * STEP
        tick = writer.begin_tick(at)
        tick.add_summary(node, _summary(node, spec, i), scraped=at)
        writer.commit(tick)
    writer.finalize()
    return root


def assert_same(a: Any, b: Any) -> None:
    assert a.nodes == b.nodes
    assert a.evictions == b.evictions
    assert a.signals.collect().equals(b.signals.collect(), null_equal=True)
    assert a.conditions.equals(b.conditions, null_equal=True)
    assert a.same_as(b)


def both(path: Path, request: SettingsRequest, chunk: int | None = None) -> tuple[Any, Any]:
    (reference,) = engine.replay(open_recording(path), [request], reference=True)
    (fast,) = engine.replay(open_recording(path), [request], chunk_ticks=chunk)
    return reference, fast


def _met(result: Any, signal: str, tick: int) -> list[bool]:
    import polars as pl

    rows = result.signals.collect().filter((pl.col("signal") == signal) & (pl.col("tick") == tick))
    return [bool(m) for m in rows["met"].to_list()]


LOW = [5, 80, 80, 80, 80]
"""Below every threshold at the first pass only."""


def test_a_containerfs_copy_met_at_the_first_pass_is_not_met_there(tmp_path: Path) -> None:
    """Split filesystem: containerfs copies nodefs.available<10%; containerfs is at 5 % on the first pass
    only: the kubelet does not see it met (the copy is not in the first pass's list), nor any pressure."""
    spec = {"ticks": 5, "topology": SPLIT, "nodefs": [80] * 5, "imagefs": [80] * 5, "containerfs": LOW, "disk": [1]}
    path = write(tmp_path / "rec", spec)
    request = SettingsRequest(kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=("nodefs.available<10%",)))
    reference, fast = both(path, request)
    assert _met(reference, "containerfs.available", 0) == [False, False]  # the hard and the soft copy
    assert not reference.evictions
    assert_same(reference, fast)


def test_a_user_containerfs_threshold_met_at_the_first_pass_outlives_its_replacement(tmp_path: Path) -> None:
    """A user's containerfs.available<20% (the kubelet logs that it ignores it) is in the first pass's list:
    met there and graced, it stays in thresholdsMet by the minimum-reclaim hysteresis of every later pass
    although the update replaced it by the copy of nodefs.available<10%: DiskPressure throughout, each pass
    relieved by container GC (which checks the updated list). The fast path hands such a node to the
    reference."""
    spec = {
        "ticks": 5,
        "topology": SPLIT,
        "nodefs": [80] * 5,
        "imagefs": [80] * 5,
        "containerfs": [15] * 5,
        "disk": [1, 3],
    }
    path = write(tmp_path / "rec", spec)
    request = SettingsRequest(
        kubelet_version="1.33",
        overrides=FlagOverrides(eviction_hard=("nodefs.available<10%", "containerfs.available<20%")),
    )
    reference, fast = both(path, request)
    assert reference.nodes[0].reasons == {"node-level reclaim (container_gc) relieved the pressure": 5}
    assert reference.conditions["condition"].to_list() == ["DiskPressure"]
    assert_same(reference, fast)


TOPOLOGIES = {
    SHARED: FsTopology(),
    DEDICATED: FsTopology(dedicated_image_fs=True),
    SPLIT: FsTopology(dedicated_image_fs=True, split_container_image_fs=True),
}
PERCENT = st.sampled_from([5, 9, 10, 11, 15, 30, 80])


@st.composite
def first_pass_cases(draw: Any) -> tuple[dict[str, Any], SettingsRequest]:
    """A recording whose first pass has some filesystem low, and settings with containerfs copies (and
    sometimes a user containerfs threshold) on it."""
    n = draw(st.integers(2, 6))
    topology = draw(st.sampled_from([SHARED, DEDICATED, SPLIT]))
    series = {fs: [draw(PERCENT) for _ in range(n)] for fs in ("nodefs", "imagefs", "containerfs")}
    low = draw(st.sampled_from(["nodefs", "imagefs", "containerfs"]))
    series[low][0] = draw(st.sampled_from([5, 9]))
    spec = {
        "ticks": n,
        "topology": topology,
        **series,
        "disk": [draw(st.integers(0, 4)) for _ in range(draw(st.integers(1, 3)))],
    }
    hard = draw(
        st.sampled_from(
            [
                ("nodefs.available<10%",),
                ("imagefs.available<10%", "nodefs.inodesFree<5%"),
                ("nodefs.available<12%", "imagefs.available<10%", "imagefs.inodesFree<10%", "nodefs.inodesFree<8%"),
                ("nodefs.available<10%", "imagefs.available<10%", "containerfs.available<20%"),
                ("memory.available<100Mi", "containerfs.available<12%", "containerfs.inodesFree<8%"),
            ]
        )
    )
    soft = draw(
        st.sampled_from(
            [
                (),
                ("nodefs.available<12%",),
                ("imagefs.available<16%",),
                ("imagefs.available<16%", "containerfs.available<10%"),
            ]
        )
    )
    grace = tuple(f"{t.split('<')[0]}={draw(st.sampled_from(['0s', '10s', '25s']))}" for t in soft)
    configured = {t.split("<")[0] for t in (*hard, *soft)}
    reclaims = [(), ("nodefs.available=5%",), ("containerfs.available=10%", "imagefs.available=1Gi")]
    reclaim = draw(st.sampled_from([r for r in reclaims if all(x.split("=")[0] in configured for x in r)]))
    request = SettingsRequest(
        kubelet_version=draw(st.sampled_from(["1.29", "1.31", "1.33", "1.35", "master"])),
        overrides=FlagOverrides(
            eviction_hard=hard,
            eviction_soft=soft,
            eviction_soft_grace_period=grace,
            eviction_minimum_reclaim=reclaim,
            eviction_pressure_transition_period=draw(st.sampled_from([None, "0s", "15s"])),
        ),
        topology=draw(st.sampled_from([None, TOPOLOGIES[topology]])),
        counterfactual=draw(st.booleans()),
    )
    return spec, request


@settings(
    max_examples=50,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=first_pass_cases(), chunk=st.sampled_from([1, 2, 2048]))
def test_fast_path_equals_the_reference_when_a_containerfs_threshold_is_met_at_the_first_pass(
    tmp_path_factory: Any, case: tuple[dict[str, Any], SettingsRequest], chunk: int
) -> None:
    spec, request = case
    path = write(tmp_path_factory.mktemp("rec") / "rec", spec)
    reference, fast = both(path, request, chunk)
    assert_same(reference, fast)
