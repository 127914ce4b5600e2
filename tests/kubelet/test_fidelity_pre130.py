"""Issue 29: sidecars before 1.28, containerfs node-level reclaim before 1.32, Go map order — the repository's own
conformance vectors (tests/kubelet/data/conformance/fidelity_before_1_30.json) and the version switches behind them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kube.quantity import Quantity
from replay.conformance.runner import run_cases
from replay.conformance.vectors import load_cases
from replay.kubelet.api import Pod, parse_pod
from replay.kubelet.manager import CONTAINER_GC, IMAGE_GC, build_signal_to_node_reclaim_funcs
from replay.kubelet.pods import pod_limits, pod_requests
from replay.kubelet.versions import profile

VECTORS = Path(__file__).parent / "data" / "conformance"


def test_every_vector_passes() -> None:
    results = run_cases(load_cases([VECTORS]))
    assert len(results) >= 16
    failed = [(r.case.id, r.failures) for r in results if r.status != "passed"]
    assert failed == []


def test_vectors_cover_each_item_per_version() -> None:
    cases = load_cases([VECTORS])
    by_item: dict[str, set[str]] = {}
    for case in cases:
        for item in ("sidecar-pod-storage-limit", "containerfs-inodes-split", "map-order", "sidecar-memory-request"):
            if item in case.id:
                by_item.setdefault(item, set()).add(case.kubelet_version)
    assert by_item["sidecar-pod-storage-limit"] == {"1.26", "1.27", "1.28"}
    assert by_item["containerfs-inodes-split"] == {"1.29", "1.30", "1.31", "1.32"}
    assert by_item["map-order"] == {"1.31", "1.32"}
    assert {"1.26", "1.27"} <= by_item["sidecar-memory-request"]


@pytest.mark.parametrize(("version", "known"), [("1.26", False), ("1.27", False), ("1.28", True), ("master", True)])
def test_restartable_init_containers_switch(version: str, known: bool) -> None:
    assert profile(version).restartable_init_containers is known


@pytest.mark.parametrize(
    ("version", "reclaim"), [("1.29", False), ("1.30", False), ("1.31", False), ("1.32", True), ("master", True)]
)
def test_containerfs_node_reclaim_switch(version: str, reclaim: bool) -> None:
    assert profile(version).containerfs_node_reclaim is reclaim


def _pod() -> Pod:
    return parse_pod(
        {
            "metadata": {"name": "p", "uid": "p"},
            "spec": {
                "containers": [{"name": "app", "resources": {"limits": {"ephemeral-storage": "1Gi"}}}],
                "initContainers": [
                    {"name": "init", "resources": {"requests": {"memory": "300Mi"}}},
                    {
                        "name": "proxy",
                        "restartPolicy": "Always",
                        "resources": {"limits": {"ephemeral-storage": "1Gi"}, "requests": {"memory": "100Mi"}},
                    },
                ],
            },
        },
        source="test",
    )


def test_pod_limits_and_requests_before_and_after_sidecars() -> None:
    pod = _pod()
    assert pod_limits(pod)["ephemeral-storage"].cmp(Quantity.parse("2Gi")) == 0
    assert pod_limits(pod, sidecars_known=False)["ephemeral-storage"].cmp(Quantity.parse("1Gi")) == 0
    # 1.28+: the sidecar is added to the total (100Mi) and the plain init container runs before it (300Mi peak)
    assert pod_requests(pod)["memory"].cmp(Quantity.parse("300Mi")) == 0
    assert pod_requests(pod, sidecars_known=False)["memory"].cmp(Quantity.parse("300Mi")) == 0


@pytest.mark.parametrize(("image_fs", "split"), [(False, False), (True, False), (True, True)])
def test_reclaim_funcs_without_containerfs_entries(image_fs: bool, split: bool) -> None:
    newer = build_signal_to_node_reclaim_funcs(image_fs, split)
    older = build_signal_to_node_reclaim_funcs(image_fs, split, containerfs=False)
    assert {s for s in newer if s.startswith("containerfs.")} == {"containerfs.available", "containerfs.inodesFree"}
    assert not any(s.startswith("containerfs.") for s in older)
    assert {s: f for s, f in newer.items() if not s.startswith("containerfs.")} == older
    source = "nodefs.inodesFree" if split or not image_fs else "imagefs.inodesFree"
    assert newer["containerfs.inodesFree"] == newer[source]
    assert set(newer["nodefs.available"]) <= {CONTAINER_GC, IMAGE_GC}


def test_oom_score_adj_and_qos_of_a_sidecar_need_no_switch_before_1_32() -> None:
    """kube/oom.py: before 1.32 (and so on 1.26/1.27, where it is a plain init container) a sidecar is scored by
    its own request; kube/qos.py counts it as any init container at every version."""
    from kube.oom import container_oom_score_adjust, pod_qos_class

    sidecar = {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"memory": "100Mi"}}}
    app = {"name": "app", "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}}}
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [app], "initContainers": [sidecar]}}
    capacity = 8 << 30
    own = 1000 - (1000 * (100 << 20)) // capacity
    for minor in (26, 27, 28, 31):
        assert container_oom_score_adjust(pod, sidecar, capacity, minor=minor) == own
    assert container_oom_score_adjust(pod, sidecar, capacity, minor=32) == own + 1  # PR #128029: min(own, app) + 1
    assert pod_qos_class(pod) == "Burstable"
