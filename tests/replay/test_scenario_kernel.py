"""Modelled kernel kills through the replay (issue 17 items 3 and 5): a scenario recording's OOMKilled containers
and SystemOOM Events are its ground truth in the replay's ``kernel_kills``, and a variant regenerated closed-loop
reports *its own* kills — the default threshold's OOM, the tuned settings' eviction without one."""

from __future__ import annotations

from pathlib import Path

import pytest

from recordings.reader import open_recording
from recordings.scenarios import load_bundled
from replay.cli import main
from replay.engine import replay
from replay.kubelet.config import FlagOverrides
from replay.scenario import CLOSED_LOOP, run_scenario
from replay.settings import SettingsRequest

TUNED_FLAGS = (
    "--eviction-hard=memory.available<10%",
    "--eviction-soft=memory.available<20%",
    "--eviction-soft-grace-period=memory.available=30s",
)
TUNED = SettingsRequest(
    label="tuned",
    overrides=FlagOverrides(
        eviction_hard=("memory.available<10%",),
        eviction_soft=("memory.available<20%",),
        eviction_soft_grace_period=("memory.available=30s",),
    ),
)
LOWER = SettingsRequest(label="lower", overrides=FlagOverrides(eviction_hard=("memory.available<50Mi",)))
JVM = "orders-jvm-7d9c6b8f5-k2xqp"


