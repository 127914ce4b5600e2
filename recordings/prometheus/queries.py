"""The mapping: each Summary API field the eviction manager reads → the PromQL that measures it.

Why one table: PROMETHEUS.md documents exactly these queries, and the notes a recording carries
("no per-pod ephemeral-storage series") are derived from which of them returned nothing. Where
several exporters measure the same field, ``alternatives`` are tried in order per node and the first
that has data wins (the closest to what the Summary API serves first).

Every query aggregates with ``max by (…)``: the same series scraped twice (an HA pair behind
Thanos, cAdvisor and ``/metrics/resource`` both exposing ``container_memory_working_set_bytes``)
must not count twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from .labels import Conventions


@dataclass(frozen=True)
class Query:
    """One field's alternatives (PromQL), the result labels that key it, and the exporter it needs."""

    name: str
    alternatives: tuple[tuple[str, str, str], ...]  # (source for notes, PromQL, label holding the node)
    keys: tuple[str, ...]  # further result labels keying a series: namespace, pod, container
    what: str  # the Summary API field, for notes


class Builder:
    """PromQL text for one import: conventions, selector and the optional explicit lookback."""

    def __init__(self, conv: Conventions, lookback: str | None = None) -> None:
        self.conv = conv
        self.lookback = lookback

    def sel(self, metric: str, node_label: str | None, *extra: str) -> str:
        """A vector selector; with ``--lookback`` wrapped in ``last_over_time(…[LB])`` so a series
        that stopped (backfilled or federated data has no staleness markers) ends within LB, not 5m."""
        text = f"{metric}{self.conv.matchers(node_label, *extra)}"
        return f"last_over_time({text}[{self.lookback}])" if self.lookback else text


ROOT = 'id="/"'
KUBEPODS = 'id=~"/kubepods|/kubepods\\\\.slice"'
MEMORY = 'resource="memory"'
POD_CGROUP = ('container=""', 'pod!=""')
CONTAINERS = ('container!=""', 'container!="POD"', 'pod!=""')
TRUE = 'status="true"'


