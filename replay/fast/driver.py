"""Replaying nodes on the fast path, and falling back to the reference where it models less.

Per node and settings request a :class:`NodeReplay` runs chunk by chunk: signals and threshold
masks from :mod:`replay.fast.signals`, the passes by :class:`~replay.fast.passes.FastManager` (the
state machine of :mod:`replay.fast.loop`, and at the passes where a threshold is actionable or a
local-storage limit may be exceeded, the reference manager itself, loaded with the loop's state, on
that one parsed summary); counts, conditions, overcommit and signal rows are built per chunk as
columns. Nodes are read in groups (:class:`~replay.fast.columns.GroupColumns`). Each node yields a
:class:`NodePartial`; :mod:`replay.fast.merge` turns partials into one ``ReplayResult``.

``--counterfactual`` runs here too (:mod:`replay.fast.pod_usage`): after a pass that evicts, the rest of the
chunk's columns are recomputed with the evicted pods' recorded usage taken off and the passes go on from
there (the state machine keeps its state), as the reference's ``remove_pods`` rewrites each later summary.

Falls back to the reference path (``Replay`` + ``collect`` for that node) for: Windows nodes
(memory.available from the commit charge), a first pass that fails
(KubeletSeparateDiskGC off on a split filesystem), thresholds the columns cannot compare exactly
(fractional or ≥ 2^62 quantities, min-reclaim above 100 %), more than 63 thresholds, and a user
containerfs threshold graced at the first pass (FastManager.unmodelled: the update replaced it, yet its
minimum-reclaim hysteresis can keep it met).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from kube.signals import SIGNALS
from recordings.pod_timeline import PodVersion, index_pods_by_node
from recordings.reader import Recording, to_micros
from recordings.schema import NODE_STATS
from replay.collect import NodeAccumulator, NodePartial, allocatable, reference_partial
from replay.context import active_pods, infer_topology
from replay.counterfactual import disk_emptydirs
from replay.fast import lean
from replay.fast.columns import CHUNK_TICKS, NODE_PART, WHOLE, Chunk, GroupColumns, StorageUsage, SummaryAt
from replay.fast.loop import to_datetime
from replay.fast.passes import ChunkPasses, FastManager
from replay.fast.pod_usage import (
    CounterfactualSummary,
    NodeUsage,
    add_usage,
    adjust,
    empty_usage,
    removed_entries,
    totals_at,
)
from replay.fast.signals import observations
from replay.impact import OVERCOMMIT_RESOURCES, PodTotals, pod_totals
from replay.kubelet import pods as podutil
from replay.kubelet.api import Pod, parse_summary
from replay.kubelet.manager import EvictionManager, SyncResult
from replay.reference import NodeRun, Pass
from replay.results import OVERCOMMIT_SCHEMA, SIGNALS_SCHEMA
from replay.settings import SettingsRequest


def unsupported(request: SettingsRequest, run: NodeRun) -> str | None:
    """Why the fast path does not model this node under this request (None: it does)."""
    if run.settings.platform != "linux":
        return f"platform {run.settings.platform}"
    return None


class NodeReplay:
    """One node under one request, fed chunk by chunk."""

    def __init__(self, run: NodeRun, *, frames: bool = True, rankings: bool = True) -> None:
        self.run = run
        self.node = run.node
        self.cfg = run.settings.config
        self.fallback: str | None = unsupported(run.request, run)
        self.manager: EvictionManager | None = None
        self.fast: FastManager | None = None
        self.no_thresholds = False
        self.storage: frozenset[int] = frozenset()
        self.acc = NodeAccumulator(run.node, frames=frames, rankings=rankings)
        self.until_tick: int | None = None
        """Stop after this tick, and run the reference manager at it whatever the columns say (a moment)."""
        self.stop_at_eviction = False
        """Stop after the first pass that evicts (``explain --at first-eviction``)."""
        self.done = False
        self.last_pass: Pass | None = None
        """The last pass the reference manager ran (``explain --at`` reads it)."""
        self._frame: pl.DataFrame | None = None
        self.late: dict[int, list[str]] = {}
        self.allocatable: dict[str, int] = allocatable(run)
        self._totals: dict[int, PodTotals] = {}
        self._over_key: Any = None
        self._evictable_key: Any = None
        self._evictable_value = (True, True)
        self._over_values: list[tuple[int, int, int]] = [(0, 0, 0)] * len(OVERCOMMIT_RESOURCES)
        self._evicted: list[str] = []
        """UIDs the replay evicted, in order (run.evicted_uids as a sequence: the set as of any pass)."""
        self._observed = pl.Series(
            "observed", [v.observed for v in run.pod_versions], dtype=pl.Datetime("us", "UTC")
        ).dt.epoch("us")
        self.counterfactual = bool(run.request.counterfactual)
        self._removed = empty_usage()
        """--counterfactual: per tick of the current chunk, the evicted pods' recorded usage taken off
        (pod_usage.USAGE_SCHEMA)."""
        self._removals: list[tuple[str, int]] = []
        """--counterfactual: (UID, tick of its eviction) of each pod evicted so far: a new chunk's removal."""
        self._usage: NodeUsage | None = None
        """--counterfactual: the node's pods' rows in the current chunk's range, shared by its requests."""
        self._overflow: list[int] = []
        """--counterfactual: ticks of the current frame whose rewritten summary no longer parses."""

    # -- set-up at the first pass ---------------------------------------------------------------
    def start(
        self,
        node_summary: dict[str, Any],
        first_tick: int,
        storage: Callable[[], StorageUsage],
        late: dict[int, list[str]],
    ) -> None:
        run = self.run
        self.late = late
        summary = parse_summary(node_summary, source=f"recording {self.node} tick {first_tick}")
        if run.request.topology is None:
            run.topology, run.topology_source = infer_topology(summary)
        manager = EvictionManager(self.cfg, run.settings.profile, run.topology, platform=run.settings.platform)
        self.manager = run.manager = manager
        if not manager.thresholds and not self.cfg.local_storage_capacity_isolation:
            self.no_thresholds = True
            return
        fast = FastManager.build(manager)
        if isinstance(fast, str):
            self.fallback = fast
            return
        self.fast = fast
        if self.cfg.local_storage_capacity_isolation:
            self.storage = storage().ticks(run.topology.dedicated_image_fs)

    # -- per chunk ------------------------------------------------------------------------------
    def prepare(self, chunk: Chunk, usage: NodeUsage | None = None) -> set[int]:
        """Compute the chunk's columns; the ticks whose whole summary may be needed. ``usage``: the node's
        pods' rows in the chunk's range, for ``--counterfactual`` (its removals are read from there)."""
        if self.no_thresholds or self.fallback or self.done:
            return set()
        assert self.fast is not None
        if self.counterfactual:
            self._usage = usage or NodeUsage(self.run.rec, self.node)
            self._removed = empty_usage()
            for uid, after in self._removals:  # the pods evicted in earlier chunks, over this one's ticks
                self._removed = add_usage(self._removed, self._usage.usage(uid, after, self.run._emptydirs[uid]))
        self._frame = self._columns(chunk)
        return self.fast.met_ticks(self._frame) | (self._forced() & set(chunk.infos))

    def _columns(self, chunk: Chunk, after: int | None = None) -> pl.DataFrame:
        """The chunk's frame (rows after tick ``after`` only, when given); with ``--counterfactual`` from the
        signal inputs with the evicted pods' usage taken off (and ``_overflow`` set)."""
        assert self.fast is not None
        node_rows, pods_rows = chunk.node_rows, chunk.pods_rows
        if after is not None:
            node_rows, pods_rows = (node_rows.filter(pl.col("tick") > after), pods_rows.filter(pl.col("tick") > after))
        if self.counterfactual:
            node_rows, pods_rows, self._overflow = adjust(node_rows, pods_rows, self._removed, self.run.topology)
        obs = observations(node_rows, pods_rows, chunk.tick_times)
        if self.until_tick is not None:
            obs = obs.filter(pl.col("tick") <= self.until_tick)
        return self.fast.columns(obs)

    def _forced(self) -> frozenset[int]:
        """The ticks where the reference manager runs whatever the thresholds: storage checks, the moment."""
        return self.storage if self.until_tick is None else self.storage | {self.until_tick}

    def run_chunk(self, chunk: Chunk, summaries: Mapping[int, SummaryAt]) -> None:
        if self.fallback or self.done:
            return
        if self.no_thresholds:
            obs = observations(chunk.node_rows, chunk.pods_rows, chunk.tick_times).select("tick", "when")
            n = obs.height
            cp = ChunkPasses(
                obs["tick"].to_list(),
                obs["when"].to_list(),
                [0] * n,
                [0] * n,
                ["no eviction thresholds configured"] * n,
                [()] * n,
            )
            self._account(cp, {}, {}, len(self._evicted))
            return
        if self.counterfactual:
            try:
                self._run_counterfactual(chunk, summaries)
            finally:
                self._usage = None  # the node's rows go with its chunk
            return
        frame, fast = self._frame, self.fast
        assert frame is not None and fast is not None
        self._frame = None
        candidates: dict[int, list[Pod]] = {}
        evicted_after: dict[int, int] = {}

        def delegate(index: int, tick: int, when: datetime) -> SyncResult:
            result, cands = self._delegate(chunk, tick, when, summaries[tick])
            candidates[index] = cands
            evicted_after[index] = len(self._evicted)
            return result

        evicted_before = len(self._evicted)
        stop = (lambda: bool(self.acc.evictions)) if self.stop_at_eviction else None
        cp = fast.run(frame, self._forced(), delegate, self._evictable, stop=stop)
        if self._unmodelled():
            return
        if len(cp.ticks) < frame.height or (self.until_tick is not None and self.until_tick in chunk.infos):
            self.done = True
            frame = frame.head(len(cp.ticks))
        self._account(cp, candidates, evicted_after, evicted_before)
        if self.acc.frames:
            self.acc.signal_frames.append(self._signals(frame, cp.met, cp.actionable))

    def _run_counterfactual(self, chunk: Chunk, summaries: Mapping[int, SummaryAt]) -> None:
        """run_chunk with ``--counterfactual``: the passes in segments, each ending at a pass that evicts; the
        rest of the chunk is then recomputed with the new pods' usage taken off (the machine keeps its state).
        A pass whose rewritten summary does not parse raises the reference's error there."""
        frame, fast, run = self._frame, self.fast, self.run
        assert frame is not None and fast is not None
        self._frame = None
        candidates: dict[int, list[Pod]] = {}
        evicted_after: dict[int, int] = {}
        evicted_before = len(self._evicted)
        total = ChunkPasses([], [], [], [], [], [])
        done: list[pl.DataFrame] = []
        offset = 0
        mark = len(self._evicted)

        def delegate(index: int, tick: int, when: datetime) -> SyncResult:
            result, cands = self._delegate(chunk, tick, when, self._recorded(summaries, tick))
            candidates[offset + index] = cands
            evicted_after[offset + index] = len(self._evicted)
            for uid in self._evicted[mark:]:
                if uid not in run._emptydirs:
                    pod = next(e.pod for e in result.evictions if e.pod.uid == uid)
                    run._emptydirs[uid] = disk_emptydirs(pod)
                    self._removals.append((uid, tick))
                    assert self._usage is not None
                    self._removed = add_usage(self._removed, self._usage.usage(uid, tick, run._emptydirs[uid]))
            return result

        def stop() -> bool:
            return len(self._evicted) > mark or (self.stop_at_eviction and bool(self.acc.evictions))

        while True:
            overflow = self._overflow[0] if self._overflow else None
            segment = frame if overflow is None else frame.filter(pl.col("tick") < overflow)
            mark = len(self._evicted)
            cp = fast.run(segment, self._forced(), delegate, self._evictable, stop=stop)
            if self._unmodelled():
                return
            n = len(cp.ticks)
            done.append(segment.head(n))
            total.ticks += cp.ticks
            total.now += cp.now
            total.met += cp.met
            total.actionable += cp.actionable
            total.reasons += cp.reasons
            total.conditions += cp.conditions
            total.delegated.update({offset + i: r for i, r in cp.delegated.items()})
            offset += n
            run.counterfactual_removed += removed_entries(self._removed, cp.ticks)
            if self.stop_at_eviction and self.acc.evictions:
                self.done = True
                break
            if n < segment.height:  # a pass evicted: the rest with the new removal
                frame = self._columns(chunk, after=cp.ticks[-1])
                continue
            if overflow is not None and overflow in set(frame["tick"].to_list()):
                self._no_parse(overflow)
            break
        if self.until_tick is not None and self.until_tick in chunk.infos:
            self.done = True
        self._account(total, candidates, evicted_after, evicted_before)
        if self.acc.frames:
            self.acc.signal_frames.append(self._signals(pl.concat(done), total.met, total.actionable))

    def _unmodelled(self) -> bool:
        """The first pass left state the fast path cannot hold (FastManager.unmodelled): the node goes to the
        reference from its start (replay_nodes and replay_node_until run a fresh reference run for it)."""
        assert self.fast is not None
        if self.fast.unmodelled is None:
            return False
        self.fallback = self.fast.unmodelled
        self.done = True
        return True

    def _recorded(self, summaries: Mapping[int, SummaryAt], tick: int) -> SummaryAt:
        """The chunk's summary at ``tick``; with the usage taken off a pass can be actionable where the
        recording's columns were not (a uint64 wrap, a capacity clamp): then the one tick is read."""
        try:
            return summaries[tick]
        except KeyError:
            found = self.run.rec.summary_at(self.node, tick)
            assert found is not None, f"no summary for a pass of {self.node} at tick {tick}"
            return CounterfactualSummary(found, tick, (), {}, self.run.topology, None)

    def _counterfactual(self, recorded: SummaryAt, tick: int) -> SummaryAt:
        """--counterfactual: the summary as the reference's NodeRun.passes parses it, the pods evicted before
        this pass removed (counterfactual.remove_pods); without, ``recorded`` itself."""
        run = self.run
        if not self.counterfactual or not run.evicted_uids:
            return recorded
        source = recorded.recorded if isinstance(recorded, CounterfactualSummary) else recorded
        return CounterfactualSummary(
            source, tick, set(run.evicted_uids), dict(run._emptydirs), run.topology, totals_at(self._removed, tick)
        )

    def _no_parse(self, tick: int) -> None:
        """The reference's error at a pass whose rewritten summary does not parse (a uint64 overflow)."""
        found = self.run.rec.summary_at(self.node, tick)
        assert found is not None
        summary = CounterfactualSummary(
            found, tick, set(self.run.evicted_uids), dict(self.run._emptydirs), self.run.topology, None
        )
        summary.parsed(whole=True, source=f"recording {self.node} tick {tick}")
        raise AssertionError(f"counterfactual overflow at {self.node} tick {tick} parsed")  # pragma: no cover

    def _account(
        self, cp: ChunkPasses, candidates: dict[int, list[Pod]], evicted_after: dict[int, int], evicted_before: int
    ) -> None:
        """The chunk's passes into the node's accumulator: counts, condition changes and overcommit rows."""
        n = len(cp.ticks)
        if not n:
            return
        for index, result in cp.delegated.items():
            if result.evictions:
                cp.reasons[index] = "evicted"
        acc = self.acc
        acc.counted(cp.reasons, to_datetime(cp.now[0]), to_datetime(cp.now[-1]))
        previous: tuple[str, ...] | None = None
        for index, conditions in enumerate(cp.conditions):
            if conditions == previous or (not conditions and not acc.open):
                previous = conditions
                continue
            previous = conditions
            acc.conditions(cp.ticks[index], to_datetime(cp.now[index]), conditions)
        if acc.frames:
            acc.over_frames.append(self._overcommit(cp, candidates, evicted_after, evicted_before))

    def _evictable(self, tick: int, when: datetime) -> tuple[bool, bool]:
        """(some candidate is not critical, there are candidates), recomputed only when the pods in force,
        the late pods or the evictions change."""
        run = self.run
        late = self._pods_at(tick, when)[1] if tick in self.late else ()
        run._pods.at(when)
        key = (run._pods._next, late, len(self._evicted))
        if key != self._evictable_key:
            candidates = [
                p for p in active_pods(self._pods_at(tick, when)[0], self.node) if p.uid not in run.evicted_uids
            ]
            self._evictable_key = key
            self._evictable_value = (any(not podutil.is_critical_pod(p) for p in candidates), bool(candidates))
        return self._evictable_value

    def _pods_at(self, tick: int, when: datetime) -> tuple[list[Pod], tuple[int, ...]]:
        """NodeRun.pods_at without the summary: the pods in force plus the first version of each pod whose
        stats are recorded at ``tick`` (late_stats, in summary order) but whose object came later; and the
        ``seq`` of those late versions."""
        run = self.run
        in_force = run._pods.at(when)
        late = []
        for uid in self.late.get(tick, ()):
            if uid not in in_force:
                first = run._pods.first_version(uid)
                if first is not None and first.observed > when:
                    late.append(first)
        return [run._pod(v) for v in (*in_force.values(), *late)], tuple(v.seq for v in late)

    def _delegate(self, chunk: Chunk, tick: int, when: datetime, recorded: SummaryAt) -> tuple[SyncResult, list[Pod]]:
        """Run the reference manager (loaded by FastManager.run) on this one pass.

        When no candidate can be evicted (none, or only critical pods) and no local-storage limit can be
        exceeded, the pods' stats could only rank pods that are then skipped: the reference runs on the
        node part of the summary (same thresholds, conditions and reason), which is most of a long
        what-if where a threshold stays actionable after every evictable pod is gone."""
        run, manager = self.run, self.manager
        assert manager is not None
        recorded = self._counterfactual(recorded, tick)  # --counterfactual: the evicted pods' usage taken off
        source = f"recording {self.node} tick {tick}"
        pods, _late = self._pods_at(tick, when)
        candidates = [p for p in active_pods(pods, self.node) if p.uid not in run.evicted_uids]
        forced = tick in self._forced()
        with lean.no_cyclic_gc():
            if not forced and all(podutil.is_critical_pod(p) for p in candidates):
                result = manager.synchronize(recorded.parsed(whole=False, source=source), candidates, when)
            else:  # away from a storage tick, only the pods' stats the pass can read (replay.fast.lean)
                result, candidates = _synchronize_built(run, manager, recorded, when, source, forced, candidates)
            self.acc.error(result.error)
            p = Pass(self.node, tick, chunk.infos[tick].time, when, result, tuple(candidates))
            self.last_pass = p
            for eviction in result.evictions:
                if eviction.pod.uid not in run.evicted_uids:
                    self._evicted.append(eviction.pod.uid)
                run.evicted_uids.add(eviction.pod.uid)
                self.acc.evicted(p, run, eviction)
        return result, candidates

    def _pod_totals(self, pod: Pod) -> PodTotals:
        found = self._totals.get(id(pod))
        if found is None:
            found = self._totals[id(pod)] = pod_totals(pod)
        return found

    def _overcommit(
        self, cp: ChunkPasses, candidates: dict[int, list[Pod]], evicted_after: dict[int, int], evicted_before: int
    ) -> pl.DataFrame:
        """ResultBuilder._add_overcommit over each pass's candidates, recomputed only when they change: the
        pod versions in force (a binary search of their observed times), late pods and evictions."""
        ticks, nows = cp.ticks, cp.now
        versions_before = self._observed.search_sorted(pl.Series(nows, dtype=pl.Int64), side="right").to_list()
        values: list[list[tuple[int, int, int]]] = [self._over_values]  # the last chunk's, while the key holds
        which: list[int] = []
        count = evicted_before
        late_of = self.late
        for index in range(len(ticks)):
            cands = candidates.get(index)
            if cands is not None:
                values.append(self._sums(cands))
                self._over_key = None
                count = evicted_after[index]
            else:
                pods: list[Pod] | None = None
                late: tuple[int, ...] = ()
                if late_of and ticks[index] in late_of:
                    pods, late = self._pods_at(ticks[index], to_datetime(nows[index]))
                key = (versions_before[index], late, count)
                if key != self._over_key:
                    if pods is None:
                        pods = self._pods_at(ticks[index], to_datetime(nows[index]))[0]
                    evicted = set(self._evicted[:count])
                    self._over_key = key
                    values.append(self._sums([p for p in active_pods(pods, self.node) if p.uid not in evicted]))
            which.append(len(values) - 1)
        self._over_values = values[-1]
        base = pl.DataFrame(
            {"tick": ticks, "_t": nows, "_v": which}, schema={"tick": pl.Int64, "_t": pl.Int64, "_v": pl.UInt32}
        )
        parts = []
        for r, resource in enumerate(OVERCOMMIT_RESOURCES):
            column = [v[r] for v in values]
            table = pl.DataFrame(
                {
                    "requests": [c[0] for c in column],
                    "limits": [c[1] for c in column],
                    "pods_without_limit": [c[2] for c in column],
                },
                schema={"requests": pl.Int64, "limits": pl.Int64, "pods_without_limit": pl.Int64},
            )
            parts.append(
                base.select(
                    pl.lit(self.node, pl.String).alias("node"),
                    "tick",
                    pl.col("_t").cast(pl.Datetime("us", "UTC")).alias("time"),
                    pl.lit(resource, pl.String).alias("resource"),
                    *(table[c].gather(base["_v"]).alias(c) for c in ("requests", "limits")),
                    pl.lit(self.allocatable.get(resource), pl.Int64).alias("allocatable"),
                    table["pods_without_limit"].gather(base["_v"]).alias("pods_without_limit"),
                    (pl.int_range(pl.len(), dtype=pl.Int64) * len(OVERCOMMIT_RESOURCES) + r).alias("_key"),
                )
            )
        out = pl.concat(parts).sort("_key").drop("_key")
        return out.cast(dict(OVERCOMMIT_SCHEMA))  # type: ignore[arg-type]

    def _sums(self, candidates: Sequence[Pod]) -> list[tuple[int, int, int]]:
        totals = [self._pod_totals(pod) for pod in candidates]
        return [
            (
                sum(t.requests.get(r, 0) for t in totals),
                sum(t.limits.get(r, 0) for t in totals),
                sum(1 for t in totals if r in t.unbounded),
            )
            for r in OVERCOMMIT_RESOURCES
        ]

    def _signals(self, frame: pl.DataFrame, met: list[int], act: list[int]) -> pl.DataFrame:
        """One row per pass × observed signal × threshold on it, in the reference's order."""
        assert self.fast is not None
        plans = self.fast.plans
        base = frame.with_columns(
            pl.col("when").cast(SIGNALS_SCHEMA["time"]).alias("time"),
            pl.Series("_met", met, dtype=pl.UInt64),
            pl.Series("_act", act, dtype=pl.UInt64),
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_pass"),
        )
        parts: list[pl.LazyFrame] = []
        order = 0
        lazy = base.lazy()
        for k, signal in enumerate(SIGNALS):
            on: list[int | None] = [i for i, p in enumerate(plans) if p.signal == k]
            for i in on or [None]:
                cols = [
                    pl.lit(self.node, pl.String).alias("node"),
                    pl.col("tick").cast(pl.Int64),
                    pl.col("time"),
                    pl.lit(signal, pl.String).alias("signal"),
                    pl.col(f"a{k}").alias("available"),
                    pl.col(f"c{k}").alias("capacity"),
                ]
                if i is None:
                    cols += [
                        pl.lit(None, pl.Int32).alias("threshold_id"),
                        pl.lit(None, pl.Int64).alias("threshold_value"),
                        pl.lit(None, pl.Boolean).alias("met"),
                        pl.lit(None, pl.Boolean).alias("actionable"),
                    ]
                else:
                    bit = pl.lit(1 << i, pl.UInt64)
                    cols += [
                        pl.lit(i, pl.Int32).alias("threshold_id"),
                        pl.col(f"q{i}").alias("threshold_value"),
                        ((pl.col("_met") & bit) != 0).alias("met"),
                        ((pl.col("_act") & bit) != 0).alias("actionable"),
                    ]
                parts.append(
                    lazy.filter(pl.col(f"a{k}").is_not_null()).select(
                        *cols, (pl.col("_pass") * 128 + order).alias("_key")
                    )
                )  # ≤ 9 + 63 parts
                order += 1
        out = pl.concat(parts).sort("_key").drop("_key").collect()
        return out.cast(dict(SIGNALS_SCHEMA))  # type: ignore[arg-type]

    # -- the end ------------------------------------------------------------------------------
    def release(self) -> None:
        """After the node's last chunk: the per-tick removals (``--counterfactual``; a day's, per request) are not
        read again, and a group keeps its nodes' replays until its last node is done."""
        self._removed = empty_usage()
        self._frame = None
        self._usage = None

    def finish(self, spool: Path | None = None) -> NodePartial:
        manager = self.run.manager
        return self.acc.partial(self.run, None if manager is None else manager.thresholds, spool)


