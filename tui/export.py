"""Export of the table on screen (its rows as filtered and sorted, raw values) as CSV or JSON."""

from __future__ import annotations

import csv
import io
import os
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


def export_table(directory: Path, name: str, fmt: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Path:
    """Write ``name.csv`` / ``name.json`` into ``directory`` (0600: tables name pods) and return its path."""
    text = to_csv(columns, rows) if fmt == "csv" else to_json(columns, rows)
    path = directory / f"{name}.{fmt}"
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path
