"""The smallest setting change that would have changed an incident's outcome, where the engine can tell.

Derived from the recorded signal at the passes that matter, then checked: the window is replayed again with the
changed ``--eviction-hard`` (the node's other hard thresholds kept: the flag replaces the whole map, as the
kubelet's does) and the engine says what that kubelet would have done. A check holds only as far as the window is
as recorded under the change (its horizon, ``replay.results.NodeResult.horizon``); the report says how far.
"""

from __future__ import annotations

from typing import Any

from recordings.reader import Recording, to_micros
from replay.engine import replay
from replay.kubelet.config import FlagOverrides
from replay.results import Eviction, NodeResult
from replay.settings import SettingsRequest

from .incident import Incident, stamp

MI = 1024 * 1024


DERIVED = ("allocatableMemory.", "containerfs.")
"""Thresholds the kubelet derives from the configured ones (allocatable from memory, containerfs from nodefs or
imagefs): not given again in the flag."""


def _hard_with(node: NodeResult, signal: str, mebibytes: int) -> tuple[str, ...]:
    """The node's configured hard thresholds with ``signal``'s set to ``mebibytes`` Mi, as ``--eviction-hard``."""
    others = [
        t.text.removesuffix(" (hard)")
        for t in node.thresholds
        if t.hard and t.signal != signal and not t.signal.startswith(DERIVED)
    ]
    return (*dict.fromkeys(others), f"{signal}<{mebibytes}Mi")


def _replay_with(rec: Recording, node: str, hard: tuple[str, ...]) -> tuple[list[Eviction], NodeResult]:
    request = SettingsRequest(label="smallest change", overrides=FlagOverrides(eviction_hard=hard), counterfactual=True)
    (result,) = replay(rec, [request], [node], jobs=1, frames=False, rankings=False, closed_loop=False)
    return [e for e in result.evictions if e.node == node], result.node(node)


def _flag(hard: tuple[str, ...]) -> str:
    return "--eviction-hard '" + ",".join(hard) + "'"


def _horizon(n: NodeResult) -> str:
    if n.horizon is None:
        return "the window replays as recorded under the change to its end"
    return f"as recorded only until {n.horizon.isoformat()} ({n.horizon_reason}); after it modelled (counterfactual)"


def smallest_change_for_eviction(rec: Recording, node: NodeResult, e: Eviction, inc: Incident) -> dict[str, Any]:
    """The hard threshold at which this pass would not have evicted, and what the replay does with it."""
    if e.signal is None:
        return {
            "setting": None,
            "derived": f"evicted for {e.cause} (a local-storage limit), not a threshold: no eviction setting "
            "changes it",
        }
    if not e.hard or e.observed_available is None:
        return {
            "setting": None,
            "derived": f"evicted by the soft threshold on {e.signal}: its value or grace period would change it; "
            "not derived here (only hard thresholds are)",
        }
    value = max(0, e.observed_available) // MI
    hard = _hard_with(node, e.signal, value)
    evictions, n = _replay_with(rec, node.node, hard)
    same = [x for x in evictions if x.uid == e.uid]
    if not same:
        check = f"the replay of the window with it does not evict {e.namespace}/{e.pod}"
        if evictions:
            first = evictions[0]
            check += f"; it evicts {first.namespace}/{first.pod} at {first.time.isoformat()} instead"
    else:
        later = same[0]
        check = (
            f"the replay of the window with it still evicts {e.namespace}/{e.pod}, at {later.time.isoformat()} "
            f"(tick {later.tick}): the pressure went on"
        )
    return {
        "setting": _flag(hard),
        "derived": (
            f"{e.signal} was {e.observed_available} bytes at the evicting pass (tick {e.tick}) against the threshold "
            f"of {e.threshold_value} bytes; a hard threshold at or below {value}Mi is not met there"
        ),
        "engine_check": check,
        "holds": _horizon(n),
    }


def smallest_change_for_kill(
    rec: Recording, node: NodeResult, inc: Incident, before: list[dict[str, Any]], cause: str
) -> dict[str, Any]:
    """For a kernel kill: the ``memory.available`` hard threshold at which the kubelet would have evicted at its
    last pass before the kill (derived from the recorded signal there), checked by the engine."""
    if cause.startswith("container limit"):
        return {
            "setting": None,
            "derived": "a cgroup OOM at the container's own memory limit: no eviction setting changes it; only a "
            "higher limit would, and the recording cannot tell how much higher (usage above the limit never happened)",
        }
    last = next((p for p in reversed(before) if isinstance(p.get("available"), int)), None)
    if last is None:
        return {"setting": None, "derived": "no pass of this node before the kill in the window: nothing to derive"}
    if not cause.startswith("node:"):
        lowest = min(int(p["available"]) for p in before if isinstance(p.get("available"), int))
        return {
            "setting": None,
            "derived": (
                f"the recording does not show the node short of memory (memory.available at least {lowest} bytes at "
                f"the passes before the kill, none running out between two): a hard threshold above {lowest // MI}Mi "
                "would make those passes evict, but nothing recorded says an eviction would have prevented this "
                "kill (a container with a limit is killed at its limit whatever the node has left): not proposed"
            ),
        }
    available, current = int(last["available"]), last.get("hard_threshold")
    if isinstance(current, int) and available < current:
        return {
            "setting": None,
            "derived": f"the hard threshold ({current} bytes) was already met at the last pass before the kill "
            f"({last['time']}, {available} bytes available): the kubelet's eviction came too late, a higher "
            "threshold only moves it earlier",
        }
    value = available // MI + 1  # the smallest whole Mi above what the last pass saw
    hard = _hard_with(node, "memory.available", value)
    evictions, n = _replay_with(rec, node.node, hard)
    in_time = [x for x in evictions if to_micros(x.time) <= inc.time]
    lead = (inc.time - to_micros(_parse(last["time"]))) / 1e6
    if in_time:
        first = in_time[0]
        victim = " (the pod the kernel killed)" if first.uid == inc.uid and inc.uid else ""
        check = (
            f"the replay of the window with it evicts {first.namespace}/{first.pod}{victim} at "
            f"{first.time.isoformat()} (tick {first.tick}), before the kill at {stamp(inc.time)}"
        )
    else:
        check = f"the replay of the window with it evicts nothing before the kill at {stamp(inc.time)}"
    earlier = [
        f"{p['time']}: memory.available<{int(p['available']) // MI + 1}Mi"
        for p in before[:-1]
        if isinstance(p.get("available"), int)
    ]
    return {
        "setting": _flag(hard),
        "derived": (
            f"memory.available was {available} bytes at the kubelet's last pass before the kill (tick {last['tick']}, "
            f"{last['time']}, {lead:.1f} s before it); a hard threshold above it ({value}Mi) is met at that pass"
            + (f"; to act at an earlier pass: {'; '.join(earlier)}" if earlier else "")
        ),
        "engine_check": check,
        "holds": (
            f"{_horizon(n)}; whether that eviction frees enough memory before the kernel acts is not in the "
            f"recording: the kill came {lead:.1f} s after the pass, and the evicted pod's containers must stop first"
        ),
    }


def _parse(text: str) -> Any:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00"))
