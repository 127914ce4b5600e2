"""``evictlens record`` flags: every one documented with an example, durations in Go's grammar."""

from __future__ import annotations

import argparse

import pytest

from kube.errors import InputError
from recordings.cli import build_parser
from recordings.recorder.options import add_record_arguments, options_from_args


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_record_arguments(p)
    return p.parse_args(["-o", "rec", *argv])


def test_every_record_argument_has_a_help_text_with_an_example() -> None:
    (subs,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    record = subs.choices["record"]
    for action in record._actions:
        if isinstance(action, argparse._HelpAction) or action.dest == "debug":
            continue
        assert action.help and "e.g. " in action.help, action.option_strings


def test_record_durations_use_go_s_grammar() -> None:
    opts = options_from_args(_parse("--interval", "1m30s", "--duration", "24h", "--timeout", "500ms"))
    assert (opts.interval, opts.duration, opts.timeout) == (90.0, 86400.0, 0.5)
    assert options_from_args(_parse()).interval == 10.0 and options_from_args(_parse()).timeout == 5.0


@pytest.mark.parametrize(
    ("flag", "value", "line"),
    [
        (
            "--interval",
            "1d",
            '--interval: time: unknown unit "d" in duration "1d"; Go durations have no days: write 24h',
        ),
        (
            "--duration",
            "2d",
            '--duration: time: unknown unit "d" in duration "2d"; Go durations have no days: write 48h',
        ),
        (
            "--timeout",
            "5",
            '--timeout: time: missing unit in duration "5"; add a unit, e.g. 5s (units: ns, us, ms, s, m, h)',
        ),
        ("--interval", "0s", "--interval: expected a positive duration, got '0s'"),
    ],
)
def test_record_refuses_what_go_refuses_naming_the_flag(flag: str, value: str, line: str) -> None:
    with pytest.raises(InputError) as err:
        options_from_args(_parse(flag, value))
    assert err.value.one_line() == line
