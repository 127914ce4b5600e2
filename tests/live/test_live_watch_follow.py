"""``evictlens watch REC --follow``: a recording another process is writing (here the sample player, on this test's
pid, held tick by tick), followed from where it stood, every tick after that decided, ended when the writer
finishes; a recording nobody writes is refused in one line, exit 2."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from rec_support import wait_for
from tests_live_advice import ADVISED_FLAGS
from watch_support import Watch, run_watch

from live.play import ScenarioPlayer, load_sample
from recordings import format as fmt


def test_follow_a_recording_being_written(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    gate = threading.Semaphore(0)  # one release per tick after the first
    stopped = threading.Event()

    now = [0.0]

    def wait(seconds: float) -> bool:  # each tick's wait ends when the gate lets it through
        while not gate.acquire(timeout=0.05):
            if stopped.is_set():
                return True
        now[0] += seconds
        return False

    scenario = load_sample("jvm-spike", kubelet_flags=ADVISED_FLAGS)
    player = ScenarioPlayer(scenario, root, speed=1, kubelet_flags=ADVISED_FLAGS, clock=lambda: now[0], wait=wait)
    player.start()
    w = None
    try:
        wait_for(lambda: player.ticks_committed == 1, 60, "the first tick written")
        assert (root / fmt.LOCK).read_text().strip() == str(os.getpid())
        for _ in range(3):
            gate.release()  # ticks 1..3 are written before the watch starts
        w = Watch(str(root), "--follow", "--warn", "10m")
        w.wait_for(lambda: any("evictlens watch: following" in e for e in w.err), "the watch following")
        assert f"following {root} after tick" in "".join(w.err)
        for _ in range(40):
            gate.release()
        assert player.join(120) and player.error is None
        assert w.stop() == 0, "".join(w.err)  # it ends by itself once the writer let go; SIGTERM is a no-op then
    finally:
        stopped.set()
        if w is not None:
            w.kill()
    kinds = [line["kind"] for line in w.lines]
    assert kinds.index("warning") < kinds.index("predicted-eviction") < kinds.index("real-eviction")
    assert all(line["tick"] is None or line["tick"] >= 3 for line in w.lines)


def test_follow_ends_when_the_writer_finishes(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    release = threading.Event()
    now = [0.0]

    def wait(seconds: float) -> bool:
        assert release.wait(120)
        now[0] += seconds
        return False

    player = ScenarioPlayer(load_sample("jvm-spike"), root, speed=1, clock=lambda: now[0], wait=wait)
    player.start()
    w = Watch(str(root), "--follow")
    try:
        w.wait_for(lambda: any("following" in e for e in w.err), "the watch following")
        release.set()
        assert player.join(120)
        w.proc.wait(120)  # no signal: the writer's lock went, the watch read the last ticks and ended
        assert w.proc.returncode == 0, "".join(w.err)
    finally:
        release.set()
        w.kill()


def test_follow_refuses_a_recording_not_being_written(jvm_spike_rec: Path, tmp_path: Path) -> None:
    done = run_watch(str(jvm_spike_rec), "--follow")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"evictlens watch: {jvm_spike_rec}: is not being written (a finished recording: no live process holds "
        "writer.lock); --follow follows a recording that record or the flight recorder is writing (for a finished "
        "one: evictlens replay or tui)"
    ]
    # a writer that was killed leaves its lock file with a pid that is gone
    dead = tmp_path / "dead"
    dead.mkdir()
    (dead / fmt.LOCK).write_text(f"{_dead_pid()}\n")
    done = run_watch(str(dead), "--follow")
    assert done.returncode == 2 and "is not being written (no recording being written" in done.stderr
    done = run_watch(str(tmp_path / "nowhere"), "--follow")
    assert done.returncode == 2
    assert done.stderr.strip() == f"evictlens watch: {tmp_path / 'nowhere'}: no such recording directory"


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_follow_a_writer_that_is_killed(tmp_path: Path) -> None:
    """A writer that dies without finishing (SIGKILL) leaves its lock with a dead pid: the watch says so and ends."""
    import signal
    import subprocess
    import sys

    from watch_support import REPO, env

    root = tmp_path / "rec"
    code = "import sys; from pathlib import Path; from live.play import ScenarioPlayer, load_sample; "
    code += "ScenarioPlayer(load_sample('jvm-spike'), Path(sys.argv[1]), speed=1).run()"
    writer = subprocess.Popen([sys.executable, "-c", code, str(root)], cwd=REPO, env=env())
    w = None
    try:
        wait_for(lambda: (root / fmt.LOCK).exists() and (root / fmt.MANIFEST).exists(), 60, "the writer started")
        w = Watch(str(root), "--follow")
        w.wait_for(lambda: any("following" in e for e in w.err), "the watch following")
        writer.send_signal(signal.SIGKILL)
        writer.wait(60)
        w.proc.wait(120)
        assert w.proc.returncode == 0, "".join(w.err)
        w.stop()
        assert "its writer stopped without finishing" in "".join(w.err)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(60)
        if w is not None:
            w.kill()
