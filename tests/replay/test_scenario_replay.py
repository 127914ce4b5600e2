"""Scenarios closed-loop: each bundled scenario writes a recording whose replay gives its expected evictions."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import CONFORMANCE

from recordings.reader import open_recording
from recordings.scenarios import load_bundled, load_scenario
from replay.cli import main
from replay.engine import replay_recording
from replay.results import ReplayResult
from replay.scenario import ScenarioOutcome, run_scenario

Recorder = Callable[..., tuple[ScenarioOutcome, Path]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorder:
    """Generate each (scenario, kubelet version) once per module."""
    cache: dict[tuple[str, str | None], tuple[ScenarioOutcome, Path]] = {}

    def get(name: str, version: str | None = None) -> tuple[ScenarioOutcome, Path]:
        if (name, version) not in cache:
            out = tmp_path_factory.mktemp(name) / "rec"
            cache[(name, version)] = (run_scenario(load_bundled(name, kubelet_version=version), out), out)
        return cache[(name, version)]

    return get


def _replay(path: Path, version: str | None = None) -> ReplayResult:
    return replay_recording(open_recording(path), version=version)


def _evicted(result: ReplayResult) -> list[tuple[str, str, int, str]]:
    return [(e.node, e.pod, e.tick, e.message) for e in result.evictions]


def _all_match(result: ReplayResult) -> bool:
    return bool(result.matches) and all(m.same_message and m.within_interval for m in result.matches)


MEM = "The node was low on resource: memory. "
EL = "Container el{} was using 48Ki, request is 0, has larger consumption of memory. "
SIDECARS_1_30 = f"{MEM}Threshold quantity: 1536Mi, available: 1516448Ki. " + "".join(EL.format(i) for i in (1, 2, 3))
SIDECARS_1_32 = (
    f"{MEM}Threshold quantity: 1536Mi, available: 1516448Ki. "
    "Container el-sidecar1 was using 4000Mi, request is 0, has larger consumption of memory. "
    "Container el-sidecar2 was using 1452Ki, request is 0, has larger consumption of memory. "
    "Container el-sidecar3 was using 48Ki, request is 0, has larger consumption of memory. "
    + "".join(EL.format(i) for i in (1, 2, 3))
)


# -- sidecar-stress ---------------------------------------------------------------------------------
def test_sidecar_stress_replayed_as_1_30_names_only_the_regular_containers(recorded: Recorder) -> None:
    seed = json.loads((CONFORMANCE / "seed.json").read_text())
    (observed,) = [c["expect"]["message"] for c in seed["cases"] if c["id"] == "seed/sidecars-v1.30-observed"]
    assert observed == SIDECARS_1_30  # what the real 1.30 kind worker printed in the experiment
    outcome, path = recorded("sidecar-stress")
    assert [(e.pod, e.tick, e.message) for e in outcome.evictions] == [("alloc-sidecars", 4, SIDECARS_1_30)]
    result = _replay(path, "1.30")
    assert _evicted(result) == [("kind-worker", "alloc-sidecars", 4, SIDECARS_1_30)]
    assert _all_match(result)  # the recording's ground truth is what a 1.30 kubelet said


def test_sidecar_stress_replayed_as_1_32_names_the_sidecars_too(recorded: Recorder) -> None:
    _, path = recorded("sidecar-stress")
    result = _replay(path, "1.32")
    assert _evicted(result) == [("kind-worker", "alloc-sidecars", 4, SIDECARS_1_32)]
    (match,) = result.matches
    assert match.predicted_id is not None and not match.same_message


def test_sidecar_stress_generated_as_1_32_records_the_1_32_message(recorded: Recorder) -> None:
    outcome, path = recorded("sidecar-stress", "1.32")
    assert [e.message for e in outcome.evictions] == [SIDECARS_1_32]
    assert _all_match(_replay(path))


def test_closed_loop_an_evicted_pod_stops_using_memory_so_nothing_else_is_evicted(recorded: Recorder) -> None:
    outcome, path = recorded("sidecar-stress")
    rec = open_recording(path)
    last = rec.summary_at("kind-worker", outcome.ticks - 1)
    assert last is not None
    assert [p["podRef"]["name"] for p in last["pods"]] == ["kindnet-7xq2p", "kube-proxy-k8q9v"]
    (pod,) = [p for p in rec.pods_at("kind-worker") if p["metadata"]["name"] == "alloc-sidecars"]
    assert pod["status"]["phase"] == "Failed" and pod["status"]["reason"] == "Evicted"
    assert pod["status"]["message"] == SIDECARS_1_30
    # MemoryPressure is held for the 5m transition period, past the end of the 2m scenario
    assert [c for _, _, c in outcome.condition_changes] == [("MemoryPressure",)]


def test_the_recording_says_it_came_from_a_scenario(recorded: Recorder) -> None:
    outcome, path = recorded("sidecar-stress")
    manifest = open_recording(path).manifest
    assert manifest.source == "scenario"
    assert manifest.options["scenario"] == "sidecar-stress"
    assert manifest.options["scenario_digest"] == outcome.scenario.digest and outcome.scenario.digest.startswith(
        "sha256:"
    )
    assert manifest.kubelet_versions == {"kind-worker": "v1.30.0"}


# -- k3d-operator-pod -------------------------------------------------------------------------------
def test_k3d_operator_pod_evicts_both_and_neither_comes_back(recorded: Recorder) -> None:
    outcome, path = recorded("k3d-operator-pod")
    ray = "raycluster-kuberay-workergroup-worker-x7k2p"
    assert [(e.node, e.pod, e.owner_kinds) for e in outcome.evictions] == [
        ("k3d-dev-agent-1", ray, ("RayCluster",)),
        ("k3d-dev-agent-0", "memory-hog", ()),
    ]
    assert outcome.evictions[1].message == (
        f"{MEM}Threshold quantity: 1Gi, available: 972Mi. "
        "Container stress was using 1400Mi, request is 0, has larger consumption of memory. "
    )
    rec = open_recording(path)
    for node, name in (("k3d-dev-agent-0", "memory-hog"), ("k3d-dev-agent-1", ray)):
        pods = rec.pods_at(node)
        assert [p["metadata"]["name"] for p in pods] == [name]  # no replacement was created
        assert pods[0]["status"]["phase"] == "Failed"
    assert _all_match(_replay(path, "1.30"))


# -- overcommit -------------------------------------------------------------------------------------
def test_overcommit_tips_the_node_over_with_every_pod_within_its_limits(recorded: Recorder) -> None:
    outcome, path = recorded("overcommit")
    assert [(e.pod, e.tick) for e in outcome.evictions] == [
        ("api-7c9f8d6b5d-4xkzq", 12),
        ("worker-5d7b9c8f4-p2m8w", 21),
        ("api-7c9f8d6b5d-vgsc8", 29),
    ]
    rec = open_recording(path)
    for e in outcome.evictions:
        summary = rec.summary_at("worker-1", e.tick)
        assert summary is not None
        (stats,) = [p for p in summary["pods"] if p["podRef"]["name"] == e.pod]
        assert stats["memory"]["workingSetBytes"] < 4 << 30  # under its 4Gi limit
        assert "request is" in e.message and e.cause == "memory.available"
    # the ReplicaSet's replacement came back 30s later and was evicted again as it grew
    assert outcome.evictions[2].pod.startswith("api-7c9f8d6b5d-")
    assert _all_match(_replay(path))


# -- init container, QoS contest -----------------------------------------------------------------------
def test_an_init_container_eating_memory_is_named_only_from_1_32(recorded: Recorder) -> None:
    _, path = recorded("init-container-memory")
    head = f"{MEM}Threshold quantity: 750Mi, available: 642Mi. "
    assert _evicted(_replay(path, "1.30")) == [("worker-1", "app-with-migration", 9, head)]
    named = head + "Container migrate was using 2404Mi, request is 0, has larger consumption of memory. "
    assert _evicted(_replay(path, "1.32")) == [("worker-1", "app-with-migration", 9, named)]


@pytest.mark.parametrize("version", ["1.30", "1.32"])
def test_qos_contest_evicts_the_burstable_pod_above_its_request_first(recorded: Recorder, version: str) -> None:
    outcome, path = recorded("qos-contest", version)
    message = (
        f"{MEM}Threshold quantity: 500Mi, available: 484Mi. "
        "Container app was using 3584Mi, request is 500Mi, has larger consumption of memory. "
    )
    assert [(e.pod, e.message) for e in outcome.evictions] == [("burstable", message)]
    result = _replay(path)
    (ranking,) = [e.ranking for e in result.evictions]
    assert [r.pod for r in ranking] == ["burstable", "besteffort", "guaranteed"]
    assert result.evictions[0].grace_period_override == (0 if version == "1.30" else 1)


# -- disk ---------------------------------------------------------------------------------------------
def test_disk_pressure_with_a_shared_and_with_a_dedicated_imagefs(recorded: Recorder) -> None:
    outcome, path = recorded("disk-pressure")
    disk = "The node was low on resource: ephemeral-storage. "
    assert [(e.node, e.pod, e.cause, e.message) for e in outcome.evictions] == [
        (
            "shared-fs",
            "log-flood",
            "imagefs.available",
            f"{disk}Threshold quantity: 8053064000, available: 7118Mi. "
            "Container app was using 14Gi, request is 0, has larger consumption of ephemeral-storage. ",
        ),
        (
            "dedicated-imagefs",
            "scratch-writer",
            "imagefs.available",
            f"{disk}Threshold quantity: 16106128000, available: 15260Mi. "
            "Container build was using 55Gi, request is 0, has larger consumption of ephemeral-storage. ",
        ),
    ]
    result = _replay(path)
    topology = {n.node: (n.dedicated_image_fs, n.split_container_image_fs) for n in result.nodes}
    assert topology == {"shared-fs": (False, False), "dedicated-imagefs": (True, False)}  # inferred by the replay
    assert _all_match(result)


def test_pid_pressure_evicts_the_forking_pod(recorded: Recorder) -> None:
    outcome, path = recorded("pid-pressure")
    expected = [
        ("forker", "pid.available", "The node was low on resource: pids. Threshold quantity: 3276, available: 2203. ")
    ]
    assert [(e.pod, e.cause, e.message) for e in outcome.evictions] == expected
    assert _all_match(_replay(path, "1.30"))


# -- soft threshold, transition period ----------------------------------------------------------------
@pytest.mark.parametrize(("version", "grace"), [("1.30", 30), ("1.32", 10)])
def test_soft_threshold_waits_its_grace_period_and_the_condition_is_held(
    recorded: Recorder, version: str, grace: int
) -> None:
    outcome, path = recorded("soft-grace", version)
    assert [(e.pod, e.tick) for e in outcome.evictions] == [("batch", 36)]  # met at 5:00, grace 1m
    times = [(t.strftime("%M:%S"), c) for _, t, c in outcome.condition_changes]
    # a 30s spike at 1:00 evicts nobody; the condition is held 2m after it was last met (1:20)
    assert times == [("01:00", ("MemoryPressure",)), ("03:20", ()), ("05:00", ("MemoryPressure",)), ("08:00", ())]
    result = _replay(path)
    assert [(e.pod, e.tick, e.grace_period_override) for e in result.evictions] == [("batch", 36, grace)]


# -- local storage limits --------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["1.30", "1.32"])
def test_empty_dir_size_limit_and_container_ephemeral_storage_limit(recorded: Recorder, version: str) -> None:
    outcome, path = recorded("local-storage-limits", version)
    assert [(e.pod, e.cause, e.message) for e in outcome.evictions] == [
        ("cache-filler", "emptydirfs.limit", 'Usage of EmptyDir volume "cache" exceeds the limit "1Gi". '),
        (
            "log-spammer",
            "ephemeralcontainerfs.limit",
            'Container app exceeded its local ephemeral storage limit "500Mi". ',
        ),
    ]
    assert _all_match(_replay(path))


def test_a_sidecar_over_its_own_ephemeral_storage_limit_is_evicted_from_1_37(recorded: Recorder) -> None:
    outcome, _ = recorded("local-storage-limits", "1.37")
    assert ("sidecar-logs", 'Container shipper exceeded its local ephemeral storage limit "200Mi". ') in [
        (e.pod, e.message) for e in outcome.evictions
    ]


# -- admission under pressure -----------------------------------------------------------------------------
def test_a_best_effort_replacement_is_rejected_while_memory_pressure_holds(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        textwrap.dedent("""\
        kind: Scenario
        name: admission
        duration: 2m
        kubelet: {version: v1.32.0, config: {evictionHard: {memory.available: 1Gi}}}
        nodes:
          - name: n1
            capacity: {memory: 4Gi, ephemeral-storage: 50Gi}
            system: {memory: 1Gi}
        pods:
          - pod:
              metadata: {name: hog-5f6d7c8b9-x2x4z, ownerReferences: [{kind: ReplicaSet, name: hog-5f6d7c8b9,
                         controller: true}]}
              spec: {containers: [{name: c}]}
            recreate: {after: 20s}
            usage: {c: {memory: {grow: {by: 1Gi, every: 10s, max: 2560Mi}}}}
        """)
    )
    outcome = run_scenario(load_scenario(path), tmp_path / "rec")
    assert [e.pod for e in outcome.evictions] == ["hog-5f6d7c8b9-x2x4z"]
    assert outcome.rejected and all(m == "The node had condition: [MemoryPressure]. " for _, _, m in outcome.rejected)
    rec = open_recording(tmp_path / "rec")
    assert {r["name"] for r in rec.evictions()} == {"hog-5f6d7c8b9-x2x4z"}  # a rejection is no eviction
    assert outcome.rejected[0][1].split("/")[1] in {r["name"] for r in rec.evictions(admission=True)}


# -- the command ------------------------------------------------------------------------------------------
def test_scenario_list_names_every_bundled_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "--list"]) == 0
    out = capsys.readouterr().out
    assert "sidecar-stress" in out and "k3d-operator-pod" in out and "overcommit" in out


def test_scenario_sample_writes_a_recording_and_prints_the_eviction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["scenario", "--sample", "sidecar-stress", "-o", str(tmp_path / "rec"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["scenario"] == "sidecar-stress" and [e["message"] for e in doc["evictions"]] == [SIDECARS_1_30]
    assert main(["scenario", "--sample", "sidecar-stress", "-o", str(tmp_path / "rec2")]) == 0
    out = capsys.readouterr().out
    assert "alloc-sidecars" in out and "evictlens replay" in out
    assert main(["replay", str(tmp_path / "rec"), "--kubelet-version", "1.32", "--json"]) == 0


def test_scenario_show_prints_the_bundled_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "--sample", "qos-contest", "--show"]) == 0
    assert capsys.readouterr().out.startswith("kind: Scenario")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["scenario", "--sample", "nope", "-o", "X"], "no bundled scenario 'nope'"),
        (["scenario", "--sample", "sidecar-stress"], "-o"),
        (["scenario"], "give a scenario FILE"),
        (["scenario", "--sample", "sidecar-stress", "--kubelet-version", "1.99", "-o", "X"], "--kubelet-version"),
    ],
)
def test_scenario_command_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    argv = [str(tmp_path / a) if a == "X" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("evictlens scenario: ") and err.count("\n") == 1 and needle in err
    assert not (tmp_path / "X").exists()


def test_a_bad_scenario_file_is_one_line_with_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Scenario\nname: b\nduration: 1m\nnodes: []\nbogus: 1\n")
    assert main(["scenario", str(bad), "-o", str(tmp_path / "rec")]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"evictlens scenario: {bad}: line 5: bogus: unknown field 'bogus'; expected one of apiVersion, "
        "kind, name, description, start, interval, duration, kubelet, nodes, pods\n"
    )
    assert not (tmp_path / "rec").exists()


def test_an_existing_recording_is_not_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rec"
    out.mkdir()
    (out / "keep").write_text("x")
    assert main(["scenario", "--sample", "pid-pressure", "-o", str(out)]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["keep"]


def test_a_manifest_the_kubelet_could_not_read_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        textwrap.dedent("""\
        kind: Scenario
        name: b
        duration: 1m
        kubelet: {version: "1.32"}
        nodes: [{name: n1, capacity: {memory: 4Gi, ephemeral-storage: 50Gi}}]
        pods:
          - pod: {metadata: {name: p}, spec: {priority: high, containers: [{name: c}]}}
        """)
    )
    assert main(["scenario", str(bad), "-o", str(tmp_path / "rec")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: line 7: pod default/p: spec.priority: expected an integer" in err
    assert not (tmp_path / "rec").exists()
