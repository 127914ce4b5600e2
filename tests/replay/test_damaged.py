"""`evictlens replay` on damaged, empty and crashed recordings: one line, or --skip-bad with what was skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from recbuild import sidecar_recording

from recordings import format as fmt
from replay.cli import main


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


def _flip(path: Path, at: int = 200) -> None:
    data = bytearray(path.read_bytes())
    data[min(at, len(data) - 20)] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_corrupted_part_stops_the_replay_with_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    part = fmt.list_parts(rec)[0][2] / "container_stats.parquet"
    _flip(part)
    assert main(["replay", str(rec)]) == 2
    assert str(part) in _one_line(capsys)


def test_a_truncated_part_stops_the_replay_with_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    part = fmt.list_parts(rec)[0][2] / "node_stats.parquet"
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    assert main(["replay", str(rec), "-o", str(tmp_path / "out")]) == 2
    assert str(part) in _one_line(capsys)
    assert not (tmp_path / "out").exists()


def test_skip_bad_replays_what_is_readable_and_lists_what_was_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = sidecar_recording(tmp_path / "rec", fold_after=(1,))  # ticks 0-1 in one part, 2-4 in another
    part = fmt.list_parts(rec)[-1][2] / "container_stats.parquet"
    _flip(part)
    assert main(["replay", str(rec)]) == 2
    assert str(part) in _one_line(capsys)
    assert main(["replay", str(rec), "--skip-bad", "--kubelet-version", "1.30"]) == 0
    out = capsys.readouterr().out
    assert "skipped (--skip-bad)" in out and str(part) in out
    assert "2 passes over 1 nodes" in out


def test_a_recording_without_ticks_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from recordings.writer import RecordingWriter

    RecordingWriter(tmp_path / "empty", fmt.Manifest()).finalize()
    assert main(["replay", str(tmp_path / "empty")]) == 2
    assert "no ticks" in _one_line(capsys)


def test_a_directory_that_is_not_a_recording_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path)]) == 2
    assert "not a recording" in _one_line(capsys)
