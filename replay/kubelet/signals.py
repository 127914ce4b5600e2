"""Signal observations: what the eviction manager measures from one Summary API response.

Mirrors pkg/kubelet/eviction/helpers.go: makeSignalObservations, cachedStatsFunc, getSysContainer
and helpers_linux.go: makeMemoryAvailableSignalObservation. Counts are uint64 in the Summary API
and the kubelet converts them with a plain ``int64(...)`` cast, so values ≥ 2^63 (e.g. an
``inodesFree`` of 2^64-1 reported by filesystems without inode accounting) wrap negative here too.
"""

from __future__ import annotations

from collections.abc import Mapping

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
)
from replay.kubelet.api import FsStats, PodStats, Summary
from replay.kubelet.thresholds import SignalObservation
from replay.kubelet.versions import VersionProfile

SYSTEM_CONTAINER_PODS = "pods"
SYSTEM_CONTAINER_WINDOWS_COMMIT = "windows-global-commit-memory"
_U64 = 1 << 64


def go_int64(value: int) -> int:
    """Go's ``int64(u)`` on a uint64: two's-complement wrap for values ≥ 2^63."""
    value %= _U64
    return value - _U64 if value >= 1 << 63 else value


def go_uint64(value: int) -> int:
    """Go uint64 arithmetic wraps modulo 2^64."""
    return value % _U64


StatsLookup = Mapping[str, PodStats]
"""helpers.go: cachedStatsFunc — pod UID → its PodStats (a later duplicate UID wins)."""


def pod_stats_by_uid(summary: Summary) -> dict[str, PodStats]:
    """helpers.go: cachedStatsFunc."""
    return {stats.pod_ref.uid: stats for stats in summary.pods}


def _fs_observations(
    fs: FsStats | None, available_signal: str, inodes_signal: str, out: dict[str, SignalObservation]
) -> None:
    if fs is None:
        return
    if fs.available_bytes is not None and fs.capacity_bytes is not None:
        out[available_signal] = SignalObservation(
            Quantity.new(go_int64(fs.available_bytes), Format.BINARY_SI),
            Quantity.new(go_int64(fs.capacity_bytes), Format.BINARY_SI),
            fs.time,
        )
    if fs.inodes_free is not None and fs.inodes is not None:
        out[inodes_signal] = SignalObservation(
            Quantity.new(go_int64(fs.inodes_free), Format.DECIMAL_SI),
            Quantity.new(go_int64(fs.inodes), Format.DECIMAL_SI),
            fs.time,
        )


def signal_platform(platform: str, profile: VersionProfile) -> str:
    """The platform whose ``makeMemoryAvailableSignalObservation`` a kubelet of ``profile`` on ``platform`` runs:
    Windows has its own only from 1.31 (PR #122922, VersionProfile.windows_memory_pressure); a Windows kubelet
    before ran the common one (helpers.go), as Linux does."""
    if platform == "windows" and not profile.windows_memory_pressure:
        return "linux"
    return platform


def _memory_available(summary: Summary, platform: str) -> SignalObservation | None:
    """helpers_linux.go / helpers_windows.go: makeMemoryAvailableSignalObservation.

    Linux: node memory available, capacity = available + working set. Windows: the
    ``windows-global-commit-memory`` system container, capacity = available + usage (commit charge).
    """
    if platform == "windows":
        commit = next((c for c in summary.node.system_containers if c.name == SYSTEM_CONTAINER_WINDOWS_COMMIT), None)
        mem = commit.memory if commit is not None else None
        if mem is None or mem.available_bytes is None or mem.usage_bytes is None:
            return None
        return SignalObservation(
            Quantity.new(go_int64(mem.available_bytes), Format.BINARY_SI),
            Quantity.new(go_int64(go_uint64(mem.available_bytes + mem.usage_bytes)), Format.BINARY_SI),
            mem.time,
        )
    memory = summary.node.memory
    if memory is None or memory.available_bytes is None or memory.working_set_bytes is None:
        return None
    return SignalObservation(
        Quantity.new(go_int64(memory.available_bytes), Format.BINARY_SI),
        Quantity.new(go_int64(go_uint64(memory.available_bytes + memory.working_set_bytes)), Format.BINARY_SI),
        memory.time,
    )


def make_signal_observations(
    summary: Summary, platform: str = "linux"
) -> tuple[dict[str, SignalObservation], dict[str, PodStats]]:
    """helpers.go: makeSignalObservations.

    Returns the observations by signal and the pod-stats lookup by UID. A signal whose inputs
    are missing from the summary has no observation, and thresholds on it are skipped.
    """
    observations: dict[str, SignalObservation] = {}
    node = summary.node
    memory_available = _memory_available(summary, platform)
    if memory_available is not None:
        observations[MEMORY_AVAILABLE] = memory_available
    pods_container = next((c for c in node.system_containers if c.name == SYSTEM_CONTAINER_PODS), None)
    if pods_container is not None:
        mem = pods_container.memory
        if mem is not None and mem.available_bytes is not None and mem.working_set_bytes is not None:
            observations[ALLOCATABLE_MEMORY_AVAILABLE] = SignalObservation(
                Quantity.new(go_int64(mem.available_bytes), Format.BINARY_SI),
                Quantity.new(go_int64(go_uint64(mem.available_bytes + mem.working_set_bytes)), Format.BINARY_SI),
                mem.time,
            )
    _fs_observations(node.fs, NODEFS_AVAILABLE, NODEFS_INODES_FREE, observations)
    if node.runtime is not None:
        _fs_observations(node.runtime.image_fs, IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE, observations)
        _fs_observations(node.runtime.container_fs, CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE, observations)
    rlimit = node.rlimit
    if rlimit is not None and rlimit.curproc is not None and rlimit.maxpid is not None:
        available = go_int64(go_int64(rlimit.maxpid) - go_int64(rlimit.curproc))
        observations[PID_AVAILABLE] = SignalObservation(
            Quantity.new(available, Format.DECIMAL_SI),
            Quantity.new(go_int64(rlimit.maxpid), Format.DECIMAL_SI),
            rlimit.time,
        )
    return observations, pod_stats_by_uid(summary)
