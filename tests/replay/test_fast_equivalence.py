"""The columnar fast path gives the per-tick reference's ReplayResult, field for field, frames included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from recordings.format import Manifest
from recordings.reader import open_recording
from recordings.writer import RecordingWriter
from replay import engine
from replay.collect import collect
from replay.kubelet.config import FlagOverrides
from replay.kubelet.manager import FsTopology
from replay.reference import Replay
from replay.settings import SettingsRequest

GI = 1 << 30
T0 = 1_716_200_000_000_000  # µs
STEP = 10_000_000
USAGE = st.sampled_from([0, GI // 2, GI, GI + 1, 2 * GI, 3 * GI])


def _iso(us: int) -> str:
    from recordings.summary_codec import format_time

    return format_time(us)


@st.composite
def pods(draw: Any, node: str, n_ticks: int) -> list[dict[str, Any]]:
    out = []
    for p in range(draw(st.integers(1, 4))):
        limits: dict[str, str] = {}
        requests: dict[str, str] = {}
        if draw(st.booleans()):
            requests["memory"] = draw(st.sampled_from(["256Mi", "1Gi"]))
        if draw(st.booleans()):
            limits["ephemeral-storage"] = draw(st.sampled_from(["1Gi", "2Gi"]))
        volumes = []
        if draw(st.booleans()):
            volumes.append({"name": "scratch", "emptyDir": {"sizeLimit": draw(st.sampled_from(["512Mi", "1Gi"]))}})
        start = draw(st.integers(0, n_ticks - 1))
        end = draw(st.one_of(st.none(), st.integers(start, n_ticks)))
        out.append(
            {
                "obj": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{node}-p{p}",
                        "namespace": "default",
                        "uid": f"{node}-uid-{p}",
                        "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": True}],
                    },
                    "spec": {
                        "nodeName": node,
                        "priority": draw(st.sampled_from([0, 0, 100, 2_000_001_000])),
                        "terminationGracePeriodSeconds": 30,
                        "containers": [{"name": "c", "resources": {"requests": requests, "limits": limits}}],
                        "volumes": volumes,
                    },
                    "status": {"phase": "Running"},
                },
                "start": start,
                "end": end,
                "late": draw(st.sampled_from([0, 0, 0, 1, 2])),
                "usage": [draw(USAGE) for _ in range(n_ticks)],
                "disk": [draw(USAGE) for _ in range(n_ticks)],
                "pod_memory": draw(st.sampled_from([True, True, False])),  # else the containers' sum
                "processes": draw(st.sampled_from([0, 2, 60])),
            }
        )
    return out


@st.composite
def recordings(draw: Any) -> dict[str, Any]:
    n_ticks = draw(st.integers(3, 10))
    nodes = {}
    for n in range(draw(st.integers(1, 2))):
        name = f"node-{n}"
        nodes[name] = {
            "pods": draw(pods(name, n_ticks)),
            "mem": [draw(st.sampled_from([GI // 2, GI - 1, GI, GI + 1, 2 * GI, 4 * GI])) for _ in range(n_ticks)],
            "fs": [draw(st.sampled_from([5, 9, 10, 11, 30, 80])) for _ in range(n_ticks)],
            "pids": [draw(st.sampled_from([100, 950, 1000])) for _ in range(n_ticks)],
            "gap": [i > 0 and draw(st.integers(0, 9)) == 0 for i in range(n_ticks)],
            "stale": [draw(st.integers(0, 5)) == 0 for _ in range(n_ticks)],
            "imagefs": draw(st.booleans()),
        }
    return {"ticks": n_ticks, "nodes": nodes}


def _summary(node: str, spec: dict[str, Any], i: int, when: int) -> dict[str, Any]:
    t = _iso(when)
    fs_cap = 100 * GI
    fs = {
        "time": t,
        "availableBytes": spec["fs"][i] * GI,
        "capacityBytes": fs_cap,
        "usedBytes": 1,
        "inodesFree": 10_000 * spec["fs"][i],
        "inodes": 1_000_000,
        "inodesUsed": 5,
    }
    node_obj: dict[str, Any] = {
        "nodeName": node,
        "memory": {"time": t, "availableBytes": spec["mem"][i], "workingSetBytes": 8 * GI - spec["mem"][i]},
        "fs": fs,
        "runtime": {"imageFs": dict(fs, capacityBytes=fs_cap * 2) if spec["imagefs"] else dict(fs)},
        "rlimit": {"time": t, "maxpid": 1000, "curproc": spec["pids"][i]},
        "systemContainers": [
            {
                "name": "pods",
                "memory": {"time": t, "availableBytes": spec["mem"][i], "workingSetBytes": 7 * GI - spec["mem"][i]},
            }
        ],
    }
    pods = []
    for p in spec["pods"]:
        meta = p["obj"]["metadata"]
        if i < p["start"] or (p["end"] is not None and i >= p["end"]):
            continue
        used = p["usage"][i]
        disk = p["disk"][i]
        pods.append(
            {
                "podRef": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
                **({"memory": {"time": t, "workingSetBytes": used}} if p.get("pod_memory", True) else {}),
                "ephemeral-storage": {"time": t, "usedBytes": disk, "inodesUsed": 3},
                "process_stats": {"process_count": p.get("processes", 2)},
                "containers": [
                    {
                        "name": "c",
                        "memory": {"time": t, "workingSetBytes": used},
                        "rootfs": {"time": t, "usedBytes": disk // 2},
                        "logs": {"time": t, "usedBytes": disk // 4},
                    }
                ],
                "volume": [{"name": "scratch", "time": t, "usedBytes": disk // 2}],
            }
        )
    return {"node": node_obj, "pods": pods}


def write(root: Path, data: dict[str, Any]) -> Path:
    writer = RecordingWriter(root, Manifest(source="import"))
    last_time: dict[str, int] = {}
    for i in range(data["ticks"]):
        at = T0 + i * STEP
        for node, spec in data["nodes"].items():
            for p in spec["pods"]:
                if p["start"] + p.get("late", 0) == i:  # late: stats recorded before the object was seen
                    writer.observe("pod", p["obj"], observed=at - 1, node=node)
                if p["end"] == i:
                    writer.observe("pod", p["obj"], observed=at - 1, node=node, deleted=True)
        tick = writer.begin_tick(at)
        for node, spec in data["nodes"].items():
            if spec["gap"][i]:
                tick.add_gap(node, "timeout")
                continue
            when = last_time.get(node, at) if spec["stale"][i] else at
            last_time[node] = when
            tick.add_summary(node, _summary(node, spec, i, when), scraped=at)
        writer.commit(tick)
    writer.finalize()
    return root


@st.composite
def requests(draw: Any) -> SettingsRequest:
    soft = draw(st.sampled_from([(), ("memory.available<2Gi",), ("memory.available<2Gi", "nodefs.available<11%")]))
    grace = tuple(f"{t.split('<')[0]}={draw(st.sampled_from(['0s', '15s', '25s']))}" for t in soft)
    return SettingsRequest(
        kubelet_version=draw(st.sampled_from(["1.30", "1.32"])),
        overrides=FlagOverrides(
            eviction_hard=draw(
                st.sampled_from(
                    [
                        ("memory.available<1Gi",),
                        ("memory.available<1Gi", "nodefs.available<10%"),
                        ("memory.available<12.5%", "pid.available<10%", "imagefs.available<10%"),
                        (
                            "memory.available<500Mi",
                            "allocatableMemory.available<1Gi",
                            "nodefs.inodesFree<10%",
                            "imagefs.available<11%",
                        ),
                    ]
                )
            ),
            eviction_soft=soft,
            eviction_soft_grace_period=grace,
            eviction_minimum_reclaim=draw(st.sampled_from([(), ("memory.available=1Gi",), ("memory.available=5%",)])),
            eviction_pressure_transition_period=draw(st.sampled_from([None, "0s", "15s", "1m"])),
        ),
        topology=draw(
            st.sampled_from(
                [
                    None,
                    None,
                    FsTopology(dedicated_image_fs=True),
                    FsTopology(dedicated_image_fs=True, split_container_image_fs=True),
                ]
            )
        ),
        counterfactual=draw(st.booleans()),
    )


def reference(path: Path, request: SettingsRequest) -> Any:
    replay = Replay(open_recording(path), request)
    return collect(replay, replay.passes())


def assert_same(a: Any, b: Any) -> None:
    assert a.nodes == b.nodes
    assert a.evictions == b.evictions
    assert a.signals.collect().equals(b.signals.collect(), null_equal=True)
    assert a.conditions.equals(b.conditions, null_equal=True)
    assert a.same_as(b)


@settings(
    max_examples=25,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=recordings(), request=requests(), chunk=st.sampled_from([2, 3, 2048]), window=st.sampled_from([1, 2, 256]))
def test_fast_path_equals_the_reference_field_for_field(
    tmp_path_factory: Any, data: dict[str, Any], request: SettingsRequest, chunk: int, window: int
) -> None:
    from replay.fast import columns

    path = write(tmp_path_factory.mktemp("rec") / "rec", data)
    saved, columns.SUMMARY_WINDOW = columns.SUMMARY_WINDOW, window  # summaries read `window` ticks at a time
    try:
        (fast,) = engine.replay(open_recording(path), [request], chunk_ticks=chunk)
    finally:
        columns.SUMMARY_WINDOW = saved
    assert_same(reference(path, request), fast)


def test_several_what_ifs_read_once_give_each_reference_result(tmp_path: Path) -> None:
    spec = {
        "ticks": 6,
        "nodes": {
            "node-0": {
                "pods": [
                    {
                        "obj": {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "metadata": {"name": "a", "namespace": "default", "uid": "ua"},
                            "spec": {"nodeName": "node-0", "containers": [{"name": "c"}]},
                            "status": {"phase": "Running"},
                        },
                        "start": 0,
                        "end": None,
                        "usage": [GI] * 6,
                        "disk": [GI] * 6,
                    }
                ],
                "mem": [4 * GI, 2 * GI, GI - 1, GI // 2, 2 * GI, 4 * GI],
                "fs": [80] * 6,
                "pids": [100] * 6,
                "gap": [False, False, True, False, False, False],
                "stale": [False] * 6,
                "imagefs": False,
            }
        },
    }
    path = write(tmp_path / "rec", spec)
    requests = [
        SettingsRequest(kubelet_version="1.32", overrides=FlagOverrides(eviction_hard=(h,)), label=h)
        for h in ("memory.available<1Gi", "memory.available<3Gi", "memory.available<100Mi")
    ]
    results = engine.replay(open_recording(path), requests)
    for request, result in zip(requests, results, strict=True):
        assert_same(reference(path, request), result)
    assert results[1].evictions[0].tick < results[0].evictions[0].tick
    assert not results[2].evictions


U64 = st.one_of(st.none(), st.integers(0, 2**64 - 1), st.sampled_from([0, 2**63 - 1, 2**63, 2**64 - 1, GI, 2 * GI]))


@settings(max_examples=200, deadline=None)
@given(logs=st.lists(U64, min_size=1, max_size=20), least=st.integers(-(2**63), 2**63 - 1), data=st.data())
def test_row_group_pruning_keeps_every_row_a_storage_check_needs(logs: list[int | None], least: int, data: Any) -> None:
    import polars as pl

    from replay.fast.columns import _prune

    rootfs = data.draw(st.lists(U64, min_size=len(logs), max_size=len(logs)))
    df = pl.DataFrame({"logs": logs, "rootfs": rootfs}, schema={"logs": pl.UInt64, "rootfs": pl.UInt64})

    def signed(c: str) -> pl.Expr:
        return pl.col(c).reinterpret(signed=True).fill_null(0)

    exact = df.with_row_index().filter(signed("logs") + signed("rootfs") > least)
    assert exact.equals(
        df.with_row_index().filter(_prune(("logs", "rootfs"), least), signed("logs") + signed("rootfs") > least)
    )
    one = df.with_row_index().filter(signed("logs") > least)
    assert one.equals(df.with_row_index().filter(_prune(("logs",), least), signed("logs") > least))


@settings(
    max_examples=15,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=recordings(), variants=st.lists(requests(), min_size=2, max_size=3), chunk=st.sampled_from([3, 2048]))
def test_variants_at_once_each_equal_their_reference(
    tmp_path_factory: Any, data: dict[str, Any], variants: list[SettingsRequest], chunk: int
) -> None:
    path = write(tmp_path_factory.mktemp("rec") / "rec", data)
    results = engine.replay(open_recording(path), variants, chunk_ticks=chunk)
    for request, result in zip(variants, results, strict=True):
        assert_same(reference(path, request), result)


def _reference_moment(path: Path, request: SettingsRequest, node: str, moment: engine.Moment) -> Any:
    """``explain --at`` on the reference: the node's passes up to the moment, then a fresh run stopped right
    at that pass (a generator that looks one pass ahead would leave the manager one pass later)."""
    from recordings.reader import to_micros
    from replay.moment import explanation_of

    last = None
    for p in Replay(open_recording(path), request, [node]).runs[0].passes(until_tick=moment.tick):
        if moment.at is not None and to_micros(p.time) > to_micros(moment.at):
            break
        last = p
        if moment.first_eviction and p.result.evictions:
            break
    if last is None or (moment.first_eviction and not last.result.evictions):
        return None
    run = Replay(open_recording(path), request, [node]).runs[0]
    (at,) = [p for p in run.passes(until_tick=last.tick) if p.tick == last.tick]
    return explanation_of(run, at, moment)


@settings(
    max_examples=30,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    data=recordings(),
    request=requests(),
    where=st.one_of(
        st.integers(0, 9).map(lambda t: engine.Moment(tick=t)),
        st.integers(0, 9).map(lambda t: engine.Moment(at=_dt(T0 + t * STEP + STEP // 2))),
        st.just(engine.Moment(first_eviction=True)),
    ),
)
def test_a_moment_is_the_reference_pass_with_its_manager_state(
    tmp_path_factory: Any, data: dict[str, Any], request: SettingsRequest, where: engine.Moment
) -> None:
    from kube.errors import InputError
    from replay.moment import explanation_of
    from replay.report import explanation_json

    path = write(tmp_path_factory.mktemp("rec") / "rec", data)
    node = sorted(data["nodes"])[-1]
    expected = _reference_moment(path, request, node, where)
    if where.tick is not None and where.tick >= data["ticks"]:
        return
    try:
        found = engine.moment(open_recording(path), request, node, where)
    except InputError:
        assert expected is None
        return
    assert expected is not None
    got = explanation_of(found.run, found.p, where)
    assert json.loads(explanation_json(got)) == json.loads(explanation_json(expected))


def _dt(us: int) -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)
