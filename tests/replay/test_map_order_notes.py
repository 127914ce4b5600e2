"""Issue 29 item 3 in the front ends: explain and replay say when a decision is one of two the kubelet could make."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from recbuild import sidecar_recording
from rich.console import Console

from recordings.reader import open_recording
from replay.cli import main
from replay.engine import replay_recording
from replay.replay_report import print_result
from replay.results_io import load, write

GI = 1 << 30


def _summary(tmp_path: Path) -> Path:
    """memory.available and allocatableMemory.available both met, on other observations (200Mi vs 300Mi)."""
    doc = {
        "node": {
            "nodeName": "n1",
            "memory": {"availableBytes": 300 << 20, "workingSetBytes": 7 * GI + (724 << 20)},
            "systemContainers": [{"name": "pods", "memory": {"availableBytes": 200 << 20, "workingSetBytes": 6 * GI}}],
        },
        "pods": [
            {
                "podRef": {"name": "hog", "namespace": "default", "uid": "hog"},
                "memory": {"workingSetBytes": 6 * GI},
                "containers": [{"name": "hog", "memory": {"workingSetBytes": 6 * GI}}],
            }
        ],
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc))
    return path


def test_explain_notes_the_other_memory_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["explain", "--summary", str(_summary(tmp_path)), "--eviction-hard", "memory.available<500Mi"]
    assert main([*argv, "--kubelet-version", "1.30", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["threshold_to_reclaim"] == "allocatableMemory.available<500Mi (hard)"
    assert result["map_order_alternatives"] == ["memory.available<500Mi (hard)"]
    assert main([*argv, "--kubelet-version", "1.30"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "note: acted on allocatableMemory.available<500Mi (hard); a kubelet could as well have acted on" in text
    assert "one of 2 the real kubelet could have made" in text


def test_explain_without_a_second_decision_has_no_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["explain", "--summary", str(_summary(tmp_path)), "--eviction-hard", "memory.available<250Mi"]
    assert main([*argv, "--json"]) == 0  # only allocatableMemory.available (200Mi < 250Mi) is met
    assert json.loads(capsys.readouterr().out)["result"]["map_order_alternatives"] == []


def test_replay_results_keep_and_print_the_alternatives(tmp_path: Path) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    assert result.evictions and all(e.map_order_alternatives == () for e in result.evictions)
    first = replace(result.evictions[0], map_order_alternatives=("allocatableMemory.available<1536Mi (hard)",))
    result = replace(result, evictions=(first, *result.evictions[1:]))
    write(result, tmp_path / "out")
    back = load(tmp_path / "out")
    assert back.same_as(result)
    console = Console(width=300, record=True)
    print_result(back, console=console)
    text = console.export_text()
    assert "note: one of 2 decisions the real kubelet could have made at this pass" in text
    assert "allocatableMemory.available<1536Mi (hard)" in text
    # a result.json written before the key existed reads as no alternative
    doc_path = tmp_path / "out" / "result.json"
    doc = orjson.loads(doc_path.read_bytes())
    for e in doc["evictions"]:
        e.pop("map_order_alternatives")
    doc_path.write_bytes(orjson.dumps(doc))
    assert load(tmp_path / "out").evictions[0].map_order_alternatives == ()


def test_fast_path_and_reference_agree_on_the_alternatives(tmp_path: Path) -> None:
    """memory.available<4.2e9 meets allocatableMemory.available (≈3.87 GiB available in the sample's pods cgroup) at
    every tick and memory.available at the low ones (all of them here): both met on other numbers — two decisions."""
    from replay import engine
    from replay.collect import collect
    from replay.kubelet.config import FlagOverrides
    from replay.reference import Replay
    from replay.settings import SettingsRequest

    path = sidecar_recording(tmp_path / "rec", lows=(True, True, True))
    request = SettingsRequest(
        kubelet_version="1.30", overrides=FlagOverrides(eviction_hard=("memory.available<4200000000",))
    )
    (fast,) = engine.replay(open_recording(path), [request])
    replay = Replay(open_recording(path), request)
    slow = collect(replay, replay.passes())
    assert fast.evictions == slow.evictions and fast.same_as(slow)
    with_alternatives = [e for e in fast.evictions if e.map_order_alternatives]
    assert with_alternatives, [(e.signal, e.time) for e in fast.evictions]
    assert all(e.map_order_alternatives[0].startswith("memory.available<") for e in with_alternatives)
