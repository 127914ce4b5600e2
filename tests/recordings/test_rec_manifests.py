"""``record --print-manifests``: valid for every Kubernetes version supported, least privilege, restricted pods.

Each printed object is checked against the OpenAPI schema (strict: no unknown field) of every minor
from 1.26 to the newest that ``kubernetes-validate`` ships offline.  The ClusterRole is the one
``--print-rbac`` prints for the access path; the image's ENTRYPOINT/CMD (deploy/Containerfile) are the
manifests' command and args.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from rec_support import run_cli

from recordings.recorder.manifests import COMMAND, Deploy, documents, manifests_text, recorder_args
from recordings.recorder.rbac import DIRECT_ROLE, PROXY_ROLE, rbac_text

kv = pytest.importorskip("kubernetes_validate.utils", reason="needs kubernetes-validate (the test extras)")
# Each validate() call parses its version's definitions (megabytes of JSON) again: parse each file once.
kv.schema_contents = functools.lru_cache(maxsize=None)(kv.schema_contents)

REPO = Path(__file__).resolve().parents[2]
OLDEST = (1, 26)
VERSIONS = sorted({m for m in (tuple(int(x) for x in v.split(".")[:2]) for v in kv.all_versions()) if m >= OLDEST})
MODES = {
    "proxy": Deploy(),
    "kubelet-direct": Deploy(kubelet_direct=True),
    "per-node": Deploy(per_node=True),
}


def test_the_schemas_cover_1_26_to_the_newest() -> None:
    assert VERSIONS[0] == OLDEST and len(VERSIONS) >= 10, VERSIONS


def _docs(mode: str) -> list[dict[str, Any]]:
    return documents(manifests_text(MODES[mode]))


def _kind(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind]
    return doc


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("minor", VERSIONS, ids=lambda v: f"1.{v[1]}")
def test_every_object_validates_against_the_schema(mode: str, minor: tuple[int, int]) -> None:
    for doc in _docs(mode):
        assert kv.validate(doc, f"{minor[0]}.{minor[1]}.0", strict=True) == f"{minor[0]}.{minor[1]}", doc["kind"]


def test_the_validation_is_not_vacuous() -> None:
    ds = _kind(_docs("per-node"), "DaemonSet")
    ds["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["pth"] = "/healthz"
    with pytest.raises(kv.ValidationError):
        kv.validate(ds, "1.26.0", strict=True)


def test_the_cli_prints_them(tmp_path: Path) -> None:
    done = run_cli("record", "--print-manifests", "--per-node", "--namespace", "obs", "--image", "reg.example/e:1")
    assert done.returncode == 0, done.stderr
    docs = documents(done.stdout)
    assert [d["kind"] for d in docs] == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "DaemonSet",
        "Service",
    ]
    assert {d["metadata"].get("namespace", "obs") for d in docs} == {"obs"} and docs[0]["metadata"]["name"] == "obs"
    container = _kind(docs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "reg.example/e:1"
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize(
    ("mode", "role"),
    [("proxy", PROXY_ROLE), ("kubelet-direct", DIRECT_ROLE), ("per-node", DIRECT_ROLE)],
    ids=["proxy", "kubelet-direct", "per-node"],
)
def test_the_cluster_role_is_the_one_print_rbac_prints(mode: str, role: str) -> None:
    text = manifests_text(MODES[mode])
    assert role in text  # verbatim, with its comments
    docs = _docs(mode)
    assert _kind(docs, "ClusterRole") == yaml.safe_load(role)
    binding = _kind(docs, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == yaml.safe_load(role)["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "evictlens-recorder", "namespace": "evictlens"}]
    assert role in rbac_text()  # what --print-rbac prints
    if mode == "per-node":
        assert "nodes/proxy" not in yaml.safe_dump(_kind(docs, "ClusterRole"))


def _pod(docs: list[dict[str, Any]]) -> dict[str, Any]:
    workload = next(d for d in docs if d["kind"] in ("Deployment", "DaemonSet"))
    return dict(workload["spec"]["template"]["spec"])


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_pod_meets_the_restricted_pod_security_standard(mode: str) -> None:
    pod = _pod(_docs(mode))
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    assert all("hostPath" not in v for v in pod["volumes"])
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert c["resources"]["limits"]["memory"] == c["resources"]["requests"]["memory"]
    assert {m["mountPath"] for m in c["volumeMounts"]} == {"/data", "/tmp"}
    assert c["args"][c["args"].index("--listen") + 1] == ":9090" and "--retain" in c["args"]


def test_one_recorder_for_the_cluster_is_one_replica_recreated_on_a_claim() -> None:
    docs = _docs("proxy")
    dep = _kind(docs, "Deployment")
    assert dep["spec"]["replicas"] == 1 and dep["spec"]["strategy"] == {"type": "Recreate"}
    claim = _kind(docs, "PersistentVolumeClaim")
    assert _pod(docs)["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert "--kubelet-direct" not in _pod(docs)["containers"][0]["args"]
    assert "--kubelet-direct" in _pod(_docs("kubelet-direct"))["containers"][0]["args"]
    svc = _kind(docs, "Service")
    assert svc["spec"]["ports"][0]["port"] == 9090 and svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]


def test_per_node_is_a_daemonset_recording_its_own_node_everywhere() -> None:
    docs = _docs("per-node")
    assert not [d for d in docs if d["kind"] in ("Deployment", "PersistentVolumeClaim")]
    pod = _pod(docs)
    (c,) = pod["containers"]
    args = c["args"]
    assert args[args.index("--node") + 1] == "$(NODE_NAME)" and "--kubelet-direct" in args
    assert c["env"] == [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["volumes"][0]["emptyDir"]["sizeLimit"]
    assert c["resources"]["requests"] == c["resources"]["limits"]  # Guaranteed: the eviction manager's last pick
    assert _kind(docs, "Service")["spec"]["clusterIP"] == "None"  # every pod scraped


def _instruction(text: str, name: str) -> list[str]:
    (line,) = [ln for ln in text.splitlines() if re.match(rf"^{name}\s", ln)]
    return list(json.loads(line.split(None, 1)[1]))


def test_the_image_runs_exactly_the_manifests_command() -> None:
    text = (REPO / "deploy" / "Containerfile").read_text()
    assert _instruction(text, "ENTRYPOINT") == COMMAND == ["evictlens", "record"]
    for mode in MODES:
        assert _pod(_docs(mode))["containers"][0]["command"] == COMMAND
    assert _instruction(text, "CMD") == recorder_args(Deploy()) == _pod(_docs("proxy"))["containers"][0]["args"]
    (user,) = [ln.split()[1] for ln in text.splitlines() if ln.startswith("USER ")]
    assert user == "65532:65532" and _pod(_docs("proxy"))["securityContext"]["runAsUser"] == 65532


@pytest.mark.parametrize(("flag", "value"), [("--namespace", "Bad_NS"), ("--namespace", ""), ("--image", "a b")])
def test_a_bad_namespace_or_image_is_one_line(flag: str, value: str) -> None:
    done = run_cli("record", "--print-manifests", flag, value)
    assert done.returncode == 2 and not done.stdout
    assert len(done.stderr.strip().splitlines()) == 1 and flag in done.stderr
