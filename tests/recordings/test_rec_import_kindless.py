"""``import`` recognises Node and Pod objects saved without ``kind`` (OpenShift insights / must-gather files)
by their shape; what has no recognisable shape is still refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rec_support import REALDATA

from kube.errors import RecordingError
from recordings.importer import import_files, load_file
from recordings.reader import open_recording

OPENSHIFT = REALDATA / "openshift-insights-operator"
WORKER = OPENSHIFT / "worker-0.imeixner20210707.lab.upshift.rdu2.redhat.com.json"
ETCD_POD = OPENSHIFT / "etcd-master-0.imeixner20210707.lab.upshift.rdu2.redhat.com.json"
SUMMARY = Path(__file__).resolve().parents[2] / "recordings" / "samples" / "kind-sidecars" / "summary.json"


@pytest.mark.parametrize(("path", "kind"), [(WORKER, "nodes"), (ETCD_POD, "pods")])
def test_kindless_openshift_objects_are_recognised_by_shape(path: Path, kind: str) -> None:
    assert "kind" not in json.loads(path.read_text())
    assert load_file(str(path)).kind == kind


def test_a_kindless_list_of_pods_is_recognised(tmp_path: Path) -> None:
    pod = json.loads(ETCD_POD.read_text())
    (tmp_path / "pods.json").write_text(json.dumps({"apiVersion": "v1", "items": [pod, pod]}))
    assert load_file(str(tmp_path / "pods.json")).kind == "pods"


def test_an_object_of_no_known_shape_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps({"metadata": {"name": "x"}, "spec": {"replicas": 3}}))
    with pytest.raises(RecordingError, match="not a Summary API response"):
        load_file(str(tmp_path / "x.json"))


def test_import_stores_the_kindless_node_and_pod(tmp_path: Path) -> None:
    import_files([str(SUMMARY), str(WORKER), str(ETCD_POD)], tmp_path / "rec")
    rec = open_recording(tmp_path / "rec")
    node = "worker-0.imeixner20210707.lab.upshift.rdu2.redhat.com"
    stored = rec.node_object_at(node)
    assert stored is not None and stored["status"]["nodeInfo"]["kubeletVersion"] == "v1.20.0+2817867"
    pods = rec.pods_at("master-0.imeixner20210707.lab.upshift.rdu2.redhat.com", rec.ticks()[0].time)
    assert [p["metadata"]["name"] for p in pods] == ["etcd-master-0.imeixner20210707.lab.upshift.rdu2.redhat.com"]
