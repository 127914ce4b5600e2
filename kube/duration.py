"""Go ``time.Duration`` grammar in integer nanoseconds: the one duration syntax of every evictlens flag and file.

Kubelet configuration gives grace periods and the pressure transition period as Go duration
strings and prints them with ``Duration.String()``; evictlens' own flags (``record --interval``)
use the same grammar so ``1m30s`` means one thing everywhere, and ``1d`` is refused everywhere
(Go has no day unit) with a hint to write ``24h``.  It lives in ``recordings`` (the bottom layer)
so the recorder can use it without importing ``replay``.
Mirrors go/src/time/format.go: ParseDuration and go/src/time/time.go: Duration.String.
"""

from __future__ import annotations

import re

from .errors import InputError

__all__ = [
    "HOUR",
    "MICROSECOND",
    "MILLISECOND",
    "MINUTE",
    "NANOSECOND",
    "SECOND",
    "format_duration",
    "parse_duration",
    "parse_duration_seconds",
]

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
            raise InputError(f'time: missing unit in duration "{orig}"', hint=_unit_hint(orig))
        unit = _UNITS.get(unit_text)
        if unit is None:
            raise InputError(f'time: unknown unit "{unit_text}" in duration "{orig}"', hint=_unit_hint(orig))
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


_DAYS = re.compile(r"([+-]?)(\d+)d")
_BARE_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")


def _unit_hint(text: str) -> str:
    """What to write instead: Go durations know ns, us, ms, s, m and h, nothing longer, and need a unit."""
    if days := _DAYS.fullmatch(text):
        return f"Go durations have no days: write {days[1]}{int(days[2]) * 24}h"
    if _BARE_NUMBER.fullmatch(text):
        return f"add a unit, e.g. {text}s (units: ns, us, ms, s, m, h)"
    return "expected a Go duration such as 10s, 1m30s or 24h (units: ns, us, ms, s, m, h)"


def parse_duration_seconds(text: str, *, flag: str) -> float:
    """A positive duration flag (``--interval 10s``) in seconds; errors name the flag."""
    try:
        ns = parse_duration(text.strip())
    except InputError as err:
        raise err.within(source=flag) from None
    if ns <= 0:
        raise InputError(f"expected a positive duration, got {text!r}", source=flag)
    return ns / SECOND
