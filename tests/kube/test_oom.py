"""kube/oom.py: the kubelet's oom_score_adj by QoS (pkg/kubelet/qos/policy.go) and the kernel's oom_badness
(mm/oom_kill.c), on plain Pod manifests."""

from __future__ import annotations

from typing import Any

from kube.oom import container_oom_score_adjust, exhausted_below, oom_badness, select_victim

GI, MI = 1 << 30, 1 << 20


def _pod(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": containers, **spec}}


def test_oom_score_adj_follows_the_qos_class_and_the_request_share_of_capacity() -> None:
    cap = 8 * GI
    be = {"name": "c"}
    assert container_oom_score_adjust(_pod([be]), be, cap) == 1000
    g = {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
    assert container_oom_score_adjust(_pod([g]), g, cap) == -997
    b = {"name": "c", "resources": {"requests": {"memory": "1Gi"}}}
    assert container_oom_score_adjust(_pod([b]), b, cap) == 1000 - 125
    tiny = {"name": "c", "resources": {"requests": {"memory": "1Ki"}}}
    assert container_oom_score_adjust(_pod([tiny]), tiny, cap) == 999  # never BestEffort's 1000
    huge = {"name": "c", "resources": {"requests": {"memory": "8Gi"}, "limits": {"memory": "9Gi"}}}
    assert container_oom_score_adjust(_pod([huge]), huge, cap) == 3  # never below Guaranteed's 1000 - 997
    critical = _pod([be], priorityClassName="system-node-critical", priority=2000001000)
    assert container_oom_score_adjust(critical, be, cap) == -997
    # a limit alone defaults the request (API defaulting): Burstable at the limit's share
    lim = {"name": "c", "resources": {"limits": {"memory": "2Gi"}}}
    assert container_oom_score_adjust(_pod([lim]), lim, cap) == 750


def test_a_sidecar_is_scored_at_least_as_killable_as_the_regular_containers_plus_one_from_1_32() -> None:
    """policy.go (PR #128029, first in v1.32.0-alpha.3): min(own request, regular containers' smallest) →
    adjustment, +1 when that minimum is at most the sidecar's own request; a missing request counts as the
    scheduler's 200Mi default."""
    cap = 8 * GI
    small = {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"memory": "64Mi"}}}
    big = {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"memory": "4Gi"}}}
    bare = {"name": "s", "restartPolicy": "Always"}
    app = {"name": "a", "resources": {"requests": {"memory": "2Gi"}}}
    pod = _pod([app], initContainers=[small])
    assert container_oom_score_adjust(pod, small, cap, minor=31) == 1000 - (1000 * 64 * MI) // cap  # 993
    assert container_oom_score_adjust(pod, small, cap, minor=32) == 1000 - (1000 * 64 * MI) // cap + 1
    pod = _pod([app], initContainers=[big])
    assert container_oom_score_adjust(pod, big, cap, minor=31) == 500
    assert container_oom_score_adjust(pod, big, cap, minor=32) == 750 + 1  # the app's 750, then first to go
    pod = _pod([app], initContainers=[bare])  # Burstable through the app: the sidecar counts as 200Mi, no +1
    assert container_oom_score_adjust(pod, bare, cap, minor=33) == 1000 - (1000 * 200 * MI) // cap


def test_oom_badness_is_rss_pages_plus_adj_per_mille_of_total_pages_and_ties_go_to_the_last_scanned() -> None:
    total = 8 * GI // 4096
    assert oom_badness(GI, 0, total) == GI // 4096
    assert oom_badness(GI, 500, total) == GI // 4096 + 500 * (total // 1000)
    assert oom_badness(GI, -1000, total) is None
    assert select_victim([("a", GI, 0), ("b", GI, 0)], total) == "b"
    assert select_victim([("big", 4 * GI, -997), ("small", 100 * MI, 1000)], total) == "small"
    assert select_victim([("immune", GI, -1000)], total) is None


def test_exhausted_is_64mi_or_one_percent_of_capacity() -> None:
    assert exhausted_below(4 * GI) == 64 * MI
    assert exhausted_below(16 * GI) == int(16 * GI * 0.01)
    assert exhausted_below(None) == 64 * MI
