"""Fixtures for the TUI tests: the bundled sample generated once, its results directory, an app driver; the
bundled jvm-spike scenario (a kernel OOM kill between two passes, no eviction) generated once."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordings.reader import open_recording
from recordings.scenarios import load_bundled
from replay.engine import replay_recording
from replay.results_io import write
from replay.scenario import run_scenario
from tui.sample import sample_recording


@pytest.fixture
def anyio_backend() -> str:
    """The Pilot tests run on asyncio (Textual's loop), through anyio's pytest plugin."""
    return "asyncio"


@pytest.fixture(scope="session")
def sample_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding the generated sidecar-stress sample (built once per session)."""
    cache = tmp_path_factory.mktemp("cache")
    sample_recording(cache)
    return cache


@pytest.fixture(scope="session")
def sample_rec(sample_cache: Path) -> Path:
    return sample_recording(sample_cache)


@pytest.fixture(scope="session")
def results_dir(sample_rec: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample replayed with its recorded settings, written as a results directory."""
    out = tmp_path_factory.mktemp("results") / "out"
    write(replay_recording(open_recording(sample_rec)), out)
    return out


@pytest.fixture(scope="session")
def jvm_rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled jvm-spike scenario as a recording: the kernel kills java at 00:03:24, between two passes."""
    out = tmp_path_factory.mktemp("jvm") / "rec"
    run_scenario(load_bundled("jvm-spike"), out)
    return out
