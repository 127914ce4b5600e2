"""Many nodes' new ticks at once, for the live engine: the batched half of replay/incremental.py.

The fast path's signals and threshold columns of every node in one query per distinct threshold set (keyed by
node and tick), the local-storage checks of every node in one (replay/fast/columns.py: storage_usage_of, the
limits kept while the pods stay), then each node's :class:`~replay.incremental.NodeStepper`; and
:func:`resume_nodes`, which carries a recording's nodes to a tick on the fast path (replay/fast/driver.py's node
groups) so a live view opened on a long recording does not replay it pass by pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from recordings.pod_timeline import PodVersion
from recordings.reader import Recording
from recordings.schema import ALL_SCHEMAS, NODE_STATS, SYSTEM_STATS
from replay.fast.columns import StorageLimits, StorageUsage, storage_limits, storage_usage_of
from replay.fast.signals import NODE_COLUMNS, PODS_COLUMNS, observations
from replay.incremental import FAST, NO_THRESHOLDS, REFERENCE, Decided, NodeRows, NodeStepper, tick_times_frame
from replay.reference import NodeRun
from replay.settings import SettingsRequest

__all__ = ["StorageLimitsCache", "resume_nodes", "signal_frames", "step_nodes", "storage_ticks"]


class StorageLimitsCache:
    """Each node's local-storage limits (replay/fast/columns.py: storage_limits), gathered again only when a
    pod version that sets one arrives: parsing every pod's limits at every tick would cost more than the checks."""

    def __init__(self) -> None:
        self._of: dict[str, tuple[int, StorageLimits]] = {}
        self._merged: tuple[tuple[tuple[str, int], ...], StorageLimits] | None = None

    def limits(self, steppers: Iterable[NodeStepper]) -> StorageLimits:
        stamp = []
        for s in steppers:
            found = self._of.get(s.node)
            if found is None or found[0] != s.limited_generation:
                pods = [p for versions in s.limited.values() for p in versions]
                self._of[s.node] = (s.limited_generation, storage_limits({s.node: pods}))
            stamp.append((s.node, s.limited_generation))
        key = tuple(stamp)
        if self._merged is None or self._merged[0] != key:
            merged = StorageLimits({}, {}, {})
            for node, _generation in key:
                merged.update(self._of[node][1])
            self._merged = (key, merged)
        return self._merged[1]


def storage_ticks(
    steppers: Iterable[NodeStepper], tables: Mapping[str, pl.DataFrame], cache: StorageLimitsCache | None = None
) -> dict[str, frozenset[int]]:
    """Per node, the new ticks where a local-storage limit may be exceeded (replay/fast/columns.py:
    storage_usage_of over the new rows, with the smallest limit any version of each pod sets), for the
    fast-path nodes whose settings check local storage."""
    chosen = [
        s for s in steppers if s.mode == FAST and s.settings.config.local_storage_capacity_isolation and s.limited
    ]
    if not chosen:
        return {}
    limits = (cache or StorageLimitsCache()).limits(chosen)
    names = [s.node for s in chosen]
    empty = {name: pl.DataFrame(schema=ALL_SCHEMAS[name]) for name in ALL_SCHEMAS}

    def scan(table: str) -> pl.LazyFrame:
        return tables.get(table, empty[table]).lazy().filter(pl.col("node").is_in(names))

    usage: dict[str, StorageUsage] = storage_usage_of(limits, names, scan, lambda _name, frame: frame.collect())
    dedicated = {s.node: s.topology.dedicated_image_fs for s in chosen}
    return {node: u.ticks(dedicated[node]) for node, u in usage.items()}


def resume_nodes(
    rec: Recording,
    request: SettingsRequest,
    until: Mapping[str, int],
    pods: Mapping[str, list[PodVersion]],
) -> dict[str, NodeStepper]:
    """Each node of ``until`` carried to its last pass at or before its tick there, on the fast path in node groups
    (replay/fast/driver.py: replay_nodes; the reference where it falls back), ready to step on."""
    from replay.fast.columns import CHUNK_TICKS
    from replay.fast.driver import GROUP_NODES, NodeReplay, _run_group

    out: dict[str, NodeStepper] = {}
    names = sorted(until)
    index = {n: list(pods.get(n, [])) for n in names}
    for g in range(0, len(names), GROUP_NODES):
        group = names[g : g + GROUP_NODES]
        replays = {}
        for name in group:
            r = NodeReplay(NodeRun(rec, name, request, index[name]), frames=False, rankings=False)
            r.until_tick = until[name]
            replays[name] = r
        _run_group(rec, {n: [r] for n, r in replays.items() if not r.fallback}, index, CHUNK_TICKS)
        for name, r in replays.items():
            stepper = NodeStepper(name, request, r.run.settings)
            parsed = r.run._parsed
            if r.no_thresholds:
                stepper.manager, stepper.topology, stepper.mode = r.manager, r.run.topology, NO_THRESHOLDS
            elif r.fallback or r.fast is None:
                run = NodeRun(rec, name, request, index[name])
                for _p in run.passes(until_tick=until[name]):
                    pass
                stepper.manager, stepper.topology, parsed = run.manager, run.topology, run._parsed
                stepper.evicted_uids = set(run.evicted_uids)
                stepper.mode, stepper.mode_reason = REFERENCE, r.fallback or ""
            else:
                stepper.manager, stepper.fast, stepper.topology = r.manager, r.fast, r.run.topology
                stepper.evicted_uids = set(r.run.evicted_uids)
                stepper.mode = FAST
            stepper._parsed = parsed  # the same pod versions (sequence numbers): each parsed once
            for v in index[name]:
                stepper.add_pod_version(v)
            out[name] = stepper
    return out


