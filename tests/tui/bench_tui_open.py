"""Benchmark (run by hand): how long ``evictlens tui RESULTS`` takes to show the overview of a 100-node day.

    .venv/bin/python tests/tui/bench_tui_open.py [NODES] [TICKS]

Synthesizes a results directory shaped like a day of a 100-node cluster polled every 10 s (8640 passes ×
6 signals per node, a few hundred evictions with 30-pod rankings), writes it with ``replay.results_io.write``
and times the app from start to the overview on screen (headless Pilot), and the lazy open alone.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from replay.results import (
    CONDITIONS_SCHEMA,
    SIGNALS_SCHEMA,
    Eviction,
    NodeResult,
    RankedPod,
    ReplayResult,
    ThresholdSetting,
)
from replay.results_io import write

START = datetime(2024, 5, 20, tzinfo=UTC)
SIGNALS = (
    "memory.available",
    "allocatableMemory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "pid.available",
)
GI = 1 << 30


def synthesize(nodes: int = 100, ticks: int = 8640, evictions_per_node: int = 3) -> ReplayResult:
    names = [f"node-{i:03d}" for i in range(nodes)]
    base = pl.DataFrame({"node": names}).join(pl.DataFrame({"tick": pl.arange(0, ticks, eager=True)}), how="cross")
    base = base.join(pl.DataFrame({"signal": list(SIGNALS)}), how="cross")
    signals = (
        base.with_columns(
            pl.lit(START).dt.cast_time_unit("us").dt.replace_time_zone("UTC").alias("start"),
        )
        .select(
            "node",
            pl.col("tick").cast(pl.Int64),
            (pl.col("start") + pl.duration(seconds=pl.col("tick") * 10)).alias("time"),
            "signal",
            ((pl.col("tick") * 7919 + pl.col("node").str.slice(5).cast(pl.Int64) * 104729) % (6 * GI) + GI // 2)
            .cast(pl.Int64)
            .alias("available"),
            pl.lit(8 * GI, pl.Int64).alias("capacity"),
            pl.when(pl.col("signal") == "memory.available")
            .then(pl.lit(0))
            .otherwise(None)
            .cast(pl.Int32)
            .alias("threshold_id"),
            pl.when(pl.col("signal") == "memory.available")
            .then(pl.lit(GI))
            .otherwise(None)
            .cast(pl.Int64)
            .alias("threshold_value"),
        )
        .with_columns(
            (pl.col("available") < pl.col("threshold_value")).alias("met"),
            (pl.col("available") < pl.col("threshold_value")).alias("actionable"),
        )
        .select(SIGNALS_SCHEMA.names())
        .cast(dict(SIGNALS_SCHEMA))
    )
    threshold = ThresholdSetting(
        0, "memory.available", "LessThan", GI, None, 0, True, None, None, "memory.available<1Gi"
    )
    node_results = tuple(
        NodeResult(
            node=n,
            kubelet_version="1.32",
            version_source="synthetic",
            platform="linux",
            dedicated_image_fs=False,
            split_container_image_fs=False,
            topology_source="synthetic",
            config_source="synthetic",
            settings_sources={},
            thresholds=(threshold,),
            pressure_transition_period_ns=300_000_000_000,
            max_pod_grace_period_s=0,
            passes=ticks,
            gaps=0,
            errors=(),
            reasons={"evicted": evictions_per_node},
            first_time=START,
            last_time=START + timedelta(seconds=10 * (ticks - 1)),
        )
        for n in names
    )
    evictions = []
    conditions: dict[str, list[object]] = {c: [] for c in CONDITIONS_SCHEMA.names()}
    for i, n in enumerate(names):
        for k in range(evictions_per_node):
            tick = (i * 37 + k * 2000) % ticks
            when = START + timedelta(seconds=10 * tick)
            ranking = tuple(
                RankedPod(
                    r + 1,
                    "default",
                    f"pod-{i}-{r}",
                    f"uid-{i}-{r}",
                    "Burstable",
                    0,
                    True,
                    True,
                    GI // (r + 1),
                    GI // 4,
                    GI // (r + 1) - GI // 4,
                    None,
                    False,
                    "usage above request; priority 0",
                )
                for r in range(30)
            )
            evictions.append(
                Eviction(
                    id=len(evictions),
                    node=n,
                    tick=tick,
                    time=when,
                    namespace="default",
                    pod=f"pod-{i}-{k}",
                    uid=f"uid-{i}-{k}",
                    owner_kind="ReplicaSet",
                    owner_name=f"rs-{i}",
                    qos="Burstable",
                    priority=0,
                    cause="memory.available",
                    signal="memory.available",
                    hard=True,
                    observed_available=GI - 1,
                    threshold_value=GI,
                    grace_period_override=0,
                    message="The node was low on resource: memory. Threshold quantity: 1Gi, available: 1048575Ki. ",
                    annotations={"starved_resource": "memory"},
                    ranking=ranking,
                )
            )
            for name, value in (
                ("node", n),
                ("condition", "MemoryPressure"),
                ("from", when),
                ("to", when + timedelta(minutes=5)),
                ("from_tick", tick),
                ("to_tick", tick + 30),
            ):
                conditions[name].append(value)
    return ReplayResult(
        recording="/nonexistent/synthetic-day",
        interval_seconds=10.0,
        settings={"label": "synthetic day"},
        nodes=node_results,
        evictions=tuple(evictions),
        matches=(),
        notes=(),
        signals=signals,
        conditions=pl.DataFrame(conditions, schema=CONDITIONS_SCHEMA),
    )


async def time_to_overview(out: Path) -> float:
    from pilot_wait import overview_ready, timeline_ready, until

    from tui.app import make_app
    from tui.screens.overview import OverviewScreen

    start = time.perf_counter()
    app = make_app(out)
    async with app.run_test(size=(160, 50)) as pilot:
        await until(pilot, lambda: overview_ready(app), "the overview", 1800)
        assert isinstance(app.screen, OverviewScreen)
        shown = time.perf_counter() - start
        rows = app.screen.query_one("#nodes").row_count  # type: ignore[attr-defined]
        assert rows == len(app.view.nodes)
        t0 = time.perf_counter()
        await pilot.press("enter")
        await until(pilot, lambda: timeline_ready(app), "the timeline", 1800)
        print(f"open one node's timeline: {time.perf_counter() - t0:.2f} s")
    return shown


def main() -> None:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    ticks = int(sys.argv[2]) if len(sys.argv) > 2 else 8640
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "day"
        t0 = time.perf_counter()
        result = synthesize(nodes, ticks)
        write(result, out)
        size = sum(f.stat().st_size for f in out.iterdir())
        print(
            f"synthesized {result.signals.height:,} signal rows, {len(result.evictions)} evictions "
            f"({size / 1e6:.1f} MB on disk) in {time.perf_counter() - t0:.1f} s"
        )
        from tui.results_dir import open_results_dir

        t0 = time.perf_counter()
        view = open_results_dir(out)
        view.lowest_available()
        print(f"lazy open + overview aggregation: {time.perf_counter() - t0:.2f} s")
        print(f"app start to overview on screen: {asyncio.run(time_to_overview(out)):.2f} s")


if __name__ == "__main__":
    main()
