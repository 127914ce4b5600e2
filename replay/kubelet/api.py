"""Typed, immutable views of the Kubernetes objects the eviction manager reads — one import point.

The Summary API types live in :mod:`replay.kubelet.stats`, Pods and Nodes in :mod:`replay.kubelet.objects`,
the QoS rule in :mod:`replay.kubelet.qos`, and the JSON-path field readers in :mod:`replay.kubelet.jsonpath`.
"""

from __future__ import annotations

from replay.kubelet.objects import (
    Container,
    ContainerKind,
    ContainerStatus,
    Node,
    NodeCondition,
    Pod,
    PodResources,
    Taint,
    Toleration,
    Volume,
    parse_node,
    parse_nodes,
    parse_pod,
    parse_pods,
)
from replay.kubelet.qos import pod_qos_class
from replay.kubelet.stats import (
    ContainerStats,
    FsStats,
    MemoryStats,
    NodeStats,
    PodReference,
    PodStats,
    ProcessStats,
    RlimitStats,
    RuntimeStats,
    Summary,
    VolumeStats,
    parse_pod_stats,
    parse_summary,
)

__all__ = [
    "Container",
    "ContainerKind",
    "ContainerStats",
    "ContainerStatus",
    "FsStats",
    "MemoryStats",
    "Node",
    "NodeCondition",
    "NodeStats",
    "Pod",
    "PodReference",
    "PodResources",
    "PodStats",
    "ProcessStats",
    "RlimitStats",
    "RuntimeStats",
    "Summary",
    "Taint",
    "Toleration",
    "Volume",
    "VolumeStats",
    "parse_node",
    "parse_nodes",
    "parse_pod",
    "parse_pod_stats",
    "parse_pods",
    "parse_summary",
    "pod_qos_class",
]
