"""``record --listen``'s pieces in-process: the metrics object, the reasons' normalisation, the server's answers."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kube.errors import RecordingError
from recordings.recorder.health import HealthServer, parse_listen
from recordings.recorder.metrics import FAILURE_REASONS, RecorderMetrics, Window, failure_reason


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        ("timeout for GET /api/v1/nodes/node-001/proxy/stats/summary", "timeout"),
        ("HTTP 503 for GET /api/v1/nodes/n/proxy/stats/summary", "http_5xx"),
        ("HTTP 404 for GET /api/v1/nodes/gone/proxy/stats/summary", "http_404"),
        ("HTTP 429 for GET /stats/summary", "http_429"),
        ("HTTP 400 for GET /stats/summary", "http_4xx"),
        ("ConnectError: [Errno 111] Connection refused for GET /stats/summary", "connection"),
        ("RemoteProtocolError: peer closed connection for GET /stats/summary", "connection"),
        ("certificate verify failed: unable to get local issuer certificate for GET /stats/summary", "tls"),
        ("node has no address in its status", "no_address"),
        ("unusable summary: node: expected an object", "unusable_summary"),
        ("no data", "other"),
        (None, "other"),
    ],
)
def test_gap_reasons_are_normalised_to_a_fixed_set(error: str | None, reason: str) -> None:
    assert failure_reason(error) == reason
    assert reason in FAILURE_REASONS


def _samples(m: RecorderMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client import generate_latest

    out = {}
    for fam in text_string_to_metric_families(generate_latest(m.registry).decode()):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_the_methods_move_the_series(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 1000)
    m = RecorderMetrics(tmp_path, window=lambda: Window(1_700_000_000.0, 1_700_000_600.0))
    m.tick_finished(duration=0.3, lag=0.05, failures=["timeout for GET /x", "HTTP 503 for GET /y", None])
    m.late(2)
    m.window_shrinks_now(1)
    m.window_shrinks_now(3)
    m.window_shrinks_now(3)
    m.incident("Evicted", at=1_700_000_500.0)
    m.incident("oom_killed")
    m.incident("something new")
    s = _samples(m)
    assert s[("evictlens_recorder_ticks_total", ())] == 1
    assert s[("evictlens_recorder_node_failures_total", (("reason", "timeout"),))] == 1
    assert s[("evictlens_recorder_node_failures_total", (("reason", "http_5xx"),))] == 1
    assert s[("evictlens_recorder_node_failures_total", (("reason", "other"),))] == 1
    assert s[("evictlens_recorder_node_failures_total", (("reason", "tls"),))] == 0
    assert s[("evictlens_recorder_tick_duration_seconds_count", ())] == 1
    assert s[("evictlens_recorder_tick_lag_seconds", ())] == pytest.approx(0.05)
    assert s[("evictlens_recorder_late_ticks_total", ())] == 2
    assert s[("evictlens_recorder_window_shrinks_total", ())] == 3
    assert s[("evictlens_recorder_incidents_total", (("kind", "evicted"),))] == 1
    assert s[("evictlens_recorder_incidents_total", (("kind", "oom_killed"),))] == 1
    assert s[("evictlens_recorder_incidents_total", (("kind", "other"),))] == 1
    assert s[("evictlens_recorder_incidents_total", (("kind", "system_oom"),))] == 0
    assert s[("evictlens_recorder_last_incident_timestamp_seconds", ())] > 1_700_000_500.0  # the later one
    assert s[("evictlens_recorder_disk_bytes", ())] >= 1000
    assert s[("evictlens_recorder_window_seconds", ())] == 600
    assert s[("evictlens_recorder_window_first_tick_timestamp_seconds", ())] == 1_700_000_000.0


def test_two_recorders_in_one_process_have_their_own_series(tmp_path: Path) -> None:
    a, b = RecorderMetrics(tmp_path), RecorderMetrics(tmp_path)
    a.tick_finished(duration=0.1, lag=0.0, failures=[])
    assert _samples(a)[("evictlens_recorder_ticks_total", ())] == 1
    assert _samples(b)[("evictlens_recorder_ticks_total", ())] == 0


def _get(server: HealthServer, path: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{server.port}{path}", timeout=10, trust_env=False)


def test_the_server_answers_health_readiness_and_metrics(tmp_path: Path) -> None:
    m = RecorderMetrics(tmp_path)
    server = HealthServer.start("127.0.0.1:0", m, stale_after=120)
    try:
        assert _get(server, "/healthz").status_code == 200
        ready = _get(server, "/readyz")
        assert ready.status_code == 503 and "no tick" in ready.text
        m.tick_finished(duration=0.1, lag=0.0, failures=[])
        assert _get(server, "/readyz").status_code == 200
        metrics = _get(server, "/metrics")
        assert metrics.status_code == 200 and "evictlens_recorder_ticks_total 1.0" in metrics.text
        om = httpx.get(
            f"http://127.0.0.1:{server.port}/metrics",
            headers={"Accept": "application/openmetrics-text; version=1.0.0"},
            timeout=10,
            trust_env=False,
        )
        assert om.headers["content-type"].startswith("application/openmetrics-text") and om.text.endswith("# EOF\n")
        m.not_ready("the recorder failed")
        failed = _get(server, "/readyz")
        assert failed.status_code == 503 and "failed" in failed.text
        m._heartbeat = time.monotonic() - 1000  # the loop stopped beating
        dead = _get(server, "/healthz")
        assert dead.status_code == 503 and "event loop" in dead.text
        assert _get(server, "/other").status_code == 404
    finally:
        server.close()


def test_a_port_in_use_is_the_flags_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(RecordingError) as err:
            HealthServer.start(f"127.0.0.1:{port}", RecorderMetrics(tmp_path), stale_after=60)
    assert "--listen" in err.value.one_line() and "in use" in err.value.one_line()


@pytest.mark.parametrize(
    ("addr", "parsed"), [(":9090", ("", 9090)), ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:9090", ("::1", 9090))]
)
def test_listen_addresses(addr: str, parsed: tuple[str, int]) -> None:
    assert parse_listen(addr) == parsed


def test_a_bare_port_serves_every_interface_ipv4_included(tmp_path: Path) -> None:
    server = HealthServer.start(":0", RecorderMetrics(tmp_path), stale_after=60)
    try:
        assert _get(server, "/healthz").status_code == 200
    finally:
        server.close()


def test_a_client_that_never_finishes_its_request_holds_up_nobody(tmp_path: Path) -> None:
    """Each connection has a thread of its own: a stuck scraper leaves /healthz (and the tick loop) alone."""
    server = HealthServer.start("127.0.0.1:0", RecorderMetrics(tmp_path), stale_after=60)
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as stuck:
            stuck.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # no blank line: the request never ends
            assert _get(server, "/healthz").status_code == 200
    finally:
        server.close()
