"""Comparing replays of one recording under several settings, as plain data (``evictlens whatif``, the TUI).

:func:`compare` takes the variants' :class:`~replay.results.ReplayResult` values, variant 0 first
(the baseline), and returns a :class:`Comparison`: per variant what it evicted, when pressure held
and how it matched reality, and per pod whose fate differs between variants, when each variant
evicts it and with which message. Nothing here renders; :mod:`replay.cli.whatif` and the TUI do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl

from replay.results import TIME, Eviction, ReplayResult, _schema
from replay.views import pressure_seconds

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
    }
)
"""One row per variant × pod any variant evicts (its first eviction in that variant)."""

PodKey = tuple[str, str, str]
"""(namespace, pod, uid)."""


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

    @property
    def as_recorded_until(self) -> datetime | None:
        """The earliest node horizon: until then every node of the variant is as recorded."""
        return min((t for t, _ in self.horizons.values()), default=None)


@dataclass(frozen=True)
class PodOutcome:
    """A pod whose fate differs between variants: per variant (index order) its first eviction, or None."""

    namespace: str
    pod: str
    uid: str
    node: str
    evictions: tuple[Eviction | None, ...]
    comes_back: bool | None
    impact: str

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


def summarize(index: int, result: ReplayResult) -> VariantSummary:
    first = _first_by_pod(result)
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
    )


def compare(results: Sequence[ReplayResult]) -> Comparison:
    """The variants side by side; ``results[0]`` is the baseline."""
    if not results:
        raise ValueError("compare needs at least one result")
    firsts = [_first_by_pod(r) for r in results]
    keys = sorted({k for f in firsts for k in f}, key=lambda k: (min(f[k].time for f in firsts if k in f), k))
    real_ids = [{m.predicted_id for m in r.matches if m.same_pod} for r in results]
    pods = []
    rows: dict[str, list[Any]] = {name: [] for name in COMPARE_SCHEMA.names()}
    for key in keys:
        per = tuple(f.get(key) for f in firsts)
        present = [e for e in per if e is not None]
        differs = (
            len(present) != len(per) or len({e.time for e in present}) > 1 or len({e.message for e in present}) > 1
        )
        some = present[0]
        if differs:
            pods.append(PodOutcome(key[0], key[1], key[2], some.node, per, some.comes_back, some.impact))
        for i, e in enumerate(per):
            for name, value in (
                ("variant", i),
                ("label", str(results[i].settings.get("label", ""))),
                ("node", some.node),
                ("namespace", key[0]),
                ("pod", key[1]),
                ("uid", key[2]),
                ("evicted", e is not None),
                ("time", e.time if e else None),
                ("cause", e.cause if e else None),
                ("message", e.message if e else None),
                ("comes_back", some.comes_back),
                ("impact", some.impact),
                ("matches_real", e is not None and e.id in real_ids[i]),
                ("differs", differs),
            ):
                rows[name].append(value)
    return Comparison(
        recording=results[0].recording,
        variants=tuple(summarize(i, r) for i, r in enumerate(results)),
        pods=tuple(pods),
        frame=pl.DataFrame(rows, schema=COMPARE_SCHEMA),
    )


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def to_document(c: Comparison) -> dict[str, Any]:
    """``compare.json``: the variants and the pods that differ (the long form is ``compare.parquet``)."""
    return {
        "format": "evictlens-whatif",
        "schema_version": 1,
        "recording": c.recording,
        "variants": [
            {
                "index": v.index,
                "label": v.label,
                "settings": dict(v.settings),
                "kubelet_versions": list(v.kubelet_versions),
                "evictions": v.evictions,
                "pods_evicted": v.pods_evicted,
                "first_eviction": _time(v.first_eviction),
                "pressure_s": dict(v.pressure_s),
                "real": v.real,
                "matched": v.matched,
                "matched_exact": v.matched_exact,
                "not_coming_back": v.not_coming_back,
                "closed_loop": v.closed_loop,
                "as_recorded_until": _time(v.as_recorded_until),
                "horizons": [
                    {"node": node, "as_recorded_until": _time(t), "reason": why}
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
                "variants": [
                    None if e is None else {"time": _time(e.time), "cause": e.cause, "message": e.message}
                    for e in p.evictions
                ],
            }
            for p in c.pods
        ],
    }


@dataclass(frozen=True)
class EvictionPair:
    """One pod either of two results evicts, with its first eviction in each (None where it is not evicted)."""

    node: str
    namespace: str
    pod: str
    a: Eviction | None
    b: Eviction | None

    @property
    def key(self) -> str:
        return f"{self.node}/{self.namespace}/{self.pod}"

    @property
    def status(self) -> str:
        if self.a is None:
            return "only in B"
        if self.b is None:
            return "only in A"
        if self.a.message != self.b.message:
            return "message differs"
        return "same message" if self.a.tick == self.b.tick else "same message, other time"

    @property
    def first_time(self) -> datetime | None:
        times = [e.time for e in (self.a, self.b) if e is not None]
        return min(times) if times else None


def align(a: ReplayResult, b: ReplayResult) -> list[EvictionPair]:
    """Each pod (node, namespace, name) either result evicts, its first eviction in each, in the order they
    first happen (two results side by side, as the TUI's Compare screen shows them)."""

    def first(result: ReplayResult) -> dict[tuple[str, str, str], Eviction]:
        out: dict[tuple[str, str, str], Eviction] = {}
        for e in result.evictions:
            out.setdefault((e.node, e.namespace, e.pod), e)
        return out

    fa, fb = first(a), first(b)
    pairs = [EvictionPair(*k, fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb])]
    return sorted(pairs, key=lambda p: (p.first_time is None, p.first_time or datetime.min, p.key))
