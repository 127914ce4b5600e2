"""Reading Kubernetes JSON with a path for every error, following Go's encoding/json where it matters.

Absent and ``null`` are the same, unknown fields are ignored, counters are integers in their Go range
(a float or a bool is an error), and every :class:`~kube.errors.InputError` names the JSON path.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

from kube.errors import InputError
from kube.quantity import Quantity

SUMMARY_HINT = "a Summary API object (kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary)"
PODS_HINT = "pods (kubelet /pods, kubectl get pods -o json|yaml, or a Pod)"
NODES_HINT = "nodes (kubectl get nodes -o json|yaml, or a Node)"
UINT64_MAX = 2**64 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

_EMPTY_QUANTITIES: Mapping[str, Quantity] = MappingProxyType({})
_EMPTY_STRINGS: Mapping[str, str] = MappingProxyType({})


def _no_quantities() -> Mapping[str, Quantity]:
    """Default for resource-list fields (a shared read-only empty mapping)."""
    return _EMPTY_QUANTITIES


# --------------------------------------------------------------------------------------------
# Field access with a JSON path, so every error says where it is
# --------------------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_$-]+")


@dataclass(frozen=True, slots=True)
class _At:
    """Where a value sits: the source (file or label) and the JSON path inside it."""

    source: str
    path: str

    def key(self, key: str) -> _At:
        if _PLAIN_KEY.fullmatch(key):
            return _At(self.source, f"{self.path}.{key}" if self.path else key)
        return _At(self.source, f"{self.path}[{_go_quote(key)}]")

    def index(self, i: int) -> _At:
        return _At(self.source, f"{self.path}[{i}]")

    def error(self, problem: str) -> InputError:
        return InputError(problem, source=self.source, field=self.path or None)


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({_go_quote(shown)})"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _as_object(value: Any, at: _At, what: str = "an object") -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise at.error(f"expected {what}, got {_describe(value)}")
    for key in value:
        if not isinstance(key, str):
            raise at.error(f"expected {what} with string keys, got the key {_describe(key)}")
    return value


def _object(obj: Mapping[str, Any], key: str, at: _At) -> Mapping[str, Any] | None:
    value = obj.get(key)
    return None if value is None else _as_object(value, at.key(key))


def _list(obj: Mapping[str, Any], key: str, at: _At) -> Iterator[tuple[Any, _At]]:
    """Items of an optional list with their paths; absent or null is empty."""
    value = obj.get(key)
    if value is None:
        return
    here = at.key(key)
    if not isinstance(value, list | tuple):
        raise here.error(f"expected a list, got {_describe(value)}")
    for i, item in enumerate(value):
        yield item, here.index(i)


def _objects(obj: Mapping[str, Any], key: str, at: _At) -> Iterator[tuple[Mapping[str, Any], _At]]:
    for item, here in _list(obj, key, at):
        yield _as_object(item, here), here


def _string(obj: Mapping[str, Any], key: str, at: _At) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise at.key(key).error(f"expected a string, got {_describe(value)}")
    return value


def _optional_string(obj: Mapping[str, Any], key: str, at: _At) -> str | None:
    return None if obj.get(key) is None else _string(obj, key, at)


def _integer(obj: Mapping[str, Any], key: str, at: _At, low: int, high: int, what: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise at.key(key).error(f"expected {what}, got {_describe(value)}")
    if not low <= value <= high:
        raise at.key(key).error(f"expected {what} between {low} and {high}, got {value}")
    return value


def _uint64(obj: Mapping[str, Any], key: str, at: _At) -> int | None:
    return _integer(obj, key, at, 0, UINT64_MAX, "a non-negative integer")


def _int64(obj: Mapping[str, Any], key: str, at: _At) -> int | None:
    return _integer(obj, key, at, INT64_MIN, INT64_MAX, "an integer")


def _int32(obj: Mapping[str, Any], key: str, at: _At) -> int | None:
    return _integer(obj, key, at, INT32_MIN, INT32_MAX, "an integer")


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))")


def _time(obj: Mapping[str, Any], key: str, at: _At) -> datetime | None:
    """``metav1.Time``: RFC 3339 or null. Sub-microsecond digits are truncated (datetime's limit)."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, datetime):  # a YAML loader that resolves timestamps
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    expected = "an RFC 3339 time such as 2024-05-19T08:14:14Z"
    if not isinstance(value, str):
        raise at.key(key).error(f"expected {expected}, got {_describe(value)}")
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise at.key(key).error(f"expected {expected}, got {_describe(value)}")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        offset = timedelta(0)
        if not zulu:
            offset = timedelta(hours=int(off_h), minutes=int(off_m)) * (1 if sign == "+" else -1)
        stamp = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            int((fraction or "0")[:6].ljust(6, "0")),
            tzinfo=timezone(offset),
        )
        return stamp.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise at.key(key).error(f"expected {expected}, got {_describe(value)} ({exc})") from None


def _quantity(value: Any, at: _At) -> Quantity:
    """``resource.Quantity.UnmarshalJSON``: a string, or a bare JSON number read as its text."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise at.error(f'expected a quantity such as "128Mi" or "500m", got {_describe(value)}')
    text = value if isinstance(value, str) else (str(value) if isinstance(value, int) else repr(value))
    try:
        return Quantity.parse(text)
    except InputError as exc:
        raise exc.within(source=at.source, field=at.path or None) from None


def _resource_list(obj: Mapping[str, Any] | None, key: str, at: _At) -> Mapping[str, Quantity]:
    """``v1.ResourceList``: resource name → quantity, in document order."""
    if obj is None:
        return _EMPTY_QUANTITIES
    resources = _object(obj, key, at)
    if not resources:
        return _EMPTY_QUANTITIES
    here = at.key(key)
    return MappingProxyType({name: _quantity(value, here.key(name)) for name, value in resources.items()})


def _string_map(obj: Mapping[str, Any], key: str, at: _At) -> Mapping[str, str]:
    """``map[string]string`` (labels, annotations): values must be strings, as in Go."""
    values = _object(obj, key, at)
    if not values:
        return _EMPTY_STRINGS
    here = at.key(key)
    for name, value in values.items():
        if not isinstance(value, str):
            raise here.key(name).error(f"expected a string, got {_describe(value)}")
    return MappingProxyType(dict(values))
