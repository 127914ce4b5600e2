"""Scenario files: schema, curves, one-line errors with file/line/field, and the Summary-shaped generator."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from recordings.scenarios import ScenarioError, ScenarioRun, bundled_names, load_bundled, load_scenario
from recordings.scenarios.curves import parse_curve
from recordings.scenarios.kubelet import default_eviction_hard
from recordings.scenarios.schema import Scenario
from recordings.scenarios.units import SECOND, parse_amount, parse_duration
from recordings.scenarios.yamlpos import load_yaml
from recordings.summary_codec import decode, encode, project

MI = 1 << 20
GI = 1 << 30

BASE = """\
kind: Scenario
name: t
interval: 10s
duration: 1m
kubelet:
  version: v1.32.0
  config:
    evictionHard: {memory.available: 500Mi}
nodes:
  - name: n1
    capacity: {memory: 4Gi, ephemeral-storage: 50Gi}
    system: {memory: 1Gi, nodefs: 5Gi, imagefs: 2Gi, processes: 100}
pods:
  - pod:
      metadata: {name: p, namespace: default}
      spec:
        containers: [{name: app}, {name: side}]
    usage:
      app: {memory: {grow: {by: 100Mi, every: 10s}}, logs: 10Mi, processes: 3}
"""


def _write(tmp_path: Path, text: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _error(tmp_path: Path, text: str) -> ScenarioError:
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    line = str(info.value)
    assert "\n" not in line and line.startswith(str(path))
    return info.value


def _curve(text: str) -> Any:
    doc = load_yaml(f"c: {text}\n", "c.yaml")
    return parse_curve(doc, ("c",), doc.data["c"], None)


# -- units and curves ------------------------------------------------------------------------
def test_quantities_and_durations_read_as_kubernetes_and_go_write_them() -> None:
    assert parse_amount("1.5Gi") == 1536 * MI
    assert parse_amount("500M") == 500_000_000
    assert parse_amount("1e3") == 1000
    assert parse_amount(7) == 7
    assert parse_duration("1m30s") == 90 * SECOND
    assert parse_duration("500ms") == SECOND // 2
    assert parse_duration(2) == 2 * SECOND
    for bad in ("1.5Gb", "-1Mi", "", True):
        with pytest.raises(ValueError):
            parse_amount(bad)
    with pytest.raises(ValueError):
        parse_duration("10 minutes")


def test_constant_ramp_step_grow_repeat_and_series_curves() -> None:
    s = SECOND
    assert _curve("100Mi").at(99 * s) == 100 * MI
    ramp = _curve("{ramp: {from: 0, to: 100, start: 10s, over: 10s}}")
    assert [ramp.at(t * s) for t in (0, 10, 15, 20, 30)] == [0, 0, 50, 100, 100]
    step = _curve("{step: {from: 1, to: 5, at: 30s}}")
    assert [step.at(t * s) for t in (29, 30)] == [1, 5]
    grow = _curve("{grow: {by: 100Mi, every: 1s, max: 4000Mi}}")
    assert [grow.at(t * s) // MI for t in (0, 1, 10, 39, 40, 100)] == [0, 100, 1000, 3900, 4000, 4000]
    repeat = _curve("{repeat: {every: 20s, curve: {step: {from: 0, to: 9, at: 10s}}}}")
    assert [repeat.at(t * s) for t in (0, 10, 19, 20, 35)] == [0, 9, 9, 0, 9]
    held = _curve("{series: {points: [[0s, 10], [10s, 20]]}}")
    assert [held.at(t * s) for t in (0, 5, 10, 60)] == [10, 10, 20, 20]
    linear = _curve("{series: {values: [10, 20], every: 10s, interpolate: linear}}")
    assert linear.at(5 * s) == 15


def test_a_recorded_series_is_read_from_a_csv_next_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "usage.csv").write_text("seconds,bytes\n0,100Mi\n30,1Gi\n")
    path = _write(tmp_path, BASE.replace("logs: 10Mi", "logs: {series: {file: usage.csv}}"))
    usage = load_scenario(path).pods[0].containers["app"]
    assert (usage.logs.at(0), usage.logs.at(45 * SECOND)) == (100 * MI, GI)


# -- one-line errors naming file, line and field -----------------------------------------------
def test_an_unknown_field_is_named_with_its_line(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE.replace("interval: 10s", "interval: 10s\nintervall: 5s"))
    assert err.line == 4 and err.field == "intervall" and "unknown field 'intervall'" in err.problem


def test_an_unknown_container_usage_field_is_named_with_its_line(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE.replace("processes: 3}", "procs: 3}"))
    assert (err.line, err.field) == (19, "pods[0].usage.app.procs")


def test_a_bad_quantity_is_named_with_its_line(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE.replace("logs: 10Mi", "logs: 10MB"))
    assert (err.line, err.field) == (19, "pods[0].usage.app.logs")
    assert "100Mi" in err.problem  # says what was expected


def test_a_bad_curve_is_named_with_its_line(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE.replace("{grow: {by: 100Mi, every: 10s}}", "{grwo: {by: 100Mi}}"))
    assert (err.line, err.field) == (19, "pods[0].usage.app.memory.grwo")
    assert "unknown curve kind 'grwo'" in err.problem and "ramp" in err.problem
    err = _error(tmp_path, BASE.replace("{grow: {by: 100Mi, every: 10s}}", "{grow: {by: 100Mi}}"))
    assert "needs 'every'" in err.problem


def test_a_curve_for_a_container_that_does_not_exist_is_named_with_its_line(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE + "      el9: {memory: 1Gi}\n")
    assert (err.line, err.field) == (20, "pods[0].usage.el9")
    assert "no container 'el9' in pod p (containers: app, side)" in err.problem


def test_volume_usage_needs_a_volume_of_the_pod(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE + "    volumes:\n      cache: {used: 1Gi}\n")
    assert err.field == "pods[0].volumes.cache" and "volumes: none" in err.problem


def test_recreate_needs_a_controller(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE + "    recreate: {after: 30s}\n")
    assert err.field == "pods[0].recreate" and "bare pod" in err.problem


def test_yaml_syntax_errors_give_the_line(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE.replace("duration: 1m", "duration: [1m"))
    assert err.line is not None and "not valid YAML" in err.problem


def test_eviction_settings_are_checked_where_they_are_written(tmp_path: Path) -> None:
    err = _error(tmp_path, BASE.replace("memory.available: 500Mi", "memory.availble: 500Mi"))
    assert (err.line, err.field) == (8, "kubelet.config.evictionHard.memory.availble")
    err = _error(tmp_path, BASE.replace("memory.available: 500Mi", "memory.available: 5OOMi"))
    assert err.field == "kubelet.config.evictionHard.memory.available"
    err = _error(
        tmp_path,
        BASE.replace("    evictionHard", "    mergeDefaultEvictionSettings: true\n    evictionHard").replace(
            "v1.32.0", "v1.30.0"
        ),
    )
    assert "added in 1.33" in err.problem
    err = _error(
        tmp_path,
        BASE.replace(
            "  config:\n    evictionHard: {memory.available: 500Mi}", "  flags: [--eviction-hardd=memory.available<1Gi]"
        ),
    )
    assert err.field == "kubelet.flags[0]" and "--eviction-hard" in err.problem
    err = _error(tmp_path, BASE.replace("v1.32.0", "v2.0.0"))
    assert err.field == "kubelet.version"


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read scenario"):
        load_scenario(tmp_path / "nope.yaml")


# -- kubelet settings ------------------------------------------------------------------------------
@pytest.mark.parametrize("minor", [29, 30, 32, 36])
def test_default_eviction_hard_matches_the_replay_port(minor: int) -> None:
    from replay.kubelet.config import default_eviction_hard as replay_defaults
    from replay.kubelet.versions import profile

    assert default_eviction_hard(minor) == replay_defaults(profile(f"1.{minor}"))


def test_kubelet_flags_become_the_configz_a_kubelet_would_report(tmp_path: Path) -> None:
    text = BASE.replace(
        "  config:\n    evictionHard: {memory.available: 500Mi}",
        "  flags: [eviction-hard=memory.available<1Gi, --kube-reserved=memory=256Mi,"
        " --eviction-pressure-transition-period=1m]",
    )
    node = load_scenario(_write(tmp_path, text)).nodes[0]
    config = node.kubelet.configz()["kubeletconfig"]
    assert config["evictionHard"] == {"memory.available": "1Gi"}  # the flag replaces the defaults wholesale
    assert config["evictionPressureTransitionPeriod"] == "1m0s"
    assert config["kubeReserved"] == {"memory": "256Mi"}
    # allocatable = capacity − reserved − hard eviction; the kubepods limit leaves out the eviction part
    assert node.allocatable["memory"] == f"{(4 * GI - 256 * MI - GI) // 1024}Ki"
    assert node.pods_memory_limit == 4 * GI - 256 * MI


def test_without_eviction_hard_the_version_defaults_apply(tmp_path: Path) -> None:
    text = BASE.replace("  config:\n    evictionHard: {memory.available: 500Mi}\n", "").replace("v1.32.0", "v1.29.3")
    config = load_scenario(_write(tmp_path, text)).nodes[0].kubelet.config
    assert "imagefs.inodesFree" not in config["evictionHard"]
    assert load_bundled("sidecar-stress", kubelet_version="1.32").nodes[0].kubelet.version == "v1.32.0"


# -- the generator ---------------------------------------------------------------------------------
def _ticks(scenario: Scenario) -> list[Any]:
    return list(ScenarioRun(scenario).ticks())


def test_node_usage_is_the_sum_of_pods_plus_the_system_share(tmp_path: Path) -> None:
    sc = load_scenario(_write(tmp_path, BASE))
    ticks = _ticks(sc)
    assert len(ticks) == sc.tick_count == 7
    node = ticks[3].summaries["n1"]["node"]
    (pod,) = ticks[3].summaries["n1"]["pods"]
    app = 300 * MI
    assert pod["memory"]["workingSetBytes"] == app
    assert node["memory"]["workingSetBytes"] == GI + app
    assert node["memory"]["availableBytes"] == 4 * GI - GI - app
    pods = node["systemContainers"][0]
    assert pods["name"] == "pods" and pods["memory"]["availableBytes"] == 4 * GI - app
    assert node["fs"]["usedBytes"] == 5 * GI + 2 * GI + 10 * MI  # system + images (shared fs) + logs
    assert node["fs"]["availableBytes"] == 50 * GI - node["fs"]["usedBytes"]
    # one device: imageFs and containerFs show nodefs' capacity and free space
    assert node["runtime"]["imageFs"]["availableBytes"] == node["fs"]["availableBytes"]
    assert node["rlimit"] == {"time": node["memory"]["time"], "maxpid": 4194304, "curproc": 100 + 3 + 1}
    assert pod["process_stats"] == {"process_count": 4}
    assert pod["ephemeral-storage"]["usedBytes"] == 10 * MI


def test_generated_summaries_round_trip_through_the_recording_codec(tmp_path: Path) -> None:
    from recordings.schema import SERIES
    from recordings.summary_codec import empty_columns

    for name in bundled_names():
        for tick in _ticks(load_bundled(name))[:3]:
            for node, summary in tick.summaries.items():
                tables = {t.name: empty_columns(t) for t in SERIES}
                encode(summary, tick=0, node=node, scraped=0, into=tables)
                rows = [
                    [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]
                    for cols in tables.values()
                ]
                assert decode(rows[0][0], *rows[1:]) == project(summary)


def test_a_dedicated_imagefs_holds_images_and_writable_layers_and_a_split_one_only_images(tmp_path: Path) -> None:
    dedicated = BASE.replace(
        "capacity: {memory: 4Gi, ephemeral-storage: 50Gi}",
        "capacity: {memory: 4Gi, ephemeral-storage: 50Gi}\n    filesystems: {imagefs: {capacity: 100Gi}}",
    )
    dedicated = dedicated.replace("logs: 10Mi", "logs: 10Mi, rootfs: 1Gi")
    node = _ticks(load_scenario(_write(tmp_path, dedicated)))[1].summaries["n1"]["node"]
    assert node["runtime"]["imageFs"]["usedBytes"] == 2 * GI + GI
    assert node["runtime"]["containerFs"] == node["runtime"]["imageFs"]
    assert node["fs"]["usedBytes"] == 5 * GI + 10 * MI
    split = dedicated.replace("{imagefs: {capacity: 100Gi}}", "{imagefs: {capacity: 100Gi}, containerfs: nodefs}")
    node = _ticks(load_scenario(_write(tmp_path, split, "split.yaml")))[1].summaries["n1"]["node"]
    assert node["runtime"]["imageFs"]["usedBytes"] == 2 * GI
    assert node["runtime"]["containerFs"] == node["fs"]
    assert node["fs"]["usedBytes"] == 5 * GI + 10 * MI + GI


def test_a_pod_starts_at_its_time_and_init_containers_run_before_the_app(tmp_path: Path) -> None:
    text = (
        BASE.replace("  - pod:\n", "  - start: 20s\n    pod:\n")
        .replace(
            "containers: [{name: app}, {name: side}]",
            "initContainers: [{name: init}, {name: sc, restartPolicy: Always}]\n        "
            "containers: [{name: app}, {name: side}]",
        )
        .replace("    usage:\n", "    usage:\n      init: {runFor: 20s}\n")
    )
    ticks = _ticks(load_scenario(_write(tmp_path, text)))
    assert ticks[1].summaries["n1"]["pods"] == []
    running = [[c["name"] for c in t.summaries["n1"]["pods"][0]["containers"]] for t in ticks[2:6]]
    # init containers run in order: the sidecar declared after "init" starts when it completes
    assert running == [["init"], ["init"], ["sc", "app", "side"], ["sc", "app", "side"]]
    app = ticks[5].summaries["n1"]["pods"][0]["containers"][1]
    assert app["memory"]["workingSetBytes"] == 100 * MI  # its curve starts when the container does
    (change,) = [c for c in ticks[2].objects if c.kind == "pod"]
    assert change.body["status"]["phase"] == "Running" and change.body["spec"]["nodeName"] == "n1"


def test_memory_medium_empty_dir_counts_as_memory_not_disk(tmp_path: Path) -> None:
    text = BASE.replace(
        "containers: [{name: app}, {name: side}]",
        "containers: [{name: app}, {name: side}]\n        "
        "volumes: [{name: shm, emptyDir: {medium: Memory}}, {name: scratch, emptyDir: {}}]",
    )
    text += "    volumes:\n      shm: {used: 64Mi}\n      scratch: {used: 1Gi}\n"
    pod = _ticks(load_scenario(_write(tmp_path, text)))[0].summaries["n1"]["pods"][0]
    assert pod["memory"]["workingSetBytes"] == 64 * MI
    assert pod["ephemeral-storage"]["usedBytes"] == 10 * MI + GI
    assert [v["name"] for v in pod["volume"]] == ["shm", "scratch"]


def test_an_evicted_pod_stops_using_anything_and_turns_failed(tmp_path: Path) -> None:
    run = ScenarioRun(load_scenario(_write(tmp_path, BASE)))
    ticks = run.ticks()
    first = next(ticks)
    uid = first.summaries["n1"]["pods"][0]["podRef"]["uid"]
    run.evicted(uid, first.time, "The node was low on resource: memory. ")
    second = next(ticks)
    assert second.summaries["n1"]["pods"] == []
    assert second.summaries["n1"]["node"]["memory"]["workingSetBytes"] == GI
    kinds = {c.kind: c for c in second.objects}
    assert kinds["pod"].body["status"]["phase"] == "Failed"
    assert kinds["pod"].body["status"]["reason"] == "Evicted"
    assert kinds["pod"].observed > first.time  # after the pass that decided it
    assert kinds["event"].body["reason"] == "Evicted" and kinds["event"].body["source"]["host"] == "n1"
    assert all(t.summaries["n1"]["pods"] == [] for t in ticks)


def test_a_controller_owned_pod_asked_to_be_recreated_comes_back_with_a_new_name(tmp_path: Path) -> None:
    text = BASE.replace(
        "metadata: {name: p, namespace: default}",
        "metadata: {name: web-6d4cf56db6-abcde, namespace: default, ownerReferences: "
        "[{kind: ReplicaSet, name: web-6d4cf56db6, controller: true}]}",
    )
    text += "    recreate: {after: 30s}\n"
    run = ScenarioRun(load_scenario(_write(tmp_path, text)))
    ticks = run.ticks()
    first = next(ticks)
    old = first.summaries["n1"]["pods"][0]["podRef"]
    run.evicted(old["uid"], first.time, "gone")
    pods = [next(ticks).summaries["n1"]["pods"] for _ in range(3)]
    assert pods[0] == [] and pods[1] == [] and len(pods[2]) == 1
    new = pods[2][0]["podRef"]
    assert new["uid"] != old["uid"] and new["name"].startswith("web-6d4cf56db6-") and new["name"] != old["name"]
    assert len(new["name"]) == len(old["name"])
    assert pods[2][0]["containers"][0]["memory"]["workingSetBytes"] == 0  # its curves start again


def test_node_conditions_change_the_node_object(tmp_path: Path) -> None:
    run = ScenarioRun(load_scenario(_write(tmp_path, BASE)))
    ticks = run.ticks()
    first = next(ticks)
    (node_obj,) = [c.body for c in first.objects if c.kind == "node"]
    assert node_obj["status"]["nodeInfo"]["kubeletVersion"] == "v1.32.0"
    run.set_node_conditions("n1", ("MemoryPressure",), first.time)
    (changed,) = [c.body for c in next(ticks).objects if c.kind == "node"]
    memory = next(c for c in changed["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (memory["status"], memory["reason"]) == ("True", "KubeletHasInsufficientMemory")
    assert changed["spec"]["taints"] == [{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]


def test_every_bundled_scenario_loads_and_the_issue_s_ones_are_there() -> None:
    names = bundled_names()
    for required in (
        "sidecar-stress",
        "k3d-operator-pod",
        "overcommit",
        "init-container-memory",
        "qos-contest",
        "disk-pressure",
        "pid-pressure",
        "soft-grace",
        "local-storage-limits",
    ):
        assert required in names
    for name in names:
        sc = load_bundled(name)
        assert sc.name == name and sc.description


def test_pods_can_come_from_kubectl_get_pods_json(tmp_path: Path) -> None:
    import json

    (tmp_path / "pods.json").write_text(
        json.dumps(
            {
                "kind": "PodList",
                "items": [
                    {
                        "metadata": {"name": "a", "namespace": "x", "uid": "u-a"},
                        "spec": {"containers": [{"name": "c"}]},
                        "status": {"phase": "Pending", "qosClass": "BestEffort"},
                    },
                    {"metadata": {"name": "b", "namespace": "x"}, "spec": {"containers": [{"name": "c"}]}},
                ],
            }
        )
    )
    text = BASE.split("pods:\n")[0] + "pods:\n  - file: pods.json\n    usage: {c: {memory: 1Mi}}\n"
    sc = load_scenario(_write(tmp_path, text))
    assert [p.name for p in sc.pods] == ["a", "b"]
    pods = _ticks(sc)[0].summaries["n1"]["pods"]
    assert [(p["podRef"]["uid"] == "u-a", p["memory"]["workingSetBytes"]) for p in pods] == [(True, MI), (False, MI)]
    only = text.replace("file: pods.json", "file: pods.json\n    name: b")
    assert [p.name for p in load_scenario(_write(tmp_path, only, "only.yaml")).pods] == ["b"]
    err = _error(tmp_path, text.replace("c: {memory", "d: {memory"))
    assert err.field == "pods[0].usage.d"
