"""Ranking pods for eviction: the kubelet's comparator chains, request arithmetic and topology.

Mirrors pkg/kubelet/eviction/helpers.go (orderedBy/multiSorter, priority, exceedMemoryRequests,
memory, process, exceedDiskRequests, disk, podDiskUsage, localVolumeNames, rankMemoryPressure,
rankPIDPressure, rankDiskPressureFunc, buildSignalToRankFunc) and pkg/api/v1/resource/helpers.go
(GetResourceRequestQuantity). Sorting uses Go's unstable ``sort.Sort`` (see :mod:`gosort`), so
ties beyond 12 pods land where the kubelet puts them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import TypeVar

from kube.quantity import Format, Quantity
from kube.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_INODES,
    RESOURCE_MEMORY,
)
from replay.kubelet.api import FsStats, MemoryStats, Pod, PodStats
from replay.kubelet.gosort import go_sort, go_sort_by_key
from replay.kubelet.pods import RequestRule, is_critical_pod, request_rule, resource_request_quantity
from replay.kubelet.signals import go_int64, go_uint64
from replay.kubelet.versions import VersionProfile

CmpFunc = Callable[[Pod, Pod], int]
T = TypeVar("T")
StatsLookup = Mapping[str, PodStats]
RankFunc = Callable[[MutableSequence[Pod], StatsLookup], None]


class FsStatsType(StrEnum):
    """helpers.go: fsStatsType — which filesystem usages count towards a disk signal."""

    ROOT = "root"
    LOGS = "logs"
    LOCAL_VOLUME_SOURCE = "localVolumeSource"
    IMAGES = "images"


# --- requests and usage ------------------------------------------------------------------------
_REQUESTS: dict[tuple[int, str, RequestRule], tuple[Pod, Quantity]] = {}
"""get_resource_request_quantity's answers by (pod identity, resource, request rule): each pass ranks
and explains the same pod objects; the entry holds its pod, so the identity is not reused while cached."""
_REQUESTS_MAX = 8192


def get_resource_request_quantity(pod: Pod, resource: str, profile: VersionProfile | None = None) -> Quantity:
    """pkg/api/v1/resource/helpers.go: GetResourceRequestQuantity.

    Up to 1.33 the sum of regular containers, then the max with *every* init container (sidecars
    included), then pod overhead when non-zero; from 1.34 (PR #132277) component-helpers PodRequests:
    sidecars summed, the init peak, pod-level requests (see :func:`pods.resource_request_quantity`).
    Pods and quantities are immutable, so the answer is computed once per pod object.
    """
    rule = request_rule(profile)
    key = (id(pod), resource, rule)
    found = _REQUESTS.get(key)
    if found is not None and found[0] is pod:
        return found[1]
    request = resource_request_quantity(pod, resource, rule)
    if len(_REQUESTS) >= _REQUESTS_MAX:
        _REQUESTS.clear()
    _REQUESTS[key] = (pod, request)
    return request


def memory_usage(stats: MemoryStats | None) -> Quantity:
    """helpers.go: memoryUsage."""
    if stats is None or stats.working_set_bytes is None:
        return Quantity.zero(Format.BINARY_SI)
    return Quantity.new(go_int64(stats.working_set_bytes), Format.BINARY_SI)


def disk_usage(stats: FsStats | None) -> Quantity:
    """helpers.go: diskUsage."""
    if stats is None or stats.used_bytes is None:
        return Quantity.zero(Format.BINARY_SI)
    return Quantity.new(go_int64(stats.used_bytes), Format.BINARY_SI)


def inode_usage(stats: FsStats | None) -> Quantity:
    """helpers.go: inodeUsage."""
    if stats is None or stats.inodes_used is None:
        return Quantity.zero(Format.DECIMAL_SI)
    return Quantity.new(go_int64(stats.inodes_used), Format.DECIMAL_SI)


def process_usage(stats: PodStats) -> int:
    """helpers.go: processUsage (uint64)."""
    if stats.process_stats is None or stats.process_stats.process_count is None:
        return 0
    return go_uint64(stats.process_stats.process_count)


def is_local_ephemeral_volume_source(source: str, empty_dir_medium: str | None) -> bool:
    """pkg/volume/util: IsLocalEphemeralVolume — gitRepo, default-medium emptyDir, configMap."""
    return source in ("gitRepo", "configMap") or (source == "emptyDir" and not empty_dir_medium)


def local_volume_names(pod: Pod) -> list[str]:
    """helpers.go: localVolumeNames — hostPath plus local ephemeral volumes."""
    return [
        v.name
        for v in pod.volumes
        if v.source == "hostPath" or is_local_ephemeral_volume_source(v.source, v.empty_dir_medium)
    ]


def pod_disk_usage(stats: PodStats, pod: Pod, measure: Sequence[FsStatsType]) -> dict[str, Quantity]:
    """helpers.go: podDiskUsage — bytes and inodes over the selected filesystems."""
    disk = Quantity.zero(Format.BINARY_SI)
    inodes = Quantity.zero(Format.DECIMAL_SI)
    for container in stats.containers:
        if FsStatsType.ROOT in measure:
            disk = disk.add(disk_usage(container.rootfs))
            inodes = inodes.add(inode_usage(container.rootfs))
        if FsStatsType.LOGS in measure:
            disk = disk.add(disk_usage(container.logs))
            inodes = inodes.add(inode_usage(container.logs))
    if FsStatsType.LOCAL_VOLUME_SOURCE in measure:
        for name in local_volume_names(pod):
            for volume in stats.volumes:
                if volume.name == name:
                    disk = disk.add(disk_usage(volume.fs))
                    inodes = inodes.add(inode_usage(volume.fs))
                    break
    return {RESOURCE_EPHEMERAL_STORAGE: disk, RESOURCE_INODES: inodes}


# --- comparators (helpers.go) -----------------------------------------------------------------
def cmp_bool(a: bool, b: bool) -> int:
    """helpers.go: cmpBool — true first."""
    if a == b:
        return 0
    return -1 if not b else 1


def pod_priority(pod: Pod) -> int:
    """component-helpers scheduling/corev1: PodPriority — unset means 0."""
    return pod.priority if pod.priority is not None else 0


def priority(p1: Pod, p2: Pod) -> int:
    """helpers.go: priority — lower priority is evicted first."""
    a, b = pod_priority(p1), pod_priority(p2)
    if a == b:
        return 0
    return 1 if a > b else -1


def _stats_first(stats: StatsLookup, compare: CmpFunc) -> CmpFunc:
    """The prologue of every usage comparator: a pod without stats is evicted first."""

    def compare_with_stats(p1: Pod, p2: Pod) -> int:
        found1, found2 = p1.uid in stats, p2.uid in stats
        if not found1 or not found2:
            return cmp_bool(not found1, not found2)
        return compare(p1, p2)

    return compare_with_stats


def _per_pod(key: Callable[[Pod], T]) -> Callable[[Pod], T]:
    """Memoize a pure per-pod key for one sort: the comparators recompute it on every comparison."""
    cache: dict[int, T] = {}

    def get(pod: Pod) -> T:
        found = cache.get(id(pod))
        if found is None:
            found = cache[id(pod)] = key(pod)
        return found

    return get


def exceed_memory_requests(stats: StatsLookup, profile: VersionProfile | None = None) -> CmpFunc:
    """helpers.go: exceedMemoryRequests — pod working set strictly above its memory request first."""

    @_per_pod
    def exceeds(pod: Pod) -> bool:
        request = get_resource_request_quantity(pod, RESOURCE_MEMORY, profile)
        return memory_usage(stats[pod.uid].memory).cmp(request) == 1

    return _stats_first(stats, lambda p1, p2: cmp_bool(exceeds(p1), exceeds(p2)))


def memory(stats: StatsLookup, profile: VersionProfile | None = None) -> CmpFunc:
    """helpers.go: memory — larger (working set − request) first."""

    @_per_pod
    def above_request(pod: Pod) -> Quantity:
        return memory_usage(stats[pod.uid].memory).sub(get_resource_request_quantity(pod, RESOURCE_MEMORY, profile))

    return _stats_first(stats, lambda p1, p2: above_request(p2).cmp(above_request(p1)))


def process(stats: StatsLookup) -> CmpFunc:
    """helpers.go: process — ``int(p2 - p1)`` on uint64 counts, more processes first."""

    return _stats_first(stats, lambda p1, p2: go_int64(process_usage(stats[p2.uid]) - process_usage(stats[p1.uid])))


def exceed_disk_requests(
    stats: StatsLookup, measure: Sequence[FsStatsType], resource: str, profile: VersionProfile | None = None
) -> CmpFunc:
    """helpers.go: exceedDiskRequests."""

    @_per_pod
    def exceeds(pod: Pod) -> bool:
        usage = pod_disk_usage(stats[pod.uid], pod, measure)[resource]
        return usage.cmp(get_resource_request_quantity(pod, resource, profile)) == 1

    return _stats_first(stats, lambda p1, p2: cmp_bool(exceeds(p1), exceeds(p2)))


def disk(
    stats: StatsLookup, measure: Sequence[FsStatsType], resource: str, profile: VersionProfile | None = None
) -> CmpFunc:
    """helpers.go: disk — larger (usage − ephemeral-storage request) first, even for inodes."""

    @_per_pod
    def above_request(pod: Pod) -> Quantity:
        usage = pod_disk_usage(stats[pod.uid], pod, measure)[resource]
        return usage.sub(get_resource_request_quantity(pod, RESOURCE_EPHEMERAL_STORAGE, profile))

    return _stats_first(stats, lambda p1, p2: above_request(p2).cmp(above_request(p1)))


def ordered_by(pods: MutableSequence[Pod], *cmps: CmpFunc) -> None:
    """helpers.go: orderedBy(...).Sort — the first non-zero comparator decides; Go's sort.Sort."""
    head, last = cmps[:-1], cmps[-1]

    def less(p1: Pod, p2: Pod) -> bool:
        for cmp in head:
            result = cmp(p1, p2)
            if result < 0:
                return True
            if result > 0:
                return False
        return last(p1, p2) < 0

    go_sort(pods, less)


# --- rank functions per signal -------------------------------------------------------------------
# Each chain below is a lexicographic order on one key per pod (the tests pin key == chain): comparator
# by comparator, ``_stats_first`` is "no stats first" and a pod without stats ties on the usage
# comparators, cmpBool is "true first", and a Quantity.Cmp is an exact comparison of values. So the rank
# functions sort by those keys, computed once per pod, with the same pdqsort steps (gosort.go_sort_by_key).
_USAGES: dict[
    tuple[int, int, str, tuple[FsStatsType, ...] | None, RequestRule],
    tuple[Pod, PodStats, tuple[Quantity, Quantity, bool, Quantity]],
] = {}
_USAGES_MAX = 8192


def _usage_facts(
    pod: Pod, stats: PodStats, resource: str, measure: tuple[FsStatsType, ...] | None, profile: VersionProfile | None
) -> tuple[Quantity, Quantity, bool, Quantity]:
    """What the usage comparators of a signal read of one pod (memory: ``measure`` None; disk: its
    filesystems): (usage, request, usage above request, usage − the request it is lowered by, which for disk
    is the ephemeral-storage one). Computed once per pod and stats object: ranking, then rank_facts."""
    rule = request_rule(profile)
    key = (id(pod), id(stats), resource, measure, rule)
    found = _USAGES.get(key)
    if found is not None and found[0] is pod and found[1] is stats:
        return found[2]
    if measure is None:
        usage = memory_usage(stats.memory)
        request = subtract = get_resource_request_quantity(pod, resource, profile)
    else:
        usage = pod_disk_usage(stats, pod, measure)[resource]
        request = get_resource_request_quantity(pod, resource, profile)
        subtract = get_resource_request_quantity(pod, RESOURCE_EPHEMERAL_STORAGE, profile)
    facts = (usage, request, usage.cmp(request) == 1, usage.sub(subtract))
    if len(_USAGES) >= _USAGES_MAX:
        _USAGES.clear()
    _USAGES[key] = (pod, stats, facts)
    return facts


def _exact(q: Quantity) -> int | Fraction:
    """The exact value of a quantity, comparable (and negatable) without rounding."""
    numerator, denominator = q.value.as_integer_ratio()
    return numerator if denominator == 1 else Fraction(numerator, denominator)


def rank_memory_pressure(profile: VersionProfile | None = None) -> RankFunc:
    """helpers.go: rankMemoryPressure — orderedBy(exceedMemoryRequests, priority, memory)."""

    def rank(pods: MutableSequence[Pod], stats: StatsLookup) -> None:
        def key(pod: Pod) -> tuple[int, int, int, int | Fraction]:
            if pod.uid not in stats:
                return (0, 0, pod_priority(pod), 0)
            _usage, _request, exceeds, above = _usage_facts(pod, stats[pod.uid], RESOURCE_MEMORY, None, profile)
            return (1, 0 if exceeds else 1, pod_priority(pod), -_exact(above))

        go_sort_by_key(pods, key)

    return rank


def rank_pid_pressure(pods: MutableSequence[Pod], stats: StatsLookup) -> None:
    """helpers.go: rankPIDPressure — orderedBy(priority, process); ``process`` compares ``int64(p2 - p1)``
    of uint64 counts, a key only while no difference wraps (every count below 2^63)."""
    if any(process_usage(stats[p.uid]) >> 63 for p in pods if p.uid in stats):
        ordered_by(pods, priority, process(stats))
        return

    def key(pod: Pod) -> tuple[int, int, int]:
        if pod.uid not in stats:
            return (pod_priority(pod), 0, 0)
        return (pod_priority(pod), 1, -process_usage(stats[pod.uid]))

    go_sort_by_key(pods, key)


def rank_disk_pressure_func(
    measure: Sequence[FsStatsType], resource: str, profile: VersionProfile | None = None
) -> RankFunc:
    """helpers.go: rankDiskPressureFunc — orderedBy(exceedDiskRequests, priority, disk)."""
    fs_set = tuple(measure)

    def rank(pods: MutableSequence[Pod], stats: StatsLookup) -> None:
        def key(pod: Pod) -> tuple[int, int, int, int | Fraction]:
            if pod.uid not in stats:
                return (0, 0, pod_priority(pod), 0)
            _usage, _request, exceeds, above = _usage_facts(pod, stats[pod.uid], resource, fs_set, profile)
            return (1, 0 if exceeds else 1, pod_priority(pod), -_exact(above))

        go_sort_by_key(pods, key)

    return rank


def signal_fs_stats(with_image_fs: bool, split_fs: bool) -> dict[str, tuple[FsStatsType, ...]]:
    """The filesystem usages each disk signal ranks by (the fs sets of buildSignalToRankFunc)."""
    everything = (FsStatsType.IMAGES, FsStatsType.ROOT, FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE)
    if with_image_fs and not split_fs:
        node = (FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE)
        image = (FsStatsType.ROOT, FsStatsType.IMAGES)
        return {
            NODEFS_AVAILABLE: node,
            NODEFS_INODES_FREE: node,
            IMAGEFS_AVAILABLE: image,
            IMAGEFS_INODES_FREE: image,
            CONTAINERFS_AVAILABLE: image,
            CONTAINERFS_INODES_FREE: image,
        }
    if with_image_fs and split_fs:
        node_split = (FsStatsType.LOGS, FsStatsType.LOCAL_VOLUME_SOURCE, FsStatsType.ROOT)
        return {
            NODEFS_AVAILABLE: node_split,
            NODEFS_INODES_FREE: node_split,
            CONTAINERFS_AVAILABLE: node_split,
            CONTAINERFS_INODES_FREE: node_split,
            IMAGEFS_AVAILABLE: (FsStatsType.IMAGES,),
            IMAGEFS_INODES_FREE: (FsStatsType.IMAGES,),
        }
    return {
        s: everything
        for s in (
            NODEFS_AVAILABLE,
            NODEFS_INODES_FREE,
            IMAGEFS_AVAILABLE,
            IMAGEFS_INODES_FREE,
            CONTAINERFS_AVAILABLE,
            CONTAINERFS_INODES_FREE,
        )
    }


_DISK_RESOURCE = {
    NODEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    IMAGEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    CONTAINERFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    NODEFS_INODES_FREE: RESOURCE_INODES,
    IMAGEFS_INODES_FREE: RESOURCE_INODES,
    CONTAINERFS_INODES_FREE: RESOURCE_INODES,
}


def build_signal_to_rank_func(
    with_image_fs: bool, split_fs: bool, profile: VersionProfile | None = None
) -> dict[str, RankFunc]:
    """helpers.go: buildSignalToRankFunc (containerfs entries from 1.29 on)."""
    ranks: dict[str, RankFunc] = {
        MEMORY_AVAILABLE: rank_memory_pressure(profile),
        ALLOCATABLE_MEMORY_AVAILABLE: rank_memory_pressure(profile),
        PID_AVAILABLE: rank_pid_pressure,
    }
    for signal, measure in signal_fs_stats(with_image_fs, split_fs).items():
        if (
            signal in (CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE)
            and profile is not None
            and (not profile.containerfs_signals)
        ):
            continue
        ranks[signal] = rank_disk_pressure_func(measure, _DISK_RESOURCE[signal], profile)
    return ranks


# --- explaining a ranking ----------------------------------------------------------------------
@dataclass(frozen=True)
class RankFacts:
    """Why a pod sits where it does: the values each comparator of its signal looked at."""

    pod: str
    namespace: str
    has_stats: bool
    priority: int
    usage: Quantity | None
    request: Quantity
    exceeds_request: bool | None
    usage_above_request: Quantity | None
    process_count: int | None = None
    critical: bool = False


def rank_facts(
    pods: Sequence[Pod],
    stats: StatsLookup,
    signal: str,
    with_image_fs: bool,
    split_fs: bool,
    profile: VersionProfile | None = None,
) -> list[RankFacts]:
    """The comparator inputs for each pod, in the given order (for ``explain`` tables)."""
    facts: list[RankFacts] = []
    measure = signal_fs_stats(with_image_fs, split_fs).get(signal)
    for pod in pods:
        pod_stats = stats.get(pod.uid)
        if signal == PID_AVAILABLE:
            count = process_usage(pod_stats) if pod_stats is not None else None
            facts.append(
                RankFacts(
                    pod.name,
                    pod.namespace,
                    pod_stats is not None,
                    pod_priority(pod),
                    None,
                    Quantity.zero(),
                    None,
                    None,
                    count,
                    is_critical_pod(pod),
                )
            )
            continue
        resource = RESOURCE_MEMORY if measure is None else _DISK_RESOURCE[signal]
        if pod_stats is None:
            facts.append(
                RankFacts(
                    pod.name,
                    pod.namespace,
                    False,
                    pod_priority(pod),
                    None,
                    get_resource_request_quantity(pod, resource, profile),
                    None,
                    None,
                    critical=is_critical_pod(pod),
                )
            )
            continue
        usage, request, exceeds, above = _usage_facts(pod, pod_stats, resource, measure, profile)
        facts.append(
            RankFacts(
                pod.name,
                pod.namespace,
                True,
                pod_priority(pod),
                usage,
                request,
                exceeds,
                above,
                critical=is_critical_pod(pod),
            )
        )
    return facts
