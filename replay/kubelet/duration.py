"""Go ``time.Duration`` parsing and printing, in integer nanoseconds.

Grace periods and the pressure transition period come from kubelet configuration as Go duration
strings, and the kubelet's own log/threshold text prints them with ``Duration.String()``.
Mirrors go/src/time/format.go: ParseDuration and go/src/time/time.go: Duration.String.
"""

from __future__ import annotations

from datetime import datetime

from replay.errors import InputError

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "µs": MICROSECOND,  # U+00B5 micro sign
    "μs": MICROSECOND,  # U+03BC Greek mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_MAX_INT64 = (1 << 63) - 1


def parse_duration(text: str) -> int:
    """Parse a Go duration such as ``"1m30s"`` or ``"-1.5h"`` into nanoseconds (time.ParseDuration)."""
    orig = text
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise InputError(f'time: invalid duration "{orig}"')
    total = 0
    while s:
        i = 0
        while i < len(s) and s[i].isascii() and s[i].isdigit():
            i += 1
        int_digits, s = s[:i], s[i:]
        frac_digits = ""
        if s.startswith("."):
            s = s[1:]
            i = 0
            while i < len(s) and s[i].isascii() and s[i].isdigit():
                i += 1
            frac_digits, s = s[:i], s[i:]
        if not int_digits and not frac_digits:
            raise InputError(f'time: invalid duration "{orig}"')
        i = 0
        while i < len(s) and s[i] != "." and not (s[i].isascii() and s[i].isdigit()):
            i += 1
        unit_text, s = s[:i], s[i:]
        if not unit_text:
            raise InputError(f'time: missing unit in duration "{orig}"')
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise InputError(f'time: unknown unit "{unit_text}" in duration "{orig}"')
        value = int(int_digits or "0")
        if value > (1 << 63) // unit:
            raise InputError(f'time: invalid duration "{orig}"')
        value *= unit
        if frac_digits:
            # Go: v += int64(float64(f) * (float64(unit) / scale)), f truncated to what fits int64.
            f, scale = 0, 1.0
            overflow = False
            for ch in frac_digits:
                if overflow:
                    continue
                if f > _MAX_INT64 // 10:
                    overflow = True
                    continue
                f = f * 10 + int(ch)
                scale *= 10
            value += int(float(f) * (float(unit) / scale))
        total += value
        if total > 1 << 63:
            raise InputError(f'time: invalid duration "{orig}"')
    if neg:
        return -total
    if total > _MAX_INT64:
        raise InputError(f'time: invalid duration "{orig}"')
    return total


def _fmt_frac(v: int, prec: int) -> tuple[str, int]:
    """Fraction digits of ``v`` at ``prec`` places, trailing zeros dropped (time.fmtFrac)."""
    digits = []
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        v //= 10
    frac = "." + "".join(reversed(digits)) if printed else ""
    return frac, v


def format_duration(ns: int) -> str:
    """Render nanoseconds the way Go's ``Duration.String()`` does (``"1m0s"``, ``"1.5s"``, ``"10ns"``)."""
    if ns == 0:
        return "0s"
    neg = ns < 0
    u = -ns if neg else ns
    if u < SECOND:
        if u < MICROSECOND:
            out = f"{u}ns"
        elif u < MILLISECOND:
            frac, whole = _fmt_frac(u, 3)
            out = f"{whole}{frac}µs"
        else:
            frac, whole = _fmt_frac(u, 6)
            out = f"{whole}{frac}ms"
    else:
        frac, whole = _fmt_frac(u, 9)
        out = f"{whole % 60}{frac}s"
        whole //= 60
        if whole > 0:
            out = f"{whole % 60}m{out}"
            whole //= 60
            if whole > 0:
                out = f"{whole}h{out}"
    return f"-{out}" if neg else out


def nanoseconds_between(start: datetime, end: datetime) -> int:
    """``end.Sub(start)`` in nanoseconds, exactly (timedelta arithmetic, no float seconds)."""
    delta = end - start
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
