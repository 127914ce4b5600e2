"""Issue 17's acceptance for ``evictlens tune`` on the bundled ``jvm-spike`` scenario: the default
``memory.available<100Mi`` loses the race to the kernel (its row shows the OOM), tune recommends settings with 0
kernel kills, and the recommended snippet loads with ``replay --config`` and replays with 0 kernel kills; the same
workload as a plain recording gets the counterfactual answer with its horizon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from scenario_copy import without_scenario

from recordings.scenarios import bundled_names
from replay.cli import main

pytestmark = pytest.mark.skipif(
    "jvm-spike" not in bundled_names(), reason="the bundled jvm-spike scenario (issue 17 item 5) is not in this tree"
)
JVM = "shop/orders-jvm-7d9c6b8f5-k2xqp"


@pytest.fixture(scope="module")
def rec(jvm_spike_rec: Path) -> Path:
    return jvm_spike_rec


@pytest.fixture(scope="module")
def tuned(rec: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``evictlens tune REC -o OUT`` with the default search space, and what it printed."""
    out = tmp_path_factory.mktemp("tune") / "out"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["tune", str(rec), "-o", str(out), "--jobs", "1"]) == 0
    return out, buffer.getvalue()


def _doc(out: Path) -> dict[str, Any]:
    return dict(json.loads((out / "tune.json").read_text()))


def test_tune_recommends_settings_with_no_kernel_kill_and_shows_the_defaults_oom(tuned: tuple[Path, str]) -> None:
    out, text = tuned
    doc = _doc(out)
    current = doc["candidates"][0]
    assert (
        current["label"] == "current settings: memory.available<100Mi (hard)"
        and current["kernel_kills"] == 1
        and current["evictions"] == 0
    )
    assert current["first_kill"]["time"] == "2025-01-01T00:03:24Z" and "process java" in current["first_kill"]["what"]
    pick = doc["candidates"][doc["recommendation"]["index"]]
    assert pick["kernel_kills"] == 0 and pick["eligible"] and pick["on_front"] and pick["closed_loop"]
    assert pick["first_eviction"]["pod"] == JVM  # the kubelet evicts the JVM before the spike instead
    assert pick["first_eviction"]["time"] < "2025-01-01T00:03:24Z"
    assert doc["mode"] == "closed loop (scenario)" and doc["sampling"] == "the whole grid: 25 candidates"
    # the table: the current settings' row (its kill in red on a terminal, a 1 here) above the front
    table_rows = [line for line in text.splitlines() if line.startswith("│")]
    assert "current settings" in table_rows[0] and table_rows[0].split("│")[3].strip() == "1"
    assert all(r.split("│")[3].strip() == "0" for r in table_rows[1:])
    assert "the kernel kills first, at 2025-01-01T00:03:24Z on worker-1: SystemOOM process java" in text
    assert f"the kubelet acts first instead, evicting {JVM} on worker-1" in text
    assert "apiVersion: kubelet.config.k8s.io/v1beta1" in text and "kind: KubeletConfiguration" in text


