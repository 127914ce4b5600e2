"""Summary API JSON ⇄ rows of the four series tables, driven by :mod:`recordings.schema`.

``encode`` keeps exactly the fields the eviction logic reads (spec §1.1) plus their sample
times; ``decode`` rebuilds a Summary-shaped dict with the real JSON names, leaving absent
fields absent.  ``project`` is what a round trip must give back: the same walk applied to
the JSON directly, so the lossless property is ``decode(encode(x)) == project(x)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from kube.errors import RecordingError

from .schema import CONTAINER_STATS, NODE_STATS, POD_STATS, SERIES, SYSTEM_STATS, VOLUME_STATS, Group, Table

U64_MAX = 2**64 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LISTS = frozenset({"systemContainers", "containers", "volume"})

Columns = dict[str, list[Any]]


@lru_cache(maxsize=65536)
def parse_time(text: str) -> int:
    """RFC 3339 → microseconds since the epoch (UTC); the Summary API uses second precision."""
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        raise ValueError("no time zone")
    return (dt - EPOCH) // timedelta(microseconds=1)


@lru_cache(maxsize=65536)
def format_time(micros: int) -> str:
    """Microseconds → the kubelet's RFC 3339 form (``Z``, fraction only when non-zero)."""
    dt = EPOCH + timedelta(microseconds=micros)
    if dt.microsecond == 0:
        return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0") + "Z"


def empty_columns(table: Table) -> Columns:
    return {name: [] for name in table.schema()}


def _locate(obj: Mapping[str, Any], group: Group, where: str) -> Any:
    cur: Any = obj
    for step in group.path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(step)
        if cur is None:
            return None
    expected = list if group.path and group.path[-1] in _LISTS else dict
    if not isinstance(cur, expected):
        field = ".".join((where, *group.path))
        raise RecordingError(f"expected a JSON {'array' if expected is list else 'object'}", field=field)
    return cur


def _value(raw: Any, kind: str, where: str, path: tuple[str, ...], key: str) -> Any:
    """Check one JSON value against its column kind; the field path is built only on error."""
    if kind == "u64":
        if type(raw) is int and 0 <= raw <= U64_MAX:
            return raw
        problem = f"expected an unsigned 64-bit integer, got {raw!r}"
    elif kind == "time":
        if isinstance(raw, str):
            try:
                return parse_time(raw)
            except ValueError:
                pass
        problem = f"expected an RFC 3339 time, got {raw!r}"
    elif kind == "i64":
        if type(raw) is int and I64_MIN <= raw <= I64_MAX:
            return raw
        problem = f"expected a signed 64-bit integer, got {raw!r}"
    else:
        if isinstance(raw, str):
            return raw
        problem = f"expected a string, got {raw!r}"
    raise RecordingError(problem, field=".".join((where, *path, key)) if where else ".".join((*path, key)))


_PLANS = {t.name: tuple((bit, g, g.columns()) for bit, g in enumerate(t.groups)) for t in SERIES}


def _append_row(cols: Columns, table: Table, obj: Mapping[str, Any], keys: dict[str, Any], where: str) -> None:
    for name, value in keys.items():
        cols[name].append(value)
    present = 0
    for bit, group, columns in _PLANS[table.name]:
        found = obj if not group.path else _locate(obj, group, where)
        if found is not None:
            present |= 1 << bit
        is_obj = isinstance(found, dict)
        for col, key, kind in columns:
            raw = found.get(key) if is_obj else None
            if raw is None:
                cols[col].append(None)
            elif kind == "u64" and type(raw) is int and 0 <= raw <= U64_MAX:
                cols[col].append(raw)
            else:
                cols[col].append(_value(raw, kind, where, group.path, key))
    cols["present"].append(present)


