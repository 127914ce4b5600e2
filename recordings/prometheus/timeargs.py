"""``--from``/``--to`` as people paste them: RFC 3339, Unix seconds or milliseconds, ``now-6h``.

Why a module: the range usually comes out of a Grafana URL (``from=1716170400000&to=now``, epoch
milliseconds and relative times), an alert (RFC 3339) or a shell (``date +%s``). Milliseconds are
told from seconds by size, as Grafana and Prometheus' own UI do: any value past 10^11 (year 5138 in
seconds, March 1973 in milliseconds) is milliseconds. Relative times use Grafana's grammar
(``now``, ``now-6h``, ``now-1d``, ``now-30m``; units s m h d w), resolved against one clock reading so
``--from now-1h --to now`` is exactly an hour.
"""

from __future__ import annotations

import math
import re

from kube.errors import InputError

MS_THRESHOLD = 1e11
"""Epoch values at or past this are milliseconds (Grafana URLs); below it, seconds."""

EARLIEST = 0.0
LATEST = 253402300799.0  # 9999-12-31T23:59:59Z: RFC 3339's last year
_RELATIVE = re.compile(r"^now(?:\s*([+-])\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w))?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_EXPECTED = "expected RFC 3339 (2024-05-20T03:00:00Z), Unix seconds or milliseconds, or now-6h"


def parse_time_arg(text: str, flag: str, now: float) -> float:
    """Seconds since the epoch for one ``--from``/``--to`` value; bad input is one line naming the flag."""
    value = text.strip()
    rel = _RELATIVE.match(value.replace(" ", ""))
    if rel:
        sign, amount, unit = rel.groups()
        if not sign:
            return now
        delta = float(amount) * _UNIT[unit]
        return now - delta if sign == "-" else now + delta
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isnan(number):
        if not math.isfinite(number) or number < 0:
            raise InputError(f"{_EXPECTED}, got {text!r}", source=flag)
        seconds = number / 1000.0 if number >= MS_THRESHOLD else number
        if seconds > LATEST:
            raise InputError(f"{_EXPECTED}, got {text!r} (past year 9999 even as milliseconds)", source=flag)
        return seconds
    from ..summary_codec import parse_time

    try:
        return parse_time(value.replace("z", "Z")) / 1_000_000
    except ValueError as exc:
        why = " (no time zone: add Z or +00:00)" if "time zone" in str(exc) else ""
        raise InputError(f"{_EXPECTED}, got {text!r}{why}", source=flag) from None
    except OverflowError:
        raise InputError(f"{_EXPECTED}, got {text!r}", source=flag) from None
