"""Usage curves: how much of something a container (or the system) uses, as a function of time.

A curve maps microseconds since its owner started (a container's start, or the scenario's start
for the system share) to a whole number of bytes, inodes or processes. Kinds (SCENARIOS.md §4):
a bare quantity or ``constant``, ``ramp`` (linear), ``step`` (a jump at T), ``grow`` ("grow N
every T up to M", the shape of a stress tool allocating in chunks), ``repeat`` (another curve
played periodically) and ``series`` (recorded samples, held or interpolated).
"""

from __future__ import annotations

import bisect
import csv
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kube.errors import InputError

from ..documents import MAX_SCENARIO_FILE_BYTES, read_bounded
from .units import parse_amount, parse_duration
from .yamlpos import Located
from .yamlpos import Path as YPath

KINDS = ("constant", "ramp", "step", "grow", "repeat", "series")


class Curve(Protocol):
    def at(self, t: int) -> int:
        """The value ``t`` microseconds after the owner started (t ≥ 0)."""
        ...


@dataclass(frozen=True)
class Constant:
    value: int

    def at(self, t: int) -> int:
        return self.value


@dataclass(frozen=True)
class Ramp:
    """``from`` until ``start``, then linear to ``to`` over ``over``, then ``to``."""

    start_value: int
    end_value: int
    start: int
    over: int

    def at(self, t: int) -> int:
        if t <= self.start:
            return self.start_value
        if self.over == 0 or t >= self.start + self.over:
            return self.end_value
        return self.start_value + (self.end_value - self.start_value) * (t - self.start) // self.over


@dataclass(frozen=True)
class Step:
    before: int
    after: int
    at_time: int

    def at(self, t: int) -> int:
        return self.after if t >= self.at_time else self.before


@dataclass(frozen=True)
class Grow:
    """``from`` + ``by`` for every full ``every`` since ``start``, capped at ``max``."""

    initial: int
    by: int
    every: int
    limit: int | None
    start: int

    def at(self, t: int) -> int:
        if t < self.start:
            return self.initial
        value = self.initial + self.by * ((t - self.start) // self.every)
        return value if self.limit is None else min(value, self.limit)


@dataclass(frozen=True)
class Repeat:
    """``curve`` evaluated at ``(t - start) mod every`` (before ``start``: at 0)."""

    curve: Curve
    every: int
    start: int

    def at(self, t: int) -> int:
        return self.curve.at(max(0, t - self.start) % self.every)


@dataclass(frozen=True)
class Series:
    """Samples ``(time, value)``; between samples the last value holds (``hold``) or is interpolated."""

    times: tuple[int, ...]
    values: tuple[int, ...]
    linear: bool

    def at(self, t: int) -> int:
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            return self.values[0]
        if not self.linear or i + 1 >= len(self.times):
            return self.values[i]
        t0, t1, v0, v1 = self.times[i], self.times[i + 1], self.values[i], self.values[i + 1]
        return v0 + (v1 - v0) * (t - t0) // (t1 - t0)


_FIELDS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    # kind: (required, optional)
    "ramp": (frozenset({"to", "over"}), frozenset({"from", "start"})),
    "step": (frozenset({"at", "to"}), frozenset({"from"})),
    "grow": (frozenset({"by", "every"}), frozenset({"from", "max", "start"})),
    "repeat": (frozenset({"every", "curve"}), frozenset({"start"})),
    "series": (frozenset(), frozenset({"points", "values", "every", "file", "interpolate"})),
}


def parse_curve(doc: Located, path: YPath, value: Any, base_dir: Path | None) -> Curve:
    """A curve from its YAML form; errors name the file, line and field."""
    if not isinstance(value, Mapping):
        return Constant(_amount(doc, path, value))
    kinds = [k for k in value if k in KINDS]
    unknown = [k for k in value if k not in KINDS]
    if unknown or len(kinds) != 1:
        bad = unknown[0] if unknown else None
        where = (*path, bad) if bad is not None else path
        got = f"unknown curve kind {bad!r}" if bad is not None else f"{len(kinds)} curve kinds"
        raise doc.error(f"{got}; a curve is a quantity or one of: {', '.join(KINDS)}", where, key=bad is not None)
    kind = kinds[0]
    here = (*path, kind)
    body = value[kind]
    if kind == "constant":
        return Constant(_amount(doc, here, body))
    if not isinstance(body, Mapping):
        raise doc.error(f"expected a mapping with {_describe(kind)}", here)
    required, optional = _FIELDS[kind]
    for key in body:
        if key not in required | optional:
            raise doc.error(
                f"unknown field {key!r} of a {kind} curve; expected {_describe(kind)}", (*here, key), key=True
            )
    for key in sorted(required - set(body)):
        raise doc.error(f"a {kind} curve needs {key!r}; expected {_describe(kind)}", here)
    if kind == "ramp":
        return Ramp(
            _amount(doc, (*here, "from"), body.get("from", 0)),
            _amount(doc, (*here, "to"), body["to"]),
            _duration(doc, (*here, "start"), body.get("start", 0)),
            _duration(doc, (*here, "over"), body["over"]),
        )
    if kind == "step":
        return Step(
            _amount(doc, (*here, "from"), body.get("from", 0)),
            _amount(doc, (*here, "to"), body["to"]),
            _duration(doc, (*here, "at"), body["at"]),
        )
    if kind == "grow":
        every = _duration(doc, (*here, "every"), body["every"])
        if every <= 0:
            raise doc.error("expected a duration > 0", (*here, "every"))
        limit = _amount(doc, (*here, "max"), body["max"]) if body.get("max") is not None else None
        return Grow(
            _amount(doc, (*here, "from"), body.get("from", 0)),
            _amount(doc, (*here, "by"), body["by"]),
            every,
            limit,
            _duration(doc, (*here, "start"), body.get("start", 0)),
        )
    if kind == "repeat":
        every = _duration(doc, (*here, "every"), body["every"])
        if every <= 0:
            raise doc.error("expected a duration > 0", (*here, "every"))
        inner = parse_curve(doc, (*here, "curve"), body["curve"], base_dir)
        return Repeat(inner, every, _duration(doc, (*here, "start"), body.get("start", 0)))
    return _series(doc, here, body, base_dir)


