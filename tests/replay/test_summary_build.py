"""SummaryAt.built: the pods' stats built straight from a window's columns equal the reference's
parse_summary(summary_codec.decode(rows)) — whole, or the part a pass reads — whatever the recorded shape:
absent groups and fields, empty names, several containers and volumes, rows in storage order, and where
the direct build cannot be exact (a pod recorded twice at a tick, an entry without its pod, a time the
Summary API text would not parse back) the same answer or the same error as the reference."""

from __future__ import annotations

from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recordings.schema import CONTAINER_STATS, NODE_STATS, POD_STATS, SERIES, SYSTEM_STATS, VOLUME_STATS
from recordings.summary_codec import decode, empty_columns, encode, format_time
from recordings.writer import frame_from_columns
from replay.fast.columns import FILESYSTEMS, MEMORY, NODE_PART, PROCESSES, WHOLE, SummaryAt, SummaryWindow
from replay.kubelet.api import ContainerStats, FsStats, MemoryStats, PodStats, Summary, VolumeStats, parse_summary

T0 = 1_716_200_000_000_000
TIMES = st.sampled_from([T0, T0 + 1, T0 + 500_000, T0 + 10_000_000])
U64 = st.sampled_from([0, 1, 2**30, 2**63, 2**64 - 1])


def _maybe(draw: Any, fields: dict[str, Any]) -> dict[str, Any]:
    return {k: draw(v) for k, v in fields.items() if draw(st.booleans())}


def _memory(draw: Any, time: int) -> dict[str, Any]:
    out = _maybe(draw, {"availableBytes": U64, "usageBytes": U64, "workingSetBytes": U64, "rssBytes": U64})
    if draw(st.booleans()):
        out["time"] = format_time(time)
    return out


def _fs(draw: Any, time: int) -> dict[str, Any]:
    out = _maybe(
        draw,
        {
            "availableBytes": U64,
            "capacityBytes": U64,
            "usedBytes": U64,
            "inodesFree": U64,
            "inodes": U64,
            "inodesUsed": U64,
        },
    )
    if draw(st.booleans()):
        out["time"] = format_time(time)
    return out


@st.composite
def summaries(draw: Any, time: int) -> dict[str, Any]:
    node = {
        "nodeName": "n",
        "memory": {"time": format_time(time), "availableBytes": 1, "workingSetBytes": 2},
        "systemContainers": [{"name": "pods", "memory": _memory(draw, time)}, {"name": "kubelet"}],
    }
    pods = []
    for p in range(draw(st.integers(0, 5))):
        pod: dict[str, Any] = {}
        if draw(st.integers(0, 5)):
            pod["podRef"] = _maybe(
                draw,
                {
                    "name": st.sampled_from([f"p{p}", ""]),
                    "namespace": st.just("ns"),
                    "uid": st.sampled_from([f"u{p}", f"u{p}", "", "u0"]),
                },
            )
        if draw(st.booleans()):
            pod["memory"] = _memory(draw, time)
        if draw(st.booleans()):
            pod["ephemeral-storage"] = _fs(draw, time)
        if draw(st.booleans()):
            pod["process_stats"] = _maybe(draw, {"process_count": U64})
        if draw(st.integers(0, 3)):
            pod["containers"] = [
                {
                    k: v
                    for k, v in {
                        "name": draw(st.sampled_from(["c", "d", ""])) if draw(st.integers(0, 4)) else None,
                        "memory": _memory(draw, time) if draw(st.booleans()) else None,
                        "rootfs": _fs(draw, time) if draw(st.booleans()) else None,
                        "logs": _fs(draw, time) if draw(st.booleans()) else None,
                    }.items()
                    if v is not None
                }
                for _ in range(draw(st.integers(0, 3)))
            ]
        if draw(st.booleans()):
            pod["volume"] = [
                dict(_fs(draw, time), **({"name": f"v{v}"} if draw(st.integers(0, 4)) else {}))
                for v in range(draw(st.integers(0, 2)))
            ]
        pods.append(pod)
    return {"node": node, "pods": pods}


class FakeNode:
    """The two methods of NodeColumns a SummaryWindow reads through."""

    def __init__(self, frames: dict[str, pl.DataFrame]) -> None:
        self.frames = frames

    def _scan(self, table: str, ticks: tuple[int, int] | None = None) -> pl.LazyFrame:
        return self.frames[table].lazy()

    def _collect(self, table: str, frame: pl.LazyFrame) -> pl.DataFrame:
        return frame.collect()


def _frames(docs: list[dict[str, Any]], data: Any) -> dict[str, pl.DataFrame]:
    into = {t.name: empty_columns(t) for t in SERIES}
    for tick, doc in enumerate(docs):
        encode(doc, tick=tick, node="n", scraped=T0, into=into)
    frames = {t.name: frame_from_columns(t.name, into[t.name]) for t in SERIES}
    for name in (POD_STATS.name, CONTAINER_STATS.name, VOLUME_STATS.name, SYSTEM_STATS.name):
        df = frames[name]
        if df.height and data.draw(st.booleans()):  # storage order: sorted by UID (or name), then tick
            df = df.sample(fraction=1.0, shuffle=True, seed=data.draw(st.integers(0, 99)))
        frames[name] = df
    return frames


