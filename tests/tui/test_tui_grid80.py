"""``evictlens tui`` in a real 80×24 pseudo-terminal (issue 27), read off a terminal grid: the help scrolls, ``:``
on the timeline takes keys written in one go, the k3d-like dip shows over its threshold row, the kill detail."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pexpect  # type: ignore[import-untyped]
import pytest
from vt_screen import Screen, close_child, wait_for_screen

from recordings.scenarios import load_bundled
from replay.scenario import run_scenario

ROOT = Path(__file__).resolve().parents[2]
ROWS, COLS = 24, 80


@pytest.fixture(scope="module")
def k3d_grid_rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("k3d-grid") / "rec"
    run_scenario(load_bundled("k3d-operator-pod"), out)
    return out


@contextmanager
def tui(sample_cache: Path, *args: str) -> Iterator[tuple[Any, Screen]]:
    script = Path(sys.executable).parent / "evictlens"
    program, argv = (str(script), ["tui", *args]) if script.exists() else (sys.executable, ["-m", "replay.cli", "tui"])
    env = {**os.environ, "EVICTLENS_CACHE": str(sample_cache), "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    child = pexpect.spawn(program, argv, cwd=str(ROOT), env=env, dimensions=(ROWS, COLS), encoding="utf-8", timeout=90)
    screen = Screen(ROWS, COLS)
    try:
        yield child, screen
        child.send("q")
    finally:
        close_child(child)


def test_help_scrolls_at_80x24(sample_cache: Path) -> None:
    with tui(sample_cache) as (child, screen):
        wait_for_screen(child, screen, shows=["Overview — as recorded", "? Help"])
        child.send("?")
        wait_for_screen(child, screen, shows=["Keys — Overview", "Finding out why", "Jump: :node"])
        child.send("G")  # the last row: the what-if form's keys, far below the 24 rows
        wait_for_screen(child, screen, shows=["Results list"], hides=["Finding out why"])
        child.send("g")
        wait_for_screen(child, screen, shows=["Finding out why"], hides=["Results list"])
        child.send("\x1b")
        wait_for_screen(child, screen, shows=["Overview — as recorded"], hides=["Keys — Overview"])


def test_colon_on_the_timeline_with_keys_written_at_once(sample_cache: Path) -> None:
    with tui(sample_cache) as (child, screen):
        wait_for_screen(child, screen, shows=["Overview — as recorded", "kind-worker"])
        child.send("\r")
        wait_for_screen(child, screen, shows=["Node timeline — kind-worker", "memory.available"])
        child.send(":eviction alloc\r")  # one write: no pause between : and the rest
        wait_for_screen(child, screen, shows=["Eviction — default/alloc-sidecars"], hides=["Compare —"])
        child.send(":node kind\r")
        wait_for_screen(child, screen, shows=["Node timeline — kind-worker"], hides=["Eviction —"])


def test_the_k3d_dip_shows_over_its_threshold_row(sample_cache: Path, k3d_grid_rec: Path) -> None:
    with tui(sample_cache, str(k3d_grid_rec)) as (child, screen):
        wait_for_screen(child, screen, shows=["Overview — as recorded", "k3d-dev-agent-0"])
        child.send("\r")
        wait_for_screen(child, screen, shows=["Node timeline — k3d-dev-agent-0", "lowest 972.0 MiB", "1,024┤"])
        rows = screen.text().splitlines()
        (threshold,) = [r for r in rows if "1,024┤" in r]
        assert "●" in threshold, screen.text()  # the dip's lowest sample, over the threshold's line
        assert any(r.strip().startswith("0┤") for r in rows), screen.text()


def test_the_kill_detail_at_80x24(sample_cache: Path, jvm_rec: Path) -> None:
    with tui(sample_cache, str(jvm_rec)) as (child, screen):
        wait_for_screen(child, screen, shows=["Overview — as recorded", "✖"])
        child.send("\t")
        child.send("\r")
        wait_for_screen(
            child,
            screen,
            shows=["Kernel kill — shop/orders-jvm", "Where memory ran out", "the node (cgroup /", "why it did not act"],
        )
        wait_for_screen(child, screen, shows=["memory.available<928Mi"])  # the engine's check, in a worker
