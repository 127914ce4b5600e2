"""Scenarios: usage for ephemeral containers, the literal k3d flag form, and ``scenario`` taking the
``--eviction-*`` flags (each replaces its field in every node's kubelet, as the kubelet flag does)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from recordings.reader import open_recording
from recordings.scenarios import ScenarioError, ScenarioRun, load_bundled, load_scenario
from replay.cli import main

MI = 1 << 20
GI = 1 << 30
BASE = """\
kind: Scenario
name: t
interval: 10s
duration: 1m
kubelet:
  version: v1.32.0
  config:
    evictionHard: {memory.available: 500Mi}
nodes:
  - name: n1
    capacity: {memory: 4Gi, ephemeral-storage: 50Gi}
    system: {memory: 1Gi, nodefs: 5Gi, imagefs: 2Gi, processes: 100}
pods:
  - pod:
      metadata: {name: p, namespace: default}
      spec:
        containers: [{name: app}]
    usage:
      app: {memory: 100Mi}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_an_ephemeral_container_can_be_given_usage(tmp_path: Path) -> None:
    text = BASE.replace(
        "containers: [{name: app}]",
        "containers: [{name: app}]\n        ephemeralContainers: [{name: debugger, image: busybox}]",
    )
    text += "      debugger: {memory: 64Mi, processes: 2}\n"
    tick = list(ScenarioRun(load_scenario(_write(tmp_path, text))).ticks())[1]
    (pod,) = tick.summaries["n1"]["pods"]
    assert [c["name"] for c in pod["containers"]] == ["app", "debugger"]
    assert pod["memory"]["workingSetBytes"] == 100 * MI + 64 * MI
    assert pod["process_stats"] == {"process_count": 1 + 2}


def test_usage_for_a_container_the_pod_lacks_still_names_the_ephemeral_ones(tmp_path: Path) -> None:
    text = BASE.replace(
        "containers: [{name: app}]", "containers: [{name: app}]\n        ephemeralContainers: [{name: debugger}]"
    )
    text += "      nope: {memory: 1Mi}\n"
    with pytest.raises(ScenarioError, match=r"no container 'nope' in pod p \(containers: app, debugger\)"):
        load_scenario(_write(tmp_path, text))


@pytest.mark.parametrize(
    "flag",
    [
        "--kubelet-arg=eviction-hard=memory.available<1Gi",
        "--kubelet-arg=--eviction-hard=memory.available<1Gi@agent:*",
        "kubelet-arg=eviction-hard=memory.available<1Gi@server:0",
    ],
)
def test_the_literal_k3d_flag_form_is_accepted(tmp_path: Path, flag: str) -> None:
    text = BASE.replace("  config:\n    evictionHard: {memory.available: 500Mi}", f"  flags: ['{flag}']")
    config = load_scenario(_write(tmp_path, text)).nodes[0].kubelet.configz()["kubeletconfig"]
    assert config["evictionHard"] == {"memory.available": "1Gi"}


def test_eviction_flags_replace_the_scenarios_fields_in_every_node(tmp_path: Path) -> None:
    flags = [
        "--eviction-hard=memory.available<1Gi",
        "--eviction-soft=memory.available<1.5Gi",
        "--eviction-soft-grace-period=memory.available=30s",
    ]
    node = load_scenario(_write(tmp_path, BASE), kubelet_flags=flags).nodes[0]
    config = node.kubelet.configz()["kubeletconfig"]
    assert config["evictionHard"] == {"memory.available": "1Gi"}
    assert config["evictionSoft"] == {"memory.available": "1.5Gi"}
    assert config["evictionSoftGracePeriod"] == {"memory.available": "30s"}
    assert node.allocatable["memory"] == f"{(4 * GI - GI) // 1024}Ki"  # allocatable follows the new threshold
    k3d = load_bundled("k3d-operator-pod", kubelet_flags=["--eviction-hard=memory.available<500Mi"])
    assert all(n.kubelet.configz()["kubeletconfig"]["evictionHard"] == {"memory.available": "500Mi"} for n in k3d.nodes)


def test_a_bad_override_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(_write(tmp_path, BASE), kubelet_flags=["--eviction-hard=memory.available<lots"])
    assert str(info.value).startswith("--eviction-hard") and "\n" not in str(info.value)


def test_the_scenario_command_takes_eviction_flags_and_records_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rec"
    assert (
        main(
            [
                "scenario",
                str(_write(tmp_path, BASE)),
                "-o",
                str(out),
                "--eviction-hard",
                "memory.available<3500Mi",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["evictions"] and doc["evictions"][0]["pod"] == "p"
    assert "Threshold quantity: 3500Mi" in doc["evictions"][0]["message"]
    rec = open_recording(out)
    assert rec.manifest.options["kubelet_flags"] == ["--eviction-hard=memory.available<3500Mi"]
    assert rec.configz("n1")["kubeletconfig"]["evictionHard"] == {"memory.available": "3500Mi"}
