"""``evictlens tui DIR`` on a recording a live writer holds (issue 24 item 1): it opens a snapshot up to the last
finished tick (recordings/snapshot.py) and draws the overview, without the writer's lock; the writer goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pexpect  # type: ignore[import-untyped]
from vt_screen import Screen, close_child, wait_for_screen

ROOT = Path(__file__).resolve().parents[2]
REALDATA = Path(os.environ.get("EVICTLENS_REALDATA", ROOT.parent / "shared" / "realdata"))

WRITER = textwrap.dedent(
    """
    import sys, orjson
    from pathlib import Path
    from recordings.format import Manifest
    from recordings.writer import RecordingWriter
    w = RecordingWriter(Path(sys.argv[1]), Manifest(source="test"))
    w.fold_every = 2
    summary = orjson.loads(Path(sys.argv[2]).read_bytes())
    for i in range(5):
        t = w.begin_tick(1716200122000000 + i * 10_000_000)
        t.add_summary("node-live", summary, scraped=t.time)
        w.commit(t)
    print("ready", flush=True)
    sys.stdin.readline()
    t = w.begin_tick(1716200122000000 + 5 * 10_000_000)
    t.add_summary("node-live", summary, scraped=t.time)
    w.commit(t)
    w.finalize()
    print("finalized", flush=True)
    """
)


def _command() -> tuple[str, list[str]]:
    script = Path(sys.executable).parent / "evictlens"
    if script.exists():
        return str(script), ["tui"]
    return sys.executable, ["-m", "replay.cli", "tui"]


def test_tui_opens_a_recording_while_its_writer_holds_it(tmp_path: Path) -> None:
    summary = sorted(REALDATA.glob("*/summary"))[0]
    root = tmp_path / "rec"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), str(summary)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        program, args = _command()
        tui_env = {**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        child = pexpect.spawn(
            program, [*args, str(root)], cwd=str(ROOT), env=tui_env, dimensions=(40, 120), encoding="utf-8", timeout=90
        )
        screen = Screen(40, 120)
        try:
            wait_for_screen(child, screen, shows=["Overview — as recorded", "node-live"])
            child.send("q")
            child.expect(pexpect.EOF)
        finally:
            close_child(child)
        assert child.exitstatus == 0, screen.text()
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "finalized"  # no lock error, nothing disturbed
        assert writer.wait(60) == 0
    finally:
        if writer.poll() is None:
            writer.send_signal(signal.SIGKILL)
            writer.wait(60)
    assert not list(tmp_path.glob(".rec.snapshot-*"))  # the TUI's snapshot went with it