@pytest.fixture(scope="module")
def jvm_default(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("jvm") / "rec"
    run_scenario(load_bundled("jvm-spike"), out)
    return out


@pytest.fixture(scope="module")
def jvm_tuned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("jvm-tuned") / "rec"
    run_scenario(load_bundled("jvm-spike", kubelet_flags=TUNED_FLAGS), out, kubelet_flags=TUNED_FLAGS)
    return out


def _kills(result: object) -> list[tuple[str, str | None, str | None, str, str | None]]:
    return [
        (k.kind, k.pod, k.container, k.time.strftime("%H:%M:%S"), k.message)
        for k in result.kernel_kills  # type: ignore[attr-defined]
    ]


def test_jvm_spike_with_the_default_threshold_replays_a_kernel_oom_and_no_eviction(jvm_default: Path) -> None:
    (result,) = replay(open_recording(jvm_default), [SettingsRequest()], jobs=1)
    assert result.evictions == ()
    assert _kills(result) == [
        ("SystemOOM", None, None, "00:03:24", "System OOM encountered, victim process: java, pid: 4001"),
        ("OOMKilled", JVM, "orders", "00:03:24", None),
    ]
    oom = result.kernel_kills[1]
    assert (oom.exit_code, oom.namespace) == (137, "shop")
    (node,) = result.nodes
    (race,) = node.too_fast
    assert (race.from_time.strftime("%H:%M:%S"), race.to_time.strftime("%H:%M:%S"), race.kills) == (
        "00:03:20",
        "00:03:30",
        1,
    )


def test_jvm_spike_with_the_tuned_settings_evicts_the_jvm_at_2_40_and_the_kernel_never_acts(jvm_tuned: Path) -> None:
    (result,) = replay(open_recording(jvm_tuned), [SettingsRequest()], jobs=1)
    assert [(e.node, e.pod, e.time.strftime("%H:%M:%S"), e.hard) for e in result.evictions] == [
        ("worker-1", JVM, "00:02:40", False)
    ]
    assert result.kernel_kills == ()
    assert all(not n.too_fast for n in result.nodes)


def test_a_regenerated_variant_reports_its_own_modelled_kills(jvm_default: Path) -> None:
    # from the default recording: the tuned variant is regenerated and has no kill, the recorded one keeps its OOM
    recorded, tuned = replay(open_recording(jvm_default), [SettingsRequest(), TUNED], jobs=1)
    assert [k[0] for k in _kills(recorded)] == ["SystemOOM", "OOMKilled"]
    assert tuned.settings["closed_loop"] == CLOSED_LOOP
    assert tuned.kernel_kills == () and [e.pod for e in tuned.evictions] == [JVM]
    # a variant that is regenerated and still too slow reports the kills of its own loop
    (lower,) = replay(open_recording(jvm_default), [LOWER], jobs=1)
    assert lower.settings["closed_loop"] == CLOSED_LOOP
    assert lower.evictions == ()
    assert [(k[0], k[1], k[3]) for k in _kills(lower)] == [
        ("SystemOOM", None, "00:03:24"),
        ("OOMKilled", JVM, "00:03:24"),
    ]


def test_the_scenario_command_takes_the_tuned_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["scenario", "--sample", "jvm-spike", "-o", str(tmp_path / "rec")]
    argv += ["--eviction-hard", "memory.available<10%", "--eviction-soft", "memory.available<20%"]
    argv += ["--eviction-soft-grace-period", "memory.available=30s"]
    assert main(argv) == 0
    assert JVM in capsys.readouterr().out
    assert not [r for r in open_recording(tmp_path / "rec").kernel_events() if r["kind"] != "NodeReady"]


def test_container_limit_replays_five_oom_kills_and_no_eviction(tmp_path: Path) -> None:
    run_scenario(load_bundled("container-limit"), tmp_path / "rec")
    (result,) = replay(open_recording(tmp_path / "rec"), [SettingsRequest()], jobs=1)
    assert result.evictions == ()
    assert [(k[0], k[1], k[2], k[3]) for k in _kills(result)] == [
        ("OOMKilled", "report-worker-6c9f7d8b4-t5m2k", "worker", t)
        for t in ("00:01:01", "00:02:03", "00:03:14", "00:04:35", "00:06:16")
    ]
    assert [k.restart_count for k in result.kernel_kills] == [0, 1, 2, 3, 4]
    assert all(not n.too_fast for n in result.nodes)  # a container at its own limit is no race with the kubelet


def test_no_system_reserved_replays_the_ready_flap_and_the_system_oom(tmp_path: Path) -> None:
    run_scenario(load_bundled("no-system-reserved"), tmp_path / "rec")
    (result,) = replay(open_recording(tmp_path / "rec"), [SettingsRequest()], jobs=1)
    assert result.evictions == ()
    assert [(k[0], k[1], k[3]) for k in _kills(result)] == [
        ("SystemOOM", None, "00:07:10"),
        ("OOMKilled", "report-28913760-7xk2p", "00:07:10"),
    ]
    assert [(r.time.strftime("%H:%M:%S"), r.status, r.reason) for r in result.ready_transitions] == [
        ("00:00:00", "True", "KubeletReady"),  # the generated node turns Ready at the first tick
        ("00:06:39", "Unknown", "NodeStatusUnknown"),
        ("00:07:10", "True", "KubeletReady"),
    ]


MEMCG = """\
kind: Scenario
name: memcg
duration: 40s
kubelet:
  version: v1.32.0
  config: {evictionHard: {memory.available: 1Gi}, kernelMemcgNotification: NOTIFY}
nodes:
  - name: n1
    capacity: {memory: 4Gi, ephemeral-storage: 50Gi}
    system: {memory: 1Gi}
pods:
  - pod:
      metadata: {name: grower}
      spec: {containers: [{name: c}]}
    usage: {c: {memory: {ramp: {from: 1Gi, to: 3Gi, over: 25s}}}}
"""


@pytest.mark.parametrize(("notify", "evicted_at"), [("false", "00:00:20"), ("true", "00:00:13")])
def test_kernel_memcg_notification_runs_a_pass_when_memory_available_crosses_a_threshold(
    tmp_path: Path, notify: str, evicted_at: str
) -> None:
    import textwrap

    from recordings.scenarios import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(MEMCG).replace("NOTIFY", notify))
    # 4Gi − 1Gi − (1Gi + 2Gi·t/25s) falls below 1Gi at 12.5 s: the notifier fires at the 13 s step; the 10 s loop
    # alone sees it at 20 s
    outcome = run_scenario(load_scenario(path), tmp_path / "rec")
    assert [(e.pod, e.time.strftime("%H:%M:%S")) for e in outcome.evictions] == [("grower", evicted_at)]
    # with the notifier: two passes more, at 13 s and at 14 s (the evicted pod's memory gone, available crosses back
    # over the level: memcg thresholds notify both ways)
    assert outcome.ticks == (7 if notify == "true" else 5)
    # the recording keeps the notification's pass as a tick: replaying it reproduces the eviction
    (result,) = replay(open_recording(tmp_path / "rec"), [SettingsRequest()], jobs=1)
    assert [(e.pod, e.time.strftime("%H:%M:%S")) for e in result.evictions] == [("grower", evicted_at)]
    assert result.kernel_kills == ()


def test_the_scenario_command_prints_and_keeps_the_kernel_kills(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    assert main(["scenario", "--sample", "jvm-spike", "-o", str(tmp_path / "rec")]) == 0
    out = capsys.readouterr().out
    assert (
        "kernel OOM-killed shop/orders-jvm-7d9c6b8f5-k2xqp container orders (java, pid 4001; node out of memory)" in out
    )
    assert main(["scenario", "--sample", "container-limit", "-o", str(tmp_path / "rec2"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(k["time"], k["scope"], k["restart"]) for k in doc["kernel_kills"]][:2] == [
        ("2025-01-01T00:01:01Z", "container", "2025-01-01T00:01:02Z"),
        ("2025-01-01T00:02:03Z", "container", "2025-01-01T00:02:13Z"),
    ]
