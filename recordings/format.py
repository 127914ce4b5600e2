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
import errno
import fcntl
import os
import re
import shutil
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from kube.errors import InputError, RecordingError

FORMAT_NAME = "evictlens-recording"
SCHEMA_VERSION = 3
# Every schema version this evictlens reads (FORMAT.md §9): v1 parts have no checksums.json, v1 and v2
# recordings no kernel_events table (they read as having no kernel kills).
READABLE_VERSIONS = (1, 2, 3)
MANIFEST = "manifest.json"
LOCK = "writer.lock"
CHECKSUMS = "checksums.json"
JOURNAL_DIR = "journal"
PARTS_DIR = "parts"
FILE_MODE = 0o600
DIR_MODE = 0o700

# Six digits, or more once a rolling recording (``--retain``) has folded a million times.
_SEGMENT = re.compile(r"^j(\d{6,})\.log$")
_PART = re.compile(r"^p(\d{6,})-(\d{6,})$")


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
    # What the source could not give (``import --prometheus``: missing series, scrape interval);
    # written only when non-empty, so other manifests are unchanged and older readers ignore it.
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> bytes:
        obj = asdict(self)
        if not obj["notes"]:
            del obj["notes"]
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"

    @classmethod
    def from_json(cls, data: bytes, *, source: str) -> Manifest:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise RecordingError(f"not valid JSON ({exc})", source=source) from None
        if not isinstance(obj, dict) or obj.get("format") != FORMAT_NAME:
            raise RecordingError(f"not an evictlens recording manifest (format != {FORMAT_NAME})", source=source)
        version = obj.get("schema_version")
        if version not in READABLE_VERSIONS or isinstance(version, bool):
            readable = ", ".join(str(v) for v in READABLE_VERSIONS)
            raise RecordingError(
                f"schema_version {version!r} is not supported; this evictlens reads versions {readable}"
                + (" (written by a newer evictlens? upgrade evictlens)" if isinstance(version, int) else ""),
                source=source,
                field="schema_version",
            )
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in obj.items() if k in known})


def make_private_dir(path: Path) -> list[Path]:
    """Create ``path`` and any missing parents 0700 whatever the umask; returns those created
    (outermost first), so a caller that fails later can remove exactly what it made."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and not probe.is_symlink():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    missing.reverse()
    created: list[Path] = []
    for d in missing:
        try:
            d.mkdir(mode=DIR_MODE)
        except FileExistsError:
            if not d.is_dir():
                raise
            continue
        created.append(d)
        os.chmod(d, DIR_MODE)  # mkdir's mode is filtered by the umask
    if not missing:
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(path))
        os.chmod(path, DIR_MODE)
    return created


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


def dir_bytes(root: Path) -> int:
    """Bytes the files under ``root`` take (their lengths). A live writer renames and removes files
    while this walks (folds, retention, ``*.tmp`` work files): what vanished meanwhile is not counted."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_size
            except OSError:
                continue
    return total


