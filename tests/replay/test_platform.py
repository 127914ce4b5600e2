"""A node's OS is never assumed silently: the node object names it, else the pods' ``kubernetes.io/os`` (the
Windows capture has no Node), else Linux is assumed and said; a Windows node gets the Windows kubelet's
defaults (eviction/defaults_windows.go) and memory signal (helpers_windows.go)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from recbuild import T0, Observation, Plan, Tick, node_object, pods, summary_at, write

from kube.errors import InputError
from recordings.reader import open_recording
from replay.cli import main
from replay.engine import replay_recording
from replay.settings import detect_platform

REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata" / "datadog-integrations-core"
WIN_SUMMARY = REALDATA / "stats_summary_windows.json"
WIN_PODS = REALDATA / "pods_windows.json"


def _windows_recording(root: Path) -> Path:
    """The datadog Windows capture (EKS, Windows Server 2019) as a recording: its summary and pods, no Node."""
    summary = json.loads(WIN_SUMMARY.read_text())
    node = summary["node"]["nodeName"]
    plan = Plan()
    for p in json.loads(WIN_PODS.read_text())["items"]:
        plan.objects.append(Observation(T0 - timedelta(seconds=30), "pod", p))
    plan.ticks.append(Tick(T0, {node: summary}))
    return write(root, plan)


def test_the_windows_capture_is_replayed_as_windows_and_says_why(tmp_path: Path) -> None:
    result = replay_recording(open_recording(_windows_recording(tmp_path / "rec")), version="1.32")
    (node,) = result.nodes
    assert node.platform == "windows"
    assert "platform windows from its pods' kubernetes.io/os" in node.version_source
    signals = {t.signal for t in node.thresholds}
    assert {"memory.available", "nodefs.available", "imagefs.available"} <= signals
    assert not signals & {"nodefs.inodesFree", "imagefs.inodesFree"}  # no inode defaults on Windows
    assert next(t for t in node.thresholds if t.signal == "memory.available").quantity == 500 * 1024**2


def test_a_node_nothing_names_the_os_of_is_assumed_linux_and_said(tmp_path: Path) -> None:
    plan = Plan(
        ticks=[Tick(T0, {"kind-worker": summary_at(T0, 4 << 30)})],
        objects=[Observation(T0 - timedelta(seconds=30), "pod", p) for p in pods()],
    )
    result = replay_recording(open_recording(write(tmp_path / "rec", plan)), version="1.32")
    assert result.nodes[0].platform == "linux"
    assert "platform linux assumed (no node object or pod names the OS)" in result.nodes[0].version_source


def test_the_node_object_names_the_os_without_a_note(tmp_path: Path) -> None:
    plan = Plan(
        ticks=[Tick(T0, {"kind-worker": summary_at(T0, 4 << 30)})],
        objects=[Observation(T0 - timedelta(seconds=30), "node", node_object())],
    )
    result = replay_recording(open_recording(write(tmp_path / "rec", plan)), version="1.32")
    assert result.nodes[0].platform == "linux" and "platform" not in result.nodes[0].version_source


def _pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ({"os": {"name": "windows"}}, "windows"),
        ({"nodeSelector": {"kubernetes.io/os": "windows"}}, "windows"),
        ({"nodeSelector": {"kubernetes.io/os": "linux"}}, "linux"),
    ],
)
def test_pods_name_the_os_by_spec_os_or_node_selector(spec: dict[str, Any], want: str) -> None:
    assert detect_platform(None, [_pod({}), _pod(spec)])[0] == want


def test_pods_demanding_two_operating_systems_are_one_line() -> None:
    with pytest.raises(InputError, match="different operating systems \\(linux, windows\\)"):
        detect_platform(None, [_pod({"os": {"name": "windows"}}), _pod({"os": {"name": "linux"}})])


def test_explain_of_the_windows_capture_says_windows_from_the_pods(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["explain", "--summary", str(WIN_SUMMARY), "--pods", str(WIN_PODS), "--kubelet-version", "1.32", "--json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert any("platform windows from its pods' kubernetes.io/os" in n for n in doc["notes"])
    assert any("no windows-global-commit-memory system container" in n for n in doc["notes"])
    assert "memory.available" not in [o["signal"] for o in doc["observations"]]
