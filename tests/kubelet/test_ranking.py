"""ranking.py: GetResourceRequestQuantity and the memory / disk / PID rankings (spec §5)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import MI, container, container_stats_json, make_pod, make_pod_stats
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.quantity import Format
from replay.kubelet.api import Pod, PodStats
from replay.kubelet.ranking import (
    FsStatsType,
    get_resource_request_quantity,
    local_volume_names,
    rank_disk_pressure_func,
    rank_memory_pressure,
    rank_pid_pressure,
    signal_fs_stats,
)
from replay.kubelet.versions import profile

ALL_FS = (FsStatsType.IMAGES, FsStatsType.ROOT, FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE)


# --- GetResourceRequestQuantity (spec §5.5) ---------------------------------------------------------------
def test_request_is_the_sum_of_regular_containers() -> None:
    pod = make_pod(
        "p", containers=[container("a", {"memory": "100Mi"}), container("b", {"memory": "50Mi"}), container("c")]
    )
    assert get_resource_request_quantity(pod, "memory").int_value() == 150 * MI


@pytest.mark.parametrize(("init_request", "want_mi"), [("120Mi", 150), ("200Mi", 200)])
def test_request_is_the_max_with_every_init_container_including_sidecars(init_request: str, want_mi: int) -> None:
    pod = make_pod(
        "p",
        containers=[container("a", {"memory": "100Mi"}), container("b", {"memory": "50Mi"})],
        init_containers=[
            container("sidecar", {"memory": init_request}, restart_policy="Always"),
            container("init", {"memory": "10Mi"}),
        ],
    )
    assert get_resource_request_quantity(pod, "memory").int_value() == want_mi * MI


def test_overhead_is_added_only_to_a_non_zero_request() -> None:
    with_request = make_pod("p", containers=[container("a", {"memory": "100Mi"})], overhead={"memory": "10Mi"})
    without = make_pod("q", containers=[container("a")], overhead={"memory": "10Mi"})
    assert get_resource_request_quantity(with_request, "memory").int_value() == 110 * MI
    assert get_resource_request_quantity(without, "memory").is_zero()


@pytest.mark.parametrize(
    ("resource", "fmt"),
    [
        ("memory", Format.BINARY_SI),
        ("ephemeral-storage", Format.BINARY_SI),
        ("storage", Format.BINARY_SI),
        ("cpu", Format.DECIMAL_SI),
        ("inodes", Format.DECIMAL_SI),
    ],
)
def test_zero_request_has_the_resources_format(resource: str, fmt: Format) -> None:
    assert get_resource_request_quantity(make_pod("p"), resource).format is fmt


def test_pod_level_request_replaces_the_container_sum_from_1_34() -> None:
    pod = make_pod(
        "p", containers=[container("a", {"memory": "100Mi"})], pod_resources={"requests": {"memory": "300Mi"}}
    )
    assert get_resource_request_quantity(pod, "memory", profile("1.34")).int_value() == 300 * MI
    assert get_resource_request_quantity(pod, "memory", profile("1.33")).int_value() == 100 * MI


# --- examples ---------------------------------------------------------------------------------------------
def _names(pods: list[Pod]) -> list[str]:
    return [p.name for p in pods]


def test_memory_ranking_worked_example_from_the_spec() -> None:
    pods = [
        make_pod("A", containers=[container("a", {"memory": "100Mi"})]),
        make_pod("B", containers=[container("b")]),
        make_pod("C", containers=[container("c", {"memory": "200Mi"})]),
        make_pod("D", containers=[container("d")]),
    ]
    stats = {
        "A": make_pod_stats("A", working_set=150 * MI),
        "B": make_pod_stats("B", working_set=50 * MI),
        "C": make_pod_stats("C", working_set=180 * MI),
    }
    rank_memory_pressure(profile("1.32"))(pods, stats)
    assert _names(pods) == ["D", "A", "B", "C"]


def test_lower_priority_first_among_pods_that_exceed_requests() -> None:
    pods = [make_pod("high", priority=1000), make_pod("low", priority=-5)]
    stats = {"high": make_pod_stats("high", working_set=500 * MI), "low": make_pod_stats("low", working_set=MI)}
    rank_memory_pressure()(pods, stats)
    assert _names(pods) == ["low", "high"]


def test_pid_ranking_is_priority_then_process_count_with_stat_less_pods_first() -> None:
    pods = [make_pod("few"), make_pod("many"), make_pod("none"), make_pod("vip", priority=10)]
    stats = {
        "few": make_pod_stats("few", process_count=3),
        "many": make_pod_stats("many", process_count=300),
        "vip": make_pod_stats("vip", process_count=10_000),
    }
    rank_pid_pressure(pods, stats)
    assert _names(pods) == ["none", "many", "few", "vip"]


def test_local_volumes_are_host_path_default_empty_dir_config_map_and_git_repo() -> None:
    volumes = [
        {"name": "h", "hostPath": {"path": "/x"}},
        {"name": "e", "emptyDir": {}},
        {"name": "m", "emptyDir": {"medium": "Memory"}},
        {"name": "cm", "configMap": {"name": "c"}},
        {"name": "g", "gitRepo": {"repository": "r"}},
        {"name": "s", "secret": {"secretName": "s"}},
        {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}},
    ]
    assert local_volume_names(make_pod("p", volumes=volumes)) == ["h", "e", "cm", "g"]


def test_inode_ranking_subtracts_the_ephemeral_storage_request() -> None:
    """Spec §5.4: the `disk` comparator subtracts the ephemeral-storage request even for inodes."""
    pods = [
        make_pod("big-request", containers=[container("c", {"ephemeral-storage": "1000"})]),
        make_pod("no-request", containers=[container("c")]),
    ]
    stats = {
        "big-request": make_pod_stats("big-request", containers=[container_stats_json("c", rootfs_inodes=500)]),
        "no-request": make_pod_stats("no-request", containers=[container_stats_json("c", rootfs_inodes=100)]),
    }
    rank_disk_pressure_func(ALL_FS, "inodes")(pods, stats)
    assert _names(pods) == ["no-request", "big-request"]


def test_dedicated_imagefs_ranks_nodefs_by_logs_and_volumes_and_imagefs_by_rootfs() -> None:
    table = signal_fs_stats(True, False)
    assert set(table["nodefs.available"]) == {FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE}
    assert set(table["imagefs.available"]) == {FsStatsType.ROOT, FsStatsType.IMAGES}
    assert table["containerfs.available"] == table["imagefs.available"]
    split = signal_fs_stats(True, True)
    assert set(split["nodefs.available"]) == {FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE, FsStatsType.ROOT}
    assert split["imagefs.available"] == (FsStatsType.IMAGES,)
    assert set(signal_fs_stats(False, False)["imagefs.inodesFree"]) == set(ALL_FS)


# --- property: rankings are permutations sorted by the comparator chain ----------------------------------------
@dataclass(frozen=True)
class Gen:
    name: str
    priority: int
    requests: tuple[int | None, ...]  # memory == ephemeral-storage request of each container, bytes
    init_request: int | None
    has_stats: bool
    working_set: int | None
    rootfs: tuple[int | None, ...]
    logs: tuple[int | None, ...]
    inodes: tuple[int | None, ...]
    volume: int | None
    processes: int | None


_SMALL = st.one_of(st.none(), st.integers(0, 400))


@st.composite
def _gen(draw: st.DrawFn, name: str) -> Gen:
    n = draw(st.integers(1, 3))
    sized = st.lists(_SMALL, min_size=n, max_size=n).map(tuple)
    return Gen(
        name=name,
        priority=draw(st.sampled_from([0, 0, 10, -10])),
        requests=draw(sized),
        init_request=draw(_SMALL),
        has_stats=draw(st.booleans()) or draw(st.booleans()),
        working_set=draw(_SMALL),
        rootfs=draw(sized),
        logs=draw(sized),
        inodes=draw(sized),
        volume=draw(_SMALL),
        processes=draw(_SMALL),
    )


_PODS = st.integers(0, 16).flatmap(lambda n: st.tuples(*[_gen(f"p{i}") for i in range(n)]))


def _materialise(gens: tuple[Gen, ...]) -> tuple[list[Pod], dict[str, PodStats]]:
    pods: list[Pod] = []
    stats: dict[str, PodStats] = {}
    for g in gens:

        def req(value: int | None) -> dict[str, str] | None:
            return None if value is None else {"memory": str(value), "ephemeral-storage": str(value)}

        pods.append(
            make_pod(
                g.name,
                priority=g.priority,
                containers=[container(f"c{i}", req(r)) for i, r in enumerate(g.requests)],
                init_containers=[container("init", req(g.init_request))] if g.init_request is not None else [],
                volumes=[{"name": "scratch", "emptyDir": {}}],
            )
        )
        if g.has_stats:
            containers = [
                container_stats_json(f"c{i}", rootfs=g.rootfs[i], logs=g.logs[i], rootfs_inodes=g.inodes[i])
                for i in range(len(g.requests))
            ]
            volumes: list[dict[str, Any]] = [] if g.volume is None else [{"name": "scratch", "usedBytes": g.volume}]
            stats[g.name] = make_pod_stats(
                g.name, containers=containers, working_set=g.working_set, volumes=volumes, process_count=g.processes
            )
    return pods, stats


def _request(g: Gen) -> int:
    total = sum(r for r in g.requests if r is not None)
    return max(total, g.init_request) if g.init_request is not None else total


def _memory_key(g: Gen) -> tuple[int, ...]:
    if not g.has_stats:
        return (0, 0, g.priority, 0)
    usage = g.working_set or 0
    return (1, 0 if usage > _request(g) else 1, g.priority, -(usage - _request(g)))


def _disk_key(resource: str) -> Callable[[Gen], tuple[int, ...]]:
    def key(g: Gen) -> tuple[int, ...]:
        if not g.has_stats:
            return (0, 0, g.priority, 0)
        if resource == "inodes":
            usage = sum(i or 0 for i in g.inodes)
            request = 0
        else:
            usage = sum(r or 0 for r in g.rootfs) + sum(x or 0 for x in g.logs) + (g.volume or 0)
            request = _request(g)
        return (1, 0 if usage > request else 1, g.priority, -(usage - _request(g)))

    return key


def _pid_key(g: Gen) -> tuple[int, ...]:
    return (g.priority, 1 if g.has_stats else 0, -(g.processes or 0) if g.has_stats else 0)


RANKINGS: dict[str, tuple[Callable[[list[Pod], dict[str, PodStats]], None], Callable[[Gen], tuple[int, ...]]]] = {
    "memory": (rank_memory_pressure(profile("1.32")), _memory_key),
    "ephemeral-storage": (
        rank_disk_pressure_func(ALL_FS, "ephemeral-storage", profile("1.32")),
        _disk_key("ephemeral-storage"),
    ),
    "inodes": (rank_disk_pressure_func(ALL_FS, "inodes", profile("1.32")), _disk_key("inodes")),
    "pids": (rank_pid_pressure, _pid_key),
}


@settings(max_examples=60, deadline=None)
@given(gens=_PODS, which=st.sampled_from(sorted(RANKINGS)))
def test_rankings_return_a_permutation_ordered_by_the_comparator_chain(gens: tuple[Gen, ...], which: str) -> None:
    rank, key = RANKINGS[which]
    pods, stats = _materialise(gens)
    by_name = {g.name: g for g in gens}
    rank(pods, stats)
    assert sorted(_names(pods)) == sorted(by_name)
    keys = [key(by_name[p.name]) for p in pods]
    assert keys == sorted(keys)
    if len(gens) <= 12:  # insertion sort: ties keep the input order
        assert _names(pods) == [g.name for g in sorted(gens, key=key)]