def is_out_of_space(exc: BaseException) -> bool:
    """ENOSPC, EFBIG (RLIMIT_FSIZE) or EDQUOT, also when polars wraps the OS error in its own."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL
    found = re.search(r"os error (\d+)\)", str(exc))
    return found is not None and int(found.group(1)) in _FULL


_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


def file_crc32(path: Path) -> tuple[int, int]:
    """(size in bytes, CRC-32) of a file, read in 1 MiB blocks."""
    crc, size = 0, 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            crc = zlib.crc32(block, crc)
            size += len(block)
    return size, crc


def write_checksums(part: Path) -> None:
    """Record the size and CRC-32 of every Parquet file of a (not yet published) part.

    As Prometheus' TSDB keeps a CRC-32 per chunk: a flipped byte or a truncated copy is then
    an error naming the file instead of whatever polars manages to decode.
    """
    files = {}
    for f in sorted(part.glob("*.parquet")):
        size, crc = file_crc32(f)
        files[f.name] = {"bytes": size, "crc32": crc}
    body = orjson.dumps({"algorithm": "crc32", "files": files}, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    fd = open_private(part / CHECKSUMS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(body + b"\n")
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def read_checksums(part: Path, *, source: str) -> dict[str, tuple[int, int]] | None:
    """The part's recorded (size, crc32) per file; None when the part has no checksums.json (v1)."""
    path = part / CHECKSUMS
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordingError(f"cannot read ({exc.strerror})", source=f"{source}/{CHECKSUMS}") from None
    try:
        obj = orjson.loads(data)
        if obj.get("algorithm") != "crc32":
            raise ValueError(f"unknown algorithm {obj.get('algorithm')!r}")
        return {name: (int(v["bytes"]), int(v["crc32"])) for name, v in obj["files"].items()}
    except (orjson.JSONDecodeError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RecordingError(
            f"damaged checksum list ({exc}); expected {{'algorithm': 'crc32', 'files': {{name: {{bytes, crc32}}}}}}",
            source=f"{source}/{CHECKSUMS}",
        ) from None


def verify_part(part: Path, *, required: bool, source: str) -> None:
    """Check every Parquet file of ``part`` against its checksums.json (one error naming the file)."""
    sums = read_checksums(part, source=source)
    present = {f.name for f in part.glob("*.parquet")}
    if sums is None:
        if required and present:
            raise RecordingError(f"part has no {CHECKSUMS} (schema v2 parts always have one)", source=source)
        return
    unlisted = sorted(present - set(sums))
    if unlisted:
        raise RecordingError(f"file not listed in {CHECKSUMS}", source=f"{source}/{unlisted[0]}")
    for name, (size, crc) in sorted(sums.items()):
        f = part / name
        if name not in present:
            raise RecordingError(f"missing (listed in {CHECKSUMS})", source=f"{source}/{name}")
        try:
            got_size, got_crc = file_crc32(f)
        except OSError as exc:
            raise RecordingError(f"cannot read ({exc.strerror})", source=f"{source}/{name}") from None
        if got_size != size:
            raise RecordingError(
                f"truncated or damaged: {got_size} bytes, {CHECKSUMS} says {size}", source=f"{source}/{name}"
            )
        if got_crc != crc:
            raise RecordingError(
                f"corrupted: CRC-32 {got_crc:08x}, {CHECKSUMS} says {crc:08x}", source=f"{source}/{name}"
            )


class RecordingBusyError(InputError):
    """Another writer holds the recording's lock.

    Deliberately not a :class:`RecordingError`: the clean-up that follows a failed record,
    import or scenario (removing what the command created) must not run on a directory that
    another process is writing.
    """


class WriterLock:
    """An exclusive ``flock`` on ``DIR/writer.lock`` for a writer's whole lifetime.

    ``flock`` (not ``fcntl``/``lockf`` record locks) because it belongs to the open file, so
    the kernel drops it when the process dies however it dies, and closing another descriptor
    of the file does not release it. The holder writes its pid into the file for the error a
    second writer shows, and unlinks the file before unlocking it when it is done.
    """

    def __init__(self, fd: int, path: Path) -> None:
        self._fd, self.path = fd, path

    @classmethod
    def acquire(cls, root: Path) -> WriterLock:
        """Lock ``root`` (which must exist) or raise :class:`RecordingBusyError` naming the holder."""
        path = root / LOCK
        while True:
            fd = open_private(path, os.O_RDWR | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _lock_holder(fd)
                os.close(fd)
                who = f"pid {holder}" if holder else "a process that has not yet written its pid"
                raise RecordingBusyError(
                    f"another evictlens is writing this recording ({who}); wait for it to finish or stop it",
                    source=str(root),
                ) from None
            except BaseException:
                os.close(fd)
                raise
            try:
                now = os.stat(path)
            except FileNotFoundError:
                now = None
            mine = os.fstat(fd)
            if now is None or (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
                os.close(fd)  # locked a file its finishing holder had just unlinked: take the new one
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            except BaseException:
                os.close(fd)
                raise
            return cls(fd, path)

    def release(self) -> None:
        """Unlink the lock file, then unlock (closing it): a waiter never locks a stale file."""
        if self._fd < 0:
            return
        with contextlib.suppress(OSError):
            if os.path.samestat(os.stat(self.path), os.fstat(self._fd)):
                self.path.unlink()
        os.close(self._fd)
        self._fd = -1

    def __del__(self) -> None:  # a writer dropped without closing (tests simulating a crash)
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1


def live_writer(root: Path) -> int | None:
    """The pid of the writer holding ``root``'s lock, or None; never takes the lock itself.

    A shared ``flock`` probe (what ``pack`` once did) would make a restarting recorder see a second
    writer and exit, so this looks instead: a lock file that a live process holds a ``flock`` on
    (``/proc/locks`` names the file's inode), or where that table cannot be read, a lock file whose
    pid is alive. A writer killed by SIGKILL leaves its lock file, held by nobody: not live.
    """
    path = root / LOCK
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        pid = _lock_holder(fd)
    finally:
        os.close(fd)
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        table = None
    if table is not None:
        want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
        for line in table.splitlines():
            fields = line.split()
            if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].lower() == want and fields[3] == "WRITE":
                return int(fields[4]) if fields[4].isdigit() else (pid or 0)
        return None
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


def _lock_holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def remove_tree(path: Path) -> None:
    """Remove a directory this command created (used to leave the disk as it was found)."""
    shutil.rmtree(path, ignore_errors=True)


def remove_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir():
            for child in path.iterdir():
                child.unlink()
            path.rmdir()
        else:
            path.unlink()
