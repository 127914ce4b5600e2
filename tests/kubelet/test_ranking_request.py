"""GetResourceRequestQuantity per kubelet version: the 1.32-era rule up to 1.33, component-helpers
PodRequests from 1.34 (kubernetes/kubernetes PR #132277; the same form at v1.34.0, v1.35.0 and master).
Vectors worked by hand from pkg/api/v1/resource/helpers.go and component-helpers resource/helpers.go."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import MI, container, container_stats_json, make_pod, make_pod_stats

from replay.kubelet.ranking import get_resource_request_quantity, rank_memory_pressure
from replay.kubelet.versions import profile

GI = 1024 * MI
OLD = ("1.32", "1.33")
NEW = ("1.34", "1.35", "master")
SIDECAR = container("otel-agent", {"memory": "64Mi"}, restart_policy="Always")


def _vectors() -> list[tuple[str, dict[str, Any], str, dict[str, int]]]:
    """(name, pod, resource, expected bytes per version); ``1.34-gate-off`` is 1.34 with PodLevelResources off."""
    api = container("api", {"memory": "256Mi", "ephemeral-storage": "1Gi"})
    return [
        (
            "sidecar summed from 1.34",
            {"containers": [api], "init_containers": [SIDECAR]},
            "memory",
            {**dict.fromkeys(OLD, 256 * MI), **dict.fromkeys(NEW, 320 * MI), "1.34-gate-off": 320 * MI},
        ),
        (
            "init peak alone",
            {
                "containers": [container("a", {"memory": "100Mi"})],
                "init_containers": [container("migrate", {"memory": "500Mi"})],
            },
            "memory",
            dict.fromkeys((*OLD, *NEW, "1.34-gate-off"), 500 * MI),
        ),
        (
            "init peak after a sidecar adds the sidecar",
            {
                "containers": [container("a", {"memory": "100Mi"})],
                "init_containers": [SIDECAR, container("migrate", {"memory": "500Mi"})],
            },
            "memory",
            {**dict.fromkeys(OLD, 500 * MI), **dict.fromkeys(NEW, 564 * MI), "1.34-gate-off": 564 * MI},
        ),
        (
            "init peak before a sidecar does not",
            {
                "containers": [container("a", {"memory": "100Mi"})],
                "init_containers": [container("migrate", {"memory": "500Mi"}), SIDECAR],
            },
            "memory",
            dict.fromkeys((*OLD, *NEW, "1.34-gate-off"), 500 * MI),
        ),
        (
            "overhead on a non-zero request",
            {"containers": [api], "init_containers": [SIDECAR], "overhead": {"memory": "10Mi"}},
            "memory",
            {**dict.fromkeys(OLD, 266 * MI), **dict.fromkeys(NEW, 330 * MI), "1.34-gate-off": 330 * MI},
        ),
        (
            "no overhead on a zero request",
            {"containers": [container("a")], "overhead": {"memory": "10Mi"}},
            "memory",
            dict.fromkeys((*OLD, *NEW, "1.34-gate-off"), 0),
        ),
        (
            "pod-level request replaces the containers",
            {"containers": [api], "init_containers": [SIDECAR], "pod_resources": {"requests": {"memory": "1Gi"}}},
            "memory",
            {**dict.fromkeys(OLD, 256 * MI), **dict.fromkeys(NEW, GI), "1.34-gate-off": GI},
        ),
        (
            "pod-level request plus overhead",
            {"containers": [api], "pod_resources": {"requests": {"memory": "1Gi"}}, "overhead": {"memory": "10Mi"}},
            "memory",
            {**dict.fromkeys(OLD, 266 * MI), **dict.fromkeys(NEW, GI + 10 * MI), "1.34-gate-off": GI + 10 * MI},
        ),
        (
            "pod-level set skips the containers' ephemeral-storage",
            {"containers": [api], "pod_resources": {"requests": {"memory": "1Gi"}}},
            "ephemeral-storage",
            {**dict.fromkeys(OLD, GI), **dict.fromkeys(NEW, 0), "1.34-gate-off": GI},
        ),
        (
            "pod-level limits alone skip the containers' requests",
            {"containers": [api], "pod_resources": {"limits": {"memory": "1Gi"}}},
            "memory",
            {**dict.fromkeys(OLD, 256 * MI), **dict.fromkeys(NEW, 0), "1.34-gate-off": 256 * MI},
        ),
    ]


def _profile(version: str) -> Any:
    if version == "1.34-gate-off":
        return profile("1.34", {"PodLevelResources": False})
    return profile(version)


@pytest.mark.parametrize(("name", "pod", "resource", "want"), _vectors(), ids=[v[0] for v in _vectors()])
def test_ranking_request_vectors_per_version(
    name: str, pod: dict[str, Any], resource: str, want: dict[str, int]
) -> None:
    built = make_pod("p", **pod)
    got = {version: get_resource_request_quantity(built, resource, _profile(version)).int_value() for version in want}
    assert got == want


def test_no_profile_keeps_the_1_32_rule() -> None:
    pod = make_pod("p", containers=[container("api", {"memory": "256Mi"})], init_containers=[SIDECAR])
    assert get_resource_request_quantity(pod, "memory").int_value() == 256 * MI


def test_the_1_35_request_decides_who_exceeds_and_so_who_is_evicted() -> None:
    """api 256Mi + sidecar 64Mi using 300Mi: over its request for a 1.32 kubelet, under it for 1.35."""
    sidecar_pod = make_pod(
        "with-sidecar", containers=[container("api", {"memory": "256Mi"})], init_containers=[SIDECAR]
    )
    plain = make_pod("plain", containers=[container("app", {"memory": "100Mi"})])
    stats = {
        "with-sidecar": make_pod_stats(
            "with-sidecar", containers=[container_stats_json("api", working_set=300 * MI)], working_set=300 * MI
        ),
        "plain": make_pod_stats(
            "plain", containers=[container_stats_json("app", working_set=110 * MI)], working_set=110 * MI
        ),
    }
    for version, first in (("1.32", "with-sidecar"), ("1.33", "with-sidecar"), ("1.35", "plain"), ("master", "plain")):
        pods = [plain, sidecar_pod]
        rank_memory_pressure(profile(version))(pods, stats)
        assert pods[0].name == first, version
