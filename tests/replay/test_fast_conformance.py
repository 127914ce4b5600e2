"""The conformance ``manager`` scenarios through the fast path: every expectation of every step holds.

Each case's summaries go through the recording codec into the tables' columns; the fast path computes
the signal observations and threshold masks of all steps with polars (replay.fast.signals), runs the
state machine over them (replay.fast.loop via FastManager) and lets the reference manager decide only
the passes it would delegate on a recording (loaded with the machine's state, on the codec's
summary). Conditions and admission are read from the machine's state after each pass. The case's
clock is its ``now`` (a recording's is the stats' sample time). Checked twice: one chunk per step
(expectations after each step) and the whole case as one chunk (same decisions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import polars as pl
import pytest
from helpers import CONFORMANCE

from recordings.schema import SERIES, SYSTEM_STATS
from recordings.summary_codec import empty_columns, encode, project
from recordings.writer import frame_from_columns
from replay.conformance.manager_case import _check_step, check_manager, merge_patch
from replay.conformance.vectors import Case, load_cases, thresholds, timestamp
from replay.fast.columns import storage_usage_many
from replay.fast.loop import EPOCH
from replay.fast.passes import ChunkPasses, FastManager
from replay.fast.signals import NODE_COLUMNS, PODS_COLUMNS, observations
from replay.kubelet.api import Pod, Summary, parse_pod, parse_summary
from replay.kubelet.conditions import has_node_condition
from replay.kubelet.config import EvictionConfig
from replay.kubelet.duration import parse_duration
from replay.kubelet.manager import EvictionManager, FsTopology, SyncResult
from replay.kubelet.pods import is_critical_pod
from replay.kubelet.versions import profile

CASES = [c for c in load_cases([CONFORMANCE]) if c.kind == "manager"]


class CaseRun:
    """One case's inputs as the fast path sees them, and a reference manager to delegate to."""

    def __init__(self, case: Case) -> None:
        inp = case.input
        node = inp["node"]
        self.case = case
        self.profile = profile(case.kubelet_version, case.feature_gates)
        self.config = EvictionConfig(
            thresholds=tuple(thresholds(node.get("thresholds") or [])),
            pressure_transition_period=parse_duration(str(node.get("pressure_transition_period", "5m0s"))),
            max_pod_grace_period_seconds=int(node.get("max_pod_grace_period_seconds", 0)),
            local_storage_capacity_isolation=bool(node.get("local_storage_capacity_isolation", False)),
            source=case.id,
        )
        self.topology = FsTopology(bool(node.get("dedicated_image_fs")), bool(node.get("split_container_image_fs")))
        self.admission = [
            parse_pod(p, source=case.id, field="input.admission_pods") for p in inp.get("admission_pods") or []
        ]
        self.steps: list[dict[str, Any]] = list(inp["steps"])
        self.raw: list[dict[str, Any]] = []
        self.after: list[Summary | None] = []
        self.pods: list[list[Pod]] = []
        self.now: list[int] = []
        raw: Any = None
        pods = [parse_pod(p, source=case.id, field=f"input.pods[{i}]") for i, p in enumerate(inp["pods"])]
        for n, step in enumerate(self.steps):
            raw = step["summary"] if "summary" in step else merge_patch(raw, step.get("summary_patch") or {})
            self.raw.append(raw)
            patch = step.get("summary_after_reclaim_patch")
            self.after.append(None if patch is None else parse_summary(merge_patch(raw, patch), source=case.id))
            if step.get("pods") is not None:
                pods = [parse_pod(p, source=case.id, field=f"step {n}.pods") for p in step["pods"]]
            self.pods.append(pods)
            at = timestamp(step["now"]) - EPOCH
            self.now.append(at.days * 86_400_000_000 + at.seconds * 1_000_000 + at.microseconds)
        self.tables = self._tables()
        self.gc_calls: list[str] = []
        self.reclaim_step = 0

    def _tables(self) -> dict[str, pl.DataFrame]:
        """Every step's summary as rows of the recording's tables (tick = step index)."""
        into = {t.name: empty_columns(t) for t in SERIES}
        for tick, raw in enumerate(self.raw):
            encode(raw, tick=tick, node="case", scraped=self.now[tick], into=into)
        return {name: frame_from_columns(name, cols) for name, cols in into.items()}

    def observations(self) -> pl.DataFrame:
        node_rows = self.tables["node_stats"].select(NODE_COLUMNS).sort("tick")
        pods_rows = self.tables[SYSTEM_STATS.name].filter(pl.col("name") == "pods").select(PODS_COLUMNS)
        times = pl.DataFrame(
            {"tick": range(len(self.now)), "_t": self.now}, schema={"tick": pl.UInt32, "_t": pl.Int64}
        ).with_columns(pl.col("_t").cast(pl.Datetime("us", "UTC")))
        obs = observations(node_rows, pods_rows, times)
        return obs.with_columns(pl.Series("when", self.now, dtype=pl.Int64))  # the case's clock

    def manager(self) -> EvictionManager:
        def reclaimer(signal: str, funcs: Sequence[str], summary: Summary) -> Summary | None:
            self.gc_calls.extend(funcs)
            return self.after[self.reclaim_step] or summary

        return EvictionManager(self.config, self.profile, self.topology, reclaimer)

    def storage(self) -> frozenset[int]:
        if not self.config.local_storage_capacity_isolation:
            return frozenset()
        pods = [p for step in self.pods for p in step]
        usage = storage_usage_many(
            {"case": pods}, lambda name: self.tables[name].lazy(), lambda _name, frame: frame.collect()
        )["case"]
        return usage.ticks(self.topology.dedicated_image_fs)

    def delegate(self, fast: FastManager) -> Callable[[int, int, datetime], SyncResult]:
        def run(_index: int, tick: int, when: datetime) -> SyncResult:
            self.reclaim_step = tick
            summary = parse_summary(project(self.raw[tick]), source=f"{self.case.id} step {tick}")
            return fast.manager.synchronize(summary, list(self.pods[tick]), when)

        return run

    def evictable(self, tick: int, _when: datetime) -> tuple[bool, bool]:
        pods = self.pods[tick]
        return any(not is_critical_pod(p) for p in pods), bool(pods)


