"""``rankings=False`` (what ``tune`` asks without ``-o``): the same results but for each eviction's ranking, on
every path. A search keeps every candidate's evictions on every node; with each one's ranking of every pod of
its node that memory grew with the nodes (the 100-node day: 1.68 GB against 0.85 GB on 20 nodes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from test_fast_counterfactual import GI, _write, memory_only

from recordings.reader import open_recording
from replay import engine
from replay.kubelet.config import FlagOverrides
from replay.results import ReplayResult
from replay.settings import SettingsRequest
from replay.tune import parse_space, search


def _spec(n: int = 6) -> dict[str, Any]:
    def pod(uid: str, ws: int, containers: int) -> dict[str, Any]:
        return {
            "uid": uid,
            "name": uid,
            "priority": 0,
            "emptydir": False,
            "pod_memory": False,
            "ws": [ws] * n,
            "containers": containers,
            "disk": [GI] * n,
            "procs": 3,
            "from": 0,
            "until": None,
        }

    return memory_only(n, [pod("big", 2 * GI, 1), pod("small", GI // 2, 2), pod("tiny", GI // 4, 1)], [GI // 2] * n)


def _without_rankings(result: ReplayResult) -> tuple[Any, ...]:
    evictions = tuple(dataclasses.replace(e, ranking=()) for e in result.evictions)
    notes = tuple(n for n in result.notes if n != engine.NO_RANKINGS)
    return (evictions, result.nodes, result.matches, notes, result.conditions.to_dicts(), result.kernel_kills)


@pytest.mark.parametrize("how", [{}, {"reference": True}, {"chunk_ticks": 2}])
def test_without_rankings_the_results_are_the_same_but_for_the_rankings(tmp_path: Path, how: dict[str, Any]) -> None:
    path = _write(tmp_path / "rec", _spec())
    request = SettingsRequest(
        kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=("memory.available<1Gi",)), counterfactual=True
    )
    requests = [request, dataclasses.replace(request, counterfactual=False)]
    kept = engine.replay(open_recording(path), requests, frames=False, **how)
    dropped = engine.replay(open_recording(path), requests, frames=False, rankings=False, **how)
    assert all(e.ranking for r in kept for e in r.evictions) and any(r.evictions for r in kept)
    assert all(not e.ranking for r in dropped for e in r.evictions)
    assert all(engine.NO_RANKINGS in r.notes for r in dropped)
    assert [_without_rankings(r) for r in dropped] == [_without_rankings(r) for r in kept]


def test_a_search_without_an_output_keeps_no_ranking(tmp_path: Path) -> None:
    rec = open_recording(_write(tmp_path / "rec", _spec()))
    space, _ = parse_space({"memory_hard": "1Gi,3Gi", "soft": "none"})
    outcome = search(rec, space, names=rec.nodes())
    assert any(r.evictions for r in outcome.results)
    assert all(not e.ranking for r in outcome.results for e in r.evictions)


def test_a_nodes_counterfactual_removals_go_after_its_last_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group keeps its nodes' replays until the last node is done; each request's per-tick removals of a node
    (a day's: ~1 MB per request) must not stay with them."""
    from replay.fast import driver

    path = _write(tmp_path / "rec", _spec())
    request = SettingsRequest(
        kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=("memory.available<1Gi",)), counterfactual=True
    )
    run_group = driver._run_group
    left: list[int] = []

    def spied(rec: Any, replays: dict[str, list[driver.NodeReplay]], pods: Any, chunk_ticks: int) -> None:
        run_group(rec, replays, pods, chunk_ticks)
        left.extend(r._removed.height for rs in replays.values() for r in rs)

    monkeypatch.setattr(driver, "_run_group", spied)
    (result,) = engine.replay(open_recording(path), [request], frames=False, chunk_ticks=2)
    assert result.evictions and left and not any(left)
