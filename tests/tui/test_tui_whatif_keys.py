"""The what-if form in a real 80×24 pseudo-terminal: keys typed straight after Tab land in the next field
(issue 27's leftover: the letters went to the previous field or, bubbling up, to the screen's bindings)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect  # type: ignore[import-untyped]
from vt_screen import Screen, close_child, wait_for_screen

ROOT = Path(__file__).resolve().parents[2]


def test_fields_typed_straight_after_tab_land_in_the_next_field(sample_cache: Path) -> None:
    script = Path(sys.executable).parent / "evictlens"
    program, argv = (str(script), ["tui"]) if script.exists() else (sys.executable, ["-m", "replay.cli", "tui"])
    env = {**os.environ, "EVICTLENS_CACHE": str(sample_cache), "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    child = pexpect.spawn(program, argv, cwd=str(ROOT), env=env, dimensions=(24, 80), encoding="utf-8", timeout=90)
    screen = Screen(24, 80)
    try:
        wait_for_screen(child, screen, shows=["Overview — as recorded", "kind-worker"])
        child.send("w")
        wait_for_screen(child, screen, shows=["What-if", "nothing running"])
        child.send("\tmemory.available<2Gi\tmemory.available<3Gi")  # one write: no pause after either Tab
        wait_for_screen(child, screen, shows=["memory.available<3Gi"])
        (soft,) = [r for r in screen.text().splitlines() if "--eviction-soft " in r]  # the row being typed in
        assert "memory.available<3Gi" in soft, screen.text()
        child.send("\x1b[Z")  # shift+Tab: back to the hard field, scrolled into view whatever the scroll was
        wait_for_screen(child, screen, shows=["--eviction-hard"])
        rows = screen.text().splitlines()
        (hard,) = [r for r in rows if "--eviction-hard" in r]
        assert "memory.available<2Gi" in hard, screen.text()
        assert "What-if" in rows[0], screen.text()  # no letter reached the screen's keys
        child.send("\x1b")
        wait_for_screen(child, screen, shows=["Overview — as recorded"], hides=["--eviction-hard"])
        child.send("q")
    finally:
        close_child(child)
