"""The way to the server (issue 26, item 7): a real Prometheus behind TLS (http:// says "use https",
--tls-server-name for a port-forward to the Service's name), its non-JSON error body shown, a tenant
named, Thanos' dedup/partial_response sent and its warnings kept. Every failure: one line, exit 2,
nothing written.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from prom_support import MISSING, PROMETHEUS, PROMTOOL, backfill, openmetrics_from_recording, prometheus

from recordings.prometheus.client import ClientOptions, PrometheusClient, PrometheusError
from recordings.reader import open_recording
from recordings.scenarios import load_bundled
from replay.scenario import run_scenario

EVICTLENS = [sys.executable, "-m", "replay.cli"]
SERVICE = "prometheus.monitoring.svc"


@dataclass
class TlsServer:
    url: str  # https://127.0.0.1:PORT
    ca: Path
    start: float
    end: float


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsServer]:
    """sidecar-stress on a Prometheus that serves only TLS, with a certificate for the Service's name."""
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(MISSING)
    trustme = pytest.importorskip("trustme")
    work = tmp_path_factory.mktemp("prom-tls")
    rec = work / "rec"
    run_scenario(load_bundled("sidecar-stress"), rec)
    openmetrics_from_recording(rec, work / "om.txt")
    backfill(work / "om.txt", work / "data")
    ca = trustme.CA()
    cert = ca.issue_cert(SERVICE, f"{SERVICE}.cluster.local")
    ca.cert_pem.write_to_path(str(work / "ca.pem"))
    cert.cert_chain_pems[0].write_to_path(str(work / "tls.crt"))
    cert.private_key_pem.write_to_path(str(work / "tls.key"))
    web = work / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {work / 'tls.crt'}\n  key_file: {work / 'tls.key'}\n")
    ticks = open_recording(rec).ticks()
    with prometheus(work / "data", web_config=web, ca_file=work / "ca.pem") as srv:
        yield TlsServer(srv.url, work / "ca.pem", ticks[0].time.timestamp(), ticks[-1].time.timestamp())


def _import(
    url: str, out: Path, *extra: str, start: float = 1700000000, end: float = 1700000600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EVICTLENS, "import", "--prometheus", url, "--from", f"{start}", "--to", f"{end}", "--retries", "0",
         "-o", str(out), *extra],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def _one_line(done: subprocess.CompletedProcess[str], out: Path, *words: str) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert not out.exists()
    return lines[0]


@pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)
def test_http_against_the_tls_port_says_use_https(tls_server: TlsServer, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    plain = tls_server.url.replace("https://", "http://")
    _one_line(_import(plain, out, start=tls_server.start, end=tls_server.end), out, "use https://", "query")


@pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)
def test_a_port_forward_verifies_the_services_name_with_tls_server_name(tls_server: TlsServer, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    args = ("--ca-file", str(tls_server.ca), "--lookback", "5s")
    done = _import(tls_server.url, out, *args, start=tls_server.start, end=tls_server.end)
    _one_line(done, out, "cannot reach https://127.0.0.1", "CERTIFICATE_VERIFY_FAILED")
    done = _import(tls_server.url, out, *args, "--tls-server-name", SERVICE, start=tls_server.start, end=tls_server.end)
    assert done.returncode == 0, done.stderr
    assert open_recording(out).nodes()


@pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)
def test_a_non_json_error_body_is_shown(tls_server: TlsServer, tmp_path: Path) -> None:
    """A wrong path prefix: Prometheus answers 404 with a plain-text body, which the line quotes."""
    out = tmp_path / "imp"
    done = _import(f"{tls_server.url}/prometheus", out, "--ca-file", str(tls_server.ca), "--tls-server-name", SERVICE)
    _one_line(done, out, "HTTP 404", "'404 page not found'", "base URL")


@pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)
def test_thanos_parameters_reach_a_prometheus_that_ignores_them(tls_server: TlsServer, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _import(
        tls_server.url, out, "--ca-file", str(tls_server.ca), "--tls-server-name", SERVICE, "--lookback", "5s",
        "--dedup", "true", "--partial-response", "false", start=tls_server.start, end=tls_server.end,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


class _Fake(http.server.BaseHTTPRequestHandler):
    """Answers with (status, content type, body) from ``replies`` (the last one repeats); keeps bodies."""

    replies: ClassVar[list[tuple[int, str, bytes]]] = []
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        status, ctype, body = self.replies[0] if len(self.replies) == 1 else self.replies.pop(0)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[tuple[str, type[_Fake]]]:
    handler = type("F", (_Fake,), {"replies": [], "bodies": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", handler
    finally:
        srv.shutdown()
        srv.server_close()


EMPTY = (200, "application/json", b'{"status":"success","data":{"resultType":"vector","result":[]}}')


def test_a_gateways_html_error_page_is_shown_by_its_text(fake: tuple[str, type[_Fake]], tmp_path: Path) -> None:
    url, handler = fake
    handler.replies = [(502, "text/html", b"<html><head><title>502</title></head><body><h1>502 Bad Gateway</h1>")]
    out = tmp_path / "imp"
    _one_line(_import(url, out), out, "HTTP 502", "'502 Bad Gateway'")


def test_a_missing_tenant_says_to_pass_one(fake: tuple[str, type[_Fake]], tmp_path: Path) -> None:
    url, handler = fake
    handler.replies = [(401, "text/plain", b"no org id\n")]
    out = tmp_path / "imp"
    _one_line(_import(url, out), out, "HTTP 401", "'no org id'", "--header 'X-Scope-OrgID: TENANT'")


def test_a_wrong_tenant_reads_as_empty_and_says_so(fake: tuple[str, type[_Fake]], tmp_path: Path) -> None:
    url, handler = fake
    handler.replies = [EMPTY]
    out = tmp_path / "imp"
    _one_line(_import(url, out, "--header", "X-Scope-OrgID: team-x"), out, "no data between", "tenant 'team-x'")


def test_thanos_parameters_are_sent_and_warnings_kept(fake: tuple[str, type[_Fake]]) -> None:
    url, handler = fake
    handler.replies = [
        (200, "application/json", b'{"status":"success","warnings":["store 10.0.0.9:10901 unavailable"],'
         b'"data":{"resultType":"vector","result":[]}}')
    ]  # fmt: skip
    options = ClientOptions(url=url, params={"dedup": "false", "partial_response": "true"})
    with PrometheusClient(options) as client:
        assert client.query("up", 1700000000) == []
        assert client.warnings == ["store 10.0.0.9:10901 unavailable"]
    assert b"dedup=false" in handler.bodies[0] and b"partial_response=true" in handler.bodies[0]


def test_a_non_json_5xx_is_retried_then_shown(fake: tuple[str, type[_Fake]]) -> None:
    url, handler = fake
    handler.replies = [(503, "text/plain", b"upstream connect error or disconnect/reset before headers\n")]
    with (
        PrometheusClient(ClientOptions(url=url, retries=1, backoff=0.0), sleep=lambda _s: None) as client,
        pytest.raises(PrometheusError, match=r"HTTP 503 .*'upstream connect error.*\(after 2 attempts\)"),
    ):
        client.query("up", 1700000000)
