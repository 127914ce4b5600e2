"""Closed loop for scenarios (issue 16): a scenario recording keeps its scenario, and a what-if or replay with
other settings regenerates the loop per variant, so the variant's evictions are exact (the pod evicted by the
generating kubelet no longer hides a lower threshold's eviction)."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from scenario_copy import without_scenario

from recordings.reader import open_recording
from recordings.scenarios import load_scenario
from replay.cli import main
from replay.engine import replay
from replay.kubelet.config import FlagOverrides
from replay.scenario import CLOSED_LOOP, DOCUMENT, GENERATED_WITH, generated_with, run_scenario
from replay.settings import SettingsRequest

KI = 1024
MI = 1 << 20
GI = 1 << 30

# A 3 GiB k3d agent with the k3d flag eviction-hard=memory.available<1Gi. The system uses 743703Ki; a bare pod
# starts at 10s holding 1000Mi and grows 50 MiB/s from 50s. memory.available = capacity − node working set:
#   t ≤ 0s : 3145728Ki − 743703Ki                       = 2402025Ki
#   10–50s : 2402025Ki − 1000Mi (1024000Ki)             = 1378025Ki  (< 1.5Gi: a 1.5Gi soft threshold is met)
#   60s    : 1378025Ki − 10 s × 50Mi (512000Ki)         =  866025Ki  (< 1Gi: the generating kubelet evicts)
#   70s    :  866025Ki − 512000Ki                       =  354025Ki  (< 500Mi: a 500Mi kubelet evicts here)
# (the pods cgroup, allocatableMemory.available, stays above both thresholds: its limit is the full 3Gi).
K3D = """\
kind: Scenario
name: k3d-growing-pod
interval: 10s
duration: 2m
kubelet:
  version: v1.30.6+k3s1
  flags: ["--kubelet-arg=eviction-hard=memory.available<1Gi@agent:*"]
nodes:
  - name: k3d-dev-agent-0
    capacity: {cpu: "4", memory: 3Gi, ephemeral-storage: 60Gi, pods: "110"}
    system: {memory: 743703Ki, imagefs: 3Gi, nodefs: 8Gi, processes: 180}
pods:
  - start: 10s
    pod:
      metadata: {name: memory-hog, namespace: default}
      spec:
        containers: [{name: stress, image: polinux/stress}]
    usage:
      stress: {memory: {grow: {from: 1000Mi, by: 50Mi, every: 1s, start: 40s}}}
