"""Fixtures shared across the test packages."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from replay.cli import main

# One polars thread per test process (set before polars is first imported; the commands the tests start inherit it).
# The suite runs four workers on two cores: polars' default pool of one thread per core then only adds
# synchronisation (measured: 20 % less CPU and less wall on the property tests with one thread). Answers do not
# depend on it; the tests that measure a process's memory set what they measure explicitly.
assert "polars" not in sys.modules, "polars was imported before tests/conftest.py set POLARS_MAX_THREADS"
os.environ.setdefault("POLARS_MAX_THREADS", "1")

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


@pytest.fixture(scope="session")
def jvm_spike_rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled ``jvm-spike`` scenario generated once (read only: copy it to change it)."""
    out = tmp_path_factory.mktemp("jvm") / "rec"
    assert main(["scenario", "--sample", "jvm-spike", "-o", str(out)]) == 0
    return out
