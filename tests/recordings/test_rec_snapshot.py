"""Reading a recording while its writer writes it (recordings/snapshot.py, FORMAT.md §3.2): a private snapshot up to
the last finished tick, taken without the writer's lock, retried when a fold or a retention step moves files
between the listing and the links, and surviving whatever the writer deletes afterwards."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
from rec_support import REPO, child_env, summary_files, wait_for

from recordings import format as fmt
from recordings import snapshot
from recordings.format import Manifest
from recordings.reader import Recording, open_recording
from recordings.writer import RecordingWriter

T0 = 1_716_200_122_000_000
STEP = 10_000_000


def _summary() -> dict[str, Any]:
    return dict(orjson.loads(summary_files()[0].read_bytes()))


def _ticks(w: RecordingWriter, first: int, count: int) -> None:
    summary = _summary()
    for i in range(first, first + count):
        t = w.begin_tick(T0 + i * STEP)
        t.add_summary("node-a", summary, scraped=t.time)
        w.commit(t)


def _numbers(rec: Recording) -> list[int]:
    return sorted(rec.scan_ticks().collect()["tick"].to_list())


def test_open_recording_on_a_live_directory_reads_a_snapshot_up_to_the_last_finished_tick(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"))
    w.fold_every = 3
    _ticks(w, 0, 7)  # two parts and one tick in the journal
    with open(w._journal.path, "ab") as fh:  # the frame being written at this instant: half of one
        fh.write(b"EVJ1\x00\x10\x00\x00garbage")
    assert fmt.live_writer(root) == os.getpid()
    rec = open_recording(root)
    assert rec.live_root == rec.root == root and rec.data_root != root and rec.data_root.name == "rec"
    assert _numbers(rec) == list(range(7))  # each tick exactly once, the torn frame not copied
    assert rec.notes == ["live recording (its recorder is writing it): read a snapshot up to the last finished tick 6"]
    assert not (rec.data_root / fmt.LOCK).exists()
    snap = rec.data_root.parent
    assert _numbers(open_recording(root)) == list(range(7))  # a LazyFrame outlives its Recording: still readable
    del rec
    gc.collect()
    assert snap.exists()  # one of the two newest: kept while a LazyFrame may still read it
    for _ in range(snapshot.KEEP_RECENT):
        open_recording(root)
    gc.collect()
    assert not snap.exists()  # its Recording gone and two newer snapshots taken: removed
    w.close()


def test_a_snapshot_outlives_the_parts_its_writer_drops(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"), retain=30.0)
    w.fold_every = 2
    _ticks(w, 0, 4)
    rec = open_recording(root)
    _ticks(w, 4, 20)  # folds, and retention drops every part the snapshot linked
    assert all(not (root / "parts" / p.name).exists() for p in rec.parts)
    assert _numbers(rec) == [0, 1, 2, 3]
    assert rec.summary_at("node-a", 3) is not None
    w.close()


def test_a_fold_between_the_listing_and_the_copy_is_seen_and_the_snapshot_taken_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a reader meets: a fold publishes a part and deletes the journal segment it covers while the
    snapshot is being taken. The second listing differs, so the snapshot is taken again."""
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"))
    w.fold_every = 1000
    _ticks(w, 0, 5)
    real = snapshot._copy_segment
    calls: list[Path] = []

    def racing(src: Path, dst: Path, *, last: bool) -> None:
        calls.append(src)
        if len(calls) == 1:
            w.fold()  # the part appears, the segment goes: this copy finds nothing
        real(src, dst, last=last)

    monkeypatch.setattr(snapshot, "_copy_segment", racing)
    rec = open_recording(root)
    assert len(calls) >= 2
    assert _numbers(rec) == list(range(5))
    w.close()


def test_a_part_removed_while_it_is_linked_is_never_handed_out_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"))
    w.fold_every = 2
    _ticks(w, 0, 4)
    real = snapshot._link_or_copy
    seen = {"n": 0}

    def vanishing(src: Path, dst: Path) -> None:
        seen["n"] += 1
        if seen["n"] == 2:  # a file of the first part is gone by the time it is linked
            raise snapshot._Changed
        real(src, dst)

    monkeypatch.setattr(snapshot, "_link_or_copy", vanishing)
    with snapshot.live_snapshot(root) as snap:
        assert _numbers(Recording(snap)) == [0, 1, 2, 3]
        assert snap.parent.name.startswith(".rec.snapshot-")
    assert not snap.parent.exists()
    w.close()


def test_not_live_reads_the_directory_itself(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"))
    _ticks(w, 0, 2)
    w.finalize()
    with snapshot.live_snapshot(root) as snap:
        assert snap == root
    assert open_recording(root).live_root is None


KILLED_WRITER = textwrap.dedent(
    """
    import sys, orjson
    from pathlib import Path
    from recordings.format import Manifest
    from recordings.writer import RecordingWriter
    w = RecordingWriter(Path(sys.argv[1]), Manifest(source="test"))
    t = w.begin_tick(1716200122000000)
    t.add_summary("node-a", orjson.loads(Path(sys.argv[2]).read_bytes()), scraped=t.time)
    w.commit(t)
    print("ready", flush=True)
    sys.stdin.read()
    """
)


def test_a_lock_left_by_a_sigkilled_writer_is_not_live_and_is_taken_over(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(root), str(summary_files()[0])],
        env=child_env(),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert fmt.live_writer(root) == proc.pid
        rec = open_recording(root)  # live: a snapshot, and the writer is undisturbed
        assert rec.live_root == root and _numbers(rec) == [0]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    assert (root / fmt.LOCK).read_text().strip() == str(proc.pid)  # the stale lock file stays
    wait_for(lambda: fmt.live_writer(root) is None, what="the kernel to drop the dead writer's flock")
    assert open_recording(root).live_root is None
    w = RecordingWriter(root, Manifest(source="test"), append=True)
    assert w.last_tick == 0 and fmt.live_writer(root) == os.getpid()
    w.close()


def test_the_size_of_a_live_directory_skips_files_its_writer_removes_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``info`` sizes the live directory itself, while the writer renames ``NAME.tmp`` parts into place
    (CI once saw ``info`` die with FileNotFoundError on ``parts/p000004-000004.tmp``)."""
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"))
    w.fold_every = 3
    _ticks(w, 0, 4)
    rec = open_recording(root)
    whole = rec.size_bytes()
    gone = next(p for p in (root / fmt.PARTS_DIR).rglob("*") if p.is_file())
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if Path(path) == gone:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_stat(path, *args, **kwargs)

    size = gone.stat().st_size
    monkeypatch.setattr(os, "stat", stat)
    assert rec.size_bytes() == whole - size
    w.close()


def test_a_snapshot_left_by_a_sigkilled_reader_is_removed_by_the_next_reader(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"))
    w.fold_every = 3
    _ticks(w, 0, 4)
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\nfrom pathlib import Path\nfrom recordings import snapshot\n"
            "print(snapshot.take_snapshot(Path(sys.argv[1])).parent, flush=True)\nsys.stdin.read()",
            str(root),
        ],
        cwd=REPO,
        env=child_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert reader.stdout is not None
    left = Path(reader.stdout.readline().decode().strip())
    assert left.is_dir() and left.name.startswith(f".rec.snapshot-{reader.pid}-")
    reader.kill()
    reader.wait(timeout=60)
    mine = open_recording(root)
    assert _numbers(mine) == [0, 1, 2, 3]
    assert not left.exists()  # its reader is gone: swept by the next one
    assert mine.data_root.exists()  # the live reader's own is kept
    w.close()
