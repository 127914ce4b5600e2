"""Benchmark (by hand, not collected by pytest): ``evictlens replay`` on a synthetic cluster-day.

    .venv/bin/python tests/replay/bench_replay.py gen   --nodes 100 --pods 110 --ticks 8640 -o /tmp/rec100
    .venv/bin/python tests/replay/bench_replay.py run   /tmp/rec100 --jobs 2
    .venv/bin/python tests/replay/bench_replay.py floor /tmp/rec100

``gen`` builds whole tables as polars frames (one part per ``--part-ticks`` ticks, like the recorder's
time-ordered folds) and publishes them through the real writer (RecordingWriter.publish_part:
schema check, sort, zstd Parquet, checksums), pods and node objects through ``observe``; the result
is a finalized recording that ``open_recording`` accepts. Shapes follow the real nri-kubernetes 1.28
summary (../shared/realdata): node memory / fs / imageFs (shared with nodefs) / rlimit, the ``pods``
and ``kubelet`` system containers, per pod memory, ephemeral-storage and process count, two
containers per pod with memory / rootfs / logs, a service-account volume on every pod and an emptyDir
on every fourth. Pods have requests and limits (BestEffort, Burstable, Guaranteed, a few critical).
Every ``--pressure-every``-th node has two memory episodes (one pod leaks until memory.available
is under 100Mi for a few minutes), one of them also fills nodefs under 10 %, and one emptyDir
outgrows its sizeLimit: the replay evicts. Node 1 misses a few polls (gaps).

``run`` replays with the default kubelet settings on the fast path (``--jobs``) and prints wall time,
CPU time (user+sys, this process and its children: the worker processes are reaped, the forkserver
stopped, before reading RUSAGE_CHILDREN), peak RSS (this process; the largest child), passes/s and
container samples/s. ``floor`` times polars alone scanning the columns the eviction logic reads.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from recordings import writer as writer_module  # noqa: E402
from recordings.format import Manifest  # noqa: E402
from recordings.schema import ALL_SCHEMAS, CONTAINER_STATS, NODE_STATS, POD_STATS, SYSTEM_STATS, VOLUME_STATS  # noqa: E402
from recordings.writer import RecordingWriter  # noqa: E402

MI, GI = 1 << 20, 1 << 30
PAGE = 4096
T0 = 1_763_000_000_000_000  # µs
MEM_CAP = 32 * GI
FS_CAP = 200 * GI
OVERHEAD = 1536 * MI
CONTAINERS = ("app", "sidecar")
LEAK = 7  # the pod that leaks on pressure nodes (burstable, above its request)
_NS = uuid.UUID("0b6c1d5e-9a9f-4d59-8a57-6cbb0c0d7e01")
TEMPLATES = (
    ("kube-system", "coredns"),
    ("kube-system", "kube-proxy"),
    ("kube-system", "kindnet"),
    ("scraper", "e2e-deployment"),
    ("scraper", "e2e-statefulset"),
    ("scraper", "e2e-daemonset"),
    ("scraper", "e2e-hpa"),
    ("scraper", "e2e-scraper"),
    ("default", "web"),
    ("default", "worker"),
    ("default", "cache"),
    ("monitoring", "exporter"),
)


# -- the cluster: static per node / pod / container ------------------------------------------------
def node_name(n: int) -> str:
    return f"node-{n:03d}"


def pod_uid(n: int, j: int) -> str:
    return str(uuid.uuid5(_NS, f"{n}/{j}"))


def base_ws(n: int, j: int, c: int) -> int:
    return (8 + (j * 37 + c * 11 + n * 5) % 120) * MI


def pressure(n: int, every: int) -> bool:
    return every > 0 and n % every == 1


def pod_object(n: int, j: int) -> dict[str, Any]:
    ns, app = TEMPLATES[j % len(TEMPLATES)]
    critical = j < 2
    kind = "besteffort" if j % 10 == 5 else "guaranteed" if j % 3 == 0 else "burstable"
    containers = []
    for c, cname in enumerate(CONTAINERS):
        res: dict[str, dict[str, str]] = {}
        if kind == "guaranteed":
            mem = f"{256 + 64 * c}Mi"
            res = {"requests": {"cpu": "100m", "memory": mem}, "limits": {"cpu": "100m", "memory": mem}}
            if c == 0:
                res["requests"]["ephemeral-storage"] = res["limits"]["ephemeral-storage"] = "2Gi"
        elif kind == "burstable":
            res = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "1Gi"}}
        containers.append({"name": cname, "image": f"registry.example/{app}:1.{j % 7}", "resources": res})
    volumes: list[dict[str, Any]] = [{"name": "kube-api-access", "projected": {"sources": []}}]
    if j % 4 == 1:
        volumes.append({"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}})
    spec: dict[str, Any] = {
        "nodeName": node_name(n),
        "containers": containers,
        "volumes": volumes,
        "terminationGracePeriodSeconds": 30,
        "priority": 0,
    }
    if critical:
        spec.update(priority=2000001000, priorityClassName="system-node-critical")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{n}-{j}",
            "namespace": ns,
            "uid": pod_uid(n, j),
            "resourceVersion": "1",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-rs",
                    "uid": str(uuid.uuid5(_NS, app)),
                    "controller": True,
                }
            ],
        },
        "spec": spec,
        "status": {
            "phase": "Running",
            "qosClass": {"besteffort": "BestEffort", "guaranteed": "Guaranteed", "burstable": "Burstable"}[kind],
        },
    }


def node_object(n: int) -> dict[str, Any]:
    alloc = {
        "cpu": "16",
        "memory": f"{MEM_CAP // 1024 - 1024 * 1024}Ki",
        "ephemeral-storage": f"{FS_CAP // 1024}Ki",
        "pods": "110",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node_name(n), "uid": str(uuid.uuid5(_NS, str(n)))},
        "status": {
            "capacity": alloc,
            "allocatable": alloc,
            "nodeInfo": {"kubeletVersion": "v1.30.4", "operatingSystem": "linux"},
        },
    }


# -- the series, as whole frames per part -----------------------------------------------------------
def _keys(nodes: int, pods: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Pod, container and volume keys sorted like the tables (node, pod_uid, name)."""
    prow: dict[str, list[Any]] = {
        "node": [],
        "n": [],
        "pod": [],
        "pod_uid": [],
        "name": [],
        "namespace": [],
        "pbase": [],
    }
    crow: dict[str, list[Any]] = {
        "node": [],
        "n": [],
        "pod": [],
        "pod_uid": [],
        "container": [],
        "name": [],
        "cbase": [],
        "c": [],
    }
    vrow: dict[str, list[Any]] = {"node": [], "n": [], "pod": [], "pod_uid": [], "volume": [], "name": []}
    for n in range(nodes):
        for j in range(pods):
            obj = pod_object(n, j)
            uid = obj["metadata"]["uid"]
            for k, v in (
                ("node", node_name(n)),
                ("n", n),
                ("pod", j),
                ("pod_uid", uid),
                ("name", obj["metadata"]["name"]),
                ("namespace", obj["metadata"]["namespace"]),
                ("pbase", sum(base_ws(n, j, c) for c in range(len(CONTAINERS)))),
            ):
                prow[k].append(v)
            for c, cname in enumerate(CONTAINERS):
                for k, v in (
                    ("node", node_name(n)),
                    ("n", n),
                    ("pod", j),
                    ("pod_uid", uid),
                    ("container", c),
                    ("name", cname),
                    ("cbase", base_ws(n, j, c)),
                    ("c", c),
                ):
                    crow[k].append(v)
            for i, vol in enumerate(obj["spec"]["volumes"]):
                for k, v in (
                    ("node", node_name(n)),
                    ("n", n),
                    ("pod", j),
                    ("pod_uid", uid),
                    ("volume", i),
                    ("name", vol["name"]),
                ):
                    vrow[k].append(v)
    u32 = {
        "pod": pl.UInt32,
        "container": pl.UInt32,
        "volume": pl.UInt32,
        "n": pl.Int64,
        "pbase": pl.Int64,
        "cbase": pl.Int64,
        "c": pl.Int64,
    }

    def frame(rows: dict[str, list[Any]], sort: list[str]) -> pl.DataFrame:
        return pl.DataFrame(rows, schema_overrides={k: t for k, t in u32.items() if k in rows}).sort(sort)

    return (
        frame(prow, ["node", "pod_uid"]),
        frame(crow, ["node", "pod_uid", "name"]),
        frame(vrow, ["node", "pod_uid", "name"]),
    )


