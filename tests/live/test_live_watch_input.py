"""Bad input to ``evictlens watch``: one line on stderr naming the flag, exit 2, nothing on stdout."""

from __future__ import annotations

import socket

import pytest
from watch_support import run_watch

from recordings.recorder.rbac import rbac_text


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--sample", "jvm-spike", "--warn", "10x"],
            'evictlens watch: --warn: time: unknown unit "x" in duration "10x"',
        ),
        (["--sample", "jvm-spike", "--warn", "0s"], "evictlens watch: --warn: expected a positive duration, got '0s'"),
        (["--sample", "jvm-spike", "--warn", "ten"], 'evictlens watch: --warn: time: invalid duration "ten"'),
        (
            ["--sample", "jvm-spike", "--speed", "0"],
            "evictlens watch: --speed: expected a positive number of times real time (e.g. 10, 0.5 or max), got '0'",
        ),
        (["--sample", "no-such-sample"], "evictlens watch: --sample: no bundled scenario 'no-such-sample'"),
        (["--speed", "10"], "evictlens watch: --speed: takes effect only with --sample NAME"),
        (["--sample", "jvm-spike", "--context", "prod"], "evictlens watch: --context: --context is for a live cluster"),
        (
            ["rec", "--sample", "jvm-spike"],
            "evictlens watch: --sample: give a recording REC or --sample NAME, not both",
        ),
        (["--follow"], "evictlens watch: --follow: follows a recording being written: give its directory"),
        (["rec"], "evictlens watch: REC: watch follows a recording as it is written: add --follow"),
        (["--sample", "jvm-spike", "--listen", "nowhere"], "evictlens watch: --listen: expected HOST:PORT or :PORT"),
        (
            ["--sample", "jvm-spike", "--eviction-hard", "memory.available<lots"],
            "evictlens watch: --eviction-hard: expected a quantity such as 100Mi or 2Gi, got 'lots'",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], line: str) -> None:
    done = run_watch(*args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith(line), done.stderr


def test_a_port_in_use_is_one_line_exit_2() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = run_watch("--sample", "jvm-spike", "--listen", f"127.0.0.1:{port}")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        f"evictlens watch: --listen: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_print_rbac_is_records() -> None:
    done = run_watch("--print-rbac")
    assert done.returncode == 0 and done.stdout == rbac_text()
