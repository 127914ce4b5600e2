"""The rank functions sort by one key per pod; they must order exactly as helpers.go's comparator chains
run through Go's sort.Sort (orderedBy), ties and pdqsort's unstable steps included."""

from __future__ import annotations

from typing import Any

from helpers import container, container_stats_json, make_pod, make_pod_stats
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.kubelet.api import Pod, PodStats
from replay.kubelet.gosort import go_sort, go_sort_by_key
from replay.kubelet.ranking import (
    FsStatsType,
    RankFunc,
    exceed_disk_requests,
    exceed_memory_requests,
    memory,
    ordered_by,
    priority,
    process,
    rank_disk_pressure_func,
    rank_memory_pressure,
    rank_pid_pressure,
)
from replay.kubelet.ranking import disk as disk_cmp
from replay.kubelet.versions import profile

ALL_FS = (FsStatsType.IMAGES, FsStatsType.ROOT, FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE)
PROFILES = [profile("1.32"), profile("1.34"), profile("1.34", {"PodLevelResources": True})]
# few distinct values, so most comparisons tie; fractional and int64-wrapping values too
REQUESTS = st.sampled_from([None, "100", "1500m", "0.5Ki", "1Ki", "2Ki"])
USAGE = st.sampled_from([None, 0, 100, 512, 1024, 2048, 2**63, 2**64 - 1])
COUNT = st.sampled_from([None, 0, 1, 5, 2**63 - 1])


@st.composite
def pods_and_stats(draw: Any) -> tuple[list[Pod], dict[str, PodStats]]:
    pods: list[Pod] = []
    stats: dict[str, PodStats] = {}
    wrap = draw(st.booleans())
    for i in range(draw(st.integers(0, 80))):
        name = f"p{i}"
        request = draw(REQUESTS)
        resources = None if request is None else {"memory": request, "ephemeral-storage": request}
        pods.append(
            make_pod(
                name,
                priority=draw(st.sampled_from([0, 0, 10])),
                containers=[container("c", resources)],
                volumes=[{"name": "v", "emptyDir": {}}],
            )
        )
        if draw(st.integers(0, 4)):
            count = draw(COUNT)
            if wrap and count is not None and draw(st.booleans()):
                count += 2**63  # process counts whose differences wrap: the chain itself decides
            stats[name] = make_pod_stats(
                name,
                working_set=draw(USAGE),
                process_count=count,
                containers=[
                    container_stats_json(
                        "c", working_set=draw(USAGE), rootfs=draw(USAGE), logs=draw(USAGE), rootfs_inodes=draw(USAGE)
                    )
                ],
                volumes=[{"name": "v", "usedBytes": draw(USAGE), "inodesUsed": draw(USAGE)}],
            )
    return pods, stats


def _chains(stats: dict[str, PodStats], version: int) -> dict[str, tuple[RankFunc, list[Any]]]:
    prof = PROFILES[version]
    return {
        "memory": (rank_memory_pressure(prof), [exceed_memory_requests(stats, prof), priority, memory(stats, prof)]),
        "pid": (rank_pid_pressure, [priority, process(stats)]),
        **{
            f"disk-{resource}": (
                rank_disk_pressure_func(ALL_FS, resource, prof),
                [
                    exceed_disk_requests(stats, ALL_FS, resource, prof),
                    priority,
                    disk_cmp(stats, ALL_FS, resource, prof),
                ],
            )
            for resource in ("ephemeral-storage", "inodes")
        },
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    data=pods_and_stats(),
    which=st.sampled_from(["memory", "pid", "disk-ephemeral-storage", "disk-inodes"]),
    version=st.integers(0, len(PROFILES) - 1),
)
def test_a_rank_function_orders_exactly_as_its_comparator_chain(
    data: tuple[list[Pod], dict[str, PodStats]], which: str, version: int
) -> None:
    pods, stats = data
    rank, cmps = _chains(stats, version)[which]
    expected = list(pods)
    ordered_by(expected, *cmps)
    got = list(pods)
    rank(got, stats)
    assert [p.name for p in got] == [p.name for p in expected]


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), max_size=120))
def test_a_keyed_sort_is_go_sort_with_the_keys_compared(keys: list[tuple[int, int]]) -> None:
    items = list(enumerate(keys))
    expected = list(items)
    go_sort(expected, lambda a, b: a[1] < b[1])
    got = list(items)
    go_sort_by_key(got, lambda item: item[1])
    assert got == expected
