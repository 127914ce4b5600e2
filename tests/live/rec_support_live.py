"""Helpers for the live tests: what a recording being written holds so far."""

from __future__ import annotations

import contextlib
from pathlib import Path


def journal_ticks(root: Path) -> list[int]:
    """The ticks committed to the journal so far (read-only; a torn tail is skipped)."""
    from recordings.journal import read_frames

    ticks: list[int] = []
    journal = root / "journal"
    for seg in sorted(journal.iterdir()) if journal.is_dir() else []:
        with contextlib.suppress(FileNotFoundError):
            ticks += [int(p["tick"]) for _end, p in read_frames(seg) if p.get("tick") is not None]
    return ticks


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
