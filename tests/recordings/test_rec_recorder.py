"""The real ``evictlens record`` process against the fake HTTPS/HTTP2 API server, with faults."""

from __future__ import annotations

import os
import random
import resource
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest
from apiserver.cluster import SECRET
from rec_support import (
    FakeServer,
    StderrLines,
    assert_no_secret,
    child_env,
    committed_ticks,
    journal_frames,
    kill_quietly,
    plugin_runs,
    run_record,
    start_record,
    tick_rows,
    wait_for,
    write_kubeconfig,
)

from recordings.reader import open_recording

# A tick's polls must end within 0.9 of its interval: 1 s keeps a loaded CI machine gap-free.
FAST = ["--interval", "1s", "--timeout", "2s"]


def _args(server: FakeServer, out: Path, *extra: str, context: str = "static") -> list[str]:
    return ["--kubeconfig", server.kubeconfig, "--context", context, "-o", str(out), *FAST, *extra]


def _gaps(out: Path) -> pl.DataFrame:
    return open_recording(out).scan_ticks().filter(~pl.col("ok")).collect()


def test_records_all_nodes_pods_nodes_configz_and_keeps_no_secrets(server: FakeServer, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    res = run_record(_args(server, out, "--duration", "2.5s", "--keep-raw"))
    assert res.returncode == 0, res.stderr
    assert "finished: " in res.stderr and "ms/tick" in res.stderr and "peak rss" in res.stderr
    rec = open_recording(out)
    assert rec.manifest.finalized and rec.manifest.server_version == "v1.28.3-fake"
    assert rec.nodes() == ["node-000", "node-001", "node-002"]
    ticks = rec.ticks("node-001")
    assert len(ticks) >= 3 and all(t.ok for t in ticks)
    summary = rec.summary_at("node-001", ticks[-1].index)
    assert summary is not None and len(summary["pods"]) == 4
    pods = rec.pods_at("node-001", ticks[-1].time)
    assert {p["metadata"]["uid"] for p in pods} == {p["podRef"]["uid"] for p in summary["pods"]}
    assert rec.node_object_at("node-001")["status"]["nodeInfo"]["kubeletVersion"] == "v1.28.3"
    assert rec.configz("node-002")["kubeletconfig"]["kind"] == "KubeletConfiguration"
    assert rec.manifest.kubelet_versions == {f"node-00{i}": "v1.28.3" for i in range(3)}
    raw = rec.scan("raw").collect()
    assert raw.height == 3 * len(ticks) and raw["body"][0].startswith('{"node"')
    assert_no_secret(out, SECRET)


def test_forbidden_stops_with_the_rbac_it_needs(server: FakeServer, tmp_path: Path) -> None:
    server.faults(forbidden=True)
    res = run_record(_args(server, tmp_path / "rec", "--duration", "2s"))
    assert res.returncode == 3
    (line,) = res.stderr.strip().splitlines()
    assert "forbidden (403) for GET /version" in line and "nodes/proxy" in line and "--print-rbac" in line


def test_wrong_token_stops_with_a_credential_hint_not_an_rbac_hint(server: FakeServer, tmp_path: Path) -> None:
    res = run_record(_args(server, tmp_path / "rec", "--duration", "2s", context="bad"))
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "unauthorized (401) for GET /version" in line and "rejected the credential" in line
    assert "ClusterRole" not in line and "nodes/proxy" not in line
    assert not (tmp_path / "rec").exists()


def test_wrong_ca_says_tls_verification_failed_with_the_reason(server: FakeServer, tmp_path: Path) -> None:
    import trustme

    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    kc = write_kubeconfig(
        server,
        tmp_path / "kubeconfig",
        user={"token": server.ready["token"]},
        cluster_changes={"certificate-authority": str(other_ca)},
    )
    res = run_record(["--kubeconfig", str(kc), "-o", str(tmp_path / "rec"), "--duration", "1s"])
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "TLS certificate verification failed: unable to get local issuer certificate" in line, line
    assert "ConnectError" not in line and "certificate-authority" in line
    assert not (tmp_path / "rec").exists()


def test_unknown_context_names_the_context_flag(server: FakeServer, tmp_path: Path) -> None:
    res = run_record(_args(server, tmp_path / "rec", "--duration", "1s", context="nope"))
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("evictlens record: --context: context 'nope' not found in ") and "static" in line
    assert "--kubeconfig" not in line


def test_forbidden_at_the_first_poll_leaves_nothing_behind_and_the_retry_works(
    server: FakeServer, tmp_path: Path
) -> None:
    """/version and the lists are allowed, the proxied summaries are not (no nodes/proxy):
    the recorder stops before any tick and leaves no recording to block the retry."""
    server.faults(forbidden_proxy=True)
    out = tmp_path / "rec"
    res = run_record(_args(server, out, "--duration", "2s"))
    assert res.returncode == 3, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "forbidden (403) for GET /api/v1/nodes/" in line and "nodes/proxy" in line
    assert not out.exists()
    server.faults(forbidden_proxy=False)
    res = run_record(_args(server, out, "--duration", "1s"))
    assert res.returncode == 0, res.stderr
    assert open_recording(out).manifest.finalized


def test_failing_nodes_become_gaps_while_others_continue(server: FakeServer, tmp_path: Path) -> None:
    server.faults(timeout_nodes=["node-000"], status_nodes={"node-001": 503})
    out = tmp_path / "rec"
    # node-000 never answers: the 2 s request timeout ends it inside the 2.7 s tick deadline, and node-002 has
    # those 2 s to answer even on a loaded box
    res = run_record(
        ["--kubeconfig", server.kubeconfig, "-o", str(out), "--interval", "3s", "--timeout", "2s", "--duration", "6s"]
    )
    assert res.returncode == 0, res.stderr
    rec = open_recording(out)
    assert all(t.ok for t in rec.ticks("node-002"))
    assert {t.error for t in rec.ticks("node-000")} == {"timeout for GET /api/v1/nodes/node-000/proxy/stats/summary"}
    assert {t.error for t in rec.ticks("node-001")} == {"HTTP 503 for GET /api/v1/nodes/node-001/proxy/stats/summary"}
    assert rec.summary_at("node-001", 0) is None
    assert f"gaps {2 * len(rec.ticks('node-002'))}" in res.stderr


def test_429_and_503_with_retry_after_are_retried_after_the_wait(server: FakeServer, tmp_path: Path) -> None:
    server.faults(proxy_429=2, api_503=1, retry_after="0.5")
    out = tmp_path / "rec"
    started = time.monotonic()
    # two ticks, each with 3.6 s for two 0.5 s Retry-After waits and the retries: no gap even on a loaded box
    res = run_record(["--kubeconfig", server.kubeconfig, "-o", str(out), "--interval", "4s", "--duration", "5s"])
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - started > 1.0
    assert _gaps(out).height == 0
    stats = server.stats()
    assert stats["proxy_429"] >= 2 and stats["api_503"] >= 1


def test_connection_reset_costs_one_gap_then_recording_continues(server: FakeServer, tmp_path: Path) -> None:
    server.faults(reset=1)
    out = tmp_path / "rec"
    # 3 s ticks with a 2.5 s deadline: a loaded box still completes a TLS handshake in time after the reset
    res = run_record(_args(server, out, "--interval", "3s", "--timeout", "2.5s", "--duration", "9s"))
    assert res.returncode == 0, res.stderr
    gaps = _gaps(out)
    assert gaps.filter(pl.col("tick") == 0).height == 1  # the node whose response was cut off
    ticks = open_recording(out).ticks()
    assert len(ticks) >= 3 and any(t.ok for t in ticks[1:])  # the recording went on after the reset


def test_watch_410_gone_relists_and_keeps_objects(server: FakeServer, tmp_path: Path) -> None:
    server.faults(watch_410=4, watch_410_resource="pods", mutate_every=0.1)
    before = server.stats()
    out = tmp_path / "rec"
    res = run_record(_args(server, out, "--duration", "2s"))
    assert res.returncode == 0, res.stderr
    after = server.stats()
    assert after["watch_410"] - before.get("watch_410", 0) == 4
    assert after["list_pods"] - before.get("list_pods", 0) >= 2
    rec = open_recording(out)
    assert len(rec.pods_at("node-000")) == 4


def test_expired_tokens_rerun_the_exec_plugin(server: FakeServer, tmp_path: Path) -> None:
    """Tokens the server refuses after 1 s (401): the recorder re-runs the plugin and goes on."""
    server.faults(token_ttl=1.0)
    log = server.dir / "plugin.log"
    log.unlink(missing_ok=True)
    out = tmp_path / "rec"
    proc = start_record(_args(server, out, context="exec"))
    try:
        wait_for(lambda: len(plugin_runs(log)) >= 2 and committed_ticks(out) >= 4, what="a re-run and 4 ticks")
        proc.send_signal(signal.SIGTERM)
        _o, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    assert server.stats().get("expired_tokens", 0) >= 1, "an expired token was refused"
    assert len(open_recording(out).ticks()) >= 4


def _evictions_in_journal(out: Path) -> int:
    return sum(len(f.get("tables", {}).get("evictions", {}).get("node", [])) for f in journal_frames(out))


def test_evictions_are_kept_as_ground_truth(server: FakeServer, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    proc = start_record(_args(server, out))
    try:
        wait_for(lambda: committed_ticks(out) >= 1, what="first tick")
        server.control("evict", {"node": "node-002"})
        wait_for(lambda: _evictions_in_journal(out) >= 2, what="eviction (pod and event) recorded")
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    ev = open_recording(out).evictions()
    assert {e["source"] for e in ev} == {"event", "pod"}
    assert all(e["node"] == "node-002" and e["message"].startswith("The node was low on resource") for e in ev)


def test_kubelet_direct_polls_port_10250_paths_and_kubelet_pods(server: FakeServer, tmp_path: Path) -> None:
    before = server.stats()
    out = tmp_path / "rec"
    res = run_record(_args(server, out, "--duration", "1.5s", "--kubelet-direct"))
    assert res.returncode == 0, res.stderr
    after = server.stats()
    assert after["kubelet_stats/summary"] > before.get("kubelet_stats/summary", 0)
    assert after["kubelet_pods"] > before.get("kubelet_pods", 0)
    assert after.get("list_pods", 0) == before.get("list_pods", 0)  # no cluster-wide pod access needed
    rec = open_recording(out)
    assert all(t.ok for t in rec.ticks()) and len(rec.pods_at("node-001")) == 4
    assert rec.manifest.options["kubelet_direct"] is True


def test_kubelet_restart_refetches_configz(server: FakeServer, tmp_path: Path) -> None:
    before = server.stats().get("configz_node-000", 0)
    out = tmp_path / "rec"
    proc = start_record(_args(server, out))
    try:
        wait_for(lambda: committed_ticks(out) >= 1, what="first tick")
        assert server.stats()["configz_node-000"] - before == 1
        server.control("kubelet_restart", {"node": "node-000"})
        wait_for(lambda: server.stats()["configz_node-000"] - before >= 2, what="configz fetched again")
        tick = committed_ticks(out)
        wait_for(lambda: committed_ticks(out) >= tick + 2, what="two more ticks")
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    assert server.stats()["configz_node-000"] - before == 2, "fetched once per kubelet start, not per tick"


def test_node_selector_limits_the_nodes_over_http1(server: FakeServer, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    res = run_record(_args(server, out, "--duration", "1s", "--nodes", "pool=a", "--http1"))
    assert res.returncode == 0, res.stderr
    assert open_recording(out).nodes() == ["node-000", "node-002"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signals_flush_and_finalize(server: FakeServer, tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "rec"
    proc = start_record(_args(server, out))
    try:
        wait_for(lambda: committed_ticks(out) >= 1, what="first tick")
        proc.send_signal(sig)
        _o, err = proc.communicate(timeout=60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err
    rec = open_recording(out)
    assert rec.manifest.finalized and len(rec.ticks()) >= 1 and not list((out / "journal").iterdir())


def test_disk_full_stops_cleanly_and_keeps_every_finished_tick(server: FakeServer, tmp_path: Path) -> None:
    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    out = tmp_path / "rec"
    res = run_record(_args(server, out, "--duration", "20s"), preexec_fn=limit_file_size)
    assert res.returncode == 1
    assert "disk full; the recording is valid up to the previous tick" in res.stderr
    rec = open_recording(out)
    ticks = rec.ticks()
    assert len(ticks) >= 2
    per_tick = rec.scan_node_stats().group_by("tick").len().collect()
    assert set(per_tick["len"]) == {3}  # every kept tick is complete


def test_sigkill_at_random_moments_leaves_a_readable_recording(server: FakeServer, tmp_path: Path) -> None:
    """Five kills at random points, folding every 2 ticks so kills land mid-fold too; after
    each kill the recording reads back with only whole ticks (one row per node in ``ticks``,
    a summary for each node that answered), and --append continues it.

    Each kill waits for the process's first committed tick (its status line says ``ticks 1``
    once the frame is durable), then a random further moment picks where the kill lands —
    the randomness is the point of the test; nothing waits for the clock to make progress.
    """
    rng = random.Random(20261122)
    out = tmp_path / "rec"
    env_fold = {"EVICTLENS_FOLD_EVERY_TICKS": "2"}
    seen = 0
    for kill in range(5):
        extra = ["--append"] if kill else []
        proc = start_record(_args(server, out, "--interval", "0.5s", *extra), env=env_fold)
        try:
            status = StderrLines(proc)
            wait_for(lambda s=status, p=proc: s.has(" ticks 1 ") or p.poll() is not None, what=f"kill {kill}")
            assert proc.poll() is None, status.text()
            time.sleep(rng.random() * 1.2)  # a random kill moment, not a wait for progress
        finally:
            kill_quietly(proc)
        rec = open_recording(out)
        marks = rec.scan_ticks().collect()
        ticks = sorted(set(marks["tick"].to_list()))
        assert len(ticks) > seen, f"kill {kill}: no new ticks"
        seen = len(ticks)
        assert ticks == list(range(len(ticks)))  # no tick lost or duplicated
        assert set(marks.group_by("tick").len()["len"]) == {3}  # every node marked, ok or gap
        answered = marks.filter(pl.col("ok")).group_by("tick").len().sort("tick")
        stored = rec.scan_node_stats().collect().group_by("tick").len().sort("tick")
        assert stored.rows() == answered.rows()  # a whole summary for each node that answered
        for tick, node in marks.filter(pl.col("ok")).select("tick", "node").rows()[:: max(1, marks.height // 4)]:
            summary = rec.summary_at(node, tick)
            assert summary is not None and len(summary["pods"]) == 4
    res = run_record(_args(server, out, "--duration", "0.5s", "--append"))
    assert res.returncode == 0, res.stderr
    assert open_recording(out).manifest.finalized


def test_print_rbac_shows_both_cluster_roles() -> None:
    res = subprocess.run([*_cli(), "record", "--print-rbac"], capture_output=True, text=True, env=_env(), check=False)
    assert res.returncode == 0
    assert "evictlens-recorder-proxy" in res.stdout and '"nodes/proxy"' in res.stdout
    assert '"nodes/stats", "nodes/pods", "nodes/configz"' in res.stdout


def test_print_rbac_says_direct_path_needs_fine_grained_kubelet_authz_and_what_to_grant_before() -> None:
    import yaml

    res = subprocess.run([*_cli(), "record", "--print-rbac"], capture_output=True, text=True, env=_env(), check=False)
    assert res.returncode == 0
    assert "KubeletFineGrainedAuthz" in res.stdout and "1.33" in res.stdout
    roles = {d["metadata"]["name"]: d for d in yaml.safe_load_all(res.stdout)}
    assert set(roles) == {
        "evictlens-recorder-proxy",
        "evictlens-recorder-kubelet",
        "evictlens-recorder-kubelet-pre-1-33",
    }
    before = {r for rule in roles["evictlens-recorder-kubelet-pre-1-33"]["rules"] for r in rule.get("resources", [])}
    assert {"nodes/stats", "nodes/proxy"} <= before and "nodes/pods" not in before


def _env() -> dict[str, str]:

    return child_env()


def _cli() -> list[str]:
    import sys

    return [sys.executable, "-m", "recordings.cli"]


def test_api_server_restart_reconnects_and_continues(tmp_path: Path) -> None:
    srv = FakeServer(tmp_path / "srv", nodes=2, pods=2, kubelet_ports=False)
    srv.start()
    port = int(srv.ready["port"])
    out = tmp_path / "rec"
    proc = start_record(["--kubeconfig", srv.kubeconfig, "-o", str(out), "--interval", "0.3s", "--timeout", "0.5s"])
    try:
        wait_for(lambda: committed_ticks(out) >= 2, what="two ticks")
        srv.stop()
        wait_for(lambda: any(not ok for _t, _n, ok in tick_rows(out)), what="a gap during the outage")
        srv.start(port=port)
        last_gap = max(t for t, _n, ok in tick_rows(out) if not ok)

        def resumed() -> bool:
            after = [ok for t, _n, ok in tick_rows(out) if t > last_gap]
            return len(after) >= 4 and all(after)  # two whole ticks of both nodes

        wait_for(resumed, what="two good ticks after the restart")
        proc.send_signal(signal.SIGTERM)
        _o, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    finally:
        kill_quietly(proc)
        srv.stop()
    ticks = open_recording(out).ticks()
    assert any(not t.ok for t in ticks), "the outage should show as gaps"
    assert ticks[-1].ok and ticks[-2].ok, "recording resumed after the restart"
    assert os.path.exists(out / "manifest.json")
