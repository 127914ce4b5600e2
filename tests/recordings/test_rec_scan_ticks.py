"""Recording.scan(name, ticks): only the part files holding a tick in the range are scanned, and a query
filtered to that range gets the same rows as over every file (the journal's rows included)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from recordings.reader import open_recording
from recordings.schema import SERIES


def _bench() -> Any:
    path = Path(__file__).parents[1] / "replay" / "bench_replay.py"
    spec = importlib.util.spec_from_file_location("_bench_replay_scan", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("compact", [False, True])
def test_a_tick_range_scans_only_its_parts_and_finds_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compact: bool
) -> None:
    root = tmp_path / "rec"
    _bench().generate(root, nodes=2, pods=3, ticks=40, interval=10, part_ticks=10, every=5, compact=compact)
    rec = open_recording(root)
    for table in SERIES:
        for lo, hi in ((0, 0), (3, 17), (10, 19), (35, 60), (100, 200)):

            def rows(frame: pl.LazyFrame, lo: int = lo, hi: int = hi) -> pl.DataFrame:
                return frame.filter(pl.col("tick").is_between(lo, hi)).collect().sort(pl.all())

            assert rows(rec.scan(table.name, (lo, hi))).equals(rows(rec.scan(table.name)), null_equal=True)
    scanned: list[Any] = []
    real = pl.scan_parquet
    monkeypatch.setattr(pl, "scan_parquet", lambda f, *a, **k: scanned.append(f) or real(f, *a, **k))
    rec.scan("pod_stats", (0, 0))  # the files' tick spans are known by now: one scan per file kept
    kept = len(scanned)
    scanned.clear()
    rec.scan("pod_stats")
    assert 1 <= kept <= len(scanned)
    if not compact:  # time-ordered parts: only the first holds tick 0
        assert kept == 1 < len(scanned)
