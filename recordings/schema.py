"""Every table of a recording, declared once: the JSON paths it keeps and the polars schema.

The Summary API is mapped onto five columnar tables.  Each table is a list of *groups*: one
JSON object (``memory``, ``fs``, ``runtime.imageFs`` …) whose presence is one bit of the
row's ``present`` mask and whose scalar fields become columns.  The codec
(:mod:`recordings.summary_codec`) walks these declarations both ways, so a field added here
is recorded, validated and read back with no other change.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import polars as pl

from kube.errors import RecordingError

Kind = Literal["u64", "i64", "time", "str"]

TIME = pl.Datetime("us", "UTC")
POLARS_TYPE: dict[str, pl.DataType] = {"u64": pl.UInt64(), "i64": pl.Int64(), "time": TIME, "str": pl.String()}

MEMORY = (
    ("time", "time"),
    ("availableBytes", "u64"),
    ("usageBytes", "u64"),
    ("workingSetBytes", "u64"),
    ("rssBytes", "u64"),
)
FS = (
    ("time", "time"),
    ("availableBytes", "u64"),
    ("capacityBytes", "u64"),
    ("usedBytes", "u64"),
    ("inodesFree", "u64"),
    ("inodes", "u64"),
    ("inodesUsed", "u64"),
)


@dataclass(frozen=True)
class Group:
    """One JSON object inside a row; ``path`` is relative to the row's JSON object.

    A group whose last path step is a list name (``containers``) only records that the list
    was present; its entries are rows of a child table.
    """

    path: tuple[str, ...]
    prefix: str
    fields: tuple[tuple[str, str], ...]

    def columns(self) -> tuple[tuple[str, str, str], ...]:
        """(column name, JSON key, kind) for each field (computed once: it is on the hot path)."""
        return _group_columns(self)


@functools.cache
def _group_columns(group: Group) -> tuple[tuple[str, str, str], ...]:
    sep = "_" if group.prefix else ""
    return tuple((f"{group.prefix}{sep}{_snake(key)}", key, kind) for key, kind in group.fields)


def _snake(name: str) -> str:
    out = "".join("_" + c.lower() if c.isupper() else c for c in name)
    return out.replace("-", "_")


@dataclass(frozen=True)
class Table:
    """A series table: key columns, then groups; ``present`` holds one bit per group."""

    name: str
    keys: tuple[tuple[str, pl.DataType], ...]
    groups: tuple[Group, ...]
    sort: tuple[str, ...]

    def columns(self) -> list[tuple[str, str, str, int]]:
        """(column, JSON key, kind, group index) for every value column."""
        return [(col, key, kind, i) for i, g in enumerate(self.groups) for col, key, kind in g.columns()]

    def schema(self) -> pl.Schema:
        cols: dict[str, pl.DataType] = dict(self.keys)
        cols["present"] = pl.UInt32()
        for col, _key, kind, _g in self.columns():
            cols[col] = POLARS_TYPE[kind]
        return pl.Schema(cols)


_KEYS = (("tick", pl.UInt32()), ("node", pl.String()))

NODE_STATS = Table(
    "node_stats",
    keys=(*_KEYS, ("scraped", TIME)),
    groups=(
        Group((), "", (("nodeName", "str"), ("startTime", "time"))),
        Group(("memory",), "memory", MEMORY),
        Group(("systemContainers",), "", ()),
        Group(("fs",), "fs", FS),
        Group(("runtime",), "", ()),
        Group(("runtime", "imageFs"), "imagefs", FS),
        Group(("runtime", "containerFs"), "containerfs", FS),
        Group(("rlimit",), "rlimit", (("time", "time"), ("maxpid", "i64"), ("curproc", "i64"))),
    ),
    sort=("node", "tick"),
)

# node.systemContainers[]: "pods" gives allocatableMemory.available; "kubelet"'s startTime
# shows kubelet restarts.
SYSTEM_STATS = Table(
    "system_container_stats",
    keys=(*_KEYS, ("container", pl.UInt32())),
    groups=(
        Group((), "", (("name", "str"), ("startTime", "time"))),
        Group(("memory",), "memory", MEMORY),
        Group(("rootfs",), "rootfs", FS),
        Group(("logs",), "logs", FS),
    ),
    sort=("node", "name", "tick"),
)

_POD_KEYS = (*_KEYS, ("pod", pl.UInt32()), ("pod_uid", pl.String()))

POD_STATS = Table(
    "pod_stats",
    keys=_POD_KEYS,
    groups=(
        Group(("podRef",), "", (("name", "str"), ("namespace", "str"))),
        Group(("memory",), "memory", MEMORY),
        Group(("ephemeral-storage",), "ephemeral", FS),
        Group(("process_stats",), "", (("process_count", "u64"),)),
        Group(("containers",), "", ()),
        Group(("volume",), "", ()),
    ),
    sort=("node", "pod_uid", "tick"),
)

CONTAINER_STATS = Table(
    "container_stats",
    keys=(*_POD_KEYS, ("container", pl.UInt32())),
    groups=(
        Group((), "", (("name", "str"),)),
        Group(("memory",), "memory", MEMORY),
        Group(("rootfs",), "rootfs", FS),
        Group(("logs",), "logs", FS),
    ),
    sort=("node", "pod_uid", "name", "tick"),
)

VOLUME_STATS = Table(
    "volume_stats",
    keys=(*_POD_KEYS, ("volume", pl.UInt32())),
    groups=(Group((), "", (("name", "str"), *FS)),),
    sort=("node", "pod_uid", "name", "tick"),
)

SERIES: tuple[Table, ...] = (NODE_STATS, SYSTEM_STATS, POD_STATS, CONTAINER_STATS, VOLUME_STATS)

# Tables that are not Summary-shaped.  ``ticks`` says, per tick and node, whether the sample
# was taken (a gap is a row with ok = false and the error); ``objects`` holds every observed
# version of a pod, node, configz or event (redacted JSON); ``evictions`` is ground truth.
TICKS = pl.Schema({"tick": pl.UInt32(), "time": TIME, "node": pl.String(), "ok": pl.Boolean(), "error": pl.String()})
OBJECTS = pl.Schema(
    {
        "observed": TIME,
        "kind": pl.String(),
        "node": pl.String(),
        "namespace": pl.String(),
        "name": pl.String(),
        "uid": pl.String(),
        "resource_version": pl.String(),
        "deleted": pl.Boolean(),
        "body": pl.String(),
    }
)
EVICTIONS = pl.Schema(
    {
        "observed": TIME,
        "source": pl.String(),
        "node": pl.String(),
        "namespace": pl.String(),
        "name": pl.String(),
        "uid": pl.String(),
        "reason": pl.String(),
        "message": pl.String(),
        "time": TIME,
    }
)
KERNEL_EVENTS = pl.Schema(
    {
        "observed": TIME,
        "kind": pl.String(),
        "source": pl.String(),
        "node": pl.String(),
        "namespace": pl.String(),
        "name": pl.String(),
        "uid": pl.String(),
        "container": pl.String(),
        "reason": pl.String(),
        "message": pl.String(),
        "victim": pl.String(),
        "pid": pl.Int64(),
        "exit_code": pl.Int64(),
        "restart_count": pl.Int64(),
        "status": pl.String(),
        "count": pl.Int64(),
        "time": TIME,
    }
)
"""Schema v3: what the kernel did (``OOMKilled`` containers, ``SystemOOM`` events) and the node's ``Ready``
transitions, derived from the observed objects as they arrive (recordings/kernel.py)."""
RAW = pl.Schema({"observed": TIME, "node": pl.String(), "endpoint": pl.String(), "body": pl.String()})

ALL_SCHEMAS: dict[str, pl.Schema] = {t.name: t.schema() for t in SERIES} | {
    "ticks": TICKS,
    "objects": OBJECTS,
    "evictions": EVICTIONS,
    "kernel_events": KERNEL_EVENTS,
    "raw": RAW,
}
SORT_KEYS: dict[str, tuple[str, ...]] = {t.name: t.sort for t in SERIES} | {
    "ticks": ("node", "tick"),
    "objects": ("kind", "observed"),
    "evictions": ("observed",),
    "kernel_events": ("observed",),
    "raw": ("observed",),
}


def validate_schema(name: str, actual: pl.Schema, *, source: str) -> None:
    """Check a stored table against its declared schema, reporting every problem at once."""
    expected = ALL_SCHEMAS.get(name)
    if expected is None:
        raise RecordingError(f"unknown table {name!r}; expected one of {sorted(ALL_SCHEMAS)}", source=source)
    problems: list[str] = []
    for col, dtype in expected.items():
        if col not in actual:
            problems.append(f"missing column {col} ({dtype})")
        elif actual[col] != dtype:
            problems.append(f"column {col} is {actual[col]}, expected {dtype}")
    extra = [c for c in actual if c not in expected]
    if extra:
        problems.append(f"unexpected columns {', '.join(extra)}")
    if problems:
        raise RecordingError("; ".join(problems), source=source, field=name)
