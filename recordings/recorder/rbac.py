"""The RBAC each access path needs, printed by ``evictlens record --print-rbac``.

Through the API server proxy the recorder needs ``nodes/proxy`` (which also allows exec-like
access to the kubelet, so it is powerful).  With ``--kubelet-direct`` the kubelet authorizes
each path itself (SubjectAccessReview): ``/stats/*`` always maps to ``nodes/stats``, but
``/pods`` and ``/configz`` map to their own ``nodes/pods`` and ``nodes/configz`` only with
fine-grained kubelet authorization — KEP-2862, feature gate ``KubeletFineGrainedAuthz``:
alpha in 1.32, beta and on by default from 1.33, GA in 1.36.  Before that (or with the gate
off) the kubelet maps them to ``nodes/proxy``; with the gate on it checks the fine-grained
subresource first and falls back to ``nodes/proxy``.

A 401 is not an RBAC problem: the credential itself was rejected (:func:`credential_hint`).
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
# nodes/pods and nodes/configz need the kubelet's fine-grained authorization
# (KubeletFineGrainedAuthz, KEP-2862: on by default from Kubernetes 1.33).
# Kubelets before 1.33 (or with the gate off) authorize /pods and /configz as
# nodes/proxy: there, use the ClusterRole below, evictlens-recorder-kubelet-pre-1-33.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: evictlens-recorder-kubelet
rules:
{_COMMON}- apiGroups: [""]
  resources: ["nodes/stats", "nodes/pods", "nodes/configz"]
  verbs: ["get"]
"""

DIRECT_ROLE_BEFORE_1_33 = f"""\
# evictlens record --kubelet-direct on kubelets before 1.33 (no KubeletFineGrainedAuthz):
# /stats/summary is nodes/stats, but /pods and /configz are authorized as nodes/proxy.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: evictlens-recorder-kubelet-pre-1-33
rules:
{_COMMON}- apiGroups: [""]
  resources: ["nodes/stats", "nodes/proxy"]
  verbs: ["get"]
"""


def rbac_text() -> str:
    return PROXY_ROLE + "---\n" + DIRECT_ROLE + "---\n" + DIRECT_ROLE_BEFORE_1_33


def rbac_hint(direct: bool) -> str:
    if direct:
        needs = (
            "get on nodes/stats, nodes/pods, nodes/configz (kubelets before 1.33: nodes/stats and nodes/proxy); "
            "list/watch on nodes and events"
        )
    else:
        needs = "get on nodes/proxy; list/watch on nodes, pods and events"
    return f"the recorder needs a ClusterRole granting {needs} (see: evictlens record --print-rbac)"


def credential_hint(kubelet: bool) -> str:
    if kubelet:
        return (
            "the kubelet rejected the credential: it must accept API tokens or client certificates "
            "(--authentication-token-webhook, --client-ca-file), or record through the API server proxy"
        )
    return (
        "the API server rejected the credential (expired, revoked or wrong): log in again or renew the token, "
        "and check the user of the kubeconfig context"
    )