def test_the_recommended_snippet_replays_with_config_and_no_kernel_kill(
    rec: Path, tuned: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    out, _ = tuned
    snippet = out / "recommended.yaml"
    assert (snippet.stat().st_mode & 0o777) == 0o600
    capsys.readouterr()
    assert main(["replay", str(rec), "--config", str(snippet), "--json", "--jobs", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kernel_kills"] == []
    assert result["settings"]["config_source"] == str(snippet) and "closed_loop" in result["settings"]
    picked = _doc(out)["candidates"][_doc(out)["recommendation"]["index"]]
    assert [(e["namespace"] + "/" + e["pod"], e["time"]) for e in result["evictions"]][:1] == [
        (picked["first_eviction"]["pod"], picked["first_eviction"]["time"])
    ]
    # the same snippet without regeneration would be the recording's world: its kill is still there
    assert main(["replay", str(rec), "--json", "--jobs", "1"]) == 0
    assert len(json.loads(capsys.readouterr().out)["kernel_kills"]) == 2  # SystemOOM + the OOMKilled container


def test_the_write_ups_settings_are_a_candidate_that_evicts_at_2m40_with_no_kernel_kill(
    tuned: tuple[Path, str],
) -> None:
    doc = _doc(tuned[0])
    (advice,) = [c for c in doc["candidates"] if c["label"] == "hard 10%, soft 20%/30s"]
    assert advice["kernel_kills"] == 0 and advice["first_eviction"]["time"] == "2025-01-01T00:02:40Z"
    (default,) = [c for c in doc["candidates"] if c["label"] == "hard 100Mi, no soft"]
    assert default["kernel_kills"] == 1  # the defaults written out: the same race, the same kill
    slow = [c for c in doc["candidates"] if c["label"] == "hard 10%, soft 20%/1m30s"]
    assert slow and slow[0]["kernel_kills"] == 1  # a grace period longer than the time left loses it too


def test_the_same_workload_as_a_plain_recording_gets_the_counterfactual_with_horizons(
    rec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = without_scenario(rec, tmp_path / "plain")
    argv = ["tune", str(plain), "--memory-hard", "100Mi,10%", "--memory-soft", "none,20%", "--soft-grace", "30s"]
    assert main([*argv, "--json", "--jobs", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "counterfactual (recording)"
    by = {c["label"]: c for c in doc["candidates"]}
    current = doc["candidates"][0]
    assert current["kernel_kills"] == 1 and current["oom_risk"] == 1 and current["as_recorded_until"] is None
    assert by["hard 100Mi, no soft"]["kernel_kills"] == 1  # the recorded kill, before anything parts the worlds
    advice = by["hard 10%, soft 20%/30s"]
    assert advice["kernel_kills"] == 0 and advice["oom_risk"] == 0 and advice["eligible"]
    assert advice["as_recorded_until"] == "2025-01-01T00:02:40Z" and advice["not_judged_after_horizon"] == 2
    assert main([*argv, "--kube-reserved", "1Gi"]) == 2  # reserved cannot be searched counterfactually
    assert "--kube-reserved" in capsys.readouterr().err
    assert main([*argv, "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    assert (
        "as recorded until" in text and "reserved memory (--kube-reserved/--system-reserved) cannot be searched" in text
    )


def test_a_config_document_of_eviction_fields_regenerates_a_scenario_recording_like_the_same_flags(rec: Path) -> None:
    from recordings.reader import open_recording
    from replay.engine import replay
    from replay.settings import Baseline, SettingsRequest
    from replay.tune import Candidate

    c = Candidate("10%", "10%", "20%", "30s")
    as_flags = SettingsRequest(label="flags", overrides=c.overrides())
    as_file = SettingsRequest(label="file", baseline=Baseline(c.document(), "kubelet.yaml"))
    a, b = replay(open_recording(rec), [as_flags, as_file], jobs=1, frames=False)
    assert a.settings["closed_loop"] and b.settings["closed_loop"]
    assert [(e.pod, e.time, e.message) for e in a.evictions] == [(e.pod, e.time, e.message) for e in b.evictions]
    assert a.kernel_kills == b.kernel_kills == ()


def test_reserved_memory_is_searched_on_a_scenario_and_moves_allocatable(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["tune", "jvm-spike", "--memory-hard", "100Mi", "--memory-soft", "none", "--system-reserved", "none,1Gi"]
    assert main([*argv, "--json", "--jobs", "1"]) == 1  # neither prevents the kill: a finding
    doc = json.loads(capsys.readouterr().out)
    plain, reserved = doc["candidates"][1:]
    assert reserved["label"] == "hard 100Mi, no soft, system-reserved 1Gi"
    assert reserved["withheld_bytes"] - plain["withheld_bytes"] == 1 << 30
    assert reserved["configuration"]["systemReserved"] == {"memory": "1Gi"}
    # nothing reserved: the node runs out (SystemOOM); 1Gi reserved: the pods' cgroup does, the node keeps its 1Gi
    assert "SystemOOM" in plain["first_kill"]["what"]
    assert reserved["first_kill"]["what"] == f"OOMKilled {JVM} orders"
