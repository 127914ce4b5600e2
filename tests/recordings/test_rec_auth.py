"""Authentication paths the recorder takes through lightkube: client certificates and the
in-cluster service account, against the fake API server's mutual-TLS listener."""

from __future__ import annotations

import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from rec_support import FakeServer, child_env, committed_ticks, kill_quietly, run_record, start_record, wait_for

from recordings.reader import open_recording

FAST = ["--interval", "1s", "--timeout", "2s", "--duration", "1.5s"]  # polls may take 0.9 s: no gaps under load


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    server = FakeServer(tmp_path_factory.mktemp("mtls"), nodes=2, pods=3, kubelet_ports=False, extra=["--client-certs"])
    server.start()
    yield server
    server.stop()


def _cert_requests(server: FakeServer) -> int:
    return server.stats().get("client_cert_requests", 0)


@pytest.mark.parametrize("context", ["cert", "cert-files"], ids=["certificate-data", "certificate-files"])
def test_client_certificate_from_kubeconfig_authenticates_over_mutual_tls(
    mtls_server: FakeServer, tmp_path: Path, context: str
) -> None:
    before = _cert_requests(mtls_server)
    out = tmp_path / "rec"
    res = run_record(["--kubeconfig", mtls_server.kubeconfig, "--context", context, "-o", str(out), *FAST])
    assert res.returncode == 0, res.stderr
    rec = open_recording(out)
    assert rec.nodes() == ["node-000", "node-001"] and all(t.ok for t in rec.ticks())
    assert len(rec.pods_at("node-001")) == 3
    stats = mtls_server.stats()
    assert stats["client_cert_requests"] - before >= 6  # version, lists, watches, polls: all on the cert alone
    assert stats.get("client_cert_requests_with_token", 0) == 0


def test_client_certificate_from_another_ca_is_refused_in_one_line(mtls_server: FakeServer, tmp_path: Path) -> None:
    """The line names the client certificate (not "cannot reach", not the cluster CA); exit 3, credentials."""
    res = run_record(
        ["--kubeconfig", mtls_server.kubeconfig, "--context", "cert-untrusted", "-o", str(tmp_path / "r"), *FAST]
    )
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("evictlens record: ") and "Traceback" not in line
    assert "refused the client certificate (client-certificate " in line and "untrusted-client.pem" in line, line
    assert "cannot reach" not in line and "certificate-authority" not in line


def _service_account(server: FakeServer, root: Path) -> Path:
    sa = root / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(server.ready["token"] + "\n")
    (sa / "namespace").write_text("evictlens")
    shutil.copy(server.ready["ca"], sa / "ca.crt")
    return sa


def _in_cluster_env(server: FakeServer, sa: Path, tmp_path: Path) -> dict[str, str]:
    env = child_env()
    env.update(
        KUBECONFIG=str(tmp_path / "no-kubeconfig"),  # lightkube's fallbacks lead nowhere
        HOME=str(tmp_path / "home"),
        KUBERNETES_SERVICE_HOST="127.0.0.1",
        KUBERNETES_SERVICE_PORT=str(server.ready["port"]),
        EVICTLENS_SERVICE_ACCOUNT_DIR=str(sa),
    )
    return env


def test_in_cluster_service_account_is_used_without_a_kubeconfig(mtls_server: FakeServer, tmp_path: Path) -> None:
    """KUBERNETES_SERVICE_HOST/PORT plus token, namespace and ca.crt, as a pod has them; the
    directory comes from EVICTLENS_SERVICE_ACCOUNT_DIR (lightkube's ``service_account``
    parameter) because the real one, /var/run/secrets/kubernetes.io/serviceaccount, is root's."""
    sa = _service_account(mtls_server, tmp_path)
    env = _in_cluster_env(mtls_server, sa, tmp_path)
    before = mtls_server.stats()
    out = tmp_path / "rec"
    res = run_record(["-o", str(out), *FAST], env=env)
    assert res.returncode == 0, res.stderr
    rec = open_recording(out)
    assert rec.nodes() == ["node-000", "node-001"] and all(t.ok for t in rec.ticks())
    after = mtls_server.stats()
    assert after["requests"] - before.get("requests", 0) >= 6
    assert after.get("auth_401", 0) == before.get("auth_401", 0), "the token from the file was accepted"


def test_in_cluster_token_file_is_reread_when_the_token_rotates(mtls_server: FakeServer, tmp_path: Path) -> None:
    """The kubelet rotates projected tokens: once the old one gets 401, lightkube re-reads the
    file and the recording goes on without a gap."""
    sa = _service_account(mtls_server, tmp_path)
    old, new = mtls_server.ready["token"], "rotated-" + mtls_server.ready["token"]
    out = tmp_path / "rec"
    proc = start_record(
        ["-o", str(out), "--interval", "0.5s", "--timeout", "2s"], env=_in_cluster_env(mtls_server, sa, tmp_path)
    )
    try:
        wait_for(lambda: committed_ticks(out) >= 1, what="first tick")
        before = mtls_server.stats().get("auth_401", 0)
        (sa / "token").write_text(new)
        mtls_server.control("token", {"token": new})
        wait_for(lambda: mtls_server.stats().get("auth_401", 0) > before, what="the old token refused")
        wait_for(lambda: committed_ticks(out) >= 5, what="five ticks")
        proc.send_signal(signal.SIGTERM)
        _o, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
        mtls_server.control("token", {"token": old})
    assert proc.returncode == 0, err
    assert mtls_server.stats().get("auth_401", 0) > before, "the old token must have been refused at least once"
    ticks = open_recording(out).ticks()
    assert len(ticks) >= 5 and all(t.ok for t in ticks)
