"""``evictlens pack`` / ``unpack``: one recording directory ⇄ one portable file.

The file is a plain (uncompressed) tar: Parquet is already zstd-compressed, and tar is
readable everywhere, so a bug report attachment can be inspected without evictlens.
``manifest.json`` comes first and ``pack-index.json`` (size and CRC-32 of every other
member) last, so a file cut short — a half-finished download or upload — always lacks its
index and is refused instead of unpacking part of a recording.

Unpacking accepts only regular files and directories below the target, never links or
absolute or ``..`` paths, and recreates them 0600/0700.  It extracts into a temporary
directory beside the target and renames it into place only once the result is complete
(index, part checksums, manifest counts), so a failure leaves nothing behind.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Literal

import orjson

from kube.errors import RecordingError

from . import format as fmt
from .journal import valid_length
from .reader import open_recording

SUFFIX = ".evictlens.tar"
INDEX = "pack-index.json"
INCIDENTS = "incidents"
"""Where ``evictlens record`` keeps its incidents inside the recording directory (flight/store.py)."""
PACK_FORMAT = "evictlens-pack"


@dataclass
class Unpacked:
    files: int
    notes: list[str] = field(default_factory=list)


class _Hashing(io.RawIOBase):
    """Feeds tarfile from a file while computing its size and CRC-32 in the same read."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh, self.crc, self.size = fh, 0, 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        block = self.fh.read(n)
        self.crc = zlib.crc32(block, self.crc)
        self.size += len(block)
        return block


def pack(src: Path, dest: Path) -> int:
    """Write ``src`` (a recording) to ``dest``; returns the file size."""
    from .snapshot import live_snapshot

    with live_snapshot(src) as snap:  # a recording being written: as of its last finished tick
        open_recording(snap)  # refuse to pack something that does not read back (checksums, schemas)
        if dest.exists() or dest.is_symlink():
            raise RecordingError("already exists; choose another output file", source=str(dest))
        files = _members(snap)
        return _write_pack(snap, dest, files)


_MEMBER = re.compile(r"manifest\.json|journal/j\d{6,}\.log|parts/p\d{6,}-\d{6,}/(?:[a-z_]+\.parquet|checksums\.json)")


def is_member(rel: str) -> bool:
    """Whether ``rel`` (a POSIX path inside a recording) is one of the recording's own files (FORMAT.md §1)."""
    return _MEMBER.fullmatch(rel) is not None


def _members(src: Path) -> list[tuple[Path, str]]:
    """Every regular file of the recording (manifest first) with its name in the pack.

    Never follows a link: a symbolic link anywhere below the recording (a linked ``parts/``,
    a linked Parquet file) is refused in one line that names the link, not its target — a pack
    travels in bug reports, and packing through a link could take in files from elsewhere (or,
    as ``rglob`` did, silently leave a linked ``parts/`` out). Work files (``*.tmp``), the
    writer's lock file and the flight recorder's ``incidents/`` (each incident already a pack of its
    own, FORMAT.md §1) are left out.
    """
    found: list[tuple[Path, str]] = []
    for dirpath, dirnames, filenames in os.walk(src):  # followlinks=False: a linked dir is listed, not entered
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if (not d.endswith(".tmp") and not (here == src and d == INCIDENTS)) or (here / d).is_symlink()
        )
        for name in sorted(dirnames) + sorted(filenames):
            path = here / name
            rel = path.relative_to(src).as_posix()
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise RecordingError(
                    f"holds a symbolic link ({rel}); pack stores only the recording's own files: replace the "
                    "link by a copy of what it points to",
                    source=str(src),
                )
            if stat.S_ISDIR(mode) or name.endswith(".tmp") or rel == fmt.LOCK or not is_member(rel):
                continue  # not part of the recording's layout (FORMAT.md §1): an earlier pack, a note, ...
            if not stat.S_ISREG(mode):
                raise RecordingError(f"holds {rel}, which is not a regular file", source=str(src))
            found.append((path, rel))
    found.sort(key=lambda m: (m[1] != fmt.MANIFEST, m[1]))
    return found


