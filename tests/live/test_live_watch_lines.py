"""watch's own layer over the engine, without a process: the JSON line of each event kind, which of the engine's
events are changes (next to go only when the pod changes; the conditions after a pressure change), the watch loop
on a fake engine (a source that finishes: one last poll), and the cluster source's record options."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Mapping
from pathlib import Path

from live.jsonl import event_json
from live.metrics import LiveCollector
from live.model import LiveEvent, NodeNow
from live.sources import RETAIN, record_options
from live.watch import Changes, WatchOptions, watch

T0 = 1_735_689_600_000_000


def _e(event_kind: str, at: int = T0, node: str = "n1", **details: object) -> LiveEvent:
    return LiveEvent(event_kind, node, at, details)


def test_kernel_kill_line() -> None:
    line = event_json(
        _e("kernel-kill", T0 + 204_000_000, kind="OOMKilled", namespace="shop", pod="jvm", uid="u", container="c",
           reason="OOMKilled", message=None, predicted=False, was_next_to_go=True, predicted_message="The node…")
    )  # fmt: skip
    assert line == {
        "v": 1,
        "kind": "kernel-kill",
        "time": "2025-01-01T00:03:24Z",
        "node": "n1",
        "tick": None,
        "oom": "OOMKilled",
        "namespace": "shop",
        "pod": "jvm",
        "uid": "u",
        "container": "c",
        "reason": "OOMKilled",
        "message": None,
        "predicted": False,
        "was_next_to_go": True,
        "predicted_message": "The node…",
    }


def test_real_eviction_line_names_the_predicted_time() -> None:
    line = event_json(_e("real-eviction", T0 + 1000, pod="p", predicted=True, predicted_time_us=T0, message="m"))
    assert line["predicted_time"] == "2025-01-01T00:00:00Z" and "predicted_time_us" not in line
    assert line["time"] == "2025-01-01T00:00:00.001Z"


def test_next_to_go_line_nests_the_pod_and_says_none() -> None:
    line = event_json(_e("next-to-go", tick=3, namespace="a", pod="b", uid="u", resource="memory", message="m",
                         reason="r", basis="s"))  # fmt: skip
    assert line["tick"] == 3 and line["next_to_go"] == {
        "namespace": "a", "pod": "b", "uid": "u", "resource": "memory", "message": "m", "reason": "r", "basis": "s"
    }  # fmt: skip
    assert event_json(_e("next-to-go", tick=4))["next_to_go"] is None


def test_changes_next_to_go_only_when_the_pod_changes() -> None:
    c = Changes()
    out = c.keep(
        [
            _e("next-to-go", T0, uid="a", resource="memory", message="available: 2Gi"),
            _e("next-to-go", T0 + 10, uid="a", resource="memory", message="available: 1Gi"),  # same pod: quiet
            _e("next-to-go", T0 + 20, uid="b", resource="memory", message="…"),
            _e("next-to-go", T0 + 30),  # nobody first any more
            _e("next-to-go", T0 + 40),
            _e("next-to-go", T0 + 50, node="n2", uid="a", resource="memory"),  # per node
        ]
    )
    assert [(e.time_us - T0, e.node) for e in out] == [(0, "n1"), (20, "n1"), (30, "n1"), (50, "n2")]


def test_changes_in_time_order_with_the_conditions_after_each_change() -> None:
    c = Changes()
    out = c.keep(
        [
            _e("pressure-start", T0 + 20, condition="DiskPressure"),
            _e("kernel-kill", T0 + 5),
            _e("pressure-start", T0 + 10, condition="MemoryPressure"),
        ]
    )
    assert [e.kind for e in out] == ["kernel-kill", "pressure-start", "pressure-start"]
    assert out[2].details["conditions"] == ["DiskPressure", "MemoryPressure"]
    (end,) = c.keep([_e("pressure-end", T0 + 30, condition="MemoryPressure")])
    assert event_json(end)["conditions"] == ["DiskPressure"]


class FakeEngine:
    """Two polls' worth of events, then nothing (the interface of live/engine.py)."""

    def __init__(self) -> None:
        self.batches = [[_e("stale", reason="timeout", tick=1)], [_e("fresh", T0 + 10, tick=2)]]
        self.polls = 0

    def poll(self) -> list[LiveEvent]:
        self.polls += 1
        return self.batches.pop(0) if self.batches else []

    def nodes(self) -> Mapping[str, NodeNow]:
        return {}


class FakeSource:
    def __init__(self, root: Path, finish_after: int) -> None:
        self.root, self.calls, self.finish_after, self.followed = root, 0, finish_after, False

    def following(self, after_tick: int | None = None) -> None:
        self.followed = True

    def finished(self) -> bool:
        self.calls += 1
        return self.calls > self.finish_after

    def stop(self) -> None: ...
    def close(self) -> None: ...


def test_watch_loop_reads_once_more_after_the_source_finished(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    engine, source, out = FakeEngine(), FakeSource(tmp_path, finish_after=1), io.BytesIO()
    collector = LiveCollector()
    counts = asyncio.run(
        watch(source, WatchOptions(poll_seconds=0.01), out, collector=collector, engine_factory=lambda r, w: engine)
    )
    assert source.followed and engine.polls == 2 and counts.lines == 2
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(x["kind"], x["tick"]) for x in lines] == [("stale", 1), ("fresh", 2)]
    assert lines[0]["reason"] == "timeout"
    assert collector._events == {("n1", "stale"): 1, ("n1", "fresh"): 1}


def test_watch_loop_waits_for_the_recording(tmp_path: Path) -> None:
    """No manifest yet (the recorder is still listing): no engine; the source finishing ends the watch."""
    made: list[Path] = []
    source = FakeSource(tmp_path, finish_after=3)
    counts = asyncio.run(
        watch(source, WatchOptions(poll_seconds=0.01), io.BytesIO(), engine_factory=lambda r, w: made.append(r))  # type: ignore[arg-type,func-returns-value]
    )
    assert made == [] and counts.polls == 0 and not source.followed


def test_cluster_source_records_with_records_own_flags(tmp_path: Path) -> None:
    opts = record_options(["--context", "prod", "--interval", "2s", "--kubelet-direct"], tmp_path / "rec")
    assert (opts.context, opts.interval, opts.kubelet_direct, opts.output) == ("prod", 2.0, True, str(tmp_path / "rec"))
    assert opts.status == "none" and opts.watch and not opts.append and not opts.keep_raw
    retain = getattr(opts, "retain", None)
    if retain is not None:  # record --retain landed: the private recording is a short rolling window
        assert retain == 15 * 60 and RETAIN == "15m"
        slow = record_options(["--interval", "10m"], tmp_path / "rec")
        assert slow.retain == 30 * 60  # type: ignore[attr-defined]  # three intervals: record wants two at least
