"""A closed terminal (SIGHUP) ends ``evictlens record`` as SIGTERM does: the recording is finalized."""

from __future__ import annotations

import signal
from pathlib import Path

from rec_support import FakeServer, committed_ticks, kill_quietly, start_record, wait_for

from recordings.reader import open_recording


def test_sighup_finishes_the_tick_and_finalizes_the_recording(server: FakeServer, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    proc = start_record(
        [
            "--kubeconfig",
            server.kubeconfig,
            "--context",
            "static",
            "-o",
            str(out),
            "--interval",
            "1s",
            "--timeout",
            "2s",
        ]
    )
    try:
        wait_for(lambda: committed_ticks(out) >= 2, what="two ticks")
        proc.send_signal(signal.SIGHUP)
        _out, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    assert err.splitlines()[-1].startswith("finished: "), err
    rec = open_recording(out)
    assert rec.manifest.finalized and len(rec.ticks()) >= 2 and not list((out / "journal").iterdir())
