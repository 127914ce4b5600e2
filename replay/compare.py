"""Comparing replays of one recording under several settings, as plain data (``evictlens whatif``, the TUI).

:func:`compare` takes the variants' :class:`~replay.results.ReplayResult` values, variant 0 first
(the baseline), and returns a :class:`Comparison`: per variant what it evicted, when pressure held
and how it matched reality, and per pod whose fate differs between variants, when each variant
evicts it and with which message. Next to the evictions, per variant what the kernel did
(:func:`replay.kernel.judge`): its OOM kills, the moments memory ran out between two passes, nodes going
NotReady; a pod the kernel killed in one variant and evicted or kept in another differs. Nothing here renders;
:mod:`replay.cli.whatif` and the TUI do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from replay.kernel import judge, same_kill
from replay.results import TIME, Eviction, KernelKill, ReadyTransition, ReplayResult, _schema
from replay.results_io import json_time
from replay.views import pressure_seconds

if TYPE_CHECKING:
    from recordings.reader import Recording
    from replay.tune import Moment

COMPARE_SCHEMA = _schema(
    {
        "variant": pl.Int32,
        "label": pl.String,
        "node": pl.String,
        "namespace": pl.String,
        "pod": pl.String,
        "uid": pl.String,
        "evicted": pl.Boolean,
        "time": TIME,
        "cause": pl.String,
        "message": pl.String,
        "comes_back": pl.Boolean,
        "impact": pl.String,
        "matches_real": pl.Boolean,
        "differs": pl.Boolean,
        "oom_killed": pl.Boolean,
        "oom_killed_time": TIME,
        "oom_kill_judged": pl.Boolean,
    }
)
"""One row per variant × pod any variant evicts or the kernel OOM-kills a container of (its first eviction and
first ``OOMKilled`` container in that variant; ``oom_kill_judged`` false: a real kill after the variant's horizon
on the node, not counted against it)."""

PodKey = tuple[str, str, str]
"""(namespace, pod, uid)."""
PodKills = dict[PodKey, tuple[KernelKill, bool]]
"""Per pod its first ``OOMKilled`` container, and whether it counts against the variant."""


@dataclass(frozen=True)
class VariantSummary:
    """One variant at a glance."""

    index: int
    label: str
    settings: Mapping[str, Any]
    kubelet_versions: tuple[str, ...]
    """The versions its nodes were replayed as, distinct, in node order."""
    evictions: int
    pods_evicted: int
    first_eviction: datetime | None
    pressure_s: Mapping[str, float]
    """Condition (``MemoryPressure`` …) → seconds it was on, summed over nodes (an interval still on at the end
    counts up to its node's last pass)."""
    real: int
    """Real evictions in the recording (the same for every variant)."""
    matched: int
    """Real evictions this variant predicted (same pod)."""
    matched_exact: int
    """… with the exact message."""
    not_coming_back: int
    """Evicted pods nothing recreates (bare, or owned by a custom resource)."""
    horizons: Mapping[str, tuple[datetime, str]] = field(default_factory=dict)
    """Node → (as recorded until, what parted the variant and the recording) for the nodes where they part
    (:attr:`replay.results.NodeResult.horizon`); a node absent never parts."""
    closed_loop: bool = False
    """The variant was regenerated from the recording's scenario (replay/scenario.py): exact, no horizon."""
    kernel_kills: int = 0
    """Kernel OOM kills counted against it, one per process killed (a ``SystemOOM`` Event and its ``OOMKilled``
    container within 5 s are one): modelled in a closed loop, else real ones before their node's horizon."""
    first_kill: KernelKill | None = None
    first_kill_reports: tuple[KernelKill, ...] = ()
    """Every report of the first kill (the ``SystemOOM`` Event naming the process, the ``OOMKilled`` container)."""
    kernel_kills_not_judged: int = 0
    """Real kills after their node's horizon (the recording no longer shows this variant's world there)."""
    too_fast: int | None = 0
    """Moments memory fell from above the hard threshold to exhaustion between two passes (the nodes'
    ``too_fast``), before the horizon; None: not known (a closed-loop variant replayed without frames)."""
    too_fast_not_judged: int = 0
    not_ready: tuple[ReadyTransition, ...] = ()
    """Nodes' ``Ready`` turning ``False``/``Unknown`` (a kubelet starved of memory), before the horizon."""

    @property
    def as_recorded_until(self) -> datetime | None:
        """The earliest node horizon: until then every node of the variant is as recorded."""
        return min((t for t, _ in self.horizons.values()), default=None)

    @property
    def not_ready_nodes(self) -> tuple[str, ...]:
        """The nodes that went NotReady, each once, in the order they did."""
        return tuple(dict.fromkeys(t.node for t in sorted(self.not_ready, key=lambda t: t.time)))


@dataclass(frozen=True)
class PodOutcome:
    """A pod whose fate differs between variants: per variant (index order) its first eviction, or None, and the
    first ``OOMKilled`` container the kernel killed in it, or None."""

    namespace: str
    pod: str
    uid: str
    node: str
    evictions: tuple[Eviction | None, ...]
    comes_back: bool | None
    impact: str
    kills: tuple[KernelKill | None, ...] = ()
    kills_judged: tuple[bool, ...] = ()
    """Per variant: False for a real kill after the variant's horizon on the node (not judged)."""

    def kill(self, index: int) -> KernelKill | None:
        return self.kills[index] if index < len(self.kills) else None

    @property
    def messages_differ(self) -> bool:
        return len({e.message for e in self.evictions if e is not None}) > 1


@dataclass(frozen=True)
class Comparison:
    """Several replays of one recording side by side; ``frame`` is :data:`COMPARE_SCHEMA`."""

    recording: str
    variants: tuple[VariantSummary, ...]
    pods: tuple[PodOutcome, ...]
    frame: pl.DataFrame = field(compare=False, repr=False)


def _pressure(result: ReplayResult) -> dict[str, float]:
    """Condition → seconds on, summed over the nodes (:func:`replay.views.pressure_seconds`)."""
    out: dict[str, float] = {}
    for (_node, condition), seconds in pressure_seconds(result).items():
        out[condition] = out.get(condition, 0.0) + seconds
    return dict(sorted(out.items()))


def _first_by_pod(result: ReplayResult) -> dict[PodKey, Eviction]:
    first: dict[PodKey, Eviction] = {}
    for e in sorted(result.evictions, key=lambda e: (e.time, e.id)):
        first.setdefault((e.namespace, e.pod, e.uid), e)
    return first


def _frameless(result: ReplayResult) -> bool:
    """Replayed without per-pass frames (``engine.replay(frames=False)``): no ``too_fast`` was computed."""
    from replay.engine import NO_FRAMES

    return NO_FRAMES in result.notes


def recorded_races(result: ReplayResult, moments: Sequence[Moment]) -> tuple[int, int]:
    """(counted, not judged): the recording's moments memory ran out between two passes (``tune.race_moments``)
    that ``result``'s hard threshold would not have caught at the first pass, before / after the node's horizon —
    the too-fast moments of a variant replayed without frames (as tune counts its OOM risk)."""
    from replay.kernel import before_horizon
    from replay.tune import hard_memory

    by_node = {n.node: n for n in result.nodes}
    counted = not_judged = 0
    for m in moments:
        node = by_node.get(m.node)
        if node is None or m.from_available <= hard_memory(node, m.capacity):
            continue
        if before_horizon(node.horizon, m.from_time):
            counted += 1
        else:
            not_judged += 1
    return counted, not_judged


def summarize(index: int, result: ReplayResult, moments: Sequence[Moment] | None = None) -> VariantSummary:
    """One variant; ``moments`` (the recording's, :func:`replay.tune.race_moments`) stand in for the too-fast
    moments of a variant on a recording replayed without frames; a closed-loop one without frames has none known
    (its kills are modelled, so exact, either way)."""
    first = _first_by_pod(result)
    kernel = judge(result)
    first_kill = kernel.kills[0] if kernel.kills else None
    too_fast: int | None = len(kernel.too_fast)
    too_fast_not_judged = kernel.too_fast_not_judged
    if _frameless(result):
        if moments is not None and not kernel.closed_loop:
            too_fast, too_fast_not_judged = recorded_races(result, moments)
        else:
            too_fast = None
    return VariantSummary(
        index=index,
        label=str(result.settings.get("label", f"variant {index}")),
        settings=dict(result.settings),
        kubelet_versions=tuple(dict.fromkeys(n.kubelet_version for n in result.nodes)),
        evictions=len(result.evictions),
        pods_evicted=len(first),
        first_eviction=min((e.time for e in result.evictions), default=None),
        pressure_s=_pressure(result),
        real=len(result.matches),
        matched=sum(1 for m in result.matches if m.same_pod),
        matched_exact=sum(1 for m in result.matches if m.same_message),
        not_coming_back=sum(1 for e in first.values() if e.comes_back is False),
        horizons={n.node: (n.horizon, n.horizon_reason) for n in result.nodes if n.horizon is not None},
        closed_loop=bool(result.settings.get("closed_loop")),
        kernel_kills=len(kernel.kills),
        first_kill=first_kill,
        first_kill_reports=() if first_kill is None else tuple(same_kill(result.kernel_kills, first_kill)),
        kernel_kills_not_judged=len(kernel.kills_not_judged),
        too_fast=too_fast,
        too_fast_not_judged=too_fast_not_judged,
        not_ready=kernel.not_ready,
    )


def _pod_kills(result: ReplayResult) -> PodKills:
    """Per pod its first ``OOMKilled`` container (distinct kills), and whether it counts (before the horizon)."""
    kernel = judge(result)
    out: PodKills = {}
    for judged, kills in ((True, kernel.kills), (False, kernel.kills_not_judged)):
        for k in kills:
            if k.namespace is not None and k.pod is not None:
                key = (k.namespace, k.pod, k.uid or "")
                if key not in out or k.time < out[key][0].time:
                    out[key] = (k, judged)
    return out


def _same_pod(
    kills: dict[PodKey, tuple[KernelKill, bool]], known: set[PodKey]
) -> dict[PodKey, tuple[KernelKill, bool]]:
    """A kill whose container status named no UID takes the key of the one pod of that name evicted elsewhere."""
    out: PodKills = {}
    for key, value in kills.items():
        if not key[2]:
            named = [k for k in known if k[:2] == key[:2]]
            key = named[0] if len(named) == 1 else key
        out[key] = value
    return out


def _fate(
    e: Eviction | None, k: tuple[KernelKill, bool] | None
) -> tuple[datetime | None, str | None, datetime | None, bool | None]:
    """What a variant did to a pod, to tell variants apart: its first eviction (time, message), its first kernel
    kill (time, judged)."""
    return (
        None if e is None else e.time,
        None if e is None else e.message,
        None if k is None else k[0].time,
        None if k is None else k[1],
    )


def compare(results: Sequence[ReplayResult], rec: Recording | None = None) -> Comparison:
    """The variants side by side; ``results[0]`` is the baseline. ``rec`` (the recording replayed) gives the
    too-fast moments of results replayed without frames (``whatif`` without ``-o``)."""
    if not results:
        raise ValueError("compare needs at least one result")
    moments = None
    if rec is not None and any(_frameless(r) and not judge(r).closed_loop for r in results):
        from replay.tune import race_moments

        moments = race_moments(rec, [n.node for n in results[0].nodes], results[0].kernel_kills)
    firsts = [_first_by_pod(r) for r in results]
    evicted = {k for f in firsts for k in f}
    killed = [_same_pod(_pod_kills(r), evicted) for r in results]

    def when(key: PodKey) -> datetime:
        return min([f[key].time for f in firsts if key in f] + [k[key][0].time for k in killed if key in k])

    keys = sorted(evicted | {k for kills in killed for k in kills}, key=lambda k: (when(k), k))
    real_ids = [{m.predicted_id for m in r.matches if m.same_pod} for r in results]
    pods = []
    rows: dict[str, list[Any]] = {name: [] for name in COMPARE_SCHEMA.names()}
    for key in keys:
        per = tuple(f.get(key) for f in firsts)
        kills = tuple(k.get(key) for k in killed)
        present = [e for e in per if e is not None]
        differs = len({_fate(e, k) for e, k in zip(per, kills, strict=True)}) > 1
        some = present[0] if present else None
        node = some.node if some else next(k[0].node or "" for k in kills if k is not None)
        comes_back, impact = (some.comes_back, some.impact) if some else (None, "")
        if differs:
            pods.append(
                PodOutcome(
                    key[0],
                    key[1],
                    key[2],
                    node,
                    per,
                    comes_back,
                    impact,
                    tuple(k and k[0] for k in kills),
                    tuple(k is not None and k[1] for k in kills),
                )
            )
        for i, (e, k) in enumerate(zip(per, kills, strict=True)):
            for name, value in (
                ("variant", i),
                ("label", str(results[i].settings.get("label", ""))),
                ("node", node),
                ("namespace", key[0]),
                ("pod", key[1]),
                ("uid", key[2]),
                ("evicted", e is not None),
                ("time", e.time if e else None),
                ("cause", e.cause if e else None),
                ("message", e.message if e else None),
                ("comes_back", comes_back),
                ("impact", impact),
                ("matches_real", e is not None and e.id in real_ids[i]),
                ("differs", differs),
                ("oom_killed", k is not None),
                ("oom_killed_time", k[0].time if k else None),
                ("oom_kill_judged", k[1] if k else None),
            ):
                rows[name].append(value)
    return Comparison(
        recording=results[0].recording,
        variants=tuple(summarize(i, r, moments) for i, r in enumerate(results)),
        pods=tuple(pods),
        frame=pl.DataFrame(rows, schema=COMPARE_SCHEMA),
    )


def _kill(k: KernelKill) -> dict[str, Any]:
    return {
        "kind": k.kind,
        "namespace": k.namespace,
        "pod": k.pod,
        "container": k.container,
        "victim": k.victim,
        "pid": k.pid,
        "time": json_time(k.time),
    }


def _pod_fate(p: PodOutcome, i: int) -> dict[str, Any] | None:
    """A pod in one variant: its first eviction's time, cause and message (None when not evicted) and its first
    kernel kill (``oom_killed``); None when neither."""
    e, k = p.evictions[i], p.kill(i)
    if e is None and k is None:
        return None
    return {
        "time": None if e is None else json_time(e.time),
        "cause": None if e is None else e.cause,
        "message": None if e is None else e.message,
        "oom_killed": None
        if k is None
        else {"time": json_time(k.time), "container": k.container, "judged": p.kills_judged[i]},
    }


def to_document(c: Comparison) -> dict[str, Any]:
    """``compare.json``: the variants and the pods that differ (the long form is ``compare.parquet``)."""
    return {
        "format": "evictlens-whatif",
        "schema_version": 2,
        "recording": c.recording,
        "variants": [
            {
                "index": v.index,
                "label": v.label,
                "settings": dict(v.settings),
                "kubelet_versions": list(v.kubelet_versions),
                "evictions": v.evictions,
                "pods_evicted": v.pods_evicted,
                "first_eviction": json_time(v.first_eviction),
                "pressure_s": dict(v.pressure_s),
                "real": v.real,
                "matched": v.matched,
                "matched_exact": v.matched_exact,
                "not_coming_back": v.not_coming_back,
                "closed_loop": v.closed_loop,
                "as_recorded_until": json_time(v.as_recorded_until),
                "kernel_kills": v.kernel_kills,
                "kernel_kills_not_judged": v.kernel_kills_not_judged,
                "first_kill": None
                if v.first_kill is None
                else {
                    "node": v.first_kill.node,
                    "time": json_time(v.first_kill.time),
                    "reports": [_kill(k) for k in v.first_kill_reports],
                },
                "too_fast": v.too_fast,
                "too_fast_not_judged": v.too_fast_not_judged,
                "not_ready_nodes": list(v.not_ready_nodes),
                "not_ready": [
                    {"node": t.node, "time": json_time(t.time), "status": t.status, "reason": t.reason}
                    for t in v.not_ready
                ],
                "horizons": [
                    {"node": node, "as_recorded_until": json_time(t), "reason": why}
                    for node, (t, why) in sorted(v.horizons.items(), key=lambda kv: (kv[1][0], kv[0]))
                ],
            }
            for v in c.variants
        ],
        "pods": [
            {
                "namespace": p.namespace,
                "pod": p.pod,
                "uid": p.uid,
                "node": p.node,
                "comes_back": p.comes_back,
                "impact": p.impact,
                "messages_differ": p.messages_differ,
                "variants": [_pod_fate(p, i) for i in range(len(p.evictions))],
            }
            for p in c.pods
        ],
    }


@dataclass(frozen=True)
class EvictionPair:
    """One pod either of two results evicts or the kernel OOM-kills a container of, with its first eviction in each
    (None where it is not evicted) and its first ``OOMKilled`` container in each (None where none is)."""

    node: str
    namespace: str
    pod: str
    a: Eviction | None
    b: Eviction | None
    a_kill: KernelKill | None = None
    b_kill: KernelKill | None = None

    @property
    def key(self) -> str:
        return f"{self.node}/{self.namespace}/{self.pod}"

    @property
    def status(self) -> str:
        """How the evictions differ (``only in A``, ``message differs`` …), then the kernel's kills of the pod
        (``kernel kill in A``); an eviction in neither says the kill alone."""
        kill = {
            (True, False): "kernel kill in A",
            (False, True): "kernel kill in B",
            (True, True): "kernel kill in both",
        }.get((self.a_kill is not None, self.b_kill is not None))
        if self.a is None and self.b is None:
            return kill or "same message"
        return self._eviction_status + (f"; {kill}" if kill else "")

    @property
    def killed(self) -> bool:
        return self.a_kill is not None or self.b_kill is not None

    @property
    def _eviction_status(self) -> str:
        if self.a is None:
            return "only in B"
        if self.b is None:
            return "only in A"
        if self.a.message != self.b.message:
            return "message differs"
        return "same message" if self.a.tick == self.b.tick else "same message, other time"

    @property
    def first_time(self) -> datetime | None:
        times = [e.time for e in (self.a, self.b, self.a_kill, self.b_kill) if e is not None]
        return min(times) if times else None


def align(a: ReplayResult, b: ReplayResult) -> list[EvictionPair]:
    """Each pod (node, namespace, name) either result evicts or the kernel OOM-kills a container of (the kills that
    count against the result, :func:`replay.kernel.judge`), its first eviction and kill in each, in the order they
    first happen (two results side by side, as the TUI's Compare screen shows them)."""

    def first(result: ReplayResult) -> dict[tuple[str, str, str], Eviction]:
        out: dict[tuple[str, str, str], Eviction] = {}
        for e in result.evictions:
            out.setdefault((e.node, e.namespace, e.pod), e)
        return out

    def killed(result: ReplayResult) -> dict[tuple[str, str, str], KernelKill]:
        out: dict[tuple[str, str, str], KernelKill] = {}
        for k in judge(result).kills:
            if k.node is not None and k.namespace is not None and k.pod is not None:
                out.setdefault((k.node, k.namespace, k.pod), k)
        return out

    fa, fb, ka, kb = first(a), first(b), killed(a), killed(b)
    keys = dict.fromkeys([*fa, *fb, *ka, *kb])
    pairs = [EvictionPair(*k, fa.get(k), fb.get(k), ka.get(k), kb.get(k)) for k in keys]
    return sorted(pairs, key=lambda p: (p.first_time is None, p.first_time or datetime.min, p.key))
