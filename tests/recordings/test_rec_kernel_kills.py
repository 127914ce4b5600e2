"""Issue 17 acceptance, recorded: the real recorder records the fake cluster while a container is OOM-killed
and restarted, the kubelet's OOM watcher reports a SystemOOM (twice, aggregated into one Event) and a node's
Ready condition flaps; the recording keeps each as ground truth, and ``evictlens replay`` shows them — the
``kernel OOM kills`` table, ``result.json`` (``kernel_kills``, ``ready_transitions``, per-node ``too_fast``) —
exactly as the in-process replay has them.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from rec_support import FakeServer, committed_ticks, kill_quietly, run_evictlens, start_record, wait_for

from kube.errors import RecordingError
from recordings.reader import open_recording
from replay import results_io
from replay.engine import replay_recording
from replay.results import ReplayResult
from tui.results_view import ResultsView
from tui.timeline_model import TimelineModel
from tui.widgets.signal_plot import legend

VICTIM, PID = "java", 4242


@dataclass(frozen=True)
class Recorded:
    path: Path
    killed: dict[str, Any]
    """What the fake kubelet reported OOM-killed (namespace, pod, uid, container, finishedAt, restartCount)."""
    system_oom: dict[str, Any]
    """The SystemOOM Event after its second kill (name, uid, count 2, message, lastTimestamp)."""


def _kernel_events(out: Path) -> list[dict[str, Any]]:
    try:
        return open_recording(out).kernel_events()
    except (RecordingError, OSError):  # a fold may be publishing a part right now
        return []


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    server = FakeServer(tmp_path_factory.mktemp("apiserver"), nodes=2, pods=3, kubelet_ports=False)
    server.start()
    out = tmp_path_factory.mktemp("recorded") / "rec"
    try:
        proc = start_record(
            [
                "--kubeconfig",
                server.kubeconfig,
                "--context",
                "static",
                "-o",
                str(out),
                "--interval",
                "1s",
                "--timeout",
                "2s",
            ]
        )
        try:
            wait_for(lambda: committed_ticks(out) >= 2, 60, "two ticks before the kills")
            killed = server.control("oom_kill", {"node": "node-000", "pod": 1})
            server.control("system_oom", {"node": "node-000", "victim": VICTIM, "pid": PID, "name": "node-000.oom"})
            system_oom = server.control(
                "system_oom", {"node": "node-000", "victim": VICTIM, "pid": PID, "name": "node-000.oom"}
            )
            server.control("node_ready", {"node": "node-001", "status": "False", "reason": "KubeletNotReady"})
            wait_for(
                lambda: any(r["kind"] == "NodeReady" and r["status"] == "False" for r in _kernel_events(out)),
                60,
                "the recorder to see node-001 NotReady",
            )
            server.control("node_ready", {"node": "node-001", "status": "True"})
            wait_for(
                lambda: (
                    sum(r["kind"] == "NodeReady" and r["node"] == "node-001" for r in _kernel_events(out)) >= 3
                    and sum(r["kills"] for r in _kernel_events(out) if r["kind"] == "SystemOOM") >= 2
                    and any(r["kind"] == "OOMKilled" for r in _kernel_events(out))
                ),
                60,
                "every kill and flap",
            )
            after = committed_ticks(out)
            wait_for(lambda: committed_ticks(out) >= after + 2, 60, "two ticks after the kills")
            proc.send_signal(signal.SIGTERM)
            _out, err = proc.communicate(timeout=60)
        finally:
            kill_quietly(proc)
        assert proc.returncode == 0, err
    finally:
        server.stop()
    return Recorded(out, killed, system_oom)


@pytest.fixture(scope="module")
def reference(recorded: Recorded) -> ReplayResult:
    return replay_recording(open_recording(recorded.path))


def test_the_recording_keeps_the_oom_kill_the_system_oom_and_the_ready_flap_once_each(recorded: Recorded) -> None:
    rec = open_recording(recorded.path)
    assert rec.manifest.schema_version == 3 and rec.manifest.finalized
    rows = rec.kernel_events()
    (oom,) = [r for r in rows if r["kind"] == "OOMKilled"]  # later pod versions (restart counts) repeat it: once
    k = recorded.killed
    assert (oom["node"], oom["namespace"], oom["name"], oom["uid"], oom["container"]) == (
        "node-000",
        k["namespace"],
        k["pod"],
        k["uid"],
        k["container"],
    )
    assert (oom["exit_code"], oom["restart_count"], oom["source"]) == (137, k["restartCount"], "pod")
    assert oom["time"].strftime("%Y-%m-%dT%H:%M:%SZ") == k["finishedAt"]
    system = [r for r in rows if r["kind"] == "SystemOOM"]
    assert sum(r["kills"] for r in system) == 2 and {r["count"] for r in system} <= {1, 2}
    assert all(
        (r["node"], r["victim"], r["pid"], r["uid"]) == ("node-000", VICTIM, PID, recorded.system_oom["uid"])
        for r in system
    )
    assert system[-1]["message"] == recorded.system_oom["message"]
    ready = [(r["status"], r["reason"]) for r in rows if r["kind"] == "NodeReady" and r["node"] == "node-001"]
    assert ready == [("True", "KubeletReady"), ("False", "KubeletNotReady"), ("True", "KubeletReady")]
    assert rec.manifest.counts["kernel_events"] == rec.scan("kernel_events").collect().height


def test_replay_prints_and_writes_the_kernel_kills_next_to_the_evictions(
    recorded: Recorded, reference: ReplayResult, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    res = run_evictlens("replay", str(recorded.path), "-o", str(out), "--jobs", "1", env={"COLUMNS": "250"})
    assert res.returncode == 0, res.stderr
    assert "kernel OOM kills" in res.stdout
    assert f"{recorded.killed['namespace']}/{recorded.killed['pod']} {recorded.killed['container']}" in res.stdout
    assert f"victim process: {VICTIM}, pid: {PID}" in res.stdout
    # the container and one of the SystemOOM Event's two kills are one kill told twice (same node, same second)
    assert "2 kernel OOM kills" in res.stdout
    assert "Ready False from" in res.stdout and "too fast for a 1 s loop" in res.stdout
    doc = orjson.loads((out / "result.json").read_bytes())
    assert doc["schema_version"] == 4
    kinds = {(k["kind"], k["node"], k["pod"], k["container"], k["victim"]) for k in doc["kernel_kills"]}
    assert kinds == {
        ("OOMKilled", "node-000", recorded.killed["pod"], recorded.killed["container"], None),
        ("SystemOOM", "node-000", None, None, VICTIM),
    }
    assert sum(k["count"] for k in doc["kernel_kills"]) == 3
    assert [(r["node"], r["status"]) for r in doc["ready_transitions"]] == [("node-001", "False"), ("node-001", "True")]
    node0 = next(n for n in doc["nodes"] if n["node"] == "node-000")
    assert node0["too_fast"] and sum(t["kills"] for t in node0["too_fast"]) == 2  # the SystemOOMs, not the limit
    loaded = results_io.load(out)
    assert loaded.kernel_kills == reference.kernel_kills and loaded.ready_transitions == reference.ready_transitions
    assert loaded.same_as(reference)


def test_the_tui_timeline_marks_the_recorded_kills_and_the_overview_lists_them(
    recorded: Recorded, reference: ReplayResult
) -> None:
    """Issue 17's acceptance on the test API server's recording: the OOMKilled container and the SystemOOM
    Events reach the TUI — each distinct kill a row, and a ✖ mark on node-000's memory timeline."""
    view = ResultsView.from_result(reference, "as recorded", str(recorded.path))
    kills = view.kills("node-000")
    assert {k.kind for k in kills} == {"OOMKilled", "SystemOOM"}  # a container kill and a second system kill
    assert len(kills) == 2 and view.not_ready() == {"node-001": "False"}
    model = TimelineModel(
        view.node("node-000"),
        view.node_series("node-000"),
        view.result.conditions,
        view.evictions_of("node-000"),
        view.real_of("node-000"),
        kills,
    )
    data = model.plot(80)
    assert [m for m in data.markers if m.kind == "kernel"]
    assert "✖ kernel OOM kill" in legend(data).plain
