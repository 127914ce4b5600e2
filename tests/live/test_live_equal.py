"""The live engine decides what ``replay`` decides: a recording fed tick by tick through the real writer
(folding into parts as it goes), polled after each commit or every few, gives the same evictions (node,
pod, time, exact message) and the same condition intervals as ``replay`` on the finished recording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from live_feed import feed

from live.engine import LiveEngine
from live.model import LiveEvent
from recordings.reader import open_recording, to_micros
from replay.cli import main
from replay.engine import replay
from replay.settings import SettingsRequest

SCENARIOS = (
    "container-limit",
    "disk-pressure",
    "init-container-memory",
    "jvm-spike",
    "k3d-operator-pod",
    "local-storage-limits",
    "no-system-reserved",
    "overcommit",
    "pid-pressure",
    "qos-contest",
    "sidecar-stress",
    "soft-grace",
)


@pytest.fixture(scope="module")
def scenario_recs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in SCENARIOS:
        where = tmp_path_factory.mktemp(name) / "rec"
        assert main(["scenario", "--sample", name, "-o", str(where)]) == 0
        out[name] = where
    return out


def replay_decisions(rec_dir: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    (result,) = replay(open_recording(rec_dir), [SettingsRequest()], closed_loop=False)
    evictions = sorted((e.node, e.uid, to_micros(e.time), e.message) for e in result.evictions)
    conditions = sorted(
        (r["node"], r["condition"], to_micros(r["from"]), None if r["to"] is None else to_micros(r["to"]))
        for r in result.conditions.iter_rows(named=True)
    )
    return evictions, conditions


def live_decisions(events: list[LiveEvent]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    evictions = sorted(
        (e.node, e.details["uid"], e.time_us, e.details["message"]) for e in events if e.kind == "predicted-eviction"
    )
    open_: dict[tuple[str, object], int] = {}
    conditions = []
    for e in events:
        key = (e.node, e.details.get("condition"))
        if e.kind == "pressure-start":
            open_[key] = e.time_us
        elif e.kind == "pressure-end":
            conditions.append((*key, open_.pop(key), e.time_us))
    conditions += [(*key, start, None) for key, start in open_.items()]
    return evictions, sorted(conditions)


def run_live(src: Path, dst: Path, *, poll_every: int = 1, fold_every: int = 7) -> tuple[LiveEngine, list[LiveEvent]]:
    events: list[LiveEvent] = []
    engines: list[LiveEngine] = []
    commits = [0]

    def opened() -> None:
        engines.append(LiveEngine(dst))

    def committed(_tick: int) -> None:
        commits[0] += 1
        if commits[0] % poll_every == 0:
            events.extend(engines[0].poll())

    feed(src, dst, committed, on_open=opened, fold_every=fold_every, finalize=False)
    events.extend(engines[0].poll())
    return engines[0], events


@pytest.mark.parametrize("name", SCENARIOS)
def test_live_equals_replay_on_each_bundled_scenario(name: str, scenario_recs: dict[str, Path], tmp_path: Path) -> None:
    engine, events = run_live(scenario_recs[name], tmp_path / "rec")
    assert live_decisions(events) == replay_decisions(tmp_path / "rec")
    assert engine.nodes()


def test_polling_seldom_reads_folded_segments_from_their_parts(scenario_recs: dict[str, Path], tmp_path: Path) -> None:
    """Polled every 11 commits while the writer folds every 3: segments go before they are read."""
    engine, events = run_live(scenario_recs["jvm-spike"], tmp_path / "rec", poll_every=11, fold_every=3)
    assert live_decisions(events) == replay_decisions(tmp_path / "rec")
    assert any("folded" in n for n in engine._tail.notes)


@pytest.mark.parametrize("name", ["jvm-spike", "disk-pressure", "soft-grace", "local-storage-limits", "pid-pressure"])
def test_opened_mid_way_the_engine_goes_on_as_replay(
    name: str, scenario_recs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start-up on a recording half written carries each node on the fast path (all but the last 3 ticks) and
    steps the rest; from there on the decisions are replay's, and the conditions at the end too."""
    import live.engine

    monkeypatch.setattr(live.engine, "HISTORY_TICKS", 3)
    ticks = open_recording(scenario_recs[name])._table("ticks")["tick"].n_unique()
    dst = tmp_path / "rec"
    events: list[LiveEvent] = []
    engines: list[LiveEngine] = []
    opened_at: list[int] = []

    def committed(tick: int) -> None:
        if not engines and tick >= ticks // 2:
            engines.append(LiveEngine(dst))
            opened_at.append(tick)
        elif engines:
            events.extend(engines[0].poll())

    feed(scenario_recs[name], dst, committed, fold_every=5, finalize=False)
    events.extend(engines[0].poll())
    assert engines[0].resumed
    (result,) = replay(open_recording(dst), [SettingsRequest()], closed_loop=False)
    later = sorted((e.node, e.uid, to_micros(e.time), e.message) for e in result.evictions if e.tick > opened_at[0])
    assert live_decisions(events)[0] == later
    at_end = {(r["node"], r["condition"]) for r in result.conditions.iter_rows(named=True) if r["to"] is None}
    assert {(n, c) for n, now in engines[0].nodes().items() for c in now.conditions} == at_end


def test_a_real_eviction_arrives_flagged_against_the_prediction(scenario_recs: dict[str, Path], tmp_path: Path) -> None:
    """qos-contest's kubelet evicts what the engine decided, with the same message; jvm-spike's JVM is killed by
    the kernel after the forecast warned and ranked it first."""
    _engine, events = run_live(scenario_recs["qos-contest"], tmp_path / "qos")
    real = [e for e in events if e.kind == "real-eviction"]
    assert real and all(e.details["predicted"] and e.details["message_matches"] for e in real)
    assert all(e.details["message_diff"] == "" for e in real)
    _engine, events = run_live(scenario_recs["jvm-spike"], tmp_path / "jvm")
    kinds = [e.kind for e in events]
    kill = next(e for e in events if e.kind == "kernel-kill" and e.details["kind"] == "OOMKilled")
    assert kinds.index("warning") < events.index(kill)
    warning = next(e for e in events if e.kind == "warning")
    assert warning.time_us < kill.time_us and warning.details["signal"] == "memory.available"
    assert kill.details["was_next_to_go"] and "Container orders was using" in str(kill.details["predicted_message"])
    ntg = _engine.nodes()["worker-1"].next_to_go
    assert ntg is not None and "the kubelet's ranking on the usage at tick" in ntg.basis


@pytest.mark.parametrize("name", ["qos-contest", "local-storage-limits", "disk-pressure", "k3d-operator-pod"])
def test_forgetting_pod_versions_no_longer_in_force_changes_nothing(
    name: str, scenario_recs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long watch compacts each node's pod versions (replay.incremental.COMPACT_EVERY passes); after every
    pass here, and the decisions are still replay's."""
    import replay.incremental

    monkeypatch.setattr(replay.incremental, "COMPACT_EVERY", 1)
    _engine, events = run_live(scenario_recs[name], tmp_path / "rec")
    assert live_decisions(events) == replay_decisions(tmp_path / "rec")
