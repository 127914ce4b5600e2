"""One writer per recording: record, record --append, import and scenario take an exclusive
flock on ``writer.lock`` for their whole run; a second writer stops in one line naming the
holder's pid (exit 2) and touches nothing, and the lock goes with the writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from rec_support import (
    REPO,
    FakeServer,
    child_env,
    committed_ticks,
    kill_quietly,
    run_cli,
    start_record,
    summary_files,
    wait_for,
)

from recordings import format as fmt
from recordings.format import Manifest, RecordingBusyError
from recordings.reader import open_recording
from recordings.writer import RecordingWriter

FAST = ["--interval", "1s", "--timeout", "2s"]
T0 = 1_716_200_122_000_000


def _args(server: FakeServer, out: Path, *extra: str) -> list[str]:
    return ["--kubeconfig", server.kubeconfig, "--context", "static", "-o", str(out), *FAST, *extra]


def _one_line(res: subprocess.CompletedProcess[str] | tuple[int | None, str]) -> str:
    code, err = (res.returncode, res.stderr) if isinstance(res, subprocess.CompletedProcess) else res
    assert code == 2, err
    assert err.count("\n") == 1 and "internal error" not in err and "Traceback" not in err, err
    return err


def _tick(w: RecordingWriter, i: int) -> None:
    summary = orjson.loads(summary_files()[0].read_bytes())
    t = w.begin_tick(T0 + i * 10_000_000)
    t.add_summary("node-a", summary, scraped=t.time)
    w.commit(t)


def test_a_second_writer_is_refused_naming_the_holder_and_the_lock_goes_with_the_first(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    first = RecordingWriter(root, Manifest(source="test"))
    _tick(first, 0)
    assert (root / fmt.LOCK).read_text().strip() == str(os.getpid())
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    busy = rf"another evictlens is writing this recording \(pid {os.getpid()}\)"
    for append in (False, True):
        with pytest.raises(RecordingBusyError, match=busy):
            RecordingWriter(root, Manifest(source="test"), append=append)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before  # the refused writer touched nothing
    first.finalize()
    assert not (root / fmt.LOCK).exists()
    again = RecordingWriter(root, Manifest(source="test"), append=True)
    _tick(again, 1)
    again.finalize()
    assert [t.index for t in open_recording(root).ticks()] == [0, 1]


def test_a_writer_that_died_leaves_a_lock_nobody_holds(tmp_path: Path) -> None:
    """flock belongs to the open file: the kernel drops it with the process, however it dies."""
    root = tmp_path / "rec"
    code = (
        "import os, sys; from pathlib import Path; from recordings.format import Manifest; "
        "from recordings.writer import RecordingWriter; RecordingWriter(Path(sys.argv[1]), Manifest()); "
        "os.kill(os.getpid(), 9)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(root)], env=child_env(), cwd=REPO, capture_output=True, text=True, check=False
    )
    assert res.returncode == -signal.SIGKILL and (root / fmt.LOCK).exists()
    w = RecordingWriter(root, Manifest(), append=True)
    assert (root / fmt.LOCK).read_text().strip() == str(os.getpid())
    w.close()


def test_pack_of_a_recording_a_writer_holds_packs_its_last_finished_tick_and_leaves_the_writer_alone(
    tmp_path: Path,
) -> None:
    """pack used to refuse a live recording; it now packs a snapshot (recordings/snapshot.py) without the
    writer's lock, and the writer goes on and finalizes as if nothing happened."""
    root = tmp_path / "rec"
    w = RecordingWriter(root, Manifest(source="test"))
    _tick(w, 0)
    res = run_cli("pack", str(root), "-o", str(tmp_path / "r.tar"))
    assert res.returncode == 0, res.stderr
    assert run_cli("unpack", str(tmp_path / "r.tar"), "-o", str(tmp_path / "back")).returncode == 0
    back = open_recording(tmp_path / "back")
    assert back.scan_ticks().collect()["tick"].unique().to_list() == [0]
    assert not (tmp_path / "back" / fmt.LOCK).exists()
    assert fmt.live_writer(root) == os.getpid()
    _tick(w, 1)
    w.finalize()
    assert sorted(open_recording(root).scan_ticks().collect()["tick"].unique().to_list()) == [0, 1]


def test_two_records_into_one_new_directory_one_records_the_other_stops_naming_its_pid(
    server: FakeServer, tmp_path: Path
) -> None:
    out = tmp_path / "rec"
    procs = [start_record(_args(server, out)) for _ in range(2)]
    try:
        wait_for(lambda: any(p.poll() is not None for p in procs), what="one of the two recorders to stop")
        loser = next(p for p in procs if p.poll() is not None)
        winner = next(p for p in procs if p is not loser)
        _o, err = loser.communicate(timeout=30)
        assert f"another evictlens is writing this recording (pid {winner.pid})" in _one_line((loser.returncode, err))
        wait_for(lambda: committed_ticks(out) >= 2, what="two ticks from the recorder that holds the lock")
        winner.send_signal(signal.SIGTERM)
        _o, err = winner.communicate(timeout=60)
    finally:
        for p in procs:
            kill_quietly(p)
    assert winner.returncode == 0, err
    rec = open_recording(out)
    assert rec.manifest.finalized and len(rec.ticks()) >= 2
    assert not (out / fmt.LOCK).exists()


def test_append_and_import_into_a_recording_being_recorded_are_refused(server: FakeServer, tmp_path: Path) -> None:
    """The fault matrix's case: two ``record --append`` on one recording used to interleave and
    lose ticks with both exiting 0."""
    out = tmp_path / "rec"
    first = start_record(_args(server, out))
    try:
        wait_for(lambda: committed_ticks(out) >= 1, what="first tick")
        second = start_record(_args(server, out, "--append"))
        _o, err = second.communicate(timeout=60)
        assert f"(pid {first.pid})" in _one_line((second.returncode, err))
        imported = run_cli("import", "--append", "-o", str(out), str(summary_files()[0]))
        assert f"(pid {first.pid})" in _one_line(imported)
        first.send_signal(signal.SIGTERM)
        _o, err = first.communicate(timeout=60)
    finally:
        kill_quietly(first)
    assert first.returncode == 0, err
    ticks = len(open_recording(out).ticks())
    assert run_cli("import", "--append", "-o", str(out), str(summary_files()[0])).returncode == 0
    rec = open_recording(out)
    assert rec.manifest.finalized and len(rec.ticks()) == ticks + 1
