"""The kernel inside scenarios (issue 17): OOM kills at a container's limit, at the kubepods limit and node-wide,
chosen by oom_badness with the kubelet's oom_score_adj, restarted with the crash-loop back-off; the recording keeps
the pod statuses and SystemOOM Events the kernel_events table is derived from."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from recordings.scenarios import ScenarioRun, load_bundled, load_scenario
from recordings.scenarios.generator import KernelKill
from recordings.scenarios.oomkiller import Backoff, backoff_for, process_name, system_oom_message
from recordings.scenarios.units import SECOND

GI, MI = 1 << 30, 1 << 20
T0 = 1735689600 * SECOND  # 2025-01-01T00:00:00Z


def _run(scenario: Any) -> tuple[ScenarioRun, list[Any]]:
    run = ScenarioRun(scenario)
    ticks = list(run.ticks())
    return run, ticks


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def _kills(run: ScenarioRun) -> list[tuple[str, str, int, str, int | None]]:
    return [
        (k.pod, k.container, (k.at - T0) // SECOND, k.scope, k.restart_at and (k.restart_at - T0) // SECOND)
        for k in run.kernel_kills
    ]


# -- the crash-loop back-off (client-go flowcontrol as the kubelet uses it) ---------------------------------------
def test_the_back_off_restarts_at_once_then_after_10s_doubling_to_5m_and_starts_over_after_10_minutes() -> None:
    b, key, now = Backoff(), "pod/c", 0
    delays = []
    for _ in range(9):
        restart = b.restart_at(key, now)
        delays.append((restart - now) // SECOND)
        b.next(key, now, restart)
        now = restart + 5 * SECOND  # dies 5 s after each start
    assert delays == [1, 10, 20, 40, 80, 160, 300, 300, 300]
    later = now + 601 * SECOND  # lastUpdate (the last start) more than 600 s ago: a fresh entry
    assert b.restart_at(key, later) == later + SECOND
    assert backoff_for(33, {"ReduceDefaultCrashLoopBackOffDecay": True}) == Backoff(SECOND, 60 * SECOND)
    assert backoff_for(32, {"ReduceDefaultCrashLoopBackOffDecay": True}) == Backoff()


def test_the_reduced_back_off_still_starts_over_only_after_600s_not_twice_its_60s_maximum() -> None:
    """kubelet.go overrides client-go's 2 × maximum with a fixed 600 s: at 1 s … 60 s a container that ran 200 s
    before dying again is still at 60 s."""
    b, key, now = backoff_for(33, {"ReduceDefaultCrashLoopBackOffDecay": True}), "pod/c", 0
    for _ in range(8):  # 1, 2, 4, … capped at 60 s
        restart = b.restart_at(key, now)
        b.next(key, now, restart)
        now = restart + SECOND
    assert b.get(key) == 60 * SECOND
    died = now + 200 * SECOND
    assert b.restart_at(key, died) == died + 60 * SECOND
    died = now + 601 * SECOND
    assert b.restart_at(key, died) == died + SECOND  # 10 min quiet: a fresh entry, the restart at once


def test_system_oom_message_is_the_oom_watcher_s() -> None:
    assert system_oom_message("java", 4242) == "System OOM encountered, victim process: java, pid: 4242"
    assert system_oom_message("", 0) == "System OOM encountered"
    assert process_name({"name": "c", "command": ["/usr/bin/java", "-jar"]}) == "java"
    assert process_name({"name": "c", "image": "docker.io/library/redis:7"}) == "redis"
    assert process_name({"name": "c", "image": "registry/averyveryverylongprocessname:1"}) == "averyveryverylo"


# -- a container at its own limit --------------------------------------------------------------------------------
LIMIT = """\
kind: Scenario
name: limit
duration: 3m
kubelet: {version: v1.32.0}
nodes:
  - name: n1
    capacity: {memory: 8Gi, ephemeral-storage: 50Gi}
    system: {memory: 1Gi}
pods:
  - pod:
      metadata: {name: leaky, namespace: default}
      spec:
        restartPolicy: POLICY
        containers: [{name: app, image: leaky:1, resources: {requests: {memory: 256Mi}, limits: {memory: 512Mi}}}]
    usage:
      app: {memory: {ramp: {from: 100Mi, to: 1Gi, over: 40s}}}