_NODE_SHIFT = 32


def step_nodes(
    steppers: Mapping[str, NodeStepper],
    tables: Mapping[str, pl.DataFrame],
    tick_times: Mapping[str, Mapping[int, int]],
    limits: StorageLimitsCache | None = None,
) -> dict[str, list[Decided]]:
    """Every node's new ticks at once: the signals and threshold columns of the fast-path nodes computed in one
    query per distinct threshold set (replay/fast/signals.py: observations, threshold_columns, keyed by node and
    tick), the local-storage checks in one (:func:`storage_ticks`), then each node's passes."""
    rows = {n: NodeRows(n, tables) for n in steppers}
    for name, s in steppers.items():
        if s.manager is None and tick_times.get(name):
            node_ticks = rows[name].table(NODE_STATS.name)["tick"].to_list()
            first = min((t for t in tick_times[name] if t in set(node_ticks)), default=None)
            if first is not None:
                s._begin(rows[name], first, tick_times[name][first])
    frames = signal_frames({n: s for n, s in steppers.items() if s.mode == FAST}, tables, tick_times)
    storage = storage_ticks(steppers.values(), tables, limits)
    return {
        name: s.advance(rows[name], tick_times.get(name, {}), storage.get(name, frozenset()), frames.get(name))
        for name, s in steppers.items()
    }


def signal_frames(
    steppers: Mapping[str, NodeStepper], tables: Mapping[str, pl.DataFrame], tick_times: Mapping[str, Mapping[int, int]]
) -> dict[str, pl.DataFrame]:
    """Per fast-path node, its new ticks' threshold columns (what FastManager.columns gives for one node)."""
    node_stats = tables.get(NODE_STATS.name)
    names = [n for n in steppers if tick_times.get(n)]
    if node_stats is None or not names:
        return {}
    index = pl.DataFrame({"node": names, "_n": list(range(len(names)))}, schema={"node": pl.String, "_n": pl.Int64})
    key = (pl.col("_n") * (1 << _NODE_SHIFT) + pl.col("tick").cast(pl.Int64)).alias("tick")
    node_rows = (
        node_stats.join(index, on="node")
        .with_columns(key)
        .unique(subset=["tick"], keep="first", maintain_order=True)
        .sort("tick")
        .select(NODE_COLUMNS)
    )
    system = tables.get(SYSTEM_STATS.name, pl.DataFrame(schema=ALL_SCHEMAS[SYSTEM_STATS.name]))
    pods_rows = system.filter(pl.col("name") == "pods").join(index, on="node").with_columns(key).select(PODS_COLUMNS)
    times = tick_times_frame(
        [i * (1 << _NODE_SHIFT) + t for i, n in enumerate(names) for t in tick_times[n]],
        {i * (1 << _NODE_SHIFT) + t: us for i, n in enumerate(names) for t, us in tick_times[n].items()},
    )
    obs = observations(node_rows, pods_rows, times)
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, n in enumerate(names):
        fast = steppers[n].fast
        assert fast is not None
        groups.setdefault(tuple(fast.plans), []).append(i)
    out: dict[str, pl.DataFrame] = {}
    for members in groups.values():
        fast = steppers[names[members[0]]].fast
        assert fast is not None
        part = obs.filter((pl.col("tick") // (1 << _NODE_SHIFT)).is_in(members)) if len(groups) > 1 else obs
        cols = fast.columns(part).with_columns(
            (pl.col("tick") // (1 << _NODE_SHIFT)).alias("_n"), (pl.col("tick") % (1 << _NODE_SHIFT)).alias("tick")
        )
        for (n,), frame in cols.partition_by("_n", as_dict=True).items():
            out[names[int(n)]] = frame.drop("_n")
    return out
