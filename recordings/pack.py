"""``evictlens pack`` / ``unpack``: one recording directory ⇄ one portable file.

The file is a plain (uncompressed) tar: Parquet is already zstd-compressed, and tar is
readable everywhere, so a bug report attachment can be inspected without evictlens.
Unpacking accepts only regular files and directories below the target, never links or
absolute or ``..`` paths, and recreates them 0600/0700.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path, PurePosixPath

from . import format as fmt
from .errors import RecordingError
from .reader import open_recording

SUFFIX = ".evictlens.tar"


def pack(src: Path, dest: Path) -> int:
    """Write ``src`` (a recording) to ``dest``; returns the file size."""
    open_recording(src)  # refuse to pack something that does not read back
    if dest.exists():
        raise RecordingError("already exists; choose another output file", source=str(dest))
    files = sorted(p for p in src.rglob("*") if p.is_file() and not p.name.endswith(".tmp"))
    files.sort(key=lambda p: p.name != fmt.MANIFEST)
    fd = fmt.open_private(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            info = tar.gettarinfo(str(path), arcname=path.relative_to(src).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = fmt.FILE_MODE
            with path.open("rb") as fh:
                tar.addfile(info, fh)
    return dest.stat().st_size


def unpack(src: Path, dest: Path) -> int:
    """Extract a packed recording into a new directory ``dest``; returns the file count."""
    if dest.exists() and any(dest.iterdir()):
        raise RecordingError("already exists and is not empty", source=str(dest))
    try:
        tar = tarfile.open(src, mode="r:*")  # noqa: SIM115 - closed by the with below
    except (OSError, tarfile.TarError) as exc:
        raise RecordingError(f"not a packed recording ({exc})", source=str(src)) from None
    count = 0
    with tar:
        members = tar.getmembers()
        names = {m.name for m in members}
        if fmt.MANIFEST not in names:
            raise RecordingError("not a packed recording (no manifest.json inside)", source=str(src))
        fmt.make_private_dir(dest)
        for m in members:
            rel = PurePosixPath(m.name)
            if rel.is_absolute() or ".." in rel.parts or not (m.isfile() or m.isdir()):
                raise RecordingError("unsafe entry (absolute path, '..' or link)", source=str(src), field=m.name)
            target = dest.joinpath(*rel.parts)
            if m.isdir():
                fmt.make_private_dir(target)
                continue
            fmt.make_private_dir(target.parent)
            fh = tar.extractfile(m)
            if fh is None:
                continue
            fd = fmt.open_private(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "wb") as out:
                while chunk := fh.read(1 << 20):
                    out.write(chunk)
            count += 1
    open_recording(dest)
    return count
