"""One replay result as the TUI holds it: the small parts in memory, the signals frame behind a lazy scan.

A results directory of a 100-node day holds millions of signal rows. The overview needs only one
aggregate per node and signal, and the timeline needs one node's rows when that node is opened,
so the signals stay a :class:`polars.LazyFrame` (a Parquet scan, or a replay's spooled frames) and
each question is one query of :mod:`replay.views`, cached here. Everything else is the results model.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from recordings.reader import Recording, open_recording
from recordings.scratch import scratch_dir
from replay import views
from replay.kernel import distinct_kills
from replay.kubelet.config import FlagOverrides
from replay.results import Eviction, KernelKill, Match, NodeResult, ReplayResult, TooFast
from replay.settings import SettingsRequest


@dataclass(frozen=True)
class MomentInputs:
    recording: Recording
    request: SettingsRequest
    notes: tuple[str, ...]
    closed_loop: bool
    """``recording`` is the scenario run again with the result's settings (explained as it is)."""


@dataclass
class ResultsView:
    """A loaded result: the model without its big frame, plus a lazy scan of the signals."""

    label: str
    result: ReplayResult
    signals: pl.LazyFrame
    origin: str
    """Where it came from: a results directory, or the recording replayed here."""
    request: SettingsRequest | None = None
    """What was asked, when it was replayed in this session (None for a results directory)."""
    _series: dict[str, pl.DataFrame] = field(default_factory=dict, repr=False)
    _overview: pl.DataFrame | None = field(default=None, repr=False)
    _recording: Recording | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _kills: tuple[tuple[KernelKill, ...], list[KernelKill]] | None = field(default=None, repr=False)
    _world: tuple[Recording, SettingsRequest, tempfile.TemporaryDirectory[str]] | None = field(default=None, repr=False)
    _world_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_result(
        cls,
        result: ReplayResult,
        label: str,
        origin: str,
        request: SettingsRequest | None = None,
        opened: Recording | None = None,
    ) -> ResultsView:
        """``opened``: the recording the result was replayed from, already open (the detail views read it)."""
        view = cls(label, result, result.signals, origin, request)
        view._recording = opened
        return view

    # -- the small parts ------------------------------------------------------------------
    @property
    def nodes(self) -> tuple[NodeResult, ...]:
        return self.result.nodes

    def node(self, name: str) -> NodeResult:
        return self.result.node(name)

    def recording(self) -> Path | None:
        """The replayed recording, when it is still on disk (for pods, containers and usage)."""
        path = Path(self.result.recording)
        return path if (path / "manifest.json").is_file() else None

    def open_recording(self) -> Recording | None:
        """The replayed recording opened once and shared by the views that read it (pods, containers), or None
        when it is not on disk; opening reads its manifest and journal, so the eviction detail does it once."""
        with self._lock:
            if self._recording is None:
                path = self.recording()
                self._recording = None if path is None else open_recording(path)
            return self._recording

    @property
    def closed_loop(self) -> bool:
        """The result is a scenario run again with other settings (replay.scenario.closed_loop_replay)."""
        return bool(self.result.settings.get("closed_loop"))

    def world(self) -> Recording | None:
        """The recording this result's evictions happened in, for the views that read pods, containers and
        moments: the replayed recording, or for a closed-loop result the scenario run again with its settings
        (regenerated on first use, kept in a temporary directory while the TUI runs), where the pods it evicted
        stopped and were recreated. None: the recording is not on disk."""
        return self._regenerated()[0]

    def moment_inputs(self) -> MomentInputs | None:
        """What ``explain_moment`` replays a moment of this result from: :meth:`world` and the settings (for a
        closed-loop result, the request that replays the regenerated run), with :meth:`settings_request`'s notes."""
        rec, again = self._regenerated()
        if rec is None:
            return None
        request, notes = self.settings_request()
        return MomentInputs(rec, again or request, notes, closed_loop=again is not None)

    def _regenerated(self) -> tuple[Recording | None, SettingsRequest | None]:
        rec = self.open_recording()
        if rec is None or not self.closed_loop:
            return rec, None
        with self._world_lock:
            if self._world is None:
                from replay.scenario import can_regenerate, regenerate

                request, _notes = self.settings_request()
                if not can_regenerate(rec, request):
                    return rec, None
                tmp = scratch_dir("evictlens-tui-closed-loop-")
                again = regenerate(rec, request, Path(tmp.name) / "rec")
                self._world = (again.recording, again.request, tmp)
            return self._world[0], self._world[1]

    def evictions_of(self, node: str | None = None) -> list[Eviction]:
        return [e for e in self.result.evictions if node is None or e.node == node]

    def eviction(self, eviction_id: int) -> Eviction:
        for e in self.result.evictions:
            if e.id == eviction_id:
                return e
        raise KeyError(eviction_id)

    def real_of(self, node: str | None = None) -> list[Match]:
        """Every real eviction the recording kept (each as its match, predicted or not)."""
        return [m for m in self.result.matches if node is None or m.real.node == node]

    def match_for(self, eviction: Eviction) -> Match | None:
        for m in self.result.matches:
            if m.predicted_id == eviction.id:
                return m
        return None

    def kills(self, node: str | None = None) -> list[KernelKill]:
        """The kernel's kills, one per process killed (replay.kernel.distinct_kills: a ``SystemOOM`` Event and the
        ``OOMKilled`` container it names are one kill told twice), on ``node`` or every node."""
        if self._kills is None or self._kills[0] is not self.result.kernel_kills:
            self._kills = (self.result.kernel_kills, distinct_kills(self.result.kernel_kills))
        return [k for k in self._kills[1] if node is None or k.node == node]

    def races(self, node: str | None = None) -> list[TooFast]:
        """The moments memory ran out between two passes (each node's ``too_fast``), on ``node`` or every node."""
        return [t for n in self.nodes if node is None or n.node == node for t in n.too_fast]

    def not_ready(self) -> dict[str, str]:
        """Node → the first Ready status other than True it went through (``Unknown``, ``False``)."""
        out: dict[str, str] = {}
        for r in sorted(self.result.ready_transitions, key=lambda r: r.time):
            if r.status != "True":
                out.setdefault(r.node, r.status or "?")
        return out

    # -- aggregates (replay.views; cached here, per result) ---------------------------------
    def pressure_seconds(self) -> dict[tuple[str, str], float]:
        """(node, condition) → seconds the condition was on."""
        return views.pressure_seconds(self.result)

    def lowest_available(self) -> pl.DataFrame:
        """node, signal, lowest: the minimum available per node and signal (one lazy aggregation)."""
        if self._overview is None:
            self._overview = views.lowest_available(self.signals)
        return self._overview

    def overcommit(self, resource: str = "memory") -> dict[str, float]:
        """Node → the highest Σ limits / allocatable of ``resource`` over the replay."""
        return views.overcommit_peaks(getattr(self.result, "overcommit", None), resource)

    def signal_names(self) -> list[str]:
        return sorted(set(self.lowest_available()["signal"].to_list()), key=views.signal_key)

    def pass_at(self, node: str, when: datetime) -> tuple[int, datetime] | None:
        """The node's pass (tick, time) at or before ``when`` — the moment the timeline's cursor stands for on
        this node (the engine's ``Moment`` reads a time the same way); None before its first pass."""
        passes = self.node_series(node).select("tick", "time").unique("tick").sort("tick")
        before = passes.filter(pl.col("time") <= when)
        if before.is_empty():
            return None
        tick, time = before.row(-1)
        return int(tick), time

    def settings_request(self) -> tuple[SettingsRequest, tuple[str, ...]]:
        """The settings this result was replayed with, to replay a moment of it (the engine's ``moment``):
        what was asked in this session, else rebuilt from ``result.json``'s settings; notes say what a results
        directory cannot give back (a ``--config`` document, a forced topology)."""
        if self.request is not None:
            return self.request, ()
        settings = self.result.settings
        flags = {str(k): str(v) for k, v in (settings.get("overrides") or {}).items()}

        def many(flag: str) -> tuple[str, ...]:
            return (flags[flag],) if flag in flags else ()

        grace = flags.get("--eviction-max-pod-grace-period")
        overrides = FlagOverrides(
            eviction_hard=many("--eviction-hard"),
            eviction_soft=many("--eviction-soft"),
            eviction_soft_grace_period=many("--eviction-soft-grace-period"),
            eviction_minimum_reclaim=many("--eviction-minimum-reclaim"),
            eviction_max_pod_grace_period=int(grace) if grace is not None else None,
            eviction_pressure_transition_period=flags.get("--eviction-pressure-transition-period"),
            kube_reserved=many("--kube-reserved"),
            system_reserved=many("--system-reserved"),
        )
        version = settings.get("kubelet_version")
        request = SettingsRequest(
            kubelet_version=None if version in (None, "per node") else str(version),
            feature_gates={str(k): bool(v) for k, v in (settings.get("feature_gates") or {}).items()},
            overrides=overrides,
            label=self.label,
            counterfactual=bool(settings.get("counterfactual", False)),
        )
        notes = []
        source = settings.get("config_source")
        if source and not str(source).startswith("recorded /configz per node"):
            notes.append(f"this result was replayed with {source}; the moment uses each node's recorded /configz")
        if settings.get("topology") not in (None, "inferred per node"):
            notes.append("this result was replayed with a given filesystem topology; the moment infers each node's")
        return request, tuple(notes)

    def node_series(self, node: str) -> pl.DataFrame:
        """One node's signal rows (tick, time, signal, available, capacity, threshold), collected on first use."""
        if node not in self._series:
            self._series[node] = views.node_signals(self.signals, node)
        return self._series[node]
