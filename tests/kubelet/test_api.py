"""Typed views over every real kubelet/API capture in /work/shared/realdata, and bad-input errors."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kube.errors import InputError
from kube.quantity import Quantity
from replay.inputs import load_document
from replay.kubelet.api import (
    Container,
    Node,
    Pod,
    PodResources,
    Summary,
    parse_node,
    parse_nodes,
    parse_pod,
    parse_pod_stats,
    parse_pods,
    parse_summary,
    pod_qos_class,
)

REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"
UINT64_MAX = 18446744073709551615
SUMMARY_HINT = "a Summary API object (kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary)"


def _relative(paths: list[Path]) -> list[str]:
    return sorted(str(path.relative_to(REALDATA)) for path in paths)


def _openshift(kind: str) -> list[Path]:
    """The insights-archive objects carry no `kind`, so tell nodes from pods by their content."""
    found = []
    for path in (REALDATA / "openshift-insights-operator").glob("*.json"):
        doc = load_document(path)
        is_node = "nodeInfo" in doc.get("status", {})
        if (kind == "node") == is_node:
            found.append(path)
    return found


SUMMARY_FILES = _relative([*REALDATA.glob("*/summary"), *REALDATA.glob("*/*stats_summary*.json")])
POD_FILES = _relative([*REALDATA.glob("*/pods"), *REALDATA.glob("*/pods_windows.json"), *_openshift("pod")])
NODE_FILES = _relative([*REALDATA.glob("*/nodes.yaml"), *_openshift("node")])


def summary(name: str) -> Summary:
    return parse_summary(load_document(REALDATA / name), source=name)


def pods(name: str) -> tuple[Pod, ...]:
    return parse_pods(load_document(REALDATA / name), source=name)


def nodes(name: str) -> tuple[Node, ...]:
    return parse_nodes(load_document(REALDATA / name), source=name)


def q(text: str) -> Quantity:
    return Quantity.parse(text)


# ---------------------------------------------------------------------------------------------
# Every real file
# ---------------------------------------------------------------------------------------------


def test_every_data_file_is_covered() -> None:
    """A new capture dropped into realdata must be classified here, not silently skipped."""
    data_files = {
        str(path.relative_to(REALDATA))
        for path in REALDATA.glob("*/*")
        if path.is_file() and path.parent.name != "LICENSES" and path.name != "README.md"
    }
    configz = {"datadog-agent/kubelet_config.json"}
    assert data_files == set(SUMMARY_FILES) | set(POD_FILES) | set(NODE_FILES) | configz
    assert len(SUMMARY_FILES) == 7
    assert len(POD_FILES) == 5
    assert len(NODE_FILES) == 6


# (pods, containers) per summary, from realdata/SOURCES.md's inventory.
SUMMARY_COUNTS = {
    "datadog-integrations-core/stats_summary.json": ("gke-lenaic-pool-1-1c8b424c-wnkn", 10, 17),
    "datadog-integrations-core/stats_summary_windows.json": ("ip-172-29-160-189.ec2.internal", 2, 6),
    "elastic-beats/stats_summary.json": ("gke-beats-default-pool-a5b33e2e-hdww", 1, 1),
    "elastic-beats/stats_summary_multiple_containers.json": ("gke-beats-default-pool-a5b33e2e-hdww", 1, 2),
    "nri-kubernetes-1_16/summary": ("minikube", 15, 15),
    "nri-kubernetes-1_28/summary": ("datagen-1-28", 18, 23),
    "nri-kubernetes-1_35/summary": ("datagen-1-35", 17, 17),
}


@pytest.mark.parametrize("name", SUMMARY_FILES)
def test_summary_loads(name: str) -> None:
    parsed = summary(name)
    node_name, pod_count, container_count = SUMMARY_COUNTS[name]
    assert parsed.node.node_name == node_name
    assert len(parsed.pods) == pod_count
    assert sum(len(pod.containers) for pod in parsed.pods) == container_count
    # Present in every file (SOURCES.md, "What a parser must handle" 1).
    memory = parsed.node.memory
    assert memory is not None and memory.available_bytes is not None and memory.working_set_bytes is not None
    assert parsed.node.fs is not None and parsed.node.fs.capacity_bytes is not None
    assert parsed.node.fs.available_bytes is not None
    for pod in parsed.pods:
        assert pod.pod_ref.uid
        for container in pod.containers:
            assert container.memory is not None and container.memory.working_set_bytes is not None
    assert isinstance(parsed.pods, tuple) and isinstance(parsed.node.system_containers, tuple)


@pytest.mark.parametrize("name", POD_FILES)
def test_pods_load(name: str) -> None:
    doc = load_document(REALDATA / name)
    parsed = pods(name)
    items = doc.get("items", [doc])
    assert len(parsed) == len(items)
    for pod, item in zip(parsed, items, strict=True):
        assert pod.name == item["metadata"]["name"]
        assert pod.uid == item["metadata"]["uid"]
        assert pod.qos_class == item["status"]["qosClass"]
        # The QoS port agrees with what the API server computed for every real pod.
        assert pod_qos_class(pod) == item["status"]["qosClass"], pod.name
        assert all(c.kind == "regular" for c in pod.containers)
        assert all(c.kind == "init" and not c.restartable_init for c in pod.init_containers)


@pytest.mark.parametrize("name", NODE_FILES)
def test_nodes_load(name: str) -> None:
    parsed = nodes(name)
    assert len(parsed) == 1
    node = parsed[0]
    assert node.name
    assert node.kubelet_version.startswith("v1.")
    assert node.os == "linux"
    assert node.architecture in ("amd64", "arm64")
    assert {c.type for c in node.conditions} >= {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}
    for resource in ("cpu", "memory", "ephemeral-storage", "pods"):
        assert resource in node.capacity and resource in node.allocatable
        assert node.allocatable[resource] <= node.capacity[resource]


# ---------------------------------------------------------------------------------------------
# Known quirks of the real data (realdata/SOURCES.md)
# ---------------------------------------------------------------------------------------------


def test_uint64_max_inodes_free_is_exact() -> None:
    parsed = summary("elastic-beats/stats_summary_multiple_containers.json")
    assert parsed.node.fs is not None and parsed.node.fs.inodes_free == UINT64_MAX
    assert parsed.node.runtime is not None and parsed.node.runtime.image_fs is not None
    assert parsed.node.runtime.image_fs.inodes_free == UINT64_MAX
    # The hand-duplicated sidecar carries identical numbers.
    nginx, sidecar = parsed.pods[0].containers
    assert (nginx.name, sidecar.name) == ("nginx", "sidecar")
    assert nginx.memory == sidecar.memory


def test_oldest_shape_2017_gke() -> None:
    parsed = summary("elastic-beats/stats_summary.json")
    assert parsed.node.rlimit is None
    assert [c.name for c in parsed.node.system_containers] == ["kubelet"]
    pod = parsed.pods[0]
    assert pod.memory is None and pod.ephemeral_storage is None and pod.process_stats is None
    rootfs = pod.containers[0].rootfs
    assert rootfs is not None and rootfs.time is None and rootfs.used_bytes is not None


def test_windows_summary() -> None:
    parsed = summary("datadog-integrations-core/stats_summary_windows.json")
    node = parsed.node
    assert node.rlimit is None
    assert node.fs is not None and node.fs.inodes_free is None and node.fs.inodes is None
    assert node.runtime is not None and node.runtime.image_fs is not None
    assert node.runtime.image_fs.inodes_free is None
    assert node.runtime.container_fs is None
    (pods_container,) = node.system_containers
    assert pods_container.name == "pods"
    assert pods_container.memory is not None
    assert pods_container.memory.available_bytes is None
    assert pods_container.memory.working_set_bytes == 401727488
    agent = parsed.pods[0]
    # Zero is not missing.
    assert agent.memory is not None
    assert agent.memory.available_bytes == 0 and agent.memory.usage_bytes == 0
    assert agent.ephemeral_storage is not None
    assert agent.ephemeral_storage.inodes_used == 0 and agent.ephemeral_storage.inodes is None
    process_agent = agent.containers[0].memory
    assert process_agent is not None
    assert process_agent.available_bytes is None and process_agent.working_set_bytes == 65474560
    assert process_agent.time == datetime(2020, 4, 24, 15, 54, 14, tzinfo=UTC)


def test_windows_init_containers_appear_in_summary_containers() -> None:
    stats = {p.pod_ref.uid: p for p in summary("datadog-integrations-core/stats_summary_windows.json").pods}
    (daemonset,) = [p for p in pods("datadog-integrations-core/pods_windows.json") if p.init_containers]
    assert [c.name for c in daemonset.init_containers] == ["init-volume", "init-config"]
    in_summary = {c.name: c for c in stats[daemonset.uid].containers}
    for init in daemonset.init_containers:
        memory = in_summary[init.name].memory
        assert memory is not None and memory.working_set_bytes == 0
    assert {c.name for c in daemonset.containers} < set(in_summary)


def test_windows_pods() -> None:
    iis, agent = pods("datadog-integrations-core/pods_windows.json")
    assert iis.qos_class == "BestEffort"
    assert iis.annotations["kubernetes.io/psp"] == "eks.privileged"
    assert str(iis.containers[0].requests["vpc.amazonaws.com/PrivateIPv4Address"]) == "1"
    assert iis.owner_kinds == ("ReplicaSet",)
    assert [s.name for s in agent.init_container_statuses] == ["init-volume", "init-config"]
    host_paths = [v for v in agent.volumes if v.source == "hostPath"]
    assert host_paths and all(v.empty_dir_medium is None for v in host_paths)


def test_crlf_summary() -> None:
    name = "datadog-integrations-core/stats_summary.json"
    assert b"\r\n" in (REALDATA / name).read_bytes()
    parsed = summary(name)
    assert parsed.node.rlimit is not None and parsed.node.rlimit.maxpid == 4194304
    assert [c.name for c in parsed.node.system_containers] == ["kubelet", "runtime", "pods"]
    by_name = {p.pod_ref.name: p for p in parsed.pods}
    assert len(by_name["kube-dns-5877696fb4-m6cvp"].containers) == 4
    # The static pod: config-hash UID and no `volume` key at all.
    kube_proxy = by_name["kube-proxy-gke-lenaic-pool-1-1c8b424c-wnkn"]
    assert kube_proxy.pod_ref.uid == "5e90655ac121432af448e727c85c3f01"
    assert kube_proxy.volumes == ()


def test_static_pods_in_kubelet_pods() -> None:
    by_name = {p.name: p for p in pods("nri-kubernetes-1_16/pods")}
    static = {name for name, p in by_name.items() if p.annotations.get("kubernetes.io/config.source") == "file"}
    assert static == {
        "kube-scheduler-minikube",
        "etcd-minikube",
        "kube-controller-manager-minikube",
        "kube-apiserver-minikube",
    }
    for name in static:
        pod = by_name[name]
        assert len(pod.uid) == 32 and "-" not in pod.uid  # config hash
        assert pod.priority is None  # these static pods carry no spec.priority
    assert by_name["kube-proxy-rz8xz"].priority == 2000001000
    assert by_name["e2e-container-creating"].phase == "Pending"
    # Static pods' UIDs are the same in /pods and in the summary.
    stats_uids = {p.pod_ref.uid for p in summary("nri-kubernetes-1_16/summary").pods}
    assert {by_name[name].uid for name in static} <= stats_uids


def test_openshift_etcd_mirror_pod() -> None:
    (etcd,) = pods("openshift-insights-operator/etcd-master-0.imeixner20210707.lab.upshift.rdu2.redhat.com.json")
    assert etcd.annotations["kubernetes.io/config.source"] == "file"
    assert etcd.annotations["kubernetes.io/config.mirror"] == "ab2e5349-b857-4750-a560-86cdde23ab2c"
    assert etcd.priority == 2000001000 and etcd.priority_class_name == "system-node-critical"
    assert [c.name for c in etcd.init_containers] == ["etcd-ensure-env-vars", "etcd-resources-copy"]
    assert [c.name for c in etcd.containers] == ["etcdctl", "etcd", "etcd-metrics"]
    assert etcd.qos_class == "Burstable"
    assert etcd.containers[1].requests == {"cpu": q("300m"), "memory": q("600Mi")}
    assert etcd.containers[1].limits == {}
    assert etcd.owner_kinds == ("Node",)
    assert all(v.source == "hostPath" for v in etcd.volumes)


def test_failed_pods_are_absent_from_the_summary() -> None:
    listed = pods("nri-kubernetes-1_28/pods")
    stats_uids = {p.pod_ref.uid for p in summary("nri-kubernetes-1_28/summary").pods}
    failed = [p for p in listed if p.phase == "Failed"]
    assert len(failed) == 4
    assert not {p.uid for p in failed} & stats_uids


def test_newest_summary_shape() -> None:
    parsed = summary("nri-kubernetes-1_35/summary")
    runtime = parsed.node.runtime
    assert runtime is not None and runtime.container_fs is not None and runtime.image_fs is not None
    assert runtime.container_fs.capacity_bytes == runtime.image_fs.capacity_bytes
    assert all(p.process_stats is not None and p.process_stats.process_count is not None for p in parsed.pods)
    assert parsed.node.rlimit is not None and parsed.node.rlimit.curproc is not None


def test_1_16_has_no_process_stats() -> None:
    assert all(p.process_stats is None for p in summary("nri-kubernetes-1_16/summary").pods)


def test_openshift_allocatable_in_plain_bytes() -> None:
    (worker,) = nodes("openshift-insights-operator/worker-0.imeixner20210707.lab.upshift.rdu2.redhat.com.json")
    assert str(worker.capacity["ephemeral-storage"]) == "41407468Ki"
    assert str(worker.allocatable["ephemeral-storage"]) == "37087380622"
    assert worker.allocatable["ephemeral-storage"].int_value() == 37087380622
    assert str(worker.allocatable["cpu"]) == "3500m"
    assert worker.allocatable["memory"] == q("7002280Ki")
    assert worker.allocatable["memory"] < worker.capacity["memory"]
    assert worker.taints == ()
    (gcp,) = nodes("openshift-insights-operator/ci-ln-3z9y7mt-f76d1-69jcr-worker-b-q6vs9.json")
    assert str(gcp.allocatable["ephemeral-storage"]) == "122112633448"
    assert "attachable-volumes-gce-pd" in gcp.capacity
    assert "NetworkUnavailable" in {c.type for c in gcp.conditions}


def test_openshift_master_taint() -> None:
    (master,) = nodes("openshift-insights-operator/master-0.imeixner20210707.lab.upshift.rdu2.redhat.com.json")
    assert [(t.key, t.value, t.effect) for t in master.taints] == [("node-role.kubernetes.io/master", "", "NoSchedule")]


def test_yaml_node_list() -> None:
    (node,) = nodes("nri-kubernetes-1_28/nodes.yaml")
    assert node.name == "datagen-1-28"
    assert "hugepages-32Mi" in node.capacity and "hugepages-64Ki" in node.capacity
    memory_pressure = next(c for c in node.conditions if c.type == "MemoryPressure")
    assert memory_pressure.status == "False"
    assert memory_pressure.last_transition_time is not None
    assert memory_pressure.last_transition_time.tzinfo is UTC
    (newest,) = nodes("nri-kubernetes-1_35/nodes.yaml")
    assert str(newest.capacity["ephemeral-storage"]) == "954976684Ki"


def test_views_are_immutable() -> None:
    parsed = summary("nri-kubernetes-1_28/summary")
    with pytest.raises(AttributeError):
        parsed.node.node_name = "x"  # type: ignore[misc]
    pod = pods("nri-kubernetes-1_28/pods")[0]
    with pytest.raises(TypeError):
        pod.annotations["x"] = "y"  # type: ignore[index]


# ---------------------------------------------------------------------------------------------
# Semantics: absent vs null, times, quantities
# ---------------------------------------------------------------------------------------------


def test_absent_and_null_are_the_same() -> None:
    absent = parse_summary({"node": {}}, source="t")
    null = parse_summary(
        {
            "node": {"nodeName": None, "memory": None, "fs": None, "runtime": None, "rlimit": None},
            "pods": None,
        },
        source="t",
    )
    assert absent == null
    assert absent.node.node_name == "" and absent.pods == ()


def test_volume_stats_fields_are_inline() -> None:
    stats = parse_pod_stats(
        {"podRef": {"name": "p", "uid": "u"}, "volume": [{"name": "cache", "usedBytes": 5, "inodesUsed": 2}]},
        source="t",
    )
    (volume,) = stats.volumes
    assert volume.name == "cache"
    assert (volume.fs.used_bytes, volume.fs.inodes_used, volume.fs.time) == (5, 2, None)
    assert stats.pod_ref.namespace == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-19T08:14:14Z", datetime(2024, 5, 19, 8, 14, 14, tzinfo=UTC)),
        ("2024-05-19T10:14:14+02:00", datetime(2024, 5, 19, 8, 14, 14, tzinfo=UTC)),
        ("2026-06-26T10:12:51.406244668Z", datetime(2026, 6, 26, 10, 12, 51, 406244, tzinfo=UTC)),
        ("2024-05-19T08:14:14.5-00:30", datetime(2024, 5, 19, 8, 44, 14, 500000, tzinfo=UTC)),
    ],
)
def test_times(text: str, expected: datetime) -> None:
    parsed = parse_summary({"node": {"memory": {"time": text}}}, source="t")
    assert parsed.node.memory is not None and parsed.node.memory.time == expected


def test_pod_defaults() -> None:
    pod = parse_pod({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, source="t")
    assert (pod.namespace, pod.uid, pod.priority, pod.phase) == ("", "", None, "")
    assert pod.qos_class == "BestEffort"  # computed: no status.qosClass
    assert pod.resources is None and pod.deletion_timestamp is None
    assert pod.containers == (Container(name="c", kind="regular"),)


def test_pod_containers_volumes_and_statuses() -> None:
    pod = parse_pod(
        {
            "kind": "Pod",
            "metadata": {
                "name": "p",
                "namespace": "ns",
                "uid": "u",
                "deletionTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {
                "containers": [{"name": "app", "resources": {"requests": {"memory": "1Gi", "cpu": 1}}}],
                "initContainers": [
                    {"name": "side", "restartPolicy": "Always", "resources": {"limits": {"cpu": 0.5}}},
                    {"name": "setup"},
                ],
                "ephemeralContainers": [{"name": "debug"}],
                "volumes": [
                    {"name": "scratch", "emptyDir": {}},
                    {"name": "ram", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                    {"name": "host", "hostPath": {"path": "/var"}},
                    {"name": "claim", "persistentVolumeClaim": {"claimName": "c"}},
                    {"name": "odd"},
                ],
                "overhead": {"memory": "10Mi"},
                "resources": {"requests": {"memory": "2Gi"}},
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute"}],
                "terminationGracePeriodSeconds": 30,
            },
            "status": {
                "containerStatuses": [
                    {
                        "name": "app",
                        "allocatedResources": {"memory": "1Gi"},
                        "resources": {"limits": {"cpu": "2"}},
                    }
                ]
            },
        },
        source="t",
    )
    assert pod.deletion_timestamp == datetime(2024, 1, 1, tzinfo=UTC)
    assert pod.containers[0].requests == {"memory": q("1Gi"), "cpu": q("1")}
    side, setup = pod.init_containers
    assert side.restartable_init and not setup.restartable_init
    assert side.limits["cpu"] == q("500m")
    assert pod.ephemeral_containers[0].kind == "ephemeral"
    assert [(v.name, v.source, v.empty_dir_medium) for v in pod.volumes] == [
        ("scratch", "emptyDir", ""),
        ("ram", "emptyDir", "Memory"),
        ("host", "hostPath", None),
        ("claim", "persistentVolumeClaim", None),
        ("odd", "", None),
    ]
    assert pod.volumes[1].empty_dir_size_limit == q("64Mi")
    assert pod.volumes[0].empty_dir_size_limit is None
    assert pod.overhead == {"memory": q("10Mi")}
    assert pod.resources == PodResources(requests={"memory": q("2Gi")}, limits={})
    assert pod.tolerations[0].operator == "Exists" and pod.tolerations[0].value == ""
    assert pod.termination_grace_period_seconds == 30
    status = pod.container_statuses[0]
    assert status.allocated_resources == {"memory": q("1Gi")}
    assert status.resources_limits == {"cpu": q("2")} and status.resources_requests == {}


def test_parse_pods_shapes() -> None:
    one = {"kind": "Pod", "metadata": {"name": "a"}, "spec": {}}
    two = {"metadata": {"name": "b"}, "spec": {}}
    assert [p.name for p in parse_pods(one, source="t")] == ["a"]
    assert [p.name for p in parse_pods([one, two], source="t")] == ["a", "b"]
    assert [p.name for p in parse_pods({"kind": "List", "items": [one, two]}, source="t")] == ["a", "b"]
    assert [p.name for p in parse_pods({"kind": "PodList", "items": None}, source="t")] == []
    assert [p.name for p in parse_pods({"items": [two]}, source="t")] == ["b"]


def test_parse_nodes_shapes() -> None:
    node = {"metadata": {"name": "n", "labels": {"kubernetes.io/os": "linux"}}, "status": {}}
    assert [n.name for n in parse_nodes(node, source="t")] == ["n"]
    assert [n.name for n in parse_nodes({"kind": "NodeList", "items": [node]}, source="t")] == ["n"]
    assert [n.name for n in parse_nodes([node, node], source="t")] == ["n", "n"]
    assert parse_node(node, source="t").os == "linux"  # label stands in for nodeInfo


# ---------------------------------------------------------------------------------------------
# QoS: pkg/apis/core/v1/helper/qos/qos_test.go TestComputePodQOS, transcribed
# ---------------------------------------------------------------------------------------------


def _rl(cpu: str, memory: str, **extra: str) -> dict[str, str]:
    out = {name: value for name, value in (("cpu", cpu), ("memory", memory)) if value}
    out.update({name.replace("_", "-"): value for name, value in extra.items()})
    return out


def _c(requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests, "limits": limits}}


QOS_CASES: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], dict[str, Any] | None, bool, str]] = [
    ("guaranteed", [_c(_rl("100m", "100Mi"), _rl("100m", "100Mi"))], [], None, False, "Guaranteed"),
    (
        "guaranteed-guaranteed",
        [_c(_rl("100m", "100Mi"), _rl("100m", "100Mi")), _c(_rl("100m", "100Mi"), _rl("100m", "100Mi"))],
        [],
        None,
        False,
        "Guaranteed",
    ),
    ("best-effort-best-effort", [_c({}, {}), _c({}, {})], [], None, False, "BestEffort"),
    ("best-effort", [_c({}, {})], [], None, False, "BestEffort"),
    ("best-effort-burstable", [_c({}, {}), _c(_rl("1", ""), _rl("2", ""))], [], None, False, "Burstable"),
    (
        "best-effort-guaranteed",
        [_c({}, {}), _c(_rl("10m", "100Mi"), _rl("10m", "100Mi"))],
        [],
        None,
        False,
        "Burstable",
    ),
    (
        "burstable-cpu-guaranteed-memory",
        [_c(_rl("", "100Mi"), _rl("", "100Mi"))],
        [],
        None,
        False,
        "Burstable",
    ),
    ("burstable-no-limits", [_c(_rl("100m", "100Mi"), {})], [], None, False, "Burstable"),
    (
        "burstable-guaranteed",
        [_c(_rl("1", "100Mi"), _rl("2", "100Mi")), _c(_rl("100m", "100Mi"), _rl("100m", "100Mi"))],
        [],
        None,
        False,
        "Burstable",
    ),
    (
        "burstable-unbounded-but-requests-match-limits",
        [_c(_rl("100m", "100Mi"), _rl("200m", "200Mi")), _c(_rl("100m", "100Mi"), {})],
        [],
        None,
        False,
        "Burstable",
    ),
    ("burstable-1", [_c(_rl("10m", "100Mi"), _rl("100m", "200Mi"))], [], None, False, "Burstable"),
    ("burstable-2", [_c(_rl("0", "0"), _rl("100m", "200Mi"))], [], None, False, "Burstable"),
    (
        "best-effort-hugepages",
        [_c(_rl("0", "0", hugepages_2Mi="1Gi"), _rl("0", "0", hugepages_2Mi="1Gi"))],
        [],
        None,
        False,
        "BestEffort",
    ),
    (
        "init-container",
        [_c({}, {})],
        [_c(_rl("10m", "100Mi"), _rl("100m", "200Mi"))],
        None,
        False,
        "Burstable",
    ),
    (
        "guaranteed-with-pod-level-resources",
        [_c({}, {})],
        [],
        {"requests": _rl("10m", "100Mi"), "limits": _rl("10m", "100Mi")},
        True,
        "Guaranteed",
    ),
    (
        "guaranteed-with-pod-and-container-level-resources",
        [_c(_rl("3m", "10Mi"), _rl("5m", "20Mi"))],
        [],
        {"requests": _rl("10m", "100Mi"), "limits": _rl("10m", "100Mi")},
        True,
        "Guaranteed",
    ),
    (
        "burstable-with-pod-level-resources",
        [_c({}, {})],
        [],
        {"requests": _rl("10m", "10Mi"), "limits": _rl("20m", "50Mi")},
        True,
        "Burstable",
    ),
    (
        "burstable-with-pod-and-container-level-resources",
        [_c(_rl("5m", "10Mi"), _rl("5m", "10Mi"))],
        [],
        {"requests": _rl("10m", "10Mi"), "limits": _rl("20m", "50Mi")},
        True,
        "Burstable",
    ),
    (
        "burstable-with-pod-and-container-level-requests",
        [_c(_rl("5m", "10Mi"), {})],
        [],
        {"requests": _rl("10m", "10Mi"), "limits": {}},
        True,
        "Burstable",
    ),
    (
        "burstable-with-pod-and-container-level-resources-2",
        [_c(_rl("5m", "10Mi"), {}), _c(_rl("5m", "10Mi"), _rl("5m", "10Mi"))],
        [],
        {"requests": _rl("10m", "10Mi"), "limits": _rl("5m", "")},
        True,
        "Burstable",
    ),
]


@pytest.mark.parametrize(
    ("containers", "init_containers", "pod_resources", "gate", "expected"),
    [case[1:] for case in QOS_CASES],
    ids=[case[0] for case in QOS_CASES],
)
def test_compute_pod_qos(
    containers: list[dict[str, Any]],
    init_containers: list[dict[str, Any]],
    pod_resources: dict[str, Any] | None,
    gate: bool,
    expected: str,
) -> None:
    spec: dict[str, Any] = {"containers": containers, "initContainers": init_containers}
    if pod_resources is not None:
        spec["resources"] = pod_resources
    pod = parse_pod({"metadata": {"name": "p"}, "spec": spec}, source="t")
    assert pod_qos_class(pod, pod_level_resources=gate) == expected


def test_pod_level_resources_ignored_with_gate_off() -> None:
    pod = parse_pod(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [{"name": "c"}],
                "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}},
            },
        },
        source="t",
    )
    assert pod_qos_class(pod) == "Burstable"
    assert pod_qos_class(pod, pod_level_resources=False) == "BestEffort"


def test_status_qos_class_wins() -> None:
    pod = parse_pod({"metadata": {"name": "p"}, "spec": {}, "status": {"qosClass": "Guaranteed"}}, source="t")
    assert pod.qos_class == "Guaranteed"


# ---------------------------------------------------------------------------------------------
# Bad input: one InputError naming source, field and expectation
# ---------------------------------------------------------------------------------------------


def _real_summary_doc() -> dict[str, Any]:
    doc = load_document(REALDATA / "nri-kubernetes-1_28" / "summary")
    assert isinstance(doc, dict)
    return copy.deepcopy(doc)


def test_malformed_json_summary_file(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text('{\n  "node": {\n    "nodeName": "n1",\n    "fs": {"availableBytes": 12,\n')
    with pytest.raises(InputError) as info:
        parse_summary(load_document(path), source=str(path))
    assert info.value.source == str(path)
    assert "line 5" in str(info.value) and "invalid JSON" in str(info.value)


def test_summary_that_is_a_list() -> None:
    with pytest.raises(InputError) as info:
        parse_summary([{"node": {}}], source="summary.json")
    assert str(info.value) == f"summary.json: expected {SUMMARY_HINT}, got a list"


@pytest.mark.parametrize("doc", [{}, {"pods": []}, {"node": None}, {"kind": "PodList", "items": []}])
def test_summary_without_node(doc: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="a summary without `node`") as info:
        parse_summary(doc, source="summary.json")
    assert info.value.source == "summary.json"


def test_summary_hint_names_a_pod_list() -> None:
    with pytest.raises(InputError, match="this looks like a PodList"):
        parse_summary({"kind": "PodList", "items": []}, source="pods")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("12", 'a string ("12")'),
        (True, "a boolean (true)"),
        (12.0, "a number (12.0)"),
        ({}, "an object"),
        (-1, "between 0 and 18446744073709551615, got -1"),
        (UINT64_MAX + 1, f"between 0 and 18446744073709551615, got {UINT64_MAX + 1}"),
    ],
)
def test_bad_integer_names_the_field(value: Any, shown: str) -> None:
    doc = _real_summary_doc()
    doc["pods"][3]["containers"][0]["rootfs"]["usedBytes"] = value
    with pytest.raises(InputError) as info:
        parse_summary(doc, source="summary")
    error = info.value
    assert error.source == "summary"
    assert error.field == "pods[3].containers[0].rootfs.usedBytes"
    assert error.problem.startswith("expected a non-negative integer")
    assert shown in error.problem
    assert str(error).startswith("summary: pods[3].containers[0].rootfs.usedBytes: expected a non-negative integer")


def test_uint64_max_accepted_everywhere() -> None:
    doc = _real_summary_doc()
    doc["pods"][0]["volume"][0]["usedBytes"] = UINT64_MAX
    assert parse_summary(doc, source="s").pods[0].volumes[0].fs.used_bytes == UINT64_MAX


def test_rlimit_is_signed() -> None:
    parsed = parse_summary({"node": {"rlimit": {"maxpid": 10, "curproc": -1}}}, source="s")
    assert parsed.node.rlimit is not None and parsed.node.rlimit.curproc == -1


@pytest.mark.parametrize(
    ("mutate", "field", "problem"),
    [
        (lambda d: d["node"].__setitem__("memory", []), "node.memory", "expected an object, got a list"),
        (lambda d: d.__setitem__("pods", {}), "pods", "expected a list, got an object"),
        (lambda d: d["pods"].__setitem__(2, "x"), "pods[2]", 'expected an object, got a string ("x")'),
        (
            lambda d: d["node"].__setitem__("nodeName", 7),
            "node.nodeName",
            "expected a string, got an integer (7)",
        ),
        (
            lambda d: d["node"]["fs"].__setitem__("time", "yesterday"),
            "node.fs.time",
            "expected an RFC 3339 time",
        ),
        (
            lambda d: d["node"]["fs"].__setitem__("time", "2024-02-30T00:00:00Z"),
            "node.fs.time",
            "expected an RFC 3339 time",
        ),
        (
            lambda d: d["pods"][1].__setitem__("podRef", 1),
            "pods[1].podRef",
            "expected an object",
        ),
        (
            lambda d: d["pods"][0]["process_stats"].__setitem__("process_count", "3"),
            "pods[0].process_stats.process_count",
            "expected a non-negative integer",
        ),
        (
            lambda d: d["pods"][0].__setitem__("ephemeral-storage", {"usedBytes": 1.5}),
            "pods[0].ephemeral-storage.usedBytes",
            "expected a non-negative integer",
        ),
    ],
)
def test_bad_summary_shapes(mutate: Any, field: str, problem: str) -> None:
    doc = _real_summary_doc()
    mutate(doc)
    with pytest.raises(InputError) as info:
        parse_summary(doc, source="summary")
    assert info.value.field == field
    assert problem in info.value.problem


def _pod_doc(memory: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "uid": "u"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": memory}}}]},
    }


def test_bad_quantity_in_pod_request() -> None:
    with pytest.raises(InputError) as info:
        parse_pod(_pod_doc("1.5Gx"), source="pod.yaml")
    error = info.value
    assert error.source == "pod.yaml"
    assert error.field == "spec.containers[0].resources.requests.memory"
    assert "1.5Gx" in str(error)
    assert str(error).startswith("pod.yaml: spec.containers[0].resources.requests.memory: ")


def test_bad_quantity_in_pod_list_names_the_item() -> None:
    good = _pod_doc("1Gi")
    with pytest.raises(InputError) as info:
        parse_pods({"kind": "PodList", "items": [good, _pod_doc("1.5Gx")]}, source="pods")
    assert info.value.field == "items[1].spec.containers[0].resources.requests.memory"
    with pytest.raises(InputError) as info:
        parse_pods([good, good, _pod_doc("lots")], source="pods")
    assert info.value.field == "[2].spec.containers[0].resources.requests.memory"


@pytest.mark.parametrize("value", [True, None, {}, []])
def test_quantity_of_wrong_type(value: Any) -> None:
    doc = _pod_doc("1Gi")
    doc["spec"]["containers"][0]["resources"]["limits"] = {"memory": value}
    with pytest.raises(InputError) as info:
        parse_pod(doc, source="pod")
    assert info.value.field == "spec.containers[0].resources.limits.memory"
    assert "expected a quantity" in info.value.problem


def test_dotted_resource_names_are_bracketed() -> None:
    doc = _pod_doc("1Gi")
    doc["spec"]["containers"][0]["resources"]["limits"] = {"vpc.amazonaws.com/PrivateIPv4Address": "x1"}
    with pytest.raises(InputError) as info:
        parse_pod(doc, source="pod")
    assert info.value.field == 'spec.containers[0].resources.limits["vpc.amazonaws.com/PrivateIPv4Address"]'


@pytest.mark.parametrize(
    ("mutate", "field", "problem"),
    [
        (lambda d: d["metadata"].__setitem__("labels", {"a": 1}), "metadata.labels.a", "expected a string"),
        (lambda d: d["spec"].__setitem__("priority", "high"), "spec.priority", "expected an integer"),
        (lambda d: d["spec"].__setitem__("priority", 2**31), "spec.priority", "between"),
        (lambda d: d["spec"].__setitem__("containers", {"name": "c"}), "spec.containers", "expected a list"),
        (
            lambda d: d["spec"].__setitem__("volumes", [{"name": "v", "emptyDir": {"sizeLimit": "big"}}]),
            "spec.volumes[0].emptyDir.sizeLimit",
            "big",
        ),
        (
            lambda d: d["metadata"].__setitem__("deletionTimestamp", 0),
            "metadata.deletionTimestamp",
            "expected an RFC 3339 time",
        ),
        (lambda d: d.__setitem__("kind", "Node"), "kind", 'got a string ("Node")'),
    ],
)
def test_bad_pod_shapes(mutate: Any, field: str, problem: str) -> None:
    doc = _pod_doc("1Gi")
    mutate(doc)
    with pytest.raises(InputError) as info:
        parse_pod(doc, source="pod")
    assert info.value.field == field
    assert problem in info.value.problem


def test_pods_given_a_summary() -> None:
    with pytest.raises(InputError, match="got a Summary API object"):
        parse_pods({"node": {}, "pods": []}, source="summary")


def test_nodes_given_pods() -> None:
    with pytest.raises(InputError) as info:
        parse_nodes({"kind": "List", "items": [{"kind": "Pod", "metadata": {}}]}, source="nodes.yaml")
    assert info.value.field == "items[0].kind"
    assert "expected nodes" in info.value.problem


def test_node_bad_quantity() -> None:
    with pytest.raises(InputError) as info:
        parse_node({"metadata": {"name": "n"}, "status": {"allocatable": {"memory": "7Gb"}}}, source="node.json")
    assert info.value.field == "status.allocatable.memory"
    assert str(info.value).startswith("node.json: status.allocatable.memory: ")


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_document(tmp_path / "summary")
