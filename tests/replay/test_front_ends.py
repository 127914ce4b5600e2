"""Every front end on one 20-node recording gives ``replay``'s results: they all stand on the one engine.

The recording is the benchmark's synthetic cluster (tests/replay/bench_replay.py) made small: 20 nodes,
12 pods each, 300 ticks, every fifth node with memory and disk episodes, so evictions happen on several
nodes. Results are compared as values, never timed.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from recordings.reader import open_recording
from replay import engine
from replay.cli import main
from replay.kubelet.config import FlagOverrides
from replay.results import ReplayResult
from replay.results_io import load
from replay.settings import SettingsRequest

NODES = 20
EVERY = 5  # every fifth node pressed


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("_bench_replay", Path(__file__).with_name("bench_replay.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root: Path = tmp_path_factory.mktemp("front") / "rec"
    _bench().generate(root, nodes=NODES, pods=12, ticks=300, interval=10, part_ticks=100, every=EVERY, compact=True)
    return root


@pytest.fixture(scope="module")
def replayed(rec: Path, tmp_path_factory: pytest.TempPathFactory) -> ReplayResult:
    out = tmp_path_factory.mktemp("front") / "out"
    assert main(["replay", str(rec), "-o", str(out), "--jobs", "2"]) == 0
    return load(out)


def bench_pressed(node: int) -> bool:
    """Whether the generator gives node ``node`` its memory and disk episodes."""
    return bool(_bench().pressure(node, EVERY))


def _same(a: ReplayResult, b: ReplayResult) -> None:
    assert a.nodes == b.nodes
    assert a.evictions == b.evictions
    assert a.matches == b.matches
    assert a.signals.collect().equals(b.signals.collect(), null_equal=True)
    assert a.conditions.equals(b.conditions, null_equal=True)
    assert a.overcommit.collect().equals(b.overcommit.collect(), null_equal=True)


def test_the_recording_evicts_on_several_nodes(replayed: ReplayResult) -> None:
    assert len(replayed.nodes) == NODES
    assert len({e.node for e in replayed.evictions}) >= 3


def test_one_process_the_reference_and_workers_agree_with_replay(rec: Path, replayed: ReplayResult) -> None:
    (one,) = engine.replay(open_recording(rec), [SettingsRequest()])
    _same(replayed, one)
    # The per-tick reference on a pressed node and two quiet ones (the generator makes every fifth node alike; the
    # reference on all 20 was 15 s of CPU): the one-process replay of the same nodes, which equals the above.
    nodes = ["node-000", "node-001", "node-002"]
    assert bench_pressed(1) and not bench_pressed(0) and not bench_pressed(2)
    (ref,) = engine.replay(open_recording(rec), [SettingsRequest()], nodes, reference=True)
    (some,) = engine.replay(open_recording(rec), [SettingsRequest()], nodes)
    assert {e.node for e in ref.evictions} == {"node-001"}
    _same(some, ref)
    assert some.evictions == tuple(e for e in replayed.evictions if e.node in nodes)


def test_whatif_variants_are_each_the_replay_with_that_setting(
    rec: Path, replayed: ReplayResult, tmp_path: Path
) -> None:
    hard = "memory.available<2Gi"
    assert (
        main(["whatif", str(rec), "--eviction-hard", hard, "-o", str(tmp_path / "w"), "--jobs", "2", "--as-recorded"])
        == 0
    )
    _same(replayed, load(tmp_path / "w" / "variant-0"))
    out = tmp_path / "r"
    assert main(["replay", str(rec), "--eviction-hard", hard, "-o", str(out), "--jobs", "1"]) == 0
    variant, alone = load(tmp_path / "w" / "variant-1"), load(out)
    assert variant.evictions == alone.evictions and variant.nodes == alone.nodes
    assert variant.signals.collect().equals(alone.signals.collect(), null_equal=True)


def test_explain_at_the_first_eviction_is_replays_first_eviction(
    rec: Path, replayed: ReplayResult, capsys: pytest.CaptureFixture[str]
) -> None:
    first = min(replayed.evictions, key=lambda e: (e.time, e.id))
    assert main(["explain", str(rec), "--at", "first-eviction", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["node"] == first.node
    evicted = doc["result"]["evictions"][0]
    assert evicted["message"] == first.message
    assert (evicted["namespace"], evicted["pod"]) == (first.namespace, first.pod)
    assert main(["explain", str(rec), "--node", first.node, "--tick", str(first.tick), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["result"]["evictions"][0]["message"] == first.message


def test_the_tui_replay_is_replays_result(rec: Path, replayed: ReplayResult) -> None:
    from tui.loading import ReplayJob

    job = ReplayJob(rec, SettingsRequest(), "baseline", jobs=2)
    done: list[int] = []
    view = job.run(done.append)
    assert sum(done) == job.total
    _same(replayed, view.result)


def test_a_variant_request_through_the_engine_is_the_flagged_replay(rec: Path) -> None:
    request = SettingsRequest(overrides=FlagOverrides(eviction_hard=("memory.available<2Gi",)), label="2Gi")
    base, variant = engine.replay(open_recording(rec), [SettingsRequest(), request], jobs=2)
    (alone,) = engine.replay(open_recording(rec), [request])
    assert variant.evictions == alone.evictions
    assert len(variant.evictions) >= len(base.evictions)


def test_explain_says_when_the_moment_is_past_the_end_or_a_gap(rec: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recording = open_recording(rec)
    ticks = recording.ticks("node-001")
    assert main(["explain", str(rec), "--node", "node-001", "--tick", str(ticks[-1].index + 1)]) == 2
    err = capsys.readouterr().err
    assert "past the end of the recording" in err and err.count("\n") == 1
    assert main(["explain", str(rec), "--node", "node-001", "--at", "2999-01-01T00:00:00Z", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("after the recording ends" in n for n in notes)
    gaps = [t.index for t in ticks if not t.ok and t.index > ticks[0].index]
    if gaps:
        assert main(["explain", str(rec), "--node", "node-001", "--tick", str(gaps[0]), "--json"]) == 0
        assert any("holds no data" in n for n in json.loads(capsys.readouterr().out)["notes"])


def test_with_no_real_evictions_each_node_is_as_recorded_until_its_first_eviction(replayed: ReplayResult) -> None:
    first: dict[str, Any] = {}
    for e in replayed.evictions:
        first.setdefault(e.node, e)
    for n in replayed.nodes:
        if n.node in first:
            assert n.horizon == first[n.node].time and first[n.node].pod in n.horizon_reason
        else:
            assert n.horizon is None


def test_without_frames_the_evictions_counts_and_conditions_are_the_same(rec: Path, replayed: ReplayResult) -> None:
    import dataclasses

    (lean,) = engine.replay(open_recording(rec), [SettingsRequest()], jobs=2, frames=False)

    def without_frames(n: Any) -> Any:  # what the note says was not computed
        return dataclasses.replace(n, too_fast=(), overcommit_lead_s={})

    assert [without_frames(n) for n in lean.nodes] == [without_frames(n) for n in replayed.nodes]
    assert lean.evictions == replayed.evictions
    assert lean.conditions.equals(replayed.conditions)
    assert lean.signals.select(pl.len()).collect().item() == 0 and engine.NO_FRAMES in lean.notes
