"""The rolling window of ``record --retain``: whole parts dropped, objects in force carried forward.

Why a *base* part: a pod listed once at the start of a week-long recording is stored once (a version is
stored only when it changes, FORMAT.md §5), in the oldest part. Dropping that part would make the pod
vanish from every later tick. So the parts that leave the window are replaced, in one step, by a part
named ``p000000-BBBBBB`` holding only the latest version of every pod, node object and ``/configz`` still
in force (not deleted) — with its original ``observed`` time, so "the version in force at *t* is the last
one observed at or before *t*" reads the same as before. Segment 0 is never a journal segment, so the
base's range covers every part it replaces and no fold part: a crash after the base is renamed into place
and before the old parts are gone leaves nested parts, and readers already take the widest
(:func:`recordings.format.list_parts`). Old readers read a base as an ordinary part (no schema change).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from . import format as fmt
from .schema import ALL_SCHEMAS, SORT_KEYS

BASE_FIRST = 0
"""First segment of a base part's range (journal segments are numbered from 1)."""
IN_FORCE_KINDS = ("pod", "node", "configz")
"""Kinds carried forward: what the eviction manager reads at a tick. Events, evictions and kernel events
are history and leave with their part."""
RESERVE = "reserve.tmp"
"""``parts/reserve.tmp``: space kept back so the base can still be written when the disk is full (a
``*.tmp`` file: readers and ``pack`` ignore it, ``--append`` removes it)."""
RESERVE_MIN_BYTES = 4 << 20
DISK_LIMIT_ENV = "EVICTLENS_TEST_DISK_BYTES"
"""Fault-injection seam for tests: treat the recording directory as a disk of this many bytes."""


@dataclass(frozen=True)
class PartSpan:
    """What one part covers in time (microseconds since the epoch)."""

    first_tick: int | None  # the earliest tick time (None: no ticks, e.g. a base)
    end: int | None  # the latest tick time or observation (None: the part is empty)


def is_base(first: int) -> bool:
    return first == BASE_FIRST


def part_span(part: Path) -> PartSpan:
    """The first tick and the latest time a part holds (read from two small columns)."""
    first = end = None
    ticks = part / "ticks.parquet"
    if ticks.exists():
        lo, hi = (
            pl.scan_parquet(ticks)
            .select(pl.col("time").min().alias("lo"), pl.col("time").max().alias("hi"))
            .collect()
            .row(0)
        )
        first, end = _micros(lo), _micros(hi)
    for name in ("objects", "evictions", "kernel_events"):
        f = part / f"{name}.parquet"
        if f.exists():
            hi = _micros(pl.scan_parquet(f).select(pl.col("observed").max()).collect().item())
            if hi is not None and (end is None or hi > end):
                end = hi
    return PartSpan(first, end)


def _micros(value: object) -> int | None:
    if value is None:
        return None
    from datetime import datetime

    from .reader import to_micros

    assert isinstance(value, datetime)
    return to_micros(value)


def object_key() -> pl.Expr:
    """The identity of an object as readers look it up (``Recording.pods_at``, ``node_object_at``, ``configz``)."""
    return (
        pl.when(pl.col("kind") == "configz")
        .then(pl.col("node"))
        .when(pl.col("kind") == "node")
        .then(pl.col("name"))
        .otherwise(pl.coalesce("uid", pl.col("namespace") + "/" + pl.col("name")))
    )


def in_force(files: Sequence[Path], extra: Sequence[pl.DataFrame] = ()) -> pl.DataFrame:
    """The latest version of each pod, node and ``/configz`` in ``files`` (objects tables) and ``extra``,
    left out when that version is a deletion; sorted as a part's objects are."""
    schema = ALL_SCHEMAS["objects"]
    frames = [pl.scan_parquet(f) for f in files] + [df.lazy() for df in extra]
    if not frames:
        return pl.DataFrame(schema=schema)
    latest = (
        pl.concat(frames, how="vertical")
        .filter(pl.col("kind").is_in(IN_FORCE_KINDS))
        .with_columns(object_key().alias("_key"))
        .sort("observed", maintain_order=True)
        .group_by("kind", "_key", maintain_order=True)
        .last()
        .filter(~pl.col("deleted"))
        .select(list(schema))
        .collect()
    )
    return latest.sort(list(SORT_KEYS["objects"]), nulls_last=True)


def disk_limit() -> int | None:
    value = os.environ.get(DISK_LIMIT_ENV)
    return int(value) if value else None


def check_space(root: Path, adding: int = 0) -> None:
    """The test seam: ENOSPC when the directory would grow past ``EVICTLENS_TEST_DISK_BYTES``."""
    limit = disk_limit()
    if limit is not None and fmt.dir_bytes(root) + adding > limit:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root))


def make_reserve(root: Path, size: int) -> bool:
    """Keep ``size`` bytes allocated in ``parts/reserve.tmp`` (True when it could be)."""
    path = root / fmt.PARTS_DIR / RESERVE
    try:
        if path.exists() and path.stat().st_size >= size:
            return True
        check_space(root, size - (path.stat().st_size if path.exists() else 0))
        fd = fmt.open_private(path, os.O_WRONLY | os.O_CREAT)
        try:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as exc:
                if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                os.ftruncate(fd, 0)
                os.pwrite(fd, b"\0" * size, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        return True
    except OSError:
        fmt.remove_quietly(path)
        return False


def release_reserve(root: Path) -> bool:
    """Give the reserve back to the disk (True when there was one)."""
    path = root / fmt.PARTS_DIR / RESERVE
    if not path.exists():
        return False
    fmt.remove_quietly(path)
    return True


def remove_part(path: Path) -> None:
    """Remove a published part so that a reader sees it whole or not at all: renamed to ``*.tmp``
    (ignored by readers, removed by ``--append``), then deleted."""
    gone = path.with_name(path.name + ".drop.tmp")
    fmt.remove_tree(gone)
    try:
        os.replace(path, gone)
    except FileNotFoundError:
        return
    fmt.remove_tree(gone)
