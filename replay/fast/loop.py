"""The eviction manager's state machine as a loop over numbers (eviction_manager.go: synchronize).

Mirrors the first half of :meth:`replay.kubelet.manager.EvictionManager.synchronize` — thresholds
met with the minimum-reclaim hysteresis of previously graced ones (helpers.go: thresholdsMet,
mergeThresholds), first-observed times and grace periods (thresholdsFirstObservedAt,
thresholdsMetGracePeriod), node conditions with the pressure transition period
(nodeConditions, nodeConditionsLastObservedAt, nodeConditionsObservedSince) and the stats-advanced
filter (thresholdsUpdatedStats) — with thresholds as indices and times as integer microseconds.
Equal thresholds (``==``, the reference's dict keys) share one canonical index; thresholds equal
for ``hasThreshold`` (min-reclaim not compared) share one merge key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from kube.signals import SIGNAL_TO_NODE_CONDITION, SIGNALS
from replay.fast.signals import SIGNAL_INDEX
from replay.kubelet.manager import EvictionManager
from replay.kubelet.thresholds import SignalObservation, Threshold, has_threshold

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_datetime(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def to_us(when: datetime) -> int:
    return (when - EPOCH) // timedelta(microseconds=1)


@dataclass
class State:
    """What the manager keeps between passes, in numbers."""

    graced: list[int]
    """thresholdsMet: canonical indices, in order."""
    first: dict[int, int]
    """thresholdsFirstObservedAt: canonical index → µs."""
    conditions: list[str]
    last_observed: dict[str, int]
    """nodeConditionsLastObservedAt: condition → µs."""
    last_present: int
    """Bit k: signal k was observed at the last pass (lastObservations has it)."""
    last_times: list[int | None]

    def copy(self) -> State:
        return State(
            list(self.graced),
            dict(self.first),
            list(self.conditions),
            dict(self.last_observed),
            self.last_present,
            list(self.last_times),
        )


@dataclass
class Step:
    met: list[int]
    graced: list[int]
    actionable: list[int]
    conditions: list[str]
    met_mask: int
    """Bit i: configured threshold i is ``in`` thresholds met (equality, as the reference tests it)."""
    actionable_mask: int
    reason: str


class StateMachine:
    def __init__(self, thresholds: Sequence[Threshold], pressure_transition_ns: int) -> None:
        self.thresholds = list(thresholds)
        n = len(self.thresholds)
        self.canon = [next(j for j in range(n) if self.thresholds[j] == t) for t in self.thresholds]
        self.merge_key = [next(j for j in range(n) if has_threshold([self.thresholds[j]], t)) for t in self.thresholds]
        self.signal = [SIGNAL_INDEX[t.signal] for t in self.thresholds]
        self.condition = [SIGNAL_TO_NODE_CONDITION.get(t.signal) for t in self.thresholds]
        self.grace_ns = [t.grace_period for t in self.thresholds]
        self.class_mask = [0] * n
        for i, c in enumerate(self.canon):
            self.class_mask[c] |= 1 << i
        self.ptp_ns = pressure_transition_ns
        self.state = State([], {}, [], {}, 0, [None] * len(SIGNALS))
        self._bits: dict[int, tuple[int, ...]] = {}

    def _indices(self, mask: int) -> tuple[int, ...]:
        found = self._bits.get(mask)
        if found is None:
            found = self._bits[mask] = tuple(i for i in range(len(self.thresholds)) if mask >> i & 1)
        return found

    def step(self, now: int, m0: int, m1: int, present: int, times: Sequence[int | None]) -> Step:
        """One pass: ``m0``/``m1`` threshold-met masks without/with minimum reclaim, ``present`` the
        observed signals, ``times`` their observation times (µs or None)."""
        st = self.state
        canon = self.canon
        met = list(self._indices(m0))
        if st.graced:
            keys = {self.merge_key[i] for i in met}
            for g in st.graced:
                if m1 >> g & 1 and self.merge_key[g] not in keys:
                    met.append(g)
                    keys.add(self.merge_key[g])
        first: dict[int, int] = {}
        conditions: list[str] = []
        for i in met:
            c = canon[i]
            if c not in first:
                first[c] = st.first.get(c, now)
            cond = self.condition[i]
            if cond is not None and cond not in conditions:
                conditions.append(cond)
        last_observed = dict.fromkeys(conditions, now)
        for cond, at in st.last_observed.items():
            last_observed.setdefault(cond, at)
        ptp = self.ptp_ns
        conditions = [cond for cond, at in last_observed.items() if (now - at) * 1000 < ptp]
        graced = [c for c, at in first.items() if (now - at) * 1000 >= self.grace_ns[c]]
        actionable = []
        for g in graced:
            k = self.signal[g]
            if not present >> k & 1:
                continue
            t, last = times[k], st.last_times[k]
            if not st.last_present >> k & 1 or t is None or last is None or t > last:
                actionable.append(g)
        self.state = State(graced, first, conditions, last_observed, present, list(times))
        met_mask = 0
        for c in {canon[i] for i in met}:
            met_mask |= self.class_mask[c]
        act_mask = 0
        for c in actionable:
            act_mask |= self.class_mask[c]
        if actionable:
            reason = ""
        elif not met:
            reason = "no thresholds met"
        elif not graced:
            reason = "thresholds met, waiting for their grace period"
        else:
            reason = "thresholds met, but their stats have not been updated since the last pass"
        return Step(met, graced, actionable, conditions, met_mask, act_mask, reason)

    def state_of(self, manager: EvictionManager, present: int, times: Sequence[int | None]) -> State | None:
        """The reference manager's state after a pass it ran, in numbers (``present``/``times``: that pass's
        observations, as :meth:`step` keeps them); None when the manager keeps a threshold outside
        :attr:`thresholds` that can outlive the pass (a graced one: the minimum-reclaim hysteresis of the next
        pass reads it). A first-observed time of a threshold not graced is dropped: the next pass rebuilds
        that map from the thresholds it finds met (thresholdsFirstObservedAt), which cannot include it."""
        index: dict[Threshold, int] = {}
        for i, t in enumerate(self.thresholds):
            index.setdefault(t, self.canon[i])
        graced = []
        for t in manager.thresholds_met:
            c = index.get(t)
            if c is None:
                return None
            graced.append(c)
        first = {index[t]: to_us(at) for t, at in manager.thresholds_first_observed_at.items() if t in index}
        last_observed = {c: to_us(at) for c, at in manager.node_conditions_last_observed_at.items()}
        return State(graced, first, list(manager.node_conditions), last_observed, present, list(times))

    def load_into(self, manager: EvictionManager, state: State) -> None:
        """Give the reference manager this (earlier) state, to run one pass exactly as it would."""
        thr = self.thresholds
        manager.thresholds_met = [thr[c] for c in state.graced]
        manager.thresholds_first_observed_at = {thr[c]: to_datetime(at) for c, at in state.first.items()}
        manager.node_conditions = list(state.conditions)
        manager.node_conditions_last_observed_at = {c: to_datetime(at) for c, at in state.last_observed.items()}
        manager.last_observations = {
            SIGNALS[k]: SignalObservation(None, None, None if t is None else to_datetime(t))
            for k, t in enumerate(state.last_times)
            if state.last_present >> k & 1
        }