def _reference(frames: dict[str, pl.DataFrame], tick: int) -> Summary:
    def rows(name: str) -> list[dict[str, Any]]:
        return frames[name].filter(pl.col("tick") == tick).to_dicts()

    return parse_summary(decode(rows(NODE_STATS.name)[0], *(rows(t.name) for t in SERIES[1:])), source="s")


def _outcome(call: Any) -> Any:
    try:
        return call()
    except Exception as exc:  # the same error either way is the point
        return (type(exc).__name__, str(exc))


def _lean_memory(m: MemoryStats | None) -> MemoryStats | None:
    return None if m is None else MemoryStats(working_set_bytes=m.working_set_bytes)


def _lean_fs(f: FsStats | None) -> FsStats | None:
    return None if f is None else FsStats(used_bytes=f.used_bytes, inodes_used=f.inodes_used)


def _part(pod: PodStats, parts: int) -> PodStats:
    """What a lean build keeps of the reference's PodStats: what ranking and the message read."""
    memory, files = parts & MEMORY, parts & FILESYSTEMS
    containers = (
        ()
        if not (memory or files)
        else tuple(
            ContainerStats(
                c.name,
                _lean_memory(c.memory) if memory else None,
                _lean_fs(c.rootfs) if files else None,
                _lean_fs(c.logs) if files else None,
            )
            for c in pod.containers
        )
    )
    volumes = tuple(VolumeStats(v.name, _lean_fs(v.fs) or FsStats()) for v in pod.volumes) if files else ()
    return PodStats(
        pod.pod_ref,
        containers,
        _lean_memory(pod.memory) if memory else None,
        volumes,
        None,
        pod.process_stats if parts & PROCESSES else None,
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), times=st.lists(TIMES, min_size=1, max_size=4))
def test_built_pods_equal_the_reference_parse_of_the_decoded_summary(data: Any, times: list[int]) -> None:
    docs = [data.draw(summaries(t)) for t in times]
    frames = _frames(docs, data)
    window = SummaryWindow(FakeNode(frames), list(range(len(docs))))  # type: ignore[arg-type]
    for tick in range(len(docs)):
        expected = _reference(frames, tick)
        at = SummaryAt(window, tick)
        assert at.built(WHOLE, source="s") == expected
        assert at.parsed(whole=True, source="s") == expected
        assert at.built(NODE_PART, source="s") == Summary(expected.node, ())
        for parts in (0, MEMORY, PROCESSES, FILESYSTEMS, MEMORY | PROCESSES):
            assert at.built(parts, source="s") == Summary(expected.node, tuple(_part(p, parts) for p in expected.pods))
            uids = data.draw(st.frozensets(st.sampled_from(["u0", "u1", "u2", "u3", ""])))  # a pass's candidates
            assert at.built(parts, source="s", uids=uids) == Summary(
                expected.node,
                tuple(_part(p, parts) if p.pod_ref.uid in uids else PodStats(p.pod_ref) for p in expected.pods),
            )
        assert at.built(WHOLE, source="s", uids=frozenset()) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), how=st.sampled_from(["duplicate pod", "orphan container", "orphan volume", "year 999"]))
def test_where_the_build_cannot_be_exact_the_reference_answers(data: Any, how: str) -> None:
    docs = [data.draw(summaries(T0)) for _ in range(2)]
    for doc in docs:
        doc["pods"].append(
            {
                "podRef": {"uid": "x"},
                "containers": [{"name": "c"}],
                "volume": [{"name": "v"}],
                "memory": {"time": format_time(T0)},
            }
        )
    frames = _frames(docs, data)
    pods = frames[POD_STATS.name]
    last = pods.filter(pl.col("pod_uid") == "x")
    if how == "duplicate pod":
        frames[POD_STATS.name] = pl.concat([pods, last.with_columns(pl.lit("dup").alias("name"))])
    elif how.startswith("orphan"):
        frames[POD_STATS.name] = pods.filter(pl.col("pod_uid") != "x")
        if how == "orphan volume":
            orphaned = frames[CONTAINER_STATS.name]
            frames[CONTAINER_STATS.name] = orphaned.filter(pl.col("pod_uid") != "x")
    else:
        early = pl.lit(-31_000_000_000_000_000, pl.Int64).cast(pl.Datetime("us", "UTC"))  # year 987
        frames[POD_STATS.name] = pods.with_columns(
            pl.when(pl.col("pod_uid") == "x").then(early).otherwise(pl.col("memory_time")).alias("memory_time")
        )
    window = SummaryWindow(FakeNode(frames), [0, 1])  # type: ignore[arg-type]
    for tick in (0, 1):
        expected = _outcome(lambda tick=tick: _reference(frames, tick))
        assert _outcome(lambda tick=tick: SummaryAt(window, tick).built(WHOLE, source="s")) == expected
        assert _outcome(lambda tick=tick: SummaryAt(window, tick).built(MEMORY, source="s").node) == _outcome(
            lambda tick=tick: _reference(frames, tick).node
        )
