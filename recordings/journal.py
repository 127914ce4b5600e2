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

from .errors import RecordingError
from .format import open_private

MAGIC = b"EVJ1"
_HEADER = struct.Struct("<4sII")
MAX_FRAME = 1 << 31


def encode_frame(payload: dict[str, Any]) -> bytes:
    body = zlib.compress(orjson.dumps(payload), 1)
    return _HEADER.pack(MAGIC, len(body), zlib.crc32(body)) + body


def read_frames(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (end offset, payload) for each intact frame; stop quietly at a torn tail."""
    data = path.read_bytes()
    pos = 0
    while pos + _HEADER.size <= len(data):
        magic, length, crc = _HEADER.unpack_from(data, pos)
        start = pos + _HEADER.size
        body = data[start : start + length]
        if magic != MAGIC or len(body) != length or zlib.crc32(body) != crc:
            return
        try:
            payload = orjson.loads(zlib.decompress(body))
        except (zlib.error, orjson.JSONDecodeError):
            return
        pos = start + length
        yield pos, payload


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
            raise RecordingError(
                f"{problem}; the recording is valid up to the previous tick", source=str(self.path)
            ) from None
        self.size += len(frame)
        return len(frame)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
