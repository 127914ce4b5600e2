"""The append-only journal: length-prefixed, checksummed, compressed orjson frames.

A frame is ``b"EVJ1" | u32 length | u32 crc32(payload) | payload`` where the payload is
zlib-compressed orjson.  One frame holds one finished tick, so a reader that stops at the
first short or corrupt frame sees every finished tick and nothing half-written: that is the
whole of the crash-safety argument for a SIGKILL at any instant.
"""

from __future__ import annotations

import errno
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from kube.errors import RecordingError

from .format import open_private

MAGIC = b"EVJ1"
_HEADER = struct.Struct("<4sII")
HEADER_SIZE = _HEADER.size
MAX_FRAME = 256 << 20
"""Largest compressed payload a frame may hold (one tick of every node, zlib'd: a 1000-node tick
is ~30 MB). The writer refuses a larger one and readers read no more than this per frame, so a
damaged length field or a huge sparse tail never makes them read a whole segment into memory."""


class JournalWriteError(RecordingError):
    """A frame could not be made durable; the segment was cut back to its last whole frame."""


def encode_frame(payload: dict[str, Any]) -> bytes:
    body = zlib.compress(orjson.dumps(payload), 1)
    return _HEADER.pack(MAGIC, len(body), zlib.crc32(body)) + body


def read_frame_at(fd: int, pos: int, size: int) -> tuple[int, dict[str, Any] | None, str]:
    """(end, payload, problem) of the frame at ``pos`` of an open segment of ``size`` bytes;
    payload None when it is not intact. Reads at most one header and one bounded body."""
    header = os.pread(fd, HEADER_SIZE, pos)
    if len(header) < HEADER_SIZE:
        return size, None, "short frame header"
    magic, length, crc = _HEADER.unpack(header)
    start = pos + HEADER_SIZE
    if magic != MAGIC:
        return start, None, "bad frame magic"
    if length > MAX_FRAME:
        return start, None, f"frame length {length} above the {MAX_FRAME}-byte limit"
    if start + length > size:
        return size, None, f"frame of {length} bytes cut short at {size - start}"
    body = os.pread(fd, length, start)
    if len(body) != length:
        return size, None, f"frame of {length} bytes cut short at {len(body)}"
    if zlib.crc32(body) != crc:
        return start + length, None, "frame checksum mismatch"
    try:
        payload = orjson.loads(zlib.decompress(body))
    except (zlib.error, orjson.JSONDecodeError):
        return start + length, None, "frame does not decompress"
    if not isinstance(payload, dict):
        return start + length, None, "frame is not a JSON object"
    return start + length, payload, ""


SCAN_BLOCK = 4 << 20


def next_intact(fd: int, pos: int, size: int) -> int | None:
    """Offset of the next intact frame at or after ``pos``, or None: scanned SCAN_BLOCK bytes at
    a time (plus one frame), and holes of a sparse file are skipped without reading them."""
    while pos < size:
        pos = _next_data(fd, pos, size)
        if pos >= size:
            return None
        block = os.pread(fd, min(SCAN_BLOCK, size - pos), pos)
        if not block:
            return None
        at = block.find(MAGIC)
        while at >= 0:
            if read_frame_at(fd, pos + at, size)[1] is not None:
                return pos + at
            at = block.find(MAGIC, at + 1)
        # a magic split across blocks is found by starting the next block 3 bytes early
        pos += max(1, len(block) - (len(MAGIC) - 1))
    return None


def _next_data(fd: int, pos: int, size: int) -> int:
    """Where data resumes at or after ``pos`` (``size`` when only a hole follows)."""
    seek_data = getattr(os, "SEEK_DATA", None)
    if seek_data is None:
        return pos
    try:
        return os.lseek(fd, pos, seek_data)
    except OSError as exc:
        return size if exc.errno == errno.ENXIO else pos


def read_frames(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (end offset, payload) for each intact frame; stop quietly at a torn tail."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            end, payload, _problem = read_frame_at(fd, pos, size)
            if payload is None:
                return
            pos = end
            yield pos, payload
    finally:
        os.close(fd)


def valid_length(path: Path) -> int:
    last = 0
    for end, _payload in read_frames(path):
        last = end
    return last


class JournalWriter:
    """Appends frames to one segment file and makes each durable before returning."""

    def __init__(self, path: Path) -> None:
        self.path = path
        keep = valid_length(path) if path.exists() else 0
        self._fd = open_private(path, os.O_WRONLY | os.O_CREAT)
        os.ftruncate(self._fd, keep)
        os.lseek(self._fd, keep, os.SEEK_SET)
        self.size = keep

    def append(self, payload: dict[str, Any]) -> int:
        """Write and fsync one frame; on failure cut the file back so no torn frame remains."""
        frame = encode_frame(payload)
        if len(frame) - HEADER_SIZE > MAX_FRAME:
            raise JournalWriteError(
                f"one frame would hold {len(frame) - HEADER_SIZE} compressed bytes, above the journal's "
                f"{MAX_FRAME}-byte limit",
                source=str(self.path),
            )
        try:
            view = memoryview(frame)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            try:
                os.ftruncate(self._fd, self.size)
                os.lseek(self._fd, self.size, os.SEEK_SET)
            except OSError:
                pass
            full = exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
            problem = "disk full" if full else f"write failed ({exc.strerror})"
            raise JournalWriteError(problem, source=str(self.path)) from None
        self.size += len(frame)
        return len(frame)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
