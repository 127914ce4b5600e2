"""One node's eviction manager: the kubelet's ``synchronize`` loop, one observation pass at a time.

Mirrors pkg/kubelet/eviction/eviction_manager.go (synchronize, reclaimNodeLevelResources,
localStorageEviction and its three checks, evictPod, Admit) with the version switches of
:mod:`versions`. The manager is a plain object: a replay feeds it a summary, the active pods and
the clock, and gets back a :class:`SyncResult` saying what the kubelet would have done and why.
Node-level reclaim (image and container GC) cannot be replayed from stats, so it is an
injectable :class:`NodeReclaimer` that reports what it assumed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableSequence, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from kube.quantity import Format, Quantity
from kube.signals import (
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_PRESSURE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
)
from replay.kubelet import pods as podutil
from replay.kubelet.api import Pod, PodStats, Summary
from replay.kubelet.conditions import (
    has_node_condition,
    node_conditions,
    node_conditions_last_observed_at,
    node_conditions_observed_since,
)
from replay.kubelet.config import EvictionConfig
from replay.kubelet.map_order import map_order_alternatives
from replay.kubelet.message import (
    REASON_EVICTED,
    container_ephemeral_storage_message,
    empty_dir_message,
    eviction_message,
    node_condition_message,
    pod_ephemeral_storage_message,
)
from replay.kubelet.ranking import RankFunc, build_signal_to_rank_func, disk_usage
from replay.kubelet.signals import go_int64, make_signal_observations, signal_platform
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
    update_containerfs_thresholds,
)
from replay.kubelet.versions import VersionProfile

NO_ACTIVE_PODS = "eviction thresholds have been met, but no pods are active to evict"
"""eviction_manager.go synchronize's log line when a threshold is actionable and no pod is active."""
CONTAINER_GC = "container_gc"
IMAGE_GC = "image_gc"


@dataclass(frozen=True)
class FsTopology:
    """What the manager learns on its first pass (DiskInfoProvider)."""

    dedicated_image_fs: bool = False
    split_container_image_fs: bool = False


NodeReclaimer = Callable[[str, Sequence[str], Summary], Summary | None]
"""``(signal, reclaim functions run, summary before) -> summary after reclaim`` (None: stats failed)."""


def no_gc_effect(signal: str, funcs: Sequence[str], summary: Summary) -> Summary:
    """The default assumption: image/container GC frees nothing the summary would show."""
    return summary


def build_signal_to_node_reclaim_funcs(
    with_image_fs: bool, split_fs: bool, containerfs: bool = True
) -> dict[str, tuple[str, ...]]:
    """helpers.go: buildSignalToNodeReclaimFuncs. ``containerfs`` False: no ``containerfs.*`` entries, as in
    1.29–1.31 (VersionProfile.containerfs_node_reclaim, PR #127874)."""
    both = (CONTAINER_GC, IMAGE_GC)
    if with_image_fs and not split_fs:
        table = {NODEFS_AVAILABLE: (), NODEFS_INODES_FREE: (), IMAGEFS_AVAILABLE: both, IMAGEFS_INODES_FREE: both}
        table[CONTAINERFS_AVAILABLE] = table[IMAGEFS_AVAILABLE]
        table[CONTAINERFS_INODES_FREE] = table[IMAGEFS_INODES_FREE]
    elif with_image_fs and split_fs:
        table = {
            IMAGEFS_AVAILABLE: (IMAGE_GC,),
            IMAGEFS_INODES_FREE: (IMAGE_GC,),
            NODEFS_AVAILABLE: (CONTAINER_GC,),
            NODEFS_INODES_FREE: (CONTAINER_GC,),
        }
        table[CONTAINERFS_AVAILABLE] = table[NODEFS_AVAILABLE]
        table[CONTAINERFS_INODES_FREE] = table[NODEFS_INODES_FREE]
    else:
        table = {
            s: both
            for s in (
                NODEFS_AVAILABLE,
                NODEFS_INODES_FREE,
                IMAGEFS_AVAILABLE,
                IMAGEFS_INODES_FREE,
                CONTAINERFS_AVAILABLE,
                CONTAINERFS_INODES_FREE,
            )
        }
    if not containerfs:
        for signal in (CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE):
            table.pop(signal, None)
    return table


