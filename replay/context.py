"""How user data becomes the eviction manager's inputs: version profile, topology, active pods.

Shared by ``explain`` (one summary) and ``replay`` (a recording), so both say the same thing about
what they assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from replay.kubelet.api import Pod, Summary, parse_pods
from replay.kubelet.manager import FsTopology
from replay.settings import DEFAULT_VERSION, resolve_profile

__all__ = ["DEFAULT_VERSION", "active_pods", "infer_topology", "pods_from_summary", "resolve_profile"]


def pods_from_summary(raw_summary: Mapping[str, Any], source: str) -> tuple[Pod, ...]:
    """Without a pods file, build pods from the summary's podRefs and container names alone."""
    pods = []
    for entry in raw_summary.get("pods") or []:
        ref = entry.get("podRef") or {}
        pods.append(
            {
                "metadata": {
                    "name": ref.get("name", ""),
                    "namespace": ref.get("namespace", ""),
                    "uid": ref.get("uid", ""),
                },
                "spec": {"containers": [{"name": c.get("name", "")} for c in entry.get("containers") or []]},
            }
        )
    return parse_pods({"kind": "PodList", "items": pods}, source=f"{source} (pods built from the summary)")


def infer_topology(summary: Summary) -> tuple[FsTopology, str]:
    """The kubelet asks cAdvisor for devices; from a summary we can only compare filesystems."""
    node = summary.node
    runtime = node.runtime
    image = runtime.image_fs if runtime else None
    container = runtime.container_fs if runtime else None

    def same(a: Any, b: Any) -> bool:
        return a is None or b is None or (a.capacity_bytes, a.available_bytes) == (b.capacity_bytes, b.available_bytes)

    dedicated = image is not None and not same(image, node.fs)
    split = container is not None and image is not None and not same(container, image)
    note = (
        f"filesystems inferred from the summary: imagefs {'on its own device' if dedicated else 'shares nodefs'}"
        f"{', containerfs split from imagefs' if split else ''}"
        " (pass --dedicated-image-fs / --split-image-fs to override)"
    )
    return FsTopology(dedicated, split), note


def active_pods(pods: Sequence[Pod], node_name: str) -> list[Pod]:
    """Pods the kubelet would consider active: on this node and not in a terminal phase."""
    return [
        p
        for p in pods
        if p.phase not in ("Succeeded", "Failed") and (not node_name or not p.node_name or p.node_name == node_name)
    ]