def _describe(kind: str) -> str:
    required, optional = _FIELDS[kind]
    if kind == "series":
        return (
            "points: [[TIME, VALUE], …], or values: [...] with every: DURATION, or file: CSV; interpolate: hold|linear"
        )
    return ", ".join([*sorted(required), *(f"{k} (optional)" for k in sorted(optional))])


def _series(doc: Located, here: YPath, body: Mapping[str, Any], base_dir: Path | None) -> Curve:
    sources = [k for k in ("points", "values", "file") if k in body]
    if len(sources) != 1:
        raise doc.error(
            f"a series curve needs exactly one of points, values or file; expected {_describe('series')}", here
        )
    interpolate = body.get("interpolate", "hold")
    if interpolate not in ("hold", "linear"):
        raise doc.error(f"expected hold or linear, got {interpolate!r}", (*here, "interpolate"))
    raw: list[tuple[int, int]] = []
    if "points" in body:
        points = body["points"]
        if not isinstance(points, Sequence) or isinstance(points, str) or not points:
            raise doc.error("expected a non-empty list of [TIME, VALUE] pairs", (*here, "points"))
        for i, pair in enumerate(points):
            where = (*here, "points", i)
            if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
                raise doc.error(f"expected a [TIME, VALUE] pair, got {pair!r}", where)
            raw.append((_duration(doc, where, pair[0]), _amount(doc, where, pair[1])))
    elif "values" in body:
        values = body["values"]
        if "every" not in body:
            raise doc.error("a series of values needs every: DURATION (the sampling interval)", here)
        every = _duration(doc, (*here, "every"), body["every"])
        if not isinstance(values, Sequence) or isinstance(values, str) or not values:
            raise doc.error("expected a non-empty list of quantities", (*here, "values"))
        raw = [(i * every, _amount(doc, (*here, "values", i), v)) for i, v in enumerate(values)]
    else:
        raw = _series_file(doc, (*here, "file"), body["file"], base_dir)
    times = [t for t, _ in raw]
    if any(b <= a for a, b in itertools.pairwise(times)):
        raise doc.error("series times must increase strictly", here)
    return Series(tuple(times), tuple(v for _, v in raw), interpolate == "linear")


def _series_file(doc: Located, where: YPath, name: Any, base_dir: Path | None) -> list[tuple[int, int]]:
    """A CSV of ``seconds,value`` rows (a header row is allowed), relative to the scenario file."""
    if not isinstance(name, str) or not name:
        raise doc.error("expected a file name", where)
    if base_dir is None:
        raise doc.error("a bundled scenario cannot read series files", where)
    path = (base_dir / name) if not Path(name).is_absolute() else Path(name)
    try:
        text = read_bounded(path, name, MAX_SCENARIO_FILE_BYTES, "a series file").decode("utf-8")
    except InputError as exc:
        raise doc.error(f"series file {name}: {exc.problem}", where) from None
    except UnicodeDecodeError:
        raise doc.error(f"series file {name} is not UTF-8 text", where) from None
    except OSError as exc:
        raise doc.error(f"cannot read series file {name} ({exc.strerror})", where) from None
    rows: list[tuple[int, int]] = []
    for n, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip():
            continue
        try:
            if len(row) != 2:
                raise ValueError(f"expected 2 columns (seconds,value), got {len(row)}")
            rows.append((parse_duration(_number_or_text(row[0])), parse_amount(_number_or_text(row[1]))))
        except ValueError as exc:
            if n == 1 and not rows:
                continue  # a header row
            raise doc.error(f"{name} row {n}: {exc}", where) from None
    if not rows:
        raise doc.error(f"{name} holds no samples", where)
    return rows


def _number_or_text(cell: str) -> Any:
    text = cell.strip()
    try:
        return float(text) if any(c in text for c in ".eE") and not text[-1:].isalpha() else int(text)
    except ValueError:
        return text


def _amount(doc: Located, path: YPath, value: Any) -> int:
    try:
        return parse_amount(value)
    except ValueError as exc:
        raise doc.error(str(exc), path) from None


def _duration(doc: Located, path: YPath, value: Any) -> int:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise doc.error(str(exc), path) from None
