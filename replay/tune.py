"""``evictlens tune``: search eviction settings for a workload, never recommending one the kernel beats.

The search is a grid over the settings people are told to "play with" when nodes run out of memory
(memory and nodefs hard thresholds, a soft memory threshold with its grace period, minimum reclaim, the
max pod grace period and, on scenarios, the memory reserved for system daemons), capped and sampled when
large. Every candidate is a :class:`~replay.settings.SettingsRequest`; the one engine
(:func:`replay.engine.replay`) replays them all, without per-tick frames. A scenario recording is
regenerated closed-loop per candidate (exact, its kernel kills modelled); any other recording gives the
counterfactual answer, which holds per node until its horizon (replay/COUNTERFACTUAL.md).

Per candidate: kernel OOM kills it did not prevent, on recordings also the moments memory fell from above
its hard threshold to exhaustion between two passes ("OOM risk"), evictions, pods that will not come back,
node-seconds under a pressure condition and the memory withheld from pods (capacity − allocatable:
reservations plus the hard threshold), and a node going NotReady (a starved kubelet). Only candidates with no
kill, no risk and (in a closed loop, where it is modelled) no NotReady node are eligible; among them the Pareto
front of (evictions, pods not coming back, pressure, withheld) and one pick by :data:`RULE`.
Plain data only; :mod:`replay.tune_report` renders, :mod:`replay.cli.tune` parses arguments.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from kube.duration import format_duration, parse_duration
from kube.errors import InputError
from kube.oom import EXHAUSTED_FLOOR, EXHAUSTED_FRACTION
from kube.quantity import Quantity, fits_int64
from recordings.kernel import SYSTEM_OOM
from replay.kernel import SAME_KILL_S, before_horizon, judge, same_kill
from replay.kernel import SIGNAL as MEMORY
from replay.kernel import distinct_kills as distinct_kills  # re-exported: where tune's tests read the rule
from replay.kubelet.config import FlagOverrides
from replay.results_io import json_time
from replay.settings import SettingsRequest

if TYPE_CHECKING:
    from recordings.reader import Recording
    from replay.results import Eviction, KernelKill, NodeResult, ReadyTransition, ReplayResult

MAX_CANDIDATES = 50
MAX_CANDIDATES_LIMIT = 10_000
"""--max-candidates at most: each candidate is a whole replay (10,000 of the 100-node day is ~10 hours)."""
MAX_GRID = 1_000_000
"""Combinations the grid may hold before sampling (each a small object; a million is ~0.3 GB)."""
NODEFS = "nodefs.available"
OTHER_HARD: Mapping[str, str] = {"nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}
"""Hard thresholds not searched: the kubelet's Linux defaults (eviction/defaults_linux.go), written into every
candidate so that its evictionHard is complete (a config file's partial evictionHard drops the defaults)."""
PRESSURE = ("MemoryPressure", "DiskPressure", "PIDPressure")
RULE = (
    "among the eligible candidates (0 kernel kills, 0 OOM risk, no node NotReady in a closed loop) on the Pareto "
    "front: fewest pods that will not come back, then fewest evictions, then least memory withheld from pods, then "
    "least node time under pressure, then the first listed"
)
DEFAULTS: Mapping[str, str] = {
    "memory_hard": "100Mi,500Mi,1Gi,5%,10%",
    "nodefs_hard": "10%",
    "soft": "none,15%,20%",
    "soft_grace": "30s,1m30s",
    "min_reclaim": "none",
    "max_pod_grace": "0",
    "kube_reserved": "none",
    "system_reserved": "none",
}
"""The search space when a flag is not given: thresholds from the kubelet's default up to the write-ups' 10%
hard / 20% soft advice; reserved memory not searched (it can only be searched on scenarios)."""
FLAGS: Mapping[str, str] = {
    "memory_hard": "--memory-hard",
    "nodefs_hard": "--nodefs-hard",
    "soft": "--memory-soft",
    "soft_grace": "--soft-grace",
    "min_reclaim": "--min-reclaim",
    "max_pod_grace": "--max-pod-grace",
    "kube_reserved": "--kube-reserved",
    "system_reserved": "--system-reserved",
}

# -- the search space ---------------------------------------------------------------------------------------


def _percent(text: str, flag: str) -> float:
    try:
        value = float(text[:-1])
    except ValueError:
        value = float("nan")
    if not 0 < value <= 100:  # NaN fails too
        raise InputError(f"expected a percentage above 0% and at most 100%, got {text!r}", field=flag)
    return value


def _bytes(
    text: str, flag: str, *, what: str = "a quantity such as 500Mi or a percentage such as 10%", positive: bool = False
) -> int:
    try:
        value = Quantity.parse(text).int_value()
    except InputError:
        raise InputError(f"expected {what}, got {text!r}", field=flag) from None
    if not fits_int64(text):
        raise InputError(f"expected a quantity that fits the kubelet's int64 (below 8Ei), got {text!r}", field=flag)
    if value < 0 or (positive and value == 0):
        # a threshold must be positive (eviction helpers.go parseThresholdStatement); a reclaim or reservation of 0 is
        # nothing
        raise InputError(f"expected {what} {'above' if positive else 'of at least'} 0, got {text!r}", field=flag)
    return value


def _fmt_quantity(value: int) -> str:
    for suffix, unit in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if value and value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def _fmt_percent(value: float) -> str:
    return f"{value:g}%"


def _range(text: str, flag: str, limit: int) -> tuple[str, str, int] | None:
    """``A..B/N`` → (A, B, N): N values evenly from A to B, both included; N past ``limit`` (--max-candidates)
    is refused before anything is built (a range of 10^11 values would fill memory)."""
    if ".." not in text:
        return None
    span, _, count = text.partition("/")
    low, _, high = span.partition("..")
    try:
        n = int(count) if count else 0
    except ValueError:
        n = 0
    if n < 2 or not low or not high:
        raise InputError(
            f"expected a range FROM..TO/COUNT with a COUNT of at least 2 (e.g. 5%..20%/4), got {text!r}", field=flag
        )
    if n > limit:
        raise InputError(
            f"a range of {n} values is more than --max-candidates ({limit}) could ever replay; give a COUNT of at "
            f"most {limit}, got {text!r}",
            field=flag,
        )
    return low.strip(), high.strip(), n


def _spread(low: float, high: float, n: int) -> list[float]:
    return [low + (high - low) * i / (n - 1) for i in range(n)]


def _items(text: str, flag: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise InputError("empty search space: expected at least one value", field=flag)
    return items


def parse_bounds(
    text: str,
    flag: str,
    *,
    none: bool = False,
    percent: bool = True,
    positive: bool = False,
    limit: int = MAX_CANDIDATES,
) -> tuple[str | None, ...]:
    """Threshold values (``100Mi,500Mi,5%,10%`` or ``5%..20%/4``), each checked as the kubelet reads it;
    ``none`` allows the word ``none`` (no such threshold), ``positive`` refuses 0 (a threshold)."""
    out: list[str | None] = []
    for item in _items(text, flag):
        if none and item.lower() == "none":
            out.append(None)
            continue
        span = _range(item, flag, limit)
        if span is None:
            if item.endswith("%") and percent:
                out.append(_fmt_percent(_percent(item, flag)))
            else:
                out.append(
                    _fmt_quantity(_bytes(item, flag, positive=positive))
                    if not item.endswith("%")
                    else _bad_percent(item, flag)
                )
            continue
        low, high, n = span
        if low.endswith("%") != high.endswith("%"):
            raise InputError(f"a range's ends must both be percentages or both quantities, got {item!r}", field=flag)
        if low.endswith("%") and percent:
            out += [_fmt_percent(round(v, 2)) for v in _spread(_percent(low, flag), _percent(high, flag), n)]
        elif low.endswith("%"):
            _bad_percent(low, flag)
        else:
            a, b = _bytes(low, flag, positive=positive), _bytes(high, flag, positive=positive)
            out += [_fmt_quantity(round(v / (1 << 20)) << 20) for v in _spread(a, b, n)]
    return tuple(dict.fromkeys(out))


def _bad_percent(item: str, flag: str) -> str:
    raise InputError(f"expected a quantity such as 1Gi (no percentage here), got {item!r}", field=flag)


def parse_durations(text: str, flag: str, *, limit: int = MAX_CANDIDATES) -> tuple[str, ...]:
    """Grace periods as Go durations (``30s,1m30s`` or ``30s..2m/4``), each above 0."""
    out: list[str] = []
    for item in _items(text, flag):
        span = _range(item, flag, limit)
        ends = [item] if span is None else [span[0], span[1]]
        ns = []
        for end in ends:
            try:
                ns.append(parse_duration(end))
            except InputError:
                raise InputError(f"expected a duration such as 30s or 1m30s, got {end!r}", field=flag) from None
            if ns[-1] <= 0:
                raise InputError(f"expected a duration above 0, got {end!r}", field=flag)
        if span is None:
            out.append(format_duration(ns[0]))
        else:
            secs = _spread(ns[0] / 1e9, ns[1] / 1e9, span[2])
            out += [format_duration(round(s) * 1_000_000_000) for s in secs]
    return tuple(dict.fromkeys(out))


def parse_seconds(text: str, flag: str, *, limit: int = MAX_CANDIDATES) -> tuple[int, ...]:
    """Whole seconds (``0,30`` or ``0..60/3``), each at least 0 and an int32 as the kubelet takes it."""
    out: list[int] = []
    for item in _items(text, flag):
        span = _range(item, flag, limit)
        ends = [item] if span is None else [span[0], span[1]]
        values = []
        for end in ends:
            try:
                values.append(int(end))
            except ValueError:
                raise InputError(f"expected a whole number of seconds such as 30, got {end!r}", field=flag) from None
            if not 0 <= values[-1] <= 2**31 - 1:
                raise InputError(f"expected seconds from 0 to {2**31 - 1}, got {end!r}", field=flag)
        out += values if span is None else [round(v) for v in _spread(values[0], values[1], span[2])]
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class SearchSpace:
    """The values each setting takes (``None``: not set, e.g. no soft threshold)."""

    memory_hard: tuple[str, ...]
    nodefs_hard: tuple[str, ...]
    soft: tuple[str | None, ...]
    soft_grace: tuple[str, ...]
    min_reclaim: tuple[str | None, ...]
    max_pod_grace: tuple[int, ...]
    kube_reserved: tuple[str | None, ...] = (None,)
    system_reserved: tuple[str | None, ...] = (None,)

    @property
    def searches_reserved(self) -> bool:
        return any(v is not None for v in (*self.kube_reserved, *self.system_reserved))

    def describe(self) -> dict[str, list[Any]]:
        return {FLAGS[k]: list(getattr(self, k)) for k in FLAGS}


def parse_space(given: Mapping[str, str | None], *, limit: int = MAX_CANDIDATES) -> tuple[SearchSpace, tuple[str, ...]]:
    """The space from the flags' texts (a key absent or None: :data:`DEFAULTS`), and which flags were given;
    ``limit`` is --max-candidates (a range may not ask for more values, and the whole grid for at most
    :data:`MAX_GRID` combinations: both refused before anything is built)."""
    if not 1 <= limit <= MAX_CANDIDATES_LIMIT:
        raise InputError(
            f"expected at least 1 and at most {MAX_CANDIDATES_LIMIT}, got {limit}", field="--max-candidates"
        )

    def text(key: str) -> str:
        value = given.get(key)
        return DEFAULTS[key] if value is None else value

    hard = parse_bounds(text("memory_hard"), FLAGS["memory_hard"], positive=True, limit=limit)
    nodefs = parse_bounds(text("nodefs_hard"), FLAGS["nodefs_hard"], positive=True, limit=limit)
    space = SearchSpace(
        memory_hard=tuple(v for v in hard if v is not None),
        nodefs_hard=tuple(v for v in nodefs if v is not None),
        soft=parse_bounds(text("soft"), FLAGS["soft"], none=True, positive=True, limit=limit),
        soft_grace=parse_durations(text("soft_grace"), FLAGS["soft_grace"], limit=limit),
        min_reclaim=parse_bounds(text("min_reclaim"), FLAGS["min_reclaim"], none=True, limit=limit),
        max_pod_grace=parse_seconds(text("max_pod_grace"), FLAGS["max_pod_grace"], limit=limit),
        kube_reserved=parse_bounds(
            text("kube_reserved"), FLAGS["kube_reserved"], none=True, percent=False, limit=limit
        ),
        system_reserved=parse_bounds(
            text("system_reserved"), FLAGS["system_reserved"], none=True, percent=False, limit=limit
        ),
    )
    size = math.prod(len(getattr(space, k)) for k in FLAGS)
    if size > MAX_GRID:
        raise InputError(
            f"the search space has {size:,} combinations, more than {MAX_GRID:,} to draw from; narrow a flag "
            f"({', '.join(f'{FLAGS[k]} {len(getattr(space, k))}' for k in FLAGS if len(getattr(space, k)) > 1)})"
        )
    return space, tuple(FLAGS[k] for k, v in given.items() if v is not None)


@dataclass(frozen=True)
class Candidate:
    """One point of the space: every setting tune writes, so its snippet is a complete configuration."""

    memory_hard: str
    nodefs_hard: str
    soft: str | None = None
    soft_grace: str | None = None
    min_reclaim: str | None = None
    max_pod_grace: int = 0
    kube_reserved: str | None = None
    system_reserved: str | None = None

    @property
    def label(self) -> str:
        parts = [f"hard {self.memory_hard}"]
        if self.nodefs_hard != "10%":
            parts.append(f"nodefs {self.nodefs_hard}")
        parts.append(f"soft {self.soft}/{self.soft_grace}" if self.soft else "no soft")
        if self.min_reclaim:
            parts.append(f"reclaim {self.min_reclaim}")
        if self.max_pod_grace:
            parts.append(f"max grace {self.max_pod_grace}s")
        if self.kube_reserved:
            parts.append(f"kube-reserved {self.kube_reserved}")
        if self.system_reserved:
            parts.append(f"system-reserved {self.system_reserved}")
        return ", ".join(parts)

    def eviction_hard(self) -> dict[str, str]:
        return {MEMORY: self.memory_hard, NODEFS: self.nodefs_hard, **OTHER_HARD}

    def overrides(self) -> FlagOverrides:
        """The kubelet flags that set exactly this (an empty map replaces a field with nothing)."""
        return FlagOverrides(
            eviction_hard=(",".join(f"{k}<{v}" for k, v in self.eviction_hard().items()),),
            eviction_soft=(f"{MEMORY}<{self.soft}" if self.soft else "",),
            eviction_soft_grace_period=(f"{MEMORY}={self.soft_grace}" if self.soft else "",),
            eviction_minimum_reclaim=(f"{MEMORY}={self.min_reclaim}" if self.min_reclaim else "",),
            eviction_max_pod_grace_period=self.max_pod_grace,
            kube_reserved=(f"memory={self.kube_reserved}",) if self.kube_reserved else (),
            system_reserved=(f"memory={self.system_reserved}",) if self.system_reserved else (),
        )

    def document(self) -> dict[str, Any]:
        """The KubeletConfiguration (``--config``) this candidate is; loads as ``evictlens replay --config``."""
        doc: dict[str, Any] = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "evictionHard": self.eviction_hard(),
        }
        if self.soft:
            doc["evictionSoft"] = {MEMORY: self.soft}
            doc["evictionSoftGracePeriod"] = {MEMORY: self.soft_grace}
        if self.min_reclaim:
            doc["evictionMinimumReclaim"] = {MEMORY: self.min_reclaim}
        doc["evictionMaxPodGracePeriod"] = self.max_pod_grace
        if self.kube_reserved:
            doc["kubeReserved"] = {"memory": self.kube_reserved}
        if self.system_reserved:
            doc["systemReserved"] = {"memory": self.system_reserved}
        return doc


def _below(a: str, b: str) -> bool:
    """``a`` is at or below ``b`` when both are percentages or both quantities (else unknown: False)."""
    if a.endswith("%") != b.endswith("%"):
        return False
    if a.endswith("%"):
        return float(a[:-1]) <= float(b[:-1])
    return Quantity.parse(a).int_value() <= Quantity.parse(b).int_value()


def grid(space: SearchSpace) -> list[Candidate]:
    """Every combination, in flag order; a soft threshold at or below its hard one (it could never act first) is
    left out, and without a soft threshold the grace period is not a dimension."""
    softs: list[tuple[str | None, str | None]] = []
    for s in space.soft:
        softs += [(None, None)] if s is None else [(s, g) for g in space.soft_grace]
    out = []
    for hard, nodefs, (soft, grace), reclaim, max_grace, kube, system in itertools.product(
        space.memory_hard,
        space.nodefs_hard,
        dict.fromkeys(softs),
        space.min_reclaim,
        space.max_pod_grace,
        space.kube_reserved,
        space.system_reserved,
    ):
        if soft is not None and _below(soft, hard):
            continue
        out.append(Candidate(hard, nodefs, soft, grace, reclaim, max_grace, kube, system))
    return out


def sample(candidates: Sequence[Candidate], limit: int, seed: int) -> tuple[list[Candidate], str]:
    """At most ``limit`` candidates and how they were chosen: all, or a seeded uniform sample kept in grid order."""
    if limit < 1:
        raise InputError(f"expected at least 1, got {limit}", field="--max-candidates")
    if not candidates:
        raise InputError("empty search space: every soft threshold is at or below every hard one", field=FLAGS["soft"])
    if len(candidates) <= limit:
        return list(candidates), f"the whole grid: {len(candidates)} candidates"
    picked = sorted(random.Random(seed).sample(range(len(candidates)), limit))
    return [candidates[i] for i in picked], (
        f"{limit} of the grid's {len(candidates)} combinations, drawn uniformly at random (seed {seed}; "
        "--seed for another draw, --max-candidates for more, or narrow a flag)"
    )


# -- per-candidate metrics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KillRef:
    """A kernel kill, as the evidence prints it."""

    node: str | None
    time: datetime
    what: str
    """Each report of it: ``SystemOOM process java (pid 4001); OOMKilled shop/orders-jvm orders``."""


@dataclass(frozen=True)
class RiskRef:
    """Memory fell from above the candidate's hard threshold to exhaustion between two recorded passes."""

    node: str
    from_time: datetime
    to_time: datetime
    from_available: int
    to_available: int
    hard_value: int
    kills: int
    """SystemOOM events recorded in between."""


@dataclass(frozen=True)
class Row:
    """One candidate's outcome (index 0: the current settings, never a :class:`Candidate`)."""

    index: int
    label: str
    candidate: Candidate | None
    kernel_kills: int
    """Kills counted against it: modelled (closed loop) or real ones before its horizon on their node."""
    evictions: int
    not_coming_back: int
    pressure_s: float
    """Node-seconds with any pressure condition on, summed over nodes."""
    withheld_bytes: int
    """Σ over nodes of memory capacity − allocatable (reservations + the hard threshold)."""
    closed_loop: bool
    oom_risk: int | None = None
    """Recordings only: too-fast moments before its horizon its hard threshold would not have caught."""
    not_judged: int = 0
    """Recordings only: real kills and too-fast moments after its horizon on their node (the recording no longer
    shows its world there)."""
    as_recorded_until: datetime | None = None
    horizons: Mapping[str, tuple[datetime, str]] = field(default_factory=dict)
    first_kill: KillRef | None = None
    first_risk: RiskRef | None = None
    first_eviction: Eviction | None = None
    not_ready: int = 0
    first_not_ready: str | None = None
    """``worker-1 Unknown at 2025-…Z (NodeStatusUnknown)``."""
    kills: tuple[KillRef, ...] = ()
    """The kills counted, one each (:func:`distinct_kills`)."""
    """Times a node's ``Ready`` turned ``Unknown``/``False`` (a kubelet starved of memory stops posting status):
    modelled in a closed loop, where it disqualifies; on a recording the real ones before the horizon, shown but
    not disqualifying (a recorded NotReady may have causes no eviction setting touches)."""

    @property
    def eligible(self) -> bool:
        return self.kernel_kills == 0 and not self.oom_risk and not (self.closed_loop and self.not_ready)

    def objectives(self) -> tuple[int, int, float, int]:
        """What the front minimises."""
        return (self.evictions, self.not_coming_back, self.pressure_s, self.withheld_bytes)

    def rank_key(self) -> tuple[int, int, int, float, int]:
        """:data:`RULE`."""
        return (self.not_coming_back, self.evictions, self.withheld_bytes, self.pressure_s, self.index)


def unavoidable(rows: Sequence[Row]) -> list[KillRef]:
    """The kills every row has (same node, victim and time): no setting searched changes them, e.g. a container
    killed at its own memory limit, which only that container's limit (or evicting its pod first) prevents."""
    if not rows:
        return []
    common = set(rows[0].kills)
    for r in rows[1:]:
        common &= set(r.kills)
    return sorted(common, key=lambda k: (k.time, k.node or "", k.what))


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(x < y for x, y in zip(a, b, strict=True))


def pareto_front(rows: Sequence[Row]) -> list[Row]:
    """The eligible rows no other eligible row dominates (equal rows all stay), in :data:`RULE` order."""
    ok = [r for r in rows if r.eligible]
    front = [r for r in ok if not any(dominates(o.objectives(), r.objectives()) for o in ok if o is not r)]
    return sorted(front, key=Row.rank_key)


def recommend(rows: Sequence[Row]) -> Row | None:
    """The first of the front by :data:`RULE`; None when no candidate has 0 kernel kills (and 0 OOM risk)."""
    front = pareto_front(rows)
    return front[0] if front else None


def _victim(k: KernelKill) -> str:
    if k.kind == SYSTEM_OOM:
        return f"process {k.victim or 'unknown'}" + (f" (pid {k.pid})" if k.pid is not None else "")
    return f"{k.namespace}/{k.pod} {k.container or ''}".strip()


def pressure_seconds(result: ReplayResult) -> float:
    """Node-seconds with any pressure condition on (overlapping conditions of a node counted once); an
    interval still on at the end lasts to the node's last pass."""
    last = {n.node: n.last_time for n in result.nodes}
    total = 0.0
    for (node,), df in (
        result.conditions.filter(pl.col("condition").is_in(PRESSURE)).partition_by("node", as_dict=True).items()
    ):
        spans = sorted((r["from"], r["to"] or last.get(str(node)) or r["from"]) for r in df.iter_rows(named=True))
        end: datetime | None = None
        for start, stop in spans:
            if end is not None and start < end:
                start = end
            if stop > start:
                total += (stop - start).total_seconds()
                end = stop if end is None else max(end, stop)
    return total


def hard_memory(node: NodeResult, capacity: int) -> int:
    """The node's hard ``memory.available`` threshold in bytes (a percentage of ``capacity``), 0 when none."""
    values = [
        t.quantity if t.quantity is not None else int(capacity * (t.percentage or 0.0))
        for t in node.thresholds
        if t.hard and t.signal == MEMORY
    ]
    return max(values, default=0)


@dataclass(frozen=True)
class Moment:
    """Two consecutive recorded passes of a node with memory exhausted (or a SystemOOM) at the second."""

    node: str
    from_time: datetime
    to_time: datetime
    from_available: int
    to_available: int
    capacity: int
    kills: int


def _exhausted(capacity: pl.Expr) -> pl.Expr:
    """kube.oom.exhausted_below as a column expression."""
    return pl.max_horizontal(pl.lit(EXHAUSTED_FLOOR), (capacity * EXHAUSTED_FRACTION).cast(pl.Int64))


def race_moments(rec: Recording, names: Sequence[str], kills: Sequence[KernelKill]) -> list[Moment]:
    """Every pair of consecutive recorded passes where ``memory.available`` (the Summary's node memory, as the
    kubelet reads it) was above exhaustion and then at most exhaustion, or a ``SystemOOM`` came in between: the
    part of :func:`replay.kernel.too_fast` that does not depend on the threshold, read once for all candidates
    straight from the recording (kube.oom.exhausted_below: max(64Mi, 1% of capacity))."""
    df = (
        rec.scan_node_stats()
        .filter(pl.col("node").is_in(list(names)) & pl.col("memory_available_bytes").is_not_null())
        .select(
            "node",
            "tick",
            pl.col("memory_time").alias("time"),
            pl.col("memory_available_bytes").cast(pl.Int64).alias("available"),
            (pl.col("memory_available_bytes") + pl.col("memory_working_set_bytes").fill_null(0))
            .cast(pl.Int64)
            .alias("capacity"),
        )
        .sort("node", "tick")
        .with_columns(
            pl.col("time").shift(1).over("node").alias("prev_time"),
            pl.col("available").shift(1).over("node").alias("prev_available"),
            pl.col("capacity").shift(1).over("node").alias("prev_capacity"),
        )
        .filter(pl.col("prev_time").is_not_null())
        .with_columns(
            _exhausted(pl.col("capacity")).alias("floor"),
            _exhausted(pl.col("prev_capacity")).alias("prev_floor"),
        )
        .filter(pl.col("prev_available") > pl.col("prev_floor"))
    )
    system = [k for k in kills if k.kind == SYSTEM_OOM and k.node is not None]
    if system:
        oom = pl.DataFrame(
            {
                "node": [k.node for k in system],
                "kill": [k.time for k in system],
                "n": [max(1, k.count) for k in system],
            },
            schema={"node": pl.String, "kill": pl.Datetime("us", "UTC"), "n": pl.Int64},
        )
        candidates = df.filter(pl.col("node").is_in(list({k.node for k in system}))).collect()
        with_kills = (
            candidates.join(oom, on="node")
            .filter((pl.col("kill") > pl.col("prev_time")) & (pl.col("kill") <= pl.col("time")))
            .group_by("node", "tick")
            .agg(pl.col("n").sum().alias("kills"))
        )
    else:
        with_kills = pl.DataFrame(schema={"node": pl.String, "tick": pl.UInt32, "kills": pl.Int64})
    rows = (
        df.collect()
        .join(with_kills, on=["node", "tick"], how="left")
        .with_columns(pl.col("kills").fill_null(0))
        .filter((pl.col("available") <= pl.col("floor")) | (pl.col("kills") > 0))
    )
    return [
        Moment(
            r["node"], r["prev_time"], r["time"], r["prev_available"], r["available"], r["prev_capacity"], r["kills"]
        )
        for r in rows.iter_rows(named=True)
    ]


def _first_by_pod(result: ReplayResult) -> list[Eviction]:
    first: dict[tuple[str, str, str], Eviction] = {}
    for e in sorted(result.evictions, key=lambda e: (e.time, e.id)):
        first.setdefault((e.namespace, e.pod, e.uid), e)
    return list(first.values())


def evaluate(
    index: int,
    label: str,
    candidate: Candidate | None,
    result: ReplayResult,
    *,
    withheld: Mapping[str, int],
    moments: Sequence[Moment] | None,
    window_s: float,
) -> Row:
    """A candidate's row. ``moments`` None: a closed loop (every kill in the result is the candidate's own, no
    horizon); else a recording: real kills and race moments count before the node's horizon only."""
    closed = moments is None or bool(result.settings.get("closed_loop"))
    horizons = {n.node: (n.horizon, n.horizon_reason) for n in result.nodes if n.horizon is not None}
    judged = judge(result, closed_loop=closed, window_s=window_s)
    kills = list(judged.kills)
    not_judged = len(judged.kills_not_judged)
    risk: list[RiskRef] = []
    if not closed:
        by_node = {n.node: n for n in result.nodes}
        for m in moments or ():
            node = by_node.get(m.node)
            if node is None:
                continue
            hard = hard_memory(node, m.capacity)
            if m.from_available <= hard:
                continue  # the candidate's hard threshold was met at the first pass: it acted there
            if not before_horizon(horizons.get(m.node, (None, ""))[0], m.from_time):
                not_judged += 1
                continue
            risk.append(RiskRef(m.node, m.from_time, m.to_time, m.from_available, m.to_available, hard, m.kills))
    not_ready = list(judged.not_ready)
    first = min(kills, key=lambda k: k.time, default=None)
    told = (
        None
        if first is None
        else "; ".join(dict.fromkeys(f"{k.kind} {_victim(k)}" for k in same_kill(result.kernel_kills, first, window_s)))
    )
    evictions = sorted(result.evictions, key=lambda e: (e.time, e.id))
    return Row(
        index=index,
        label=label,
        candidate=candidate,
        kernel_kills=len(kills),
        evictions=len(result.evictions),
        not_coming_back=sum(1 for e in _first_by_pod(result) if e.comes_back is False),
        pressure_s=pressure_seconds(result),
        withheld_bytes=sum(withheld.values()),
        closed_loop=closed,
        oom_risk=None if closed else len(risk),
        not_judged=not_judged,
        as_recorded_until=None if closed else min((t for t, _ in horizons.values()), default=None),
        horizons={} if closed else horizons,
        first_kill=None if first is None or told is None else KillRef(first.node, first.time, told),
        first_risk=min(risk, key=lambda r: r.from_time, default=None),
        first_eviction=evictions[0] if evictions else None,
        not_ready=len(not_ready),
        first_not_ready=_not_ready_text(min(not_ready, key=lambda t: t.time)) if not_ready else None,
        kills=tuple(KillRef(k.node, k.time, f"{k.kind} {_victim(k)}") for k in kills),
    )


def _not_ready_text(t: ReadyTransition) -> str:
    return f"{t.node} Ready {t.status} at {json_time(t.time)}" + (f" ({t.reason})" if t.reason else "")


# -- memory withheld from pods --------------------------------------------------------------------------------


def _memory_of(obj: Mapping[str, Any] | None, key: str) -> int | None:
    status = (obj or {}).get("status")
    value = status.get(key, {}).get("memory") if isinstance(status, Mapping) else None
    try:
        return Quantity.parse(str(value)).int_value() if value is not None else None
    except InputError:
        return None


@dataclass(frozen=True)
class NodeMemory:
    """A recorded node's memory capacity and what its kubelet reserved apart from the hard threshold."""

    capacity: int
    reserved: int
    known: bool
    """False: no node object with capacity and allocatable (reserved taken as 0)."""


def recorded_memory(rec: Recording, current: ReplayResult) -> dict[str, NodeMemory]:
    """Per node: capacity and reserved = capacity − allocatable − the current hard threshold, from the last
    recorded node object (the summary's capacity, reserved 0, without one)."""
    nodes = (
        rec.scan_objects()
        .filter(pl.col("kind") == "node")
        .sort("observed")
        .group_by("name", maintain_order=True)
        .last()
        .select("name", "body")
        .collect()
    )
    import orjson

    objects = {str(n): orjson.loads(b) for n, b in nodes.iter_rows()}
    summary_capacity = dict(
        rec.scan_node_stats()
        .group_by("node")
        .agg((pl.col("memory_available_bytes") + pl.col("memory_working_set_bytes")).max().cast(pl.Int64))
        .collect()
        .iter_rows()
    )
    out = {}
    for n in current.nodes:
        capacity, allocatable = (
            _memory_of(objects.get(n.node), "capacity"),
            _memory_of(objects.get(n.node), "allocatable"),
        )
        if capacity is not None and allocatable is not None:
            out[n.node] = NodeMemory(capacity, max(0, capacity - allocatable - hard_memory(n, capacity)), True)
        else:
            out[n.node] = NodeMemory(int(summary_capacity.get(n.node) or 0), 0, False)
    return out


def withheld_recorded(result: ReplayResult, memory: Mapping[str, NodeMemory]) -> dict[str, int]:
    return {
        n.node: memory[n.node].reserved + hard_memory(n, memory[n.node].capacity)
        for n in result.nodes
        if n.node in memory
    }


def withheld_scenario(rec: Recording, request: SettingsRequest, names: Sequence[str]) -> dict[str, int]:
    """Per node: memory capacity − allocatable of the scenario loaded as the request regenerates it."""
    from replay.scenario import generated_with, load_variant

    gen = generated_with(rec)
    assert gen is not None
    scenario, _flags, _version = load_variant(gen, request)
    out = {}
    for node in scenario.nodes:
        if node.name in names:
            allocatable = Quantity.parse(str(node.allocatable.get("memory", "0"))).int_value()
            out[node.name] = max(0, node.memory_capacity - allocatable)
    return out


# -- the search -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """A finished search: every row (current settings first), the front, the pick, and what to say about it."""

    recording: str
    closed_loop: bool
    space: SearchSpace
    sampling: str
    rows: tuple[Row, ...]
    front: tuple[Row, ...]
    recommended: Row | None
    notes: tuple[str, ...]
    results: tuple[ReplayResult, ...] = field(compare=False, repr=False)
    nodes: int = 0


Advance = Callable[[int], None]


def current_label(result: ReplayResult) -> str:
    """``current settings: memory.available<100Mi (hard)``: the memory thresholds the nodes run with, or ``per
    node``."""
    seen = {
        ", ".join(("" if t.hard else "soft ") + t.text for t in n.thresholds if t.signal == MEMORY and t.text)
        for n in result.nodes
    }
    if len(seen) != 1:
        return "current settings (per node)" if seen else "current settings"
    (only,) = seen
    return f"current settings: {only or 'no memory threshold'}"


def current_request(common: SettingsRequest) -> SettingsRequest:
    return SettingsRequest(
        kubelet_version=common.kubelet_version,
        feature_gates=common.feature_gates,
        topology=common.topology,
        counterfactual=True,
        label="current settings",
    )


def candidate_request(common: SettingsRequest, candidate: Candidate) -> SettingsRequest:
    return SettingsRequest(
        kubelet_version=common.kubelet_version,
        feature_gates=common.feature_gates,
        topology=common.topology,
        overrides=candidate.overrides(),
        counterfactual=True,
        label=candidate.label,
    )


def search(
    rec: Recording,
    space: SearchSpace,
    *,
    names: Sequence[str],
    common: SettingsRequest | None = None,
    max_candidates: int = MAX_CANDIDATES,
    seed: int = 0,
    jobs: int = 1,
    ray: str | None = None,
    frames: bool = False,
    progress: Advance | None = None,
    reserved_given: bool = False,
) -> Outcome:
    """Replay the current settings and every candidate, measure, and pick. A scenario recording is regenerated per
    candidate (one engine call each: nothing is shared between closed loops, and ``progress`` advances per
    candidate); any other recording is replayed once for all candidates (``progress``: the recording's passes)."""
    from replay.engine import replay
    from replay.scenario import generated_with

    common = common or SettingsRequest()
    closed = generated_with(rec) is not None
    notes: list[str] = []
    if not closed and space.searches_reserved:
        if reserved_given:
            raise InputError(
                "reserved memory cannot be searched on a recording (its allocatable is what the nodes reported; "
                "only a scenario regenerates with other reservations); drop --kube-reserved/--system-reserved",
                field="--kube-reserved" if any(space.kube_reserved) else "--system-reserved",
            )
        space = SearchSpace(**{**space.__dict__, "kube_reserved": (None,), "system_reserved": (None,)})
    chosen, sampling = sample(grid(space), max_candidates, seed)
    requests = [current_request(common), *(candidate_request(common, c) for c in chosen)]
    if closed:
        results = []
        for request in requests:
            results += replay(rec, [request], names, jobs=jobs, ray=ray, frames=frames, rankings=frames)
            if progress is not None:
                progress(1)
        notes.append(
            "a scenario recording: every candidate was regenerated closed-loop from the scenario (evicted pods "
            "stop, the kernel's OOM killer modelled between passes), so its kills and evictions are exact"
        )
    else:
        results = replay(rec, requests, names, jobs=jobs, ray=ray, frames=frames, rankings=frames, progress=progress)
        notes.append(
            "a recording: each candidate is the counterfactual answer (a pod it evicts stops using memory), which "
            "holds per node only until its horizon ('as recorded until'); real kills and OOM-risk moments after a "
            "candidate's horizon on their node are not judged (counted apart)"
        )
        notes.append(
            "reserved memory (--kube-reserved/--system-reserved) cannot be searched counterfactually: a recording's "
            "allocatable is what its nodes reported"
        )
    window = SAME_KILL_S
    if closed:
        withheld = [withheld_scenario(rec, r, names) for r in requests]
        moments: list[Moment] | None = None
    else:
        memory = recorded_memory(rec, results[0])
        unknown = sorted(n for n, m in memory.items() if not m.known)
        if unknown:
            notes.append(
                f"{len(unknown)} node(s) without a recorded node object ({', '.join(unknown[:3])}"
                f"{', …' if len(unknown) > 3 else ''}): their reservations are unknown, counted as 0"
            )
        withheld = [withheld_recorded(r, memory) for r in results]
        moments = race_moments(rec, names, results[0].kernel_kills)
    labels = [current_label(results[0]), *(c.label for c in chosen)]
    notes.append(
        "every candidate's evictionHard also lists "
        + ", ".join(f"{k}<{v}" for k, v in OTHER_HARD.items())
        + " (the kubelet's defaults; a config file's evictionHard replaces the whole map)"
    )
    rows = tuple(
        evaluate(
            i,
            labels[i],
            None if i == 0 else chosen[i - 1],
            result,
            withheld=withheld[i],
            moments=moments,
            window_s=window,
        )
        for i, result in enumerate(results)
    )
    front = tuple(pareto_front(rows[1:]))
    return Outcome(
        recording=str(rec.root),
        closed_loop=closed,
        space=space,
        sampling=sampling,
        rows=rows,
        front=front,
        recommended=front[0] if front else None,
        notes=tuple(notes),
        results=tuple(results),
        nodes=len(names),
    )


def evidence(outcome: Outcome) -> list[str]:
    """Why the pick: the current settings' first kill (or OOM risk), and what the pick does instead."""
    from replay.replay_report import fmt_bytes

    out = []
    current, pick = outcome.rows[0], outcome.recommended
    if current.first_kill is not None:
        k = current.first_kill
        out.append(
            f"current settings: the kernel kills first, at {json_time(k.time)} on {k.node}: {k.what} "
            f"({current.kernel_kills} kernel kill(s) in all)"
        )
    if current.first_risk is not None:
        r = current.first_risk
        fell = (
            f"the kernel killed {r.kills} time(s) before the next pass at {json_time(r.to_time)}"
            if r.kills
            else f"fell to {fmt_bytes(r.to_available)} by the next pass at {json_time(r.to_time)}"
        )
        out.append(
            f"current settings: OOM risk at {json_time(r.from_time)} on {r.node}: memory.available "
            f"{fmt_bytes(r.from_available)}, above its hard threshold {fmt_bytes(r.hard_value)}; then {fell}"
        )
    if current.first_not_ready is not None:
        out.append(f"current settings: the node stops posting status, {current.first_not_ready}")
    if current.first_kill is None and current.first_risk is None and current.first_not_ready is None:
        out.append("current settings: no kernel kill and no OOM risk")
    if pick is None:
        return out
    if current.eligible and not any(dominates(r.objectives(), current.objectives()) for r in outcome.rows[1:]):
        same = "current settings: no kernel kill and no OOM risk"
        if out and out[-1] == same:
            out.pop()
        out.append(
            f"{same}, and no candidate beats them on every count (they would be on the front): keeping them is as "
            "good an answer"
        )
    e = pick.first_eviction
    if e is None:
        out.append(f"#{pick.index} ({pick.label}): no eviction and no kernel kill")
    else:
        first = "the kubelet acts first instead" if not current.eligible else "its first eviction"
        out.append(
            f"#{pick.index} ({pick.label}): {first}, evicting {e.namespace}/{e.pod} on "
            f"{e.node} at {json_time(e.time)}: {e.message}"
        )
    return out


def to_document(outcome: Outcome, snippet: str | None) -> dict[str, Any]:
    """``tune.json``: the space, every candidate's metrics, the front and the recommendation."""
    front = {r.index for r in outcome.front}

    def row(r: Row) -> dict[str, Any]:
        return {
            "index": r.index,
            "label": r.label,
            "results": f"variant-{r.index}",
            "configuration": None if r.candidate is None else r.candidate.document(),
            "kernel_kills": r.kernel_kills,
            "oom_risk": r.oom_risk,
            "node_not_ready": r.not_ready,
            "not_judged_after_horizon": r.not_judged,
            "evictions": r.evictions,
            "not_coming_back": r.not_coming_back,
            "pressure_node_seconds": r.pressure_s,
            "withheld_bytes": r.withheld_bytes,
            "closed_loop": r.closed_loop,
            "as_recorded_until": json_time(r.as_recorded_until),
            "horizons": [
                {"node": n, "as_recorded_until": json_time(t), "reason": why}
                for n, (t, why) in sorted(r.horizons.items(), key=lambda kv: (kv[1][0], kv[0]))
            ],
            "eligible": r.eligible,
            "on_front": r.index in front,
            "first_kill": None
            if r.first_kill is None
            else {
                "node": r.first_kill.node,
                "time": json_time(r.first_kill.time),
                "what": r.first_kill.what,
            },
            "first_eviction": None
            if r.first_eviction is None
            else {
                "node": r.first_eviction.node,
                "time": json_time(r.first_eviction.time),
                "pod": f"{r.first_eviction.namespace}/{r.first_eviction.pod}",
                "message": r.first_eviction.message,
            },
        }

    pick = outcome.recommended
    return {
        "format": "evictlens-tune",
        "schema_version": 1,
        "recording": outcome.recording,
        "mode": "closed loop (scenario)" if outcome.closed_loop else "counterfactual (recording)",
        "space": outcome.space.describe(),
        "sampling": outcome.sampling,
        "rule": RULE,
        "candidates": [row(r) for r in outcome.rows],
        "front": [r.index for r in outcome.front],
        "recommendation": None
        if pick is None
        else {"index": pick.index, "label": pick.label, "snippet": snippet, "evidence": evidence(outcome)},
        "notes": list(outcome.notes),
    }
