"""A real Prometheus (the Debian package) scrapes ``evictlens record --listen``'s ``/metrics``.

The recorder records the test API server at one tick a second; Prometheus, on loopback, scrapes it
every second; the test asks Prometheus' query API until the recorder's series are there (a deadline,
no fixed wait) and checks their names, types and values as Prometheus stored them.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prom_support import MISSING, PROMETHEUS, free_port
from rec_support import FakeServer, kill_quietly, start_record, wait_for

pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason=MISSING)

EXPECTED = (
    "evictlens_recorder_ticks_total",
    "evictlens_recorder_node_failures_total",
    "evictlens_recorder_tick_duration_seconds_bucket",
    "evictlens_recorder_tick_duration_seconds_count",
    "evictlens_recorder_tick_lag_seconds",
    "evictlens_recorder_late_ticks_total",
    "evictlens_recorder_disk_bytes",
    "evictlens_recorder_window_seconds",
    "evictlens_recorder_window_first_tick_timestamp_seconds",
    "evictlens_recorder_window_last_tick_timestamp_seconds",
    "evictlens_recorder_window_shrinks_total",
    "evictlens_recorder_incidents_total",
    "evictlens_recorder_last_incident_timestamp_seconds",
    "evictlens_recorder_ready",
)


@contextlib.contextmanager
def scraping(tmp: Path, target: str) -> Iterator[str]:
    """Prometheus on loopback scraping ``target`` every second; yields its URL once ready."""
    assert PROMETHEUS is not None
    config = tmp / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
        "scrape_configs:\n"
        f"- job_name: evictlens\n  static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = free_port()
    log = (tmp / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"prometheus exited: {(tmp / 'prometheus.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                return httpx.get(f"{url}/-/ready", timeout=2, trust_env=False).status_code == 200
            return False

        wait_for(ready, timeout=90, what="prometheus ready")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def query(url: str, promql: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=10, trust_env=False)
    r.raise_for_status()
    return list(r.json()["data"]["result"])


def test_prometheus_scrapes_the_recorders_series(tmp_path: Path) -> None:
    srv = FakeServer(tmp_path / "srv", nodes=2, pods=3, kubelet_ports=False)
    srv.start()
    port = free_port()
    out = tmp_path / "rec"
    proc = start_record(
        [
            "--kubeconfig",
            srv.kubeconfig,
            "--context",
            "static",
            "-o",
            str(out),
            "--interval",
            "1s",
            "--retain",
            "10m",
            "--listen",
            f"127.0.0.1:{port}",
            "--status",
            "none",
        ]
    )
    try:
        with scraping(tmp_path, f"127.0.0.1:{port}") as prom:
            names = "|".join(EXPECTED)
            started = time.time()

            def all_there() -> bool:
                if proc.poll() is not None:
                    raise AssertionError(f"the recorder exited ({proc.returncode})")
                got = {s["metric"]["__name__"] for s in query(prom, f'{{__name__=~"{names}"}}')}
                ticks = query(prom, "evictlens_recorder_ticks_total")
                return got == set(EXPECTED) and bool(ticks) and float(ticks[0]["value"][1]) >= 2

            wait_for(all_there, timeout=180, what="the recorder's series in Prometheus")
            up = query(prom, 'up{job="evictlens"}')
            assert up and up[0]["value"][1] == "1"
            reasons = {s["metric"]["reason"] for s in query(prom, "evictlens_recorder_node_failures_total")}
            assert {"timeout", "connection", "http_5xx", "other"} <= reasons  # bounded, all present from the start
            kinds = {s["metric"]["kind"] for s in query(prom, "evictlens_recorder_incidents_total")}
            assert kinds == {"evicted", "oom_killed", "system_oom", "other"}
            assert float(query(prom, "evictlens_recorder_disk_bytes")[0]["value"][1]) > 0
            assert float(query(prom, "evictlens_recorder_ready")[0]["value"][1]) == 1
            last = float(query(prom, "evictlens_recorder_window_last_tick_timestamp_seconds")[0]["value"][1])
            assert started - 60 < last < time.time() + 60  # Unix seconds, not µs
            metadata = httpx.get(f"{prom}/api/v1/metadata", timeout=10, trust_env=False).json()["data"]
            assert metadata["evictlens_recorder_ticks"][0]["type"] == "counter"
            assert metadata["evictlens_recorder_tick_duration_seconds"][0]["type"] == "histogram"
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        kill_quietly(proc)
        srv.stop()
    assert proc.returncode == 0
