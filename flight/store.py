"""``DIR/incidents/``: one directory per incident, published whole, and its retention (oldest dropped first).

An incident directory holds ``report.json``, ``report.txt`` and ``window.evictlens.tar``; it is built under a
``.NAME.tmp`` name and renamed into place, so a reader (or a restarted recorder) never finds half of one. A
re-pack once the after-window has passed replaces each file by a rename. Retention counts only published
incidents: by number (``--max-incidents``) and by bytes (``--max-incidents-size``); the newest incident is never
dropped, even alone over the size cap (said in the log). Files 0600, directories 0700.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from recordings import format as fmt
from recordings.pack import pack

INCIDENTS = "incidents"
REPORT_JSON = "report.json"
REPORT_TXT = "report.txt"
PACK = "window.evictlens.tar"


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fmt.remove_quietly(tmp)
    fd = fmt.open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def dumps(doc: dict[str, Any]) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"


class IncidentStore:
    def __init__(self, root: Path, *, max_incidents: int, max_bytes: int, log: Callable[[str], None]) -> None:
        self.dir = root / INCIDENTS
        self.max_incidents, self.max_bytes, self.log = max_incidents, max_bytes, log

    def ensure(self) -> None:
        fmt.make_private_dir(self.dir)
        for p in self.dir.iterdir():  # a crash mid-publish: the incident is made again or was never announced
            if p.name.startswith(".") and p.name.endswith(".tmp"):
                fmt.remove_tree(p) if p.is_dir() else fmt.remove_quietly(p)

    def published(self) -> Iterator[Path]:
        if not self.dir.is_dir():
            return
        for p in sorted(self.dir.iterdir()):
            if p.is_dir() and not p.name.startswith(".") and (p / REPORT_JSON).is_file():
                yield p

    def reports(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        for p in self.published():
            try:
                doc = orjson.loads((p / REPORT_JSON).read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(doc, dict):
                yield p, doc

    def publish(self, name: str, doc: dict[str, Any], text: str, window: Path | None) -> Path:
        """Write a new incident directory (or replace the files of an existing one); returns it."""
        final = self.dir / name
        if final.is_dir():
            if window is not None:
                tmp_pack = final / (PACK + ".new.tmp")
                fmt.remove_quietly(tmp_pack)
                pack(window, tmp_pack)
                os.replace(tmp_pack, final / PACK)
            _write(final / REPORT_TXT, text.encode())
            _write(final / REPORT_JSON, dumps(doc))
            return final
        tmp = self.dir / f".{name}.tmp"
        fmt.remove_tree(tmp)
        fmt.make_private_dir(tmp)
        try:
            if window is not None:
                pack(window, tmp / PACK)
            _write(tmp / REPORT_TXT, text.encode())
            _write(tmp / REPORT_JSON, dumps(doc))
            fmt.fsync_dir(tmp)
            os.replace(tmp, final)
            fmt.fsync_dir(self.dir)
        except BaseException:
            fmt.remove_tree(tmp)
            raise
        return final

    def enforce(self, newest: Path | None = None) -> list[str]:
        """Drop the oldest incidents beyond the caps; returns the names dropped (each said in the log)."""
        found = [(p, fmt.dir_bytes(p)) for p in self.published()]
        found.sort(key=lambda ps: ps[0].name)  # names start with the incident's time
        dropped: list[str] = []
        count, total = len(found), sum(s for _, s in found)
        for path, size in found:
            if count <= self.max_incidents and total <= self.max_bytes:
                break
            if path == newest or count == 1:
                self.log(
                    f"incident {path.name} alone is {size} bytes, over --max-incidents-size {self.max_bytes}: kept "
                    "(the newest incident is never dropped)"
                )
                break
            why = (
                f"--max-incidents {self.max_incidents}"
                if count > self.max_incidents
                else f"--max-incidents-size {self.max_bytes} bytes"
            )
            shutil.rmtree(path, ignore_errors=True)
            count, total = count - 1, total - size
            dropped.append(path.name)
            self.log(f"incident {path.name} dropped: the oldest, over {why}")
        return dropped
