"""``evictlens tui PATH`` checks its input before the terminal goes full-screen (issue 27 item 7): one line on
stderr, exit 2, even with a terminal (no box drawn)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _command() -> list[str]:
    script = Path(sys.executable).parent / "evictlens"
    return [str(script), "tui"] if script.exists() else [sys.executable, "-m", "replay.cli", "tui"]


@pytest.mark.parametrize("what", ["missing", "file", "empty-dir", "tar"])
def test_a_bad_path_is_one_line_and_exit_2(tmp_path: Path, what: str) -> None:
    target = tmp_path / "x"
    if what == "file":
        target.write_text("hello\n")
    elif what == "empty-dir":
        target.mkdir()
    elif what == "tar":
        import tarfile

        with tarfile.open(target, "w"):
            pass
    proc = subprocess.run(
        [*_command(), str(target)], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and str(target) in proc.stderr, proc.stderr
    assert "interactive terminal" not in proc.stderr  # the input is checked first
    assert proc.stdout == ""


def test_a_bad_path_fails_before_full_screen_in_a_terminal(tmp_path: Path) -> None:
    import pexpect  # type: ignore[import-untyped]

    cmd = _command()
    child = pexpect.spawn(cmd[0], [*cmd[1:], str(tmp_path / "nope")], dimensions=(24, 80), encoding="utf-8", timeout=60)
    out = child.read()
    child.close()
    assert child.exitstatus == 2
    assert "no such file or directory" in out and "\x1b[?1049h" not in out  # never the alternate screen
