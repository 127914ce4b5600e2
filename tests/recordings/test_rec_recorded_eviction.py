"""Issue 8 and 10 acceptance, end to end: the real recorder records the fake cluster while its
kubelets evict under memory pressure, and the replay of that recording predicts each eviction —
the same pod, the same message, byte for byte — in every timing of recorder against kubelet.

The fake kubelets (apiserver/pressure.py) sample their stats every ``P`` s, as cAdvisor does,
and ``delta`` s after a sample evict what the project's own port of the 1.30 eviction manager
says, with its message.  The recorder polls every ``P`` s at about ``POLL_PHASE`` s into each
sample (the fake answers its first lists at that phase, so the timings below are not left to
chance).  Per node, one timing:

* node-000, ``delta`` 0.1: the pod is ``Failed`` before the recorder's tick even starts, yet the
  summary it fetches is the very sample the kubelet acted on (the old ``pods_at(tick time)`` bug);
* node-001, ``delta`` 0.9: the recorder fetches the sample before the kubelet acts;
* node-002, deciding on the sample when the recorder's tick reads it, and 0.3 s summary
  latency: the request goes out before the eviction, the summary arrives after it (ordered by
  the request itself, apiserver/pressure.py ``on_request``; its ``delta`` only a fallback).

The recording has at most a few ticks (``P`` = 1 s) so the module stays well under a minute.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from rec_support import (
    FakeServer,
    committed_ticks,
    journal_frames,
    kill_quietly,
    run_evictlens,
    start_record,
    wait_for,
)

from recordings.reader import Recording, open_recording
from replay import results_io
from replay.engine import replay_recording
from replay.results import ReplayResult

P = 1.0
POLL_PHASE = 0.45
TIMINGS: dict[str, dict[str, float]] = {
    "node-000": {"delta": 0.1},
    "node-001": {"delta": 0.9},
    "node-002": {"delta": 0.95, "on_request": POLL_PHASE},
}
LATENCY = {"node-002": 0.3}
THRESHOLD = "memory.available<1Gi"  # what the fake kubelets' /configz says
HIGHER = "memory.available<1224Mi"  # two growth steps (2 × 100Mi) higher


@dataclass(frozen=True)
class Recorded:
    path: Path
    evictions: dict[str, dict[str, Any]]
    """Node → what its fake kubelet evicted (pod, uid, message, annotations, sample_time, decided)."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    server = FakeServer(
        tmp_path_factory.mktemp("apiserver"),
        nodes=3,
        pods=3,
        kubelet_ports=False,
        extra=["--pressure", "--sample-period", str(P)],
    )
    server.start()
    out = tmp_path_factory.mktemp("recorded") / "rec"
    try:
        server.faults(list_phase=POLL_PHASE, latency_nodes=LATENCY)
        proc = start_record(
            [
                "--kubeconfig",
                server.kubeconfig,
                "--context",
                "static",
                "-o",
                str(out),
                "--interval",
                f"{P:g}s",
                "--timeout",
                "2s",
                "--keep-raw",
            ]
        )
        try:
            wait_for(lambda: committed_ticks(out) >= 2, 60, "two ticks before the pressure")
            server.control("pressure", {"nodes": TIMINGS})
            wait_for(
                lambda: len(server.control("pressure")["evictions"]) >= len(TIMINGS),
                60,
                "an eviction by every fake kubelet",
            )
            # Every node polled twice after its kubelet published the eviction (a tick begun after it fetches a
            # sample no older than the Event's timestamp): the replay holds the pod from the recorded eviction on,
            # so each node needs such samples, however late a loaded box runs the fake's clock.
            published = {e["node"]: e["published"] for e in server.control("pressure")["evictions"]}
            wait_for(
                lambda: _ok_ticks_since(out, published) >= 2 or proc.poll() is not None,
                60,
                "two ticks of every node after its eviction",
            )
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=60)
        finally:
            kill_quietly(proc)
        assert proc.returncode == 0, err
        log = server.control("pressure")["evictions"]
    finally:
        server.stop()
    assert sorted(e["node"] for e in log) == sorted(TIMINGS), log  # one eviction per node, no more
    return Recorded(out, {e["node"]: e for e in log})


