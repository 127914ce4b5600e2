"""On-disk layout of a recording directory, the manifest, and private, durable file writes.

Layout (see FORMAT.md)::

    DIR/manifest.json              schema version, cluster/kubelet versions, options, counts
    DIR/journal/j000007.log        append-only frames, one per tick (not yet folded)
    DIR/parts/p000001-000006/      Parquet, one file per table, covering journal segments 1..6

Everything is created 0600 (files) and 0700 (directories): recordings hold pod names,
namespaces and resource figures that a user may not want readable by other local users.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .errors import RecordingError

FORMAT_NAME = "evictlens-recording"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
JOURNAL_DIR = "journal"
PARTS_DIR = "parts"
FILE_MODE = 0o600
DIR_MODE = 0o700

_SEGMENT = re.compile(r"^j(\d{6})\.log$")
_PART = re.compile(r"^p(\d{6})-(\d{6})$")


@dataclass
class Manifest:
    """What a reader needs before touching the data, and what ``evictlens info`` prints."""

    schema_version: int = SCHEMA_VERSION
    format: str = FORMAT_NAME
    created_by: str = "evictlens"
    source: str = "recorder"
    server_version: str | None = None
    kubelet_versions: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    start_time: str | None = None
    end_time: str | None = None
    finalized: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"

    @classmethod
    def from_json(cls, data: bytes, *, source: str) -> Manifest:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise RecordingError(f"not valid JSON ({exc})", source=source) from None
        if not isinstance(obj, dict) or obj.get("format") != FORMAT_NAME:
            raise RecordingError(f"not an evictlens recording manifest (format != {FORMAT_NAME})", source=source)
        version = obj.get("schema_version")
        if version != SCHEMA_VERSION:
            raise RecordingError(
                f"schema_version {version!r} is not supported; this evictlens reads {SCHEMA_VERSION}",
                source=source,
                field="schema_version",
            )
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in obj.items() if k in known})


def make_private_dir(path: Path) -> None:
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_private(path: Path, flags: int) -> int:
    """Open with mode 0600 whatever the umask, so no recording file is ever world-readable."""
    fd = os.open(path, flags, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return fd


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def segment_name(seq: int) -> str:
    return f"j{seq:06d}.log"


def part_name(first: int, last: int) -> str:
    return f"p{first:06d}-{last:06d}"


def list_segments(root: Path) -> list[tuple[int, Path]]:
    jdir = root / JOURNAL_DIR
    if not jdir.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in jdir.iterdir() if (m := _SEGMENT.match(p.name))]
    return sorted(found)


def list_parts(root: Path) -> list[tuple[int, int, Path]]:
    """Finished part directories, dropping any whose segment range another one covers.

    Compaction writes a wider part before deleting the narrower ones, so after a crash both
    may exist; the widest wins and nothing is read twice.
    """
    pdir = root / PARTS_DIR
    if not pdir.is_dir():
        return []
    found = sorted(
        ((int(m.group(1)), int(m.group(2)), p) for p in pdir.iterdir() if (m := _PART.match(p.name))),
        key=lambda t: (t[0], -t[1]),
    )
    kept: list[tuple[int, int, Path]] = []
    for first, last, path in found:
        if any(f <= first and last <= la for f, la, _ in kept):
            continue
        kept.append((first, last, path))
    return kept


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        else:
            path.unlink()
