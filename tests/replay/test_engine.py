"""`evictlens replay`: a recording through the manager, tick by tick, checked against real evictions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from recordings.importer import import_files
from recordings.reader import open_recording
from replay.cli import main
from replay.engine import replay_recording
from replay.kubelet.config import FlagOverrides
from replay.settings import SettingsRequest

SAMPLE = Path(__file__).resolve().parents[2] / "recordings" / "samples" / "kind-sidecars"
OBSERVED_1_30 = (
    "The node was low on resource: memory. Threshold quantity: 1536Mi, available: 1516448Ki. "
    "Container el1 was using 48Ki, request is 0, has larger consumption of memory. "
    "Container el2 was using 48Ki, request is 0, has larger consumption of memory. "
    "Container el3 was using 48Ki, request is 0, has larger consumption of memory. "
)


def _retime(obj: Any, when: str) -> Any:
    if isinstance(obj, dict):
        return {k: (when if k == "time" else _retime(v, when)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_retime(v, when) for v in obj]
    return obj


def _at(summary: dict[str, Any], when: str, available: int) -> dict[str, Any]:
    s: dict[str, Any] = _retime(copy.deepcopy(summary), when)
    s["node"]["memory"]["availableBytes"] = available
    return s


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """Five ticks, 10 s apart: plenty of memory, then below 1.5Gi from the third tick on."""
    base = json.loads((SAMPLE / "summary.json").read_text())
    files = []
    for i, available in enumerate([4 << 30, 3 << 30, 1516448 * 1024, 1516448 * 1024, 1516448 * 1024]):
        when = f"2024-05-20T10:15:{i * 10:02d}Z"
        path = tmp_path / f"s{i}.json"
        path.write_text(json.dumps(_at(base, when, available)))
        files.append(str(path))
    events = tmp_path / "events.json"
    events.write_text(
        json.dumps(
            {
                "kind": "EventList",
                "apiVersion": "v1",
                "items": [
                    {
                        "metadata": {"name": "alloc-sidecars.17d", "namespace": "default", "uid": "e1"},
                        "involvedObject": {
                            "kind": "Pod",
                            "namespace": "default",
                            "name": "alloc-sidecars",
                            "uid": "0d4e3c1a-6c1f-4a53-9a55-3d2f8f1b7e01",
                        },
                        "reason": "Evicted",
                        "type": "Warning",
                        "message": OBSERVED_1_30,
                        "lastTimestamp": "2024-05-20T10:15:21Z",
                        "source": {"component": "kubelet", "host": "kind-worker"},
                    }
                ],
            }
        )
    )
    import_files([*files, str(SAMPLE / "pods.json"), str(SAMPLE / "node.json"), str(events)], tmp_path / "rec")
    return tmp_path / "rec"


def _request(version: str, **flags: Any) -> SettingsRequest:
    overrides = FlagOverrides(**{"eviction_hard": ("memory.available<1.5Gi",), **flags})
    return SettingsRequest(kubelet_version=version, overrides=overrides)


def test_replay_at_1_30_predicts_the_real_eviction_byte_for_byte(recording: Path) -> None:
    result = replay_recording(open_recording(recording), _request("1.30"))
    (node,) = result.nodes
    assert node.passes == 5
    eviction = result.evictions[0]
    assert (eviction.pod, eviction.tick, eviction.grace_period_override) == ("alloc-sidecars", 2, 0)
    # memory stays low in the recording, so the next passes evict the next pods in rank order
    assert [e.pod for e in result.evictions[1:]] == ["kindnet-7xq2p"]
    (match,) = result.matches
    assert match.predicted_id == eviction.id and match.same_message and match.within_interval


def test_replay_at_1_32_names_the_sidecars_so_the_old_message_differs(recording: Path) -> None:
    result = replay_recording(open_recording(recording), _request("1.32"))
    (match,) = result.matches
    assert match.same_pod and not match.same_message
    assert "el-sidecar1" in result.evictions[0].message
    assert match.message_diff is not None and "{+Container el-sidecar1" in match.message_diff


def test_pressure_condition_raised_when_threshold_first_met(recording: Path) -> None:
    result = replay_recording(open_recording(recording), _request("1.32"))
    rows = result.conditions.to_dicts()
    assert [(r["condition"], r["from"].isoformat(), r["to"]) for r in rows] == [
        ("MemoryPressure", "2024-05-20T10:15:20+00:00", None)
    ]


def test_a_soft_threshold_waits_for_its_grace_period(recording: Path) -> None:
    request = _request(
        "1.32",
        eviction_hard=("memory.available<100Mi",),
        eviction_soft=("memory.available<1.5Gi",),
        eviction_soft_grace_period=("memory.available=15s",),
        eviction_max_pod_grace_period=30,
    )
    result = replay_recording(open_recording(recording), request)
    eviction = result.evictions[0]
    assert eviction.tick == 4  # met at tick 2 (t=20s), grace 15s satisfied at t=40s
    assert eviction.grace_period_override == 1  # min(30, terminationGracePeriodSeconds=1)


def test_replay_command_prints_json_and_a_summary(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "replay",
                str(recording),
                "--kubelet-version",
                "1.30",
                "--eviction-hard",
                "memory.available<1.5Gi",
                "--json",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["matches"][0]["same_message"] is True
    argv = ["replay", str(recording), "--kubelet-version", "1.30", "--eviction-hard", "memory.available<1.5Gi"]
    assert main(argv) == 0
    assert "1 real eviction: 1 matched by the replay, 1 with the exact message" in capsys.readouterr().out


def test_replay_of_a_missing_recording_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evictlens replay: ") and err.count("\n") == 1


def test_unknown_node_is_named(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(recording), "--node", "ghost"]) == 2
    assert "ghost" in capsys.readouterr().err
