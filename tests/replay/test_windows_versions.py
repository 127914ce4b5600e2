"""Issue 26 item 12: a Windows node is recognised by its summary's shape when nothing else names its OS, and is
evicted as a Windows kubelet of its version does: the commit-memory signal and the 500Mi default only from 1.31
(PR #122922, helpers_windows.go / defaults_windows.go); before, helpers.go's node.memory and defaults_others.go.
The signal per version is pinned by conformance vectors of our own (tests/kubelet/data/conformance/windows.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay.cli import main
from replay.conformance.runner import run_cases
from replay.conformance.vectors import load_cases
from replay.kubelet.config import default_eviction_hard
from replay.kubelet.versions import profile

VECTORS = Path(__file__).resolve().parents[1] / "kubelet" / "data" / "conformance" / "windows.json"


def test_the_windows_vectors_pass() -> None:
    results = run_cases(load_cases([str(VECTORS)]))
    assert results and all(r.status == "passed" for r in results), [r.failures for r in results]


@pytest.mark.parametrize(
    ("version", "memory"), [("1.29", "100Mi"), ("1.30", "100Mi"), ("1.31", "500Mi"), ("1.33", "500Mi")]
)
def test_windows_defaults_follow_the_version(version: str, memory: str) -> None:
    defaults = default_eviction_hard(profile(version), os="windows")
    assert defaults["memory.available"] == memory
    assert "nodefs.inodesFree" not in defaults


def _summary(tmp_path: Path) -> Path:
    summary: dict[str, Any] = json.loads(VECTORS.read_text())["cases"][0]["input"]["summary"]
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    return tmp_path / "summary.json"


@pytest.mark.parametrize(("version", "available"), [("1.30", "2Gi"), ("1.31", "1Gi")])
def test_explain_detects_windows_from_the_summary_and_uses_its_versions_signal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, available: str
) -> None:
    assert main(["explain", "--summary", str(_summary(tmp_path)), "--kubelet-version", version, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any("platform windows from the summary's shape" in n for n in doc["notes"]), doc["notes"]
    memory = next(o for o in doc["observations"] if o["signal"] == "memory.available")
    assert memory["available"] == available
