"""Nodes are independent: shard them across local processes or a Ray cluster, merge in node order.

Each worker opens the recording itself and returns its nodes' :class:`~replay.fast.driver.NodePartial`
values; the parent assembles them with :func:`replay.fast.merge.assemble`, so the result (eviction ids
included) is the one a single process computes.
"""

from __future__ import annotations

import copyreg
import multiprocessing
import os
import types
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from recordings.reader import Recording, open_recording
from replay.fast.driver import NodePartial, replay_nodes, select_nodes
from replay.results import ReplayResult
from replay.settings import SettingsRequest


def _proxy(d: dict[object, object]) -> types.MappingProxyType[object, object]:
    return types.MappingProxyType(d)


def _mappingproxy(m: types.MappingProxyType[Any, Any]) -> tuple[Callable[..., Any], tuple[dict[Any, Any]]]:
    return _proxy, (dict(m),)


copyreg.pickle(types.MappingProxyType, _mappingproxy)  # settings hold read-only mappings; they cross processes


def replay_shard(path: str, skip_bad: bool, requests: Sequence[SettingsRequest],
                 nodes: Sequence[str]) -> list[list[NodePartial]]:
    """One worker's share: its nodes under every request (the recording opened here)."""
    rec = open_recording(Path(path), skip_bad=skip_bad)
    return replay_nodes(rec, requests, nodes)


def _shards(names: Sequence[str], n: int) -> list[list[str]]:
    n = max(1, min(n, len(names)))
    return [list(names[i::n]) for i in range(n)]


def _merge(names: Sequence[str], shards: list[list[str]], outs: list[list[list[NodePartial]]],
           n_requests: int) -> list[list[NodePartial]]:
    by_node: list[dict[str, NodePartial]] = [{} for _ in range(n_requests)]
    for shard, out in zip(shards, outs, strict=True):
        for r in range(n_requests):
            by_node[r].update(zip(shard, out[r], strict=True))
    return [[by_node[r][n] for n in names] for r in range(n_requests)]


def replay_parallel(rec: Recording, requests: Sequence[SettingsRequest], nodes: Sequence[str] | None = None, *,
                    jobs: int | None = None, notes: Sequence[str] = (),
                    on_node: Callable[[int], None] | None = None) -> list[ReplayResult]:
    """``replay_fast_many`` over ``jobs`` local processes (default: all cores; 1 runs in this process)."""
    from replay.fast.merge import assemble

    names = select_nodes(rec, nodes)
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(names) <= 1:
        partials = replay_nodes(rec, requests, names, on_node=on_node)
    else:
        shards = _shards(names, jobs)
        context = multiprocessing.get_context("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
                                              else "spawn")
        with ProcessPoolExecutor(max_workers=len(shards), mp_context=context) as pool:
            futures = [pool.submit(replay_shard, str(rec.root), rec.skip_bad, list(requests), s) for s in shards]
            outs = []
            for future in futures:
                outs.append(future.result())
                if on_node is not None:
                    on_node(0)
        partials = _merge(names, shards, outs, len(requests))
    return [assemble(rec, request, parts, notes) for request, parts in zip(requests, partials, strict=True)]


def replay_ray(rec: Recording, requests: Sequence[SettingsRequest], nodes: Sequence[str] | None = None, *,
               address: str | None = None, notes: Sequence[str] = (), tasks: int | None = None) -> list[ReplayResult]:
    """The same per-node tasks on a Ray cluster (``address``; None: an already initialised or local one).

    Every Ray worker must see the recording at the same path (a shared filesystem)."""
    import ray

    from replay.fast.merge import assemble

    names = select_nodes(rec, nodes)
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(replay_shard)
    shards = _shards(names, tasks or len(names))
    refs = [remote.remote(str(rec.root.resolve()), rec.skip_bad, list(requests), s) for s in shards]
    outs = ray.get(refs)
    partials = _merge(names, shards, outs, len(requests))
    return [assemble(rec, request, parts, notes) for request, parts in zip(requests, partials, strict=True)]
