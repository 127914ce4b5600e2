"""Benchmark (run by hand, under tests/bench_tree.py for the process tree's peak RSS): the TUI on real data.

    .venv/bin/python tests/bench_tree.py --limit-gb 6 -- .venv/bin/python tests/tui/bench_tui_engine.py detail OUT
    .venv/bin/python tests/bench_tree.py --limit-gb 6 -- .venv/bin/python tests/tui/bench_tui_engine.py open REC

``detail OUT``: a results directory (``evictlens replay REC -o OUT``) → the overview → the node of the first
eviction → its timeline → that eviction's detail with its containers (read from the recording) → the pod view.
``open REC``: a recording replayed on the engine with its recorded settings until the overview shows (compare
with ``evictlens replay REC --json``). Headless Pilot at 160×48; each step waits on what the screen shows.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from pilot_wait import until


def _on_overview(app: Any) -> bool:
    from tui.screens.overview import OverviewScreen

    return isinstance(app.screen, OverviewScreen) and getattr(app.screen.focused, "id", None) == "nodes"


async def detail(out: Path) -> None:
    from tui.app import make_app
    from tui.screens.eviction import EvictionScreen
    from tui.screens.pod import PodScreen
    from tui.screens.timeline import TimelineScreen
    from tui.widgets.record_table import RecordTable

    t0 = time.perf_counter()
    app = make_app(out)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _on_overview(app), "the overview", 600)
        t1 = time.perf_counter()
        first = app.view.result.evictions[0]
        nodes = app.screen.query_one("#nodes", RecordTable)
        nodes.move_cursor(row=[r.key for r in nodes.visible_records()].index(first.node))
        t2 = time.perf_counter()
        await pilot.press("enter")
        await until(
            pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.model is not None, "the timeline", 600
        )
        t3 = time.perf_counter()
        await pilot.press("enter")  # the timeline opens on the first eviction mark
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, EvictionScreen)
                and bool(app.screen.query_one("#containers", RecordTable).records)
            ),
            "the detail",
            600,
        )
        t4 = time.perf_counter()
        e = app.screen.eviction
        await pilot.press("v")
        await until(
            pilot, lambda: isinstance(app.screen, PodScreen) and app.screen.series is not None, "the pod view", 600
        )
        t5 = time.perf_counter()
        problems = [n.message for n in app._notifications]
        app.exit()
    print(
        f"overview {t1 - t0:.2f} s · node timeline {t3 - t2:.2f} s · eviction detail {t4 - t3:.2f} s "
        f"(node → detail {t4 - t2:.2f} s) · pod view {t5 - t4:.2f} s · {e.node} {e.namespace}/{e.pod}"
        + (f" · notifications: {problems}" if problems else "")
    )


async def open_recording(rec: Path) -> None:
    from tui.app import make_app

    t0 = time.perf_counter()
    app = make_app(rec)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: _on_overview(app) or app.failed is not None, "the overview", 1800)
        shown = time.perf_counter() - t0
        failed, view = app.failed, app.view if app.results else None
        app.exit()
    if failed:
        print(f"failed: {failed}")
    elif view is not None:
        print(f"overview shown after {shown:.2f} s: {len(view.nodes)} nodes, {len(view.result.evictions)} evictions")


if __name__ == "__main__":  # the engine's worker processes import this module: run only as the script
    mode, target = sys.argv[1], Path(sys.argv[2])
    asyncio.run(detail(target) if mode == "detail" else open_recording(target))
