"""Impact and context: who comes back, how overcommitted the node was, how close the other pods came."""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from recbuild import CONFIGZ, LOW, T0, Observation, Plan, Tick, node_object, pods, sidecar_recording, summary_at, write

from recordings.reader import open_recording
from replay.cli import main
from replay.engine import replay_recording
from replay.impact import decided_by, overcommit_lead, owner_impact
from replay.results import RankedPod
from replay.results_io import load
from replay.results_io import write as write_results


@pytest.mark.parametrize(
    ("kind", "comes_back", "words"),
    [
        ("ReplicaSet", True, "ReplicaSet creates a replacement"),
        ("StatefulSet", True, "StatefulSet recreates it"),
        ("DaemonSet", True, "DaemonSet"),
        ("Job", True, "backoffLimit"),
        (None, False, "stays Failed: a bare pod"),
        ("RayCluster", False, "unless the operator of RayCluster raycluster-a handles node-pressure evictions"),
        ("Node", None, "static pod"),
    ],
)
def test_whether_an_evicted_pod_comes_back_depends_on_its_owner(
    kind: str | None, comes_back: bool | None, words: str
) -> None:
    back, sentence = owner_impact(kind, "raycluster-a" if kind else None)
    assert back is comes_back and words in sentence


def test_replay_flags_the_bare_pod_and_not_the_daemonset_pod(tmp_path: Path) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    by_pod = {e.pod: e for e in result.evictions}
    assert by_pod["alloc-sidecars"].comes_back is False
    assert by_pod["kindnet-7xq2p"].comes_back is True and "DaemonSet" in by_pod["kindnet-7xq2p"].impact


def test_the_ranking_says_how_close_each_other_pod_came(tmp_path: Path) -> None:
    result = replay_recording(open_recording(sidecar_recording(tmp_path / "rec")), version="1.30")
    ranking = {r.pod: r for r in result.evictions[0].ranking}
    assert ranking["alloc-sidecars"].decided_by == "evicted"
    assert ranking["kube-proxy-4m8rt"].decided_by == "critical"
    assert ranking["kindnet-7xq2p"].decided_by == "exceeds request"  # within its 50Mi request: behind
    second = {r.pod: r for r in result.evictions[1].ranking}
    assert second["kindnet-7xq2p"].decided_by == "evicted"


def _ranked(**kw: Any) -> RankedPod:
    base: dict[str, Any] = dict(
        rank=1,
        namespace="ns",
        pod="p",
        uid="u",
        qos="BestEffort",
        priority=0,
        has_stats=True,
        exceeds_request=True,
        usage=100,
        request=0,
        usage_above_request=100,
        process_count=None,
        critical=False,
        reason="",
    )
    return RankedPod(**{**base, **kw})


def test_decided_by_names_the_first_comparator_that_differs_and_the_margin() -> None:
    evicted = _ranked(usage_above_request=500)
    assert decided_by(_ranked(rank=2, usage_above_request=200), evicted, "memory.available") == ("usage", 300)
    assert decided_by(_ranked(rank=2, priority=10), evicted, "memory.available") == ("priority", 10)
    assert decided_by(_ranked(rank=2, exceeds_request=False), evicted, "nodefs.available") == ("exceeds request", None)
    assert decided_by(_ranked(rank=2, usage_above_request=500), evicted, "memory.available") == ("tie", None)
    pid_evicted = _ranked(process_count=50, exceeds_request=None)
    assert decided_by(_ranked(rank=2, process_count=20, exceeds_request=None), pid_evicted, "pid.available") == (
        "processes",
        30,
    )


def _overcommitted_recording(root: Path) -> Path:
    """The sample with a 20Gi memory limit on alloc-sidecars' el1: Σ limits far above the 7.7Gi allocatable."""
    items = pods()
    big = copy.deepcopy(items[0])
    big["spec"]["containers"][0]["resources"] = {"limits": {"memory": "20Gi"}, "requests": {"memory": "10Mi"}}
    items[0] = big
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    for p in items:
        plan.objects.append(Observation(start, "pod", p))
    plan.objects.append(Observation(start, "node", node_object()))
    plan.objects.append(Observation(start, "configz", CONFIGZ, node="kind-worker"))
    for i, low in enumerate((False, False, False, True)):
        when = T0 + timedelta(seconds=10 * i)
        plan.ticks.append(Tick(when, {"kind-worker": summary_at(when, LOW if low else 4 << 30)}))
    return write(root, plan)


def test_overcommit_over_time_and_how_long_before_the_first_eviction(tmp_path: Path) -> None:
    result = replay_recording(open_recording(_overcommitted_recording(tmp_path / "rec")), version="1.30")
    overcommit = result.overcommit.collect()
    memory = overcommit.filter(overcommit["resource"] == "memory").sort("tick")
    assert memory.height == 4
    row = memory.row(0, named=True)
    assert row["limits"] == (20 << 30) + (50 << 20) and row["requests"] == (10 << 20) + (50 << 20)
    # el2, el3 and the sidecars of alloc-sidecars have no limit, nor has kube-proxy
    assert row["allocatable"] == 8040192 * 1024 and row["pods_without_limit"] == 2
    (node,) = result.nodes
    assert node.overcommit_lead_s == {"memory": 30.0}  # overcommitted from the first pass, evicted at t=30s
    ephemeral = overcommit.filter(overcommit["resource"] == "ephemeral-storage")
    assert ephemeral["limits"].to_list() == [0, 0, 0, 0] and ephemeral["pods_without_limit"][0] == 3


def test_overcommit_lead_restarts_after_a_break() -> None:
    t = [T0 + timedelta(seconds=10 * i) for i in range(4)]
    rows = [
        {"time": t[0], "resource": "memory", "limits": 9, "allocatable": 5},
        {"time": t[1], "resource": "memory", "limits": 4, "allocatable": 5},
        {"time": t[2], "resource": "memory", "limits": 9, "allocatable": 5},
        {"time": t[3], "resource": "memory", "limits": 9, "allocatable": 5},
    ]
    assert overcommit_lead(rows, t[3]) == {"memory": 10.0}
    assert overcommit_lead(rows[:2], t[1]) == {}


def test_impact_survives_the_results_directory_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = _overcommitted_recording(tmp_path / "rec")
    result = replay_recording(open_recording(rec), version="1.30")
    write_results(result, tmp_path / "out")
    back = load(tmp_path / "out")
    assert back.same_as(result) and back.evictions[0].ranking == result.evictions[0].ranking
    assert main(["replay", str(rec), "--kubelet-version", "1.30", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["evictions"][0]["comes_back"] is False and "bare pod" in doc["evictions"][0]["impact"]
    assert doc["nodes"][0]["overcommit_lead_s"] == {"memory": 30.0}


def test_replay_output_shows_impact_overcommit_and_the_next_in_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = _overcommitted_recording(tmp_path / "rec")
    assert main(["replay", str(rec), "--kubelet-version", "1.30"]) == 0
    out = capsys.readouterr().out
    assert "impact: stays Failed: a bare pod, nothing recreates it" in out
    assert "overcommitted for 30s before it" in out
    assert "kube-system/kindnet-7xq2p: kept by exceeds request" in out