"""


def test_a_container_reaching_its_limit_is_oom_killed_and_restarted_with_back_off(tmp_path: Path) -> None:
    run, ticks = _run(load_scenario(_write(tmp_path, LIMIT.replace("POLICY", "Always"))))
    # 100Mi + 924Mi·t/40s reaches 512Mi after 17.84 s: killed at 18 s, again 18 s after each start
    assert _kills(run)[:4] == [
        ("default/leaky", "app", 18, "container", 19),
        ("default/leaky", "app", 37, "container", 47),
        ("default/leaky", "app", 65, "container", 85),
        ("default/leaky", "app", 103, "container", 143),
    ]
    # the summary at 20 s shows the restarted container from its curve's start; at 40 s it is backing off
    pod20 = ticks[2].summaries["n1"]["pods"][0]
    assert pod20["containers"][0]["startTime"] == "2025-01-01T00:00:19Z"
    assert pod20["memory"]["workingSetBytes"] < 200 * MI
    assert ticks[4].summaries["n1"]["pods"][0]["containers"] == []
    statuses = [c.body for t in ticks for c in t.objects if c.kind == "pod"]
    waiting = [s["status"]["containerStatuses"][0] for s in statuses if "containerStatuses" in s["status"]]
    backoff = next(s for s in waiting if "waiting" in s["state"])
    assert backoff["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert backoff["state"]["waiting"]["message"].startswith(
        "back-off 10s restarting failed container=app pod=leaky_default("
    )
    assert backoff["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert backoff["lastState"]["terminated"]["exitCode"] == 137
    assert backoff["restartCount"] == 1
    assert all(s["status"]["phase"] == "Running" for s in statuses)


def test_restart_policy_never_leaves_the_container_terminated_and_the_pod_failed(tmp_path: Path) -> None:
    run, ticks = _run(load_scenario(_write(tmp_path, LIMIT.replace("POLICY", "Never"))))
    assert _kills(run) == [("default/leaky", "app", 18, "container", None)]
    last = [c.body for t in ticks for c in t.objects if c.kind == "pod"][-1]
    assert last["status"]["phase"] == "Failed"
    assert last["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"
    assert ticks[-1].summaries["n1"]["pods"] == []


# -- node-wide and kubepods OOM ------------------------------------------------------------------------------------
NODE = """\
kind: Scenario
name: node-oom
duration: 1m
kubelet: {version: v1.32.0}
nodes:
  - name: n1
    capacity: {memory: 4Gi, ephemeral-storage: 50Gi}
    system: {memory: 1Gi}
pods:
  - pod:
      metadata: {name: guaranteed}
      spec: {containers: [{name: db, resources: {requests: {cpu: "1", memory: 1Gi}, limits: {cpu: "1", memory: 1Gi}}}]}
    usage: {db: {memory: 900Mi}}
  - pod:
      metadata: {name: besteffort}
      spec: {containers: [{name: tool, command: [stress]}]}
    usage: {tool: {memory: {ramp: {from: 100Mi, to: 3Gi, over: 30s, start: 10s}}}}
