"""The replay results model: what a replay computed, as plain data every front end consumes.

Frozen dataclasses for the small things (settings, per-node summaries, evictions, matches) and
long-form polars frames with integers for the large ones (signals at every pass, condition
intervals). Nothing here formats for people: the CLI, the what-if comparison and the TUI render
from these values. :mod:`replay.results_io` writes and reads them (``replay/RESULTS.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

SCHEMA_VERSION = 4
"""Of the results directory (``replay/RESULTS.md``); readers refuse versions they do not know.
2: per-node ``horizon``/``horizon_reason``. 3: ``admission_rejections``. 4: ``kernel_kills``,
``ready_transitions``, per-node ``too_fast``."""
READABLE_VERSIONS = (1, 2, 3, 4)
"""Every version this evictlens ever wrote: an older results directory still opens (new keys take defaults)."""

TIME = pl.Datetime("us", "UTC")


def _schema(columns: dict[str, Any]) -> pl.Schema:
    return pl.Schema(columns)


SIGNALS_SCHEMA = _schema(
    {
        "node": pl.String,
        "tick": pl.Int64,
        "time": TIME,
        "signal": pl.String,
        "available": pl.Int64,
        "capacity": pl.Int64,
        "threshold_id": pl.Int32,
        "threshold_value": pl.Int64,
        "met": pl.Boolean,
        "actionable": pl.Boolean,
    }
)
"""One row per pass × observed signal × configured threshold on it (threshold columns null when none)."""

CONDITIONS_SCHEMA = _schema(
    {
        "node": pl.String,
        "condition": pl.String,
        "from": TIME,
        "to": TIME,
        "from_tick": pl.Int64,
        "to_tick": pl.Int64,
    }
)
"""One row per interval a node condition was on; ``to`` null when still on at the end of the replay."""

ANNOTATIONS = pl.List(pl.Struct({"key": pl.String, "value": pl.String}))

EVICTIONS_SCHEMA = _schema(
    {
        "eviction_id": pl.Int64,
        "node": pl.String,
        "tick": pl.Int64,
        "time": TIME,
        "namespace": pl.String,
        "pod": pl.String,
        "uid": pl.String,
        "owner_kind": pl.String,
        "owner_name": pl.String,
        "qos": pl.String,
        "priority": pl.Int64,
        "cause": pl.String,
        "signal": pl.String,
        "hard": pl.Boolean,
        "observed_available": pl.Int64,
        "threshold_value": pl.Int64,
        "grace_period_override": pl.Int64,
        "message": pl.String,
        "annotations": ANNOTATIONS,
        "comes_back": pl.Boolean,
        "impact": pl.String,
    }
)

RANKINGS_SCHEMA = _schema(
    {
        "eviction_id": pl.Int64,
        "node": pl.String,
        "tick": pl.Int64,
        "rank": pl.Int32,
        "namespace": pl.String,
        "pod": pl.String,
        "uid": pl.String,
        "qos": pl.String,
        "priority": pl.Int64,
        "has_stats": pl.Boolean,
        "exceeds_request": pl.Boolean,
        "usage": pl.Int64,
        "request": pl.Int64,
        "usage_above_request": pl.Int64,
        "process_count": pl.Int64,
        "critical": pl.Boolean,
        "reason": pl.String,
        "decided_by": pl.String,
        "margin": pl.Int64,
    }
)
"""The full ranking at each eviction, best candidate first, with why each pod sits where it does."""

OVERCOMMIT_SCHEMA = _schema(
    {
        "node": pl.String,
        "tick": pl.Int64,
        "time": TIME,
        "resource": pl.String,
        "requests": pl.Int64,
        "limits": pl.Int64,
        "allocatable": pl.Int64,
        "pods_without_limit": pl.Int64,
    }
)
"""Per pass × resource (memory, ephemeral-storage): Σ requests and Σ limits of the pods in force against the
node's allocatable (``kubectl describe node``'s "Allocated resources"); a container without a limit adds
nothing to ``limits`` and its pod is counted in ``pods_without_limit``; ``allocatable`` null when the recording
has no node object."""


@dataclass(frozen=True)
class ThresholdSetting:
    """One effective threshold of a node (api/types.go: Threshold), in integers."""

    id: int
    signal: str
    operator: str
    quantity: int | None
    """Bytes or count; None for a percentage."""
    percentage: float | None
    """Fraction of capacity (float32 as the kubelet parsed it); None for a quantity."""
    grace_period_ns: int
    hard: bool
    min_reclaim_quantity: int | None
    min_reclaim_percentage: float | None
    text: str
    """As configured, e.g. ``memory.available<1536Mi``."""


@dataclass(frozen=True)
class TooFast:
    """Memory fell from above the hard threshold to exhaustion between two passes: the kubelet, acting only at
    its passes, had no pass at which to evict before the kernel had to (``replay.kernel.too_fast``)."""

    node: str
    signal: str
    from_tick: int
    from_time: datetime
    from_available: int
    """At the pass before: above every hard threshold on the signal (the kubelet saw nothing to act on)."""
    to_tick: int
    to_time: datetime
    to_available: int
    """At the next pass: at most ``exhausted_below``, or anything when a node-wide kernel kill came in between (it
    freed memory again)."""
    threshold_value: int | None
    """The highest hard threshold on the signal, resolved against capacity (None: no hard threshold)."""
    exhausted_below: int
    """What counts as exhausted: ``max(64Mi, 1% of capacity)``."""
    kills: int
    """Node-wide kernel kills (``SystemOOM``) recorded on the node after the first pass, up to the second."""
    seconds: float
    """How fast: from the first pass to the first kernel kill in between, else to the second pass."""
    fell_bytes: int
    """How far: ``from_available − to_available``, or all of ``from_available`` when a kill shows memory ran
    out."""


@dataclass(frozen=True)
class NodeResult:
    """One node: the kubelet it was replayed as, its effective settings with their sources, and counts."""

    node: str
    kubelet_version: str
    version_source: str
    platform: str
    dedicated_image_fs: bool
    split_container_image_fs: bool
    topology_source: str
    config_source: str
    settings_sources: Mapping[str, str]
    """KubeletConfiguration field → where its value came from (a flag, a file, /configz, defaults)."""
    thresholds: tuple[ThresholdSetting, ...]
    pressure_transition_period_ns: int
    max_pod_grace_period_s: int
    passes: int
    gaps: int
    errors: tuple[str, ...]
    reasons: Mapping[str, int]
    """Why each pass ended as it did, counted."""
    first_time: datetime | None
    last_time: datetime | None
    overcommit_lead_s: Mapping[str, float] = field(default_factory=dict)
    """Resource → seconds the node had been overcommitted (Σ limits > allocatable, without a break) when its
    first eviction came; only resources overcommitted at that pass, empty with no eviction."""
    horizon: datetime | None = None
    """As recorded until then: the first moment the replay and the recording part ways on this node (a real
    eviction the replay does not make, or one it makes that the recording does not show). After it the
    recording shows a world the replay's settings would not have produced; None: they never part."""
    horizon_reason: str = ""
    """What parted them, e.g. ``the replay evicts default/web-1, which the recording does not show evicted``."""
    too_fast: tuple[TooFast, ...] = ()
    """Every moment memory fell from above the hard threshold to exhaustion between two of the node's passes."""


