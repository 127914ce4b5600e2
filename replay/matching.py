"""The recording's ground truth against the replay: real evictions, and which predicted eviction each one is.

Kept apart from the results' assembly so that how reality is scored (what counts as a real eviction, how
close in time a prediction must be) is one module.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from recordings.reader import Recording
from replay.results import Eviction, Match, RealEviction
from replay.textdiff import inline_diff

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def recording_interval(rec: Recording) -> float | None:
    """The polling interval: the median spacing of the recording's tick times, in seconds."""
    times = sorted({t.time for t in rec.ticks()})
    gaps = [(b - a).total_seconds() for a, b in pairwise(times) if b > a]
    return statistics.median(gaps) if gaps else None


def real_evictions(rec: Recording) -> list[RealEviction]:
    """The ground truth the recording kept: Evicted events and pods failed with reason Evicted."""
    return [RealEviction(row.get("node"), row.get("namespace"), row.get("name"), row.get("uid"),
                         row.get("message"), row.get("time") or row.get("observed"), str(row.get("source")))
            for row in rec.evictions()]


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
