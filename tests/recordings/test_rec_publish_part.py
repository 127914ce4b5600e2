"""RecordingWriter.publish_part: tables built as frames become a part like folded ticks (sorted, checksummed)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import polars as pl
import pytest
from rec_support import summary_files

from kube.errors import RecordingError
from recordings import format as fmt
from recordings.format import Manifest
from recordings.reader import open_recording
from recordings.schema import SERIES
from recordings.summary_codec import empty_columns, encode, project
from recordings.writer import RecordingWriter, frame_from_columns

T0 = 1_763_000_000_000_000


def _summary() -> dict[str, object]:
    doc: dict[str, object] = orjson.loads(summary_files()[0].read_bytes())
    return doc


def _frames(ticks: range, nodes: list[str]) -> dict[str, pl.DataFrame]:
    into = {t.name: empty_columns(t) for t in SERIES}
    tick_cols: dict[str, list[object]] = {"tick": [], "time": [], "node": [], "ok": [], "error": []}
    for tick in reversed(ticks):  # out of order on purpose: the part is sorted like a fold
        for node in nodes:
            at = T0 + tick * 10_000_000
            encode(_summary(), tick=tick, node=node, scraped=at, into=into)
            for col, value in (("tick", tick), ("time", at), ("node", node), ("ok", True), ("error", None)):
                tick_cols[col].append(value)
    frames = {name: frame_from_columns(name, cols) for name, cols in into.items()}
    frames["ticks"] = frame_from_columns("ticks", tick_cols)
    return frames


def test_published_frames_read_back_as_the_summaries_they_hold(tmp_path: Path) -> None:
    w = RecordingWriter(tmp_path / "rec", Manifest(source="bench"))
    w.observe(
        "pod", {"metadata": {"name": "p", "namespace": "d", "uid": "u"}, "spec": {"nodeName": "n1"}}, observed=T0 - 1
    )
    w.publish_part(_frames(range(0, 3), ["n1", "n2"]))
    w.publish_part(_frames(range(3, 5), ["n1", "n2"]))
    assert w.next_tick == 5
    w.finalize()
    rec = open_recording(tmp_path / "rec")
    assert [t.index for t in rec.ticks("n2")] == [0, 1, 2, 3, 4]
    assert [tick for tick, _ in rec.summaries("n1")] == [0, 1, 2, 3, 4]
    assert rec.summary_at("n2", 4) == project(_summary())
    assert len(rec.pods_at("n1")) == 1
    assert rec.manifest.counts["ticks"] == 5 and rec.manifest.finalized
    for _first, _last, part in fmt.list_parts(tmp_path / "rec"):
        fmt.verify_part(part, required=True, source=str(part))
        assert all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in part.iterdir())
        df = pl.read_parquet(part / "node_stats.parquet")
        assert df.equals(df.sort("node", "tick"))


def test_a_frame_with_the_wrong_schema_is_refused_naming_the_table(tmp_path: Path) -> None:
    w = RecordingWriter(tmp_path / "rec", Manifest(source="bench"))
    frames = _frames(range(1), ["n1"])
    frames["pod_stats"] = frames["pod_stats"].with_columns(pl.col("tick").cast(pl.Int64))
    with pytest.raises(RecordingError, match=r"pod_stats.*column tick is Int64, expected UInt32"):
        w.publish_part(frames)
    assert fmt.list_parts(tmp_path / "rec") == []