def node_queries(b: Builder) -> list[Query]:
    """Node-level fields: each alternative names the label that holds the node name."""
    k, e, s = b.conv.kubelet_node, b.conv.node_exporter_node, b.conv.ksm_node
    nodefs = f'mountpoint="{b.conv.nodefs_mountpoint}"'
    imagefs = f'mountpoint="{b.conv.imagefs_mountpoint}"'
    approx = (
        f"{b.sel('node_memory_MemTotal_bytes', e)} - {b.sel('node_memory_MemFree_bytes', e)}"
        f" - {b.sel('node_memory_Inactive_file_bytes', e)}"
    )
    q = [
        Query(
            "node_ws",
            (
                (
                    "kubelet /metrics/resource node_memory_working_set_bytes",
                    f"max by ({k}) ({b.sel('node_memory_working_set_bytes', k)})",
                    k,
                ),
                (
                    'cAdvisor container_memory_working_set_bytes{id="/"}',
                    f"max by ({k}) ({b.sel('container_memory_working_set_bytes', k, ROOT)})",
                    k,
                ),
                (
                    "node-exporter MemTotal - MemFree - Inactive(file), "
                    "an approximation of the root cgroup's working set",
                    f"max by ({e}) ({approx})",
                    e,
                ),
            ),
            (),
            "node.memory.workingSetBytes",
        ),
        Query(
            "mem_capacity",
            (
                ("cAdvisor machine_memory_bytes", f"max by ({k}) ({b.sel('machine_memory_bytes', k)})", k),
                (
                    "node-exporter node_memory_MemTotal_bytes",
                    f"max by ({e}) ({b.sel('node_memory_MemTotal_bytes', e)})",
                    e,
                ),
                (
                    'kube-state-metrics kube_node_status_capacity{resource="memory"}',
                    f"max by ({s}) ({b.sel('kube_node_status_capacity', s, MEMORY)})",
                    s,
                ),
            ),
            (),
            "machine memory capacity (node.memory.availableBytes = capacity - workingSetBytes)",
        ),
        Query(
            "pods_ws",
            (
                (
                    "cAdvisor container_memory_working_set_bytes of the kubepods cgroup",
                    f"max by ({k}) ({b.sel('container_memory_working_set_bytes', k, KUBEPODS)})",
                    k,
                ),
            ),
            (),
            'systemContainers["pods"].memory.workingSetBytes',
        ),
        Query(
            "pods_limit",
            (
                (
                    "cAdvisor container_spec_memory_limit_bytes of the kubepods cgroup",
                    f"max by ({k}) ({b.sel('container_spec_memory_limit_bytes', k, KUBEPODS)})",
                    k,
                ),
            ),
            (),
            'systemContainers["pods"] memory limit (availableBytes = limit - workingSetBytes)',
        ),
    ]
    for prefix, mount, what in (("fs", nodefs, "node.fs"), ("imagefs", imagefs, "node.runtime.imageFs")):
        for field, metric, doc in (
            ("avail", "node_filesystem_avail_bytes", "availableBytes"),
            ("size", "node_filesystem_size_bytes", "capacityBytes"),
            ("ffree", "node_filesystem_files_free", "inodesFree"),
            ("files", "node_filesystem_files", "inodes"),
        ):
            q.append(
                Query(
                    f"{prefix}_{field}",
                    ((f"node-exporter {metric}{{{mount}}}", f"max by ({e}) ({b.sel(metric, e, mount)})", e),),
                    (),
                    f"{what}.{doc}",
                )
            )
    for name, metric, what in (
        ("pid_max", "node_processes_max_processes", "node.rlimit.maxpid"),
        ("threads_max", "node_processes_max_threads", "node.rlimit.maxpid (the lower of pid_max and threads-max)"),
        ("curproc", "node_processes_threads", "node.rlimit.curproc"),
    ):
        q.append(Query(name, ((f"node-exporter {metric}", f"max by ({e}) ({b.sel(metric, e)})", e),), (), what))
    return q


def time_queries(b: Builder) -> list[Query]:
    """When each node-level group was sampled (``timestamp()``), in the same order of sources as its
    values: the Summary API's ``time`` fields, which the eviction manager compares between passes to
    ignore a threshold whose stats did not change (a step that repeats a scrape must not count twice)."""
    k, e = b.conv.kubelet_node, b.conv.node_exporter_node
    nodefs = f'mountpoint="{b.conv.nodefs_mountpoint}"'
    imagefs = f'mountpoint="{b.conv.imagefs_mountpoint}"'

    def ts(metric: str, label: str, *extra: str) -> str:
        return f"max by ({label}) (timestamp({metric}{b.conv.matchers(label, *extra)}))"

    return [
        Query(
            "ts_mem",
            (
                ("", ts("node_memory_working_set_bytes", k), k),
                ("", ts("container_memory_working_set_bytes", k, ROOT), k),
                ("", ts("node_memory_MemTotal_bytes", e), e),
            ),
            (),
            "node.memory.time",
        ),
        Query(
            "ts_pods",
            (("", ts("container_memory_working_set_bytes", k, KUBEPODS), k),),
            (),
            'systemContainers["pods"].memory.time',
        ),
        Query("ts_fs", (("", ts("node_filesystem_avail_bytes", e, nodefs), e),), (), "node.fs.time"),
        Query("ts_imagefs", (("", ts("node_filesystem_avail_bytes", e, imagefs), e),), (), "node.runtime.imageFs.time"),
        Query("ts_rlimit", (("", ts("node_processes_threads", e), e),), (), "node.rlimit.time"),
    ]


