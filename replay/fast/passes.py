"""One node's passes on the fast path, whatever the columns came from (a recording, a conformance case).

:class:`FastManager` wraps the reference :class:`~replay.kubelet.manager.EvictionManager` of a node:
the threshold masks of :mod:`replay.fast.signals` drive the state machine of :mod:`replay.fast.loop`;
at a pass where a threshold is actionable, or a local-storage limit may be exceeded, the reference
manager is loaded with the machine's state before that pass and run by the caller's ``delegate``
(eviction_manager.go: synchronize, byte-exact messages and rankings). A run of *quiet* passes — no
threshold met even with its minimum reclaim, every node condition past its transition period, no
local-storage check due — changes nothing but the last observations, so it is skipped in bulk.

A node's first pass is judged by the thresholds as configured: synchronize copies ``m.config.Thresholds``
before the first-pass block, whose ``thresholds, err := UpdateContainerFsThresholds(...)`` shadows that copy
(eviction_manager.go, 1.29 through master), so the containerfs copies (and the user containerfs thresholds
they replace) count only from the second pass. When that changes what the first pass finds met, the
reference manager runs it from its own first-pass set-up and the machine's state is loaded from it.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from kube.signals import SIGNALS
from replay.fast.loop import State, StateMachine, to_datetime
from replay.fast.signals import ThresholdPlan, plan_thresholds, threshold_columns
from replay.kubelet.manager import NO_ACTIVE_PODS, EvictionManager, SyncResult, no_gc_effect
from replay.kubelet.thresholds import Threshold, get_reclaimable_threshold, sort_by_eviction_priority

NO_THRESHOLDS_MET = "no thresholds met"

Delegate = Callable[[int, int, datetime], SyncResult]
"""``(pass index in the chunk, tick, manager clock) -> the reference manager's result`` for that pass."""
Evictable = Callable[[int, datetime], tuple[bool, bool]]
"""``(tick, manager clock) -> (some candidate could be evicted (is not critical), there are candidates)``."""


@dataclass
class ChunkPasses:
    """What the fast path decided at each pass of a chunk, in pass order."""

    ticks: list[int]
    now: list[int]
    """The manager's clock, µs since the epoch."""
    met: list[int]
    """Bit i: configured threshold i is in thresholds met."""
    actionable: list[int]
    reasons: list[str]
    """SyncResult.reason of each pass."""
    conditions: list[tuple[str, ...]]
    delegated: dict[int, SyncResult] = field(default_factory=dict)
    """Pass index → the reference manager's result, at the passes it ran."""


