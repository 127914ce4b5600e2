"""Output defects: the settings table lists only thresholds that can be met, once each; ``explain`` prints
the evicted pod's impact as ``replay`` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from recbuild import sidecar_recording

from recordings.reader import open_recording
from replay.cli import main
from replay.engine import replay_recording
from replay.replay_report import in_force, print_result


def test_settings_table_leaves_out_the_inert_containerfs_copies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.32")
    (node,) = result.nodes
    inert = [t for t in node.thresholds if not t.operator]
    assert {t.signal for t in inert} == {"containerfs.available", "containerfs.inodesFree"}  # still in results
    assert [t.signal for t in in_force(node.thresholds)] == ["memory.available", "allocatableMemory.available"]
    print_result(result)
    settings = capsys.readouterr().out.split("pressure transition period")[0]
    assert "containerfs" not in settings
    assert settings.count(" memory.available<1.5Gi (hard)") == settings.count("allocatableMemory.available<1.5Gi") == 1


def test_explain_prints_the_impact_of_the_eviction(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--sample", "kind-sidecars", "--kubelet-version", "1.32"]) == 0
    assert "impact: stays Failed: a bare pod, nothing recreates it" in capsys.readouterr().out
    assert main(["explain", "--sample", "kind-sidecars", "--kubelet-version", "1.32", "--json"]) == 0
    (eviction,) = json.loads(capsys.readouterr().out)["result"]["evictions"]
    assert eviction["impact"] == "stays Failed: a bare pod, nothing recreates it"
