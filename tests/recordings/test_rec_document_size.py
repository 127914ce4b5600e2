"""Issue 19 §7: a JSON/YAML input is read up to a bound, so ``explain --summary /dev/zero`` (which
used to read until the kernel killed it) or a huge file is one line, exit 2."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from rec_support import REPO, child_env

from kube.errors import InputError
from recordings.documents import MAX_DOCUMENT_BYTES, load_document

TOO_BIG = f"larger than the {MAX_DOCUMENT_BYTES >> 20} MiB a JSON or YAML document may have"


def _limit_memory() -> None:
    """The child may not grow past 2 GB: reading /dev/zero unbounded fails the test instead of the box."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_explain_summary_dev_zero_is_one_line_exit_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "replay.cli", "explain", "--summary", "/dev/zero"],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=_limit_memory,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"evictlens explain: /dev/zero: {TOO_BIG} (is it the right file?)\n"


def test_a_regular_file_past_the_bound_is_refused_by_its_size_unread(tmp_path: Path) -> None:
    big = tmp_path / "summary.json"
    with big.open("wb") as fh:  # sparse: no disk used, and reading it would take the whole bound
        fh.truncate(MAX_DOCUMENT_BYTES + 1)
    with pytest.raises(InputError, match=TOO_BIG) as err:
        load_document(big)
    assert err.value.source == str(big)


def test_a_document_from_a_pipe_is_read_not_judged_by_its_size(tmp_path: Path) -> None:
    """The bound is on the bytes read: a pipe (process substitution, stdin) has no size to judge it by."""
    fifo = tmp_path / "pods.json"
    os.mkfifo(fifo)
    body = b'{"kind": "PodList", "items": []}'

    def feed() -> None:
        with fifo.open("wb") as fh:
            fh.write(body)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    assert load_document(fifo) == {"kind": "PodList", "items": []}
    writer.join(60)
