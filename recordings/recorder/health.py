"""``record --listen ADDR``: ``/healthz``, ``/readyz`` and ``/metrics`` on a thread of their own.

The server runs on a daemon thread (the standard library's threading HTTP server), so a slow
scrape or a walk of a large recording directory never holds up the asyncio tick loop; it only
reads :class:`~.metrics.RecorderMetrics`.  ``/metrics`` is rendered by the official client
(``prometheus_client.exposition.choose_encoder``: the text format, or OpenMetrics when the
scraper asks for it).  The socket is bound before anything touches the disk, so a port in use
is one line and exit 2 with nothing created.

``/healthz`` (liveness): 200 while the event loop runs and ticks keep ending; 503 with the
reason once either stalls for ``stale_after`` seconds.  ``/readyz`` (readiness): 200 after
the first committed tick, 503 before it and once the writer stopped or failed.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client.exposition import choose_encoder

from kube.errors import RecordingError

from .metrics import RecorderMetrics


def parse_listen(addr: str) -> tuple[str, int]:
    """``:9090`` (every interface), ``127.0.0.1:0`` (a free port), ``[::1]:9090``."""
    host, sep, port_text = addr.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise RecordingError(
            f"expected HOST:PORT or :PORT, e.g. :9090 or 127.0.0.1:9090, got {addr!r}", source="--listen"
        )
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], family: int, state: _State) -> None:
        self.address_family = family
        self.state = state
        super().__init__(address, _Handler, bind_and_activate=False)

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:
            with contextlib.suppress(OSError):  # ":PORT" serves IPv4 too where the kernel allows it
                self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _State:
    def __init__(self, metrics: RecorderMetrics, stale_after: float) -> None:
        self.metrics = metrics
        self.stale_after = stale_after


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        state = self.server.state
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            ok, why = state.metrics.health(stale_after=state.stale_after)
            self._send(200 if ok else 503, f"{why}\n".encode(), "text/plain; charset=utf-8")
        elif path == "/readyz":
            ok, why = state.metrics.readiness()
            self._send(200 if ok else 503, f"{why}\n".encode(), "text/plain; charset=utf-8")
        elif path == "/metrics":
            encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
            self._send(200, encoder(state.metrics.registry), content_type)
        else:
            self._send(404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # no access log on the recorder's stderr
        return


class HealthServer:
    """The listening server; :meth:`start` binds at once (errors are the flag's), :meth:`close` stops it."""

    def __init__(self, server: _Server) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="evictlens-listen", daemon=True)

    @classmethod
    def start(cls, addr: str, metrics: RecorderMetrics, *, stale_after: float) -> HealthServer:
        host, port = parse_listen(addr)
        family = socket.AF_INET6 if ":" in host or (not host and socket.has_ipv6) else socket.AF_INET
        state = _State(metrics, stale_after)
        try:
            server = _bind(host or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port, family, state)
        except OSError as exc:
            if host or family == socket.AF_INET or exc.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
                raise RecordingError(f"cannot listen on {addr}: {exc.strerror or exc}", source="--listen") from None
            try:  # no IPv6 on this host: every IPv4 interface
                server = _bind("0.0.0.0", port, socket.AF_INET, state)
            except OSError as exc4:
                raise RecordingError(f"cannot listen on {addr}: {exc4.strerror or exc4}", source="--listen") from None
        out = cls(server)
        out._thread.start()
        return out

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def address(self) -> str:
        """Where it listens, as HOST:PORT (``[::]:9090`` for every interface)."""
        host = str(self._server.server_address[0])
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


def _bind(host: str, port: int, family: int, state: _State) -> _Server:
    server = _Server((host, port), family, state)
    try:
        server.server_bind()
        server.server_activate()
    except OSError:
        server.server_close()
        raise
    return server
