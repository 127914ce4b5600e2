"""manager.py: the eviction manager's synchronize loop and admission, scenario by scenario (spec §4, §6.4)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from helpers import GI, MI, container, container_stats_json, make_pod, make_summary, pod_stats_json

from replay.kubelet.api import Pod, Summary
from replay.kubelet.config import EvictionConfig, build_config
from replay.kubelet.manager import EvictionManager, SyncResult
from replay.kubelet.versions import profile

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _config(**kwargs: Any) -> EvictionConfig:
    kwargs.setdefault("eviction_hard", {})
    return build_config(profile("1.32"), source="test", **kwargs)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pods() -> list[Pod]:
    """`hog` exceeds its request (ranked first), `guaranteed` stays below it."""
    return [
        make_pod(
            "guaranteed",
            termination_grace_period_seconds=10,
            containers=[container("g", {"memory": "1Gi", "cpu": "1"}, {"memory": "1Gi", "cpu": "1"})],
        ),
        make_pod("hog", containers=[container("h")], termination_grace_period_seconds=10),
    ]


def _memory_summary(available: int, at: datetime | None, pods: Sequence[str] = ("guaranteed", "hog")) -> Summary:
    usage = {"guaranteed": 100 * MI, "hog": 900 * MI, "static": 2 * GI, "mirror": 2 * GI, "critical": 2 * GI}
    stats = [
        pod_stats_json(
            name,
            working_set=usage.get(name, 10 * MI),
            containers=[container_stats_json(name[0], working_set=usage.get(name, 10 * MI))],
        )
        for name in pods
    ]
    return make_summary(
        memory_available=available, memory_working_set=4 * GI, time=_stamp(at) if at is not None else None, pods=stats
    )


def _sync(
    manager: EvictionManager, available: int, now: datetime, pods: list[Pod], stats_time: datetime | None = None
) -> SyncResult:
    names = [p.name for p in pods]
    return manager.synchronize(_memory_summary(available, stats_time or now, names), pods, now)


# --- hard thresholds ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("version", "grace"), [("1.30", 0), ("1.31", 1), ("1.32", 1)])
def test_hard_threshold_evicts_the_top_ranked_pod_with_the_versions_immediate_grace(version: str, grace: int) -> None:
    manager = EvictionManager(_config(eviction_hard={"memory.available": "1Gi"}), profile(version))
    result = _sync(manager, 500 * MI, T0, _pods())
    assert [e.pod.name for e in result.evictions] == ["hog"]
    (eviction,) = result.evictions
    assert eviction.grace_period_override == grace
    assert eviction.message == (
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. "
        "Container h was using 900Mi, request is 0, has larger consumption of memory. "
    )
    assert eviction.annotations == {
        "offending_containers": "h",
        "offending_containers_usage": "900Mi",
        "starved_resource": "memory",
    }
    assert eviction.condition is not None and eviction.condition.type == "DisruptionTarget"
    assert eviction.pod_status["reason"] == "Evicted"
    assert result.node_event == "Attempting to reclaim memory"
    assert result.node_conditions == ("MemoryPressure",)
    assert [p.name for p in result.ranking] == ["hog", "guaranteed"]


def test_no_eviction_when_no_threshold_is_met() -> None:
    manager = EvictionManager(_config(eviction_hard={"memory.available": "1Gi"}), profile("1.32"))
    result = _sync(manager, 2 * GI, T0, _pods())
    assert result.evictions == () and result.node_conditions == ()
    assert manager.admit(make_pod("new")).admit


# --- soft thresholds ----------------------------------------------------------------------------------------
def _soft_manager(version: str, max_grace: int = 30) -> EvictionManager:
    cfg = build_config(
        profile(version),
        source="test",
        eviction_hard={},
        eviction_soft={"memory.available": "2Gi"},
        eviction_soft_grace_period={"memory.available": "1m"},
        max_pod_grace_period_seconds=max_grace,
    )
    return EvictionManager(cfg, profile(version))


def test_soft_threshold_raises_the_condition_at_once_but_waits_for_its_grace_period() -> None:
    manager = _soft_manager("1.32")
    pods = _pods()
    first = _sync(manager, GI, T0, pods)
    assert first.node_conditions == ("MemoryPressure",) and first.evictions == ()
    assert "grace period" in first.reason
    assert _sync(manager, GI, T0 + timedelta(seconds=59), pods).evictions == ()
    last = _sync(manager, GI, T0 + timedelta(seconds=60), pods)
    assert [e.pod.name for e in last.evictions] == ["hog"]


@pytest.mark.parametrize(("version", "max_grace", "grace"), [("1.32", 30, 10), ("1.32", 5, 5), ("1.31", 30, 30)])
def test_soft_eviction_grace_is_min_of_max_pod_grace_and_termination_grace_from_1_32(
    version: str, max_grace: int, grace: int
) -> None:
    manager = _soft_manager(version, max_grace)
    pods = _pods()
    _sync(manager, GI, T0, pods)
    result = _sync(manager, GI, T0 + timedelta(minutes=1), pods)
    assert [e.grace_period_override for e in result.evictions] == [grace]


def test_soft_eviction_of_a_pod_without_termination_grace_uses_max_pod_grace() -> None:
    manager = _soft_manager("1.32", 30)
    pods = [make_pod("hog", containers=[container("h")])]
    _sync(manager, GI, T0, pods)
    result = _sync(manager, GI, T0 + timedelta(minutes=1), pods)
    assert [e.grace_period_override for e in result.evictions] == [30]


def test_soft_threshold_that_stops_being_met_restarts_its_grace_period() -> None:
    manager = _soft_manager("1.32")
    pods = _pods()
    _sync(manager, GI, T0, pods)
    _sync(manager, 3 * GI, T0 + timedelta(seconds=30), pods)
    assert _sync(manager, GI, T0 + timedelta(seconds=70), pods).evictions == ()
    assert _sync(manager, GI, T0 + timedelta(seconds=130), pods).evictions != ()


# --- pressure condition hysteresis ------------------------------------------------------------------------
def test_pressure_condition_stays_for_the_transition_period() -> None:
    manager = EvictionManager(_config(eviction_hard={"memory.available": "1Gi"}), profile("1.32"))
    pods = _pods()
    _sync(manager, 500 * MI, T0, pods)
    relieved = _sync(manager, 2 * GI, T0 + timedelta(minutes=1), pods)
    assert relieved.evictions == () and relieved.node_conditions == ("MemoryPressure",)
    assert _sync(manager, 2 * GI, T0 + timedelta(minutes=4, seconds=59), pods).node_conditions == ("MemoryPressure",)
    assert _sync(manager, 2 * GI, T0 + timedelta(minutes=5), pods).node_conditions == ()


def test_min_reclaim_keeps_an_acted_on_threshold_met_until_reclaimed() -> None:
    manager = EvictionManager(
        _config(eviction_hard={"memory.available": "1Gi"}, eviction_minimum_reclaim={"memory.available": "500Mi"}),
        profile("1.32"),
    )
    pods = _pods()
    assert _sync(manager, 500 * MI, T0, pods).evictions != ()
    still = _sync(manager, 1200 * MI, T0 + timedelta(seconds=10), pods)
    assert still.evictions != ()
    assert _sync(manager, 1600 * MI, T0 + timedelta(seconds=20), pods).evictions == ()


# --- critical pods --------------------------------------------------------------------------------------
def test_critical_static_and_mirror_pods_are_ranked_but_never_evicted() -> None:
    pods = [
        make_pod("static", containers=[container("s")], annotations={"kubernetes.io/config.source": "file"}),
        make_pod("mirror", containers=[container("m")], annotations={"kubernetes.io/config.mirror": "abc"}),
        make_pod("critical", containers=[container("c")], priority=2_000_000_000),
        *_pods(),
    ]
    manager = EvictionManager(_config(eviction_hard={"memory.available": "1Gi"}), profile("1.32"))
    result = _sync(manager, 500 * MI, T0, pods)
    assert [e.pod.name for e in result.evictions] == ["hog"]
    assert set(result.critical_skipped) == {"static", "mirror"}
    assert [p.name for p in result.ranking][:3] == ["static", "mirror", "hog"]


def test_api_sourced_pod_is_not_static() -> None:
    pods = [make_pod("api", containers=[container("a")], annotations={"kubernetes.io/config.source": "api"})]
    manager = EvictionManager(_config(eviction_hard={"memory.available": "1Gi"}), profile("1.32"))
    assert [e.pod.name for e in _sync(manager, 500 * MI, T0, pods).evictions] == ["api"]


def test_only_critical_pods_means_no_eviction() -> None:
    pods = [make_pod("static", containers=[container("s")], annotations={"kubernetes.io/config.source": "file"})]
    manager = EvictionManager(_config(eviction_hard={"memory.available": "1Gi"}), profile("1.32"))
    result = _sync(manager, 500 * MI, T0, pods)
    assert result.evictions == () and result.reason == "unable to evict any pods from the node"


# --- stats timestamps (spec §4.2 step 9) -----------------------------------------------------------------------
def test_no_eviction_when_stats_timestamps_did_not_advance() -> None:
    manager = EvictionManager(_config(eviction_hard={"memory.available": "1Gi"}), profile("1.32"))
    pods = _pods()
    assert _sync(manager, 500 * MI, T0, pods, stats_time=T0).evictions != ()
    stale = _sync(manager, 500 * MI, T0 + timedelta(seconds=10), pods, stats_time=T0)
    assert stale.evictions == ()
    assert stale.node_conditions == ("MemoryPressure",)
    assert "not been updated" in stale.reason
    fresh = _sync(manager, 500 * MI, T0 + timedelta(seconds=20), pods, stats_time=T0 + timedelta(seconds=20))
    assert fresh.evictions != ()


# --- admission (spec §6.4) --------------------------------------------------------------------------------
def _under(conditions_available: int, disk: bool = False) -> EvictionManager:
    hard = {"memory.available": "1Gi"} | ({"nodefs.available": "10%"} if disk else {})
    manager = EvictionManager(_config(eviction_hard=hard), profile("1.32"))
    summary = make_summary(
        memory_available=conditions_available,
        memory_working_set=GI,
        time=_stamp(T0),
        nodefs=(GI, 100 * GI) if disk else None,
    )
    manager.synchronize(summary, [], T0)
    return manager


def test_best_effort_pod_is_rejected_under_memory_pressure() -> None:
    result = _under(500 * MI).admit(make_pod("be"))
    assert (result.admit, result.reason, result.message) == (
        False,
        "Evicted",
        "The node had condition: [MemoryPressure]. ",
    )


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists"},
        {"operator": "Exists"},
    ],
)
def test_best_effort_pod_tolerating_memory_pressure_is_admitted(toleration: dict[str, str]) -> None:
    assert _under(500 * MI).admit(make_pod("be", tolerations=[toleration])).admit


def test_non_matching_toleration_does_not_admit() -> None:
    pod = make_pod("be", tolerations=[{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists"}])
    assert not _under(500 * MI).admit(pod).admit


def test_burstable_and_critical_pods_are_admitted_under_memory_pressure() -> None:
    manager = _under(500 * MI)
    assert manager.admit(make_pod("b", containers=[container("c", {"memory": "1Mi"})])).admit
    assert manager.admit(make_pod("crit", priority=2_000_000_000)).admit


def test_disk_pressure_rejects_every_non_critical_pod() -> None:
    manager = _under(500 * MI, disk=True)
    result = manager.admit(make_pod("b", containers=[container("c", {"memory": "1Mi"})]))
    assert not result.admit
    assert result.message == "The node had condition: [MemoryPressure DiskPressure]. "


# --- local storage (spec §4.7) ------------------------------------------------------------------------------
def _storage_manager(version: str = "1.32") -> EvictionManager:
    return EvictionManager(_config(eviction_hard={}), profile(version))


def _storage_summary(*pods: dict[str, Any]) -> Any:
    return make_summary(memory_available=4 * GI, memory_working_set=GI, time=_stamp(T0), pods=list(pods))


@pytest.mark.parametrize(("version", "grace"), [("1.30", 0), ("1.32", 1)])
def test_empty_dir_over_its_size_limit_is_evicted_with_a_quoted_message(version: str, grace: int) -> None:
    pod = make_pod("cache-pod", volumes=[{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}])
    summary = _storage_summary(pod_stats_json("cache-pod", volumes=[{"name": "cache", "usedBytes": 2 * GI}]))
    result = _storage_manager(version).synchronize(summary, [pod], T0)
    (eviction,) = result.evictions
    assert eviction.message == 'Usage of EmptyDir volume "cache" exceeds the limit "1Gi". '
    assert eviction.grace_period_override == grace
    assert eviction.annotations == {} and eviction.condition is None
    assert eviction.cause == "emptydirfs.limit"


def test_empty_dir_at_its_size_limit_is_kept() -> None:
    pod = make_pod("cache-pod", volumes=[{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}])
    summary = _storage_summary(pod_stats_json("cache-pod", volumes=[{"name": "cache", "usedBytes": GI}]))
    assert _storage_manager().synchronize(summary, [pod], T0).evictions == ()


def test_local_storage_can_evict_several_pods_in_one_pass() -> None:
    pods = [
        make_pod("a", containers=[container("a", limits={"ephemeral-storage": "1Gi"})]),
        make_pod("b", containers=[container("b", limits={"ephemeral-storage": "2Gi"})]),
        make_pod("ok", containers=[container("ok", limits={"ephemeral-storage": "2Gi"})]),
    ]
    summary = _storage_summary(
        pod_stats_json("a", ephemeral_storage=2 * GI),
        pod_stats_json("b", containers=[container_stats_json("b", rootfs=GI, logs=GI + 1)]),
        pod_stats_json("ok", ephemeral_storage=GI),
    )
    result = _storage_manager().synchronize(summary, pods, T0)
    assert [(e.pod.name, e.cause) for e in result.evictions] == [
        ("a", "ephemeralpodfs.limit"),
        ("b", "ephemeralcontainerfs.limit"),
    ]
    assert result.evictions[0].message == (
        "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. "
    )
    assert result.evictions[1].message == 'Container b exceeded its local ephemeral storage limit "2Gi". '


def test_local_storage_is_off_without_capacity_isolation() -> None:
    cfg = build_config(profile("1.32"), source="t", eviction_hard={}, local_storage_capacity_isolation=False)
    pod = make_pod("cache-pod", volumes=[{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}])
    summary = _storage_summary(pod_stats_json("cache-pod", volumes=[{"name": "cache", "usedBytes": 2 * GI}]))
    assert EvictionManager(cfg, profile("1.32")).synchronize(summary, [pod], T0).evictions == ()
