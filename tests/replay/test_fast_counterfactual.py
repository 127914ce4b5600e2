"""``--counterfactual`` on the fast path: the same answer as the per-tick reference's remove_pods, at the edges too.

The common cases are drawn by the engine == reference property test (test_fast_equivalence.py); here the
uint64/int64 edges of the arithmetic: an available count pushed past 2^64 - 1 (the reference's summary
no longer parses: the same one-line error), past 2^63 (int64 wrap: a threshold met again), available
above capacity (the clamp lowers it), inodes without accounting, a negative ``curproc``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_fast_equivalence import STEP, T0, _iso, assert_same, reference

from kube.errors import InputError
from recordings.format import Manifest
from recordings.reader import open_recording
from recordings.writer import RecordingWriter
from replay import engine
from replay.fast.pod_usage import NodeUsage, adjust, read_usage
from replay.kubelet.config import FlagOverrides
from replay.kubelet.manager import FsTopology
from replay.settings import SettingsRequest

GI = 1 << 30
U64 = (1 << 64) - 1
BIG = st.sampled_from([0, GI, 3 * GI, (1 << 63) - GI, (1 << 63) + GI, U64 - GI, U64])
SMALL = st.sampled_from([0, GI // 2, GI, 2 * GI])


@st.composite
def edge_recordings(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(3, 6))
    pods = []
    for p in range(draw(st.integers(1, 3))):
        pods.append(
            {
                "uid": f"uid-{p}",
                "name": f"p{p}",
                "priority": draw(st.sampled_from([0, 100])),
                "emptydir": draw(st.booleans()),
                "pod_memory": draw(st.booleans()),
                "ws": [draw(st.one_of(SMALL, SMALL, BIG)) for _ in range(n)],
                "containers": draw(st.integers(1, 2)),
                "disk": [draw(st.one_of(SMALL, SMALL, BIG)) for _ in range(n)],
                "procs": draw(st.sampled_from([0, 3, 3, 1 << 62, U64])),
                "from": draw(st.integers(0, 1)),
                "until": draw(st.sampled_from([None, n - 1])),
            }
        )
    return {
        "ticks": n,
        "pods": pods,
        "mem": [draw(st.one_of(SMALL, SMALL, SMALL, BIG)) for _ in range(n)],
        "mem_ws": [draw(st.one_of(SMALL, BIG)) for _ in range(n)],
        "fs_avail": [draw(st.sampled_from([GI, 5 * GI, 5 * GI, 150 * GI, U64 - GI])) for _ in range(n)],
        "fs_cap": draw(st.sampled_from([100 * GI, 100 * GI, None])),
        "inodes_free": [draw(st.sampled_from([5, 1000, 1000, (1 << 63) - 2, U64])) for _ in range(n)],
        "inodes": draw(st.sampled_from([10_000, 1 << 63, None])),
        "curproc": [draw(st.sampled_from([-5, 0, 900, (1 << 63) - 1])) for _ in range(n)],
        "imagefs": draw(st.sampled_from(["shared", "dedicated"])),
    }


def _summary(spec: dict[str, Any], i: int, t: str) -> dict[str, Any]:
    fs = {
        "time": t,
        "availableBytes": spec["fs_avail"][i],
        "usedBytes": 7,
        "inodesFree": spec["inodes_free"][i],
        "inodesUsed": 3,
    }
    if spec["fs_cap"] is not None:
        fs["capacityBytes"] = spec["fs_cap"]
    if spec["inodes"] is not None:
        fs["inodes"] = spec["inodes"]
    image = dict(fs) if spec["imagefs"] == "shared" else dict(fs, capacityBytes=300 * GI, availableBytes=200 * GI)
    node = {
        "nodeName": "n",
        "memory": {
            "time": t,
            "availableBytes": spec["mem"][i],
            "workingSetBytes": spec["mem_ws"][i],
            "usageBytes": 5,
            "rssBytes": U64,
        },
        "fs": fs,
        "runtime": {"imageFs": image},
        "rlimit": {"time": t, "maxpid": 1000, "curproc": spec["curproc"][i]},
        "systemContainers": [
            {
                "name": "pods",
                "memory": {"time": t, "availableBytes": spec["mem"][i], "workingSetBytes": spec["mem_ws"][i]},
            }
        ],
    }
    pods = []
    for p in spec["pods"]:
        if i < p["from"] or (p["until"] is not None and i > p["until"]):
            continue
        ws, disk = p["ws"][i], p["disk"][i]
        entry: dict[str, Any] = {
            "podRef": {"name": p["name"], "namespace": "default", "uid": p["uid"]},
            "process_stats": {"process_count": p["procs"]},
            "containers": [
                {
                    "name": f"c{c}",
                    "memory": {"time": t, "workingSetBytes": ws, "usageBytes": ws},
                    "rootfs": {"time": t, "usedBytes": disk, "inodesUsed": 2},
                    "logs": {"time": t, "usedBytes": disk // 3, "inodesUsed": 1},
                }
                for c in range(p["containers"])
            ],
            "volume": [{"name": "scratch", "time": t, "usedBytes": disk, "inodesUsed": 4}],
        }
        if p["pod_memory"]:
            entry["memory"] = {"time": t, "workingSetBytes": ws, "usageBytes": 1, "rssBytes": 2}
        pods.append(entry)
    return {"node": node, "pods": pods}


def memory_only(n: int, pods: list[dict[str, Any]], mem: list[int]) -> dict[str, Any]:
    """A node of ``n`` ticks pressed on memory only (``mem`` available per tick): disk, inodes and PIDs plenty."""
    return {
        "ticks": n,
        "pods": pods,
        "mem": mem,
        "mem_ws": [6 * GI] * n,
        "fs_avail": [50 * GI] * n,
        "fs_cap": 100 * GI,
        "inodes_free": [1000] * n,
        "inodes": 10_000,
        "curproc": [900] * n,
        "imagefs": "shared",
    }


def _write(root: Path, spec: dict[str, Any]) -> Path:
    writer = RecordingWriter(root, Manifest(source="import"))
    for i in range(spec["ticks"]):
        at = T0 + i * STEP
        if i == 0:
            for p in spec["pods"]:
                volumes = [{"name": "scratch", "emptyDir": {}}] if p["emptydir"] else []
                writer.observe(
                    "pod",
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "metadata": {"name": p["name"], "namespace": "default", "uid": p["uid"]},
                        "spec": {
                            "nodeName": "n",
                            "priority": p["priority"],
                            "containers": [{"name": "c0"}],
                            "volumes": volumes,
                        },
                        "status": {"phase": "Running"},
                    },
                    observed=at - 1,
                    node="n",
                )
        tick = writer.begin_tick(at)
        tick.add_summary("n", _summary(spec, i, _iso(at)), scraped=at)
        writer.commit(tick)
    writer.finalize()
    return root


def _outcome(run: Any) -> tuple[str, Any]:
    try:
        return "ok", run()
    except InputError as err:
        return "error", str(err)


@settings(
    max_examples=60,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    spec=edge_recordings(),
    hard=st.sampled_from(
        [
            ("memory.available<1Gi",),
            ("memory.available<1Gi", "nodefs.available<10%", "pid.available<10%"),
            ("allocatableMemory.available<2Gi", "nodefs.inodesFree<10%", "imagefs.available<20%"),
        ]
    ),
    chunk=st.sampled_from([2, 2048]),
)
def test_counterfactual_edges_give_the_reference_answer_or_its_error(
    tmp_path_factory: Any, spec: dict[str, Any], hard: tuple[str, ...], chunk: int
) -> None:
    path = _write(tmp_path_factory.mktemp("rec") / "rec", spec)
    request = SettingsRequest(kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=hard), counterfactual=True)
    expected = _outcome(lambda: reference(path, request))
    got = _outcome(lambda: engine.replay(open_recording(path), [request], chunk_ticks=chunk)[0])
    assert got[0] == expected[0], (got, expected)
    if expected[0] == "error":
        assert got[1] == expected[1]
    else:
        assert_same(expected[1], got[1])


def test_a_pod_evicted_at_one_pass_is_off_every_later_pass_of_the_fast_path(tmp_path: Path) -> None:
    """The open-loop replay evicts both pods; with the first one's memory back the node is no longer pressed."""
    n = 6
    spec = memory_only(
        n,
        [
            {
                "uid": "big",
                "name": "big",
                "priority": 0,
                "emptydir": True,
                "pod_memory": True,
                "ws": [2 * GI] * n,
                "containers": 1,
                "disk": [GI] * n,
                "procs": 3,
                "from": 0,
                "until": None,
            },
            {
                "uid": "small",
                "name": "small",
                "priority": 0,
                "emptydir": False,
                "pod_memory": False,
                "ws": [GI // 2] * n,
                "containers": 2,
                "disk": [GI] * n,
                "procs": 3,
                "from": 0,
                "until": None,
            },
        ],
        [GI // 2] * n,
    )
    path = _write(tmp_path / "rec", spec)
    closed = SettingsRequest(
        kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=("memory.available<1Gi",)), counterfactual=True
    )
    opened = dataclasses.replace(closed, counterfactual=False)
    fast_closed, fast_open = engine.replay(open_recording(path), [closed, opened])
    assert len(fast_open.evictions) == 2
    assert len(fast_closed.evictions) == 1
    assert_same(reference(path, closed), fast_closed)
    memory = (
        fast_closed.signals.collect().filter(pl.col("signal") == "memory.available").sort("tick")["available"].to_list()
    )
    assert memory[0] == GI // 2 and set(memory[1:]) == {GI // 2 + 2 * GI}  # from the pass after the eviction


def test_one_pods_usage_is_summed_per_tick_as_remove_pods_reads_its_entry(tmp_path: Path) -> None:
    n = 3
    spec = {
        "ticks": n,
        "pods": [
            {
                "uid": "a",
                "name": "a",
                "priority": 0,
                "emptydir": True,
                "pod_memory": False,
                "ws": [GI, 2 * GI, U64],
                "containers": 2,
                "disk": [GI, GI, 0],
                "procs": 4,
                "from": 0,
                "until": None,
            }
        ],
        "mem": [GI] * n,
        "mem_ws": [GI] * n,
        "fs_avail": [GI] * n,
        "fs_cap": 100 * GI,
        "inodes_free": [5] * n,
        "inodes": 10_000,
        "curproc": [-5] * n,
        "imagefs": "shared",
    }
    rec = open_recording(_write(tmp_path / "rec", spec))
    usage = read_usage(rec, "n", "a", 0, ("scratch",))
    assert usage["tick"].to_list() == [1, 2]
    assert usage["ws"].to_list() == [4 * GI, 2 * U64]  # two containers' sum, past 2^64
    assert usage["nb"].to_list() == [2 * (GI // 3) + GI, 0] and usage["rb"].to_list() == [2 * GI, 0]
    node_rows = pl.DataFrame(
        {
            "tick": [1, 2],
            "memory_available_bytes": [GI, GI],
            "memory_working_set_bytes": [GI, GI],
            "rlimit_curproc": [-5, -5],
        },
        schema={
            "tick": pl.UInt32,
            "memory_available_bytes": pl.UInt64,
            "memory_working_set_bytes": pl.UInt64,
            "rlimit_curproc": pl.Int64,
        },
    )
    for prefix in ("fs", "imagefs", "containerfs"):
        node_rows = node_rows.with_columns(
            pl.lit(GI, pl.UInt64).alias(f"{prefix}_available_bytes"),
            pl.lit(None if prefix == "containerfs" else 100 * GI, pl.UInt64).alias(f"{prefix}_capacity_bytes"),
            pl.lit(5, pl.UInt64).alias(f"{prefix}_inodes_free"),
            pl.lit(10_000, pl.UInt64).alias(f"{prefix}_inodes"),
        )
    pods_rows = pl.DataFrame(
        {"tick": [1], "container": [0], "memory_available_bytes": [GI], "memory_working_set_bytes": [GI]},
        schema={
            "tick": pl.UInt32,
            "container": pl.UInt32,
            "memory_available_bytes": pl.UInt64,
            "memory_working_set_bytes": pl.UInt64,
        },
    )
    nodes, pods, over = adjust(node_rows, pods_rows, usage, FsTopology())
    assert over == [2]  # memory available GI + 2 * (2^64 - 1) does not fit: the summary does not parse
    assert nodes["memory_available_bytes"].to_list()[0] == 5 * GI
    assert nodes["memory_working_set_bytes"].to_list() == [0, 0]
    assert nodes["rlimit_curproc"].to_list() == [0, 0]  # max(0, -5 - 4): a removal clamps a negative count
    assert nodes["fs_available_bytes"].to_list() == [GI + 3 * GI + 2 * (GI // 3), GI]
    assert nodes["containerfs_available_bytes"].to_list()[1] == GI  # nothing freed at tick 2 but the clamps
    assert pods["memory_available_bytes"].to_list() == [5 * GI]


@settings(
    max_examples=40,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    spec=edge_recordings(),
    asks=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6), st.booleans()), min_size=1, max_size=6),
    lo=st.sampled_from([None, 0, 2]),
)
def test_a_nodes_rows_read_once_give_each_pods_own_read(
    tmp_path_factory: Any, spec: dict[str, Any], asks: list[tuple[int, int, bool]], lo: int | None
) -> None:
    """NodeUsage (the node's rows read at the first removal, then each pod's from memory) gives read_usage's
    answer for any pod, tick and emptyDir set, within its tick range; at most one more read, when a removal
    asks for ticks before the first one's."""
    rec = open_recording(_write(tmp_path_factory.mktemp("rec") / "rec", spec))
    hi = None if lo is None else lo + 3
    usage = NodeUsage(rec, "n", lo, hi)
    for p, after, with_dirs in asks:
        dirs = ("scratch",) if with_dirs else ()
        want = read_usage(rec, "n", f"uid-{p}", after, dirs)
        if lo is not None and hi is not None:
            want = want.filter(pl.col("tick").is_between(lo, hi - 1))
        assert usage.usage(f"uid-{p}", after, dirs).equals(want)
    assert usage.reads == (1 if all(after >= asks[0][1] for _, after, _ in asks) else 2)


def test_the_requests_of_a_node_read_its_pods_rows_once(tmp_path: Path, monkeypatch: Any) -> None:
    """Several counterfactual what-ifs evicting on one node: the node's pods' rows are read at the first
    eviction (again, once, for one that evicts earlier), not once per evicted pod and request."""
    n = 6
    pods = [
        {
            "uid": f"u{p}",
            "name": f"p{p}",
            "priority": 0,
            "emptydir": p % 2 == 0,
            "pod_memory": p % 2 == 1,
            "ws": [(p + 1) * GI // 2] * n,
            "containers": 1 + p % 2,
            "disk": [GI] * n,
            "procs": 3,
            "from": 0,
            "until": None,
        }
        for p in range(4)
    ]
    spec = memory_only(n, pods, [GI // 2, GI // 2, GI // 4, GI // 4, GI // 8, GI // 8])
    path = _write(tmp_path / "rec", spec)
    reads: list[int] = []
    load = NodeUsage._load

    def counted(self: NodeUsage, after: int) -> None:
        reads.append(after)
        load(self, after)

    monkeypatch.setattr(NodeUsage, "_load", counted)
    requests = [
        SettingsRequest(kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=(h,)), counterfactual=True)
        for h in ("memory.available<300Mi", "memory.available<3Gi", "memory.available<5Gi")
    ]
    results = engine.replay(open_recording(path), requests)
    assert [len(r.evictions) for r in results] == [1, 2, 4]  # 4 pods: the 5Gi what-if evicts each
    assert results[0].evictions[0].tick > results[1].evictions[0].tick
    assert len(reads) == 2 and reads[1] == -1  # the second request evicts before the first: the whole range
    for request, result in zip(requests, results, strict=True):
        assert_same(reference(path, request), result)
