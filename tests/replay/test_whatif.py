"""`evictlens whatif`: one recording, several settings, one comparison (variant 0 the recorded settings)."""

from __future__ import annotations

import argparse
import json
import stat
from pathlib import Path

import polars as pl
import pytest
from recbuild import sidecar_recording

from recordings.reader import open_recording
from replay import engine
from replay.cli import main
from replay.cli.whatif import add_whatif_parser, variants_from_args
from replay.compare import COMPARE_SCHEMA, compare
from replay.results_io import load

HARD = ["--eviction-hard", "memory.available<100Mi", "--eviction-hard", "memory.available<1.5Gi"]


@pytest.fixture
def rec(tmp_path: Path) -> Path:
    return sidecar_recording(tmp_path / "rec")


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    add_whatif_parser(sub)
    return parser.parse_args(["whatif", "rec", *argv])


def _whatif_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["whatif", *argv, "--json"]) == 0
    doc: dict[str, object] = json.loads(capsys.readouterr().out)
    return doc


def test_higher_threshold_evicts_more_and_only_1_32_names_the_sidecars(
    rec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _whatif_json(capsys, str(rec), *HARD, "--kubelet-version", "1.30,1.32", "--as-recorded")
    variants = doc["variants"]
    assert isinstance(variants, list)
    assert [v["label"] for v in variants] == [
        "baseline",
        "--eviction-hard=memory.available<100Mi kubelet 1.30",
        "--eviction-hard=memory.available<100Mi kubelet 1.32",
        "--eviction-hard=memory.available<1.5Gi kubelet 1.30",
        "--eviction-hard=memory.available<1.5Gi kubelet 1.32",
    ]
    assert [v["evictions"] for v in variants] == [2, 0, 0, 2, 2]
    assert variants[0]["kubelet_versions"] == ["1.30"]  # the node's own kubeletVersion and /configz
    assert variants[0]["settings"]["overrides"] == {}
    assert [v["matched"] for v in variants] == [1, 0, 0, 1, 1]
    assert [v["matched_exact"] for v in variants] == [1, 0, 0, 1, 0]
    assert variants[3]["pressure_s"] == {"MemoryPressure": 20.0} and variants[1]["pressure_s"] == {}
    pods = {p["pod"]: p for p in doc["pods"]}  # type: ignore[union-attr]
    sidecars = pods["alloc-sidecars"]
    assert sidecars["messages_differ"] is True and sidecars["comes_back"] is False
    messages = [v and v["message"] for v in sidecars["variants"]]
    assert messages[1] is None and messages[2] is None
    assert "el-sidecar1" not in messages[3] and "el-sidecar1" in messages[4]


def test_the_table_marks_what_1_32_adds_to_the_message(rec: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["whatif", str(rec), "--eviction-hard", "memory.available<1.5Gi", "--kubelet-version", "1.30,1.32"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "messages for default/alloc-sidecars" in out
    assert out.count("{+Container") == 1  # only the 1.32 row, marked against the baseline (1.30)
    assert "stays Failed: a bare pod" in out


def test_each_occurrence_is_a_variant_and_flags_multiply(rec: Path) -> None:
    variants = variants_from_args(
        _args(*HARD, "--eviction-pressure-transition-period", "1m", "--eviction-pressure-transition-period", "0s")
    )
    assert len(variants) == 1 + 2 * 2
    assert variants[0].request.overrides.given() == {} and variants[0].request.kubelet_version is None
    assert variants[4].request.overrides.given() == {
        "--eviction-hard": "memory.available<1.5Gi",
        "--eviction-pressure-transition-period": "0s",
    }


def test_soft_thresholds_pair_with_grace_periods_by_position(rec: Path) -> None:
    variants = variants_from_args(
        _args(
            "--eviction-soft",
            "memory.available<2Gi",
            "--eviction-soft",
            "memory.available<3Gi",
            "--eviction-soft-grace-period",
            "memory.available=10s",
            "--eviction-soft-grace-period",
            "memory.available=1m",
        )
    )
    assert [v.request.overrides.eviction_soft_grace_period for v in variants[1:]] == [
        ("memory.available=10s",),
        ("memory.available=1m",),
    ]


def test_mismatched_grace_periods_and_nothing_to_compare_are_one_line(
    rec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "whatif",
        str(rec),
        "--eviction-soft",
        "memory.available<2Gi",
        "--eviction-soft",
        "memory.available<3Gi",
        *(["--eviction-soft-grace-period", "memory.available=1s"] * 3),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--eviction-soft-grace-period" in err and err.count("\n") == 1
    assert main(["whatif", str(rec)]) == 2
    err = capsys.readouterr().err
    assert "nothing to compare" in err and err.count("\n") == 1
    assert main(["whatif", str(rec), "--kubelet-version", "1.30,0.9"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_recording_is_read_once_for_every_variant(rec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replay.fast import driver

    calls: list[object] = []
    real = driver.index_pods_by_node

    def counting(frame: pl.DataFrame) -> object:
        calls.append(frame)
        return real(frame)

    monkeypatch.setattr(driver, "index_pods_by_node", counting)
    variants = variants_from_args(_args("--kubelet-version", "1.30,1.32"))
    results = engine.replay(open_recording(rec), [v.request for v in variants])
    assert len(results) == 3 and len(calls) == 1


def test_output_holds_every_variant_and_the_comparison(rec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["whatif", str(rec), *HARD, "-o", str(out), "--as-recorded"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "compare.json",
        "compare.parquet",
        "variant-0",
        "variant-1",
        "variant-2",
    ]
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert stat.S_IMODE((out / "compare.json").stat().st_mode) == 0o600
    assert [len(load(out / f"variant-{i}").evictions) for i in range(3)] == [2, 0, 2]
    frame = pl.read_parquet(out / "compare.parquet")
    assert frame.schema == COMPARE_SCHEMA
    assert frame.filter(pl.col("pod") == "alloc-sidecars")["evicted"].to_list() == [True, False, True]
    doc = json.loads((out / "compare.json").read_text())
    assert doc["format"] == "evictlens-whatif" and len(doc["variants"]) == 3
    # a second run replaces its own output; anything else is refused
    assert main(["whatif", str(rec), *HARD[:2], "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir())[-1] == "variant-1"
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep").write_text("mine")
    assert main(["whatif", str(rec), *HARD[:2], "-o", str(tmp_path / "busy")]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "out", "rec"]


def test_compare_lists_only_pods_whose_fate_differs(rec: Path) -> None:
    recording = open_recording(rec)
    variants = variants_from_args(_args("--eviction-hard", "memory.available<1.5Gi", "--as-recorded"))
    results = engine.replay(recording, [v.request for v in variants])
    same = compare(results)  # the recorded /configz already says 1.5Gi: nothing differs
    assert same.pods == () and [v.evictions for v in same.variants] == [2, 2]
    assert same.frame["differs"].to_list() == [False] * 4
