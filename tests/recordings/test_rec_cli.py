"""The recordings commands end at the same CLI edge as `evictlens`: exit 0/1/2, one line, quiet on a closed pipe."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
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


_WAITS_FOR_SIGTERM = """
import argparse, signal, sys, tempfile
from recordings.cli_edge import run_command

# as started from a terminal: under nohup (a CI job's wrapper, say) SIGHUP is inherited ignored, and the
# command rightly leaves an ignored signal alone
signal.signal(signal.SIGHUP, signal.SIG_DFL)

def func(args: argparse.Namespace) -> int:
    spool = tempfile.TemporaryDirectory(prefix="evictlens-frames-")  # as the engine keeps one: no context
    print(spool.name, flush=True)
    sys.stdin.read()  # until the test signals
    return 0

parser = argparse.ArgumentParser()
parser.set_defaults(func=func)
sys.exit(run_command(parser, []))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_command_killed_by_sigterm_or_sighup_removes_its_temporary_files_and_exits_quietly(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """The default action of SIGTERM left ``evictlens-frames-*`` spools in /tmp (a killed replay or TUI)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _WAITS_FOR_SIGTERM],
        cwd=REPO,
        env={**child_env(), "TMPDIR": str(tmp_path)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    spool = Path(proc.stdout.readline().decode().strip())
    assert spool.is_dir() and spool.parent == tmp_path
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    assert err == b""
    assert not spool.exists()
