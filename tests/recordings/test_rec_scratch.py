"""Scratch directories (a replay's frame spool, a TUI's unpacked recording) left by a SIGKILLed process are
removed by the next process that asks for one; those of live processes and unnamed old ones stay."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from recordings.scratch import scratch_dir, sweep_scratch

CHILD = """
import sys
from recordings.scratch import scratch_dir
d = scratch_dir("evictlens-test-frames-")
(__import__("pathlib").Path(d.name) / "frame.parquet").write_bytes(b"x")
print(d.name, flush=True)
sys.stdin.read()
"""


@pytest.fixture
def tmp_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_killed_processs_scratch_directory_is_removed_by_the_next_one(tmp_temp: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_temp)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    left = Path(child.stdout.readline().strip())
    assert left.parent == tmp_temp and left.name.startswith(f"evictlens-test-frames-{child.pid}-")
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert left.is_dir()  # SIGKILL runs no clean-up

    mine = scratch_dir("evictlens-test-frames-")
    assert not left.exists()
    assert Path(mine.name).is_dir() and Path(mine.name).name.startswith(f"evictlens-test-frames-{os.getpid()}-")
    mine.cleanup()
    assert not Path(mine.name).exists()


def test_a_running_processs_and_an_unnamed_scratch_directory_are_kept(tmp_temp: Path) -> None:
    alive = tmp_temp / f"evictlens-test-frames-{os.getppid()}-abc"
    unnamed = tmp_temp / "evictlens-test-frames-k2j4h5g6"  # written before the pid was in the name
    other = tmp_temp / "evictlens-test-frames-seed-123-abc"  # another prefix that starts the same way
    for d in (alive, unnamed, other):
        d.mkdir()
    assert sweep_scratch("evictlens-test-frames-", tmp_temp) == []
    assert alive.is_dir() and unnamed.is_dir() and other.is_dir()