@pytest.fixture(scope="module")
def reference(recorded: Recorded) -> ReplayResult:
    """The per-tick reference replay, in process, as each node's recorded kubelet version."""
    return replay_recording(open_recording(recorded.path))


def _ok_ticks_since(out: Path, since: dict[str, float]) -> int:
    """The fewest committed ok ticks any node in ``since`` has begun at or after its time (epoch seconds)."""
    begun: dict[str, int] = dict.fromkeys(since, 0)
    for frame in journal_frames(out):
        cols = frame.get("tables", {}).get("ticks") or {}
        for node, ok, at in zip(cols.get("node", []), cols.get("ok", []), cols.get("time", []), strict=True):
            if ok and node in since and at / 1e6 >= since[node]:
                begun[node] += 1
    return min(begun.values())


def _recorded_eviction(rec: Recording, uid: str) -> datetime:
    """When the recording shows the pod evicted: its Evicted Event's time or its Failed status, whichever is first
    (what the replay holds the pod from, replay/counterfactual.py really_evicted)."""
    first: datetime = min(r.get("time") or r["observed"] for r in rec.evictions() if r.get("uid") == uid)
    return first


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_each_node_exercised_its_timing(recorded: Recorded) -> None:
    rec = open_recording(recorded.path)
    raw = rec.scan("raw").collect()
    objects = rec.scan_objects().collect()
    for node, ev in recorded.evictions.items():
        sample = _stamp(ev["sample_time"])
        rows = [
            r
            for r in raw.filter(pl.col("node") == node).iter_rows(named=True)
            if orjson.loads(r["body"])["node"]["memory"]["time"] == sample
        ]
        assert len(rows) == 1, f"{node}: the sample the kubelet acted on ({sample}) was fetched {len(rows)} times"
        arrived = rows[0]["observed"].timestamp()
        tick_start = max(t.time for t in rec.ticks(node) if t.time.timestamp() <= arrived).timestamp()
        failed = min(
            r["observed"].timestamp()
            for r in objects.filter(pl.col("uid") == ev["uid"]).iter_rows(named=True)
            if orjson.loads(r["body"])["status"].get("phase") == "Failed"
        )
        decided = ev["decided"]
        later = [summary for _tick, summary in rec.summaries(node) if summary["node"]["memory"]["time"] > sample]
        assert later and all(ev["uid"] not in {p["podRef"]["uid"] for p in s["pods"]} for s in later), node
        if node == "node-000":
            assert failed < tick_start, f"{node}: the pod was to be Failed before the tick ({failed}, {tick_start})"
        elif node == "node-001":
            assert arrived < decided, f"{node}: the sample was to arrive before the eviction ({arrived}, {decided})"
        else:
            assert tick_start < decided < arrived, (
                f"{node}: the request was to go out before and the summary arrive after the eviction "
                f"({tick_start}, {decided}, {arrived})"
            )


def test_replay_predicts_each_eviction_with_the_exact_message_in_every_timing(
    recorded: Recorded, reference: ReplayResult
) -> None:
    for node, ev in recorded.evictions.items():
        assert reference.node(node).kubelet_version == "1.30"
        predicted = [e for e in reference.evictions if e.node == node]
        assert [(e.pod, e.uid) for e in predicted] == [(ev["pod"], ev["uid"])], node
        (e,) = predicted
        assert e.message == ev["message"], node
        assert dict(e.annotations) == ev["annotations"], node
        assert e.time == datetime.fromtimestamp(ev["sample_time"], UTC)  # decided on the sample the kubelet used
        assert "el-sidecar1" not in e.message and "Container el1 was using" in e.message  # 1.30's wording
    matches = {m.real.node: m for m in reference.matches if m.real.source == "event"}
    assert set(matches) == set(TIMINGS)
    assert all(m.same_pod and m.same_message and m.within_interval for m in matches.values()), matches


