"""A delegated pass builds only the pods' stats it can read.

At a pass the fast path delegates (replay.fast.driver: NodeReplay._delegate) the reference manager ranks
pods for one signal at most (eviction_manager.go: synchronize → getReclaimableThreshold →
signalToRankFunc), and its eviction message reads the same resource (helpers.go: evictionMessage): memory
signals read pod and container working sets, ``pid.available`` process counts, disk signals the
containers' rootfs and logs and the volumes. Away from a local-storage tick (columns.StorageUsage: a
superset of the ticks where localStorageEviction can evict) nothing else of the pods' stats is read, so
the pass runs on a summary whose pods carry only that part (columns.SummaryAt.built), without the
local-storage checks. The signal is the one synchronize would pick, computed by the same helpers from the
node's stats and the manager's state before the pass, without changing it; a pass whose result shows it
needed more (another signal, a local-storage eviction) is run again on the whole summary from the saved
state.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime

from kube.signals import ALLOCATABLE_MEMORY_AVAILABLE, MEMORY_AVAILABLE, PID_AVAILABLE
from replay.fast.columns import FILESYSTEMS, MEMORY, PROCESSES, WHOLE
from replay.kubelet.api import Pod, Summary
from replay.kubelet.manager import EvictionManager, SyncResult, no_gc_effect
from replay.kubelet.signals import make_signal_observations
from replay.kubelet.thresholds import (
    SignalObservation,
    Threshold,
    get_reclaimable_threshold,
    merge_thresholds,
    sort_by_eviction_priority,
    thresholds_first_observed_at,
    thresholds_met,
    thresholds_met_grace_period,
    thresholds_updated_stats,
)

PARTS_OF_SIGNAL = {MEMORY_AVAILABLE: MEMORY, ALLOCATABLE_MEMORY_AVAILABLE: MEMORY, PID_AVAILABLE: PROCESSES}
"""What a pass ranking for a signal reads of each pod's stats; every other (disk) signal: FILESYSTEMS."""


def parts_of(signal: str | None) -> int:
    if signal is None:
        return 0
    return PARTS_OF_SIGNAL.get(signal, FILESYSTEMS)


def reclaim_signal(manager: EvictionManager, node: Summary, now: datetime) -> str | None:
    """The signal of the threshold the manager's next pass reclaims, None when it has none: synchronize's
    steps up to getReclaimableThreshold (eviction_manager.go) on the node's stats, the manager unchanged."""
    observations, _ = make_signal_observations(node, manager.platform)
    met = thresholds_met(list(manager.thresholds), observations, False)
    if manager.thresholds_met:
        met = merge_thresholds(met, thresholds_met(manager.thresholds_met, observations, True))
    first_observed = thresholds_first_observed_at(met, manager.thresholds_first_observed_at, now)
    graced = thresholds_met_grace_period(first_observed, now)
    actionable = thresholds_updated_stats(graced, observations, manager.last_observations)
    if not actionable:
        return None
    sort_by_eviction_priority(actionable)
    found = get_reclaimable_threshold(actionable)
    return None if found is None else found[0].signal


def pass_parts(manager: EvictionManager, node: Summary, now: datetime) -> int:
    """The parts of the pods' stats a pass away from a local-storage tick reads (WHOLE when the manager
    could read more: a node-level reclaimer that sees the summary, a first pass still to come)."""
    if manager.reclaimer is not no_gc_effect or manager.dedicated_image_fs is None:
        return WHOLE
    return parts_of(reclaim_signal(manager, node, now))


def synchronize(manager: EvictionManager, summary: Summary, pods: list[Pod], now: datetime) -> SyncResult:
    """manager.synchronize at a pass away from a local-storage tick, without localStorageEviction: it cannot
    evict there (the fast path does not even delegate such a pass when no threshold is actionable), and
    its checks would read filesystems a lean summary does not carry."""
    config = manager.config
    if not config.local_storage_capacity_isolation or not manager.thresholds:
        return manager.synchronize(summary, pods, now)
    manager.config = replace(config, local_storage_capacity_isolation=False)
    try:
        return manager.synchronize(summary, pods, now)
    finally:
        manager.config = config


def covers(parts: int, result: SyncResult) -> bool:
    """The pass read nothing but ``parts``: no local-storage eviction, and a threshold to reclaim (if any)
    whose ranking reads only those parts."""
    threshold = result.threshold_to_reclaim
    if threshold is None:
        return not result.evictions  # evicted for a local-storage limit: that reads the filesystems
    return parts_of(threshold.signal) & ~parts == 0


@dataclass(frozen=True)
class ManagerState:
    """What synchronize changes on the manager (it assigns, never mutates): to run a pass again."""

    thresholds_met: list[Threshold]
    thresholds_first_observed_at: dict[Threshold, datetime]
    node_conditions: list[str]
    node_conditions_last_observed_at: dict[str, datetime]
    last_observations: dict[str, SignalObservation]

    @classmethod
    def of(cls, manager: EvictionManager) -> ManagerState:
        return cls(
            list(manager.thresholds_met),
            dict(manager.thresholds_first_observed_at),
            list(manager.node_conditions),
            dict(manager.node_conditions_last_observed_at),
            dict(manager.last_observations),
        )

    def restore(self, manager: EvictionManager) -> None:
        manager.thresholds_met = list(self.thresholds_met)
        manager.thresholds_first_observed_at = dict(self.thresholds_first_observed_at)
        manager.node_conditions = list(self.node_conditions)
        manager.node_conditions_last_observed_at = dict(self.node_conditions_last_observed_at)
        manager.last_observations = dict(self.last_observations)


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """A delegated pass allocates thousands of short-lived objects without reference cycles (stats, keys,
    quantities, the eviction's record): freed by their reference counts, while the cyclic collector's passes
    they trigger would walk every long-lived object of the process (about a sixth of a busy what-if)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
