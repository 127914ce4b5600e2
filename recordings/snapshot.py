"""A consistent, private snapshot of a recording its writer is still writing (FORMAT.md §3.2).

Why: ``replay``, ``explain``, ``pack``, ``info`` and ``tui`` read a recording while a recorder keeps
writing it (``record --retain`` runs for weeks). The recorder folds journal segments into parts,
deletes parts that fell out of its window and rotates segments at any moment; a reader that opened
the files one by one could see a tick twice, lose one, or find a part gone. Part files are
immutable once published (written under ``NAME.tmp``, renamed), so a snapshot hard-links them into
a private directory — a part the writer deletes afterwards lives on in the snapshot — and copies
each journal segment up to its last whole frame. The listing is taken again after the links: if a
fold or a retention step happened in between, the snapshot is thrown away and taken again. The
writer's lock is never touched (a reader holding it, even shared, would make a restarting recorder
refuse to start).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import shutil
import tempfile
import threading
import weakref
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from kube.errors import RecordingError

from . import format as fmt
from .scratch import process_alive

ATTEMPTS = 50
"""Snapshots retried when the writer changed the listing meanwhile (a fold is one rename and a few
deletions, so two in a row are rare; fifty means a writer folding continuously)."""


KEEP_RECENT = 2
"""Snapshots of :func:`keep_until_unused` kept after their Recording is gone (see there)."""
_recent: deque[Path] = deque()
_dead: set[Path] = set()
_guard = threading.Lock()


def keep_until_unused(owner: object, snap: Path) -> None:
    """Remove ``snap`` once ``owner`` (a Recording reading it) is garbage collected and ``KEEP_RECENT`` newer
    snapshots were taken, or at exit. Not at once: ``open_recording(d).scan_ticks()`` returns a LazyFrame whose
    files are opened only when it is collected, after its Recording is gone."""
    with _guard:
        _recent.append(snap)
        while len(_recent) > KEEP_RECENT:
            old = _recent.popleft()
            if old in _dead:
                _dead.discard(old)
                fmt.remove_tree(old)
    weakref.finalize(owner, _owner_gone, snap)


def _owner_gone(snap: Path) -> None:
    with _guard:
        if snap in _recent:
            _dead.add(snap)
            return
    fmt.remove_tree(snap)


def _remove_all() -> None:
    with _guard:
        for snap in list(_recent) + list(_dead):
            fmt.remove_tree(snap)
        _recent.clear()
        _dead.clear()


atexit.register(_remove_all)


class _Changed(Exception):
    """The writer changed the directory while the snapshot was being taken: take it again."""


def is_live(root: Path) -> bool:
    """True when a live writer holds ``root`` (see :func:`recordings.format.live_writer`)."""
    return fmt.live_writer(root) is not None


@contextlib.contextmanager
def live_snapshot(root: Path) -> Iterator[Path]:
    """A directory that reads as ``root`` did at its last finished tick; removed on exit.

    When no writer holds ``root``, ``root`` itself (nothing can change under the reader). The
    snapshot sits beside ``root`` (same filesystem: hard links, no copying of Parquet) or, when
    that directory is not writable, in the system temporary directory (files copied).
    """
    root = Path(root)
    if not is_live(root):
        yield root
        return
    snap = take_snapshot(root)
    try:
        yield snap
    finally:
        fmt.remove_tree(snap.parent)


def take_snapshot(root: Path) -> Path:
    """Take a snapshot of a live recording into a new private directory; the caller removes it."""
    if not (root / fmt.MANIFEST).is_file():
        raise RecordingError("not a recording directory (no manifest.json)", source=str(root))
    base = _private_dir(root)
    for _attempt in range(ATTEMPTS):
        snap = Path(tempfile.mkdtemp(prefix="try-", dir=base))
        try:
            _fill(root, snap)
        except _Changed:
            fmt.remove_tree(snap)
            continue
        except OSError as exc:
            fmt.remove_tree(base)
            raise RecordingError(
                f"cannot take a snapshot of the live recording ({exc.strerror})", source=str(root)
            ) from None
        except BaseException:
            fmt.remove_tree(base)
            raise
        final = base / root.name
        os.replace(snap, final)
        return final
    fmt.remove_tree(base)
    raise RecordingError(
        f"its writer changed it {ATTEMPTS} times while a snapshot was being taken; try again", source=str(root)
    )


def _private_dir(root: Path) -> Path:
    """A new 0700 directory beside ``root`` (hard links work there) or in the temporary directory, named
    ``.NAME.snapshot-PID-XXXX`` so that a later reader can tell a snapshot whose reader died (SIGKILL, OOM
    kill) from one being read, and remove it (:func:`sweep_orphans`)."""
    for where in (root.resolve().parent, None):
        with contextlib.suppress(OSError):
            sweep_orphans(root.name, Path(where) if where is not None else Path(tempfile.gettempdir()))
        try:
            return Path(tempfile.mkdtemp(prefix=f".{root.name}.snapshot-{os.getpid()}-", dir=where))
        except OSError:
            if where is None:
                raise
    raise AssertionError("unreachable")


def sweep_orphans(name: str, where: Path) -> list[Path]:
    """Remove ``where/.NAME.snapshot-PID-*`` directories whose reader process is gone; return them.

    A reused pid keeps an orphan until that process ends too (harmless: it is only kept longer). Names
    without a pid (written before it was added) are left alone: nothing tells whether they are in use."""
    removed: list[Path] = []
    prefix = f".{name}.snapshot-"
    for entry in os.scandir(where):
        if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
            continue
        pid = entry.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or process_alive(int(pid)):
            continue
        fmt.remove_tree(Path(entry.path))
        removed.append(Path(entry.path))
    return removed


def _listing(root: Path) -> list[tuple[int, int, str]]:
    return [(first, last, path.name) for first, last, path in fmt.list_parts(root)]


def _fill(root: Path, snap: Path) -> None:
    """Link the parts, copy the journal up to its last whole frame, check nothing moved meanwhile."""
    manifest = (root / fmt.MANIFEST).read_bytes()  # replaced atomically: always a whole one
    parts = _listing(root)
    os.mkdir(snap / fmt.PARTS_DIR, fmt.DIR_MODE)
    os.mkdir(snap / fmt.JOURNAL_DIR, fmt.DIR_MODE)
    covered: set[int] = set()
    for first, last, name in parts:
        covered.update(range(first, last + 1))
        src = root / fmt.PARTS_DIR / name
        dst = snap / fmt.PARTS_DIR / name
        os.mkdir(dst, fmt.DIR_MODE)
        try:
            files = sorted(os.listdir(src))
        except FileNotFoundError:
            raise _Changed from None  # retention or compaction removed it after the listing
        for f in files:
            if not f.endswith(".tmp"):
                _link_or_copy(src / f, dst / f)
        _check_whole(dst, files)
    segments = [path for seq, path in fmt.list_segments(root) if seq not in covered]
    for i, path in enumerate(segments):
        _copy_segment(path, snap / fmt.JOURNAL_DIR / path.name, last=i == len(segments) - 1)
    if _listing(root) != parts:
        raise _Changed  # a fold published a part (its segments may be gone) or retention dropped one
    fd = fmt.open_private(snap / fmt.MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as fh:
        fh.write(manifest)


def _check_whole(part: Path, files: list[str]) -> None:
    """A part listed while something removed it holds fewer files than its checksums.json lists
    (or has lost that list): take the snapshot again rather than hand a reader a partial part."""
    if not files:
        raise _Changed
    parquet = {f for f in files if f.endswith(".parquet")}
    try:
        sums = fmt.read_checksums(part, source=str(part))
    except RecordingError:
        raise _Changed from None
    if sums is None:
        if parquet:
            raise _Changed
        return
    if set(sums) != parquet:
        raise _Changed


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except FileNotFoundError:
        raise _Changed from None
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES):
            raise
        try:
            with open(src, "rb") as fin:  # opened: a deletion now no longer matters
                fd = fmt.open_private(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                with os.fdopen(fd, "wb") as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)
        except FileNotFoundError:
            raise _Changed from None


def _copy_segment(src: Path, dst: Path, *, last: bool) -> None:
    """Copy a journal segment; the one being appended (``last``) only up to the end of its last
    intact frame (the last finished tick), so the frame being written now is never copied half
    written. A closed segment is copied whole: damage in it stays for the reader to report."""
    from .reader import _read_segment  # local: the reader opens snapshots through this module

    try:
        fin = open(src, "rb")  # noqa: SIM115 (one descriptor for the scan and the copy)
    except FileNotFoundError:
        raise _Changed from None  # folded meanwhile: its part is in the next listing
    with fin:
        fd = fin.fileno()
        end = _read_segment(fd, src, last=True, skip_bad=True).valid_end if last else os.fstat(fd).st_size
        out = fmt.open_private(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(out, "wb") as fout:
            pos = 0
            while pos < end:
                block = os.pread(fd, min(end - pos, 1 << 20), pos)
                if not block:
                    break
                fout.write(block)
                pos += len(block)
