"""Explaining one summary: one eviction-manager pass, with the reasons (``evictlens explain``'s domain).

The smallest end-to-end use: users already have ``kubectl get --raw .../stats/summary``,
``kubectl get pods -o json``, ``kubectl get node -o json`` and ``.../proxy/configz`` output. This
module turns them into a plain :class:`Explanation` (no rendering here; see :mod:`replay.report`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from replay.context import active_pods, infer_topology, pods_from_summary, resolve_profile
from replay.kubelet.api import Node, Pod, Summary, parse_summary
from replay.kubelet.conditions import node_conditions as node_conditions_of
from replay.kubelet.config import EvictionConfig, config_from_flags
from replay.kubelet.duration import format_duration
from replay.kubelet.manager import EvictionManager, FsTopology, SyncResult
from replay.kubelet.ranking import RankFacts, rank_facts
from replay.kubelet.thresholds import Threshold, get_threshold_quantity
from replay.kubelet.versions import VersionProfile
from replay.settings import detect_platform

SAMPLES = ("kind-sidecars",)


@dataclass(frozen=True)
class ObservationRow:
    signal: str
    available: str
    capacity: str
    thresholds: tuple[tuple[str, str, bool], ...]
    """(threshold description, threshold quantity, met now)."""


@dataclass(frozen=True)
class Explanation:
    node_name: str
    kubelet_version: str
    version_note: str
    config_source: str
    topology: FsTopology
    topology_note: str
    pods_note: str
    observations: tuple[ObservationRow, ...]
    result: SyncResult
    ranking: tuple[RankFacts, ...]
    hypothetical: SyncResult | None = None
    hypothetical_note: str = ""
    hypothetical_ranking: tuple[RankFacts, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    node_facts: tuple[tuple[str, str], ...] = ()
    """What the node object says (allocatable, reported pressure conditions), to compare with the verdict."""
    moment: str = ""
    """For a moment of a recording: which tick and sample time this pass is."""
    state: ManagerState | None = None
    """The manager's state after this pass (a replay carries it from pass to pass)."""


@dataclass(frozen=True)
class ManagerState:
    """What the eviction manager remembers between passes (eviction_manager.go: managerImpl fields)."""

    thresholds_first_observed: tuple[tuple[str, datetime], ...] = ()
    """Threshold met (ignoring grace) → when first observed met, in the current streak."""
    grace_remaining: tuple[tuple[str, int], ...] = ()
    """Soft threshold met but not yet past its grace period → nanoseconds left."""
    conditions_last_observed: tuple[tuple[str, datetime], ...] = ()
    conditions_held: tuple[tuple[str, datetime], ...] = ()
    """Conditions reported only because of the pressure transition period → held until."""


