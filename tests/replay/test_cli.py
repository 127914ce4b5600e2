"""The `evictlens` command as a user runs it: a real process, exit codes and the conformance line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT.parent / "shared" / "conformance"


def test_conformance_passes_every_shared_vector() -> None:
    proc = subprocess.run([sys.executable, "-m", "replay.cli", "conformance", str(CONFORMANCE)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.endswith(" 0 failed") and "skipped" not in last


def test_conformance_reports_failures_with_exit_status_1(tmp_path: Path) -> None:
    vector = tmp_path / "v.json"
    vector.write_text(
        '{"schema": "kubelet-eviction-conformance/v1", "file": "v.json", "count": 1, "cases": [{"id": "q/bad",'
        ' "kind": "quantity", "kubelet_version": "1.32", "input": {"op": "parse_emit", "value": "1024Mi"},'
        ' "expect": {"string": "1024Mi"}}]}'
    )
    proc = subprocess.run([sys.executable, "-m", "replay.cli", "conformance", str(vector)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    assert "differs at character 1" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "0 passed, 1 failed"


def test_unknown_vector_path_is_a_one_line_error() -> None:
    proc = subprocess.run([sys.executable, "-m", "replay.cli", "conformance", "/nonexistent"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "evictlens conformance: /nonexistent: no such file or directory"
