"""The kernel's side of a replay's results (issue 17): the recording's kernel kills and Ready transitions in the
result, and every moment memory ran out between two kubelet passes (``too_fast``) — in ``result.json`` (every
key documented in RESULTS.md), read back, from older results directories as empty, and printed by ``replay``."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from recbuild import CONFIGZ, T0, Observation, Plan, Tick, node_object, pods, stamp, summary_at, write
from rich.console import Console

from recordings.reader import open_recording
from replay.engine import replay_recording
from replay.replay_report import print_result
from replay.results import ReplayResult
from replay.results_io import load, to_document
from replay.results_io import write as write_results

GI, MI = 1 << 30, 1 << 20
RESULTS_MD = Path(__file__).resolve().parents[2] / "replay" / "RESULTS.md"


def _system_oom(when: Any, count: int = 1) -> dict[str, Any]:
    return {
        "kind": "Event",
        "metadata": {"name": "kind-worker.oom", "namespace": "default", "uid": "ev-oom"},
        "involvedObject": {"kind": "Node", "name": "kind-worker", "uid": "kind-worker"},
        "reason": "SystemOOM",
        "message": "System OOM encountered, victim process: java, pid: 4242",
        "type": "Warning",
        "count": count,
        "source": {"component": "kubelet", "host": "kind-worker"},
        "lastTimestamp": stamp(when),
    }


def _oom_killed(when: Any) -> dict[str, Any]:
    pod = pods()[1]
    name = pod["spec"]["containers"][0]["name"]
    pod["status"]["containerStatuses"] = [
        {
            "name": name,
            "restartCount": 1,
            "state": {"running": {}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": stamp(when)}},
        }
    ]
    return pod


def _not_ready(when: Any) -> dict[str, Any]:
    node = node_object()
    node["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
            "lastTransitionTime": stamp(when),
        }
    ]
    return node


def _recording(root: Path) -> Path:
    """memory.available (threshold 1.5Gi): 4Gi, 30Mi (exhausted between passes 0 and 1), 4Gi, 4Gi with a SystemOOM
    between passes 2 and 3, 4Gi with a container OOMKilled at its own limit between passes 3 and 4, then 1Gi
    (below the threshold: the kubelet evicts) and 30Mi — not too fast, the kubelet saw it coming."""
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    plan.objects += [Observation(start, "pod", p) for p in pods()]
    plan.objects += [
        Observation(start, "node", node_object()),
        Observation(start, "configz", CONFIGZ, node="kind-worker"),
    ]
    for i, available in enumerate([4 * GI, 30 * MI, 4 * GI, 4 * GI, 4 * GI, 1 * GI, 30 * MI]):
        sampled = T0 + timedelta(seconds=10 * i)
        plan.ticks.append(Tick(sampled, {"kind-worker": summary_at(sampled, available)}))
    plan.objects.append(Observation(T0 + timedelta(seconds=25), "event", _system_oom(T0 + timedelta(seconds=24))))
    plan.objects.append(Observation(T0 + timedelta(seconds=36), "pod", _oom_killed(T0 + timedelta(seconds=33))))
    plan.objects.append(Observation(T0 + timedelta(seconds=37), "node", _not_ready(T0 + timedelta(seconds=35))))
    return write(root, plan)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> ReplayResult:
    return replay_recording(open_recording(_recording(tmp_path_factory.mktemp("kernel") / "rec")), version="1.30")


def test_kernel_kills_and_ready_transitions_come_from_the_recording(result: ReplayResult) -> None:
    assert [(k.kind, k.time, k.source, k.count) for k in result.kernel_kills] == [
        ("SystemOOM", T0 + timedelta(seconds=24), "event", 1),
        ("OOMKilled", T0 + timedelta(seconds=33), "pod", 1),
    ]
    system, container = result.kernel_kills
    assert (system.victim, system.pid, system.pod) == ("java", 4242, None)
    assert (container.pod, container.exit_code, container.restart_count) == (pods()[1]["metadata"]["name"], 137, 1)
    # the node's Ready since before the recording is no news; its Unknown during it is
    assert [(r.status, r.reason, r.time) for r in result.ready_transitions] == [
        ("Unknown", "NodeStatusUnknown", T0 + timedelta(seconds=35))
    ]


def test_too_fast_is_each_fall_from_above_the_threshold_to_exhaustion_or_a_system_oom_between_two_passes(
    result: ReplayResult,
) -> None:
    races = result.node("kind-worker").too_fast
    assert [(t.from_tick, t.to_tick, t.kills) for t in races] == [(0, 1, 0), (2, 3, 1)]
    exhausted, killed = races
    threshold = int(1.5 * GI)
    assert (exhausted.from_available, exhausted.to_available, exhausted.threshold_value) == (4 * GI, 30 * MI, threshold)
    assert (exhausted.fell_bytes, exhausted.seconds) == (4 * GI - 30 * MI, 10.0)
    assert exhausted.exhausted_below == max(64 * MI, exhausted.exhausted_below) and 30 * MI < 64 * MI
    assert (killed.fell_bytes, killed.seconds, killed.to_available) == (4 * GI, 4.0, 4 * GI)  # the kill at +24 s


def test_result_json_holds_them_every_key_documented_and_reads_back(result: ReplayResult, tmp_path: Path) -> None:
    doc = to_document(result)
    assert doc["schema_version"] == 4
    assert doc["kernel_kills"][0]["time"] == stamp(T0 + timedelta(seconds=24))
    assert doc["nodes"][0]["too_fast"][1]["from_time"] == stamp(T0 + timedelta(seconds=20))
    text = RESULTS_MD.read_text()
    keys = (
        {"kernel_kills", "ready_transitions", "too_fast"}
        | set(doc["kernel_kills"][0])
        | set(doc["ready_transitions"][0])
        | set(doc["nodes"][0]["too_fast"][0])
    )
    assert sorted(k for k in keys if f"`{k}`" not in text) == []
    write_results(result, tmp_path / "out")
    loaded = load(tmp_path / "out")
    assert loaded.kernel_kills == result.kernel_kills and loaded.ready_transitions == result.ready_transitions
    assert loaded.node("kind-worker").too_fast == result.node("kind-worker").too_fast
    assert loaded.same_as(result)


def test_an_older_results_directory_loads_with_no_kernel_kills(result: ReplayResult, tmp_path: Path) -> None:
    write_results(result, tmp_path / "out")
    path = tmp_path / "out" / "result.json"
    doc = orjson.loads(path.read_bytes())
    doc["schema_version"] = 3
    del doc["kernel_kills"], doc["ready_transitions"]
    for n in doc["nodes"]:
        del n["too_fast"]
    path.write_bytes(orjson.dumps(doc))
    old = load(tmp_path / "out")
    assert (old.schema_version, old.kernel_kills, old.ready_transitions) == (3, (), ())
    assert all(n.too_fast == () for n in old.nodes)
    assert old.evictions == result.evictions


def test_replay_prints_the_kernel_kills_table_and_the_race(result: ReplayResult) -> None:
    buf = io.StringIO()
    print_result(result, console=Console(file=buf, width=250, no_color=True))
    out = buf.getvalue()
    assert "kernel OOM kills" in out and "process java (pid 4242)" in out and "exit code 137, restarts 1" in out
    assert "too fast for a 10 s loop: 3.971Gi in 10 s" in out
    assert "too fast for a 10 s loop: 4Gi in 4 s" in out and "then 1 kernel kill before the next pass" in out
    assert "Ready Unknown from" in out and "Kubelet stopped posting node status." in out
    assert "2 kernel OOM kills; memory ran out between two passes 2 times" in out
    none = replace(
        result, kernel_kills=(), ready_transitions=(), nodes=tuple(replace(n, too_fast=()) for n in result.nodes)
    )
    buf = io.StringIO()
    print_result(none, console=Console(file=buf, width=250, no_color=True))
    assert "kernel" not in buf.getvalue() and "too fast" not in buf.getvalue()


def test_the_tui_timeline_marks_each_kernel_kill_at_the_first_pass_after_it(result: ReplayResult) -> None:
    from tui.results_view import ResultsView
    from tui.timeline_model import TimelineModel

    view = ResultsView.from_result(result, "t", "rec")
    model = TimelineModel(
        view.node("kind-worker"),
        view.node_series("kind-worker"),
        view.result.conditions,
        view.evictions_of("kind-worker"),
        view.real_of("kind-worker"),
        [k for k in result.kernel_kills if k.node == "kind-worker"],
    )
    kernel = [(m.index, m.pod) for m in model.markers() if m.kind == "kernel"]
    assert kernel == [(3, "java"), (4, pods()[1]["metadata"]["name"])]  # passes at +30 s and +40 s
    assert any(m.kind == "kernel" for m in model.plot(80).markers)