GROUP_NODES = 16
"""Nodes whose columns are read together (GroupColumns): fewer, larger queries; memory stays per chunk."""


def replay_nodes(
    rec: Recording,
    requests: Sequence[SettingsRequest],
    names: Sequence[str],
    *,
    chunk_ticks: int = CHUNK_TICKS,
    on_node: Callable[[int], None] | None = None,
    pods: dict[str, list[PodVersion]] | None = None,
    spool: Path | None = None,
    frames: bool = True,
    rankings: bool = True,
) -> list[list[NodePartial]]:
    """Partials per request (outer) and node (inner, in ``names`` order); each node's columns read once.
    ``spool``: where the partials' large frames are written (see :meth:`NodeAccumulator.partial`);
    ``rankings`` False: the evictions without their rankings (see :func:`replay.collect.eviction_record`)."""
    if pods is None:
        pods = index_pods_by_node(rec.scan_objects().collect())
    out: list[list[NodePartial]] = [[] for _ in requests]
    for g in range(0, len(names), GROUP_NODES):
        group = names[g : g + GROUP_NODES]
        runs = {name: _node_runs(rec, name, requests, pods.get(name, [])) for name in group}
        replays = {
            name: [NodeReplay(run, frames=frames, rankings=rankings) for run in node_runs]
            for name, node_runs in runs.items()
        }
        fast = {name: [r for r in rs if not r.fallback] for name, rs in replays.items()}
        _run_group(rec, {name: rs for name, rs in fast.items() if rs}, pods, chunk_ticks)
        for name in group:
            for i, r in enumerate(replays[name]):
                # the fallback starts from a fresh run: the fast start may have set up (and first-passed) a manager
                out[i].append(
                    reference_partial(
                        NodeRun(rec, name, requests[i], pods.get(name, [])), spool, frames=frames, rankings=rankings
                    )
                    if r.fallback
                    else r.finish(spool)
                )
            if on_node is not None:
                on_node(sum(r.ok_ticks for r in runs[name]) // max(1, len(runs[name])))
    return out


def _node_runs(
    rec: Recording, name: str, requests: Sequence[SettingsRequest], versions: list[PodVersion]
) -> list[NodeRun]:
    """One run per request; the variants share the node's tick list and parsed pod objects (read-only values)."""
    runs = [NodeRun(rec, name, requests[0], versions)]
    for request in requests[1:]:
        runs.append(NodeRun(rec, name, request, versions, runs[0].ticks, runs[0]._parsed))
    return runs


def _run_group(
    rec: Recording, replays: dict[str, list[NodeReplay]], pods: dict[str, list[PodVersion]], chunk_ticks: int
) -> None:
    """A group's nodes chunk by chunk (each chunk's columns read for all of them at once)."""
    if not replays:
        return
    cols = GroupColumns(rec, list(replays), {name: rs[0].run.ticks for name, rs in replays.items()})
    storage: dict[str, StorageUsage] = {}

    def storage_of(node: str) -> Callable[[], StorageUsage]:
        def get() -> StorageUsage:
            if not storage:  # the run's parsed pods: the overcommit sums parse the same ones
                storage.update(
                    cols.storage_usage(
                        {
                            name: [rs[0].run._pod(v) for v in pods.get(name, []) if not v.deleted]
                            for name, rs in replays.items()
                        }
                    )
                )
            return storage[node]

        return get

    first = cols.node_summaries()
    for name, rs in replays.items():
        node = cols.columns[name]
        if not node.pass_ticks:
            continue
        assert node.earliest is not None
        late = node.late_stats(pods.get(name, []), node.earliest)
        for r in rs:
            r.start(first[name], node.pass_ticks[0], storage_of(name), late)
    for lo, hi in cols.ranges(chunk_ticks):
        if all(r.done for rs in replays.values() for r in rs):
            break
        for name, rs in replays.items():
            node = cols.columns[name]
            chunk = node.chunk(lo, hi)
            if chunk is None:
                continue
            wanted: set[int] = set()
            usage = NodeUsage(rec, name, lo, hi)  # read only if a counterfactual request evicts here
            for r in rs:
                wanted |= r.prepare(chunk, usage)
            summaries = node.summaries(sorted(wanted))
            for r in rs:
                r.run_chunk(chunk, summaries)
                if node.pass_ticks[-1] < hi:  # the node's last chunk: its removals go now, not with the group
                    r.release()


def pass_times(rec: Recording, run: NodeRun) -> list[tuple[int, int]]:
    """(tick, manager clock in µs) of every pass of the node, in tick order: one projected column, no summary."""
    ok = {t.index: t.time for t in run.ticks if t.ok}
    stats = rec._collect(
        NODE_STATS.name,
        rec.scan(NODE_STATS.name)
        .filter(pl.col("node") == run.node)
        .select("tick", pl.coalesce("memory_time", "fs_time", "rlimit_time").dt.epoch("us").alias("sampled"))
        .unique(subset=["tick"], keep="first", maintain_order=True),
    )
    sampled = dict(zip(stats["tick"].to_list(), stats["sampled"].to_list(), strict=True))
    return [(t, sampled[t] if sampled[t] is not None else to_micros(ok[t])) for t in sorted(sampled) if t in ok]


def replay_node_until(
    rec: Recording,
    request: SettingsRequest,
    name: str,
    pods: dict[str, list[PodVersion]],
    *,
    until_tick: int | None = None,
    until_us: int | None = None,
    first_eviction: bool = False,
    chunk_ticks: int = CHUNK_TICKS,
) -> tuple[NodeRun, Pass | None]:
    """One node replayed up to a moment on the fast path: the last pass at or before ``until_tick`` and
    ``until_us`` (stopping at the first pass sampled after it), or the first pass that evicts. The reference
    manager runs at that one pass, loaded with the state the earlier passes built, so the pass and the
    manager's memory are the replay's own. None: no such pass. Falls back to the reference per tick where
    the fast path does (counterfactual, Windows, …)."""
    run = NodeRun(rec, name, request, pods.get(name, []))
    r = NodeReplay(run)
    target: int | None = None
    if not first_eviction:
        for tick, when in pass_times(rec, run):
            if (until_tick is not None and tick > until_tick) or (until_us is not None and when > until_us):
                break
            target = tick
        if target is None:
            return run, None
        r.until_tick = target
    r.stop_at_eviction = first_eviction
    if not r.fallback:
        _run_group(rec, {name: [r]}, pods, chunk_ticks)
    if r.fallback or r.no_thresholds:
        run = NodeRun(rec, name, request, pods.get(name, []))
        found = None
        for p in run.passes(until_tick=target):
            found = p
            if first_eviction and p.result.evictions:
                break
        return run, (found if not first_eviction or (found and found.result.evictions) else None)
    if first_eviction and not r.acc.evictions:
        return run, None
    return run, r.last_pass


def _synchronize_built(
    run: NodeRun,
    manager: EvictionManager,
    recorded: SummaryAt,
    when: datetime,
    source: str,
    forced: bool,
    expected: list[Pod],
) -> tuple[SyncResult, list[Pod]]:
    """synchronize on the summary with the pods' stats it reads (whole at a storage tick or a moment; else
    the part its signal ranks by, of the ``expected`` candidates only): the pass and its candidates; run
    again whole from the saved state if it read more (lean.covers)."""
    parts = WHOLE
    if not forced and recorded.can_build:
        parts = lean.pass_parts(manager, recorded.built(NODE_PART, source=source), when)
    uids = frozenset(p.uid for p in expected)
    while True:
        summary = recorded.built(parts, source=source, uids=uids)
        candidates = [p for p in active_pods(run.pods_at(when, summary), run.node) if p.uid not in run.evicted_uids]
        if parts == WHOLE:
            return manager.synchronize(summary, candidates, when), candidates
        if any(p.uid not in uids for p in candidates):  # not the candidates the stats were built for
            parts = WHOLE
            continue
        saved = lean.ManagerState.of(manager)
        result = lean.synchronize(manager, summary, candidates, when)
        if lean.covers(parts, result):
            return result, candidates
        saved.restore(manager)
        parts = WHOLE