@dataclass(frozen=True)
class RankedPod:
    """A pod's place in the ranking and the comparator inputs that put it there (ranking.go)."""

    rank: int
    namespace: str
    pod: str
    uid: str
    qos: str
    priority: int
    has_stats: bool
    exceeds_request: bool | None
    usage: int | None
    request: int | None
    usage_above_request: int | None
    process_count: int | None
    critical: bool
    reason: str
    decided_by: str = ""
    """Against the evicted pod: ``evicted`` (this is it), ``critical`` (never evicted, wherever it ranks), or the
    first comparator that put this pod behind it: ``stats``, ``exceeds request``, ``priority``, ``usage``,
    ``processes``, ``tie`` (equal on every comparator: the sort's order decided)."""
    margin: int | None = None
    """For ``usage`` / ``processes``: how much less (bytes, inodes or processes) than the evicted pod, i.e. how
    much more it would have needed to be chosen; for ``priority``: how much higher its priority was."""


@dataclass(frozen=True)
class Eviction:
    """One pod the kubelet would evict, with the exact Event message, the ranking at that moment and its impact."""

    id: int
    node: str
    tick: int
    time: datetime
    """The stats' sample time: when the kubelet saw what it acted on."""
    namespace: str
    pod: str
    uid: str
    owner_kind: str | None
    owner_name: str | None
    qos: str
    priority: int
    cause: str
    """The threshold's signal, or ``emptydirfs.limit`` / ``ephemeralpodfs.limit`` / ``ephemeralcontainerfs.limit``."""
    signal: str | None
    hard: bool | None
    observed_available: int | None
    threshold_value: int | None
    grace_period_override: int
    message: str
    annotations: Mapping[str, str]
    ranking: tuple[RankedPod, ...] = ()
    comes_back: bool | None = None
    """Whether a controller recreates the pod (node-pressure eviction leaves the pod ``Failed``): True for a
    ReplicaSet/ReplicationController/StatefulSet/DaemonSet/Job owner, False for a bare pod or one owned by a
    custom resource (unless its operator handles evictions), None when not known."""
    impact: str = ""
    """One plain sentence saying what becomes of the pod (``replay.impact.owner_impact``)."""
    map_order_alternatives: tuple[str, ...] = ()
    """The thresholds (described) a real kubelet could have acted on at this pass instead of ``signal``, with
    another message, ranking or starved resource: Go map order decides (replay.kubelet.map_order). Empty: the
    only decision it could make. In ``result.json`` only (not a column of ``evictions.parquet``)."""


