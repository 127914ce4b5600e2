"""``evictlens watch``'s JSON lines: one small object per change that matters, a stable schema (README "Live").

Every line has ``v`` (the schema version, 1), ``kind`` (one of :data:`live.model.EVENT_KINDS`), ``time``
(RFC 3339, the tick's time in the recording: a played sample's times are the scenario's), ``node`` and
``tick`` (null for ground truth, which arrives between ticks), then the fields of its kind:

* ``pressure-start`` / ``pressure-end``: ``condition`` (MemoryPressure, DiskPressure, PIDPressure) and
  ``conditions`` (all the node reports after the change);
* ``next-to-go``: ``next_to_go`` — ``namespace``, ``pod``, ``uid``, ``resource``, ``message`` (the exact
  Evicted message it would get), ``reason``, ``basis`` — or null when no pod is ranked first any more;
* ``warning``: ``signal``, ``threshold_kind`` (hard/soft), ``observed``, ``threshold`` (bytes or count),
  ``seconds_to_threshold``, ``slope_per_second``, ``method`` (how the forecast is made), ``next_to_go``;
* ``predicted-eviction``: ``namespace``, ``pod``, ``uid``, ``message``, ``signal``, ``grace_period_seconds``;
* ``real-eviction``: ``namespace``, ``pod``, ``uid``, ``message``, ``source``, then against what was said
  before: ``predicted`` (this engine evicted it), ``predicted_time``, ``predicted_message``,
  ``message_matches`` and ``message_diff`` (``[-predicted-]{+real+}``), or ``was_next_to_go``;
* ``kernel-kill``: ``oom`` (``SystemOOM``: the node's kernel; ``OOMKilled``: a container), ``namespace``,
  ``pod``, ``uid``, ``container``, ``reason``, ``message`` and the same comparison fields;
* ``stale``: ``reason`` (why the node counts as not answering: the recorder's error); ``fresh``: nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from recordings.summary_codec import format_time

from .model import LiveEvent, NextToGo

SCHEMA_VERSION = 1
NEXT_TO_GO_KEYS = ("namespace", "pod", "uid", "resource", "message", "reason", "basis")


def next_to_go_json(ntg: NextToGo | None) -> dict[str, Any] | None:
    if ntg is None:
        return None
    return {key: getattr(ntg, key) for key in NEXT_TO_GO_KEYS}


def event_json(event: LiveEvent) -> dict[str, Any]:
    """The line for ``event`` (the engine's details, named as the schema above names them)."""
    details = dict(event.details)
    line: dict[str, Any] = {
        "v": SCHEMA_VERSION,
        "kind": event.kind,
        "time": format_time(event.time_us),
        "node": event.node,
        "tick": details.pop("tick", None),
    }
    if event.kind in ("pressure-start", "pressure-end"):
        line["condition"] = details.pop("condition", None)
        given = details.pop("conditions", None)
        line["conditions"] = list(given) if isinstance(given, list | tuple) else None
    elif event.kind == "next-to-go":
        found = {key: details.pop(key) for key in NEXT_TO_GO_KEYS if key in details}
        line["next_to_go"] = found or None
    elif event.kind == "warning":
        line["next_to_go"] = details.pop("next_to_go", None)
    elif event.kind == "kernel-kill":
        line["oom"] = details.pop("kind", None)
    at = details.pop("predicted_time_us", None)
    if isinstance(at, int):
        details["predicted_time"] = format_time(at)
    line.update(details)
    return line


def dumps(line: Mapping[str, Any]) -> bytes:
    """One line, keys in a fixed order, non-JSON values (a tuple, a datetime) as JSON can hold them."""
    return orjson.dumps(line, default=str) + b"\n"
