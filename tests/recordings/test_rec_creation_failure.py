"""A disk that is full when a recording is created: one line, nothing left behind (no journal/,
parts/ or empty manifest.json.tmp), so the same command works once there is room; and a journal
write that fails says how much was kept, even when that is nothing."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from rec_support import REPO, FakeServer, child_env, summary_files

from kube.errors import RecordingError
from recordings import format as fmt
from recordings import journal, writer
from recordings.format import Manifest
from recordings.reader import open_recording
from recordings.writer import RecordingWriter

T0 = 1_716_200_122_000_000


def _full(*_args: Any, **_kw: Any) -> Any:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _manifest_full(path: Path, data: bytes) -> None:
    """What a full disk does to write_atomic: the .tmp is created, then the write fails."""
    path.with_name(path.name + ".tmp").touch()
    _full()


def _dir_full(name: str) -> Callable[[Path], list[Path]]:
    real = fmt.make_private_dir

    def make(path: Path) -> list[Path]:
        if path.name == name:
            _full()
        return real(path)

    return make


def _segment_full(path: Path) -> None:
    path.touch()
    _full()


FAILURES: dict[str, tuple[str, Callable[..., Any]]] = {
    "journal dir": ("make_private_dir", _dir_full(fmt.JOURNAL_DIR)),
    "parts dir": ("make_private_dir", _dir_full(fmt.PARTS_DIR)),
    "manifest": ("write_atomic", _manifest_full),
    "journal segment": ("JournalWriter", _segment_full),
}


def _summary() -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(summary_files()[0].read_bytes())
    return doc


@pytest.mark.parametrize("existed", [False, True], ids=["new-dir", "empty-dir"])
@pytest.mark.parametrize("where", list(FAILURES))
def test_disk_full_at_creation_is_one_line_leaves_nothing_and_a_retry_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, existed: bool
) -> None:
    root = tmp_path / "rec"
    if existed:
        root.mkdir()
    name, fake = FAILURES[where]
    target = writer if name == "JournalWriter" else fmt
    with monkeypatch.context() as patch:
        patch.setattr(target, name, fake)
        with pytest.raises(RecordingError) as info:
            RecordingWriter(root, Manifest(source="test"))
    line = info.value.one_line()
    assert line == (
        f"{root}: disk full while creating the recording (No space left on device); removed what this command "
        "had created, so the same command can be run again once there is room"
    )
    assert (sorted(os.listdir(root)) == []) if existed else not root.exists()
    w = RecordingWriter(root, Manifest(source="test"))  # the retry, with room again
    t = w.begin_tick(T0)
    t.add_summary("node-a", _summary(), scraped=T0)
    w.commit(t)
    w.finalize()
    assert [t.index for t in open_recording(root).ticks()] == [0]


def test_import_onto_a_full_disk_says_one_line_and_a_retry_imports(tmp_path: Path) -> None:
    """The real command (a child process whose manifest write meets ENOSPC), then the retry."""
    out = tmp_path / "rec"
    code = textwrap.dedent(
        """
        import errno, os, sys
        from recordings import format as fmt
        from recordings.cli import main

        def full(path, data):
            path.with_name(path.name + ".tmp").touch()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        fmt.write_atomic = full
        sys.exit(main(sys.argv[1:]))
        """
    )
    args = ["import", "-o", str(out), str(summary_files()[0])]
    res = subprocess.run(
        [sys.executable, "-c", code, *args], env=child_env(), cwd=REPO, capture_output=True, text=True, check=False
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "disk full while creating the recording" in res.stderr, res.stderr
    assert not out.exists()
    again = subprocess.run(
        [sys.executable, "-m", "recordings.cli", *args],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert open_recording(out).manifest.finalized


class _FullDisk:
    """``os`` as the journal sees it, with every write failing ENOSPC."""

    def __getattr__(self, name: str) -> Any:
        return _full if name == "write" else getattr(os, name)


def test_a_failed_journal_write_says_the_last_kept_tick_or_that_none_was_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = RecordingWriter(tmp_path / "rec", Manifest(source="test"))
    t = w.begin_tick(T0)
    t.add_summary("node-a", _summary(), scraped=T0)
    with monkeypatch.context() as patch:
        patch.setattr(journal, "os", _FullDisk())
        with pytest.raises(RecordingError, match=r"disk full; no tick was kept: the recording holds no tick yet$"):
            w.commit(t)
    t = w.begin_tick(T0 + 10_000_000)
    t.add_summary("node-a", _summary(), scraped=t.time)
    w.commit(t)
    t = w.begin_tick(T0 + 20_000_000)
    with monkeypatch.context() as patch:
        patch.setattr(journal, "os", _FullDisk())
        kept = r"disk full; the recording is valid up to the previous tick \(tick 1\)$"
        with pytest.raises(RecordingError, match=kept):
            w.commit(t)
    w.close_after_failure()
    assert [t.index for t in open_recording(tmp_path / "rec").ticks()] == [1]


def test_record_onto_a_full_disk_says_one_line_and_a_retry_records(server: FakeServer, tmp_path: Path) -> None:
    """The fault matrix's case: ``record`` with the disk already full used to end in ``internal
    error: OSError [Errno 28]`` and leave journal/, parts/ and an empty manifest.json.tmp that
    made the retry fail ("directory is not empty")."""
    out = tmp_path / "rec"
    args = [
        "record",
        "--status",
        "plain",
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
        "--duration",
        "1s",
    ]
    code = textwrap.dedent(
        """
        import errno, os, sys
        from recordings import format as fmt
        from recordings.cli import main

        def full(path, data):
            path.with_name(path.name + ".tmp").touch()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        fmt.write_atomic = full
        sys.exit(main(sys.argv[1:]))
        """
    )
    res = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1, res.stderr
    assert "disk full while creating the recording (No space left on device)" in res.stderr
    assert "internal error" not in res.stderr and not out.exists()
    again = subprocess.run(
        [sys.executable, "-m", "recordings.cli", *args],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert open_recording(out).manifest.finalized
