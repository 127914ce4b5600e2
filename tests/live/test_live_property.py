"""Property: whatever the memory curve, gaps, soft threshold, grace period, minimum reclaim and pressure transition
period, the live engine fed tick by tick through the writer decides what ``replay`` decides on the recording."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from live_feed import feed
from recbuild import CONFIGZ, T0, Observation, Plan, Tick, node_object, pods, summary_at, write
from test_live_equal import live_decisions, replay_decisions

from live.engine import LiveEngine
from live.model import LiveEvent

GI = 1 << 30
LEVELS = (4 * GI, GI * 22 // 10, GI * 19 // 10, GI * 14 // 10, GI)
"""Around the sample's 1.5Gi hard threshold and the 2Gi soft one drawn below."""


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    samples = draw(st.lists(st.sampled_from((*range(len(LEVELS)), None)), min_size=3, max_size=25))
    samples[draw(st.integers(0, len(samples) - 1))] = draw(st.integers(0, len(LEVELS) - 1))  # a node with data
    interval = draw(st.sampled_from((5, 10)))
    config = copy.deepcopy(CONFIGZ)
    kubelet = config["kubeletconfig"]
    kubelet["evictionPressureTransitionPeriod"] = draw(st.sampled_from(("0s", "30s", "1m0s", "5m0s")))
    if draw(st.booleans()):
        kubelet["evictionSoft"] = {"memory.available": "2Gi"}
        kubelet["evictionSoftGracePeriod"] = {"memory.available": draw(st.sampled_from(("0s", "20s", "1m0s")))}
    if draw(st.booleans()):
        kubelet["evictionMinimumReclaim"] = {"memory.available": draw(st.sampled_from(("200Mi", "1Gi")))}
    plan = Plan()
    start = T0 - timedelta(seconds=30)
    for p in pods():
        plan.objects.append(Observation(start, "pod", p))
    plan.objects.append(Observation(start, "node", node_object(version=draw(st.sampled_from(("v1.30.0", "v1.33.1"))))))
    plan.objects.append(Observation(start, "configz", config, node="kind-worker"))
    for i, level in enumerate(samples):
        when = T0 + timedelta(seconds=interval * i)
        plan.ticks.append(Tick(when, {"kind-worker": None if level is None else summary_at(when, LEVELS[level])}))
    return plan


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans(), poll_every=st.integers(1, 4), fold_every=st.integers(2, 9))
def test_live_equals_replay_on_any_memory_curve(
    tmp_path_factory: pytest.TempPathFactory, plan: Plan, poll_every: int, fold_every: int
) -> None:
    base = tmp_path_factory.mktemp("prop")
    src = write(base / "src", plan)
    dst = base / "rec"
    events: list[LiveEvent] = []
    engines: list[LiveEngine] = []
    commits = [0]

    def committed(_tick: int) -> None:
        commits[0] += 1
        if commits[0] % poll_every == 0:
            events.extend(engines[0].poll())

    feed(src, dst, committed, on_open=lambda: engines.append(LiveEngine(dst)), fold_every=fold_every, finalize=False)
    events.extend(engines[0].poll())
    assert live_decisions(events) == replay_decisions(dst)
    assert engines[0].nodes()["kind-worker"].stale == (plan.ticks[-1].summaries["kind-worker"] is None)
