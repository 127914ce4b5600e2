"""Output directories written whole or not at all, private like recordings.

A results or what-if directory is built beside its destination and renamed into place, so an
interrupted or failed run never leaves half an output; only an earlier output of the same kind
(or an empty directory) is replaced. Files are 0600 and directories 0700.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from kube.errors import InputError


@contextmanager
def replacing_dir(out: Path, *, marker: str, what: str) -> Iterator[Path]:
    """Yield a private temporary directory that becomes ``out`` when the block succeeds.

    ``marker`` is the file that identifies an earlier output of this kind (``result.json``).
    """
    out = Path(out)
    if out.exists() and not (out / marker).is_file() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"exists and is not {what} (choose a new path)", source=str(out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:  # /proc, a read-only mount, a file where a directory should be, no room
        why = "a parent is not a directory" if isinstance(exc, FileExistsError | NotADirectoryError) else exc.strerror
        raise InputError(f"cannot create the output there ({why or exc})", source=str(out)) from None
    try:
        os.chmod(tmp, 0o700)
        yield tmp
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def write_parquet_private(df: pl.DataFrame | pl.LazyFrame, path: Path) -> None:
    """A new 0600 Parquet file; a lazy frame is streamed into it (its memory stays a batch, not the frame)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    if isinstance(df, pl.LazyFrame):
        os.close(fd)  # created private; the sink truncates and keeps the mode
        df.sink_parquet(path, compression="zstd")
        return
    with os.fdopen(fd, "wb") as fh:
        df.write_parquet(fh, compression="zstd")
