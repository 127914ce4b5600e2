"""The recording's ground truth against the replay: real evictions, and which predicted eviction each one is.

Kept apart from the results' assembly so that how reality is scored (what counts as a real eviction, how
close in time a prediction must be) is one module.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from recordings.reader import ADMISSION_REJECTION_PREFIX, Recording
from replay.results import Eviction, Match, RealEviction
from replay.textdiff import inline_diff

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def recording_interval(rec: Recording) -> float | None:
    """The polling interval: the median spacing of the recording's tick times, in seconds."""
    times = sorted({t.time for t in rec.ticks()})
    gaps = [(b - a).total_seconds() for a, b in pairwise(times) if b > a]
    return statistics.median(gaps) if gaps else None


def _real(row: Mapping[str, Any]) -> RealEviction:
    return RealEviction(
        row.get("node"),
        row.get("namespace"),
        row.get("name"),
        row.get("uid"),
        row.get("message"),
        row.get("time") or row.get("observed"),
        str(row.get("source")),
    )


def is_admission_rejection(message: str | None) -> bool:
    """A pod the eviction manager refused at admission (eviction_manager.go: Admit, nodeConditionMessageFmt):
    reason Evicted too, but it never ran on the node, so no eviction the replay could have made."""
    return (message or "").startswith(ADMISSION_REJECTION_PREFIX)


def real_evictions(rec: Recording) -> list[RealEviction]:
    """The ground truth the recording kept: Evicted events and pods failed with reason Evicted — admission
    rejections left out (:func:`admission_rejections`); when there are some, the recording's notes say so once,
    so every result made from it carries the count."""
    refused = admission_rejections(rec)
    if refused:
        note = _admission_note(refused)
        if note not in rec.notes:
            rec.notes.append(note)
    return [_real(row) for row in rec.evictions() if not is_admission_rejection(row.get("message"))]


def admission_rejections(rec: Recording) -> list[RealEviction]:
    """Pods the recording shows refused at admission (``The node had condition: [...]. ``), once per pod."""
    seen: set[tuple[str | None, str | None, str | None]] = set()
    out = []
    for row in rec.evictions(admission=True):
        r = _real(row)
        key = (r.uid, r.namespace, r.pod) if r.uid else (None, r.namespace, r.pod)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _admission_note(refused: Sequence[RealEviction]) -> str:
    pods = len(refused)
    return (
        f"{pods} pod{'s' if pods != 1 else ''} refused at admission under node pressure (The node had "
        "condition: [...]) scored apart: a rejection is not an eviction, so neither a miss of the replay "
        "nor a match"
    )


def match(real: list[RealEviction], predicted: Sequence[Eviction], interval: float | None) -> tuple[Match, ...]:
    """Pair each real eviction (once per pod) with the replay's first eviction of the same pod."""
    by_uid: dict[str, Eviction] = {}
    by_name: dict[tuple[str, str], Eviction] = {}
    for e in predicted:
        if e.uid:
            by_uid.setdefault(e.uid, e)
        by_name.setdefault((e.namespace, e.pod), e)
    seen_uids: set[str] = set()
    seen_names: set[tuple[str | None, str | None]] = set()
    out = []
    for r in sorted(real, key=lambda r: (r.source != "event", r.time is None, r.time or _EPOCH)):
        if (r.uid and r.uid in seen_uids) or (r.namespace, r.pod) in seen_names:
            continue
        if r.uid:
            seen_uids.add(r.uid)
        seen_names.add((r.namespace, r.pod))
        found = by_uid.get(r.uid or "") or by_name.get((r.namespace or "", r.pod or ""))
        within = None
        if found is not None and r.time is not None:
            slack = timedelta(seconds=interval or 0)
            within = abs(found.time - r.time) <= max(slack, timedelta(seconds=1))
        same_message = found is not None and r.message == found.message
        diff = None
        if found is not None and not same_message and r.message is not None:
            diff = inline_diff(r.message, found.message)
        out.append(Match(r, found.id if found else None, found is not None, within, same_message, diff))
    return tuple(out)
