"""``evictlens tui`` in a real pseudo-terminal: it draws, answers keys, and quits cleanly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect  # type: ignore[import-untyped]
from vt_screen import Screen, close_child, wait_for_screen

ROOT = Path(__file__).resolve().parents[2]


def _command() -> tuple[str, list[str]]:
    script = Path(sys.executable).parent / "evictlens"
    if script.exists():
        return str(script), ["tui"]
    return sys.executable, ["-m", "replay.cli", "tui"]


def test_evictlens_tui_runs_in_a_pseudo_terminal(sample_cache: Path) -> None:
    """Each key goes in only once the screen it is meant for is showing (read off a terminal grid,
    not the byte stream): a key sent early lands on the wrong screen on a loaded machine."""
    program, args = _command()
    env = {
        **os.environ,
        "EVICTLENS_CACHE": str(sample_cache),
        "TERM": "xterm-256color",
        "COLUMNS": "120",
        "LINES": "40",
    }
    child = pexpect.spawn(program, args, cwd=str(ROOT), env=env, dimensions=(40, 120), encoding="utf-8", timeout=90)
    screen = Screen(40, 120)
    overview = ("Overview — as recorded", "kind-worker", "alloc-sidecars")  # after the sample's replay
    try:
        wait_for_screen(child, screen, shows=overview)
        child.send("?")
        wait_for_screen(child, screen, shows=["Keys — Overview"])  # the help overlay
        child.send("q")  # closes the overlay
        wait_for_screen(child, screen, shows=overview, hides=["Keys — Overview"])
        child.send("\r")  # the node's timeline
        wait_for_screen(child, screen, shows=["Node timeline — kind-worker", "memory.available"])
        child.send("q")  # back
        wait_for_screen(child, screen, shows=overview, hides=["Node timeline"])
        child.send("q")  # quits from the overview
        child.expect(pexpect.EOF)
    finally:
        close_child(child)
    assert child.exitstatus == 0, screen.text()


def test_without_a_terminal_tui_refuses_in_one_line() -> None:
    import subprocess

    program, args = _command()
    proc = subprocess.run(
        [program, *args], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "needs an interactive terminal" in proc.stderr
