"""Export of the table on screen (its rows as filtered and sorted, raw values) as CSV or JSON."""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return value


def to_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else _plain(v) for v in row])
    return out.getvalue()


def to_json(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    docs = [{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in rows]
    return orjson.dumps(docs, option=orjson.OPT_INDENT_2).decode() + "\n"


def safe_name(text: str) -> str:
    """An object's name (``default/web-0``, a node) as a file name part: letters, digits, ``.-_`` only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "table"


def export_path(directory: Path, name: str, suffix: str, now: datetime | None = None) -> Path:
    """``name-YYYYmmdd-HHMMSS.suffix`` in ``directory``: the object's name and the time, so a second export
    never replaces the first (:func:`write_new` adds ``-2``, ``-3`` … within the same second)."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return directory / f"{safe_name(name)}-{stamp}.{suffix}"


def write_new(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` or, when that exists, to ``path`` with ``-2``, ``-3`` … before the suffix;
    never over an existing file (O_EXCL), 0600 (tables name pods). Returns the path written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = path, 1
    while True:
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            n += 1
            candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return candidate


def export_table(
    directory: Path,
    name: str,
    fmt: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    now: datetime | None = None,
) -> Path:
    """Write the rows as ``name-TIMESTAMP.csv`` / ``.json`` into ``directory`` and return its path."""
    text = to_csv(columns, rows) if fmt == "csv" else to_json(columns, rows)
    return write_new(export_path(directory, name, fmt, now), text)