def _write_pack(src: Path, dest: Path, files: list[tuple[Path, str]]) -> int:
    index: dict[str, dict[str, int]] = {}
    try:
        fd = fmt.open_private(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except OSError as exc:  # /proc, a read-only mount, a missing directory
        raise RecordingError(f"cannot create the file there ({exc.strerror or exc})", source=str(dest)) from None
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path, arcname in files:
                with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as fh:
                    st = os.fstat(fh.fileno())
                    info = _info(tarfile.TarInfo(arcname))
                    info.size, info.mtime = st.st_size, int(st.st_mtime)
                    if arcname.startswith(fmt.JOURNAL_DIR + "/"):  # a torn tail (maybe a sparse 2 GB one) stays out
                        info.size = min(info.size, valid_length(path))
                    hashed = _Hashing(fh)
                    tar.addfile(info, hashed)
                if hashed.size != info.size:
                    raise RecordingError("changed while it was being packed", source=str(path))
                index[arcname] = {"bytes": hashed.size, "crc32": hashed.crc}
            body = orjson.dumps(
                {"format": PACK_FORMAT, "count": len(index), "files": index},
                option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS,
            )
            info = _info(tarfile.TarInfo(INDEX))
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
            raw.flush()
            os.fsync(raw.fileno())
    except BaseException as exc:
        dest.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise RecordingError(f"could not write the pack file ({exc.strerror})", source=str(dest)) from None
        raise
    return dest.stat().st_size


def _info(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = fmt.FILE_MODE
    return info


def unpack(src: Path, dest: Path) -> Unpacked:
    """Extract a packed recording into a new directory ``dest`` once it is known complete."""
    if dest.is_symlink():
        raise RecordingError(
            "is a symbolic link; give a new directory (unpack never writes through a link)", source=str(dest)
        )
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise RecordingError("already exists and is not an empty directory", source=str(dest))
    try:
        if not stat.S_ISREG(os.stat(src).st_mode):  # /dev/zero, a pipe: a pack is a file evictlens pack wrote
            raise RecordingError("not a regular file; expected a file written by evictlens pack", source=str(src))
    except OSError as exc:
        raise RecordingError(f"cannot read it ({exc.strerror})", source=str(src)) from None
    missing = dest.parent
    while not missing.parent.exists():
        missing = missing.parent
    created_parent = None if dest.parent.exists() else missing
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".unpacking", dir=dest.parent))
    except OSError as exc:  # /proc, a read-only mount, a file where a directory should be
        raise RecordingError(f"cannot create the directory there ({exc.strerror or exc})", source=str(dest)) from None
    try:
        result = _extract(src, tmp)
        _check_complete(src, tmp, result)
        os.chmod(tmp, fmt.DIR_MODE)
        os.replace(tmp, dest)
        fmt.fsync_dir(dest.parent)
    except BaseException:
        fmt.remove_tree(tmp)
        if created_parent is not None:
            fmt.remove_tree(created_parent)
        raise
    return result


_ReadMode = Literal["r:", "r:gz", "r:bz2", "r:xz"]
_COMPRESSED: tuple[tuple[bytes, _ReadMode], ...] = (
    (b"\x1f\x8b", "r:gz"),
    (b"BZh", "r:bz2"),
    (b"\xfd7zXZ\x00", "r:xz"),
)


def _read_mode(src: Path) -> _ReadMode:
    """The tar mode by the file's first bytes: evictlens pack writes a plain tar, which a user may have
    compressed. Guessing with ``r:*`` instead fed a 2 GB file of zeros to each decompressor in turn (minutes)."""
    try:
        with src.open("rb") as fh:
            head = fh.read(6)
    except OSError:
        return "r:"
    return next((mode for magic, mode in _COMPRESSED if head.startswith(magic)), "r:")


