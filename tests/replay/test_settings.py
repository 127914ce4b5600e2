"""Every eviction flag applies on top of whatever the baseline is, each node with its own version's rules."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from recbuild import CONFIGZ, T0, Observation, Plan, Tick, node_object, pods, sidecar_recording, summary_at, write

from kube.errors import InputError
from recordings.reader import open_recording
from replay.cli import main
from replay.cli.args import request_from_args
from replay.cli.replay import add_replay_parser
from replay.engine import replay_recording
from replay.results import NodeResult

BASELINES = ["none", "recorded-configz", "--config", "--configz"]
MINUTE_NS = 60 * 10**9


def _args(argv: list[str]) -> Any:
    import argparse

    parser = argparse.ArgumentParser()
    add_replay_parser(parser.add_subparsers())
    return parser.parse_args(["replay", *argv])


def _replay(tmp_path: Path, baseline: str, flags: list[str], version: str = "1.32") -> NodeResult:
    rec = sidecar_recording(tmp_path / "rec", configz=CONFIGZ if baseline == "recorded-configz" else None)
    extra: list[str] = []
    if baseline == "--config":
        path = tmp_path / "kubelet.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubelet.config.k8s.io/v1beta1",
                    "kind": "KubeletConfiguration",
                    "evictionHard": {"memory.available": "1.5Gi"},
                }
            )
        )
        extra = ["--config", str(path)]
    elif baseline == "--configz":
        path = tmp_path / "configz.json"
        path.write_text(json.dumps(CONFIGZ))
        extra = ["--configz", str(path)]
    args = _args([str(rec), "--kubelet-version", version, *extra, *flags])
    (node,) = replay_recording(open_recording(rec), request_from_args(args)).nodes
    return node


def _texts(node: NodeResult) -> list[str]:
    """``memory.available<500Mi`` for each hard threshold, ``… (soft)`` for soft ones."""
    return [t.text.replace(" (hard)", "") if t.hard else t.text.split(" (")[0] + " (soft)" for t in node.thresholds]


@pytest.mark.parametrize("baseline", BASELINES)
def test_eviction_hard_replaces_the_baselines_hard_thresholds(tmp_path: Path, baseline: str) -> None:
    node = _replay(tmp_path, baseline, ["--eviction-hard", "memory.available<500Mi"])
    assert "memory.available<500Mi" in _texts(node) and "memory.available<1.5Gi" not in _texts(node)
    assert not any(t.startswith("nodefs.available") for t in _texts(node))  # the flag replaces the whole map
    assert node.settings_sources["evictionHard"] == "--eviction-hard"


@pytest.mark.parametrize("baseline", BASELINES)
def test_eviction_soft_with_its_grace_period_applies(tmp_path: Path, baseline: str) -> None:
    node = _replay(
        tmp_path,
        baseline,
        ["--eviction-soft", "memory.available<2Gi", "--eviction-soft-grace-period", "memory.available=1m30s"],
    )
    (soft,) = [t for t in node.thresholds if not t.hard]
    assert (soft.signal, soft.quantity, soft.grace_period_ns) == ("memory.available", 2 << 30, 90 * 10**9)
    assert node.settings_sources["evictionSoft"] == "--eviction-soft"
    assert node.settings_sources["evictionSoftGracePeriod"] == "--eviction-soft-grace-period"


@pytest.mark.parametrize("baseline", BASELINES)
def test_eviction_minimum_reclaim_applies_to_the_baselines_threshold(tmp_path: Path, baseline: str) -> None:
    node = _replay(tmp_path, baseline, ["--eviction-minimum-reclaim", "memory.available=500Mi"])
    memory = [t for t in node.thresholds if t.signal == "memory.available"]
    assert memory and all(t.min_reclaim_quantity == 500 << 20 for t in memory)
    assert node.settings_sources["evictionMinimumReclaim"] == "--eviction-minimum-reclaim"


@pytest.mark.parametrize("baseline", BASELINES)
def test_eviction_max_pod_grace_period_applies(tmp_path: Path, baseline: str) -> None:
    node = _replay(tmp_path, baseline, ["--eviction-max-pod-grace-period", "45"])
    assert node.max_pod_grace_period_s == 45
    assert node.settings_sources["evictionMaxPodGracePeriod"] == "--eviction-max-pod-grace-period"


@pytest.mark.parametrize("baseline", BASELINES)
def test_eviction_pressure_transition_period_applies(tmp_path: Path, baseline: str) -> None:
    node = _replay(tmp_path, baseline, ["--eviction-pressure-transition-period", "1m"])
    assert node.pressure_transition_period_ns == MINUTE_NS
    assert node.settings_sources["evictionPressureTransitionPeriod"] == "--eviction-pressure-transition-period"


@pytest.mark.parametrize("baseline", BASELINES)
def test_without_flags_each_field_names_its_baseline(tmp_path: Path, baseline: str) -> None:
    node = _replay(tmp_path, baseline, [])
    expected = {
        "none": "defaults of kubelet 1.32",
        "recorded-configz": "recorded /configz of kind-worker",
        "--config": str(tmp_path / "kubelet.yaml"),
        "--configz": str(tmp_path / "configz.json"),
    }[baseline]
    assert node.settings_sources["evictionHard"] == expected
    assert node.pressure_transition_period_ns == 5 * MINUTE_NS


def test_the_transition_period_flag_shortens_how_long_the_condition_is_held(tmp_path: Path) -> None:
    rec = sidecar_recording(tmp_path / "rec", lows=(False, True, False, False, False, False, False, False, False))
    args = _args([str(rec), "--eviction-pressure-transition-period", "30s"])
    result = replay_recording(open_recording(rec), request_from_args(args))
    (row,) = result.conditions.to_dicts()
    assert (row["from_tick"], row["to_tick"]) == (1, 4)  # last met at 10 s: held while less than 30 s ago


def test_a_grace_period_for_a_signal_without_soft_threshold_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["replay", str(rec), "--eviction-soft-grace-period", "memory.available=1m"]) == 2
    err = capsys.readouterr().err
    assert "--eviction-soft-grace-period" in err and "no soft threshold for memory.available" in err
    assert err.count("\n") == 1


def test_a_minimum_reclaim_for_a_signal_without_threshold_is_an_error(tmp_path: Path) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    args = _args([str(rec), "--eviction-minimum-reclaim", "pid.available=100"])
    with pytest.raises(InputError, match=r"no threshold for pid\.available"):
        replay_recording(open_recording(rec), request_from_args(args))


def _two_versions(root: Path) -> Path:
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    for name, version in (("old", "v1.29.4"), ("new", "v1.30.1")):
        for p in pods(name):
            p["metadata"]["uid"] += name
            plan.objects.append(Observation(start, "pod", p))
        plan.objects.append(Observation(start, "node", node_object(name, version)))
    for i in range(2):
        when = T0 + timedelta(seconds=10 * i)
        plan.ticks.append(Tick(when, {n: summary_at(when, 4 << 30, n) for n in ("old", "new")}))
    return write(root, plan)


def test_each_node_gets_its_own_versions_defaults(tmp_path: Path) -> None:
    result = replay_recording(open_recording(_two_versions(tmp_path / "rec")))
    old, new = result.node("old"), result.node("new")
    assert (old.kubelet_version, new.kubelet_version) == ("1.29", "1.30")
    assert "imagefs.inodesFree<5%" not in _texts(old)  # DefaultEvictionHard gained it in 1.30 (PR #121834)
    assert "imagefs.inodesFree<5%" in _texts(new)
    assert old.settings_sources["evictionHard"] == "defaults of kubelet 1.29"


def test_a_config_file_is_read_with_each_nodes_version(tmp_path: Path) -> None:
    rec = _two_versions(tmp_path / "rec")
    path = tmp_path / "kubelet.yaml"
    path.write_text(
        "kind: KubeletConfiguration\nevictionSoft:\n  memory.available: 1Gi\n"
        "evictionSoftGracePeriod:\n  memory.available: 1m\n"
    )
    result = replay_recording(open_recording(rec), request_from_args(_args([str(rec), "--config", str(path)])))
    assert "imagefs.inodesFree<5%" in _texts(result.node("new")) and "imagefs.inodesFree<5%" not in _texts(
        result.node("old")
    )
    assert result.node("old").settings_sources["evictionHard"].startswith("defaults of kubelet 1.29")


def test_a_field_the_nodes_version_does_not_have_is_an_error_naming_the_node(tmp_path: Path) -> None:
    rec = _two_versions(tmp_path / "rec")
    path = tmp_path / "kubelet.yaml"
    path.write_text(
        "kind: KubeletConfiguration\nmergeDefaultEvictionSettings: true\nevictionHard:\n  memory.available: 1Gi\n"
    )
    with pytest.raises(InputError, match=r"not a field of kubelet 1.30 .*\(node new, kubelet 1.30\)"):
        replay_recording(open_recording(rec), request_from_args(_args([str(rec), "--config", str(path)])))


def test_the_output_states_effective_settings_and_their_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["replay", str(rec), "--eviction-pressure-transition-period", "1m"]) == 0
    out = capsys.readouterr().out
    assert "pressure transition period" in out and "1m0s" in out and "--eviction-pressure-transition-period" in out
    assert "recorded /configz of kind-worker" in out


def test_feature_gates_of_the_recorded_configz_apply_and_the_flag_wins(tmp_path: Path) -> None:
    configz = {
        "kubeletconfig": {
            **CONFIGZ["kubeletconfig"],
            "featureGates": {"InPlacePodVerticalScaling": True, "CPUManager": True},
        }
    }
    rec = sidecar_recording(tmp_path / "rec", configz=configz)
    (node,) = replay_recording(
        open_recording(rec), request_from_args(_args([str(rec), "--kubelet-version", "1.30"]))
    ).nodes
    assert "feature gates InPlacePodVerticalScaling=True from recorded /configz of kind-worker" in node.version_source
    args = _args([str(rec), "--kubelet-version", "1.30", "--feature-gates", "InPlacePodVerticalScaling=false"])
    (node,) = replay_recording(open_recording(rec), request_from_args(args)).nodes
    assert "feature gates" not in node.version_source
