"""Nodes are independent: shard them across local processes or a Ray cluster, merge in node order.

Each worker opens the recording itself and returns its nodes' :class:`~replay.collect.NodePartial`
values; the engine hands them to :class:`~replay.collect.ResultBuilder` in node order, so the result
(eviction ids included) is the one a single process computes.
"""

from __future__ import annotations

import copyreg
import multiprocessing
import types
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from recordings.pod_timeline import index_pods_by_node, pods_of_nodes
from recordings.reader import Recording, open_recording
from replay.collect import NodePartial
from replay.fast.driver import replay_nodes
from replay.settings import SettingsRequest


def _proxy(d: dict[object, object]) -> types.MappingProxyType[object, object]:
    return types.MappingProxyType(d)


def _mappingproxy(m: types.MappingProxyType[Any, Any]) -> tuple[Callable[..., Any], tuple[dict[Any, Any]]]:
    return _proxy, (dict(m),)


copyreg.pickle(types.MappingProxyType, _mappingproxy)  # settings hold read-only mappings; they cross processes


_OPENED: dict[tuple[str, bool, str], Recording] = {}


def replay_shard(
    path: str,
    skip_bad: bool,
    requests: Sequence[SettingsRequest],
    nodes: Sequence[str],
    session: str | None = None,
    spool: str | None = None,
    frames: bool = True,
    rankings: bool = True,
) -> list[list[NodePartial]]:
    """One task: its nodes under every request, with only those nodes' pods indexed. Within one ``session``
    (one replay's pool) the opened recording is kept for the worker's next tasks."""
    key = (path, skip_bad, session or "")
    rec = _OPENED.get(key) if session else None
    if rec is None:
        _OPENED.clear()
        rec = open_recording(Path(path), skip_bad=skip_bad)
        if session:
            _OPENED[key] = rec
    pods = index_pods_by_node(pods_of_nodes(rec.scan_objects(), nodes))
    return replay_nodes(
        rec,
        requests,
        nodes,
        pods=pods,
        spool=None if spool is None else Path(spool),
        frames=frames,
        rankings=rankings,
    )


def replay_shard_frames(
    path: str,
    skip_bad: bool,
    requests: Sequence[SettingsRequest],
    nodes: Sequence[str],
    frames: bool,
    rankings: bool,
) -> list[list[NodePartial]]:
    """:func:`replay_shard` for Ray (no session, no spool: its workers may be elsewhere)."""
    return replay_shard(path, skip_bad, requests, nodes, frames=frames, rankings=rankings)


def _shards(names: Sequence[str], n: int) -> list[list[str]]:
    n = max(1, min(n, len(names)))
    return [list(names[i::n]) for i in range(n)]


def _tasks(names: Sequence[str], jobs: int) -> list[list[str]]:
    """Small tasks (about four per worker, at most 8 nodes each) so a slow node does not hold one worker's
    whole share while the others wait."""
    size = max(1, min(8, len(names) // (jobs * 4)))
    return [list(names[i : i + size]) for i in range(0, len(names), size)]


def _merge(
    names: Sequence[str], shards: list[list[str]], outs: list[list[list[NodePartial]]], n_requests: int
) -> list[list[NodePartial]]:
    by_node: list[dict[str, NodePartial]] = [{} for _ in range(n_requests)]
    for shard, out in zip(shards, outs, strict=True):
        for r in range(n_requests):
            by_node[r].update(zip(shard, out[r], strict=True))
    return [[by_node[r][n] for n in names] for r in range(n_requests)]


def partials_parallel(
    rec: Recording,
    requests: Sequence[SettingsRequest],
    names: Sequence[str],
    *,
    jobs: int,
    on_passes: Callable[[int], None] | None = None,
    spool: Path | None = None,
    frames: bool = True,
    rankings: bool = True,
) -> list[list[NodePartial]]:
    """Partials per request and node (in ``names`` order) over ``jobs`` local processes (1: this process);
    with a ``spool`` directory the workers write the large frames there instead of sending them back."""
    if jobs <= 1 or len(names) <= 1:
        return replay_nodes(rec, requests, names, on_node=on_passes, spool=spool, frames=frames, rankings=rankings)
    shards = _tasks(names, jobs)
    context = multiprocessing.get_context(
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    with ProcessPoolExecutor(max_workers=min(jobs, len(shards)), mp_context=context) as pool:
        session = uuid.uuid4().hex
        futures = [
            pool.submit(
                replay_shard,
                str(rec.data_root),  # a live recording's snapshot: every worker reads the same ticks
                rec.skip_bad,
                list(requests),
                s,
                session,
                None if spool is None else str(spool),
                frames,
                rankings,
            )
            for s in shards
        ]
        outs = []
        for future in futures:
            outs.append(future.result())
            if on_passes is not None:
                on_passes(sum(p.passes for p in outs[-1][0]) if outs[-1] else 0)
    return _merge(names, shards, outs, len(requests))


def partials_ray(
    rec: Recording,
    requests: Sequence[SettingsRequest],
    names: Sequence[str],
    *,
    address: str | None = None,
    tasks: int | None = None,
    frames: bool = True,
    rankings: bool = True,
) -> list[list[NodePartial]]:
    """The same per-node tasks on a Ray cluster (``address``; None: an already initialised or local one).

    Every Ray worker must see the recording at the same path (a shared filesystem)."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(replay_shard_frames)
    shards = _shards(names, tasks or len(names))
    path = str(rec.data_root.resolve())  # a live recording's snapshot: every worker reads the same ticks
    refs = [remote.remote(path, rec.skip_bad, list(requests), s, frames, rankings) for s in shards]
    return _merge(names, shards, ray.get(refs), len(requests))
