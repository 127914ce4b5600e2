"""Waking a follower as soon as the writer appends a frame, instead of at its next poll.

A follower (the live engine of ``watch``, ``tui --live/--follow``) looked for new ticks every 0.25–1 s: on
average half of that was added to the time from a frame's append to its decision. On Linux the journal
directory is watched with inotify (inotify(7), through ctypes: no dependency), so a write to a segment, a new
segment, a fold or the manifest's rename wakes the follower at once. Where inotify is not available (another
OS, no watch left: ``fs.inotify.max_user_watches``) :meth:`JournalWake.wait` sleeps its timeout, which is the
poll it replaces. A wake-up only says "look": the tail reads what is intact (a frame still being written is
left for the next wake-up), so spurious or coalesced events cost a few stat calls and lose nothing. Callers
keep a timeout as a safety net (a missed event costs at most one poll period).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import select
import sys
import weakref
from pathlib import Path

from recordings import format as fmt

__all__ = ["JournalWake"]

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
JOURNAL_MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE
ROOT_MASK = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE
"""The root: the journal directory made, the manifest renamed into place (finalize), the lock let go."""


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc


class JournalWake:
    """What a follower waits on between polls: :meth:`wait` returns early when the recording at ``root``
    changes (inotify) or when :meth:`interrupt` is called (quitting), else after its timeout."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._inotify = -1
        self._journal_watched = False
        self._pipe_r, self._pipe_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        libc = _libc()
        if libc is not None:
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd >= 0:
                self._inotify = fd
                self._libc = libc
                if not self._watch(root, ROOT_MASK):
                    os.close(fd)
                    self._inotify = -1
                else:
                    self._watch_journal()
        self._finalizer = weakref.finalize(self, _close, [self._inotify, self._pipe_r, self._pipe_w])

    @property
    def event_driven(self) -> bool:
        """True when changes wake :meth:`wait` (inotify); False when it only sleeps its timeout."""
        return self._inotify >= 0

    def _watch(self, path: Path, mask: int) -> bool:
        return int(self._libc.inotify_add_watch(self._inotify, os.fsencode(path), mask)) >= 0

    def _watch_journal(self) -> None:
        """The journal directory is made by the writer, maybe after the follower started: watched once it is."""
        if self._inotify >= 0 and not self._journal_watched:
            self._journal_watched = self._watch(self.root / fmt.JOURNAL_DIR, JOURNAL_MASK)

    def wait(self, timeout: float) -> bool:
        """Block until the recording changes, :meth:`interrupt`, or ``timeout`` seconds; True when woken early."""
        fds = [self._pipe_r] + ([self._inotify] if self._inotify >= 0 else [])
        try:
            ready, _w, _x = select.select(fds, [], [], max(0.0, timeout))
        except InterruptedError:  # a signal: the caller looks again
            return True
        for fd in ready:
            self._drain(fd)
        self._watch_journal()
        return bool(ready)

    def interrupt(self) -> None:
        """Wake a :meth:`wait` in another thread now (the follower is quitting)."""
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._pipe_w, b"x")

    def fileno(self) -> int:
        """The descriptor an event loop can watch (``loop.add_reader``); -1 without inotify. After it is
        readable, call :meth:`drain`."""
        return self._inotify

    def drain(self) -> None:
        if self._inotify >= 0:
            self._drain(self._inotify)
        self._watch_journal()

    @staticmethod
    def _drain(fd: int) -> None:
        while True:
            try:
                if not os.read(fd, 1 << 16):
                    return
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                return

    def close(self) -> None:
        self._finalizer()


def _close(fds: list[int]) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
