"""Quantities and durations as a scenario file writes them (``1.5Gi``, ``100Mi``, ``1m30s``).

``recordings`` must not import ``replay``, so this is a small reader of the same syntax as
apimachinery's ``resource.ParseQuantity`` (suffixes Ki..Ei, k..E, m, exponents) and Go's
``time.ParseDuration``; values are rounded up to whole units, as ``Quantity.Value()`` does.
The replay later parses the /configz strings with its exact port, so nothing here decides
an eviction: it only sizes the usage the generator reports.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_QUANTITY = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNIT_US: dict[str, Fraction] = {
    "ns": Fraction(1, 1000),
    "us": Fraction(1),
    "µs": Fraction(1),
    "μs": Fraction(1),
    "ms": Fraction(1000),
    "s": Fraction(10**6),
    "m": Fraction(60 * 10**6),
    "h": Fraction(3600 * 10**6),
}
SECOND = 10**6
INT64_MAX = (1 << 63) - 1
MAX_EXPONENT = 40
"""A quantity's ``eN`` exponent beyond this is far outside int64 either way (or rounds to nothing)."""
"""Scenario times are integer microseconds (the recording's resolution)."""


def parse_quantity(value: object) -> Fraction:
    """A Kubernetes quantity (``"1.5Gi"``, ``"500M"``, ``3``) → its exact value; ValueError if malformed."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected a quantity such as 100Mi or 2Gi, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected a quantity such as 100Mi or 2Gi, got {value!r}")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise ValueError(f"expected a quantity such as 100Mi or 2Gi, got {type(value).__name__}")
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise ValueError(f"expected a quantity such as 100Mi or 2Gi, got {value!r}")
    sign, number, suffix = m.group(1), m.group(2), m.group(3) or ""
    amount = Fraction(number if not number.endswith(".") else number[:-1] or "0")
    if suffix in _BINARY:
        amount *= 2 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        amount *= Fraction(10) ** _DECIMAL[suffix]
    elif suffix:
        exponent = int(suffix[1:])
        if abs(exponent) > MAX_EXPONENT:  # 1e99999999 would take minutes and gigabytes to build exactly
            raise ValueError(f"expected a quantity that fits the kubelet's int64 (below 8Ei), got {value!r}")
        amount *= Fraction(10) ** exponent
    return -amount if sign == "-" else amount


def parse_amount(value: object) -> int:
    """A non-negative quantity rounded up to a whole number (bytes, inodes, processes)."""
    q = parse_quantity(value)
    if q < 0:
        raise ValueError(f"expected a quantity ≥ 0, got {value!r}")
    if math.ceil(q) > INT64_MAX:  # what the kubelet and the Summary API hold; Go would cap or wrap it silently
        raise ValueError(f"expected a quantity that fits the kubelet's int64 (below 8Ei), got {value!r}")
    return math.ceil(q)


def parse_duration(value: object) -> int:
    """A Go duration (``"1m30s"``, ``"500ms"``) or a number of seconds → microseconds (≥ 0)."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"expected a duration such as 30s or 1m30s, got {value!r}")
    if isinstance(value, int | float):
        if value < 0 or not math.isfinite(value):
            raise ValueError(f"expected a duration ≥ 0, got {value!r}")
        return round(Fraction(str(value)) * SECOND)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration such as 30s or 1m30s, got {type(value).__name__}")
    text = value.strip()
    if text == "0":
        return 0
    pos, total = 0, Fraction(0)
    while pos < len(text):
        m = _DURATION_PART.match(text, pos)
        if m is None:
            raise ValueError(f"expected a duration such as 30s or 1m30s, got {value!r}")
        number = m.group(1)[:-1] if m.group(1).endswith(".") else m.group(1)
        total += Fraction(number) * _DURATION_UNIT_US[m.group(2)]
        pos = m.end()
    if not text:
        raise ValueError("expected a duration such as 30s or 1m30s, got an empty string")
    return round(total)


def format_duration(micros: int) -> str:
    """Microseconds → Go's Duration.String() for whole seconds and above (``5m0s``, ``1m30s``, ``10s``)."""
    if micros == 0:
        return "0s"
    if micros % SECOND:
        return f"{Fraction(micros, SECOND).__float__():g}s"
    seconds = micros // SECOND
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