class FastManager:
    """The fast path's manager for one node (see the module docstring)."""

    def __init__(
        self, manager: EvictionManager, plans: list[ThresholdPlan], configured: list[Threshold] | None = None
    ) -> None:
        self.manager = manager
        self.plans = plans
        self.machine = StateMachine(manager.thresholds, manager.config.pressure_transition_period)
        self.configured = None if configured == manager.thresholds else configured
        """The thresholds the first pass evaluates when UpdateContainerFsThresholds changed them (else None)."""
        self.first_pending = True
        """The node's first pass is still to come (the first row :meth:`run` is given)."""
        self._first_differs: bool | None = None
        self.unmodelled: str | None = None
        """Set when the reference's first pass left state the machine cannot hold: the caller hands the node
        to the reference (the run stopped after that pass)."""

    @classmethod
    def build(cls, manager: EvictionManager) -> FastManager | str:
        """The manager's first-pass set-up, then the fast manager, or why the fast path does not model it."""
        configured = list(manager.thresholds)
        if manager._first_pass() is not None:
            return "first pass failed"
        plans = plan_thresholds(manager.thresholds)
        if plans is None or len(plans) > 63:
            return "thresholds outside the columnar model"
        return cls(manager, plans, configured)

    def columns(self, obs: pl.DataFrame) -> pl.DataFrame:
        """The observations frame with each threshold's value and the met masks (signals.threshold_columns)."""
        return threshold_columns(obs, self.plans)

    def met_ticks(self, frame: pl.DataFrame) -> set[int]:
        """Ticks where some threshold is met with its minimum reclaim, and the node's first pass where the
        reference runs it (:meth:`first_pass_differs`): the only ones that can be delegated for a threshold
        (a superset)."""
        ticks = {int(t) for t in frame.filter(pl.col("m1") != 0)["tick"].to_list()}
        if self.first_pending and frame.height and self.first_pass_differs(frame):
            ticks.add(int(frame["tick"][0]))
        return ticks

    def first_pass_differs(self, frame: pl.DataFrame) -> bool:
        """Whether the thresholds as configured find another list met at the node's first pass (``frame``'s
        first row) than the updated ones the machine evaluates: only then must the reference run that pass
        from its own first-pass set-up (thresholdsMet keeps its input's order, so equal lists mean the same
        pass). Computed once, at the first frame."""
        if self._first_differs is None:
            self._first_differs = self._differs(frame)
        return self._first_differs

    def _differs(self, frame: pl.DataFrame) -> bool:
        configured, updated = self.configured, self.machine.thresholds
        if configured is None:
            return False
        m0 = int(frame["m0"][0])
        if configured == updated[: len(configured)]:  # only copies appended: is one of them met?
            return m0 >> len(configured) != 0
        plans = plan_thresholds(configured)
        if plans is None or len(plans) > 63:
            return True  # a threshold the columns cannot judge: the reference judges the pass
        m0_configured = int(threshold_columns(frame.head(1), plans)["m0"][0])
        met = [updated[i] for i in range(len(updated)) if m0 >> i & 1]
        return met != [configured[i] for i in range(len(configured)) if m0_configured >> i & 1]

    def _run_first_pass(
        self, delegate: Delegate, tick: int, now: int, present: int, times: list[int | None]
    ) -> SyncResult:
        """The first pass on the reference manager as the kubelet runs it: the configured thresholds and no
        first-pass set-up yet (synchronize does it again, to the same lists); then the machine's state from it."""
        manager, machine = self.manager, self.machine
        assert self.configured is not None
        manager.thresholds = list(self.configured)
        manager.dedicated_image_fs = None
        machine.load_into(manager, machine.state)
        result = delegate(0, tick, to_datetime(now))
        assert manager.thresholds == machine.thresholds, "the first-pass set-up gave other thresholds"
        state = machine.state_of(manager, present, times)
        if state is None:
            self.unmodelled = "a containerfs threshold met at the first pass outlives it"
        else:
            machine.state = state
        return result

    def state_manager(self) -> EvictionManager:
        """The reference manager loaded with the state after the last pass (conditions, admission)."""
        self.machine.load_into(self.manager, self.machine.state)
        return self.manager

    def nothing_to_evict(self, actionable: list[int], candidates: bool) -> str | None:
        """synchronize's reason after the thresholds when no candidate can be evicted (``candidates``: some,
        all critical), from the actionable thresholds alone; None when node-level reclaim could relieve
        the pressure (a reclaimer that frees something) and only the reference can tell."""
        manager = self.manager
        thresholds = [self.machine.thresholds[c] for c in actionable]
        sort_by_eviction_priority(thresholds)
        reclaimable = get_reclaimable_threshold(thresholds)
        if reclaimable is None:
            return "no reclaimable threshold"
        signal = reclaimable[0].signal
        if manager.signal_to_node_reclaim_funcs.get(signal) and manager.reclaimer is not no_gc_effect:
            return None  # with no_gc_effect the same stats stay over the threshold: never relieved
        if manager.signal_to_rank_func.get(signal) is None:
            return f"no ranking function for signal {signal}"
        if not candidates:
            return NO_ACTIVE_PODS
        return "unable to evict any pods from the node"

    def run(
        self,
        frame: pl.DataFrame,
        storage: AbstractSet[int],
        delegate: Delegate,
        evictable: Evictable | None = None,
        *,
        stop: Callable[[], bool] | None = None,
    ) -> ChunkPasses:
        """Every pass of ``frame`` (from :meth:`columns`) in order; ``storage`` the ticks where the reference
        must run (local-storage checks, a moment asked for). At an actionable pass where ``evictable`` says
        no pod can be evicted, the reason comes from :meth:`nothing_to_evict` and the reference is not run.
        ``stop``, asked after each pass the reference ran, ends the run there (fewer passes than rows)."""
        machine = self.machine
        ticks: list[int] = frame["tick"].to_list()
        nows: list[int] = frame["when"].to_list()
        m0s: list[int] = frame["m0"].to_list()
        m1s: list[int] = frame["m1"].to_list()
        presents: list[int] = frame["present"].to_list()
        tcols: list[list[int | None]] = [frame[f"t{k}"].to_list() for k in range(len(SIGNALS))]
        n = len(ticks)
        run_end, run_min = _runs(frame, ticks, nows, m1s, storage)
        out = ChunkPasses(ticks, nows, [], [], [], [])
        met, act, reasons, conditions = out.met, out.actionable, out.reasons, out.conditions
        thresholds = machine.thresholds
        ptp = machine.ptp_ns
        first = self.first_pending and n > 0 and self.first_pass_differs(frame)
        if n:
            self.first_pending = False
        i = 0
        while i < n:
            st = machine.state
            if first and i == 0:
                result = self._run_first_pass(delegate, ticks[0], nows[0], presents[0], [c[0] for c in tcols])
                out.delegated[0] = result
                met.append(sum((t in result.thresholds_met) << b for b, t in enumerate(thresholds)))
                act.append(sum((t in result.thresholds_actionable) << b for b, t in enumerate(thresholds)))
                reasons.append(result.reason)
                conditions.append(tuple(result.node_conditions))
                if self.unmodelled is not None or (stop is not None and stop()):
                    break
                i += 1
                continue
            j = run_end[i]
            if j > i and (not st.last_observed or (run_min[i] - max(st.last_observed.values())) * 1000 >= ptp):
                # quiet run: nothing met, no condition within its transition period (helpers.go: every
                # function of the pass gives the empty answer); only the last observations move on
                k = j - i
                met.extend([0] * k)
                act.extend([0] * k)
                reasons.extend([NO_THRESHOLDS_MET] * k)
                conditions.extend([()] * k)
                machine.state = State([], {}, [], st.last_observed, presents[j - 1], [c[j - 1] for c in tcols])
                i = j
                continue
            before = st
            step = machine.step(nows[i], m0s[i], m1s[i], presents[i], [c[i] for c in tcols])
            if step.actionable and ticks[i] not in storage and evictable is not None:
                some, any_candidate = evictable(ticks[i], to_datetime(nows[i]))
                reason = None if some else self.nothing_to_evict(step.actionable, any_candidate)
                if reason is not None:
                    met.append(step.met_mask)
                    act.append(step.actionable_mask)
                    reasons.append(reason)
                    conditions.append(tuple(step.conditions))
                    i += 1
                    continue
            if step.actionable or ticks[i] in storage:
                machine.load_into(self.manager, before)
                result = delegate(i, ticks[i], to_datetime(nows[i]))
                out.delegated[i] = result
                met_mask = act_mask = 0
                for b, t in enumerate(thresholds):
                    met_mask |= (t in result.thresholds_met) << b
                    act_mask |= (t in result.thresholds_actionable) << b
                met.append(met_mask)
                act.append(act_mask)
                reasons.append(result.reason)
                conditions.append(tuple(result.node_conditions))
                if stop is not None and stop():
                    break
            else:
                met.append(step.met_mask)
                act.append(step.actionable_mask)
                reasons.append(step.reason)
                conditions.append(tuple(step.conditions))
            i += 1
        if len(met) < n:  # stopped early
            out.ticks, out.now = ticks[: len(met)], nows[: len(met)]
        return out