"""
AVAILABLE_AT_70S = 3 * GI // KI - 743703 - 1000 * MI // KI - 20 * 50 * MI // KI
HOG = ("default", "memory-hog")


@pytest.fixture(scope="module")
def k3d(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("k3d")
    (tmp / "k3d.yaml").write_text(textwrap.dedent(K3D))
    out = tmp / "rec"
    outcome = run_scenario(load_scenario(tmp / "k3d.yaml"), out)
    (ev,) = outcome.evictions
    assert (ev.pod, ev.time.isoformat()) == ("memory-hog", "2025-01-01T00:01:00+00:00")
    assert "Threshold quantity: 1Gi, available: 866025Ki" in ev.message
    return out


def _whatif(rec: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> Any:
    assert main(["whatif", str(rec), *flags, "--json", "--jobs", "1"]) == 0
    return json.loads(capsys.readouterr().out)


LOW = SettingsRequest(label="low", overrides=FlagOverrides(eviction_hard=("memory.available<500Mi",)))


def test_the_acceptance_number_is_what_the_yaml_gives() -> None:
    assert AVAILABLE_AT_70S == 354025


def test_a_scenario_recording_keeps_its_document_and_generating_settings(k3d: Path) -> None:
    rec = open_recording(k3d)
    assert rec.manifest.options[DOCUMENT] == textwrap.dedent(K3D)
    assert rec.manifest.options[GENERATED_WITH] == {"kubelet_version": None, "kubelet_flags": [], "feature_gates": {}}
    gen = generated_with(rec)
    assert gen is not None and gen.file == "k3d.yaml"


def test_a_lower_hard_threshold_evicts_the_same_pod_10s_later_with_the_exact_message(
    k3d: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _whatif(k3d, capsys, "--eviction-hard", "memory.available<500Mi")
    base, low = doc["pods"][0]["variants"]
    assert doc["pods"][0]["pod"] == "memory-hog"
    assert base["time"] == "2025-01-01T00:01:00Z" and low["time"] == "2025-01-01T00:01:10Z"
    assert "Threshold quantity: 500Mi, available: 354025Ki" in low["message"]
    assert [v["closed_loop"] for v in doc["variants"]] == [False, True]


def test_a_soft_threshold_evicts_its_grace_period_after_it_is_first_met(k3d: Path) -> None:
    rec = open_recording(k3d)
    soft = SettingsRequest(
        label="soft",
        overrides=FlagOverrides(
            eviction_soft=("memory.available<1.5Gi",), eviction_soft_grace_period=("memory.available=30s",)
        ),
    )
    (result,) = replay(rec, [soft], jobs=1)
    signals = result.signals.collect()
    met = signals.filter(
        (signals["signal"] == "memory.available") & signals["met"] & (signals["threshold_value"] == 1536 * MI)
    )
    first_met: datetime = met["time"].min()  # type: ignore[assignment]
    (ev,) = result.evictions
    assert first_met.isoformat() == "2025-01-01T00:00:10+00:00"
    assert (ev.pod, ev.time.isoformat(), ev.hard) == ("memory-hog", "2025-01-01T00:00:40+00:00", False)
    assert "Threshold quantity: 1536Mi, available: 1378025Ki" in ev.message
    assert result.notes[0].startswith(CLOSED_LOOP)
    assert result.settings["closed_loop"] == CLOSED_LOOP
    assert all(n.horizon is None for n in result.nodes)


def test_the_recorded_settings_replay_the_recording_itself(k3d: Path) -> None:
    (result,) = replay(open_recording(k3d), [SettingsRequest()], jobs=1)
    assert "closed_loop" not in result.settings
    assert [(e.pod, e.time.isoformat()) for e in result.evictions] == [("memory-hog", "2025-01-01T00:01:00+00:00")]
    assert all(m.same_message for m in result.matches)


def test_the_replay_command_regenerates_too(k3d: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(k3d), "--eviction-hard", "memory.available<500Mi", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "available: 354025Ki" in out and CLOSED_LOOP in out


def test_an_old_scenario_recording_without_its_document_replays_open_loop(k3d: Path, tmp_path: Path) -> None:
    old = without_scenario(k3d, tmp_path / "plain")
    (result,) = replay(open_recording(old), [LOW], jobs=1)
    assert result.evictions == () and "closed_loop" not in result.settings


def test_an_explicit_allocatable_follows_a_new_hard_threshold_with_reserved_fixed(tmp_path: Path) -> None:
    stated = textwrap.dedent(K3D).replace('pods: "110"}', 'pods: "110"}\n    allocatable: {memory: 1.5Gi}')
    (tmp_path / "s.yaml").write_text(stated)
    as_written = load_scenario(tmp_path / "s.yaml").nodes[0]
    assert as_written.allocatable["memory"] == "1.5Gi"  # as stated: reserved = 3Gi − 1.5Gi − 1Gi = 512Mi
    assert as_written.pods_memory_limit == 3 * GI - 512 * MI
    lower = load_scenario(tmp_path / "s.yaml", kubelet_flags=["--eviction-hard=memory.available<500Mi"]).nodes[0]
    assert lower.pods_memory_limit == as_written.pods_memory_limit  # what the node reserves stays
    assert lower.allocatable["memory"] == f"{(3 * GI - 512 * MI - 500 * MI) // KI}Ki"  # capacity − reserved − hard


def test_a_regenerated_variant_of_a_stated_allocatable_evicts_on_memory_available_not_earlier(tmp_path: Path) -> None:
    stated = textwrap.dedent(K3D).replace('pods: "110"}', 'pods: "110"}\n    allocatable: {memory: 2Gi}')
    (tmp_path / "s.yaml").write_text(stated)
    out = tmp_path / "rec"
    run_scenario(load_scenario(tmp_path / "s.yaml"), out)
    low = SettingsRequest(label="low", overrides=FlagOverrides(eviction_hard=("memory.available<500Mi",)))
    (result,) = replay(open_recording(out), [low], jobs=1)
    (ev,) = result.evictions
    assert (ev.time.isoformat(), ev.signal) == ("2025-01-01T00:01:10+00:00", "memory.available")
    assert "Threshold quantity: 500Mi, available: 354025Ki" in ev.message


def test_a_scenario_generated_as_another_kubelet_regenerates_as_that_kubelet(
    k3d: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rec132"
    source = k3d.parent / "k3d.yaml"
    assert main(["scenario", str(source), "-o", str(out), "--kubelet-version", "1.32", "--json"]) == 0
    capsys.readouterr()
    rec = open_recording(out)
    assert rec.manifest.options[GENERATED_WITH]["kubelet_version"] == "1.32"
    low = SettingsRequest(label="low", overrides=FlagOverrides(eviction_hard=("memory.available<500Mi",)))
    (result,) = replay(rec, [low], jobs=1)
    assert [n.kubelet_version for n in result.nodes] == ["1.32"]
    assert [e.time.isoformat() for e in result.evictions] == ["2025-01-01T00:01:10+00:00"]


def test_whatif_defaults_to_the_counterfactual_and_as_recorded_opens_the_loop() -> None:
    import argparse

    from replay.cli.whatif import add_whatif_parser, variants_from_args

    parser = argparse.ArgumentParser()
    add_whatif_parser(parser.add_subparsers())
    flags = ["whatif", "rec", "--eviction-hard", "memory.available<500Mi"]
    assert all(v.request.counterfactual for v in variants_from_args(parser.parse_args(flags)))
    assert all(v.request.counterfactual for v in variants_from_args(parser.parse_args([*flags, "--counterfactual"])))
    assert not any(v.request.counterfactual for v in variants_from_args(parser.parse_args([*flags, "--as-recorded"])))


def test_the_whatif_table_says_the_regenerated_variant_is_exact(k3d: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(k3d), "--eviction-hard", "memory.available<500Mi", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "#1: closed loop: regenerated from the scenario" in out and "exact throughout" in out
    assert "#0" not in out.split("#1: closed loop")[0].split("┘")[-1]  # the baseline replays the recording as is


def test_a_config_document_variant_replays_the_recording_and_says_it_was_not_regenerated(k3d: Path) -> None:
    from replay.settings import Baseline

    # a field the scenario's kubelet does not model: the document cannot be put into it (replay.scenario
    # document_flags); one with only eviction fields is regenerated (tests/replay/test_tune_jvm_spike.py)
    doc = {
        "kind": "KubeletConfiguration",
        "evictionHard": {"memory.available": "500Mi"},
        "imageGCHighThresholdPercent": 85,
    }
    config = SettingsRequest(label="config", baseline=Baseline(doc, "kubelet.yaml"))
    low = SettingsRequest(label="low", overrides=FlagOverrides(eviction_hard=("memory.available<500Mi",)))
    as_config, regenerated = replay(open_recording(k3d), [config, low], jobs=1)
    assert as_config.evictions == () and "closed_loop" not in as_config.settings  # open loop: the pod was gone
    assert any("not regenerated from the scenario" in n for n in as_config.notes)
    assert [e.time.isoformat() for e in regenerated.evictions] == ["2025-01-01T00:01:10+00:00"]


def test_explain_at_a_moment_with_other_settings_explains_the_regenerated_run(k3d: Path) -> None:
    """At 70s the recorded hog is gone (evicted at 60s by the 1Gi kubelet); a 500Mi kubelet evicts it there."""
    from replay.engine import Moment
    from replay.moment import explain_moment

    for moment in (Moment(at=datetime.fromisoformat("2025-01-01T00:01:10+00:00")), Moment(tick=7)):
        explanation = explain_moment(open_recording(k3d), LOW, "k3d-dev-agent-0", moment)
        (evicted,) = explanation.result.evictions
        assert evicted.pod.name == "memory-hog"
        assert "Threshold quantity: 500Mi, available: 354025Ki" in evicted.message
        assert any(n.startswith(CLOSED_LOOP) for n in explanation.notes)


def test_explain_with_other_settings_past_where_the_recording_parts_ways_says_so(k3d: Path, tmp_path: Path) -> None:
    """A 1.5Gi kubelet evicts the hog at 10s; the recording kept it until 60s: a pass at 90s reads a world these
    settings would have changed, one at 0s is still the recording's."""
    from replay.engine import Moment
    from replay.moment import explain_moment

    rec = open_recording(without_scenario(k3d, tmp_path / "plain"))
    high = SettingsRequest(label="high", overrides=FlagOverrides(eviction_hard=("memory.available<1.5Gi",)))
    late = explain_moment(rec, high, None, Moment(at=datetime.fromisoformat("2025-01-01T00:01:30+00:00")))
    (note,) = [n for n in late.notes if n.startswith("as recorded only until")]
    assert "2025-01-01T00:00:10+00:00" in note and "memory-hog" in note
    early = explain_moment(rec, high, None, Moment(at=datetime.fromisoformat("2025-01-01T00:00:05+00:00")))
    assert not any(n.startswith("as recorded only until") for n in early.notes)
    recorded = explain_moment(
        rec, SettingsRequest(), None, Moment(at=datetime.fromisoformat("2025-01-01T00:01:30+00:00"))
    )
    assert not any(n.startswith("as recorded only until") for n in recorded.notes)
