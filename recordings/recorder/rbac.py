"""The RBAC each access path needs, printed by ``evictlens record --print-rbac``.

Through the API server proxy the recorder needs ``nodes/proxy`` (which also allows exec-like
access to the kubelet, so it is powerful).  With ``--kubelet-direct`` it needs only the
read-only kubelet subresources — on clusters with fine-grained kubelet authorization
(KubeletFineGrainedAuthz) ``nodes/stats``, ``nodes/pods`` and ``nodes/configz``;
on older clusters the kubelet maps /pods and /configz to ``nodes/proxy`` anyway.
"""

from __future__ import annotations

_COMMON = """\
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["list", "watch"]
- nonResourceURLs: ["/version"]
  verbs: ["get"]
"""

PROXY_ROLE = f"""\
# evictlens record (default: through the API server proxy)
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: evictlens-recorder-proxy
rules:
{_COMMON}- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["nodes/proxy"]
  verbs: ["get"]
"""

DIRECT_ROLE = f"""\
# evictlens record --kubelet-direct (least privilege: kubelet port 10250)
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: evictlens-recorder-kubelet
rules:
{_COMMON}- apiGroups: [""]
  resources: ["nodes/stats", "nodes/pods", "nodes/configz"]
  verbs: ["get"]
"""


def rbac_text() -> str:
    return PROXY_ROLE + "---\n" + DIRECT_ROLE


def rbac_hint(direct: bool) -> str:
    if direct:
        needs = "get on nodes/stats, nodes/pods, nodes/configz; list/watch on nodes and events"
    else:
        needs = "get on nodes/proxy; list/watch on nodes, pods and events"
    return f"the recorder needs a ClusterRole granting {needs} (see: evictlens record --print-rbac)"
