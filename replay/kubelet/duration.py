"""Go ``time.Duration`` for the port: the grammar (kube.duration) and exact time differences.

Grace periods and the pressure transition period come from kubelet configuration as Go duration
strings, and the kubelet's own log/threshold text prints them with ``Duration.String()``.
The grammar itself lives in :mod:`kube.duration` (one grammar for every flag and file);
this module re-exports it for the port.
Mirrors go/src/time/format.go: ParseDuration and go/src/time/time.go: Duration.String.
"""

from __future__ import annotations

from datetime import datetime

from kube.duration import (
    HOUR,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    NANOSECOND,
    SECOND,
    format_duration,
    parse_duration,
)

__all__ = [
    "HOUR",
    "MICROSECOND",
    "MILLISECOND",
    "MINUTE",
    "NANOSECOND",
    "SECOND",
    "format_duration",
    "nanoseconds_between",
    "parse_duration",
]


def nanoseconds_between(start: datetime, end: datetime) -> int:
    """``end.Sub(start)`` in nanoseconds, exactly (timedelta arithmetic, no float seconds)."""
    delta = end - start
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