@dataclass(frozen=True)
class RealEviction:
    """Ground truth the recording kept: an ``Evicted`` event or a pod failed with reason Evicted."""

    node: str | None
    namespace: str | None
    pod: str | None
    uid: str | None
    message: str | None
    time: datetime | None
    source: str


@dataclass(frozen=True)
class KernelKill:
    """Ground truth of what the kernel did (the recording's ``kernel_events``, recordings/kernel.py): a container
    terminated ``OOMKilled``, or the kubelet's ``SystemOOM`` Event for a node-wide kill."""

    node: str | None
    namespace: str | None
    pod: str | None
    """The pod of an ``OOMKilled`` container; None for ``SystemOOM`` (the Event names only a process)."""
    uid: str | None
    container: str | None
    time: datetime
    """``finishedAt`` of the termination, or the Event's last timestamp."""
    kind: str
    """``OOMKilled`` or ``SystemOOM``."""
    message: str | None
    """The Event's message (``System OOM encountered, victim process: java, pid: 4242``); None for a container."""
    victim: str | None
    """The victim process of a ``SystemOOM`` (None when the kubelet did not know it)."""
    pid: int | None
    exit_code: int | None
    restart_count: int | None
    count: int
    """Kills this entry stands for: 1, or the growth of an aggregated ``SystemOOM`` Event's count."""
    source: str
    """``pod`` (a container status) or ``event``."""


@dataclass(frozen=True)
class ReadyTransition:
    """The node's ``Ready`` condition changing, from the recorded node objects (a kubelet starved of memory stops
    posting status: ``Unknown``)."""

    node: str
    time: datetime
    """The condition's ``lastTransitionTime``."""
    status: str | None
    reason: str | None
    message: str | None


@dataclass(frozen=True)
class Match:
    """A real eviction against the replay's eviction of the same pod, if any."""

    real: RealEviction
    predicted_id: int | None
    same_pod: bool
    within_interval: bool | None
    """Predicted within one recording interval of the real time (None when either time is unknown)."""
    same_message: bool
    message_diff: str | None
    """Character-level diff (``[-real-]{+predicted+}``) when the messages differ."""


