"""The recordings commands end at the same CLI edge as `evictlens`: exit 0/1/2, one line, quiet on a closed pipe."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rec_support import REPO, child_env, run_cli

from recordings.cli_edge import EXIT_BROKEN_PIPE

SAMPLE = REPO / "recordings" / "samples" / "kind-sidecars"


def test_usage_error_is_one_line_with_exit_status_2() -> None:
    res = run_cli("import")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "the following arguments are required" in res.stderr


def test_bad_input_from_the_shared_loader_is_one_line_with_exit_status_2(tmp_path: Path) -> None:
    bad = tmp_path / "pods.yaml"
    bad.write_text("items: [\n")
    res = run_cli("import", str(bad), "-o", str(tmp_path / "rec"))
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"evictlens import: {bad}: line ")
    assert "invalid YAML" in res.stderr and "internal error" not in res.stderr


def test_debug_is_accepted_before_and_after_the_command(tmp_path: Path) -> None:
    for argv in (["--debug", "info", str(tmp_path)], ["info", str(tmp_path), "--debug"]):
        res = run_cli(*argv)
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr


def test_info_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    files = [str(SAMPLE / name) for name in ("summary.json", "pods.json", "node.json")]
    res = run_cli("import", *files, "-o", str(rec))
    assert res.returncode == 0, res.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "recordings.cli", "info", str(rec), "--json"],
        cwd=REPO,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert err == b""
