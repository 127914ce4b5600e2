"""Damaged, empty and half-written recordings: one line naming the file and what is wrong, or
(with ``skip_bad``) what was read around and why — never a traceback, never silent corruption."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import polars as pl
import pytest
from rec_support import REPO, child_env, run_cli

from kube.errors import RecordingError
from recordings import format as fmt
from recordings.journal import encode_frame, read_frames
from recordings.reader import open_recording, read_segment
from recordings.writer import RecordingWriter

SAMPLE = REPO / "recordings" / "samples" / "kind-sidecars"
SUMMARY = orjson.loads((SAMPLE / "summary.json").read_bytes())
T0 = 1_716_200_122_000_000  # 2024-05-20T10:15:22Z


def _record(root: Path, ticks: int = 3, *, finalize: bool = True, fold_at: tuple[int, ...] = ()) -> RecordingWriter:
    w = RecordingWriter(root, fmt.Manifest(source="test"))
    for i in range(ticks):
        t = w.begin_tick(T0 + i * 10_000_000)
        t.add_summary("node-a", SUMMARY, scraped=t.time)
        w.commit(t)
        if i in fold_at:
            w.fold()
    if finalize:
        w.finalize()
    return w


def _part_file(root: Path, name: str = "node_stats.parquet", index: int = 0) -> Path:
    return fmt.list_parts(root)[index][2] / name


def _one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1, res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    return res.stderr


def test_every_part_has_checksums_of_its_files_and_the_schema_is_v2(tmp_path: Path) -> None:
    _record(tmp_path / "rec")
    part = fmt.list_parts(tmp_path / "rec")[0][2]
    sums = json.loads((part / fmt.CHECKSUMS).read_text())
    assert sums["algorithm"] == "crc32"
    assert set(sums["files"]) == {f.name for f in part.glob("*.parquet")}
    for name, entry in sums["files"].items():
        assert fmt.file_crc32(part / name) == (entry["bytes"], entry["crc32"])
    assert open_recording(tmp_path / "rec").manifest.schema_version == fmt.SCHEMA_VERSION == 3


def test_flipped_bytes_in_a_part_are_an_error_naming_the_file(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _record(root)
    f = _part_file(root)
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(
        RecordingError, match=r"node_stats\.parquet: corrupted: CRC-32 [0-9a-f]{8}, checksums.json says"
    ):
        open_recording(root)
    for args in (("info", str(root)), ("info", str(root), "--verify"), ("pack", str(root))):
        err = _one_line_error(run_cli(*args))
        assert f"{f}: corrupted" in err
    assert not list(tmp_path.glob("*.tar"))


def test_truncated_part_is_an_error_naming_the_file_for_info_and_pack(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _record(root)
    f = _part_file(root, "pod_stats.parquet")
    f.write_bytes(f.read_bytes()[:100])
    for args in (("info", str(root)), ("pack", str(root), "-o", str(tmp_path / "x.tar"))):
        err = _one_line_error(run_cli(*args))
        assert f"{f}: truncated or damaged: 100 bytes, checksums.json says" in err
    assert not (tmp_path / "x.tar").exists()


def test_truncated_v1_part_without_checksums_is_still_named(tmp_path: Path) -> None:
    from recordings.pack import unpack

    unpack(Path(__file__).parent / "data" / "v1-import.evictlens.tar", tmp_path / "rec")
    f = _part_file(tmp_path / "rec", "objects.parquet")
    f.write_bytes(f.read_bytes()[:-40])
    err = _one_line_error(run_cli("info", str(tmp_path / "rec")))
    assert f"{f}: unreadable Parquet file, truncated or corrupted" in err


def test_skip_bad_reads_the_other_parts_and_lists_the_damaged_one(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _record(root, 4, finalize=False, fold_at=(1,))  # ticks 0-1 in a part, 2-3 in the journal
    _record_more = RecordingWriter(root, fmt.Manifest(), append=True)
    _record_more.fold()  # ticks 2-3 into a second part
    _record_more.close_after_failure()
    first = _part_file(root, "ticks.parquet", 0)
    first.write_bytes(first.read_bytes()[:-10])
    with pytest.raises(RecordingError, match=r"ticks\.parquet: truncated or damaged"):
        open_recording(root)
    rec = open_recording(root, skip_bad=True)
    assert [t.index for t in rec.ticks("node-a")] == [2, 3]
    (skipped,) = rec.skipped
    assert str(first) in skipped and "whole part skipped" in skipped
    assert rec.summary_at("node-a", 3) is not None


def _journal_only(root: Path, ticks: int) -> Path:
    _record(root, ticks, finalize=False)
    ((_seq, seg),) = fmt.list_segments(root)
    return seg


def test_a_journal_frame_damaged_in_the_middle_is_an_error_naming_segment_and_offset(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    seg = _journal_only(root, 3)
    frames = [end for end, _ in read_frames(seg)]
    data = bytearray(seg.read_bytes())
    data[frames[0] + 20] ^= 0xFF  # inside the second frame's compressed body
    seg.write_bytes(bytes(data))
    with pytest.raises(RecordingError) as err:
        open_recording(root)
    assert str(err.value) == (
        f"{seg}: damaged journal frame at byte {frames[0]} (frame checksum mismatch); intact frames follow it; "
        "pass --skip-bad to read around it"
    )
    rec = open_recording(root, skip_bad=True)
    assert [t.index for t in rec.ticks("node-a")] == [0, 2]
    assert len(rec.skipped) == 1 and f"byte {frames[0]}" in rec.skipped[0]
    err_line = _one_line_error(run_cli("info", str(root)))
    assert f"{seg}: damaged journal frame" in err_line


def test_torn_tail_and_unfinalized_recording_read_up_to_the_last_finished_tick_with_notes(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    seg = _journal_only(root, 3)
    frame = encode_frame({"tick": 3, "time": T0 + 30_000_000, "tables": {}})
    with seg.open("ab") as fh:
        fh.write(frame[: len(frame) // 2])
    rec = open_recording(root)
    assert [t.index for t in rec.ticks("node-a")] == [0, 1, 2] and rec.skipped == []
    assert any(n.startswith(f"torn journal tail ignored: {seg.name} ends in") for n in rec.notes), rec.notes
    assert any("unfinalized recording" in n and "last finished tick 2" in n for n in rec.notes), rec.notes
    res = run_cli("info", str(root), "--verify")
    assert res.returncode == 0, res.stderr
    assert "note: torn journal tail ignored" in res.stdout and "NOT finalized" in res.stdout


def test_damage_at_the_end_of_a_closed_segment_is_not_taken_for_a_torn_tail(tmp_path: Path) -> None:
    seg = _journal_only(tmp_path / "rec", 2)
    with seg.open("ab") as fh:
        fh.write(b"EVJ1garbage")
    assert read_segment(seg, last=True, skip_bad=False).torn == 11
    with pytest.raises(RecordingError, match="at the end of a closed segment"):
        read_segment(seg, last=False, skip_bad=False)


def test_unknown_schema_version_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    _record(root, 1)
    m = json.loads((root / fmt.MANIFEST).read_text())
    m["schema_version"] = 7
    (root / fmt.MANIFEST).write_text(json.dumps(m))
    err = _one_line_error(run_cli("info", str(root)))
    assert (
        "manifest.json: schema_version: schema_version 7 is not supported; this evictlens reads versions 1, 2, 3"
    ) in err


def test_a_recording_with_no_ticks_or_a_node_with_no_data_is_refused_for_replay(tmp_path: Path) -> None:
    w = RecordingWriter(tmp_path / "empty", fmt.Manifest())
    w.finalize()
    with pytest.raises(RecordingError, match="has no ticks"):
        open_recording(tmp_path / "empty").check_replayable()
    w = RecordingWriter(tmp_path / "gaps", fmt.Manifest())
    for i in range(2):
        t = w.begin_tick(T0 + i)
        t.add_summary("node-a", SUMMARY, scraped=t.time)
        t.add_gap("node-b", "HTTP 503 for GET /api/v1/nodes/node-b/proxy/stats/summary")
        w.commit(t)
    w.finalize()
    with pytest.raises(RecordingError, match=r"node node-b has no data: all 2 of its ticks are gaps \(first: HTTP 503"):
        open_recording(tmp_path / "gaps").check_replayable()
    with pytest.raises(RecordingError, match="node node-c has no ticks"):
        open_recording(tmp_path / "gaps").check_replayable(["node-c"])
    rec = open_recording(tmp_path / "gaps", skip_bad=True)
    assert rec.check_replayable() == ["node-a"] and "node node-b has no data" in rec.skipped[0]


def test_parquet_files_are_created_private_not_chmodded_afterwards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chmodded: list[str] = []
    real_chmod = os.chmod

    def spy(path: object, mode: int, **kw: object) -> None:
        chmodded.append(str(path))
        real_chmod(path, mode, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "chmod", spy)
    old = os.umask(0)
    try:
        _record(tmp_path / "rec")
    finally:
        os.umask(old)
    files = list((tmp_path / "rec" / fmt.PARTS_DIR).rglob("*.parquet"))
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert not [p for p in chmodded if p.endswith(".parquet")]


def test_disk_full_while_the_final_part_is_written_stops_cleanly(tmp_path: Path) -> None:
    """A real size limit (RLIMIT_FSIZE) in a child process, hit by the final fold's Parquet files."""
    root = tmp_path / "rec"
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        import orjson
        from recordings import format as fmt
        from kube.errors import RecordingError
        from recordings.writer import RecordingWriter
        summary = orjson.loads(open({str(SAMPLE / "summary.json")!r}, "rb").read())
        w = RecordingWriter(__import__("pathlib").Path({str(root)!r}), fmt.Manifest(source="test"))
        for i in range(3):
            t = w.begin_tick({T0} + i * 10_000_000)
            t.add_summary("node-a", summary, scraped=t.time)
            w.commit(t)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))
        try:
            w.finalize()
        except RecordingError as exc:
            print(exc.one_line())
            sys.exit(1)
        """
    )
    res = subprocess.run(
        [sys.executable, "-c", script], env=child_env(), capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 1, res.stderr
    assert "disk full while writing a Parquet part" in res.stdout and "File too large" in res.stdout
    assert "the recording is valid up to tick 2" in res.stdout
    assert not list((root / fmt.PARTS_DIR).iterdir())  # no .tmp part directory left behind
    manifest = json.loads((root / fmt.MANIFEST).read_text())
    assert manifest["end_time"] == "2024-05-20T10:15:42Z" and not manifest["finalized"]
    rec = open_recording(root)
    assert [t.index for t in rec.ticks("node-a")] == [0, 1, 2]
    assert rec.scan_node_stats().select(pl.len()).collect().item() == 3


def test_append_after_a_crash_cuts_the_torn_tail_so_it_never_sits_mid_journal(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    seg = _journal_only(root, 2)
    intact = seg.stat().st_size
    with seg.open("ab") as fh:
        fh.write(encode_frame({"tick": 2, "time": 0, "tables": {}})[:30])
    w = RecordingWriter(root, fmt.Manifest(), append=True)
    assert seg.stat().st_size == intact
    t = w.begin_tick(T0 + 20_000_000)
    t.add_summary("node-a", SUMMARY, scraped=t.time)
    w.commit(t)
    del w  # crashed again: two segments, the first no longer last
    rec = open_recording(root)
    assert [t.index for t in rec.ticks("node-a")] == [0, 1, 2] and rec.skipped == []


def test_compaction_refuses_to_give_a_damaged_part_a_fresh_checksum(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    w = _record(root, 4, finalize=False, fold_at=(1, 3))  # two parts
    f = _part_file(root, "pod_stats.parquet", 0)
    data = bytearray(f.read_bytes())
    data[200] ^= 0x01
    f.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match=r"pod_stats\.parquet: corrupted"):
        w.finalize()
    assert len(fmt.list_parts(root)) == 2 and not list((root / fmt.PARTS_DIR).glob("*.tmp"))