def _time(offset_s: int) -> pl.Expr:
    return (pl.col("at") - offset_s * 1_000_000).cast(pl.Datetime("us", "UTC"))


def _u64(e: pl.Expr) -> pl.Expr:
    return e.cast(pl.UInt64)


def _wiggle(*terms: pl.Expr | int) -> pl.Expr:
    """Deterministic page-sized noise, 0..63 pages: cheap integer arithmetic, no randomness."""
    x: pl.Expr = pl.lit(0, pl.Int64)
    for mult, term in zip((7, 13, 5, 3), terms, strict=False):
        x = x + pl.lit(mult, pl.Int64) * term
    return (x % 64) * PAGE


def _episode(tick: pl.Expr, ticks: int) -> pl.Expr:
    """0..1 leak ramp: two episodes a day, each 10 minutes up and 3 minutes at the top (10 s ticks)."""
    out: pl.Expr = pl.lit(0.0)
    for start in (ticks // 3, (2 * ticks) // 3):
        ramp = ((tick - start).cast(pl.Float64) / 60).clip(0.0, 1.0)
        out = out + pl.when((tick >= start) & (tick < start + 78)).then(ramp).otherwise(0.0)
    return out


def _fill(tick: pl.Expr, ticks: int) -> pl.Expr:
    """nodefs filled under 10 % for the 3 minutes at the top of the second episode."""
    start = (2 * ticks) // 3 + 60
    return pl.when((tick >= start) & (tick < start + 18)).then(1.0).otherwise(0.0)


def part_frames(
    lo: int,
    hi: int,
    *,
    nodes: int,
    pods: int,
    ticks: int,
    interval: int,
    every: int,
    keys: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> dict[str, pl.DataFrame]:
    """Every table for ticks [lo, hi) of every node, in the recording's schemas."""
    pkeys, ckeys, vkeys = keys
    tick_frame = pl.DataFrame({"tick": range(lo, hi)}, schema={"tick": pl.UInt32}).with_columns(
        (pl.lit(T0) + pl.col("tick").cast(pl.Int64) * interval * 1_000_000).alias("at")
    )
    gap = (pl.col("node") == node_name(1)) & (pl.col("tick") % 997 == 13) if nodes > 1 else pl.lit(False)
    t = pl.col("tick").cast(pl.Int64)
    node_keys = pl.DataFrame(
        {
            "node": [node_name(n) for n in range(nodes)],
            "n": list(range(nodes)),
            "press": [pressure(n, every) for n in range(nodes)],
            "sum_base": [
                sum(base_ws(n, j, c) for j in range(pods) for c in range(len(CONTAINERS))) for n in range(nodes)
            ],
        }
    )
    wig_max = 63 * PAGE * pods * len(CONTAINERS)
    # the leak: the LEAK pod's app container grows until node memory.available is 40Mi..(40Mi + noise)
    nk = node_keys.with_columns((pl.lit(MEM_CAP - OVERHEAD - 40 * MI - wig_max) - pl.col("sum_base")).alias("leak_max"))
    cross = (
        ckeys.join(nk.select("node", "press", "leak_max"), on="node", how="left")
        .join(tick_frame, how="cross")
        .filter(~gap)
    )
    leak = (
        pl.when(pl.col("press") & (pl.col("pod") == LEAK) & (pl.col("c") == 0))
        .then((pl.col("leak_max").cast(pl.Float64) * _episode(t, ticks)).cast(pl.Int64))
        .otherwise(0)
    )
    ws = pl.col("cbase") + _wiggle(t, pl.col("pod").cast(pl.Int64), pl.col("c"), pl.col("n")) + leak
    log_used = 32768 + PAGE * (t % 97)
    containers = cross.with_columns(ws.alias("_ws")).select(
        "tick",
        "node",
        "pod",
        "pod_uid",
        "container",
        pl.lit(0b1111, pl.UInt32).alias("present"),
        "name",
        _time(5).alias("memory_time"),
        pl.lit(None, pl.UInt64).alias("memory_available_bytes"),
        _u64(pl.col("_ws") + 32 * PAGE).alias("memory_usage_bytes"),
        _u64(pl.col("_ws")).alias("memory_working_set_bytes"),
        _u64(pl.col("_ws") - 8 * PAGE).alias("memory_rss_bytes"),
        *_fs_cols("rootfs", 5, used=pl.lit(1 << 20) + PAGE * (t % 31), inodes_used=9 + t % 5),
        *_fs_cols("logs", 5, used=log_used, inodes_used=pl.lit(1, pl.Int64)),
    )
    # pods: sums of their containers' series, computed the same way (no aggregation over the big frame)
    pcross = (
        pkeys.join(nk.select("node", "press", "leak_max"), on="node", how="left")
        .join(tick_frame, how="cross")
        .filter(~gap)
    )
    pleak = (
        pl.when(pl.col("press") & (pl.col("pod") == LEAK))
        .then((pl.col("leak_max").cast(pl.Float64) * _episode(t, ticks)).cast(pl.Int64))
        .otherwise(0)
    )
    pws = (
        pl.col("pbase")
        + pleak
        + sum(
            (
                _wiggle(t, pl.col("pod").cast(pl.Int64), pl.lit(c, pl.Int64), pl.col("n"))
                for c in range(len(CONTAINERS))
            ),
            pl.lit(0, pl.Int64),
        )
    )
    scratch = pl.col("pod") % 4 == 1
    vol_used = (
        pl.when(scratch)
        .then(
            pl.lit(64 * MI)
            + PAGE * (t % 1000)
            + pl.when(pl.col("press") & (pl.col("pod") == 9) & (t >= ticks // 6) & (t < ticks // 6 + 30))
            .then(2 * GI)
            .otherwise(0)
        )
        .otherwise(12288)
    )
    pods_f = pcross.with_columns(pws.alias("_ws"), vol_used.alias("_vol")).select(
        "tick",
        "node",
        "pod",
        "pod_uid",
        pl.lit(0b111111, pl.UInt32).alias("present"),
        "name",
        "namespace",
        _time(5).alias("memory_time"),
        pl.lit(None, pl.UInt64).alias("memory_available_bytes"),
        _u64(pl.col("_ws") + 64 * PAGE).alias("memory_usage_bytes"),
        _u64(pl.col("_ws")).alias("memory_working_set_bytes"),
        _u64(pl.col("_ws") - 16 * PAGE).alias("memory_rss_bytes"),
        *_fs_cols(
            "ephemeral",
            5,
            used=2 * ((1 << 20) + PAGE * (t % 31)) + 2 * log_used + pl.col("_vol"),
            inodes_used=20 + t % 5,
        ),
        _u64(1 + (pl.col("pod").cast(pl.Int64) * 3 + t) % 4).alias("process_count"),
    )
    node_ws = pods_f.group_by("node", "tick", maintain_order=True).agg(
        pl.col("memory_working_set_bytes").cast(pl.Int64).sum().alias("pods_ws")
    )
    ncross = nk.join(tick_frame, how="cross").filter(~gap).join(node_ws, on=["node", "tick"], how="left")
    fs_used = (
        pl.lit(40 * GI)
        + PAGE * 64 * (t % 1000)
        + pl.when(pl.col("press")).then((_fill(t, ticks) * (FS_CAP * 0.92 - 40 * GI)).cast(pl.Int64)).otherwise(0)
    )
    node_f = ncross.with_columns((pl.col("pods_ws") + OVERHEAD).alias("_ws"), fs_used.alias("_fs")).select(
        "tick",
        "node",
        _time(0).alias("scraped"),
        pl.lit(0b10111111, pl.UInt32).alias("present"),
        pl.col("node").alias("node_name"),
        pl.lit(T0 - 86_400_000_000).cast(pl.Datetime("us", "UTC")).alias("start_time"),
        _time(2).alias("memory_time"),
        _u64(MEM_CAP - pl.col("_ws")).alias("memory_available_bytes"),
        _u64(pl.col("_ws") + 512 * MI).alias("memory_usage_bytes"),
        _u64(pl.col("_ws")).alias("memory_working_set_bytes"),
        _u64(pl.col("_ws") - 256 * MI).alias("memory_rss_bytes"),
        *_node_fs("fs", 2, pl.col("_fs")),
        *_node_fs("imagefs", 9, pl.col("_fs"), image=True),
        *(
            pl.lit(None, ALL_SCHEMAS[NODE_STATS.name][c]).alias(c)
            for c in ALL_SCHEMAS[NODE_STATS.name]
            if c.startswith("containerfs_")
        ),
        _time(2).alias("rlimit_time"),
        pl.lit(4_194_304, pl.Int64).alias("rlimit_maxpid"),
        (400 + (t * 7 + pl.col("n") * 3) % 64).alias("rlimit_curproc"),
    )
    sys_keys = pl.DataFrame(
        {"container": [0, 1], "name": ["kubelet", "pods"]}, schema={"container": pl.UInt32, "name": pl.String}
    )
    system = (
        ncross.join(sys_keys, how="cross")
        .with_columns((pl.when(pl.col("name") == "pods").then(pl.col("pods_ws")).otherwise(180 * MI)).alias("_ws"))
        .select(
            "tick",
            "node",
            "container",
            pl.lit(0b0011, pl.UInt32).alias("present"),
            "name",
            pl.lit(T0 - 86_400_000_000).cast(pl.Datetime("us", "UTC")).alias("start_time"),
            _time(2).alias("memory_time"),
            pl.when(pl.col("name") == "pods")
            .then(_u64(MEM_CAP - OVERHEAD - pl.col("_ws")))
            .otherwise(None)
            .alias("memory_available_bytes"),
            _u64(pl.col("_ws") + 64 * MI).alias("memory_usage_bytes"),
            _u64(pl.col("_ws")).alias("memory_working_set_bytes"),
            _u64(pl.col("_ws") - 32 * MI).alias("memory_rss_bytes"),
            *(
                pl.lit(None, ALL_SCHEMAS[SYSTEM_STATS.name][c]).alias(c)
                for c in ALL_SCHEMAS[SYSTEM_STATS.name]
                if c.startswith(("rootfs_", "logs_"))
            ),
        )
        .sort("node", "name", "tick")
    )
    vcross = vkeys.join(nk.select("node", "press"), on="node", how="left").join(tick_frame, how="cross").filter(~gap)
    vused = (
        pl.when(pl.col("name") == "scratch")
        .then(
            pl.lit(64 * MI)
            + PAGE * (t % 1000)
            + pl.when(pl.col("press") & (pl.col("pod") == 9) & (t >= ticks // 6) & (t < ticks // 6 + 30))
            .then(2 * GI)
            .otherwise(0)
        )
        .otherwise(12288)
    )
    volumes = vcross.with_columns(vused.alias("_u")).select(
        "tick",
        "node",
        "pod",
        "pod_uid",
        "volume",
        pl.lit(1, pl.UInt32).alias("present"),
        "name",
        _time(60).alias("time"),
        *_fs_vals(pl.col("_u"), volume=True),
    )
    tick_rows = (
        node_keys.select("node")
        .join(tick_frame, how="cross")
        .select(
            "tick",
            _time(0).alias("time"),
            "node",
            (~gap).alias("ok"),
            pl.when(gap)
            .then(pl.lit('Get "https://node/stats/summary": context deadline exceeded'))
            .otherwise(None)
            .alias("error"),
        )
    )
    out = {
        NODE_STATS.name: node_f,
        SYSTEM_STATS.name: system,
        POD_STATS.name: pods_f,
        CONTAINER_STATS.name: containers,
        VOLUME_STATS.name: volumes,
        "ticks": tick_rows,
    }
    return {name: df.select(pl.col(c).cast(dt) for c, dt in ALL_SCHEMAS[name].items()) for name, df in out.items()}


def _fs_vals(used: pl.Expr, *, volume: bool = False, inodes_used: pl.Expr | None = None) -> list[pl.Expr]:
    cap = 16 * GI if volume else FS_CAP
    iu = inodes_used if inodes_used is not None else pl.lit(9, pl.Int64)
    return [
        _u64(cap - used).alias("available_bytes"),
        pl.lit(cap, pl.UInt64).alias("capacity_bytes"),
        _u64(used).alias("used_bytes"),
        _u64(4_000_000 - iu).alias("inodes_free"),
        pl.lit(4_000_000, pl.UInt64).alias("inodes"),
        _u64(iu).alias("inodes_used"),
    ]


def _fs_cols(prefix: str, offset: int, *, used: pl.Expr, inodes_used: pl.Expr) -> list[pl.Expr]:
    return [
        _time(offset).alias(f"{prefix}_time"),
        *(e.alias(f"{prefix}_{e.meta.output_name()}") for e in _fs_vals(used, inodes_used=inodes_used)),
    ]


def _node_fs(prefix: str, offset: int, used: pl.Expr, *, image: bool = False) -> list[pl.Expr]:
    iu = 160_000 + (pl.col("tick").cast(pl.Int64) % 1000)
    exprs = [
        _time(offset).alias(f"{prefix}_time"),
        _u64(FS_CAP - used).alias(f"{prefix}_available_bytes"),
        pl.lit(FS_CAP, pl.UInt64).alias(f"{prefix}_capacity_bytes"),
        _u64(used if not image else used // 8).alias(f"{prefix}_used_bytes"),
        _u64(3_907_584 - iu).alias(f"{prefix}_inodes_free"),
        pl.lit(3_907_584, pl.UInt64).alias(f"{prefix}_inodes"),
        _u64(iu).alias(f"{prefix}_inodes_used"),
    ]
    return exprs


def generate(
    root: Path, *, nodes: int, pods: int, ticks: int, interval: int, part_ticks: int, every: int, compact: bool
) -> None:
    t0 = time.perf_counter()
    if not compact:  # keep the time-ordered parts at every size (the writer compacts only below 512 MB)
        writer_module.COMPACT_LIMIT_BYTES = -1
    w = RecordingWriter(
        root,
        Manifest(source="bench", options={"interval": f"{interval}s", "generator": "tests/replay/bench_replay.py"}),
    )
    for n in range(nodes):
        w.observe("node", node_object(n), observed=T0 - 120_000_000, node=node_name(n))
        for j in range(pods):
            w.observe("pod", pod_object(n, j), observed=T0 - 60_000_000, node=node_name(n))
    keys = _keys(nodes, pods)
    rows = 0
    for lo in range(0, ticks, part_ticks):
        hi = min(ticks, lo + part_ticks)
        frames = part_frames(lo, hi, nodes=nodes, pods=pods, ticks=ticks, interval=interval, every=every, keys=keys)
        rows += sum(df.height for df in frames.values())
        w.publish_part(frames)
        del frames
        print(f"  ticks {lo}..{hi - 1}: {rows:,} rows, {time.perf_counter() - t0:.0f} s", flush=True)
    w.finalize()
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    print(
        f"generated {root}: {nodes} nodes × {pods} pods × {ticks} ticks, {rows:,} rows, "
        f"{size / 1e9:.2f} GB in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )


# -- measuring ----------------------------------------------------------------------------------------
def _usage() -> tuple[float, float, int, int]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, me.ru_maxrss, kids.ru_maxrss)


def _stop_forkserver() -> None:
    """Reap the forkserver (and through it the pool's workers) so RUSAGE_CHILDREN counts them."""
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)  # type: ignore[attr-defined]
    if stop is not None:
        stop()


def run(root: Path, jobs: int, nodes: list[str] | None, out: Path | None, hard: list[str] | None) -> None:
    from recordings.reader import open_recording
    from replay.fast.parallel import replay_parallel
    from replay.kubelet.config import FlagOverrides
    from replay.settings import SettingsRequest

    wall0 = time.perf_counter()
    cpu0, kcpu0, _, _ = _usage()
    rec = open_recording(root)
    request = SettingsRequest(overrides=FlagOverrides(eviction_hard=tuple(hard))) if hard else SettingsRequest()
    (result,) = replay_parallel(rec, [request], nodes, jobs=jobs)
    if out is not None:
        from replay import results_io

        results_io.write(result, out)
    wall = time.perf_counter() - wall0
    _stop_forkserver()
    cpu1, kcpu1, rss, krss = _usage()
    passes = sum(n.passes for n in result.nodes)
    picked = set(nodes or rec.nodes())
    containers = rec._collect(
        CONTAINER_STATS.name, rec.scan(CONTAINER_STATS.name).filter(pl.col("node").is_in(list(picked))).select(pl.len())
    ).item()
    cpu = (cpu1 - cpu0) + (kcpu1 - kcpu0)
    print(
        f"replay --jobs {jobs}: {len(result.nodes)} nodes, {passes:,} passes, {containers:,} container samples, "
        f"{len(result.evictions)} evictions"
    )
    print(
        f"  wall {wall:.1f} s, CPU {cpu:.1f} s (self {cpu1 - cpu0:.1f} + children {kcpu1 - kcpu0:.1f}), "
        f"peak RSS self {rss / 1024:.0f} MB, largest child {krss / 1024:.0f} MB"
    )
    print(f"  {passes / wall:,.0f} passes/s, {containers / wall:,.0f} container samples/s")
    print(f"  reasons: {dict(sorted(sum_reasons(result).items()))}")


def sum_reasons(result: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in result.nodes:
        for k, v in n.reasons.items():
            out[k] = out.get(k, 0) + v
    return out


EVICTION_COLUMNS: dict[str, tuple[str, ...]] = {
    NODE_STATS.name: (
        "node",
        "tick",
        "memory_time",
        "memory_available_bytes",
        "memory_working_set_bytes",
        "fs_time",
        "fs_available_bytes",
        "fs_capacity_bytes",
        "fs_inodes_free",
        "fs_inodes",
        "imagefs_time",
        "imagefs_available_bytes",
        "imagefs_capacity_bytes",
        "imagefs_inodes_free",
        "imagefs_inodes",
        "containerfs_available_bytes",
        "containerfs_capacity_bytes",
        "containerfs_inodes_free",
        "containerfs_inodes",
        "rlimit_time",
        "rlimit_maxpid",
        "rlimit_curproc",
    ),
    SYSTEM_STATS.name: ("node", "tick", "name", "memory_time", "memory_available_bytes", "memory_working_set_bytes"),
    POD_STATS.name: ("node", "tick", "pod_uid", "memory_working_set_bytes", "ephemeral_used_bytes", "process_count"),
    CONTAINER_STATS.name: (
        "node",
        "tick",
        "pod_uid",
        "name",
        "memory_working_set_bytes",
        "rootfs_used_bytes",
        "logs_used_bytes",
    ),
    VOLUME_STATS.name: ("node", "tick", "pod_uid", "name", "used_bytes"),
}
"""What the eviction logic reads (spec §1.1): signals, ranking inputs and the local-storage checks."""


def floor(root: Path) -> None:
    from recordings.reader import open_recording

    rec = open_recording(root)
    for label, tables in (
        ("node signals only", (NODE_STATS.name, SYSTEM_STATS.name)),
        ("every eviction column", tuple(EVICTION_COLUMNS)),
    ):
        t0, cpu0 = time.perf_counter(), _usage()[0]
        rows = 0
        for name in tables:
            schema = rec.scan(name).collect_schema()
            read = [
                pl.col(c).str.len_bytes().cast(pl.Int64).sum()
                if schema[c] == pl.String
                else pl.col(c).cast(pl.Int64).sum()
                for c in EVICTION_COLUMNS[name]
            ]  # decodes every value
            frame = rec.scan(name).select(EVICTION_COLUMNS[name]).select(pl.len(), *read)
            rows += int(frame.collect(engine="streaming").row(0)[0])
        print(
            f"polars scan floor ({label}): {time.perf_counter() - t0:.1f} s wall, {_usage()[0] - cpu0:.1f} s CPU "
            f"for {rows:,} rows"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("-o", "--out", type=Path, required=True)
    g.add_argument("--nodes", type=int, default=100)
    g.add_argument("--pods", type=int, default=110)
    g.add_argument("--ticks", type=int, default=8640)
    g.add_argument("--interval", type=int, default=10)
    g.add_argument("--part-ticks", type=int, default=360)
    g.add_argument("--pressure-every", type=int, default=20, help="every Nth node has pressure episodes (0: none)")
    g.add_argument("--compact", action="store_true", help="let finalize compact the parts (below 512 MB)")
    r = sub.add_parser("run")
    r.add_argument("recording", type=Path)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--node", action="append")
    r.add_argument("-o", "--out", type=Path)
    r.add_argument("--eviction-hard", action="append", help="what-if hard thresholds (default: the kubelet's)")
    f = sub.add_parser("floor")
    f.add_argument("recording", type=Path)
    args = p.parse_args()
    if args.cmd == "gen":
        generate(
            args.out,
            nodes=args.nodes,
            pods=args.pods,
            ticks=args.ticks,
            interval=args.interval,
            part_ticks=args.part_ticks,
            every=args.pressure_every,
            compact=args.compact,
        )
    elif args.cmd == "run":
        run(args.recording, args.jobs, args.node, args.out, args.eviction_hard)
    else:
        floor(args.recording)


if __name__ == "__main__":
    multiprocessing.set_start_method("forkserver")
    main()
