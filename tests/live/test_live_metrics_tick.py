"""``watch --listen`` at many nodes showed only part of them "at the newest tick": each node's
``evictlens_live_last_tick_timestamp_seconds`` was its manager's clock (its stats' sample time, one kubelet's
second or the next within one tick), not the tick's time. Every node decided at a tick now says that tick's time."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from recbuild import CONFIGZ, T0, Observation, Plan, Tick, micros, node_object, summary_at, write

from live.engine import LiveEngine
from live.metrics import LiveCollector

NODES = ("node-a", "node-b", "node-c")


def test_every_node_decided_at_the_newest_tick_says_its_time(tmp_path: Path) -> None:
    plan = Plan()
    for name in NODES:
        plan.objects.append(Observation(T0 - timedelta(seconds=5), "node", node_object(name)))
        plan.objects.append(Observation(T0 - timedelta(seconds=5), "configz", CONFIGZ, node=name))
    for i in range(4):
        when = T0 + timedelta(seconds=10 * i)
        # each kubelet's sample a second or two after the tick began (served one after another)
        summaries = {n: summary_at(when + timedelta(seconds=k), 4 << 30, node=n) for k, n in enumerate(NODES)}
        plan.ticks.append(Tick(when, summaries))
    rec = write(tmp_path / "rec", plan)
    engine = LiveEngine(rec)
    nodes = engine.nodes()
    assert set(nodes) == set(NODES)
    assert len({n.time_us for n in nodes.values()}) == len(NODES)  # the managers' clocks differ
    collector = LiveCollector()
    collector.update(nodes)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    times = dict(re.findall(r'^evictlens_live_last_tick_timestamp_seconds\{node="([^"]+)"\} (\S+)$', text, re.M))
    newest = micros(T0 + timedelta(seconds=30)) / 1e6
    assert {n: float(t) for n, t in times.items()} == dict.fromkeys(NODES, newest)
