"""Fixtures shared across the test packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.cli import main


@pytest.fixture(scope="session")
def jvm_spike_rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled ``jvm-spike`` scenario generated once (read only: copy it to change it)."""
    out = tmp_path_factory.mktemp("jvm") / "rec"
    assert main(["scenario", "--sample", "jvm-spike", "-o", str(out)]) == 0
    return out