def _extract(src: Path, dest: Path) -> Unpacked:
    try:
        tar = tarfile.open(src, mode=_read_mode(src))  # noqa: SIM115 - closed by the with below
    except (OSError, tarfile.TarError) as exc:
        raise RecordingError(f"not a packed recording ({exc})", source=str(src)) from None
    result = Unpacked(0)
    index: dict[str, tuple[int, int]] | None = None
    seen: dict[str, tuple[int, int]] = {}
    with tar:
        try:
            members = tar.getmembers()
            names = [m.name for m in members]
            if fmt.MANIFEST not in names:
                raise RecordingError("not a packed recording (no manifest.json inside)", source=str(src))
            _check_members(tar, members, src, dest)
            for m in members:
                rel = PurePosixPath(m.name)
                if m.name == INDEX:
                    index = _read_index(tar, m, src)
                    continue
                target = dest.joinpath(*rel.parts)
                if m.isdir():
                    fmt.make_private_dir(target)
                    continue
                fmt.make_private_dir(target.parent)
                fh = tar.extractfile(m)
                if fh is None:
                    continue
                crc, size = 0, 0
                fd = fmt.open_private(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                with os.fdopen(fd, "wb") as out:
                    while chunk := fh.read(1 << 20):
                        crc, size = zlib.crc32(chunk, crc), size + len(chunk)
                        out.write(chunk)
                seen[m.name] = (size, crc)
                result.files += 1
        except (tarfile.TarError, EOFError) as exc:
            raise RecordingError(
                f"incomplete or damaged pack file ({exc}); was the download or copy cut short?", source=str(src)
            ) from None
        except OSError as exc:
            raise RecordingError(f"could not unpack ({exc.strerror})", source=str(dest)) from None
    if index is None:
        result.notes.append(
            f"{src.name} has no {INDEX} (packed by an evictlens before schema v2): checked by opening it "
            "and, when finalized, by its manifest counts"
        )
        return result
    if names[-1] != INDEX:
        raise RecordingError(f"damaged pack file: {INDEX} is not the last entry", source=str(src))
    for name, (size, crc) in sorted(index.items()):
        if name not in seen:
            raise RecordingError(f"incomplete pack file: {name} is listed in {INDEX} but missing", source=str(src))
        if seen[name] != (size, crc):
            got = seen[name]
            raise RecordingError(
                f"damaged pack file: {name} has {got[0]} bytes, CRC-32 {got[1]:08x}; "
                f"{INDEX} says {size} bytes, {crc:08x}",
                source=str(src),
            )
    extra = sorted(set(seen) - set(index))
    if extra:
        raise RecordingError(f"damaged pack file: {extra[0]} is not listed in {INDEX}", source=str(src))
    return result


def _check_members(tar: tarfile.TarFile, members: list[tarfile.TarInfo], src: Path, dest: Path) -> None:
    """Before anything is written: every entry is a regular file or directory of a recording's layout, none is
    sparse (112 KB of tar that would fill 2 GB of disk), each file has the size the index gives it, and the
    disk has room for them all."""
    for m in members:
        rel = PurePosixPath(m.name)
        if rel.is_absolute() or ".." in rel.parts or not (m.isfile() or m.isdir()):
            raise RecordingError("unsafe entry (absolute path, '..' or link)", source=str(src), field=m.name)
        if m.issparse():
            raise RecordingError("a sparse entry; evictlens pack never writes one", source=str(src), field=m.name)
        if m.isfile() and m.name != INDEX and not is_member(m.name):
            raise RecordingError("not a file of a recording (FORMAT.md §1)", source=str(src), field=m.name)
    index_member = next((m for m in members if m.name == INDEX), None)
    if index_member is not None:
        index = _read_index(tar, index_member, src)
        for m in members:
            if m.isfile() and m.name != INDEX and m.name in index and index[m.name][0] != m.size:
                raise RecordingError(
                    f"damaged pack file: {m.name} is {m.size} bytes, {INDEX} says {index[m.name][0]}",
                    source=str(src),
                )
    need = sum(m.size for m in members if m.isfile())
    free = shutil.disk_usage(dest).free
    if need > free:
        raise RecordingError(
            f"needs {need >> 20} MiB to unpack and the disk has {free >> 20} MiB free", source=str(dest)
        )


def _read_index(tar: tarfile.TarFile, member: tarfile.TarInfo, src: Path) -> dict[str, tuple[int, int]]:
    fh = tar.extractfile(member)
    try:
        obj = orjson.loads(fh.read() if fh is not None else b"")
        if obj.get("format") != PACK_FORMAT or obj.get("count") != len(obj["files"]):
            raise ValueError("format or count does not match")
        return {name: (int(v["bytes"]), int(v["crc32"])) for name, v in obj["files"].items()}
    except (orjson.JSONDecodeError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RecordingError(f"damaged {INDEX} ({exc})", source=str(src)) from None


def _check_complete(src: Path, root: Path, result: Unpacked) -> None:
    """The unpacked recording opens (part checksums) and, if finalized, holds what its manifest counts."""
    try:
        rec = open_recording(root)
    except RecordingError as exc:
        problem = exc.problem
        where = f"{exc.source}: " if exc.source else ""
        where = where.replace(str(root) + os.sep, "").replace(str(root), "")
        raise RecordingError(f"unpacks to a damaged recording ({where}{problem})", source=str(src)) from None
    if not rec.manifest.finalized:
        result.notes.extend(rec.notes)
        return
    counts = rec.count_rows()
    for key, value in sorted(counts.items()):
        expected = rec.manifest.counts.get(key)
        if expected is not None and expected != value:
            raise RecordingError(
                f"incomplete recording inside: manifest.json counts {expected} {key}, the files hold {value}",
                source=str(src),
            )
