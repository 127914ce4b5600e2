"""A real Prometheus (the Debian server, on loopback) scrapes ``evictlens watch --listen`` while the sample plays:
the per-node series (observed, threshold, seconds to threshold, next-to-go info, stale) are in its TSDB."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rec_support_live import closed_port
from watch_support import Watch

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None,
    reason="needs the prometheus binary (Debian: apt-get install prometheus; .ci/run installs it as root)",
)
WANTED = {
    "evictlens_live_signal_observed_bytes",
    "evictlens_live_signal_observed",
    "evictlens_live_threshold_bytes",
    "evictlens_live_seconds_to_threshold",
    "evictlens_live_next_to_go_info",
    "evictlens_live_node_stale",
    "evictlens_live_node_condition",
    "evictlens_live_last_tick_timestamp_seconds",
}


@contextlib.contextmanager
def scraping(target: str, data: Path, *, deadline: float = 120.0) -> Iterator[str]:
    """Prometheus scraping ``target`` every second; yields its URL once ready."""
    assert PROMETHEUS is not None
    config = data.parent / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        f"  - job_name: evictlens-live\n    static_configs: [{{targets: ['{target}']}}]\n"
    )
    port = closed_port()
    log = (data.parent / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        end = time.monotonic() + deadline
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"prometheus exited: {(data.parent / 'prometheus.log').read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < end, "prometheus not ready within the deadline"
            time.sleep(0.1)  # polling a condition under a deadline
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _names(url: str) -> set[str]:
    with contextlib.suppress(httpx.HTTPError):
        r = httpx.get(f"{url}/api/v1/series", params={"match[]": '{__name__=~"evictlens_live_.+"}'}, timeout=10)
        if r.status_code == 200:
            return {s["__name__"] for s in r.json()["data"]}
    return set()


def test_prometheus_scrapes_watch(tmp_path: Path) -> None:
    w = Watch("--sample", "jvm-spike", "--speed", "5", "--listen", "127.0.0.1:0")
    try:
        port = w.port()
        with scraping(f"127.0.0.1:{port}", tmp_path / "data") as url:
            end = time.monotonic() + 180
            while not (names := _names(url)) >= WANTED:
                assert time.monotonic() < end, f"missing {sorted(WANTED - names)}"
                time.sleep(0.5)  # polling Prometheus under a deadline
            r = httpx.get(
                f"{url}/api/v1/series", params={"match[]": "evictlens_live_next_to_go_info"}, timeout=10
            ).json()["data"]
            assert {s["node"] for s in r} == {"worker-1"}
            assert {s["pod"] for s in r} <= {"web-6f8d9c7b4-x9vzt", "orders-jvm-7d9c6b8f5-k2xqp"}
            up = httpx.get(f"{url}/api/v1/query", params={"query": 'up{job="evictlens-live"}'}, timeout=10).json()
            assert up["data"]["result"], up
        assert w.stop() == 0, "".join(w.err)
    finally:
        w.kill()
