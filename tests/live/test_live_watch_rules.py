"""The shipped alerting rules (deploy/alerts/evictlens-live.rules.yml) load in promtool, fire in its rule unit test
(paging 10 minutes before a hard threshold, a stale node), and only name series watch --listen serves."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from live.metrics import LiveCollector
from live.model import Forecast, NextToGo, NodeNow

ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "alerts"
RULES = ALERTS / "evictlens-live.rules.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="needs promtool (Debian: apt-get install prometheus; .ci/run installs it as root)",
)


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=ALERTS, capture_output=True, text=True, timeout=120, check=False)


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    done = _promtool("check", "rules", RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 5 rules found" in done.stdout


@needs_promtool
def test_promtool_rule_unit_test_fires() -> None:
    done = _promtool("test", "rules", "evictlens-live.rules.test.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@needs_promtool
def test_the_unit_test_fails_when_the_rule_would_not_fire(tmp_path: Path) -> None:
    """The unit test has teeth: with the page at 5 minutes instead of 10, its expected alert is missing."""
    shutil.copy(ALERTS / "evictlens-live.rules.test.yml", tmp_path)
    (tmp_path / RULES.name).write_text(RULES.read_text().replace("< 600\n        for: 1m", "< 300\n        for: 1m"))
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "test", "rules", "evictlens-live.rules.test.yml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0 and "EvictlensHardThresholdSoon" in done.stdout + done.stderr


def _node(name: str, *, stale: bool = False) -> NodeNow:
    forecast = Forecast(name, "memory.available", 2 << 30, 1 << 30, "hard", 420.0, -1e6, "Theil–Sen", None)
    ntg = NextToGo(name, "shop", "orders", "u-1", "memory", "The node was low on resource: memory.", "first", "now")
    return NodeNow(
        name,
        7,
        1_735_689_670_000_000,
        stale,
        "timeout" if stale else None,
        "1.33",
        {"memory.available": 2 << 30, "pid.available": 30000},
        {"memory.available": (1 << 30,)},
        ("MemoryPressure",),
        ntg,
        (forecast,),
    )


def test_every_series_the_rules_name_is_served() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    collector = LiveCollector()
    collector.update({"worker-1": _node("worker-1"), "worker-2": _node("worker-2", stale=True)})
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    served = set(re.findall(r"^(evictlens_live_\w+)\{", text, re.M))
    named = set()
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            named |= set(re.findall(r"evictlens_live_\w+", rule["expr"] + str(rule.get("annotations", ""))))
    assert named and named <= served
    # one info series per node for the next victim; thresholds by kind; the stale node marked
    assert text.count("evictlens_live_next_to_go_info{") == 2
    assert (
        'evictlens_live_threshold_bytes{kind="hard",node="worker-1",signal="memory.available"} 1.073741824e+09' in text
    )
    assert 'evictlens_live_seconds_to_threshold{kind="hard",node="worker-1",signal="memory.available"} 420.0' in text
    assert 'evictlens_live_signal_observed{node="worker-1",signal="pid.available"} 30000.0' in text
    assert 'evictlens_live_node_stale{node="worker-2"} 1.0' in text
    assert 'evictlens_live_node_condition{condition="MemoryPressure",node="worker-1"} 1.0' in text
    collector.update({"worker-1": _node("worker-1")})  # worker-2 went: its series go with it
    assert 'node="worker-2"' not in generate_latest(registry).decode()
