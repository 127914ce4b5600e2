"""``evictlens tui --live --sample jvm-spike --speed 10`` in a real 80×24 pseudo-terminal: a warning row shows
while the kill is still to come, then the kill row; and the live flags' bad input as one line, exit 2, before the
screen goes full."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect  # type: ignore[import-untyped]
import pytest
from vt_screen import Screen, close_child, wait_for_screen

from tui.live_source import PACE_ENV

ROOT = Path(__file__).resolve().parents[2]


def _command() -> tuple[str, list[str]]:
    script = Path(sys.executable).parent / "evictlens"
    if script.exists():
        return str(script), ["tui"]
    return sys.executable, ["-m", "replay.cli", "tui"]


def test_the_sample_play_warns_before_the_kill_at_80x24(tmp_path: Path) -> None:
    """The play's clock runs twice as fast as ``--speed 10`` says (``EVICTLENS_PLAY_PACE``): the warning comes at
    ~6 s, the kill ~5 s later; each wait is on what the terminal shows. That the warning came first is read off
    the events list (newest first: the warnings below the kill, and the kill's row says how long before it was
    warned), not from catching a frame between the two: at load 20 the screen can go from neither to both."""
    program, args = _command()
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "COLUMNS": "80",
        "LINES": "24",
        PACE_ENV: "2",
        "TMPDIR": str(tmp_path),
    }
    child = pexpect.spawn(
        program,
        [*args, "--live", "--sample", "jvm-spike", "--speed", "10"],
        cwd=str(ROOT),
        env=env,
        dimensions=(24, 80),
        encoding="utf-8",
        timeout=90,
    )
    screen = Screen(24, 80)
    try:
        wait_for_screen(child, screen, shows=["sample jvm-spike", "worker-1"])
        wait_for_screen(child, screen, shows=["✖ OOM KILL", "⚠ warning", "warned"])  # the kill's row, after it
        rows = screen.text().splitlines()
        kill = next(i for i, row in enumerate(rows) if "✖ OOM KILL" in row)
        warning = next(i for i, row in enumerate(rows) if "⚠ warning" in row)
        assert kill < warning, screen.text()  # newest first: the warning is older than the kill
        assert "warned " in rows[kill] and " before" in rows[kill], screen.text()
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        close_child(child)
    assert child.exitstatus == 0, screen.text()
    assert not any(tmp_path.iterdir()), "the played recording goes with the view"


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    program, args = _command()
    return subprocess.run(
        [program, *args, *argv],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_follow_refuses_a_recording_nobody_writes(jvm_rec: Path) -> None:
    done = _run(str(jvm_rec), "--follow")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "is not being written" in done.stderr, done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--follow"], "--follow: follows a recording being written"),
        (["--sample", "jvm-spike"], "--sample: plays a sample in the live view: add --live"),
        (["--live", "--speed", "10"], "--speed: takes effect only with --live --sample NAME"),
        (["--warn", "5m"], "--warn: is for the live view: add --live"),
        (["--context", "prod"], "--context: is for a live cluster: add --live"),
        (
            ["--live", "--sample", "jvm-spike", "--context", "prod"],
            "--context: is for a live cluster; not with --sample",
        ),
        (["--live", "--sample", "jvm-spike", "--warn", "soon"], "--warn"),
        (["--live", "--sample", "jvm-spike", "--speed", "fast"], "--speed"),
        (["--live", "--sample", "no-such-scenario"], "no-such-scenario"),
    ],
)
def test_bad_live_flags_are_one_line(argv: list[str], expected: str) -> None:
    done = _run(*argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr


def test_live_refuses_when_no_cluster_is_reachable(tmp_path: Path) -> None:
    """The API server is reached before the screen goes full: none there is one line, exit 2, nothing left."""
    import socket

    import yaml

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = tmp_path / "kubeconfig"
    kc.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    os.chmod(kc, 0o600)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    program, args = _command()
    done = subprocess.run(
        [program, *args, "--live", "--kubeconfig", str(kc)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "no cluster reachable" in done.stderr, done.stderr
    assert not any(tmp.iterdir()), "no private recording left behind"
