"""``evictlens record --print-manifests``: what ``kubectl apply -f -`` needs to run the recorder in the cluster.

Two shapes.  One recorder for the whole cluster (a Deployment: one replica, ``Recreate`` so two
recorders never write one volume, a PersistentVolumeClaim for the window), or ``--per-node``: a
DaemonSet whose pods each record their own node through its kubelet (``--kubelet-direct --node
$(NODE_NAME)``, the name from the downward API), so no summary goes through the API server proxy
and the cost per pod does not grow with the cluster.

The per-node window lives in an ``emptyDir`` (with a size limit), not a hostPath: it survives the
container's restarts (SIGKILL, its own OOM kill), which is what "resume the same recording" needs;
a hostPath would also survive the pod's deletion, but it is forbidden by the baseline and restricted
Pod Security Standards and is root-owned when the kubelet creates it, so a non-root recorder could
not write it without a privileged init container.  Both shapes meet the restricted standard.

The ClusterRole is the very text ``--print-rbac`` prints for the access path (rbac.py).  Requests
and limits come from the benchmark in tests/recordings/bench/bench_incluster.py (README, "In the cluster").
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import yaml

from kube.errors import RecordingError

from .rbac import DIRECT_ROLE, PROXY_ROLE

METRICS_PORT = 9090
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")  # a namespace's name (RFC 1123 label)
DATA = "/data"
COMMAND = ["evictlens", "record"]  # the image's ENTRYPOINT (deploy/Containerfile); tests pin both
NAME = "evictlens-recorder"
NODE_NAME = "evictlens-node-recorder"
# From the benchmark (README "In the cluster"): one recorder for up to about 300 nodes at 10 s.
CLUSTER_RESOURCES = {"requests": {"cpu": "250m", "memory": "768Mi"}, "limits": {"cpu": "1", "memory": "768Mi"}}
# One node (up to 110 pods) at 10 s; requests = limits: the Guaranteed QoS class, so the node's own eviction
# manager ranks the recorder after every pod using more memory than it requested (eviction/helpers.go
# exceedMemoryRequests) and the kernel's OOM killer picks it last (oom_score_adj -997): it records the very
# pressure it sits in.
NODE_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "256Mi", "ephemeral-storage": "2Gi"},
    "limits": {"cpu": "100m", "memory": "256Mi", "ephemeral-storage": "2Gi"},
}
CLUSTER_RETAIN, NODE_RETAIN = "24h", "6h"
CLUSTER_VOLUME, NODE_VOLUME = "20Gi", "1536Mi"
NODE_INCIDENTS = "512Mi"  # flight/cli.py's --max-incidents-size (1Gi by default) on the node's emptyDir


def default_image() -> str:
    try:
        return f"evictlens:{version('evictlens')}"
    except PackageNotFoundError:
        return "evictlens:latest"


@dataclass(frozen=True)
class Deploy:
    namespace: str = "evictlens"
    image: str = ""
    kubelet_direct: bool = False
    per_node: bool = False
    interval: str = "10s"

    @property
    def name(self) -> str:
        return NODE_NAME if self.per_node else NAME

    @property
    def labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": "evictlens", "app.kubernetes.io/component": self.name}


def recorder_args(d: Deploy) -> list[str]:
    """The container's args: what follows ``evictlens record`` (and the image's default CMD)."""
    if d.per_node:
        # The incidents kept on the node share its emptyDir with the window: cap them well below its size.
        access = ["--kubelet-direct", "--node", "$(NODE_NAME)", "--max-incidents-size", NODE_INCIDENTS]
        retain = NODE_RETAIN
    else:
        access = ["--kubelet-direct"] if d.kubelet_direct else []
        retain = CLUSTER_RETAIN
    # --retain resumes the recording a restarted container left (no --append needed).
    return ["-o", f"{DATA}/rec", *access, "--interval", d.interval, "--retain", retain, "--listen", f":{METRICS_PORT}"]


def _meta(d: Deploy, name: str, *, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = d.namespace
    meta["labels"] = dict(d.labels)
    return meta


def _pod_spec(d: Deploy, volume: dict[str, Any]) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/healthz", "port": "metrics"}, "periodSeconds": 20, "timeoutSeconds": 5}
    container: dict[str, Any] = {
        "name": "recorder",
        "image": d.image or default_image(),
        "imagePullPolicy": "IfNotPresent",
        "command": list(COMMAND),
        "args": recorder_args(d),
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "resources": NODE_RESOURCES if d.per_node else CLUSTER_RESOURCES,
        # Python and polars load slowly on a CPU limit of 100m: liveness counts only once /healthz answered.
        "startupProbe": {
            "httpGet": {"path": "/healthz", "port": "metrics"},
            "periodSeconds": 5,
            "failureThreshold": 60,
        },
        "livenessProbe": probe | {"failureThreshold": 3},
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": "metrics"},
            "periodSeconds": 10,
            "timeoutSeconds": 5,
            "failureThreshold": 2,
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "data", "mountPath": DATA}, {"name": "tmp", "mountPath": "/tmp"}],
    }
    if d.per_node:
        container["env"] = [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    spec: dict[str, Any] = {
        "serviceAccountName": NAME,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "fsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        # SIGTERM finishes the tick in flight and finalizes (a fold and a compaction can take a while).
        "terminationGracePeriodSeconds": 60,
        "containers": [container],
        "volumes": [{"name": "data", **volume}, {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}],
    }
    if d.per_node:
        spec["tolerations"] = [{"operator": "Exists"}]  # every node, tainted or not, as node agents run
    return spec


def manifests(d: Deploy) -> list[dict[str, Any] | str]:
    """The objects in apply order; the ClusterRole is rbac.py's text (with its comments)."""
    role_text = DIRECT_ROLE if d.kubelet_direct or d.per_node else PROXY_ROLE
    role_name = yaml.safe_load(role_text)["metadata"]["name"]
    selector = {"matchLabels": dict(d.labels)}
    template = {"metadata": {"labels": dict(d.labels)}}
    out: list[dict[str, Any] | str] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": d.namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(d, NAME)},
        role_text,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(d, f"{role_name}-{d.namespace}", namespaced=False),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": d.namespace}],
        },
    ]
    if d.per_node:
        volume = {"emptyDir": {"sizeLimit": NODE_VOLUME}}
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": _meta(d, d.name),
                "spec": {
                    "selector": selector,
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                    "template": template | {"spec": _pod_spec(d, volume)},
                },
            }
        )
    else:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": _meta(d, NAME),
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": CLUSTER_VOLUME}}},
            }
        )
        volume = {"persistentVolumeClaim": {"claimName": NAME}}
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": _meta(d, d.name),
                "spec": {
                    "replicas": 1,
                    "strategy": {"type": "Recreate"},  # the old pod lets go of the volume first
                    "selector": selector,
                    "template": template | {"spec": _pod_spec(d, volume)},
                },
            }
        )
    service: dict[str, Any] = {
        "selector": dict(d.labels),
        "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"}],
    }
    if d.per_node:
        service["clusterIP"] = "None"  # headless: Prometheus' endpoints discovery scrapes every pod
    out.append({"apiVersion": "v1", "kind": "Service", "metadata": _meta(d, d.name), "spec": service})
    return out


def manifests_text(d: Deploy) -> str:
    mode = "--per-node" if d.per_node else "--kubelet-direct" if d.kubelet_direct else ""
    head = f"# evictlens record --print-manifests {mode}".rstrip() + f" --namespace {d.namespace}\n"
    docs = [doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False) for doc in manifests(d)]
    return head + "---\n".join(docs)


def documents(text: str) -> list[dict[str, Any]]:
    """The printed manifests parsed back into objects (tests, and users' tooling)."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


def manifests_from_args(args: argparse.Namespace) -> str:
    if not DNS_LABEL.fullmatch(args.namespace or ""):
        raise RecordingError(
            f"expected a namespace name (lower-case letters, digits and '-', at most 63), got {args.namespace!r}",
            source="--namespace",
        )
    if args.image is not None and (not args.image.strip() or any(c.isspace() for c in args.image)):
        raise RecordingError(
            f"expected an image reference such as registry/evictlens:0.1.0, got {args.image!r}", source="--image"
        )
    return manifests_text(
        Deploy(
            namespace=args.namespace,
            image=args.image or "",
            kubelet_direct=args.kubelet_direct,
            per_node=args.per_node,
            interval=args.interval,
        )
    )