SMALL_RUNS = 256
"""Up to this many passes the quiet runs are found in Python: a live engine steps each node one tick at a time,
where the polars query's set-up cost (~0.3 ms) a node and a tick was the larger part of a 100-node tick."""


def _runs(
    frame: pl.DataFrame, ticks: list[int], nows: list[int], m1s: list[int], storage: AbstractSet[int]
) -> tuple[list[int], list[int]]:
    """run_end: the first non-quiet pass at or after each pass (n: none); run_min: the least clock from it to
    run_end (1 << 62 at a non-quiet pass). A pass is quiet when nothing is met (m1 == 0) and no local-storage
    check is asked at its tick."""
    n = len(ticks)
    if n <= SMALL_RUNS and None not in m1s and None not in nows:
        run_end, run_min = [n] * n, [1 << 62] * n
        end, least = n, 1 << 62
        for i in range(n - 1, -1, -1):
            if m1s[i] == 0 and ticks[i] not in storage:
                least = min(least, nows[i])
            else:
                end, least = i, 1 << 62
            run_end[i], run_min[i] = end, least
        return run_end, run_min
    quiet = pl.col("m1") == 0
    if storage:
        quiet = quiet & ~pl.col("tick").is_in(list(storage))
    runs = frame.select(
        pl.when(quiet)
        .then(pl.lit(n, pl.Int64))
        .otherwise(pl.int_range(pl.len(), dtype=pl.Int64))
        .reverse()
        .cum_min()
        .reverse()
        .alias("end"),
        pl.when(quiet).then(pl.col("when")).otherwise(pl.lit(1 << 62, pl.Int64)).alias("when"),
    ).select("end", pl.col("when").reverse().cum_min().reverse().over("end").alias("min"))
    return runs["end"].to_list(), runs["min"].to_list()
