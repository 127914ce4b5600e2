"""The kernel's side of the race, next to the replay: the recording's kernel kills and Ready transitions, and the
moments memory ran out between two kubelet passes.

The kubelet evicts only at its passes (every ``evictionMonitoringPeriod``/housekeeping, 10 s, on stats that may
be that old); memory that falls from above the hard threshold to nothing between two passes reaches the kernel's
OOM killer first. Those moments are read off the result's own ``memory.available`` signal rows, and a recorded
``SystemOOM`` between two passes is the proof when the pass after it already shows the memory the kill freed (an
``OOMKilled`` container alone is not: a container at its own limit is killed whatever the node has left).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from kube.oom import EXHAUSTED_FLOOR, EXHAUSTED_FRACTION, exhausted_below
from recordings.kernel import NODE_READY, OOM_KILLED, SYSTEM_OOM
from recordings.reader import Recording
from replay.results import KernelKill, NodeResult, ReadyTransition, ReplayResult, TooFast

__all__ = [
    "EXHAUSTED_FLOOR",
    "EXHAUSTED_FRACTION",
    "Judged",
    "before_horizon",
    "distinct_kills",
    "exhausted_below",
    "judge",
    "kernel_kills",
    "ready_transitions",
    "same_kill",
    "too_fast",
    "too_fast_reference",
]

SIGNAL = "memory.available"
# Exhausted: ``memory.available`` at most ``max(64Mi, 1% of capacity)`` (kube/oom.py, shared with the scenarios'
# starving kubelet).


def kernel_kills(rec: Recording, nodes: Iterable[str]) -> tuple[tuple[KernelKill, ...], int]:
    """The recording's OOMKilled containers and SystemOOM events on ``nodes`` from its first tick on, in time
    order, and how many were older: a pod's last state can carry a kill from days before the recording (no
    setting replayed here could have prevented it, so it never counts against one)."""
    wanted = set(nodes)
    first, _last = rec.time_range()
    out = []
    earlier = 0
    for row in rec.kernel_events():
        if row["kind"] not in (OOM_KILLED, SYSTEM_OOM) or row["node"] not in wanted:
            continue
        if first is not None and int(row["time"].timestamp() * 1_000_000) < first:
            earlier += 1
            continue
        system = row["kind"] == SYSTEM_OOM
        out.append(
            KernelKill(
                node=row["node"],
                namespace=None if system else row["namespace"],
                pod=None if system else row["name"],
                uid=None if system else row["uid"],
                container=row["container"],
                time=row["time"],
                kind=row["kind"],
                message=row["message"],
                victim=row["victim"],
                pid=row["pid"],
                exit_code=row["exit_code"],
                restart_count=row["restart_count"],
                count=int(row["kills"]),
                source=row["source"],
            )
        )
    return tuple(out), earlier


def ready_transitions(rec: Recording, nodes: Iterable[str]) -> tuple[ReadyTransition, ...]:
    """The nodes' Ready transitions from the recording's first tick on, plus the state a node was in when the
    recording started if it was not Ready (a Ready node's last transition long before is no news)."""
    wanted = set(nodes)
    first, _last = rec.time_range()
    out = []
    for row in rec.kernel_events():
        if row["kind"] != NODE_READY or row["node"] not in wanted:
            continue
        before = first is not None and int(row["time"].timestamp() * 1_000_000) < first
        if before and row["status"] == "True":
            continue
        out.append(ReadyTransition(row["node"], row["time"], row["status"], row["reason"], row["message"]))
    return tuple(out)


def too_fast(
    signals: Iterable[pl.LazyFrame], nodes: Sequence[NodeResult], kills: Sequence[KernelKill]
) -> dict[str, tuple[TooFast, ...]]:
    """Per node, each pair of consecutive passes where ``memory.available`` was above every hard threshold (and
    above exhaustion) at the first and exhausted at the second, or a node-wide kernel kill (``SystemOOM``) came
    in between.

    ``signals``: each node's (or node group's) signal rows, read one frame at a time so memory stays one node's
    passes whatever the cluster's size; the pairs are found with columns and only the few that qualify are
    judged one by one (:func:`_race`). :func:`too_fast_reference` walks every pair and is held equal to this."""
    hard = _hard(nodes)
    kill_times = _system_oom_times(kills)
    out: dict[str, tuple[TooFast, ...]] = {}
    for frame in signals:
        passes = _passes(frame, hard)
        if passes.is_empty():
            continue
        for (node,), df in passes.partition_by("node", as_dict=True, maintain_order=True).items():
            races = _node_races(str(node), df, sorted(kill_times.get(str(node), [])))
            if races:
                out[str(node)] = races
    return out


def too_fast_reference(
    signals: pl.LazyFrame, nodes: Sequence[NodeResult], kills: Sequence[KernelKill]
) -> dict[str, tuple[TooFast, ...]]:
    """The simple path: every consecutive pair of every node's passes, one by one."""
    passes = _passes(signals, _hard(nodes))
    if passes.is_empty():
        return {}
    by_node = _system_oom_times(kills)
    out: dict[str, list[TooFast]] = {}
    for (node,), df in passes.partition_by("node", as_dict=True, maintain_order=True).items():
        times = sorted(by_node.get(str(node), []))
        prev: dict[str, object] | None = None
        for cur in df.iter_rows(named=True):
            if prev is not None:
                found = _race(str(node), prev, cur, times)
                if found is not None:
                    out.setdefault(str(node), []).append(found)
            prev = cur
    return {node: tuple(races) for node, races in out.items()}


def _hard(nodes: Sequence[NodeResult]) -> pl.DataFrame:
    return pl.DataFrame(
        [(n.node, t.id, True) for n in nodes for t in n.thresholds if t.hard and t.signal == SIGNAL],
        schema={"node": pl.String, "threshold_id": pl.Int32, "_hard": pl.Boolean},
        orient="row",
    )


def _system_oom_times(kills: Sequence[KernelKill]) -> dict[str, list[datetime]]:
    by_node: dict[str, list[datetime]] = {}
    for k in kills:  # a container OOMKilled at its own limit says nothing of the node's memory: SystemOOM only
        if k.node is not None and k.kind == SYSTEM_OOM:
            by_node.setdefault(k.node, []).extend([k.time] * max(1, k.count))
    return by_node


def _passes(signals: pl.LazyFrame, hard: pl.DataFrame) -> pl.DataFrame:
    """One row per node and pass: its time, ``memory.available``, capacity and highest hard threshold."""
    rows = (
        signals.filter(pl.col("signal") == SIGNAL)
        .select("node", "tick", "time", "available", "capacity", "threshold_id", "threshold_value")
        .collect()
    )
    if rows.is_empty():
        return rows
    rows = rows.join(hard, on=["node", "threshold_id"], how="left")
    return (
        rows.with_columns(hard_value=pl.when(pl.col("_hard")).then(pl.col("threshold_value")))
        .group_by("node", "tick")
        .agg(
            pl.col("time").first(), pl.col("available").first(), pl.col("capacity").first(), pl.col("hard_value").max()
        )
        .sort("node", "tick")
    )


def _node_races(node: str, df: pl.DataFrame, kill_times: list[datetime]) -> tuple[TooFast, ...]:
    """The pairs :func:`_race` can accept (the first pass above the threshold and exhaustion, and the second
    exhausted or a kill in between), found with columns, then judged by :func:`_race` itself."""

    def floor(capacity: pl.Expr) -> pl.Expr:
        return pl.max_horizontal(
            pl.lit(EXHAUSTED_FLOOR, pl.Int64), (capacity.fill_null(0) * EXHAUSTED_FRACTION).cast(pl.Int64)
        )

    above = (
        pl.col("available").shift(1)
        > pl.max_horizontal(pl.col("hard_value").shift(1).fill_null(0), floor(pl.col("capacity")).shift(1))
    ).fill_null(False)
    exhausted = (pl.col("available") <= floor(pl.col("capacity"))).fill_null(False)
    flags = df.select(above=above, exhausted=exhausted)
    able = flags["above"].to_list()
    candidates = set(flags.with_row_index().filter(pl.col("above") & pl.col("exhausted"))["index"].to_list())
    if kill_times:
        times = df["time"].to_list()
        for t in kill_times:  # the pair (i - 1, i) whose interval (time[i - 1], time[i]] holds the kill
            i = bisect_left(times, t)
            if 0 < i < len(times) and able[i]:
                candidates.add(i)
    races = []
    for i in sorted(candidates):
        a, b = df.row(i - 1, named=True), df.row(i, named=True)
        found = _race(node, a, b, kill_times)
        if found is not None:
            races.append(found)
    return tuple(races)


def _race(node: str, a: dict[str, object], b: dict[str, object], kill_times: list[datetime]) -> TooFast | None:
    a_avail, b_avail = a["available"], b["available"]
    if not isinstance(a_avail, int) or not isinstance(b_avail, int):
        return None
    assert isinstance(a["time"], datetime) and isinstance(b["time"], datetime)
    threshold = a["hard_value"] if isinstance(a["hard_value"], int) else None
    floor = exhausted_below(b["capacity"] if isinstance(b["capacity"], int) else None)
    if a_avail <= max(threshold or 0, exhausted_below(a["capacity"] if isinstance(a["capacity"], int) else None)):
        return None
    between = [t for t in kill_times if a["time"] < t <= b["time"]]
    if b_avail > floor and not between:
        return None
    end = between[0] if between else b["time"]
    fell = a_avail if between else a_avail - b_avail
    assert isinstance(a["tick"], int) and isinstance(b["tick"], int)
    return TooFast(
        node=node,
        signal=SIGNAL,
        from_tick=a["tick"],
        from_time=a["time"],
        from_available=a_avail,
        to_tick=b["tick"],
        to_time=b["time"],
        to_available=b_avail,
        threshold_value=threshold,
        exhausted_below=floor,
        kills=len(between),
        seconds=(end - a["time"]).total_seconds(),
        fell_bytes=fell,
    )


SAME_KILL_S = 5.0
"""A ``SystemOOM`` Event and an ``OOMKilled`` container on its node this close in time are one kill: the
kubelet's OOM watcher reads ``/dev/kmsg`` as the kernel writes it and the runtime stamps ``finishedAt`` when the
process dies, so both land within a second or so of the kill; a kubelet pass apart (10 s) is another kill."""


def distinct_kills(kills: Iterable[KernelKill], window_s: float = SAME_KILL_S) -> list[KernelKill]:
    """One entry per process killed: every ``OOMKilled`` container counts; a ``SystemOOM`` Event's kills count only
    beyond the ``OOMKilled`` containers on its node within ``window_s`` of it (the same kill, told twice: the
    kubelet's OOM watcher names the process, the runtime the container). Each container pairs with one kill."""
    kills = sorted(kills, key=lambda k: k.time)
    containers = [k for k in kills if k.kind == OOM_KILLED]
    paired: set[int] = set()
    out = []
    for k in kills:
        if k.kind != SYSTEM_OOM:
            out.append(k)
            continue
        left = max(1, k.count)
        for i, c in enumerate(containers):
            if left and i not in paired and c.node == k.node and abs((c.time - k.time).total_seconds()) <= window_s:
                paired.add(i)
                left -= 1
        out += [k] * left
    return out


def before_horizon(horizon: datetime | None, when: datetime) -> bool:
    """``when`` is still as recorded on a node whose replay parts ways with the recording at ``horizon`` (None:
    they never part)."""
    return horizon is None or when < horizon


def same_kill(kills: Iterable[KernelKill], kill: KernelKill, window_s: float = SAME_KILL_S) -> list[KernelKill]:
    """Every report of ``kill``: the ``SystemOOM`` Events and ``OOMKilled`` containers on its node within
    ``window_s`` of it (the kubelet's OOM watcher names the process, the runtime the container)."""
    return [k for k in kills if k.node == kill.node and abs((k.time - kill.time).total_seconds()) <= window_s]


@dataclass(frozen=True)
class Judged:
    """A result's kernel side as a variant owns it. In a closed loop (a scenario regenerated with the variant's
    settings) every kill, race and NotReady in the result is the variant's own; on a recording they are the
    recording's, and count against a variant only before its horizon on their node: after it the recording shows a
    world the variant's settings would not have produced, so they are not judged (counted apart)."""

    closed_loop: bool
    kills: tuple[KernelKill, ...]
    """Counted against the variant, one per process killed (:func:`distinct_kills`), in time order."""
    kills_not_judged: tuple[KernelKill, ...]
    """Distinct kills after their node's horizon."""
    too_fast: tuple[TooFast, ...]
    """Moments memory ran out between two passes (the nodes' ``too_fast``), counted: starting before the horizon."""
    too_fast_not_judged: int
    not_ready: tuple[ReadyTransition, ...]
    """``Ready`` turning ``False``/``Unknown`` (a kubelet starved of memory stops posting status), counted."""

    @property
    def not_ready_nodes(self) -> tuple[str, ...]:
        """The nodes that went NotReady, each once, in the order they did."""
        return tuple(dict.fromkeys(t.node for t in sorted(self.not_ready, key=lambda t: t.time)))


def judge(result: ReplayResult, *, closed_loop: bool | None = None, window_s: float = SAME_KILL_S) -> Judged:
    """What the kernel did that counts against ``result``'s settings (:class:`Judged`). ``closed_loop`` None: as
    the result's settings say (``closed_loop``, a regenerated scenario)."""
    closed = bool(result.settings.get("closed_loop")) if closed_loop is None else closed_loop
    horizons = {} if closed else {n.node: n.horizon for n in result.nodes if n.horizon is not None}

    def judged(node: str | None, when: datetime) -> bool:
        return node is None or before_horizon(horizons.get(node), when)

    kills = distinct_kills(result.kernel_kills, window_s)
    races = [t for n in result.nodes for t in n.too_fast]
    counted = [t for t in races if judged(t.node, t.from_time)]
    return Judged(
        closed_loop=closed,
        kills=tuple(k for k in kills if judged(k.node, k.time)),
        kills_not_judged=tuple(k for k in kills if not judged(k.node, k.time)),
        too_fast=tuple(counted),
        too_fast_not_judged=len(races) - len(counted),
        not_ready=tuple(t for t in result.ready_transitions if t.status != "True" and judged(t.node, t.time)),
    )
