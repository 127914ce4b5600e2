"""Journal reads are bounded: a 2 GB sparse tail (what some filesystems leave after a crash) is
recognised as a torn tail without being read into memory, intact frames beyond a hole are still
found, and a frame header claiming more than the frame limit is damage, not a 4 GB read."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from rec_support import REPO, measured_env, summary_files

from kube.errors import RecordingError
from recordings import format as fmt
from recordings.journal import MAGIC, MAX_FRAME, encode_frame
from recordings.reader import open_recording, read_segment
from recordings.writer import RecordingWriter

T0 = 1_716_200_122_000_000
GB2 = 2 << 30
MIB = 1 << 20


def _unfinalized(root: Path, ticks: int = 3) -> Path:
    """A recording whose recorder stopped: its ticks only in the journal; returns the segment."""
    summary = orjson.loads(summary_files()[0].read_bytes())
    w = RecordingWriter(root, fmt.Manifest(source="test"))
    for i in range(ticks):
        t = w.begin_tick(T0 + i * 10_000_000)
        t.add_summary("node-a", summary, scraped=t.time)
        w.commit(t)
    w.close_after_failure()
    return fmt.list_segments(root)[-1][1]


def _peak_in_child(code: str, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``code`` in a fresh process; its result and peak RSS in bytes (its own VmHWM)."""
    script = code + textwrap.dedent(
        """
        status = open("/proc/self/status").read()
        print(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
        """
    )
    res = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=measured_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return res, int(res.stdout.split()[-1]) * 1024


def test_a_2gb_sparse_tail_is_a_torn_tail_read_without_reading_it(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    seg = _unfinalized(root)
    intact = seg.stat().st_size
    os.truncate(seg, GB2)  # sparse: no block is allocated
    read = read_segment(seg, last=True, skip_bad=False)
    assert (len(read.payloads), read.valid_end, read.torn) == (3, intact, GB2 - intact)
    code = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from recordings.format import Manifest
        from recordings.reader import open_recording
        from recordings.writer import RecordingWriter

        rec = open_recording(sys.argv[1])
        print(len(rec.ticks()), rec.notes[0])
        RecordingWriter(Path(sys.argv[1]), Manifest(), append=True).finalize()  # --append cuts the tail off
        """
    )
    res, peak = _peak_in_child(code, str(root))
    assert res.stdout.startswith(f"3 torn journal tail ignored: {seg.name} ends in {GB2 - intact} bytes")
    assert peak < 400 * MIB, f"reading a sparse 2 GB segment peaked at {peak / MIB:.0f} MiB"
    rec = open_recording(root)
    assert rec.manifest.finalized and len(rec.ticks()) == 3 and not fmt.list_segments(root)


def test_an_intact_frame_after_a_2gb_hole_is_found_so_the_hole_is_damage_not_a_tail(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    seg = _unfinalized(root)
    frame = encode_frame({"tick": None, "time": T0, "tables": {}})
    with seg.open("r+b") as fh:
        fh.seek(GB2)
        fh.write(frame)
    with pytest.raises(RecordingError, match=r"damaged journal frame at byte \d+ \(bad frame magic\); intact frames"):
        read_segment(seg, last=True, skip_bad=False)
    read = read_segment(seg, last=True, skip_bad=True)
    assert len(read.payloads) == 4 and read.torn == 0 and len(read.skipped) == 1


def test_a_frame_header_claiming_more_than_the_limit_is_damage_not_a_huge_read(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    seg = _unfinalized(root)
    with seg.open("ab") as fh:
        fh.write(struct.pack("<4sII", MAGIC, MAX_FRAME + 1, 0))
    os.truncate(seg, GB2)
    read = read_segment(seg, last=True, skip_bad=False)
    assert len(read.payloads) == 3 and read.torn > 0
    with pytest.raises(RecordingError, match=rf"frame length {MAX_FRAME + 1} above the {MAX_FRAME}-byte limit"):
        read_segment(seg, last=False, skip_bad=False)
