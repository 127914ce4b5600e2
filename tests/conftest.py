"""Fixtures shared across the test packages."""

from __future__ import annotations

import compileall
import contextlib
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from replay.cli import main

# Property tests run the same examples every time (Hypothesis' built-in "ci" profile: derandomized, no deadline, no
# example database), whether or not CI is set: a loaded machine or a new seed never turns the suite red, and a
# failure reproduces. HYPOTHESIS_PROFILE=default explores new examples by hand.
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The fake clusters tick faster than any kubelet: let `record` take sub-second intervals in the suite (and in the
# commands it starts, which inherit the environment); users get the 1 s floor (recordings/recorder/options.py).
os.environ.setdefault("EVICTLENS_MIN_INTERVAL", "0.1")
# pytest-xdist hands its workers COLUMNS/LINES of the controlling terminal (80 when there is none); a worker must
# see what a plain run sees (no terminal: recordings.console.PIPE_WIDTH), or rendered text wraps differently.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)

REPO = Path(__file__).resolve().parent.parent
SOURCES = ("kube", "recordings", "replay", "flight", "live", "tui", "tests")
_WROTE = pytest.StashKey[list[Path]]()


def pytest_configure(config: pytest.Config) -> None:
    """Under PYTHONDONTWRITEBYTECODE every interpreter the suite starts (fake API servers, recorders, CLIs, the TUI
    in a terminal, each xdist worker) compiles the repo's sources again: ~0.2 s of CPU each, hundreds of times.
    The controller compiles them once, before any worker starts, and removes at the end what it wrote."""
    if not sys.dont_write_bytecode or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    before = {p for d in SOURCES for p in (REPO / d).rglob("__pycache__")}
    for d in SOURCES:
        compileall.compile_dir(REPO / d, quiet=2, workers=1)
    config.stash[_WROTE] = [p for d in SOURCES for p in (REPO / d).rglob("__pycache__") if p not in before]


def pytest_unconfigure(config: pytest.Config) -> None:
    for cache in config.stash.get(_WROTE, []):
        for pyc in cache.glob("*.pyc"):
            pyc.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # something else wrote there meanwhile: leave it
            cache.rmdir()


@pytest.fixture(scope="session")
def jvm_spike_rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled ``jvm-spike`` scenario generated once (read only: copy it to change it)."""
    out = tmp_path_factory.mktemp("jvm") / "rec"
    assert main(["scenario", "--sample", "jvm-spike", "-o", str(out)]) == 0
    return out