def pod_queries(b: Builder) -> list[Query]:
    """Per-pod and per-container fields, keyed by node, namespace, pod[, container]."""
    k = b.conv.kubelet_node
    pod, ctr = ("namespace", "pod"), ("namespace", "pod", "container")
    by_pod, by_ctr = f"{k}, namespace, pod", f"{k}, namespace, pod, container"
    rootfs = b.sel("container_fs_usage_bytes", k, *CONTAINERS)
    procs = b.sel("container_processes", k, *CONTAINERS)
    return [
        Query(
            "pod_ws",
            (
                (
                    "kubelet /metrics/resource pod_memory_working_set_bytes",
                    f"max by ({by_pod}) ({b.sel('pod_memory_working_set_bytes', k)})",
                    k,
                ),
                (
                    'cAdvisor container_memory_working_set_bytes{container=""} (the pod cgroup)',
                    f"max by ({by_pod}) ({b.sel('container_memory_working_set_bytes', k, *POD_CGROUP)})",
                    k,
                ),
            ),
            pod,
            "pods[].memory.workingSetBytes",
        ),
        Query(
            "container_ws",
            (
                (
                    "cAdvisor / kubelet /metrics/resource container_memory_working_set_bytes",
                    f"max by ({by_ctr}) ({b.sel('container_memory_working_set_bytes', k, *CONTAINERS)})",
                    k,
                ),
            ),
            ctr,
            "pods[].containers[].memory.workingSetBytes",
        ),
        Query(
            "container_rootfs",
            (("cAdvisor container_fs_usage_bytes", f"sum by ({by_ctr}) (max by ({by_ctr}, device) ({rootfs}))", k),),
            ctr,
            "pods[].containers[].rootfs.usedBytes",
        ),
        Query(
            "container_logs",
            (
                (
                    "kubelet kubelet_container_log_filesystem_used_bytes",
                    f"max by ({by_ctr}) ({b.sel('kubelet_container_log_filesystem_used_bytes', k)})",
                    k,
                ),
            ),
            ctr,
            "pods[].containers[].logs.usedBytes",
        ),
        Query(
            "pod_procs",
            (("cAdvisor container_processes", f"sum by ({by_pod}) (max by ({by_ctr}) ({procs}))", k),),
            pod,
            "pods[].process_stats.process_count",
        ),
    ]


def ksm_range_queries(b: Builder) -> dict[str, str]:
    """kube-state-metrics series whose changes over time matter: a pod's existence, node, phase, reason."""
    s = b.conv.ksm_node
    lab = b.conv.ksm_pod_labels
    # phase and reason carry no node label: with --node, keep the pods kube_pod_info puts there
    on = f"{lab['namespace']}, {lab['pod']}"
    on_nodes = f" and on ({on}) {b.sel('kube_pod_info', s)}" if b.conv.nodes else ""
    return {
        "pod_info": b.sel("kube_pod_info", s),
        "pod_phase": f"({b.sel('kube_pod_status_phase', None)} == 1){on_nodes}",
        "pod_reason": f"({b.sel('kube_pod_status_reason', None)} == 1){on_nodes}",
        "node_condition": f"{b.sel('kube_node_status_condition', s, TRUE)} == 1",
    }


def ksm_static_queries(b: Builder, window: str) -> dict[str, str]:
    """Series that describe a pod or node and rarely change: read once per window
    (``last_over_time`` over the window) instead of at every step."""
    s = b.conv.ksm_node

    def last(metric: str, node_label: str | None = None) -> str:
        return f"last_over_time({metric}{b.conv.matchers(node_label)}[{window}])"

    return {
        "pod_owner": last("kube_pod_owner"),
        "pod_created": last("kube_pod_created"),
        "pod_start": last("kube_pod_start_time"),
        "container_info": last("kube_pod_container_info"),
        "init_info": last("kube_pod_init_container_info"),
        "requests": last("kube_pod_container_resource_requests"),
        "limits": last("kube_pod_container_resource_limits"),
        "init_requests": last("kube_pod_init_container_resource_requests"),
        "init_limits": last("kube_pod_init_container_resource_limits"),
        "node_info": last("kube_node_info", s),
        "node_capacity": last("kube_node_status_capacity", s),
        "node_allocatable": last("kube_node_status_allocatable", s),
        "node_taints": last("kube_node_spec_taint", s),
    }