def manager_state(manager: EvictionManager, result: SyncResult) -> ManagerState:
    """Read the state a pass leaves behind, for people (nothing here feeds back into the manager)."""
    from datetime import timedelta

    now = result.now
    order = {id(t): i for i, t in enumerate(manager.thresholds)}  # Go keeps a map: show the configured order
    observed = sorted(manager.thresholds_first_observed_at.items(), key=lambda tw: order.get(id(tw[0]), len(order)))
    first = tuple((t.describe(), when) for t, when in observed)
    remaining = []
    for t, when in observed:
        left = t.grace_period - int((now - when) / timedelta(microseconds=1)) * 1000
        if t.grace_period > 0 and left > 0:
            remaining.append((t.describe(), left))
    last = tuple(sorted(manager.node_conditions_last_observed_at.items()))
    met_now = {c for c in node_conditions_of(result.thresholds_met)}
    period = timedelta(microseconds=manager.config.pressure_transition_period // 1000)
    held = tuple((c, when + period) for c, when in last if c in result.node_conditions and c not in met_now)
    return ManagerState(first, tuple(remaining), last, held)


def _strip_times(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {k: _strip_times(v) for k, v in obj.items() if k != "time"}
    if isinstance(obj, list):
        return [_strip_times(v) for v in obj]
    return obj


def _wrapped_counters(obj: Any, path: str = "") -> list[str]:
    """Counters ≥ 2^63 become negative in the kubelet's int64 cast; say so where it happens."""
    found: list[str] = []
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            found += _wrapped_counters(value, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            found += _wrapped_counters(value, f"{path}[{i}]")
    elif isinstance(obj, int) and not isinstance(obj, bool) and obj >= 1 << 63 and path.startswith("node."):
        found.append(f"{path} = {obj} is ≥ 2^63: the kubelet casts it to int64, giving {obj - (1 << 64)} (as here)")
    return found


def _observation_rows(result: SyncResult, config: Sequence[Threshold]) -> tuple[ObservationRow, ...]:
    rows = []
    met = set(map(id, result.thresholds_met))
    for signal, obs in result.observations.items():
        entries = []
        for t in config:
            if t.signal != signal:
                continue
            q = get_threshold_quantity(t.value, obs.capacity)
            is_met = any(m == t for m in result.thresholds_met) or id(t) in met
            entries.append((t.describe(), str(q), is_met))
        rows.append(ObservationRow(signal, str(obs.available), str(obs.capacity), tuple(entries)))
    return tuple(rows)


def _other_node_notes(summary: Summary, node: Node | None, pods: Sequence[Pod] | None) -> list[str]:
    """The node object or pods given beside a summary may be another node's: say so (the pass then mixes
    two nodes' facts, or leaves those pods out)."""
    out: list[str] = []
    stats_uids = {p.pod_ref.uid for p in summary.pods if p.pod_ref.uid}
    bound_elsewhere = any(p.node_name and p.node_name != summary.node.node_name for p in pods or ())
    if pods and stats_uids and not bound_elsewhere and not any(p.uid in stats_uids for p in pods):
        out.append(
            f"none of the {len(pods)} pods given has stats in this summary (no UID matches any of its "
            f"{len(stats_uids)} pods): the pod list is of another node or another time, and its pods rank as "
            "having no stats — pass the pod list of this node taken with the summary"
        )
    summary_node = summary.node.node_name
    if not summary_node:
        return out
    if node is not None and node.name and node.name != summary_node:
        out.append(
            f"the node object is {node.name}'s but the summary is {summary_node}'s: its version, OS, "
            "allocatable and conditions may not be this node's"
        )
    others = sorted({p.node_name for p in pods or () if p.node_name and p.node_name != summary_node})
    if others:
        count = sum(1 for p in pods or () if p.node_name in others)
        out.append(
            f"{count} of the {len(pods or ())} pods given are bound to another node ({', '.join(others)}), "
            f"not {summary_node}: left out of this pass"
        )
    return out


def explain(
    raw_summary: Any,
    summary_source: str,
    *,
    pods: Sequence[Pod] | None,
    node: Node | None,
    config: EvictionConfig | None,
    version: str | None,
    feature_gates: Mapping[str, bool] | None = None,
    topology: FsTopology | None = None,
    now: datetime | None = None,
    platform: tuple[str, str] | None = None,
) -> Explanation:
    """``platform``: (OS, where it was read) when the caller knows more than ``node`` (settings.detect_platform
    over the raw pods)."""
    summary = parse_summary(raw_summary, source=summary_source)
    notes: list[str] = []
    prof, version_note = resolve_profile(version, node, feature_gates)
    notes.extend(_wrapped_counters(raw_summary))
    notes.extend(_other_node_notes(summary, node, pods))
    if platform is None:
        platform = detect_platform(node, (), lambda: [c.name for c in summary.node.system_containers])
    node_os = platform[0]
    if platform[1] != "from the node object":
        notes.append(f"platform {node_os} {platform[1]}")
    if node_os == "windows" and prof.windows_memory_pressure:
        notes.append(
            "Windows node: memory.available comes from the windows-global-commit-memory system container "
            "(commit charge), as in helpers_windows.go (PR #122922, 1.31)"
        )
        if not any(c.name == "windows-global-commit-memory" for c in summary.node.system_containers):
            notes.append(
                "this Windows summary has no windows-global-commit-memory system container (kubelets "
                "report it since Windows memory-pressure eviction, PR #122922): no memory.available "
                "observation, so memory thresholds are not evaluated"
            )
    elif node_os == "windows":
        notes.append(
            f"Windows node with a {prof.version} kubelet: memory.available is built from node.memory as on every "
            "platform (helpers.go) and the defaults are defaults_others.go's; the Windows commit-memory signal and "
            "its 500Mi default came in 1.31 (PR #122922)"
        )
    if config is None:
        config = config_from_flags(prof, os=node_os)
        notes.append("no kubelet configuration given: using the kubelet's default evictionHard for this version")
    if topology is None:
        topology, topology_note = infer_topology(summary)
    else:
        topology_note = "filesystems as given on the command line"
    if pods is None:
        pods = pods_from_summary(raw_summary, summary_source)
        pods_note = (
            "pods built from the summary alone: requests, priority, QoS, init/sidecar containers and "
            "critical-pod annotations are unknown (treated as none) — pass --pods for exact results"
        )
    else:
        pods_note = f"{len(pods)} pods given"
    active = active_pods(pods, summary.node.node_name)
    when = now or _summary_time(summary) or datetime.now(UTC)
    manager = EvictionManager(config, prof, topology, platform=node_os)
    result = manager.synchronize(summary, list(active), when)
    ranking = _ranking_facts(result, topology, prof)

    hypothetical = None
    hypothetical_note = ""
    hypothetical_ranking: tuple[RankFacts, ...] = ()
    waiting = [t for t in result.thresholds_met if t not in result.thresholds_actionable and t.grace_period > 0]
    if not result.evictions and waiting:
        longest = max(t.grace_period for t in waiting)
        later = when.timestamp() + longest / 1e9
        stale_free = parse_summary(_strip_times(raw_summary), source=summary_source)
        hypothetical = manager.synchronize(stale_free, list(active), datetime.fromtimestamp(later, UTC))
        hypothetical_note = (
            f"if these stats persisted for {format_duration(longest)} (the longest soft grace period met)"
        )
        hypothetical_ranking = _ranking_facts(hypothetical, topology, prof)
    return Explanation(
        node_name=summary.node.node_name,
        kubelet_version=prof.version,
        version_note=version_note,
        config_source=config.describe(),
        topology=topology,
        topology_note=topology_note,
        pods_note=pods_note,
        observations=_observation_rows(result, config.thresholds),
        result=result,
        ranking=ranking,
        hypothetical=hypothetical,
        hypothetical_note=hypothetical_note,
        hypothetical_ranking=hypothetical_ranking,
        notes=tuple(notes),
        node_facts=_node_facts(node),
        state=manager_state(manager, result),
    )


def _node_facts(node: Node | None) -> tuple[tuple[str, str], ...]:
    if node is None:
        return ()
    facts = []
    for resource in ("memory", "ephemeral-storage", "pods"):
        cap, alloc = node.capacity.get(resource), node.allocatable.get(resource)
        if cap is not None or alloc is not None:
            facts.append((f"{resource} capacity / allocatable", f"{cap} / {alloc}"))
    for condition in node.conditions:
        if condition.type in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            since = condition.last_transition_time.isoformat() if condition.last_transition_time else "?"
            facts.append((f"reported {condition.type}", f"{condition.status} since {since} ({condition.reason})"))
    return tuple(facts)


def _ranking_facts(result: SyncResult, topology: FsTopology, prof: VersionProfile) -> tuple[RankFacts, ...]:
    if result.threshold_to_reclaim is None or not result.ranking:
        return ()
    return tuple(
        rank_facts(
            result.ranking,
            result.stats,
            result.threshold_to_reclaim.signal,
            topology.dedicated_image_fs,
            topology.split_container_image_fs,
            prof,
        )
    )


def _summary_time(summary: Summary) -> datetime | None:
    node = summary.node
    for stats in (node.memory, node.fs):
        if stats is not None and stats.time is not None:
            return stats.time
    return None


# --- CLI ----------------------------------------------------------------------------------------
