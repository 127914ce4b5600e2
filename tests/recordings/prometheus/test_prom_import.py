"""Scenario → OpenMetrics → promtool → a real Prometheus on loopback → import --prometheus → replay.

The imported recording must predict the same evictions (same pods, same order, same messages) as the
scenario's own recording, say what Prometheus could not give, and fail bad input in one line, exit 2,
leaving nothing behind.
"""

from __future__ import annotations

import contextlib
import http.server
import itertools
import re
import signal
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import orjson
import pytest
from prom_support import (
    MISSING,
    PROMETHEUS,
    PROMTOOL,
    Loaded,
    load_scenario,
    run_evictlens_here,
)

from recordings.prometheus.client import ClientOptions, PrometheusClient, PrometheusError, split_range
from recordings.reader import open_recording

EVICTLENS = [sys.executable, "-m", "replay.cli"]
needs_server = pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)


@pytest.fixture(scope="module")
def memory_case(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(MISSING)
    yield from load_scenario("sidecar-stress", tmp_path_factory.mktemp("prom-memory"))


@pytest.fixture(scope="module")
def disk_case(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(MISSING)
    yield from load_scenario("disk-pressure", tmp_path_factory.mktemp("prom-disk"))


@pytest.fixture(scope="module")
def chart_case(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    """sidecar-stress as kube-prometheus-stack's default relabelling leaves it (no root/kubepods cgroup)."""
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(MISSING)
    yield from load_scenario("sidecar-stress", tmp_path_factory.mktemp("prom-chart"), chart_drops=True)


@pytest.fixture(scope="module")
def slow_scrape_case(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    """sidecar-stress scraped every 20 s: twice the kubelet's loop."""
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(MISSING)
    yield from load_scenario("sidecar-stress", tmp_path_factory.mktemp("prom-slow"), every=2)


@pytest.fixture(scope="module")
def slow_disk_case(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    """disk-pressure scraped every 20 s."""
    if PROMETHEUS is None or PROMTOOL is None:
        pytest.skip(MISSING)
    yield from load_scenario("disk-pressure", tmp_path_factory.mktemp("prom-slow-disk"), every=2)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_evictlens_here(*args)  # in this process, through the CLI edge (prom_support.py)


def _import(case: Loaded, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _run(
        "import",
        "--prometheus",
        case.url,
        "--from",
        f"{case.start}",
        "--to",
        f"{case.end}",
        "--lookback",
        "5s",
        "-o",
        str(out),
        *case.side,
        *extra,
    )


def _evictions(rec: Path) -> list[tuple[str, str, int, str]]:
    done = _run("replay", str(rec), "--json")
    assert done.returncode == 0, done.stderr
    return [(e["node"], e["pod"], e["tick"], e["message"]) for e in orjson.loads(done.stdout)["evictions"]]


@needs_server
@pytest.mark.parametrize("case_name", ["memory_case", "disk_case"])
def test_replay_of_the_import_predicts_the_scenarios_evictions(
    case_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    case: Loaded = request.getfixturevalue(case_name)
    done = _import(case, tmp_path / "imp")
    assert done.returncode == 0, done.stderr
    expected = _evictions(case.rec)
    assert expected, "the scenario evicts"
    assert _evictions(tmp_path / "imp") == expected


@needs_server
def test_manifest_names_the_source_and_the_missing_series(memory_case: Loaded, tmp_path: Path) -> None:
    done = _import(memory_case, tmp_path / "imp")
    assert done.returncode == 0, done.stderr
    manifest = orjson.loads((tmp_path / "imp" / "manifest.json").read_bytes())
    assert manifest["source"] == "prometheus"
    assert manifest["options"]["scrape_interval"] == "10s"
    assert any("process_count: no series" in n and "pid not decidable" in n for n in manifest["notes"])
    assert "note: pods[].process_stats.process_count" in done.stderr
    assert manifest["counts"]["evictions"] >= 1  # the real Evicted event from --events
    replayed = _run("replay", str(tmp_path / "imp"), "--json")  # the replay states what the source could not give
    notes = orjson.loads(replayed.stdout)["notes"]
    assert any(n.startswith("recording source (prometheus): ") and "pid not decidable" in n for n in notes)


@needs_server
def test_without_the_root_cgroup_memory_comes_from_node_exporter_and_says_so(
    chart_case: Loaded, tmp_path: Path
) -> None:
    done = _import(chart_case, tmp_path / "imp")
    assert done.returncode == 0, done.stderr
    assert _evictions(tmp_path / "imp") == _evictions(chart_case.rec)
    notes = orjson.loads((tmp_path / "imp" / "manifest.json").read_bytes())["notes"]
    assert any(n.startswith("node.memory.workingSetBytes from node-exporter MemTotal - MemFree") for n in notes)
    assert any(
        n.startswith('systemContainers["pods"].memory.workingSetBytes: no series for any node')
        and "allocatableMemory.available not decidable" in n
        for n in notes
    ), notes


@needs_server
def test_node_flag_restricts_the_import(disk_case: Loaded, tmp_path: Path) -> None:
    done = _import(disk_case, tmp_path / "imp", "--node", "shared-fs")
    assert done.returncode == 0, done.stderr
    assert open_recording(tmp_path / "imp").nodes() == ["shared-fs"]


def _fails_in_one_line(done: subprocess.CompletedProcess[str], out: Path, *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert not out.exists()


@needs_server
def test_unknown_node_is_one_line_naming_it(memory_case: Loaded, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    _fails_in_one_line(_import(memory_case, out, "--node", "no-such-node"), out, "node no-such-node")


@needs_server
def test_range_without_data_is_one_line(memory_case: Loaded, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _run("import", "--prometheus", memory_case.url, "--from", "1000000000", "--to", "1000000600", "-o", str(out))
    _fails_in_one_line(done, out, "no data between", "query")


@needs_server
def test_promql_error_from_the_server_names_the_query(memory_case: Loaded, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    _fails_in_one_line(_import(memory_case, out, "--selector", 'job=~"("'), out, "query", "bad_data")


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _run(
        "import",
        "--prometheus",
        "http://127.0.0.1:9",
        "--from",
        "1700000000",
        "--to",
        "1700000600",
        "--retries",
        "0",
        "-o",
        str(out),
    )
    _fails_in_one_line(done, out, "cannot reach http://127.0.0.1:9", "query")


class _Handler(http.server.BaseHTTPRequestHandler):
    statuses: ClassVar[list[int]] = []
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.seen.append(dict(self.headers.items()))
        status = self.statuses.pop(0) if self.statuses else 200
        body = b'{"status":"success","data":{"resultType":"vector","result":[]}}' if status == 200 else b"{}"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("H", (_Handler,), {"statuses": [], "seen": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", handler
    finally:
        srv.shutdown()
        srv.server_close()


def test_unauthorized_is_one_line_naming_the_query(fake: tuple[str, type[_Handler]], tmp_path: Path) -> None:
    url, handler = fake
    handler.statuses = [401]
    out = tmp_path / "imp"
    done = _run("import", "--prometheus", url, "--from", "1700000000", "--to", "1700000600", "-o", str(out))
    _fails_in_one_line(done, out, "HTTP 401 unauthorized", "query")


def test_client_retries_429_and_5xx_with_backoff(fake: tuple[str, type[_Handler]]) -> None:
    url, handler = fake
    handler.statuses = [429, 503, 502]
    slept: list[float] = []
    with PrometheusClient(ClientOptions(url=url, retries=3, backoff=1.0), sleep=slept.append) as client:
        assert client.query("up", 1700000000) == []
    assert len(slept) == 3 and slept[0] < slept[1] < slept[2]  # doubling, with jitter in [0.5, 1)


def test_client_gives_up_after_its_retries(fake: tuple[str, type[_Handler]]) -> None:
    url, handler = fake
    handler.statuses = [503, 503, 503]
    with (
        PrometheusClient(ClientOptions(url=url, retries=2, backoff=0.0), sleep=lambda _s: None) as client,
        pytest.raises(PrometheusError, match=r"query up: HTTP 503 .* \(after 3 attempts\)"),
    ):
        client.query("up", 1700000000)


def test_ranges_are_split_under_the_11000_points_limit() -> None:
    spans = split_range(0.0, 10.0 * 25_000, 10.0)
    assert all(round((b - a) / 10) + 1 <= 11_000 for a, b in spans)
    assert spans[0][0] == 0.0 and spans[-1][1] == 250_000.0
    assert all(b + 10.0 == a2 for (_a, b), (a2, _b) in itertools.pairwise(spans))


class _Blocking(http.server.BaseHTTPRequestHandler):
    """Answers the probes with one node, then holds every range query until released."""

    reached: ClassVar[threading.Event]
    release: ClassVar[threading.Event]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.endswith("/query_range"):
            self.reached.set()
            self.release.wait(60)
            body = b'{"status":"success","data":{"resultType":"matrix","result":[]}}'
        else:
            body = (
                b'{"status":"success","data":{"resultType":"vector","result":'
                b'[{"metric":{"node":"n1","instance":"n1"},"value":[1700000600,"1"]}]}}'
            )
        with contextlib.suppress(OSError):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def test_ctrl_c_during_the_import_leaves_nothing(tmp_path: Path) -> None:
    handler = type("B", (_Blocking,), {"reached": threading.Event(), "release": threading.Event()})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    out = tmp_path / "imp"
    proc = subprocess.Popen(
        [
            *EVICTLENS,
            "import",
            "--prometheus",
            f"http://127.0.0.1:{srv.server_address[1]}",
            "--from",
            "1700000000",
            "--to",
            "1700000600",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert handler.reached.wait(120), "the import never asked for a range"
        assert out.is_dir()  # the recording was being written
        proc.send_signal(signal.SIGINT)
        _stdout, stderr = proc.communicate(timeout=120)
    finally:
        handler.release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        srv.shutdown()
        srv.server_close()
    assert proc.returncode == 130, stderr
    assert stderr.strip().endswith("interrupted"), stderr
    assert not out.exists()


def test_credentials_and_headers_reach_the_server(fake: tuple[str, type[_Handler]], tmp_path: Path) -> None:
    url, handler = fake
    with PrometheusClient(ClientOptions(url=url, bearer_token="t0ken", headers={"X-Scope-OrgID": "tenant-1"})) as c:
        c.query("up", 1700000000)
    with PrometheusClient(ClientOptions(url=url, basic_auth=("alice", "pw"))) as c:
        c.query("up", 1700000000)
    assert handler.seen[0]["Authorization"] == "Bearer t0ken"
    assert handler.seen[0]["X-Scope-OrgID"] == "tenant-1"
    assert handler.seen[1]["Authorization"].startswith("Basic ")


@needs_server
def test_the_manifest_keeps_no_credentials(memory_case: Loaded, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    url = memory_case.url.replace("http://", "http://alice:pa55word@")
    done = _run(
        "import",
        "--prometheus",
        url,
        "--from",
        f"{memory_case.start}",
        "--to",
        f"{memory_case.end}",
        "--bearer-token-file",
        str(token),
        "--header",
        "X-Scope-OrgID: tenant-1",
        "-o",
        str(tmp_path / "imp"),
    )
    assert done.returncode == 0, done.stderr
    text = b"".join(f.read_bytes() for f in (tmp_path / "imp").rglob("*") if f.is_file())
    assert b"pa55word" not in text and b"s3cret-token" not in text and b"tenant-1" not in text
    assert "pa55word" not in done.stdout + done.stderr


def test_custom_ca_and_client_certificate(tmp_path: Path) -> None:
    """TLS like a Grafana data source: the server's CA from --ca-file, a client certificate it requires."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1")
    client_cert = ca.issue_cert("evictlens-client")
    ca_file, client_file = tmp_path / "ca.pem", tmp_path / "client.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    client_cert.private_key_and_cert_chain_pem.write_to_path(str(client_file))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(ctx)
    ca.configure_trust(ctx)
    ctx.verify_mode = ssl.CERT_REQUIRED
    handler = type("H", (_Handler,), {"statuses": [], "seen": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{srv.server_address[1]}"
    try:
        with PrometheusClient(
            ClientOptions(url=url, ca_file=str(ca_file), retries=0, client_cert=(str(client_file), str(client_file)))
        ) as c:
            assert c.query("up", 1700000000) == []
        with (
            PrometheusClient(ClientOptions(url=url, retries=0)) as c,
            pytest.raises(PrometheusError, match=r"query up: cannot reach https://127\.0\.0\.1:\d+ \(.*CERTIF"),
        ):
            c.query("up", 1700000000)
    finally:
        srv.shutdown()
        srv.server_close()


def test_an_unreadable_ca_file_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "imp"
    done = _run(
        "import",
        "--prometheus",
        "https://127.0.0.1:9",
        "--from",
        "1700000000",
        "--to",
        "1700000600",
        "--ca-file",
        str(tmp_path / "missing.pem"),
        "-o",
        str(out),
    )
    _fails_in_one_line(done, out, "cannot set up TLS")


_QUANTITY = re.compile(r"\b\d+(\.\d+)?([KMGTPE]i?|k|m)?\b")


@needs_server
def test_a_slower_scrape_finds_the_same_evictions_within_one_interval(slow_scrape_case: Loaded, tmp_path: Path) -> None:
    case = slow_scrape_case
    done = _run(
        "import",
        "--prometheus",
        case.url,
        "--from",
        f"{case.start}",
        "--to",
        f"{case.end}",
        "--lookback",
        "19s",
        "-o",
        str(tmp_path / "imp"),
        *case.side,
    )
    assert done.returncode == 0, done.stderr
    expected, got = _evictions(case.rec), _evictions(tmp_path / "imp")
    assert [(n, p) for n, p, _t, _m in got] == [(n, p) for n, p, _t, _m in expected]
    for (_n, _p, t_exp, m_exp), (_n2, _p2, t_got, m_got) in zip(expected, got, strict=True):
        assert 0 <= t_got - t_exp <= 2  # one 20 s scrape interval = two 10 s ticks, never early
        assert _QUANTITY.sub("Q", m_got) == _QUANTITY.sub("Q", m_exp)  # equal up to the sampled quantities
    notes = orjson.loads((tmp_path / "imp" / "manifest.json").read_bytes())["notes"]
    assert any(n.startswith("Prometheus scraped cAdvisor (") and " every 20s (median" in n for n in notes), notes


@needs_server
def test_a_repeated_scrape_is_not_fresh_stats(slow_disk_case: Loaded, tmp_path: Path) -> None:
    """Each Summary time is the scrape's, so a step that repeats a sample does not evict again (the
    manager ignores thresholds whose stats did not advance); pressure only an unscraped step saw is missed."""
    case = slow_disk_case
    done = _run(
        "import",
        "--prometheus",
        case.url,
        "--from",
        f"{case.start}",
        "--to",
        f"{case.end}",
        "--lookback",
        "19s",
        "-o",
        str(tmp_path / "imp"),
        *case.side,
    )
    assert done.returncode == 0, done.stderr
    expected = {(n, p): t for n, p, t, _m in _evictions(case.rec)}
    got = {(n, p): t for n, p, t, _m in _evictions(tmp_path / "imp")}
    assert got.keys() <= expected.keys()
    assert got[("shared-fs", "log-flood")] == expected[("shared-fs", "log-flood")]
    rec = open_recording(tmp_path / "imp")
    shared = rec.summary_at("shared-fs", 15)
    assert shared is not None
    assert shared["node"]["fs"]["time"] == shared["node"]["runtime"]["imageFs"]["time"]  # tick 14's scrape
    assert shared["node"]["runtime"]["imageFs"]["inodesFree"] == shared["node"]["fs"]["inodesFree"]


class _TooMany(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = (
            b'{"status":"error","errorType":"execution","error":"query processing would load too many samples '
            b'into memory in query execution"}'
        )
        self.send_response(422)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def test_the_servers_sample_limit_says_to_lower_the_window() -> None:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TooMany)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with (
            PrometheusClient(ClientOptions(url=f"http://127.0.0.1:{srv.server_address[1]}")) as c,
            pytest.raises(PrometheusError, match=r"query up: execution: .*too many samples.*; lower --window"),
        ):
            c.query("up", 1700000000)
    finally:
        srv.shutdown()
        srv.server_close()
