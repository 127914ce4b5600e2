"""The closed loop: a scenario's generator and one eviction manager per node, tick by tick.

Each tick the generator reports every node's summary and the objects that changed; they are
written to the recording through the real writer (exactly what ``evictlens record`` would have
kept), then each node's :class:`~replay.kubelet.manager.EvictionManager` takes its pass over the
same data, and what it decides goes back into the generator: an evicted pod stops using
anything and turns ``Failed``/``Evicted`` with the kubelet's message (the recording's ground
truth), a controller-owned one asked to come back is recreated after its delay, the node's
pressure conditions change, and a pod starting under pressure goes through the kubelet's
admission. Replaying the recording later with the same kubelet therefore predicts the same
evictions with the same messages; with another version or threshold it shows the difference.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from recordings.errors import InputError
from recordings.format import Manifest
from recordings.scenarios import Scenario, ScenarioRun
from recordings.scenarios.units import format_duration
from recordings.summary_codec import EPOCH
from recordings.writer import RecordingWriter
from replay.context import active_pods
from replay.kubelet.api import Pod, parse_pod, parse_summary
from replay.kubelet.config import config_from_kubelet_configuration
from replay.kubelet.manager import EvictionManager, FsTopology
from replay.kubelet.versions import VersionProfile, profile


@dataclass(frozen=True)
class ScenarioEviction:
    """An eviction the kubelet made while the scenario ran (also in the recording's ground truth)."""

    node: str
    tick: int
    time: datetime
    namespace: str
    pod: str
    uid: str
    cause: str
    message: str
    owner_kinds: tuple[str, ...]


@dataclass(frozen=True)
class ScenarioOutcome:
    scenario: Scenario
    out: Path
    ticks: int
    kubelet_versions: Mapping[str, str]
    evictions: tuple[ScenarioEviction, ...]
    rejected: tuple[tuple[str, str, str], ...]
    """(node, namespace/name, message) of pods the kubelet refused to admit under pressure."""
    condition_changes: tuple[tuple[str, datetime, tuple[str, ...]], ...]


def _at(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def _profile(scenario: Scenario, node_name: str, feature_gates: Mapping[str, bool] | None) -> VersionProfile:
    node = scenario.node(node_name)
    label = "master" if node.kubelet.minor >= 38 else f"1.{node.kubelet.minor}"
    gates = {**node.kubelet.feature_gates, **(feature_gates or {})}
    try:
        return profile(label, gates)
    except InputError as err:
        raise InputError(err.problem, source=scenario.file, field=f"node {node_name}: kubelet") from None


def run_scenario(
    scenario: Scenario,
    out: str | Path,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    kubelet_flags: Sequence[str] = (),
) -> ScenarioOutcome:
    """Generate ``scenario`` closed-loop into a new recording at ``out``; ``kubelet_flags``: the command-line
    overrides the scenario was loaded with (recordings.scenarios.load_scenario), kept in the manifest."""
    root = Path(out)
    for template in scenario.pods:  # the port's own reading of each manifest, before any output exists
        try:
            parse_pod(template.manifest, source=scenario.file)
        except InputError as err:
            raise InputError(err.problem, source=scenario.file, line=template.line,
                             field=f"pod {template.namespace}/{template.name}: {err.field or 'manifest'}") from None
    managers: dict[str, EvictionManager] = {}
    for node in scenario.nodes:
        prof = _profile(scenario, node.name, feature_gates)
        config = config_from_kubelet_configuration(node.kubelet.configz(), source=f"{scenario.file} node {node.name}",
                                                   profile=prof)
        topology = FsTopology(node.dedicated_image_fs, node.split)
        managers[node.name] = EvictionManager(config, prof, topology)
    rejected: list[tuple[str, str, str]] = []

    def admit(node: str, manifest: Mapping[str, Any], at: int) -> tuple[bool, str, str]:
        verdict = managers[node].admit(parse_pod(manifest, source=f"{scenario.file} pod"))
        if not verdict.admit:
            meta = manifest["metadata"]
            rejected.append((node, f"{meta['namespace']}/{meta['name']}", verdict.message))
        return verdict.admit, verdict.reason, verdict.message

    run = ScenarioRun(scenario, admit=admit)
    options = {
        "scenario": scenario.name,
        "scenario_digest": scenario.digest,
        "scenario_file": Path(scenario.file).name,
        "interval": format_duration(scenario.interval),
        "duration": format_duration(scenario.duration),
        "closed_loop": True,
    }
    if kubelet_flags:
        options["kubelet_flags"] = list(kubelet_flags)
    created = not root.exists()
    if not created and (not root.is_dir() or any(root.iterdir())):
        raise InputError("already exists and is not an empty directory; give a new directory for the recording",
                         source=str(root), field="-o")
    writer = RecordingWriter(root, Manifest(source="scenario", options=options))
    evictions: list[ScenarioEviction] = []
    changes: list[tuple[str, datetime, tuple[str, ...]]] = []
    last_conditions: dict[str, tuple[str, ...]] = {n.name: () for n in scenario.nodes}
    pod_cache: dict[str, tuple[tuple[str, ...], list[Pod]]] = {}
    try:
        for tick in run.ticks():
            for change in tick.objects:
                writer.observe(change.kind, change.body, observed=change.observed, node=change.node)
            frame = writer.begin_tick(tick.time)
            for name, summary in tick.summaries.items():
                frame.add_summary(name, summary, scraped=tick.time, source=f"{scenario.name} {name} tick {tick.index}")
            writer.commit(frame)
            when = _at(tick.time)
            for name, manager in managers.items():
                parsed_summary = parse_summary(tick.summaries[name], source=f"scenario {name} tick {tick.index}")
                manifests = run.pods_in_force(name)
                key = tuple(f"{m['metadata']['uid']}/{m['status'].get('phase')}" for m in manifests)
                cached = pod_cache.get(name)
                if cached is None or cached[0] != key:
                    parsed = [parse_pod(m, source=f"{scenario.file} pod") for m in manifests]
                    cached = (key, parsed)
                    pod_cache[name] = cached
                result = manager.synchronize(parsed_summary, active_pods(cached[1], name), when)
                if result.error:
                    raise InputError(f"the kubelet's eviction manager refused to run: {result.error}",
                                     source=scenario.file, field=f"nodes {name}")
                if result.node_event:
                    run.node_event(name, "EvictionThresholdMet", result.node_event, tick.time)
                for ev in result.evictions:
                    conditions = None
                    if ev.condition is not None:
                        c = ev.condition
                        conditions = [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}]
                    run.evicted(ev.pod.uid, tick.time, ev.message, conditions=conditions)
                    evictions.append(ScenarioEviction(name, tick.index, when, ev.pod.namespace, ev.pod.name,
                                                      ev.pod.uid, ev.cause, ev.message, ev.pod.owner_kinds))
                run.set_node_conditions(name, result.node_conditions, tick.time)
                if tuple(result.node_conditions) != last_conditions[name]:
                    last_conditions[name] = tuple(result.node_conditions)
                    changes.append((name, when, last_conditions[name]))
        for change in run.drain():
            writer.observe(change.kind, change.body, observed=change.observed, node=change.node)
        writer.finalize()
    except BaseException:
        writer.close_after_failure()
        if created:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return ScenarioOutcome(scenario, root, scenario.tick_count, dict(writer.manifest.kubelet_versions),
                           tuple(evictions), tuple(rejected), tuple(changes))
