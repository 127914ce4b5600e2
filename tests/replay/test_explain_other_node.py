"""``explain --summary --pods --node``: a node object or pods of another node than the summary's are named in
a note (the file-input path; a recording's moment is always one node's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "recordings" / "samples" / "kind-sidecars"


def _notes(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert (
        main(["explain", "--summary", str(SAMPLE / "summary.json"), "--kubelet-version", "1.32", *argv, "--json"]) == 0
    )
    notes: list[str] = json.loads(capsys.readouterr().out)["notes"]
    return notes


def test_a_node_object_of_another_node_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    node = json.loads((SAMPLE / "node.json").read_text())
    node["metadata"]["name"] = "other-worker"
    (tmp_path / "node.json").write_text(json.dumps(node))
    notes = _notes(capsys, "--node", str(tmp_path / "node.json"), "--pods", str(SAMPLE / "pods.json"))
    assert any("the node object is other-worker's but the summary is kind-worker's" in n for n in notes)


def test_pods_bound_to_another_node_are_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = json.loads((SAMPLE / "pods.json").read_text())
    pods["items"][0]["spec"]["nodeName"] = "other-worker"
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    notes = _notes(capsys, "--pods", str(tmp_path / "pods.json"), "--node", str(SAMPLE / "node.json"))
    total = len(pods["items"])
    assert any(f"1 of the {total} pods given are bound to another node (other-worker)" in n for n in notes)


def test_matching_files_give_no_such_note(capsys: pytest.CaptureFixture[str]) -> None:
    notes = _notes(capsys, "--pods", str(SAMPLE / "pods.json"), "--node", str(SAMPLE / "node.json"))
    assert not any("another node" in n or "but the summary is" in n for n in notes)
