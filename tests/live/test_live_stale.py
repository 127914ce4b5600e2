"""A node that does not answer is shown stale (never as healthy), from its first tick on if it never answered,
with one ``stale`` event when it stops and one ``fresh`` when it answers again."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from live_feed import feed
from recbuild import CONFIGZ, T0, Observation, Plan, Tick, node_object, pods, summary_at, write

from live.engine import LiveEngine
from live.model import LiveEvent

GI = 1 << 30


def test_a_node_that_stops_answering_is_stale_then_fresh(tmp_path: Path) -> None:
    plan = Plan()
    for p in pods():
        plan.objects.append(Observation(T0 - timedelta(seconds=30), "pod", p))
    plan.objects.append(Observation(T0 - timedelta(seconds=30), "node", node_object()))
    plan.objects.append(Observation(T0 - timedelta(seconds=30), "configz", CONFIGZ, node="kind-worker"))
    answers = [False, True, True, False, False, True]
    for i, ok in enumerate(answers):
        when = T0 + timedelta(seconds=10 * i)
        plan.ticks.append(Tick(when, {"kind-worker": summary_at(when, 4 * GI) if ok else None}))
    src = write(tmp_path / "src", plan)
    dst = tmp_path / "rec"
    engines: list[LiveEngine] = []
    seen: list[tuple[int, bool, list[str]]] = []

    def committed(tick: int) -> None:
        got: list[LiveEvent] = engines[0].poll()
        now = engines[0].nodes()["kind-worker"]
        seen.append((tick, now.stale, [e.kind for e in got if e.kind in ("stale", "fresh")]))

    feed(src, dst, committed, on_open=lambda: engines.append(LiveEngine(dst)), finalize=False)
    assert seen == [
        (0, True, ["stale"]),
        (1, False, ["fresh"]),
        (2, False, []),
        (3, True, ["stale"]),
        (4, True, []),
        (5, False, ["fresh"]),
    ]
    first = engines[0].nodes()["kind-worker"]
    assert first.kubelet_version == "1.30" and first.signals["memory.available"] == 4 * GI