def encode(summary: Mapping[str, Any], *, tick: int, node: str, scraped: int, into: dict[str, Columns]) -> None:
    """Append one node's summary at ``tick`` to the column buffers ``into`` (one per table)."""
    if not isinstance(summary, dict):
        raise RecordingError("expected a Summary API JSON object")
    node_obj = summary.get("node")
    if not isinstance(node_obj, dict):
        raise RecordingError("expected a JSON object with the node's stats", field="node")
    base = {"tick": tick, "node": node}
    _append_row(into[NODE_STATS.name], NODE_STATS, node_obj, {**base, "scraped": scraped}, "node")
    _append_items(into, SYSTEM_STATS, node_obj, "systemContainers", base, "node")
    pods = summary.get("pods") or []
    if not isinstance(pods, list):
        raise RecordingError("expected a JSON array", field="pods")
    for p, pod in enumerate(pods):
        where = f"pods[{p}]"
        if not isinstance(pod, dict):
            raise RecordingError("expected a JSON object", field=where)
        ref_obj = pod.get("podRef")
        ref: dict[str, Any] = ref_obj if isinstance(ref_obj, dict) else {}
        uid = ref.get("uid")
        if uid is not None:
            uid = _value(uid, "str", where, ("podRef",), "uid")
        pkeys = {**base, "pod": p, "pod_uid": uid}
        _append_row(into[POD_STATS.name], POD_STATS, pod, pkeys, where)
        _append_items(into, CONTAINER_STATS, pod, "containers", pkeys, where)
        _append_items(into, VOLUME_STATS, pod, "volume", pkeys, where)


def _append_items(
    into: dict[str, Columns], table: Table, parent: Mapping[str, Any], key: str, keys: dict[str, Any], where: str
) -> None:
    """Rows for the entries of a list (containers, volumes, system containers), in order."""
    items = parent.get(key) or []
    if not isinstance(items, list):
        raise RecordingError("expected a JSON array", field=f"{where}.{key}")
    idx = table.keys[-1][0]
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise RecordingError("expected a JSON object", field=f"{where}.{key}[{i}]")
        _append_row(into[table.name], table, item, {**keys, idx: i}, f"{where}.{key}[{i}]")


def _materialise(root: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | list[Any]:
    cur: Any = root
    for step in path:
        cur = cur.setdefault(step, [] if step in _LISTS else {})
    return cur  # type: ignore[no-any-return]


def decode_row(table: Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """Rebuild one row's JSON object: groups whose bit is set, fields that are not null."""
    out: dict[str, Any] = {}
    present = row["present"]
    for bit, group in enumerate(table.groups):
        if not present & (1 << bit):
            continue
        target = _materialise(out, group.path)
        if isinstance(target, list):
            continue
        for col, key, kind in group.columns():
            value = row[col]
            if value is not None:
                target[key] = _out_value(value, kind)
    return out


def _out_value(value: Any, kind: str) -> Any:
    if kind != "time":
        return value
    if isinstance(value, datetime):
        return format_time((value - EPOCH) // timedelta(microseconds=1))
    return format_time(int(value))


def decode(
    node_row: Mapping[str, Any],
    system_rows: Iterable[Mapping[str, Any]],
    pod_rows: Iterable[Mapping[str, Any]],
    container_rows: Iterable[Mapping[str, Any]],
    volume_rows: Iterable[Mapping[str, Any]],
) -> dict[str, Any]:
    """One node's rows at one tick → a Summary-shaped dict (eviction fields only)."""
    node = decode_row(NODE_STATS, node_row)
    for row in sorted(system_rows, key=lambda r: r["container"]):
        node["systemContainers"].append(decode_row(SYSTEM_STATS, row))
    pods: dict[int, dict[str, Any]] = {}
    for row in sorted(pod_rows, key=lambda r: r["pod"]):
        pod = decode_row(POD_STATS, row)
        if row["pod_uid"] is not None:
            pod.setdefault("podRef", {})["uid"] = row["pod_uid"]
        pods[row["pod"]] = pod
    for rows, sub, idx in ((container_rows, "containers", "container"), (volume_rows, "volume", "volume")):
        table = CONTAINER_STATS if sub == "containers" else VOLUME_STATS
        for row in sorted(rows, key=lambda r: (r["pod"], r[idx])):
            pods[row["pod"]].setdefault(sub, []).append(decode_row(table, row))
    return {"node": node, "pods": list(pods.values())}


def project(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a summary a recording keeps: what a round trip must reproduce exactly."""
    into = {t.name: empty_columns(t) for t in SERIES}
    encode(summary, tick=0, node="", scraped=0, into=into)

    def rows(table: Table) -> list[dict[str, Any]]:
        cols = into[table.name]
        return [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]

    node_row, *rest = (rows(t) for t in SERIES)
    return decode(node_row[0], *rest)
