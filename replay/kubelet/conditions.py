"""Node pressure conditions derived from thresholds, with the pressure-transition hysteresis.

Mirrors pkg/kubelet/eviction/helpers.go: nodeConditions, nodeConditionsLastObservedAt,
nodeConditionsObservedSince, hasNodeCondition. Conditions are raised from thresholds met
*ignoring* grace periods, and stay reported for the pressure transition period after they were
last observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from kube.signals import SIGNAL_TO_NODE_CONDITION
from replay.kubelet.duration import nanoseconds_between
from replay.kubelet.thresholds import Threshold


def node_conditions(thresholds: Sequence[Threshold]) -> list[str]:
    """helpers.go: nodeConditions — distinct conditions, in order of first appearance."""
    results: list[str] = []
    for threshold in thresholds:
        condition = SIGNAL_TO_NODE_CONDITION.get(threshold.signal)
        if condition is not None and condition not in results:
            results.append(condition)
    return results


def node_conditions_last_observed_at(
    conditions: Sequence[str], last_observed_at: Mapping[str, datetime], now: datetime
) -> dict[str, datetime]:
    """helpers.go: nodeConditionsLastObservedAt — observed now, others keep their old time."""
    results = {condition: now for condition in conditions}
    for condition, at in last_observed_at.items():
        results.setdefault(condition, at)
    return results


def node_conditions_observed_since(observed_at: Mapping[str, datetime], period_ns: int, now: datetime) -> list[str]:
    """helpers.go: nodeConditionsObservedSince — conditions seen within the last ``period_ns``."""
    results: list[str] = []
    for condition, at in observed_at.items():
        if nanoseconds_between(at, now) < period_ns:
            results.append(condition)
    return results


def has_node_condition(conditions: Sequence[str], item: str) -> bool:
    """helpers.go: hasNodeCondition."""
    return item in conditions
