"""One duration grammar (Go's time.ParseDuration) for every flag and file, with hints for what Go refuses."""

from __future__ import annotations

import pytest

import replay.kubelet.duration
from kube import duration
from kube.errors import InputError


def test_the_port_uses_the_same_grammar() -> None:
    assert replay.kubelet.duration.parse_duration is duration.parse_duration
    assert replay.kubelet.duration.format_duration is duration.format_duration


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("1d", "Go durations have no days: write 24h"),
        ("7d", "Go durations have no days: write 168h"),
        ("10", "add a unit, e.g. 10s (units: ns, us, ms, s, m, h)"),
        ("1.5", "add a unit, e.g. 1.5s (units: ns, us, ms, s, m, h)"),
        ("1w", "expected a Go duration such as 10s, 1m30s or 24h (units: ns, us, ms, s, m, h)"),
    ],
)
def test_refused_durations_keep_go_s_message_and_add_a_hint(text: str, hint: str) -> None:
    with pytest.raises(InputError) as err:
        duration.parse_duration(text)
    assert err.value.problem.startswith("time: ")  # Go's own words, as conformance expects
    assert err.value.hint == hint
    assert err.value.one_line().endswith(f"; {hint}")


def test_flag_durations_are_positive_seconds_named_by_their_flag() -> None:
    assert duration.parse_duration_seconds("1m30s", flag="--interval") == 90.0
    assert duration.parse_duration_seconds(" 500ms ", flag="--interval") == 0.5
    with pytest.raises(InputError) as err:
        duration.parse_duration_seconds("1d", flag="--interval")
    assert err.value.one_line() == (
        '--interval: time: unknown unit "d" in duration "1d"; Go durations have no days: write 24h'
    )
    with pytest.raises(InputError, match="positive"):
        duration.parse_duration_seconds("0s", flag="--timeout")