"""


def test_a_node_out_of_memory_kills_the_highest_badness_between_two_passes_and_says_system_oom(tmp_path: Path) -> None:
    run, ticks = _run(load_scenario(_write(tmp_path, NODE)))
    # 1Gi system + 900Mi + (100Mi + 2972Mi·(t−10)/30) reaches 4Gi at t ≈ 30.9 s: killed at 31 s, between two passes
    # (BestEffort at 1000 against Guaranteed at −997), restarted at once (1 s, the PLEG relist)
    assert _kills(run)[0] == ("default/besteffort", "tool", 31, "node", 32)
    events = [c.body for t in ticks for c in t.objects if c.kind == "event" and c.body["reason"] == "SystemOOM"]
    assert events[0]["message"] == "System OOM encountered, victim process: stress, pid: 4002"
    assert events[0]["involvedObject"]["kind"] == "Node"
    # the kubelet's next pass sees the memory the kill freed: available never reads 0
    assert min(t.summaries["n1"]["node"]["memory"]["availableBytes"] for t in ticks) > 0


def test_the_kubepods_cgroup_at_its_limit_kills_a_pod_without_a_system_oom_event(tmp_path: Path) -> None:
    text = NODE.replace(
        "kubelet: {version: v1.32.0}", "kubelet: {version: v1.32.0, config: {systemReserved: {memory: 1Gi}}}"
    ).replace("system: {memory: 1Gi}", "system: {memory: 512Mi}")
    run, ticks = _run(load_scenario(_write(tmp_path, text)))
    # the pods' cgroup may use 3Gi: 900Mi + (100Mi + 2972Mi·(t−10)/30) reaches it at t ≈ 30.9 s (the node as a
    # whole would run out only at 36 s)
    assert _kills(run)[0][:4] == ("default/besteffort", "tool", 31, "pods")
    assert not [c for t in ticks for c in t.objects if c.kind == "event" and c.body["reason"] == "SystemOOM"]


def test_jvm_spike_with_the_default_threshold_is_a_global_oom_of_java_at_3_24() -> None:
    run, _ = _run(load_bundled("jvm-spike"))
    assert [(k.node, k.pod, k.container, k.at - T0, k.scope, k.process) for k in run.kernel_kills] == [
        ("worker-1", "shop/orders-jvm-7d9c6b8f5-k2xqp", "orders", 204 * SECOND, "node", "java")
    ]
    assert isinstance(run.kernel_kills[0], KernelKill)


@pytest.mark.parametrize("name", ["jvm-spike", "container-limit", "no-system-reserved"])
def test_issue_17_bundled_scenarios_are_listed(name: str) -> None:
    from recordings.scenarios import bundled_names

    assert name in bundled_names()


def test_container_limit_kills_the_worker_five_times_with_the_crash_loop_back_off() -> None:
    run, ticks = _run(load_bundled("container-limit"))
    # 150Mi + 6Mi/s reaches 512Mi 60.3 s into each run; restarts at once, then after 10 s, 20 s, 40 s, 80 s
    pod = "batch/report-worker-6c9f7d8b4-t5m2k"
    assert _kills(run) == [
        (pod, "worker", 61, "container", 62),
        (pod, "worker", 123, "container", 133),
        (pod, "worker", 194, "container", 214),
        (pod, "worker", 275, "container", 315),
        (pod, "worker", 376, "container", 456),
    ]
    messages = [
        s["state"]["waiting"]["message"].split(" restarting")[0]
        for t in ticks
        for c in t.objects
        if c.kind == "pod" and "containerStatuses" in c.body["status"]
        for s in c.body["status"]["containerStatuses"]
        if "waiting" in s["state"]
    ]
    assert messages == ["back-off 10s", "back-off 20s", "back-off 40s", "back-off 1m20s"]
    # the node never comes near pressure: 4Gi − 800Mi − at most 512Mi − 90Mi
    assert min(t.summaries["worker-1"]["node"]["memory"]["availableBytes"] for t in ticks) > 2 * GI


def test_no_system_reserved_starves_the_kubelet_then_the_kernel_kills_the_best_effort_job() -> None:
    run, ticks = _run(load_bundled("no-system-reserved"))
    # 16Gi − 12644Mi of pods − (3000Mi + 2Mi/s from 1:00) is at most 1% of capacity from 5:49: thrashing, and the
    # daemons are over their (empty) reservation; the node runs out at 7:10
    assert _kills(run) == [("prod/report-28913760-7xk2p", "report", 430, "node", None)]
    gaps = [(t.time - T0) // SECOND for t in ticks if t.gaps]
    assert gaps == list(range(350, 430, 10))
    assert all("worker-1" not in t.summaries for t in ticks if t.gaps)
    nodes = [(c.observed, c.body) for t in ticks for c in t.objects if c.kind == "node"]
    ready = [
        (obs // SECOND - T0 // SECOND, next(x for x in b["status"]["conditions"] if x["type"] == "Ready"))
        for obs, b in nodes
    ]
    unknown = [(t, c) for t, c in ready if c["status"] == "Unknown"]
    assert [(t, c["reason"], c["message"], c["lastTransitionTime"]) for t, c in unknown] == [
        (399, "NodeStatusUnknown", "Kubelet stopped posting node status.", "2025-01-01T00:06:39Z")
    ]
    assert ready[-1][1]["status"] == "True" and ready[-1][1]["lastTransitionTime"] == "2025-01-01T00:07:10Z"
    tainted = next(b for _, b in nodes if any(x["status"] == "Unknown" for x in b["status"]["conditions"]))
    assert {t["key"] for t in tainted["spec"]["taints"]} == {"node.kubernetes.io/unreachable"}
    job = [
        c.body for t in ticks for c in t.objects if c.kind == "pod" and c.body["metadata"]["name"].startswith("report")
    ]
    assert job[-1]["status"]["phase"] == "Failed"


def test_a_reservation_covering_the_daemons_keeps_the_kubelet_alive_and_the_kernel_kills_in_kubepods(
    tmp_path: Path,
) -> None:
    from recordings.scenarios import bundled_text

    text = (
        bundled_text("no-system-reserved")
        .decode()
        .replace("  version: v1.32.0\n", "  version: v1.32.0\n  config: {systemReserved: {memory: 4Gi}}\n", 1)
    )
    run, ticks = _run(load_scenario(_write(tmp_path, text)))
    assert not [t for t in ticks if t.gaps]  # the daemons stay within 4Gi: the kubelet never starves
    assert run.kernel_kills[0].scope == "pods"  # 12644Mi of pods do not fit the 12Gi kubepods cgroup
