"""The one engine: a recording, a set of nodes and one or many settings in, results out.

Every front end (``replay``, ``whatif``, ``explain --at``, the TUI) calls :func:`replay` or
:func:`moment`. Nodes are independent, so they are replayed on the columnar fast path
(:mod:`replay.fast`) in node groups, in this process, over ``jobs`` local processes or on a Ray
cluster; the settings variants of one node share its decoded columns, each with its own state
machine. Each node's share comes back as a :class:`~replay.collect.NodePartial` and the one producer
of results, :class:`~replay.collect.ResultBuilder`, assembles them in node order. Node selection,
the pod index and each node's settings are resolved once per run (per variant for settings).

The per-tick reference manager (:mod:`replay.reference`) is the oracle the property tests hold the
engine to, and what ``reference=True`` (``--reference``) runs instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kube.errors import InputError
from recordings.reader import Recording, to_micros
from recordings.scratch import scratch_dir
from replay.reference import NodeRun, Pass
from replay.reference import select_nodes as reference_select
from replay.results import ReplayResult
from replay.settings import SettingsRequest

if TYPE_CHECKING:
    from replay.collect import NodePartial

__all__ = [
    "Moment",
    "MomentPass",
    "NodeRun",
    "Pass",
    "moment",
    "replay",
    "replay_recording",
    "select_nodes",
    "total_passes",
]

NO_FRAMES = (
    "signals, overcommit, overcommit lead and the too-fast-for-the-loop moments were not computed for this "
    "run (a comparison needs only the evictions, counts and conditions)"
)
NO_RANKINGS = "the evictions' rankings were not kept for this run (a search reads only the evictions themselves)"

Progress = Callable[[int], None]
"""Called with the number of passes just finished (of the recording, not times the variants)."""


def select_nodes(rec: Recording, nodes: Sequence[str] | None) -> list[str]:
    """The nodes to replay (see :func:`replay.reference.select_nodes`)."""
    return reference_select(rec, nodes)


def total_passes(rec: Recording, names: Sequence[str]) -> int:
    """How many passes a replay of ``names`` makes (the recorded ticks with data): a progress bar's total."""
    return rec.ok_ticks(names)


def replay(
    rec: Recording,
    requests: Sequence[SettingsRequest],
    names: Sequence[str] | None = None,
    *,
    jobs: int = 1,
    ray: str | None = None,
    notes: Sequence[str] = (),
    progress: Progress | None = None,
    reference: bool = False,
    chunk_ticks: int | None = None,
    frames: bool = True,
    closed_loop: bool = True,
    rankings: bool = True,
) -> list[ReplayResult]:
    """One result per request, in order. ``names``: the nodes (all when None; unknown names and nodes with
    no data are errors, listed as skipped under ``skip_bad``). ``ray``: an address ("" for a local
    instance) to run the node tasks on Ray instead of ``jobs`` local processes. ``frames=False`` skips the
    signal and overcommit frames (empty in the results): what a comparison or a search needs is the counts,
    conditions and evictions, at a fraction of the cost. On a scenario recording, a request with other settings
    than the generating ones regenerates the closed loop (replay.scenario.closed_loop_replay; ``closed_loop``
    False: never). ``rankings=False`` leaves each eviction's ranking empty: a search over many candidates would
    otherwise keep one ranking of every pod of the node per eviction, a memory that grows with the nodes."""
    from replay.collect import ResultBuilder

    if closed_loop:
        from replay.scenario import closed_loop_replay, regenerates

        if regenerates(rec, requests):
            reported: list[Progress | None] = [progress]  # the recording's passes, reported once

            def run(r: Recording, reqs: Sequence[SettingsRequest], ns: Sequence[str]) -> list[ReplayResult]:
                step, reported[0] = reported[0], None
                return replay(
                    r,
                    reqs,
                    ns,
                    jobs=jobs,
                    ray=ray,
                    notes=notes,
                    progress=step,
                    reference=reference,
                    chunk_ticks=chunk_ticks,
                    frames=frames,
                    closed_loop=False,
                    rankings=rankings,
                )

            return closed_loop_replay(rec, requests, select_nodes(rec, names), run)

    names = select_nodes(rec, names)
    notes = [*(f"skipped (--skip-bad): {s}" for s in getattr(rec, "skipped", [])), *notes]
    spool = scratch_dir("evictlens-frames-")  # removed when the results are gone
    where = Path(spool.name)
    partials: list[list[NodePartial]]
    if reference:
        partials = _reference(rec, requests, names, progress, where, frames, rankings)
    elif ray is not None:
        from replay.fast.parallel import partials_ray

        # no spool: Ray workers may be on other machines
        partials = partials_ray(rec, requests, names, address=ray or None, frames=frames, rankings=rankings)
        if progress is not None:
            progress(total_passes(rec, names))
    elif chunk_ticks is not None:
        from replay.fast.driver import replay_nodes

        partials = replay_nodes(
            rec,
            requests,
            names,
            chunk_ticks=chunk_ticks,
            on_node=progress,
            spool=where,
            frames=frames,
            rankings=rankings,
        )
    else:
        from replay.fast.parallel import partials_parallel

        partials = partials_parallel(
            rec, requests, names, jobs=jobs, on_passes=progress, spool=where, frames=frames, rankings=rankings
        )
    held: list[list[str]] = [[] for _ in requests]
    if any(r.counterfactual for r in requests):  # pods really evicted that a variant keeps: held, on the reference
        from replay.counterfactual import hold_real_evictions

        held = hold_real_evictions(
            rec,
            requests,
            names,
            partials,
            rerun=not reference,
            spool=None if ray is not None else where,
            frames=frames,
            rankings=rankings,
        )
    results = []
    for request, parts, kept in zip(requests, partials, held, strict=True):
        builder = ResultBuilder(rec, request, spool=spool)
        for p in parts:
            builder.add(p)
        results.append(
            builder.finish([*notes, *kept, *([] if frames else [NO_FRAMES]), *([] if rankings else [NO_RANKINGS])])
        )
    return results


