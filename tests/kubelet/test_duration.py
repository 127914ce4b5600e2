"""duration.py: Go's time.ParseDuration and Duration.String, from Go's own time_test.go tables."""

from __future__ import annotations

import pytest

from kube.errors import InputError
from replay.kubelet.duration import (
    HOUR,
    MICROSECOND,
    MILLISECOND,
    MINUTE,
    NANOSECOND,
    SECOND,
    format_duration,
    parse_duration,
)

# go/src/time/time_test.go: parseDurationTests
PARSE_CASES: list[tuple[str, int]] = [
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600 * MILLISECOND),
    ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND),
    ("1.0s", 1 * SECOND),
    ("1.00s", 1 * SECOND),
    ("1.004s", 1 * SECOND + 4 * MILLISECOND),
    ("1.0040s", 1 * SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + 1 * MILLISECOND),
    ("10ns", 10 * NANOSECOND),
    ("11us", 11 * MICROSECOND),
    ("12\u00b5s", 12 * MICROSECOND),
    ("12\u03bcs", 12 * MICROSECOND),
    ("13ms", 13 * MILLISECOND),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    ("1h2m3s4ms5us6ns", HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND),
    ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * MINUTE),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775.808us", -(1 << 63)),
    ("-9223372036s854ms775us808ns", -(1 << 63)),
    ("-2562047h47m16.854775808s", -(1 << 63)),
    ("0.100000000000000000000h", 6 * MINUTE),
    ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372539827),
    # kubelet configuration values
    ("1m30s", 90 * SECOND),
    ("5m0s", 5 * MINUTE),
]


@pytest.mark.parametrize(("text", "want"), PARSE_CASES)
def test_parse_duration_matches_go_time_tests(text: str, want: int) -> None:
    assert parse_duration(text) == want


def test_parse_duration_accepts_int64_minimum_in_nanoseconds() -> None:
    assert parse_duration("-9223372036854775808ns") == -(1 << 63)


# go/src/time/time_test.go: parseDurationErrorTests (+ the kind of message Go gives)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("3", 'time: missing unit in duration "3"'),
        ("-", 'time: invalid duration "-"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        ("-.", 'time: invalid duration "-."'),
        (".s", 'time: invalid duration ".s"'),
        ("+.s", 'time: invalid duration "+.s"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("1s-2s", 'time: unknown unit "s-" in duration "1s-2s"'),
        ("1.2.3s", 'time: missing unit in duration "1.2.3s"'),
        ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
        ("9223372036854776us", 'time: invalid duration "9223372036854776us"'),
        ("3000000h", 'time: invalid duration "3000000h"'),
        ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
        ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ],
)
def test_parse_duration_errors_match_go(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_duration(text)
    assert err.value.problem == message


# go/src/time/time_test.go: durationTests (modern Go prints "0s" and "µs" with U+00B5)
@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0s"),
        (1, "1ns"),
        (1100, "1.1\u00b5s"),
        (2200 * MICROSECOND, "2.2ms"),
        (3300 * MILLISECOND, "3.3s"),
        (4 * MINUTE + 5 * SECOND, "4m5s"),
        (4 * MINUTE + 5001 * MILLISECOND, "4m5.001s"),
        (5 * HOUR + 6 * MINUTE + 7001 * MILLISECOND, "5h6m7.001s"),
        (8 * MINUTE + 1, "8m0.000000001s"),
        ((1 << 63) - 1, "2562047h47m16.854775807s"),
        (-(1 << 63), "-2562047h47m16.854775808s"),
        (5 * MINUTE, "5m0s"),
        (HOUR, "1h0m0s"),
        (90 * SECOND, "1m30s"),
    ],
)
def test_format_duration_matches_go_duration_string(ns: int, text: str) -> None:
    assert format_duration(ns) == text
    if ns > 0:
        assert format_duration(-ns) == "-" + text


@pytest.mark.parametrize("ns", [1, 999, 1000, 1500, 10**6 + 1, 10**9, 61 * SECOND + 5, (1 << 63) - 1, -(1 << 63) + 1])
def test_format_then_parse_round_trips(ns: int) -> None:
    assert parse_duration(format_duration(ns)) == ns
