"""Issue 28 items 2 and 8: `import --prometheus` reads, allocates and asks for a bounded amount. A body past
MAX_BODY_BYTES, a 2 GB token file, a step under 1 s, a range of too many ticks, absurd concurrency or retries,
and answers that are not the Prometheus API's shape are one line, exit 2, nothing written — the body case under
a memory limit."""

from __future__ import annotations

import http.server
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from recordings.prometheus import client as promclient
from recordings.prometheus.client import ClientOptions, PrometheusClient, PrometheusError

EVICTLENS = [sys.executable, "-m", "replay.cli"]


class _Endless(http.server.BaseHTTPRequestHandler):
    """Answers every query with ``body`` (bytes), or, when ``endless``, a chunked body of zeros without end."""

    body: ClassVar[bytes] = b""
    endless: ClassVar[bool] = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if not self.endless:
            self.send_header("Content-Length", str(len(self.body)))
            self.end_headers()
            self.wfile.write(self.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b" " * (1 << 20)
        try:
            while True:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except (BrokenPipeError, ConnectionResetError):
            return

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Endless]]]:
    handler = type("E", (_Endless,), {"body": b"", "endless": False})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", handler
    finally:
        srv.shutdown()
        srv.server_close()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


def _import(url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*EVICTLENS, "import", "--prometheus", url, "--from", "1700000000", "--to", "1700000600", "--retries", "0",
         "-o", str(out), *extra],
        capture_output=True, text=True, timeout=600, check=False, preexec_fn=_limit_memory,
    )  # fmt: skip


def _one_line(done: subprocess.CompletedProcess[str], out: Path, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], done.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert not out.exists()


def test_an_answer_without_end_stops_at_the_bound(server: tuple[str, type[_Endless]], tmp_path: Path) -> None:
    url, handler = server
    handler.endless = True
    _one_line(_import(url, tmp_path / "imp"), tmp_path / "imp", f"larger than {promclient.MAX_BODY_BYTES >> 20} MiB")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--step", "1ns"], "--step"),
        (["--step", "500ms"], "--step"),
        (["--concurrency", "99999999"], "--concurrency"),
        (["--retries", "1000"], "--retries"),
        (["--to", "99999999999999"], "--step"),
        (["--bearer-token-file", "SPARSE"], "--bearer-token-file"),
    ],
)
def test_a_flag_that_would_ask_for_too_much_is_one_line(
    server: tuple[str, type[_Endless]], tmp_path: Path, flags: list[str], named: str
) -> None:
    url, _handler = server
    sparse = tmp_path / "token"
    with sparse.open("wb") as fh:
        fh.truncate(2 << 30)
    argv = [str(sparse) if f == "SPARSE" else f for f in flags]
    _one_line(_import(url, tmp_path / "imp", *argv), tmp_path / "imp", named)


@pytest.mark.parametrize(
    "body",
    [
        b'{"status":"success","data":{"resultType":"vector","result":[7]}}',
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["abc","1"]}]}}',
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}',
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000]]}]}}',
        b'{"status":"success","data":"nope"}',
    ],
    ids=["item-not-object", "time-abc", "vector-without-value", "short-pair", "data-not-object"],
)
def test_an_answer_not_of_the_apis_shape_is_a_prometheus_error(server: tuple[str, type[_Endless]], body: bytes) -> None:
    url, handler = server
    handler.body = body
    with PrometheusClient(ClientOptions(url=url, retries=0)) as client, pytest.raises(PrometheusError):
        client.query("up", 1700000000)
        client.query_range("up", 1700000000, 1700000060, 10)