def _reference(
    rec: Recording,
    requests: Sequence[SettingsRequest],
    names: Sequence[str],
    progress: Progress | None,
    spool: Path,
    frames: bool,
    rankings: bool = True,
) -> list[list[NodePartial]]:
    from recordings.pod_timeline import index_pods_by_node
    from replay.collect import ReferenceNode
    from replay.reference import NodeRun

    pods = index_pods_by_node(rec.scan_objects().collect())
    out: list[list[NodePartial]] = [[] for _ in requests]
    for i, request in enumerate(requests):
        for name in names:
            node = ReferenceNode(NodeRun(rec, name, request, pods.get(name, [])), frames=frames, rankings=rankings)
            for p in node.run.passes():
                node.add(p)
                if progress is not None and i == 0:
                    progress(1)
            out[i].append(node.partial(spool))
    return out


def replay_recording(
    rec: Recording,
    request: SettingsRequest | None = None,
    *,
    nodes: Sequence[str] | None = None,
    version: str | None = None,
    feature_gates: Mapping[str, bool] | None = None,
) -> ReplayResult:
    """Replay every (or the chosen) node of a recording under one request, in this process."""
    if request is None:
        request = SettingsRequest(kubelet_version=version, feature_gates=dict(feature_gates or {}))
    return replay(rec, [request], nodes)[0]


FIRST_EVICTION = "first-eviction"


@dataclass(frozen=True)
class Moment:
    """Where to stop: a tick, a time (RFC 3339), or the first predicted eviction."""

    tick: int | None = None
    at: datetime | None = None
    first_eviction: bool = False

    @classmethod
    def parse(cls, at: str | None, tick: int | None) -> Moment:
        if at is not None and tick is not None:
            raise InputError("give --at or --tick, not both", field="--tick")
        if tick is not None:
            return cls(tick=tick)
        if at == FIRST_EVICTION:
            return cls(first_eviction=True)
        if at is None:
            raise InputError("say which moment: --at TIME (RFC 3339), --at first-eviction or --tick K", field="--at")
        try:
            when = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(
                f"expected an RFC 3339 time such as 2024-05-20T10:15:20Z or 'first-eviction', got {at!r}", field="--at"
            ) from None
        if when.tzinfo is None:
            raise InputError(f"give a time zone (e.g. {at}Z)", field="--at")
        return cls(at=when)

    def describe(self) -> str:
        if self.tick is not None:
            return f"tick {self.tick}"
        if self.at is not None:
            return self.at.isoformat()
        return "the first eviction"


@dataclass(frozen=True)
class MomentPass:
    """The replay's own pass at a moment, with the node's run (settings, topology, the manager after it)."""

    run: NodeRun
    p: Pass
    notes: tuple[str, ...] = ()
    """What the user should know about the moment asked for (after the end, a gap)."""


def moment(rec: Recording, request: SettingsRequest, node: str | None, at: Moment, *, jobs: int = 1) -> MomentPass:
    """Replay one node up to a moment (one node's columns, the reference manager at that pass only).

    Without a node only ``first-eviction`` is allowed: the engine replays every node to find which evicts
    first, then that node is replayed up to it."""
    from recordings.pod_timeline import index_pods_by_node, pods_of_nodes
    from replay.fast.driver import replay_node_until

    names = [node] if node else rec.nodes()
    if node is None and not at.first_eviction and len(names) > 1:
        raise InputError(
            f"the recording has {len(names)} nodes; say which with --node ({', '.join(names)})", field="--node"
        )
    names = select_nodes(rec, names)
    if node is None and len(names) > 1:
        (result,) = replay(rec, [request], names, jobs=jobs)
        if not result.evictions:
            raise InputError("the replay predicts no eviction", field="--at")
        names = [min(result.evictions, key=lambda e: (to_micros(e.time), e.id)).node]
    pods = index_pods_by_node(pods_of_nodes(rec.scan_objects(), names[:1]))
    run, found = replay_node_until(
        rec,
        request,
        names[0],
        pods,
        until_tick=at.tick,
        first_eviction=at.first_eviction,
        until_us=None if at.at is None else to_micros(at.at),
    )
    last = run.ticks[-1].index if run.ticks else None
    if at.tick is not None and last is not None and at.tick > last:
        raise InputError(
            f"tick {at.tick} is past the end of the recording: {names[0]}'s last tick is {last}", field="--tick"
        )
    if found is None:
        if at.first_eviction:
            raise InputError("the replay predicts no eviction" + (f" on {node}" if node else ""), field="--at")
        raise InputError(f"no recorded pass of {names[0]} at or before {at.describe()}", field="--at")
    notes: tuple[str, ...] = ()
    if at.at is not None and run.ticks and to_micros(at.at) > to_micros(run.ticks[-1].time):
        notes = (
            f"{at.describe()} is after the recording ends ({names[0]}'s last tick started at "
            f"{run.ticks[-1].time.isoformat()}): this is its last pass",
        )
    elif at.tick is not None and found.tick != at.tick:
        notes = (f"tick {at.tick} holds no data for {names[0]} (a gap): this is the last pass before it",)
    return MomentPass(run, found, notes)