def _fast_manager(run: CaseRun) -> FastManager:
    fast = FastManager.build(run.manager())
    assert not isinstance(fast, str), fast
    return fast


def _result(chunk: ChunkPasses, index: int) -> SyncResult:
    """The pass's SyncResult: the reference's where it ran, else what the fast path decided (no eviction)."""
    found = chunk.delegated.get(index)
    if found is not None:
        return found
    return SyncResult(EPOCH, node_conditions=chunk.conditions[index], reason=chunk.reasons[index])


def _decisions(chunk: ChunkPasses) -> list[tuple[Any, ...]]:
    return [
        (
            chunk.met[i],
            chunk.actionable[i],
            chunk.reasons[i],
            chunk.conditions[i],
            [(e.pod.name, e.message, e.grace_period_override) for e in _result(chunk, i).evictions],
        )
        for i in range(len(chunk.ticks))
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_manager_scenario_through_the_fast_path(case: Case) -> None:
    run = CaseRun(case)
    fast = FastManager.build(run.manager())
    if isinstance(fast, str):
        # the fast path hands such a node to the reference (driver.NodeReplay.fallback): the case still holds
        assert fast == "first pass failed"
        assert any("error" in (s.get("expect") or {}) for s in run.steps)
        assert check_manager(case, run.profile) == []
        return
    frame = fast.columns(run.observations())
    storage = run.storage()
    if run.config.local_storage_capacity_isolation:  # the joins find the step whose usage exceeds a limit
        assert storage == {n for n, s in enumerate(run.steps) if (s.get("expect") or {}).get("pod_killed")}
    failures: list[str] = []
    per_step: list[tuple[Any, ...]] = []
    for n, step in enumerate(run.steps):
        run.gc_calls.clear()
        chunk = fast.run(frame.slice(n, 1), storage, run.delegate(fast), run.evictable)
        assert chunk.ticks == [n]
        per_step += _decisions(chunk)
        result = _result(chunk, 0)
        manager = fast.state_manager()
        for want in (step.get("expect") or {}, step.get("derived") or {}):
            failures += _check_step(f"step {n}", want, result, manager, run.admission, list(run.gc_calls))
            for condition, value in (want.get("node_conditions") or {}).items():
                if has_node_condition(list(chunk.conditions[0]), condition) != value:
                    failures.append(f"step {n} {condition}: pass conditions {chunk.conditions[0]}")
    assert failures == []

    again = CaseRun(case)
    whole = _fast_manager(again)
    chunk = whole.run(whole.columns(again.observations()), again.storage(), again.delegate(whole), again.evictable)
    assert _decisions(chunk) == per_step


def test_every_manager_scenario_is_run() -> None:
    assert len(CASES) == 17
    assert sum(1 for c in CASES if FastManager.build(CaseRun(c).manager()) == "first pass failed") == 1
