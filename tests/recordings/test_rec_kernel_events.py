"""The recording's ``kernel_events`` (schema v3): what the kernel did, derived from each observed pod, event and
node version — a kill once however many versions repeat it, successive kills from successive versions, the
last kill of a container seen only once, SystemOOM counts, Ready transitions — and ``evictlens import`` of pods
and events files keeps them too."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from rec_support import REPO, run_cli

from recordings import format as fmt
from recordings.kernel import victim
from recordings.reader import open_recording
from recordings.redact import EVENT_REASONS
from recordings.writer import RecordingWriter

SAMPLE = REPO / "recordings" / "samples" / "kind-sidecars"
T0 = 1_716_200_122_000_000  # 2024-05-20T10:15:22Z


def _pod(restarts: int, last: dict[str, Any] | None = None, state: dict[str, Any] | None = None) -> dict[str, Any]:
    pods = orjson.loads((SAMPLE / "pods.json").read_bytes())
    pod = copy.deepcopy(next(p for p in pods["items"] if p["metadata"]["name"] == "alloc-sidecars"))
    status: dict[str, Any] = {"name": "el1", "restartCount": restarts, "state": state or {"running": {}}}
    if last is not None:
        status["lastState"] = {"terminated": last}
    pod["status"]["containerStatuses"] = [status]
    return pod


def _oom(finished: str, code: int = 137, reason: str = "OOMKilled") -> dict[str, Any]:
    return {"exitCode": code, "reason": reason, "startedAt": "2024-05-20T10:00:00Z", "finishedAt": finished}


def _system_oom(count: int, when: str, uid: str = "ev-9") -> dict[str, Any]:
    return {
        "kind": "Event",
        "metadata": {"name": "kind-worker.oom", "namespace": "default", "uid": uid},
        "involvedObject": {"kind": "Node", "name": "kind-worker", "uid": "kind-worker"},
        "reason": "SystemOOM",
        "message": "System OOM encountered, victim process: stress, pid: 77",
        "type": "Warning",
        "count": count,
        "source": {"component": "kubelet", "host": "kind-worker"},
        "lastTimestamp": when,
    }


def _node(status: str, reason: str, since: str) -> dict[str, Any]:
    node = orjson.loads((SAMPLE / "node.json").read_bytes())
    node["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": status,
            "reason": reason,
            "lastHeartbeatTime": "2024-05-20T10:20:00Z",
            "lastTransitionTime": since,
        }
    ]
    return dict(node)


def _record(root: Path, observations: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    summary = orjson.loads((SAMPLE / "summary.json").read_bytes())
    w = RecordingWriter(root, fmt.Manifest(source="recorder"))
    for i, (kind, obj) in enumerate(observations):
        w.observe(kind, obj, observed=T0 + i * 1_000_000)
    tick = w.begin_tick(T0 + 60_000_000)
    tick.add_summary("kind-worker", summary, scraped=tick.time)
    w.commit(tick)
    w.finalize()
    return open_recording(root).kernel_events()


def test_successive_pod_versions_give_one_row_per_kill_and_never_repeat_one(tmp_path: Path) -> None:
    first, second = _oom("2024-05-20T10:01:00Z"), _oom("2024-05-20T10:02:00Z")
    rows = _record(
        tmp_path / "rec",
        [
            ("pod", _pod(0)),
            ("pod", _pod(1, first)),
            ("pod", _pod(1, first, {"running": {"startedAt": "2024-05-20T10:01:01Z"}})),  # same kill, new version
            ("pod", _pod(2, second)),
            ("pod", _pod(3, second)),  # a restart count change alone is no kill
        ],
    )
    assert [(r["kind"], r["container"], r["restart_count"], r["time"].isoformat()) for r in rows] == [
        ("OOMKilled", "el1", 1, "2024-05-20T10:01:00+00:00"),
        ("OOMKilled", "el1", 2, "2024-05-20T10:02:00+00:00"),
    ]
    assert all((r["exit_code"], r["source"], r["node"], r["kills"]) == (137, "pod", "kind-worker", 1) for r in rows)


def test_a_kill_seen_only_in_the_latest_status_is_kept_and_other_terminations_are_not(tmp_path: Path) -> None:
    rows = _record(
        tmp_path / "rec",
        [
            ("pod", _pod(4, _oom("2024-05-20T09:00:00Z"))),  # the first version seen already shows it
        ],
    )
    assert [(r["kind"], r["restart_count"]) for r in rows] == [("OOMKilled", 4)]
    none = _record(
        tmp_path / "rec2",
        [
            ("pod", _pod(1, _oom("2024-05-20T10:01:00Z", 137, "Error"))),  # SIGKILL for another reason
            ("pod", _pod(1, None, {"terminated": _oom("2024-05-20T10:02:00Z", 0, "Completed")})),
        ],
    )
    assert none == []


def test_a_container_oom_killed_and_not_restarted_counts_from_its_current_state(tmp_path: Path) -> None:
    rows = _record(tmp_path / "rec", [("pod", _pod(0, None, {"terminated": _oom("2024-05-20T10:03:00Z")}))])
    assert [(r["kind"], r["time"].isoformat()) for r in rows] == [("OOMKilled", "2024-05-20T10:03:00+00:00")]


def test_system_oom_events_count_each_kill_once_as_their_count_grows(tmp_path: Path) -> None:
    assert "SystemOOM" in EVENT_REASONS  # the recorder keeps them
    rows = _record(
        tmp_path / "rec",
        [
            ("event", _system_oom(1, "2024-05-20T10:05:00Z")),
            ("event", _system_oom(1, "2024-05-20T10:05:00Z")),
            ("event", _system_oom(4, "2024-05-20T10:06:00Z")),
        ],
    )
    assert [(r["kind"], r["count"], r["kills"], r["victim"], r["pid"], r["node"]) for r in rows] == [
        ("SystemOOM", 1, 1, "stress", 77, "kind-worker"),
        ("SystemOOM", 4, 3, "stress", 77, "kind-worker"),
    ]


def test_ready_transitions_are_kept_with_their_times(tmp_path: Path) -> None:
    rows = _record(
        tmp_path / "rec",
        [
            ("node", _node("True", "KubeletReady", "2024-05-19T00:00:00Z")),
            ("node", _node("Unknown", "NodeStatusUnknown", "2024-05-20T10:07:00Z")),
            ("node", _node("True", "KubeletReady", "2024-05-20T10:09:00Z")),
        ],
    )
    assert [(r["status"], r["reason"], r["time"].isoformat()) for r in rows] == [
        ("True", "KubeletReady", "2024-05-19T00:00:00+00:00"),
        ("Unknown", "NodeStatusUnknown", "2024-05-20T10:07:00+00:00"),
        ("True", "KubeletReady", "2024-05-20T10:09:00+00:00"),
    ]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("System OOM encountered, victim process: java, pid: 4242", ("java", 4242)),
        (
            "(combined from similar events): System OOM encountered, victim process: stress-ng-vm, pid: 3106306",
            ("stress-ng-vm", 3106306),
        ),
        ("System OOM encountered", (None, None)),
    ],
)
def test_the_victim_is_read_from_the_kubelet_s_message(message: str, expected: tuple[str | None, int | None]) -> None:
    assert victim(message) == expected


def test_import_of_pods_and_events_files_keeps_oom_kills_and_system_ooms(tmp_path: Path) -> None:
    pods = orjson.loads((SAMPLE / "pods.json").read_bytes())
    pods["items"] = [_pod(1, _oom("2024-05-20T10:15:30Z"))] + [
        p for p in pods["items"] if p["metadata"]["name"] != "alloc-sidecars"
    ]
    (tmp_path / "pods.json").write_bytes(orjson.dumps(pods))
    (tmp_path / "events.json").write_bytes(
        orjson.dumps({"kind": "EventList", "apiVersion": "v1", "items": [_system_oom(2, "2024-05-20T10:15:35Z")]})
    )
    res = run_cli(
        "import",
        f"{SAMPLE / 'summary.json'}@2024-05-20T10:15:22Z",
        str(tmp_path / "pods.json"),
        str(tmp_path / "events.json"),
        "-o",
        str(tmp_path / "rec"),
    )
    assert res.returncode == 0, res.stderr
    rec = open_recording(tmp_path / "rec")
    assert [(r["kind"], r["kills"]) for r in rec.kernel_events()] == [("OOMKilled", 1), ("SystemOOM", 2)]
    assert rec.manifest.counts["kernel_events"] == 2
    info = run_cli("info", str(tmp_path / "rec"), "--verify")
    assert info.returncode == 0 and "kernel_events" in info.stdout, info.stderr