@dataclass(frozen=True)
class PodCondition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True)
class Eviction:
    """One call of the pod killer (evictPod after the critical-pod check)."""

    pod: Pod
    message: str
    annotations: Mapping[str, str]
    grace_period_override: int
    cause: str
    """Threshold signal, or ``emptydirfs.limit`` / ``ephemeralpodfs.limit`` / ``ephemeralcontainerfs.limit``."""
    condition: PodCondition | None = None

    @property
    def pod_status(self) -> dict[str, object]:
        status: dict[str, object] = {"phase": "Failed", "reason": REASON_EVICTED, "message": self.message}
        if self.condition is not None:
            c = self.condition
            status["conditions"] = [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}]
        return status


@dataclass(frozen=True)
class SyncResult:
    """What one ``synchronize`` pass saw and did."""

    now: datetime
    observations: Mapping[str, SignalObservation] = field(default_factory=dict)
    thresholds_met: tuple[Threshold, ...] = ()
    """Met ignoring grace periods (with the min-reclaim hysteresis of previously met ones)."""
    thresholds_actionable: tuple[Threshold, ...] = ()
    """Grace period satisfied and stats updated since the last pass, sorted by eviction priority."""
    node_conditions: tuple[str, ...] = ()
    threshold_to_reclaim: Threshold | None = None
    resource_to_reclaim: str | None = None
    node_event: str | None = None
    node_reclaim: tuple[str, ...] = ()
    ranking: tuple[Pod, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    critical_skipped: tuple[str, ...] = ()
    reason: str = ""
    error: str | None = None
    stats: Mapping[str, PodStats] = field(default_factory=dict)
    map_order_alternatives: tuple[Threshold, ...] = ()
    """Thresholds the real kubelet could have acted on instead of ``threshold_to_reclaim`` (Go map order), with
    another visible outcome: the decision is one of several (replay.kubelet.map_order)."""


@dataclass(frozen=True)
class AdmitResult:
    admit: bool
    reason: str = ""
    message: str = ""


class EvictionManager:
    """eviction_manager.go: managerImpl, driven pass by pass instead of by a goroutine."""

    def __init__(
        self,
        config: EvictionConfig,
        profile: VersionProfile,
        topology: FsTopology = FsTopology(),
        reclaimer: NodeReclaimer = no_gc_effect,
        platform: str = "linux",
    ) -> None:
        self.platform = signal_platform(platform, profile)
        """Whose signal builders this kubelet runs (a Windows kubelet before 1.31 ran the common ones)."""
        self.config = config
        self.profile = profile
        self.topology = topology
        self.reclaimer = reclaimer
        self.thresholds: list[Threshold] = list(config.thresholds)
        self.node_conditions: list[str] = []
        self.node_conditions_last_observed_at: dict[str, datetime] = {}
        self.thresholds_first_observed_at: dict[Threshold, datetime] = {}
        self.thresholds_met: list[Threshold] = []
        self.last_observations: dict[str, SignalObservation] = {}
        self.dedicated_image_fs: bool | None = None
        self.signal_to_rank_func: dict[str, RankFunc] = {}
        self.signal_to_node_reclaim_funcs: dict[str, tuple[str, ...]] = {}
        self.containerfs_errors: list[str] = []

    # --- conditions and admission --------------------------------------------------------------
    def is_under_pressure(self, condition: str) -> bool:
        return has_node_condition(self.node_conditions, condition)

    def admit(self, pod: Pod) -> AdmitResult:
        """eviction_manager.go: Admit — pod admission under node pressure."""
        if not self.node_conditions:
            return AdmitResult(True)
        if podutil.is_critical_pod(pod):
            return AdmitResult(True)
        if self.node_conditions == [MEMORY_PRESSURE]:
            if pod.qos_class != "BestEffort":  # v1qos.GetPodQOS prefers status.qosClass
                return AdmitResult(True)
            if podutil.tolerates_memory_pressure_taint(pod):
                return AdmitResult(True)
        return AdmitResult(False, REASON_EVICTED, node_condition_message(self.node_conditions))

    # --- the loop ------------------------------------------------------------------------------
    def _first_pass(self) -> str | None:
        """The ``dedicatedImageFs == nil`` block of synchronize."""
        has_image_fs = self.topology.dedicated_image_fs
        split = self.topology.split_container_image_fs
        self.dedicated_image_fs = has_image_fs
        if not self.profile.containerfs_signals:
            split = False
        elif split and not self.profile.gate("KubeletSeparateDiskGC"):
            return "KubeletSeparateDiskGC is turned off but we still have a split filesystem"
        if self.profile.containerfs_signals:
            self.thresholds, self.containerfs_errors = update_containerfs_thresholds(
                self.thresholds, has_image_fs, split
            )
        self.signal_to_rank_func = build_signal_to_rank_func(has_image_fs, split, self.profile)
        self.signal_to_node_reclaim_funcs = build_signal_to_node_reclaim_funcs(
            has_image_fs, split, self.profile.containerfs_node_reclaim
        )
        return None

    def synchronize(self, summary: Summary, active_pods: MutableSequence[Pod], now: datetime) -> SyncResult:
        """eviction_manager.go: synchronize. ``active_pods`` is ranked in place, as upstream."""
        thresholds = list(self.thresholds)
        if not thresholds and not self.config.local_storage_capacity_isolation:
            return SyncResult(now, reason="no eviction thresholds configured")
        if self.dedicated_image_fs is None:
            error = self._first_pass()
            if error is not None:
                return SyncResult(now, error=error, reason=error)

        observations, stats = make_signal_observations(summary, self.platform)
        met = thresholds_met(thresholds, observations, False)
        if self.thresholds_met:
            met = merge_thresholds(met, thresholds_met(self.thresholds_met, observations, True))
        first_observed = thresholds_first_observed_at(met, self.thresholds_first_observed_at, now)
        conditions = node_conditions(met)
        last_observed = node_conditions_last_observed_at(conditions, self.node_conditions_last_observed_at, now)
        conditions = node_conditions_observed_since(last_observed, self.config.pressure_transition_period, now)
        graced = thresholds_met_grace_period(first_observed, now)

        self.node_conditions = conditions
        self.thresholds_first_observed_at = first_observed
        self.node_conditions_last_observed_at = last_observed
        self.thresholds_met = graced
        actionable = thresholds_updated_stats(graced, observations, self.last_observations)
        self.last_observations = observations

        base = SyncResult(now, observations, tuple(met), tuple(actionable), tuple(conditions), stats=stats)

        if self.config.local_storage_capacity_isolation:
            evictions, skipped = self._local_storage_eviction(active_pods, stats)
            if evictions:
                return _with(
                    base,
                    evictions=tuple(evictions),
                    critical_skipped=tuple(skipped),
                    reason="local storage limit exceeded",
                )

        if not actionable:
            reason = "no thresholds met" if not met else "thresholds met but not actionable yet"
            if met and not graced:
                reason = "thresholds met, waiting for their grace period"
            elif graced and not actionable:
                reason = "thresholds met, but their stats have not been updated since the last pass"
            return _with(base, reason=reason)

        sort_by_eviction_priority(actionable)
        reclaimable = get_reclaimable_threshold(actionable)
        if reclaimable is None:
            return _with(base, thresholds_actionable=tuple(actionable), reason="no reclaimable threshold")
        threshold, resource = reclaimable
        base = _with(
            base,
            thresholds_actionable=tuple(actionable),
            threshold_to_reclaim=threshold,
            resource_to_reclaim=resource,
            node_event=f"Attempting to reclaim {resource}",
            map_order_alternatives=map_order_alternatives(
                actionable,
                threshold,
                observations,
                self.signal_to_node_reclaim_funcs,
                self.topology.dedicated_image_fs,
                self.topology.split_container_image_fs and self.profile.containerfs_signals,
            ),
        )

        funcs = self.signal_to_node_reclaim_funcs.get(threshold.signal, ())
        if funcs:
            base = _with(base, node_reclaim=funcs)
            after = self.reclaimer(threshold.signal, funcs, summary)
            if after is not None:
                after_obs, _ = make_signal_observations(after, self.platform)
                if not thresholds_met(self.thresholds, after_obs, True):
                    return _with(base, reason=f"node-level reclaim ({', '.join(funcs)}) relieved the pressure")

        rank = self.signal_to_rank_func.get(threshold.signal)
        if rank is None:
            return _with(base, reason=f"no ranking function for signal {threshold.signal}")
        if not active_pods:
            return _with(base, reason=NO_ACTIVE_PODS)
        rank(active_pods, stats)
        ranking = tuple(active_pods)
        skipped = []
        for pod in active_pods:
            grace = self.profile.immediate_eviction_grace_seconds
            if not threshold.is_hard:
                grace = self.config.max_pod_grace_period_seconds
                if pod.termination_grace_period_seconds is not None and self.profile.soft_grace_honours_pod_termination:
                    grace = min(self.config.max_pod_grace_period_seconds, pod.termination_grace_period_seconds)
            message, annotations = eviction_message(
                resource, pod, stats.get(pod.uid), actionable, observations, self.profile
            )
            if podutil.is_critical_pod(pod):
                skipped.append(pod.name)
                continue
            condition = None
            if self.profile.disruption_target_condition:
                condition = PodCondition("DisruptionTarget", "True", "TerminationByKubelet", message)
            eviction = Eviction(pod, message, annotations, grace, threshold.signal, condition)
            return _with(
                base,
                ranking=ranking,
                evictions=(eviction,),
                critical_skipped=tuple(skipped),
                reason=f"evicted {pod.namespace}/{pod.name}" if pod.namespace else f"evicted {pod.name}",
            )
        return _with(
            base, ranking=ranking, critical_skipped=tuple(skipped), reason="unable to evict any pods from the node"
        )

    # --- local storage (eviction_manager.go: localStorageEviction) ------------------------------
    def _local_storage_eviction(
        self, pods: Sequence[Pod], stats: Mapping[str, PodStats]
    ) -> tuple[list[Eviction], list[str]]:
        evicted: list[Eviction] = []
        skipped: list[str] = []
        grace = self.profile.immediate_eviction_grace_seconds
        for pod in pods:
            pod_stats = stats.get(pod.uid)
            if pod_stats is None:
                continue
            for check in (self._empty_dir_limit, self._pod_ephemeral_storage_limit, self._container_ephemeral_limit):
                hit = check(pod_stats, pod)
                if hit is None:
                    continue
                message, cause = hit
                if podutil.is_critical_pod(pod):
                    skipped.append(pod.name)
                    continue  # evictPod refused: the kubelet goes on to the next check
                evicted.append(Eviction(pod, message, {}, grace, cause))
                break
        return evicted, skipped

    def _empty_dir_limit(self, pod_stats: PodStats, pod: Pod) -> tuple[str, str] | None:
        """eviction_manager.go: emptyDirLimitEviction (a volume without usedBytes counts as no data)."""
        used: dict[str, Quantity] = {}
        for volume_stats in pod_stats.volumes:
            if volume_stats.fs.used_bytes is not None:
                used[volume_stats.name] = Quantity.new(go_int64(volume_stats.fs.used_bytes), Format.BINARY_SI)
        for volume in pod.volumes:
            if volume.source != "emptyDir":
                continue
            size = volume.empty_dir_size_limit
            usage = used.get(volume.name)
            if usage is not None and size is not None and size.sign() == 1 and usage.cmp(size) > 0:
                return empty_dir_message(volume.name, size), "emptydirfs.limit"
        return None

    def _pod_ephemeral_storage_limit(self, pod_stats: PodStats, pod: Pod) -> tuple[str, str] | None:
        """eviction_manager.go: podEphemeralStorageLimitEviction (sidecars summed into the limit from 1.28)."""
        limits = podutil.pod_limits(pod, sidecars_known=self.profile.restartable_init_containers)
        limit = limits.get("ephemeral-storage")
        if limit is None:
            return None
        usage = Quantity.zero()
        eph = pod_stats.ephemeral_storage
        if eph is not None and eph.used_bytes is not None:
            usage = Quantity.new(go_int64(eph.used_bytes), Format.BINARY_SI)
        if usage.cmp(limit) > 0:
            return pod_ephemeral_storage_message(limit), "ephemeralpodfs.limit"
        return None

    def _container_ephemeral_limit(self, pod_stats: PodStats, pod: Pod) -> tuple[str, str] | None:
        """eviction_manager.go: containerEphemeralStorageLimitEviction (+ sidecars, PR #138462)."""
        limits: dict[str, Quantity] = {}
        containers = list(pod.containers)
        if self.profile.sidecar_ephemeral_storage_limits:
            containers += [c for c in pod.init_containers if c.restartable_init]
        for container in containers:
            limit = container.limits.get("ephemeral-storage")
            if limit is not None and limit.int_value() != 0:
                limits[container.name] = limit
        for container_stats in pod_stats.containers:
            used = disk_usage(container_stats.logs)
            if not self.dedicated_image_fs:
                used = used.add(disk_usage(container_stats.rootfs))
            limit = limits.get(container_stats.name)
            if limit is not None and limit.cmp(used) < 0:
                return container_ephemeral_storage_message(container_stats.name, limit), "ephemeralcontainerfs.limit"
        return None


def _with(result: SyncResult, **changes: object) -> SyncResult:
    from dataclasses import replace

    return replace(result, **changes)  # type: ignore[arg-type]
