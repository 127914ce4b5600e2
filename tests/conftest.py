"""Fixtures shared across the test packages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replay.cli import main

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