@dataclass(frozen=True)
class ReplayResult:
    """Everything one replay computed; the frames are excluded from ``==`` (use :meth:`same_as`)."""

    recording: str
    interval_seconds: float | None
    settings: Mapping[str, Any]
    """What was asked (``SettingsRequest.describe()``) plus ``digest`` of every node's effective settings."""
    nodes: tuple[NodeResult, ...]
    evictions: tuple[Eviction, ...]
    matches: tuple[Match, ...]
    notes: tuple[str, ...]
    signals: pl.LazyFrame = field(compare=False, repr=False)
    """Lazy: spooled Parquet from the engine, a results directory's file, or an in-memory frame; collect what you
    need (a 100-node day is ~10M rows)."""
    conditions: pl.DataFrame = field(compare=False, repr=False)
    schema_version: int = SCHEMA_VERSION
    overcommit: pl.LazyFrame = field(
        compare=False, repr=False, default_factory=lambda: pl.LazyFrame(schema=OVERCOMMIT_SCHEMA)
    )
    spool: object = field(default=None, compare=False, repr=False)
    """What keeps the lazy frames' files alive (the engine's temporary directory), if anything."""
    admission_rejections: tuple[RealEviction, ...] = ()
    """Pods the recording shows refused at admission (``The node had condition: [...]. ``): not evictions,
    so not in ``matches``; counted apart (replay.matching.admission_rejections)."""
    kernel_kills: tuple[KernelKill, ...] = ()
    """What the kernel killed on the replayed nodes (ground truth beside the evictions), in time order."""
    ready_transitions: tuple[ReadyTransition, ...] = ()
    """The replayed nodes' ``Ready`` transitions during the recording (and a node not ready when it started)."""

    def node(self, name: str) -> NodeResult:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    def evictions_frame(self) -> pl.DataFrame:
        rows = [
            {
                "eviction_id": e.id,
                **eviction_fields(e),
                "annotations": [{"key": k, "value": v} for k, v in e.annotations.items()],
            }
            for e in self.evictions
        ]
        return pl.DataFrame(rows, schema=EVICTIONS_SCHEMA)

    def rankings_frame(self) -> pl.DataFrame:
        rows = [
            {
                "eviction_id": e.id,
                "node": e.node,
                "tick": e.tick,
                "rank": r.rank,
                "namespace": r.namespace,
                "pod": r.pod,
                "uid": r.uid,
                "qos": r.qos,
                "priority": r.priority,
                "has_stats": r.has_stats,
                "exceeds_request": r.exceeds_request,
                "usage": r.usage,
                "request": r.request,
                "usage_above_request": r.usage_above_request,
                "process_count": r.process_count,
                "critical": r.critical,
                "reason": r.reason,
                "decided_by": r.decided_by,
                "margin": r.margin,
            }
            for e in self.evictions
            for r in e.ranking
        ]
        return pl.DataFrame(rows, schema=RANKINGS_SCHEMA)

    def same_as(self, other: ReplayResult) -> bool:
        """Field for field, frames included (row order as produced)."""
        return (
            self == other
            and self.signals.collect().equals(other.signals.collect(), null_equal=True)
            and self.conditions.equals(other.conditions, null_equal=True)
            and self.overcommit.collect().equals(other.overcommit.collect(), null_equal=True)
        )


_EVICTION_FIELDS = (
    "node", "tick", "time", "namespace", "pod", "uid", "owner_kind", "owner_name", "qos", "priority", "cause",
    "signal", "hard", "observed_available", "threshold_value", "grace_period_override", "message", "annotations",
    "comes_back", "impact",
)  # fmt: skip


def eviction_fields(e: Eviction) -> dict[str, Any]:
    """An eviction's fields (not its id or ranking) in the results' column order, values as they are: the one
    list ``evictions.parquet`` and ``result.json`` each render."""
    return {name: getattr(e, name) for name in _EVICTION_FIELDS}
