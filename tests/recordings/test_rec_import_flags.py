"""A file import honours ``--configz``/``--config``/``--events`` (or refuses a flag only a server reads), and a
snapshot's pods are in force at every pass: ``explain`` and ``import`` + ``replay`` give the same answer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from recordings.reader import open_recording
from replay.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "recordings" / "samples" / "kind-sidecars"


def _crashloop_files(tmp_path: Path) -> tuple[Path, Path]:
    """The kind sample with memory sampled 10 s before the rest, and a crash-looping pod with no stats yet."""
    summary: dict[str, Any] = json.loads((SAMPLE / "summary.json").read_text())
    summary["node"]["memory"]["time"] = "2024-05-20T10:15:32Z"
    pods: dict[str, Any] = json.loads((SAMPLE / "pods.json").read_text())
    crash = copy.deepcopy(pods["items"][1])
    crash["metadata"] |= {"name": "crashloop", "uid": "uid-crashloop"}
    crash["spec"]["containers"] = [{"name": "app", "image": "busybox"}]
    crash["status"] = {"phase": "Running", "qosClass": "BestEffort"}
    pods["items"].append(crash)
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    return tmp_path / "summary.json", tmp_path / "pods.json"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return json.loads(out)


def test_a_snapshots_pods_are_in_force_at_a_pass_sampled_before_the_summarys_newest_sample(tmp_path: Path) -> None:
    summary, pods = _crashloop_files(tmp_path)
    assert main(["import", "-o", str(tmp_path / "rec"), str(summary), str(pods)]) == 0
    rec = open_recording(tmp_path / "rec")
    names = {p["metadata"]["name"] for p in rec.pods_at("kind-worker", "2024-05-20T10:15:32Z")}
    assert "crashloop" in names and "alloc-sidecars" in names


def test_explain_and_import_then_replay_name_the_same_victim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, pods = _crashloop_files(tmp_path)
    config = str(SAMPLE / "kubelet-config.yaml")
    explained = _json(
        capsys,
        "explain",
        "--summary",
        str(summary),
        "--pods",
        str(pods),
        "--config",
        config,
        "--kubelet-version",
        "1.30",
        "--json",
    )
    assert main(["import", "-o", str(tmp_path / "rec"), str(summary), str(pods), "--config", config]) == 0
    replayed = _json(capsys, "replay", str(tmp_path / "rec"), "--kubelet-version", "1.30", "--json")
    predicted = explained["result"]["evictions"][0]
    first = replayed["evictions"][0]
    assert (predicted["namespace"], predicted["pod"]) == ("kube-system", "crashloop")
    assert (first["namespace"], first["pod"], first["message"]) == ("kube-system", "crashloop", predicted["message"])


def test_a_kubelet_configuration_given_with_config_is_the_nodes_configz(tmp_path: Path) -> None:
    summary, _pods = _crashloop_files(tmp_path)
    out = tmp_path / "rec"
    assert main(["import", "-o", str(out), str(summary), "--config", str(SAMPLE / "kubelet-config.yaml")]) == 0
    configz = open_recording(out).configz("kind-worker")
    assert configz is not None and configz["kubeletconfig"]["evictionHard"]["memory.available"] == "1.5Gi"


def test_configz_for_a_named_node_and_events_are_stored(tmp_path: Path) -> None:
    summary, _pods = _crashloop_files(tmp_path)
    events = {
        "kind": "EventList",
        "items": [
            {
                "metadata": {"name": "e1", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "alloc-sidecars", "namespace": "default", "uid": "u"},
                "reason": "Evicted",
                "message": "The node was low on resource: memory. ",
                "source": {"component": "kubelet", "host": "kind-worker"},
                "lastTimestamp": "2024-05-20T10:15:42Z",
                "type": "Warning",
            }
        ],
    }
    (tmp_path / "events.json").write_text(json.dumps(events))
    out = tmp_path / "rec"
    argv = ["import", "-o", str(out), str(summary), "--events", str(tmp_path / "events.json")]
    assert main([*argv, "--configz", f"kind-worker={SAMPLE / 'kubelet-config.yaml'}"]) == 0
    rec = open_recording(out)
    assert rec.configz("kind-worker") is not None
    assert len(rec.evictions()) == 1


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--step", "30s"], "--step"),
        (["--window", "2h"], "--window"),
        (["--from", "2024-05-20T10:00:00Z"], "--from"),
        (["--cadvisor-node-label", "instance"], "--cadvisor-node-label"),
    ],
)
def test_a_flag_only_a_prometheus_import_reads_is_refused_with_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    summary, _pods = _crashloop_files(tmp_path)
    assert main(["import", "-o", str(tmp_path / "rec"), str(summary), *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0] and "--prometheus" in err[0]
    assert not (tmp_path / "rec").exists()


def test_a_configz_flag_given_a_pod_list_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary, pods = _crashloop_files(tmp_path)
    assert main(["import", "-o", str(tmp_path / "rec"), str(summary), "--configz", str(pods)]) == 2
    err = capsys.readouterr().err.strip()
    assert "KubeletConfiguration" in err and str(pods) in err
    assert not (tmp_path / "rec").exists()


def test_a_recording_without_pods_says_no_pods_were_known_where_a_threshold_was_met(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, _pods = _crashloop_files(tmp_path)
    assert (
        main(["import", "-o", str(tmp_path / "rec"), str(summary), "--config", str(SAMPLE / "kubelet-config.yaml")])
        == 0
    )
    replayed = _json(capsys, "replay", str(tmp_path / "rec"), "--kubelet-version", "1.30", "--json")
    assert replayed["evictions"] == []
    assert any("kind-worker: no pods known at 1 pass where a threshold was met" in n for n in replayed["notes"])
    assert any("pass the pod list" in n for n in replayed["notes"])


def test_explain_with_pods_that_have_no_stats_in_the_summary_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, pods = _crashloop_files(tmp_path)
    doc = json.loads(pods.read_text())
    for i, pod in enumerate(doc["items"]):  # the same pods at another time: other UIDs, no nodeName
        pod["metadata"]["uid"] = f"other-{i}"
        pod["spec"].pop("nodeName", None)
    pods.write_text(json.dumps(doc))
    explained = _json(capsys, "explain", "--summary", str(summary), "--pods", str(pods), "--json")
    assert any("none of the 4 pods given has stats in this summary" in n for n in explained["notes"])


def _with_old_oom_kill(pods: Path, finished_at: str) -> None:
    doc = json.loads(pods.read_text())
    pod = doc["items"][0]
    pod["status"]["containerStatuses"] = [
        {
            "name": "el1",
            "ready": True,
            "restartCount": 1,
            "state": {"running": {"startedAt": finished_at}},
            "lastState": {
                "terminated": {
                    "exitCode": 137,
                    "reason": "OOMKilled",
                    "finishedAt": finished_at,
                    "startedAt": finished_at,
                }
            },
        }
    ]
    pods.write_text(json.dumps(doc))


@pytest.mark.parametrize(("finished_at", "counted"), [("2024-05-14T09:00:00Z", 0), ("2024-05-20T10:15:45Z", 1)])
def test_only_kernel_kills_from_the_recordings_first_tick_on_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], finished_at: str, counted: int
) -> None:
    summary, pods = _crashloop_files(tmp_path)
    _with_old_oom_kill(pods, finished_at)
    s2 = json.loads(summary.read_text())  # a second tick after the kill, so a kill at 10:15:45 is inside
    for section in ("memory", "fs", "rlimit"):
        s2["node"][section]["time"] = "2024-05-20T10:15:52Z"
    (tmp_path / "s2.json").write_text(json.dumps(s2))
    assert main(["import", "-o", str(tmp_path / "rec"), str(summary), str(tmp_path / "s2.json"), str(pods)]) == 0
    replayed = _json(capsys, "replay", str(tmp_path / "rec"), "--json")
    assert len(replayed["kernel_kills"]) == counted
    old = [n for n in replayed["notes"] if "from before the recording's first tick" in n]
    assert len(old) == 1 - counted
