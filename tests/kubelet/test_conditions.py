"""conditions.py: node pressure conditions from met thresholds, with the transition-period hysteresis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kube.signals import DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE, SIGNAL_TO_RESOURCE
from replay.kubelet.conditions import (
    has_node_condition,
    node_conditions,
    node_conditions_last_observed_at,
    node_conditions_observed_since,
)
from replay.kubelet.duration import MINUTE
from replay.kubelet.thresholds import Threshold

T0 = datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("signal", "condition"),
    [
        ("memory.available", MEMORY_PRESSURE),
        ("allocatableMemory.available", MEMORY_PRESSURE),
        ("nodefs.available", DISK_PRESSURE),
        ("nodefs.inodesFree", DISK_PRESSURE),
        ("imagefs.available", DISK_PRESSURE),
        ("imagefs.inodesFree", DISK_PRESSURE),
        ("containerfs.available", DISK_PRESSURE),
        ("containerfs.inodesFree", DISK_PRESSURE),
        ("pid.available", PID_PRESSURE),
    ],
)
def test_each_signal_maps_to_its_node_condition(signal: str, condition: str) -> None:
    assert node_conditions([Threshold(signal)]) == [condition]


def test_every_valid_signal_has_a_condition() -> None:
    assert all(node_conditions([Threshold(s)]) for s in SIGNAL_TO_RESOURCE)


def test_conditions_are_distinct_in_order_of_first_appearance() -> None:
    items = [
        Threshold("nodefs.available"),
        Threshold("memory.available"),
        Threshold("imagefs.available"),
        Threshold("allocatableMemory.available"),
        Threshold("pid.available"),
    ]
    assert node_conditions(items) == [DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE]


def test_unknown_signal_yields_no_condition() -> None:
    assert node_conditions([Threshold("bogus")]) == []


def test_last_observed_refreshes_current_and_keeps_old_conditions() -> None:
    now = T0 + timedelta(minutes=3)
    got = node_conditions_last_observed_at([MEMORY_PRESSURE], {MEMORY_PRESSURE: T0, DISK_PRESSURE: T0}, now)
    assert got == {MEMORY_PRESSURE: now, DISK_PRESSURE: T0}


@pytest.mark.parametrize(
    ("elapsed", "reported"),
    [
        (timedelta(0), True),
        (timedelta(minutes=4, seconds=59), True),
        (timedelta(minutes=5), False),
        (timedelta(hours=1), False),
    ],
)
def test_condition_is_reported_strictly_within_the_transition_period(elapsed: timedelta, reported: bool) -> None:
    got = node_conditions_observed_since({MEMORY_PRESSURE: T0}, 5 * MINUTE, T0 + elapsed)
    assert got == ([MEMORY_PRESSURE] if reported else [])


def test_has_node_condition() -> None:
    assert has_node_condition([MEMORY_PRESSURE, DISK_PRESSURE], DISK_PRESSURE)
    assert not has_node_condition([MEMORY_PRESSURE], PID_PRESSURE)
