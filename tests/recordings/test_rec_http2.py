"""HTTP/2 at scale, shrunk for CI: what lost ticks and pods at 500 nodes × 50 pods.

Two faults the 500-node benchmark hit, each reproduced here with a few nodes:

* the pod list (many 0.5 MB pages) shared the HTTP/2 connection with idle watch streams and
  stalled until it timed out, over and over, so no pod was ever recorded;
* the server ended the HTTP/2 connection (hypercorn's request cap: GOAWAY, then drop) with
  dozens of summaries in flight, and every one of them became a gap.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from rec_support import FakeServer, committed_ticks, kill_quietly, start_record, wait_for

from recordings.reader import open_recording

NODES, PODS = 12, 100  # 1 200 pods: three list pages of 500


@pytest.fixture(scope="module")
def dropping_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    """Drops every connection after 30 requests (about every other tick on the poll connection)."""
    server = FakeServer(
        tmp_path_factory.mktemp("h2srv"), nodes=NODES, pods=PODS, kubelet_ports=False, extra=["--max-requests", "30"]
    )
    server.start()
    yield server
    server.stop()


def test_http2_keeps_every_tick_and_lists_all_pods_while_connections_drop(
    dropping_server: FakeServer, tmp_path: Path
) -> None:
    before = dropping_server.stats()
    out = tmp_path / "rec"

    def polls() -> int:
        return int(dropping_server.stats().get("kubelet_stats/summary", 0) - before.get("kubelet_stats/summary", 0))

    # Runs until at least 8 ticks are durable and the poll connection was dropped several
    # times (30 requests each), however long a loaded machine takes for that.
    # A 3 s interval: a tick's polls may take 2.7 s (POLL_SHARE), room for a reconnect and its retried requests on a
    # loaded machine (at 2 s, load 20 timed 7 summaries out). A dropped connection's requests are errors at once,
    # not timeouts: the fault this pins still shows as gaps.
    args = ["--kubeconfig", dropping_server.kubeconfig, "-o", str(out), "--interval", "3s", "--timeout", "3s"]
    proc = start_record(args)
    try:
        wait_for(lambda: committed_ticks(out) >= 8 and polls() > 3 * 30, timeout=120, what="8 ticks, 90 polls")
        proc.send_signal(signal.SIGTERM)
        _o, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    after = dropping_server.stats()
    assert after.get("http_2", 0) - before.get("http_2", 0) == after["requests"] - before.get("requests", 0), (
        "HTTP/2 only"
    )
    rec = open_recording(out)
    ticks = rec.scan_ticks().collect()
    gaps = ticks.filter(~pl.col("ok"))
    assert gaps.height == 0, list(zip(gaps["tick"], gaps["node"], gaps["error"], strict=True))
    assert ticks["tick"].n_unique() >= 8 and ticks.height == NODES * ticks["tick"].n_unique()
    # The first list got through (three pages, no restart) and every pod is in the recording.
    assert after["list_pods_started"] - before.get("list_pods_started", 0) == 1
    for node in ("node-000", f"node-{NODES - 1:03d}"):
        assert len(rec.pods_at(node)) == PODS


@pytest.fixture(scope="module")
def quiet_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    """4 000 pods: eight list pages, more than tick 0 takes, so most pages meet idle watches only."""
    server = FakeServer(tmp_path_factory.mktemp("h2quiet"), nodes=40, pods=100, kubelet_ports=False)
    server.start()
    yield server
    server.stop()


def test_http2_pod_list_is_not_stalled_by_idle_watch_streams(quiet_server: FakeServer, tmp_path: Path) -> None:
    """Between ticks nothing but watches is open; the list pages must still come through.

    A stalled page waits for the next watch event, and this cluster has none: it would stall until the timeout,
    restart the list and never record the pods. The timeout is generous (a page of 500 pods on a loaded box is not
    a stall), the interval gives a tick's 40 summaries 7.2 s (at 4 s, load 18 made a gap), and the run ends on two
    committed ticks, not after a wall-clock duration.
    """
    before = quiet_server.stats()
    out = tmp_path / "rec"
    args = ["--kubeconfig", quiet_server.kubeconfig, "-o", str(out), "--interval", "8s", "--timeout", "30s"]
    proc = start_record(args)
    try:
        wait_for(lambda: committed_ticks(out) >= 2 or proc.poll() is not None, timeout=180, what="two ticks")
        proc.send_signal(signal.SIGTERM)
        _o, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    after = quiet_server.stats()
    assert after["list_pods_started"] - before.get("list_pods_started", 0) == 1, "the pod list was never restarted"
    assert after["list_pods"] - before.get("list_pods", 0) == 8, "one list of eight pages"
    rec = open_recording(out)
    ticks = rec.scan_ticks().collect()
    gaps = ticks.filter(~pl.col("ok"))
    assert gaps.height == 0, list(zip(gaps["tick"], gaps["node"], gaps["error"], strict=True))
    for node in ("node-000", "node-039"):
        assert len(rec.pods_at(node, rec.ticks(node)[0].time)) == 100, "tick 0 already has its pods"
