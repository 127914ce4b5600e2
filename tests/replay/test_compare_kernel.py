"""Issue 17 item 3 in what-if comparisons: each variant's kernel kills next to its evictions. On the bundled
``jvm-spike`` the recorded settings lose the race to the kernel (SystemOOM + OOMKilled java at 00:03:24, one kill)
and the write-up's settings evict the JVM at 00:02:40 instead, with no kill; on the same workload as a plain
recording the counterfactual variant's real kill comes after its horizon: not judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from scenario_copy import without_scenario

from recordings.scenarios import bundled_names
from replay.cli import main
from replay.compare import COMPARE_SCHEMA

pytestmark = pytest.mark.skipif("jvm-spike" not in bundled_names(), reason="no bundled jvm-spike scenario")
JVM = "orders-jvm-7d9c6b8f5-k2xqp"
KILL = "2025-01-01T00:03:24Z"
ADVICE = [
    "--eviction-hard",
    "memory.available<10%",
    "--eviction-soft",
    "memory.available<20%",
    "--eviction-soft-grace-period",
    "memory.available=30s",
    "--jobs",
    "1",
]


@pytest.fixture(scope="module")
def rec(jvm_spike_rec: Path) -> Path:
    return jvm_spike_rec


@pytest.fixture(scope="module")
def plain(rec: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same recording without its scenario: a variant gets the counterfactual answer, with a horizon."""
    return without_scenario(rec, tmp_path_factory.mktemp("plain") / "rec")


def _json(capsys: pytest.CaptureFixture[str], rec: Path) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["whatif", str(rec), *ADVICE, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_the_baseline_is_killed_by_the_kernel_and_the_write_ups_settings_are_not(
    rec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(capsys, rec)
    base, advice = doc["variants"]
    assert doc["schema_version"] == 2
    assert (base["kernel_kills"], advice["kernel_kills"]) == (1, 0)  # SystemOOM + its OOMKilled container: one
    assert base["first_kill"]["time"] == KILL and base["first_kill"]["node"] == "worker-1"
    assert [(r["kind"], r["victim"] or r["pod"]) for r in base["first_kill"]["reports"]] == [
        ("SystemOOM", "java"),
        ("OOMKilled", JVM),
    ]
    assert advice["first_kill"] is None and advice["closed_loop"]
    # the baseline's race read from the recording (no frames); a closed loop's without frames is not known
    assert base["too_fast"] == 1 and advice["too_fast"] is None
    assert base["not_ready_nodes"] == advice["not_ready_nodes"] == []
    (pod,) = doc["pods"]
    assert pod["pod"] == JVM
    killed, evicted = pod["variants"]
    assert killed["time"] is None and killed["oom_killed"] == {"time": KILL, "container": "orders", "judged": True}
    assert evicted["time"] == "2025-01-01T00:02:40Z" and evicted["oom_killed"] is None


def test_the_table_shows_the_kill_beside_the_evictions(rec: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["whatif", str(rec), *ADVICE]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if "kernel kills" in line and line.startswith("┃"))
    col = [c.strip() for c in header.split("┃")].index("kernel kills")
    rows = [line.split("│") for line in text.splitlines() if line.startswith("│") and line.split("│")[1].strip()]
    assert [r[col].strip() for r in rows[:2]] == ["✖ 1", "0"]
    assert (
        f"#0: the kernel kills first, at {KILL} on worker-1 (java, pid 4001; shop/{JVM} orders) — no eviction "
        "before it" in text
    )
    assert f"OOMKilled {KILL}" in text
    assert "kernel kills per variant: #0 1, #1 0" in text


def test_compare_files_carry_the_kills(rec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["whatif", str(rec), *ADVICE, "-o", str(out)]) == 0
    frame = pl.read_parquet(out / "compare.parquet")
    assert frame.schema == COMPARE_SCHEMA
    jvm = frame.filter(pl.col("pod") == JVM).sort("variant")
    assert jvm["oom_killed"].to_list() == [True, False] and jvm["evicted"].to_list() == [False, True]
    assert jvm["oom_kill_judged"].to_list() == [True, None] and jvm["differs"].to_list() == [True, True]
    doc = json.loads((out / "compare.json").read_text())
    # with frames every variant's too-fast moments are its own (the closed loop's regenerated signals)
    assert [v["too_fast"] for v in doc["variants"]] == [1, 0]
    assert [v["kernel_kills"] for v in doc["variants"]] == [1, 0]


def test_a_counterfactual_variants_real_kill_after_its_horizon_is_not_judged(
    plain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _json(capsys, plain)
    base, advice = doc["variants"]
    assert base["kernel_kills"] == 1 and base["too_fast"] == 1 and base["kernel_kills_not_judged"] == 0
    assert advice["as_recorded_until"] == "2025-01-01T00:02:40Z" and not advice["closed_loop"]
    assert (advice["kernel_kills"], advice["kernel_kills_not_judged"]) == (0, 1)
    assert (advice["too_fast"], advice["too_fast_not_judged"]) == (0, 1)  # tune's 2 not judged, told apart
    (pod,) = doc["pods"]
    assert pod["variants"][1]["oom_killed"]["judged"] is False
    assert main(["whatif", str(plain), *ADVICE]) == 0
    text = capsys.readouterr().out
    assert f"OOMKilled {KILL} (not judged)" in text
    assert "#1: not judged, after its horizon" in text and "1 real kernel kill" in text
