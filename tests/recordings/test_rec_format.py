"""The recording format: lossless for the eviction logic, exact integers, crash-tolerant files."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from rec_support import summary_files

from kube.errors import RecordingError
from recordings import format as fmt
from recordings.journal import encode_frame
from recordings.reader import open_recording
from recordings.schema import NODE_STATS, validate_schema
from recordings.summary_codec import project
from recordings.writer import RecordingWriter

REAL = summary_files()


def _spec_projection(summary: dict[str, Any]) -> dict[str, Any]:
    """Written from spec §1.1 by hand, independent of the codec: every field eviction reads."""

    def pick(obj: Any, keys: tuple[str, ...]) -> dict[str, Any] | None:
        if not isinstance(obj, dict):
            return None
        return {k: obj[k] for k in keys if obj.get(k) is not None}

    mem = ("time", "availableBytes", "workingSetBytes")
    fs = ("time", "availableBytes", "capacityBytes", "inodesFree", "inodes")
    node = summary["node"]
    pods_sc = next((c for c in node.get("systemContainers") or [] if c.get("name") == "pods"), None)
    out: dict[str, Any] = {
        "memory": pick(node.get("memory"), mem),
        "allocatable": pick((pods_sc or {}).get("memory"), mem),
        "fs": pick(node.get("fs"), fs),
        "imageFs": pick((node.get("runtime") or {}).get("imageFs"), fs),
        "containerFs": pick((node.get("runtime") or {}).get("containerFs"), fs),
        "rlimit": pick(node.get("rlimit"), ("time", "maxpid", "curproc")),
        "pods": [],
    }
    for pod in summary.get("pods") or []:
        out["pods"].append(
            {
                "uid": pod["podRef"]["uid"],
                "ws": (pod.get("memory") or {}).get("workingSetBytes"),
                "eph": (pod.get("ephemeral-storage") or {}).get("usedBytes"),
                "procs": (pod.get("process_stats") or {}).get("process_count"),
                "containers": [
                    (
                        c["name"],
                        (c.get("memory") or {}).get("workingSetBytes"),
                        pick(c.get("rootfs"), ("usedBytes", "inodesUsed")),
                        pick(c.get("logs"), ("usedBytes", "inodesUsed")),
                    )
                    for c in pod.get("containers") or []
                ],
                "volumes": [(v["name"], v.get("usedBytes"), v.get("inodesUsed")) for v in pod.get("volume") or []],
            }
        )
    return out


def _write(root: Path, summaries: list[dict[str, Any]], *, fold: bool) -> None:
    w = RecordingWriter(root, fmt.Manifest(source="test"))
    for i, s in enumerate(summaries):
        t = w.begin_tick(1_700_000_000_000_000 + i * 10_000_000)
        t.add_summary(f"n{i}", s, scraped=t.time)
        w.commit(t)
    if fold:
        w.finalize()


@pytest.mark.parametrize("fold", [False, True], ids=["journal", "parquet"])
def test_every_real_summary_reads_back_identically(tmp_path: Path, fold: bool) -> None:
    summaries = [orjson.loads(p.read_bytes()) for p in REAL]
    _write(tmp_path / "rec", summaries, fold=fold)
    rec = open_recording(tmp_path / "rec")
    for i, (path, original) in enumerate(zip(REAL, summaries, strict=True)):
        got = rec.summary_at(f"n{i}", i)
        assert got == project(original), path
        assert _spec_projection(got) == _spec_projection(original), path


def test_parse_summary_sees_the_same_summary_after_a_round_trip(tmp_path: Path) -> None:
    if importlib.util.find_spec("replay.kubelet.api") is None:
        pytest.skip("replay.kubelet.api not written yet")
    from replay.kubelet.api import parse_summary  # type: ignore[import-not-found,unused-ignore]

    summaries = [orjson.loads(p.read_bytes()) for p in REAL]
    _write(tmp_path / "rec", summaries, fold=True)
    rec = open_recording(tmp_path / "rec")
    for i, original in enumerate(summaries):
        assert parse_summary(rec.summary_at(f"n{i}", i), source="rec") == parse_summary(original, source="orig")


def test_uint64_extremes_and_missing_versus_zero_survive(tmp_path: Path) -> None:
    base = orjson.loads(REAL[0].read_bytes())
    s = copy.deepcopy(base)
    s["node"]["fs"]["inodesFree"] = 2**64 - 1
    s["node"]["memory"].pop("availableBytes")
    s["node"]["rlimit"] = {"maxpid": 0, "curproc": 0}
    s["pods"][0]["memory"] = {}
    _write(tmp_path / "rec", [s], fold=True)
    got = open_recording(tmp_path / "rec").summary_at("n0", 0)
    assert got is not None
    assert got["node"]["fs"]["inodesFree"] == 2**64 - 1
    assert "availableBytes" not in got["node"]["memory"]
    assert got["node"]["rlimit"] == {"maxpid": 0, "curproc": 0}
    assert got["pods"][0]["memory"] == {}
    df = open_recording(tmp_path / "rec").scan_node_stats().collect()
    assert df.schema["fs_inodes_free"] == pl.UInt64


def test_negative_or_fractional_counter_is_rejected_naming_the_field(tmp_path: Path) -> None:
    s = orjson.loads(REAL[0].read_bytes())
    s["pods"][1]["containers"][0]["rootfs"]["usedBytes"] = -5
    w = RecordingWriter(tmp_path / "rec", fmt.Manifest())
    with pytest.raises(RecordingError, match=r"pods\[1\]\.containers\[0\]\.rootfs\.usedBytes: expected an unsigned"):
        w.begin_tick().add_summary("n", s, scraped=0)


def test_files_are_private(tmp_path: Path) -> None:
    os.umask(0o022)
    _write(tmp_path / "rec", [orjson.loads(REAL[0].read_bytes())] * 2, fold=True)
    for p in [tmp_path / "rec", *(tmp_path / "rec").rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), p


def test_torn_last_journal_frame_is_ignored(tmp_path: Path) -> None:
    s = orjson.loads(REAL[0].read_bytes())
    _write(tmp_path / "rec", [s, s, s], fold=False)
    ((_seq, seg),) = fmt.list_segments(tmp_path / "rec")
    frame = encode_frame({"tick": 3, "time": 0, "tables": {}})
    with seg.open("ab") as fh:
        fh.write(frame[: len(frame) // 2])
    rec = open_recording(tmp_path / "rec")
    assert [t.index for t in rec.ticks()] == [0, 1, 2]


def test_crash_between_fold_and_journal_delete_reads_each_tick_once(tmp_path: Path) -> None:
    s = orjson.loads(REAL[0].read_bytes())
    root = tmp_path / "rec"
    w = RecordingWriter(root, fmt.Manifest())
    for _ in range(3):
        t = w.begin_tick()
        t.add_summary("n", s, scraped=t.time)
        w.commit(t)
    seg = root / fmt.JOURNAL_DIR / fmt.segment_name(1)
    kept = seg.read_bytes()
    w.fold()
    seg.write_bytes(kept)  # as if the crash came right after the part directory's rename
    rec = open_recording(root)
    assert rec.scan_node_stats().select(pl.len()).collect().item() == 3


def test_append_continues_tick_numbers_after_a_crash(tmp_path: Path) -> None:
    s = orjson.loads(REAL[0].read_bytes())
    root = tmp_path / "rec"
    w = RecordingWriter(root, fmt.Manifest())
    for _ in range(2):
        t = w.begin_tick()
        t.add_summary("n", s, scraped=t.time)
        w.commit(t)
    del w  # crashed: never finalized
    w2 = RecordingWriter(root, fmt.Manifest(), append=True)
    t = w2.begin_tick()
    t.add_summary("n", s, scraped=t.time)
    w2.commit(t)
    w2.finalize()
    rec = open_recording(root)
    assert [t.index for t in rec.ticks("n")] == [0, 1, 2]
    assert rec.manifest.finalized and rec.manifest.counts["ticks"] == 3


def test_refuses_to_overwrite_an_existing_recording(tmp_path: Path) -> None:
    _write(tmp_path / "rec", [orjson.loads(REAL[0].read_bytes())], fold=True)
    with pytest.raises(RecordingError, match="already holds a recording; pass --append"):
        RecordingWriter(tmp_path / "rec", fmt.Manifest())


def test_schema_check_reports_every_problem_at_once() -> None:
    actual = dict(NODE_STATS.schema())
    actual.pop("fs_inodes")
    actual["memory_available_bytes"] = pl.Float64()
    actual["bogus"] = pl.String()
    with pytest.raises(RecordingError) as err:
        validate_schema("node_stats", pl.Schema(actual), source="x.parquet")
    text = str(err.value)
    assert "missing column fs_inodes" in text and "memory_available_bytes is Float64" in text and "bogus" in text


def test_newer_schema_version_is_refused_in_one_line(tmp_path: Path) -> None:
    _write(tmp_path / "rec", [orjson.loads(REAL[0].read_bytes())], fold=True)
    m = json.loads((tmp_path / "rec" / "manifest.json").read_text())
    m["schema_version"] = 99
    (tmp_path / "rec" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(RecordingError, match="schema_version 99 is not supported"):
        open_recording(tmp_path / "rec")
