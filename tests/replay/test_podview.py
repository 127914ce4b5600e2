"""replay.podview: a pod at an eviction and over time, read for one node and one pod (never a whole table)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
from recbuild import CONFIGZ, LOW, POD_UID, T0, Observation, Plan, Tick, node_object, pods, sidecar_recording, write
from recbuild import summary_at as make_summary

from recordings.reader import Recording, open_recording
from recordings.schema import SERIES
from recordings.summary_codec import decode
from replay.engine import replay_recording
from replay.podview import containers_at, find_pod, pod_series


def _two_nodes(root: Path) -> Path:
    """kind-worker with the sample's pods and a second node reporting the same pod stats, over three parts."""
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    for p in pods():
        plan.objects.append(Observation(start, "pod", p))
    plan.objects.append(Observation(start, "node", node_object()))
    plan.objects.append(Observation(start, "configz", CONFIGZ, node="kind-worker"))
    for i in range(6):
        when = T0 + timedelta(seconds=10 * i)
        worker = make_summary(when, LOW if i >= 4 else 4 << 30)
        for stats in worker["pods"]:
            for c in stats.get("containers") or []:
                c["memory"]["workingSetBytes"] = (c["memory"].get("workingSetBytes") or 0) + i  # each tick its own
        plan.ticks.append(Tick(when, {"kind-worker": worker, "other": make_summary(when, 3 << 30, "other")}))
    return write(root, plan, fold_after=(1, 3))


def _whole_table_summary(rec: Recording, node: str, tick: int) -> dict[str, Any] | None:
    """What summary_at returned when it read whole tables and filtered afterwards."""

    def rows(name: str) -> list[dict[str, Any]]:
        df = rec.scan(name).collect()
        return df.filter((pl.col("node") == node) & (pl.col("tick") == tick)).to_dicts()

    node_rows = rows(SERIES[0].name)
    return decode(node_rows[0], *(rows(t.name) for t in SERIES[1:])) if node_rows else None


def test_summary_at_pushes_node_and_tick_into_the_scans_and_equals_the_whole_table_read(tmp_path: Path) -> None:
    rec = open_recording(_two_nodes(tmp_path / "rec"))
    assert len(rec.parts) >= 2
    for node in ("kind-worker", "other"):
        for tick in range(6):
            assert rec.summary_at(node, tick) == _whole_table_summary(rec, node, tick)
    assert rec.summary_at("other", 99) is None and rec.summary_at("nobody", 0) is None
    assert not set(rec._cache) & {t.name for t in SERIES}  # no series table was read whole


def test_containers_at_an_eviction_are_the_pod_spec_with_the_usage_of_its_tick(tmp_path: Path) -> None:
    path = sidecar_recording(tmp_path / "rec")
    eviction = next(e for e in replay_recording(open_recording(path)).evictions if e.pod == "alloc-sidecars")
    rec = open_recording(path)
    rows = {r.name: r for r in containers_at(rec, eviction)}
    assert {n: r.kind for n, r in rows.items()} == {
        "el-sidecar1": "sidecar",
        "el-sidecar2": "sidecar",
        "el-sidecar3": "sidecar",
        "el1": "regular",
        "el2": "regular",
        "el3": "regular",
    }
    assert {n for n, r in rows.items() if r.named} == {"el1", "el2", "el3"}  # the offending_containers annotation
    summary = rec.summary_at(eviction.node, eviction.tick)
    assert summary is not None
    (stats,) = [p for p in summary["pods"] if p["podRef"]["uid"] == eviction.uid]
    for c in stats["containers"]:
        assert rows[c["name"]].memory == c["memory"]["workingSetBytes"]
        assert rows[c["name"]].disk == c["rootfs"]["usedBytes"] + c["logs"]["usedBytes"]
    assert rows["el1"].offending and not rows["el-sidecar1"].offending
    assert not {"objects", *(t.name for t in SERIES)} & set(rec._cache)  # one pod's versions, one tick's rows


def test_pod_series_sums_one_pods_containers_on_one_node_per_tick(tmp_path: Path) -> None:
    rec = open_recording(_two_nodes(tmp_path / "rec"))
    series = pod_series(rec, "kind-worker", "default", "alloc-sidecars", POD_UID)
    assert series.frame["tick"].to_list() == list(range(6))
    for tick, memory in zip(series.frame["tick"], series.frame["memory"], strict=True):
        summary = rec.summary_at("kind-worker", tick)
        assert summary is not None
        (stats,) = [p for p in summary["pods"] if p["podRef"]["uid"] == POD_UID]
        assert memory == sum(c["memory"]["workingSetBytes"] for c in stats["containers"])
    assert [k for _n, k in series.containers].count("sidecar") == 3
    assert not {"objects", *(t.name for t in SERIES)} & set(rec._cache)


def test_a_pod_is_found_as_of_a_moment_and_only_on_its_node(tmp_path: Path) -> None:
    rec = open_recording(sidecar_recording(tmp_path / "rec"))
    pod = find_pod(rec, "kind-worker", "default", "alloc-sidecars", T0)
    assert pod is not None and pod["metadata"]["uid"] == POD_UID
    assert find_pod(rec, "other", "default", "alloc-sidecars", T0) is None
    assert find_pod(rec, "kind-worker", "default", "alloc-sidecars", T0 - timedelta(minutes=5)) is None
    later = find_pod(rec, "kind-worker", "default", "alloc-sidecars", None)
    assert later is not None and later["status"]["phase"] == "Failed"  # the evicted version, still bound
