"""``evictlens watch`` on a live cluster (the fake API server in pressure mode): record's recorder in-process into
a private 0700 directory removed at exit, a node that stops answering reported stale (then fresh), a real
eviction arriving with what was predicted, no planted secret in the output, /metrics from the engine's state."""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from apiserver.cluster import SECRET
from rec_support import FakeServer, committed_ticks, kill_quietly, start_record, wait_for
from watch_support import Watch, run_watch, sample_value, scrape

P = 1.0


@pytest.fixture(scope="module")
def pressure_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    server = FakeServer(
        tmp_path_factory.mktemp("apiserver"),
        nodes=2,
        pods=3,
        kubelet_ports=False,
        extra=["--pressure", "--sample-period", str(P)],
    )
    server.start()
    yield server
    server.stop()


def test_watch_a_live_cluster(pressure_cluster: FakeServer, tmp_path: Path) -> None:
    server = pressure_cluster
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    w = Watch(
        "--kubeconfig", server.kubeconfig, "--context", "static", "--interval", f"{P:g}s", "--timeout", "2s",
        "--warn", "1h", "--listen", "127.0.0.1:0",
        extra_env={"TMPDIR": str(tmp)},
    )  # fmt: skip
    try:
        port = w.port()
        w.wait_for(
            lambda: sample_value(scrape(port), "evictlens_live_node_stale", node="node-001") == 0.0,
            "node-001 decided and not stale",
        )
        # the private recording: one 0700 directory under TMPDIR, for as long as the watch runs
        (private,) = tmp.iterdir()
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        text = scrape(port)
        assert sample_value(text, "evictlens_live_threshold_bytes", node="node-000", signal="memory.available",
                            kind="hard") == float(1 << 30)  # fmt: skip
        assert sample_value(text, "evictlens_live_signal_observed_bytes", node="node-000", signal="memory.available")

        server.faults(timeout_nodes=["node-001"])  # node-001's summary hangs: a gap each tick
        w.wait_for(lambda: w.has(kind="stale", node="node-001"), "node-001 reported stale")
        stale = next(line for line in w.lines if line["kind"] == "stale")
        assert stale["reason"] and stale["tick"] is not None
        w.wait_for(
            lambda: sample_value(scrape(port), "evictlens_live_node_stale", node="node-001") == 1.0,
            "node-001 stale in /metrics",
        )
        assert not w.has(kind="stale", node="node-000")
        server.faults(timeout_nodes=[])
        w.wait_for(lambda: w.has(kind="fresh", node="node-001"), "node-001 answering again")

        server.control("pressure", {"nodes": {"node-000": {"delta": 0.1}}})  # the fake kubelet evicts
        w.wait_for(lambda: w.has(kind="real-eviction", node="node-000"), "the real eviction", timeout=120)
        real = next(line for line in w.lines if line["kind"] == "real-eviction")
        assert real["pod"].startswith("alloc-sidecars") and real["message"].startswith("The node was low on")
        assert w.stop() == 0
    finally:
        w.kill()
    assert SECRET not in "".join(w.raw)
    assert not any(tmp.iterdir()), "the private recording goes with the watch"


def test_watch_refuses_when_no_cluster_is_reachable(tmp_path: Path) -> None:
    import yaml
    from rec_support_live import closed_port

    kc = tmp_path / "kubeconfig"
    kc.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{closed_port()}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    os.chmod(kc, 0o600)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = run_watch("--kubeconfig", str(kc), "--timeout", "2s", extra_env={"TMPDIR": str(tmp)})
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("evictlens watch: https://127.0.0.1:") and "no cluster reachable" in done.stderr
    assert done.stdout == "" and not any(tmp.iterdir())


def test_follow_record_running_beside(pressure_cluster: FakeServer, tmp_path: Path) -> None:
    """``record`` writes, ``watch REC --follow`` follows it from another process and ends when record finishes."""
    server = pressure_cluster
    out = tmp_path / "rec"
    rec = start_record(
        ["--kubeconfig", server.kubeconfig, "--context", "static", "-o", str(out), "--interval", f"{P:g}s",
         "--timeout", "2s"]
    )  # fmt: skip
    w = None
    try:
        wait_for(lambda: committed_ticks(out) >= 1, 60, "record's first tick")
        w = Watch(str(out), "--follow")
        w.wait_for(lambda: any("following" in e for e in w.err), "the watch following")
        server.faults(timeout_nodes=["node-000"])
        w.wait_for(lambda: w.has(kind="stale", node="node-000"), "node-000 reported stale")
        server.faults(timeout_nodes=[])
        rec.send_signal(signal.SIGTERM)
        rec.communicate(timeout=120)
        assert rec.returncode == 0
        w.proc.wait(120)  # the writer let go of its lock: the watch reads the last ticks and ends by itself
        assert w.proc.returncode == 0, "".join(w.err)
    finally:
        kill_quietly(rec)
        if w is not None:
            w.kill()


def test_watch_through_each_kubelet(tmp_path: Path) -> None:
    """``--kubelet-direct``: record's other access path (port 10250, nodes/stats, nodes/pods, nodes/configz)."""
    server = FakeServer(tmp_path / "apiserver", nodes=2, pods=2, kubelet_ports=True)
    server.start()
    w = Watch("--kubeconfig", server.kubeconfig, "--context", "static", "--kubelet-direct", "--interval", "1s",
              "--listen", "127.0.0.1:0")  # fmt: skip
    try:
        port = w.port()
        w.wait_for(
            lambda: all(
                sample_value(scrape(port), "evictlens_live_signal_observed_bytes", node=n, signal="memory.available")
                for n in ("node-000", "node-001")
            ),
            "both nodes' signals through their kubelets",
        )
        stats = server.stats()
        assert stats.get("proxy_requests", 0) == 0 and stats.get("kubelet_stats/summary", 0) > 0, stats
        assert w.stop() == 0, "".join(w.err)
    finally:
        w.kill()
        server.stop()
