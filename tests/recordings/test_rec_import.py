"""``evictlens import`` / ``pack`` / ``unpack`` / ``info`` through the real CLI process."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import orjson
from rec_support import REALDATA, assert_no_secret, run_cli

from recordings.reader import open_recording
from recordings.summary_codec import project

V135 = REALDATA / "nri-kubernetes-1_35"


def _import_135(out: Path) -> None:
    res = run_cli(
        "import",
        str(V135 / "summary"),
        str(V135 / "pods"),
        str(V135 / "nodes.yaml"),
        str(REALDATA / "datadog-agent/kubelet_config.json"),
        "-o",
        str(out),
    )
    assert res.returncode == 0, res.stderr
    assert "imported 1 ticks, 1 nodes" in res.stdout


def test_import_of_a_pasted_summary_pods_nodes_and_configz_replays(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    _import_135(out)
    rec = open_recording(out)
    summary = orjson.loads((V135 / "summary").read_bytes())
    node = summary["node"]["nodeName"]
    assert rec.nodes() == [node]
    (tick,) = rec.ticks(node)
    assert rec.summary_at(node, tick.index) == project(summary)
    pods = rec.pods_at(node, tick.time)
    assert len(pods) == 24 and all(p["spec"]["nodeName"] == node for p in pods)
    assert rec.node_object_at(node, tick.time)["status"]["nodeInfo"]["kubeletVersion"].startswith("v1.35")
    assert rec.configz(node)["kubeletconfig"]["kind"] == "KubeletConfiguration"
    assert rec.manifest.kubelet_versions[node].startswith("v1.35") and rec.manifest.finalized


def test_import_many_summaries_orders_them_by_time_and_at_overrides(tmp_path: Path) -> None:
    s = orjson.loads((V135 / "summary").read_bytes())
    files = []
    for i, stamp in enumerate(["2026-06-26T10:20:00Z", "2026-06-26T10:10:00Z"]):
        f = tmp_path / f"s{i}.json"
        f.write_bytes(orjson.dumps(s))
        files.append(f"{f}@{stamp}")
    res = run_cli("import", *files, "-o", str(tmp_path / "rec"))
    assert res.returncode == 0, res.stderr
    ticks = open_recording(tmp_path / "rec").ticks()
    assert [t.time.isoformat() for t in ticks] == ["2026-06-26T10:10:00+00:00", "2026-06-26T10:20:00+00:00"]


def test_import_events_keeps_evicted_ground_truth(tmp_path: Path) -> None:
    event = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "e1", "namespace": "default", "uid": "u-e1"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web-1", "uid": "u-web-1"},
        "reason": "Evicted",
        "message": "The node was low on resource: memory.",
        "type": "Warning",
        "source": {"component": "kubelet", "host": "n1"},
        "lastTimestamp": "2024-05-19T08:14:14Z",
    }
    f = tmp_path / "events.json"
    f.write_text(json.dumps({"kind": "EventList", "apiVersion": "v1", "items": [event]}))
    res = run_cli("import", str(V135 / "summary"), str(f), "-o", str(tmp_path / "rec"))
    assert res.returncode == 0, res.stderr
    rec = open_recording(tmp_path / "rec")
    (ev,) = rec.evictions()
    assert (ev["source"], ev["name"], ev["node"], ev["message"]) == ("event", "web-1", "n1", event["message"])
    assert rec.events()[0]["reason"] == "Evicted"


def test_pack_unpack_round_trip_is_identical(tmp_path: Path) -> None:
    _import_135(tmp_path / "rec")
    res = run_cli("pack", str(tmp_path / "rec"), "-o", str(tmp_path / "bug.evictlens.tar"))
    assert res.returncode == 0, res.stderr
    res = run_cli("unpack", str(tmp_path / "bug.evictlens.tar"), "-o", str(tmp_path / "back"))
    assert res.returncode == 0, res.stderr
    a, b = open_recording(tmp_path / "rec"), open_recording(tmp_path / "back")
    for name in ("node_stats", "pod_stats", "container_stats", "objects"):
        assert a.scan(name).collect().equals(b.scan(name).collect())
    assert (tmp_path / "bug.evictlens.tar").stat().st_mode & 0o077 == 0


def test_unpack_refuses_path_traversal(tmp_path: Path) -> None:
    evil = tmp_path / "evil.tar"
    (tmp_path / "manifest.json").write_text("{}")
    (tmp_path / "x").write_text("x")
    with tarfile.open(evil, "w") as tar:
        tar.add(tmp_path / "manifest.json", arcname="manifest.json")
        tar.add(tmp_path / "x", arcname="../escape")
    res = run_cli("unpack", str(evil), "-o", str(tmp_path / "out"))
    assert res.returncode != 0
    assert res.stderr.count("\n") == 1 and "unsafe entry" in res.stderr and "../escape" in res.stderr
    assert not (tmp_path / "escape").exists()


def test_info_prints_manifest_and_counts(tmp_path: Path) -> None:
    _import_135(tmp_path / "rec")
    res = run_cli("info", str(tmp_path / "rec"), "--json")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["manifest"]["schema_version"] == 3 and info["counts"]["pod_samples"] == 17
    assert info["counts"]["metric_samples"] > 0 and info["bytes_on_disk"] > 0
    text = run_cli("info", str(tmp_path / "rec")).stdout
    assert "finalized" in text and "pod_samples" in text


def test_bad_inputs_give_one_line_naming_file_and_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"node": {"nodeName": "n", "fs": {"time": "2024-05-19T08:14:14Z", "usedBytes": "12"}}, "pods": []}')
    res = run_cli("import", str(bad), "-o", str(tmp_path / "r1"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert f"{bad}: node.fs.usedBytes: expected an unsigned 64-bit integer" in res.stderr
    assert not (tmp_path / "r1").exists()  # validated before anything is written
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    res = run_cli("import", str(junk), "-o", str(tmp_path / "r2"))
    assert res.returncode == 2 and "not a Summary API response" in res.stderr and "Traceback" not in res.stderr
    res = run_cli("import", str(tmp_path / "missing.json"), "-o", str(tmp_path / "r3"))
    assert res.returncode == 2 and "missing.json: cannot read file" in res.stderr
    res = run_cli("info", str(tmp_path))
    assert res.returncode == 2 and "not a recording directory" in res.stderr
    res = run_cli("record", "-o", str(tmp_path / "r4"), "--interval", "ten")
    assert res.returncode == 2 and res.stderr.strip() == ('evictlens record: --interval: time: invalid duration "ten"')


def test_privacy_of_imported_pods(tmp_path: Path) -> None:
    pods = orjson.loads((V135 / "pods").read_bytes())
    marker = "SECRET-c0ffee"
    for pod in pods["items"]:
        pod["metadata"].setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = marker
        for c in pod["spec"]["containers"]:
            c["env"] = [{"name": "PASSWORD", "value": marker}]
            c["args"] = [f"--token={marker}"]
    f = tmp_path / "pods.json"
    f.write_bytes(orjson.dumps(pods))
    res = run_cli("import", str(V135 / "summary"), str(f), "-o", str(tmp_path / "rec"))
    assert res.returncode == 0, res.stderr
    assert_no_secret(tmp_path / "rec", marker)
