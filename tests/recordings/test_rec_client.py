"""The recorder's HTTP client and tick loop in-process, over ``httpx2.MockTransport``: retries,
error classification, deadlines and the tick schedule in milliseconds, with no server.

The same behaviours have a few end-to-end tests against the real HTTPS server in
test_rec_recorder.py; here every branch gets its own fast, deterministic test.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest
import yaml
from apiserver.cluster import SyntheticCluster
from rec_support import record_options

from kube.errors import RecordingError
from recordings.reader import open_recording
from recordings.recorder.client import AuthFailure, KubeClient, RequestFailed, load_config
from recordings.recorder.main import Recorder
from recordings.recorder.options import RecordOptions

Handler = Callable[[httpx2.Request], Awaitable[httpx2.Response]]
SERVER = "https://cluster.test"


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "main",
        "clusters": [{"name": "c", "cluster": {"server": SERVER}}],
        "users": [{"name": "u", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    return path


def _opts(kubeconfig: Path, **kw: Any) -> RecordOptions:
    return record_options(
        **({"output": str(kubeconfig.parent / "rec"), "kubeconfig": str(kubeconfig), "interval": 0.2} | kw)
    )


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, content=orjson.dumps(body), headers=headers or {})


def _get(kubeconfig: Path, handler: Handler, url: str = "/version", request_timeout: float = 5.0, **kw: Any) -> Any:
    async def go() -> Any:
        client = KubeClient.build(_opts(kubeconfig, timeout=request_timeout), httpx2.MockTransport(handler))
        try:
            return await client.get_json(url, **kw)
        finally:
            await client.close()

    return asyncio.run(go())


def _sequence(*responses: Callable[[], httpx2.Response]) -> tuple[Handler, list[str]]:
    """A handler answering with ``responses`` in turn (the last one repeats); logs the paths."""
    seen: list[str] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.url.path)
        return responses[min(len(seen), len(responses)) - 1]()

    return handler, seen


# -- retries --------------------------------------------------------------------------------
def test_429_is_retried_after_its_retry_after(kubeconfig: Path) -> None:
    handler, seen = _sequence(lambda: _json(429, {}, {"retry-after": "0"}), lambda: _json(200, {"ok": 1}))
    assert _get(kubeconfig, handler) == {"ok": 1} and len(seen) == 2


def test_503_is_retried_only_with_retry_after(kubeconfig: Path) -> None:
    handler, seen = _sequence(lambda: _json(503, {}, {"retry-after": "0"}), lambda: _json(200, {"ok": 1}))
    assert _get(kubeconfig, handler) == {"ok": 1} and len(seen) == 2
    handler, seen = _sequence(lambda: _json(503, {}))
    with pytest.raises(RequestFailed, match="HTTP 503 for GET /version"):
        _get(kubeconfig, handler)
    assert len(seen) == 1


def test_connection_failure_is_retried_once_then_names_the_reason(kubeconfig: Path) -> None:
    calls = 0

    async def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)

    with pytest.raises(RequestFailed) as err:
        _get(kubeconfig, handler)
    assert calls == 2
    assert str(err.value) == "ConnectError: [Errno 111] Connection refused for GET /version"


def test_a_hanging_request_ends_at_the_deadline_as_a_timeout(kubeconfig: Path) -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    started = time.monotonic()
    with pytest.raises(RequestFailed, match=r"^timeout for GET /version$"):
        _get(kubeconfig, handler, request_timeout=600.0, deadline=time.monotonic() + 0.2)
    # far apart, so a loaded machine cannot blur them: 0.2 s deadline, 600 s request timeout
    assert time.monotonic() - started < 120, "the deadline, not the 600 s request timeout"


def test_a_passed_deadline_fails_without_sending(kubeconfig: Path) -> None:
    handler, seen = _sequence(lambda: _json(200, {}))
    with pytest.raises(RequestFailed, match=r"^timeout for GET /version$"):
        _get(kubeconfig, handler, deadline=time.monotonic() - 1)
    assert seen == []


# -- classification -------------------------------------------------------------------------
def test_401_gets_a_credential_hint_not_an_rbac_hint(kubeconfig: Path) -> None:
    handler, _ = _sequence(lambda: _json(401, {"kind": "Status", "code": 401}))
    with pytest.raises(AuthFailure) as err:
        _get(kubeconfig, handler)
    text = err.value.one_line()
    assert text.startswith("unauthorized (401) for GET /version; the API server rejected the credential")
    assert "ClusterRole" not in text and "--print-rbac" not in text


def test_403_gets_the_rbac_hint(kubeconfig: Path) -> None:
    handler, _ = _sequence(lambda: _json(403, {"kind": "Status", "code": 403}))
    with pytest.raises(AuthFailure) as err:
        _get(kubeconfig, handler)
    assert "forbidden (403) for GET /version" in str(err.value) and "nodes/proxy" in str(err.value)
    assert "--print-rbac" in str(err.value)


def test_certificate_verification_failure_is_named_with_its_reason_and_not_retried(kubeconfig: Path) -> None:
    calls = 0

    async def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
        cause.verify_message = "self-signed certificate in certificate chain"
        raise httpx2.ConnectError(str(cause), request=request) from cause

    with pytest.raises(RequestFailed) as err:
        _get(kubeconfig, handler)
    assert err.value.tls and calls == 1
    assert str(err.value) == (
        "TLS certificate verification failed: self-signed certificate in certificate chain for GET /version"
    )


def test_unknown_context_names_the_context_flag(kubeconfig: Path) -> None:
    with pytest.raises(RecordingError) as err:
        load_config(_opts(kubeconfig, context="nope"))
    assert err.value.source == "--context"
    assert "context 'nope' not found" in err.value.one_line() and "contexts: main" in err.value.one_line()


def test_malformed_kubeconfig_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [\n  - a\n  b: c\n")
    with pytest.raises(RecordingError) as err:
        load_config(_opts(bad))
    assert err.value.source == str(bad) and "malformed kubeconfig: line" in err.value.one_line()


# -- the recorder over a mock cluster -------------------------------------------------------
class MockCluster:
    """Enough of the API server for the recorder with --no-watch: version, the node list, an
    idle node watch, and proxied summaries/configz; ``slow`` nodes never answer."""

    def __init__(self, nodes: int = 3, slow: set[str] | None = None, forbidden_proxy: bool = False) -> None:
        self.cluster = SyntheticCluster(nodes, 2)
        self.slow = slow or set()
        self.forbidden_proxy = forbidden_proxy
        self.summaries = 0

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path == "/version":
            return _json(200, {"gitVersion": "v1.33.0-mock"})
        if path == "/api/v1/nodes":
            if request.url.params.get("watch"):
                await asyncio.sleep(3600)  # an idle watch, cancelled when the recorder stops
            items = [self.cluster.node_object(n, 1) for n in self.cluster.names]
            return _json(200, {"kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": items})
        parts = path.strip("/").split("/")
        if parts[:3] == ["api", "v1", "nodes"] and parts[4:5] == ["proxy"]:
            if self.forbidden_proxy:
                return _json(403, {"kind": "Status", "code": 403})
            node, endpoint = parts[3], "/".join(parts[5:])
            if endpoint == "configz":
                return _json(200, self.cluster.configz_body)
            if node in self.slow:
                await asyncio.sleep(3600)
            self.summaries += 1
            return httpx2.Response(200, content=self.cluster.summary(node, time.time()))
        return _json(404, {"kind": "Status", "code": 404})


def _record(opts: RecordOptions, cluster: MockCluster) -> int:
    return asyncio.run(Recorder(opts, httpx2.MockTransport(cluster)).run())


def test_nodes_that_miss_the_tick_deadline_are_timeout_gaps_and_the_schedule_holds(kubeconfig: Path) -> None:
    """A node that never answers, with a request timeout far longer than the interval: each
    tick still ends within its interval, the node is a ``timeout`` gap in every tick, the
    other nodes are recorded, and the ticks keep their schedule."""
    opts = _opts(kubeconfig, interval=0.5, timeout=600.0, duration=2.0)
    started = time.monotonic()
    assert _record(opts, MockCluster(slow={"node-001"})) == 0
    assert time.monotonic() - started < 120, "ticks waited for the 600 s request timeout"
    rec = open_recording(Path(opts.output))
    slow, fine = rec.ticks("node-001"), rec.ticks("node-000")
    assert fine and all(t.ok for t in fine)
    assert len(slow) == len(fine)
    assert {t.error for t in slow} == {"timeout for GET /api/v1/nodes/node-001/proxy/stats/summary"}
    # Each of the four slots is a tick or counted late.  Quiet, all four are ticks; a starved CPU may make one
    # late (the schedule holding), never the slow node: waiting for it would take the 600 s.
    assert len(fine) <= 4 and len(fine) + rec.manifest.counts.get("late_ticks", 0) >= 4


def test_a_recorder_refused_at_its_first_poll_leaves_nothing_behind(kubeconfig: Path, capsys: Any) -> None:
    opts = _opts(kubeconfig, duration=1.0)
    assert _record(opts, MockCluster(forbidden_proxy=True)) == 3
    assert not Path(opts.output).exists()
    err = capsys.readouterr().err
    assert "forbidden (403) for GET /api/v1/nodes/" in err and "nodes/proxy" in err
    assert _record(opts, MockCluster()) == 0, "the retry is not blocked by a leftover recording"
    assert open_recording(Path(opts.output)).manifest.finalized


def test_a_failed_start_in_an_empty_directory_leaves_it_empty(kubeconfig: Path) -> None:
    opts = _opts(kubeconfig, duration=1.0)
    Path(opts.output).mkdir()
    assert _record(opts, MockCluster(forbidden_proxy=True)) == 3
    assert Path(opts.output).is_dir() and not any(Path(opts.output).iterdir())


def test_a_failed_append_leaves_the_recording_as_it_was(kubeconfig: Path) -> None:
    opts = _opts(kubeconfig, duration=0.5)
    assert _record(opts, MockCluster()) == 0
    root = Path(opts.output)
    files = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert _record(_opts(kubeconfig, duration=0.5, append=True), MockCluster(forbidden_proxy=True)) == 3
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == files
    assert open_recording(root).manifest.finalized