def test_replay_output_directory_holds_the_exact_message_and_ranks_the_evicted_pod_first(
    recorded: Recorded, reference: ReplayResult, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    res = run_evictlens("replay", str(recorded.path), "-o", str(out), "--jobs", "1")  # the default (fast) path
    assert res.returncode == 0, res.stderr
    evictions = pl.read_parquet(out / "evictions.parquet")
    rankings = pl.read_parquet(out / "rankings.parquet")
    assert evictions.height == len(recorded.evictions)
    for row in evictions.iter_rows(named=True):
        ev = recorded.evictions[row["node"]]
        assert (row["pod"], row["uid"], row["message"]) == (ev["pod"], ev["uid"], ev["message"])
        assert {a["key"]: a["value"] for a in row["annotations"]} == ev["annotations"]
        ranking = rankings.filter(pl.col("eviction_id") == row["eviction_id"]).sort("rank")
        assert ranking["uid"][0] == ev["uid"] and ranking.height >= 3, ranking
    loaded = results_io.load(out)
    assert loaded.same_as(reference)  # the CLI's fast path, written and read back, is the reference replay
    results_io.write(loaded, tmp_path / "again")
    assert results_io.load(tmp_path / "again").same_as(loaded)
    results_io.write(reference, tmp_path / "reference")
    assert results_io.load(tmp_path / "reference").same_as(reference)


@pytest.mark.parametrize("node", sorted(TIMINGS))
def test_explain_at_first_eviction_prints_the_replay_s_message(recorded: Recorded, node: str) -> None:
    res = run_evictlens("explain", str(recorded.path), "--node", node, "--at", "first-eviction", "--json")
    assert res.returncode == 0, res.stderr
    (first,) = orjson.loads(res.stdout)["result"]["evictions"]
    assert first["message"] == recorded.evictions[node]["message"]
    text = run_evictlens(
        "explain", str(recorded.path), "--node", node, "--at", "first-eviction", env={"COLUMNS": "2000"}
    )
    assert text.returncode == 0, text.stderr
    assert recorded.evictions[node]["message"].strip() in text.stdout


def _whatif(recorded: Recorded, *flags: str) -> dict[str, Any]:
    res = run_evictlens("whatif", str(recorded.path), *flags, "--json")
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = orjson.loads(res.stdout)
    return doc


def test_whatif_a_higher_threshold_evicts_earlier_and_at_most_what_a_closed_loop_would(recorded: Recorded) -> None:
    doc = _whatif(recorded, "--eviction-hard", THRESHOLD, "--eviction-hard", HIGHER)
    base, same, higher = doc["variants"]
    assert base["evictions"] == same["evictions"] == len(TIMINGS)  # the recorded threshold: what happened
    assert base["matched_exact"] == same["matched_exact"] == len(TIMINGS)
    assert base["as_recorded_until"] is None and base["horizons"] == []
    # a closed loop evicts the growing sidecar pod once per node, earlier, and memory recovers: the
    # counterfactual default takes its usage off, so nothing else on the node is evicted
    assert higher["evictions"] == len(TIMINGS) and higher["matched"] == len(TIMINGS), doc["variants"]
    assert higher["first_eviction"] < same["first_eviction"]
    assert {h["node"] for h in higher["horizons"]} == set(TIMINGS)  # it parts ways where it evicts earlier
    assert higher["as_recorded_until"] == higher["first_eviction"]
    open_loop = _whatif(recorded, "--eviction-hard", HIGHER, "--as-recorded")["variants"][1]
    assert open_loop["evictions"] > higher["evictions"]  # pods keep their recorded usage: the next goes, and the next


def test_whatif_a_lower_threshold_reports_the_horizon_and_holds_the_really_evicted_pod(recorded: Recorded) -> None:
    lower = "memory.available<924Mi"  # one growth below: the real eviction's sample stays above it
    doc = _whatif(recorded, "--eviction-hard", lower)
    low = doc["variants"][1]
    assert low["evictions"] == 0 and low["matched"] == 0
    horizons = {h["node"]: h for h in low["horizons"]}
    assert set(horizons) == set(TIMINGS)
    for node, ev in recorded.evictions.items():
        h = horizons[node]
        assert h["as_recorded_until"] is not None and ev["pod"] in h["reason"] and "does not evict" in h["reason"]
        assert h["as_recorded_until"] >= _stamp(ev["sample_time"])
    assert low["as_recorded_until"] == min(h["as_recorded_until"] for h in horizons.values())
    text = run_evictlens("whatif", str(recorded.path), "--eviction-hard", lower, env={"COLUMNS": "250"})
    assert text.returncode == 0, text.stderr
    assert "as recorded until" in text.stdout
    assert all(f"#1 {node}: as recorded until" in text.stdout for node in TIMINGS)
    out = run_evictlens(
        "replay", str(recorded.path), "--eviction-hard", lower, "--counterfactual", env={"COLUMNS": "250"}
    )
    assert out.returncode == 0, out.stderr
    assert "held (modelled)" in out.stdout and "as recorded until" in out.stdout


def test_whatif_versions_name_the_sidecar_only_from_1_32(recorded: Recorded) -> None:
    doc = _whatif(recorded, "--kubelet-version", "1.30,1.32")
    assert [v["kubelet_versions"] for v in doc["variants"]] == [["1.30"], ["1.30"], ["1.32"]]
    pods = {p["uid"]: p for p in doc["pods"]}
    for ev in recorded.evictions.values():
        base, v130, v132 = (v["message"] for v in pods[ev["uid"]]["variants"])
        assert base == v130 == ev["message"] and "el-sidecar1" not in v130
        assert "Container el-sidecar1 was using" in v132 and "Container el1 was using" in v132
        assert pods[ev["uid"]]["messages_differ"]


def test_the_columnar_path_routes_held_nodes_to_the_reference_and_agrees_with_it(recorded: Recorded) -> None:
    from replay.engine import replay
    from replay.kubelet.config import FlagOverrides
    from replay.settings import SettingsRequest

    rec = open_recording(recorded.path)
    low = SettingsRequest(
        label="low", overrides=FlagOverrides(eviction_hard=("memory.available<924Mi",)), counterfactual=True
    )
    (fast,) = replay(rec, [low], jobs=1)
    (ref,) = replay(rec, [low], reference=True)
    assert fast.nodes == ref.nodes and fast.evictions == ref.evictions
    assert fast.signals.collect().equals(ref.signals.collect(), null_equal=True)
    held = [n for n in fast.notes if "held (modelled)" in n]
    assert len(held) == len(TIMINGS) and all("per-tick reference" in n for n in held)
    # The held pod is charged back from its recorded eviction on (the Evicted Event's time, stamped by the fake
    # kubelet's clock when it published it, or the Failed status seen, whichever is first): from then each
    # sample's memory.available is the recorded one less the pod's last recorded working set; a sample between
    # the eviction's own sample and that moment (a loaded box publishes late) reads as recorded.  Compared sample
    # by sample with the recording, not with the eviction sample's reading: the other pods' usage moves on (the
    # fake's noise changes every 10 s of wall clock), so a window across such a boundary moves the node too.
    signals = fast.signals.collect()
    for node, ev in recorded.evictions.items():
        evicted_at = datetime.fromtimestamp(ev["sample_time"], UTC)
        really = _recorded_eviction(rec, ev["uid"])
        assert really >= evicted_at, (node, really, evicted_at)
        held_ws, expected, held_samples = None, set(), 0
        for _tick, summary in rec.summaries(node):
            t = datetime.fromisoformat(summary["node"]["memory"]["time"].replace("Z", "+00:00"))
            entry = [p for p in summary["pods"] if p["podRef"]["uid"] == ev["uid"]]
            recorded_available = summary["node"]["memory"]["availableBytes"]
            if entry:
                assert t <= evicted_at, f"{node}: the evicted pod is still listed at {t}"
                held_ws = entry[0]["memory"]["workingSetBytes"]  # its last recorded stats entry
            elif t > evicted_at:
                assert held_ws is not None, node
                if t >= really:
                    held_samples += 1
                    expected.add((t, max(0, recorded_available - held_ws)))
                else:
                    expected.add((t, recorded_available))
        after = signals.filter(
            (pl.col("node") == node) & (pl.col("signal") == "memory.available") & (pl.col("time") > evicted_at)
        )
        assert held_samples and set(after.select("time", "available").iter_rows()) == expected, (node, really)
