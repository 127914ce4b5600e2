"""A client certificate the API server refuses is named as the culprit, under TLS 1.2 and 1.3.

Under TLS 1.2 the server's alert ends the handshake (the message blamed the cluster CA); under
TLS 1.3 the server judges the certificate after the client's handshake, and the alert was lost
in a connection reset (``cannot reach the API server: ReadError``).  A real local HTTPS server
(Python's ssl, trustme certificates) requires client certificates from its own CA.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from rec_support import record_options, run_record


class _Version(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server calls do_<METHOD>
        body = b'{"gitVersion": "v1.30.0"}' if self.path == "/version" else b'{"kind": "Status", "code": 404}'
        self.send_response(200 if self.path == "/version" else 404)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


class _MutualTLSServer(HTTPServer):
    """An HTTPS server that requires a client certificate from ``client_ca``, up to ``version``."""

    def __init__(self, server_ca: trustme.CA, client_ca: trustme.CA, version: ssl.TLSVersion) -> None:
        super().__init__(("127.0.0.1", 0), _Version)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_ca.issue_cert("127.0.0.1").configure_cert(self.ctx)
        client_ca.configure_trust(self.ctx)
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.ctx.maximum_version = version

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = super().get_request()
        try:
            return self.ctx.wrap_socket(sock, server_side=True), addr
        except (OSError, ssl.SSLError):
            sock.close()
            raise

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # refused handshakes are the point of these tests


@pytest.fixture(params=[ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLS1.2", "TLS1.3"])
def mtls(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[_MutualTLSServer, Path, trustme.CA]]:
    server_ca, client_ca = trustme.CA(), trustme.CA()
    server_ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    server = _MutualTLSServer(server_ca, client_ca, request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, tmp_path, client_ca
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _kubeconfig(server: _MutualTLSServer, d: Path, user: dict[str, Any]) -> Path:
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": f"https://127.0.0.1:{server.server_address[1]}",
                    "certificate-authority": str(d / "ca.pem"),
                },
            }
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    path = d / "kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    path.chmod(0o600)
    return path


def _stranger_cert(d: Path) -> dict[str, str]:
    cert = trustme.CA().issue_cert("evictlens-recorder")
    cert.cert_chain_pems[0].write_to_path(str(d / "stranger.pem"))
    cert.private_key_pem.write_to_path(str(d / "stranger-key.pem"))
    (d / "stranger-key.pem").chmod(0o600)
    return {"client-certificate": str(d / "stranger.pem"), "client-key": str(d / "stranger-key.pem")}


def test_a_refused_client_certificate_is_named_with_the_servers_alert(
    mtls: tuple[_MutualTLSServer, Path, trustme.CA],
) -> None:
    server, d, _client_ca = mtls
    kc = _kubeconfig(server, d, _stranger_cert(d))
    res = run_record(["--kubeconfig", str(kc), "-o", str(d / "rec"), "--interval", "1s", "--duration", "1s"])
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"refused the client certificate (client-certificate {d / 'stranger.pem'}): tlsv1 alert unknown ca" in line
    assert "cannot reach" not in line and "ReadError" not in line and "certificate-authority" not in line, line
    assert not (d / "rec").exists()


def test_a_trusted_client_certificate_gets_past_the_handshake(mtls: tuple[_MutualTLSServer, Path, trustme.CA]) -> None:
    """The control: the same server takes a certificate from its client CA; it has no nodes API, and a
    cluster the recorder cannot use is exit 1, not bad input."""
    server, d, client_ca = mtls
    cert = client_ca.issue_cert("evictlens-recorder")
    cert.cert_chain_pems[0].write_to_path(str(d / "client.pem"))
    cert.private_key_pem.write_to_path(str(d / "client-key.pem"))
    kc = _kubeconfig(server, d, {"client-certificate": str(d / "client.pem"), "client-key": str(d / "client-key.pem")})
    res = run_record(["--kubeconfig", str(kc), "-o", str(d / "rec"), "--interval", "1s", "--duration", "1s"])
    (line,) = res.stderr.strip().splitlines()
    assert "cannot list nodes: HTTP 404 for GET /api/v1/nodes" in line and res.returncode == 1, res.stderr


def test_a_server_that_requires_a_certificate_says_so_when_the_user_has_none(
    mtls: tuple[_MutualTLSServer, Path, trustme.CA],
) -> None:
    server, d, _client_ca = mtls
    if server.ctx.maximum_version != ssl.TLSVersion.TLSv1_3:
        pytest.skip("Python's TLS 1.2 server answers a missing certificate with a generic handshake_failure alert")
    kc = _kubeconfig(server, d, {"token": "t0ken"})
    res = run_record(["--kubeconfig", str(kc), "-o", str(d / "rec"), "--interval", "1s", "--duration", "1s"])
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "the API server requires a client certificate (tlsv13 alert certificate required)" in line, line
    with contextlib.suppress(FileNotFoundError):
        assert not any((d / "rec").iterdir())


def test_a_kubelet_that_refuses_the_client_certificate_names_it_in_the_gap(
    mtls: tuple[_MutualTLSServer, Path, trustme.CA],
) -> None:
    """--kubelet-direct: the server here plays a kubelet whose client CA did not issue our certificate.

    Under TLS 1.2 only: under TLS 1.3 a poll's alert is lost in the reset (a ``ReadError`` gap), and
    only the API server, once at start, gets the probe handshake that reads it.
    """
    import asyncio

    from recordings.recorder.client import KubeClient
    from recordings.recorder.poller import NodeTarget, poll_nodes

    server, d, _client_ca = mtls
    if server.ctx.maximum_version != ssl.TLSVersion.TLSv1_2:
        pytest.skip("under TLS 1.3 a kubelet's alert is lost in the connection reset")
    kc = _kubeconfig(server, d, _stranger_cert(d))
    # timeout: a handshake with a thread server on a loaded box; the alert ends it anyway
    opts = record_options(output=str(d / "rec"), kubeconfig=str(kc), kubelet_direct=True, concurrency=4, timeout=60.0)
    node = NodeTarget("node-a", "127.0.0.1", server.server_address[1])

    async def poll() -> str | None:
        client = KubeClient.build(opts)
        try:
            (res,) = await poll_nodes(client, [node], "stats/summary", concurrency=1, deadline=1e18)
        finally:
            await client.close()
        return res.error

    error = asyncio.run(poll())
    assert error == (
        f"the kubelet refused the client certificate (client-certificate {d / 'stranger.pem'}): tlsv1 alert unknown "
        "ca; the certificate must be issued by the cluster's client CA and be valid now (check client-certificate "
        "and client-key)"
    )
