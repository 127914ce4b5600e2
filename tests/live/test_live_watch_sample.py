"""``evictlens watch --sample jvm-spike``: the JSON lines of the played sample warn before the kubelet (or the
kernel) acts, and the eviction arrives after the warning, flagged against what was predicted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests_live_advice import ADVISED
from watch_support import Watch, lines_of, run_watch

Lines = list[dict[str, Any]]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> tuple[Lines, Path]:
    """The sample at 100× with its own settings (the kernel acts first), and the TMPDIR it played in."""
    tmp = tmp_path_factory.mktemp("tmpdir")
    done = run_watch("--sample", "jvm-spike", "--speed", "100", extra_env={"TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    return lines_of(done.stdout), tmp


@pytest.fixture(scope="module")
def advised() -> dict[str, Lines]:
    """The sample with the advised settings, warned 10 minutes and 1 minute ahead."""
    out = {}
    for warn in ("10m", "1m"):
        done = run_watch("--sample", "jvm-spike", "--speed", "100", "--warn", warn, *ADVISED)
        assert done.returncode == 0, done.stderr
        out[warn] = lines_of(done.stdout)
    return out


def _first(lines: list[dict[str, Any]], kind: str) -> int:
    return next(i for i, line in enumerate(lines) if line["kind"] == kind)


def test_every_line_has_the_common_fields(played: tuple[Lines, Path]) -> None:
    lines, tmp = played
    assert not any(tmp.iterdir()), "the played recording goes with the watch"
    assert lines
    for line in lines:
        assert list(line)[:5] == ["v", "kind", "time", "node", "tick"] and line["v"] == 1
        assert line["time"].startswith("2025-01-01T00:") and line["node"] == "worker-1"
    times = [line["time"] for line in lines]
    assert times == sorted(times), "lines come in time order"
    first = lines[0]  # the player holds its first tick until the engine follows: the first ticks are seen
    assert first["kind"] == "next-to-go" and first["tick"] < 11
    assert first["next_to_go"]["pod"] == "web-6f8d9c7b4-x9vzt"


def test_default_settings_warn_before_the_kernel_kill(played: tuple[Lines, Path]) -> None:
    lines, _tmp = played
    warning, kill = _first(lines, "warning"), _first(lines, "kernel-kill")
    assert warning < kill and lines[warning]["time"] < lines[kill]["time"]
    w = lines[warning]
    assert w["signal"] in ("memory.available", "allocatableMemory.available") and w["threshold_kind"] == "hard"
    assert 0 < w["seconds_to_threshold"] < 600 and w["method"].startswith("Theil–Sen slope")
    assert w["next_to_go"]["pod"] in ("orders-jvm-7d9c6b8f5-k2xqp", "web-6f8d9c7b4-x9vzt")  # the engine's ranking
    kills = [line for line in lines if line["kind"] == "kernel-kill"]
    assert {k["oom"] for k in kills} == {"SystemOOM", "OOMKilled"}
    container = next(k for k in kills if k["oom"] == "OOMKilled")
    assert container["pod"] == "orders-jvm-7d9c6b8f5-k2xqp" and container["container"] == "orders"
    assert not any(line["kind"] in ("real-eviction", "predicted-eviction") for line in lines)


def test_advised_settings_warn_then_the_eviction_arrives_as_predicted(advised: dict[str, Lines]) -> None:
    lines = advised["10m"]
    warning, pressure = _first(lines, "warning"), _first(lines, "pressure-start")
    predicted, real = _first(lines, "predicted-eviction"), _first(lines, "real-eviction")
    assert warning < pressure < predicted < real
    assert lines[pressure]["condition"] == "MemoryPressure" and lines[pressure]["conditions"] == ["MemoryPressure"]
    assert lines[predicted]["time"] == "2025-01-01T00:02:40Z"
    r = lines[real]
    assert r["pod"] == "orders-jvm-7d9c6b8f5-k2xqp" and r["time"].startswith("2025-01-01T00:02:40")
    assert r["predicted"] is True and r["message_matches"] is True and r["message_diff"] == ""
    assert r["predicted_message"] == r["message"] == lines[predicted]["message"]
    assert r["predicted_time"] == "2025-01-01T00:02:40Z"
    assert not any(line["kind"] == "kernel-kill" for line in lines)


def test_a_short_warn_warns_later(advised: dict[str, Lines]) -> None:
    """--warn is the horizon: with 1m only forecasts under a minute warn."""
    wide, narrow = advised["10m"], advised["1m"]
    warned_wide = [line for line in wide if line["kind"] == "warning"]
    warned_narrow = [line for line in narrow if line["kind"] == "warning"]
    assert warned_narrow and len(warned_narrow) < len(warned_wide)
    assert all(line["seconds_to_threshold"] < 60 for line in warned_narrow)
    assert any(line["seconds_to_threshold"] >= 60 for line in warned_wide)


def test_sigterm_mid_play_ends_cleanly(tmp_path: Path) -> None:
    w = Watch("--sample", "jvm-spike", "--speed", "5", extra_env={"TMPDIR": str(tmp_path)})
    try:
        w.wait_for(lambda: w.has(kind="next-to-go"), "the first pod next to go")
        assert len(list(tmp_path.iterdir())) == 1
        assert w.stop() == 0, "".join(w.err)
    finally:
        w.kill()
    assert not any(tmp_path.iterdir())
