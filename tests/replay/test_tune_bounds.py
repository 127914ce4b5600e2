"""Issue 28 items 3, 6, 7 and 13: numbers checked where they enter. A quantity past the kubelet's int64 is refused
naming its flag (Go would silently use 0 or 2^63−1), a range or grid past what --max-candidates could replay is
refused before it is built (under a memory limit here), and a negative pressure transition period is bad input."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from kube.quantity import fits_int64
from replay.cli import main


@pytest.mark.parametrize(
    ("text", "fits"),
    [
        ("1e19", False),
        ("1e400", False),
        ("99999Ei", False),
        ("8Ei", False),
        ("9223372036854775808", False),
        ("9223372036854775807", True),
        ("7Ei", True),
        ("-8Ei", True),
        ("1.5Gi", True),
        ("500m", True),
    ],
)
def test_fits_int64_reads_the_exact_value_before_go_caps_or_wraps_it(text: str, fits: bool) -> None:
    assert fits_int64(text) is fits


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--system-reserved", "1e19"),
        ("--kube-reserved", "1e400"),
        ("--min-reclaim", "1e30"),
        ("--memory-hard", "99999Ei"),
    ],
)
def test_a_tune_quantity_past_int64_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    assert main(["tune", "jvm-spike", flag, value]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and "int64" in err, err


def test_a_grid_past_a_million_combinations_is_refused_naming_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--memory-hard", "1%..99%/50", "--nodefs-hard", "1%..99%/50", "--memory-soft", "1%..99%/50"]
    assert main(["tune", "jvm-spike", *argv, "--soft-grace", "1s..100s/50"]) == 2
    err = capsys.readouterr().err.strip()
    assert "combinations" in err and "--soft-grace 50" in err, err


def test_max_candidates_has_an_upper_bound(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "jvm-spike", "--max-candidates", "99999999"]) == 2
    assert "--max-candidates" in capsys.readouterr().err


REPO = Path(__file__).resolve().parents[2]


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def test_a_range_of_a_hundred_billion_values_is_refused_before_it_is_built() -> None:
    """It used to build the whole list (3 GB and counting): under a 3 GB limit it must stop at once, exit 2."""
    proc = subprocess.run(
        [sys.executable, "-m", "replay.cli", "tune", "jvm-spike", "--memory-hard", "5%..15%/99999999999"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=_limit_memory,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "--memory-hard" in proc.stderr and "--max-candidates" in proc.stderr


@pytest.mark.parametrize("command", ["replay", "whatif", "explain"])
def test_a_negative_pressure_transition_period_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    sample = REPO / "recordings" / "samples" / "kind-sidecars"
    assert main(["import", "-o", str(tmp_path / "rec"), str(sample / "summary.json"), str(sample / "pods.json")]) == 0
    target = ["--summary", str(sample / "summary.json")] if command == "explain" else [str(tmp_path / "rec")]
    capsys.readouterr()
    assert main([command, *target, "--eviction-pressure-transition-period=-1s"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--eviction-pressure-transition-period" in err and "≥ 0" in err, err
