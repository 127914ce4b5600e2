"""``tui --live`` on a live cluster: the project's test API server (tests/recordings/apiserver/, pressure mode),
recorded in-process by ``record``'s recorder (live/sources.py ``ClusterSource``) and followed by the live engine.
The overview's rows change in place as ticks arrive; a node that stops answering is marked stale (then not); the
fake kubelet's eviction arrives as a flagged row."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pilot_wait import showing, until

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "recordings"))  # the fake API server's runner
from rec_support import FakeServer  # type: ignore[import-not-found]

from tui.live_app import LiveApp
from tui.live_source import cluster_source
from tui.screens.live_overview import LiveOverviewScreen
from tui.widgets.record_table import RecordTable

pytestmark = pytest.mark.anyio
P = 1.0
"""The fake kubelets' sample period and the recorder's interval (seconds)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    server = FakeServer(
        tmp_path_factory.mktemp("apiserver"),
        nodes=2,
        pods=3,
        kubelet_ports=False,
        extra=["--pressure", "--sample-period", str(P)],
    )
    server.start()
    yield server
    server.stop()


def _row(app: Any, node: str) -> str:
    try:
        table = app.screen.query_one("#live-nodes", RecordTable)
        return " ".join(str(c) for c in table.get_row(node))
    except Exception:
        return ""


def _events(app: Any) -> list[str]:
    try:
        table = app.screen.query_one("#live-events", RecordTable)
    except Exception:
        return []
    return [" ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)]


async def test_the_live_overview_follows_the_test_api_server(cluster: FakeServer, tmp_path: Path) -> None:
    flags = ["--kubeconfig", cluster.kubeconfig, "--context", "static", "--interval", f"{P:g}s", "--timeout", "2s"]
    source = await anyio.to_thread.run_sync(cluster_source, flags)  # reaches the API server first (its own loop)
    app = LiveApp(source)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: showing(app, LiveOverviewScreen), "the live overview")
            await until(
                pilot, lambda: "node-000" in _row(app, "node-000") and "node-001" in _row(app, "node-001"), "both nodes"
            )
            first = _row(app, "node-000")
            tick = app.live.nodes["node-000"].tick
            # the same row, redrawn in place with the next tick (its time and values)
            await until(pilot, lambda: app.live.nodes["node-000"].tick >= tick + 2, "two more ticks")
            await until(pilot, lambda: _row(app, "node-000") != first, "the row updated")
            assert app.screen.query_one("#live-nodes", RecordTable).row_count == 2
            assert "1Gi" in str(app.screen.query_one("#live-detail").render()) or "next to go" in str(
                app.screen.query_one("#live-detail").render()
            )
            cluster.faults(timeout_nodes=["node-001"])  # node-001's summary hangs: a gap each tick
            try:
                await until(pilot, lambda: "⏸" in _row(app, "node-001"), "node-001 marked stale")
                assert "1 stale" in str(app.screen.query_one("#live-title").render())
                assert any("⏸ stale" in r and "node-001" in r for r in _events(app))
                assert "⏸" not in _row(app, "node-000")
            finally:
                cluster.faults(timeout_nodes=[])
            await until(pilot, lambda: "⏸" not in _row(app, "node-001"), "node-001 answering again")
            cluster.control("pressure", {"nodes": {"node-000": {"delta": 0.1}}})  # the fake kubelet evicts
            await until(pilot, lambda: any("◆ EVICTED" in r for r in _events(app)), "the real eviction's row")
            row = next(r for r in _events(app) if "◆ EVICTED" in r)
            assert "node-000" in row and "alloc-sidecars" in row
            assert any(flag in row for flag in ("✔ same message", "≠ message differs", "✗ not predicted", "~ was next"))
            await pilot.press("q")
            await until(pilot, lambda: source.finished(), "the recorder stopped", timeout=60)
    finally:
        source.stop()
        source.close()
    assert not source.root.exists(), "the private recording goes with the view"
