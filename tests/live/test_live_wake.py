"""live/wake.py: a follower's wait ends when the writer appends, when it is interrupted, or at its timeout."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

import live.wake as wake_mod
from live.wake import JournalWake
from recordings import format as fmt

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
LONG = 60.0
"""A deadline no healthy run comes near: the waits below end on the event, not on it."""


def _later(action: object) -> threading.Thread:
    """Run ``action`` once the waiting thread is (very likely) in its wait; the result never depends on it:
    an event that comes before the wait is still pending on the descriptor."""
    thread = threading.Thread(target=action)  # type: ignore[arg-type]
    thread.start()
    return thread


@linux
def test_an_append_to_a_segment_wakes_the_wait(tmp_path: Path) -> None:
    journal = tmp_path / fmt.JOURNAL_DIR
    journal.mkdir()
    segment = journal / fmt.segment_name(1)
    segment.write_bytes(b"")
    w = JournalWake(tmp_path)
    assert w.event_driven
    thread = _later(lambda: segment.open("ab").write(b"frame"))
    assert w.wait(LONG) is True
    thread.join()
    w.close()


@linux
def test_a_journal_made_after_the_wake_is_watched(tmp_path: Path) -> None:
    w = JournalWake(tmp_path)
    (tmp_path / fmt.JOURNAL_DIR).mkdir()  # the root's watch sees it made: the journal is watched from then on
    assert w.wait(LONG) is True
    w.wait(0)  # drained
    segment = tmp_path / fmt.JOURNAL_DIR / fmt.segment_name(1)
    thread = _later(lambda: segment.write_bytes(b"frame"))
    assert w.wait(LONG) is True
    thread.join()
    w.close()


@linux
def test_nothing_written_waits_the_timeout(tmp_path: Path) -> None:
    (tmp_path / fmt.JOURNAL_DIR).mkdir()
    w = JournalWake(tmp_path)
    assert w.wait(0.01) is False
    w.close()


def test_interrupt_wakes_a_wait_in_another_thread(tmp_path: Path) -> None:
    w = JournalWake(tmp_path)
    thread = _later(w.interrupt)
    assert w.wait(LONG) is True
    thread.join()
    w.close()


def test_without_inotify_the_wait_is_a_poll(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wake_mod, "_libc", lambda: None)
    w = JournalWake(tmp_path)
    assert not w.event_driven and w.fileno() == -1
    assert w.wait(0.01) is False
    w.interrupt()
    assert w.wait(LONG) is True
    w.close()
    w.close()  # twice: nothing left to close
