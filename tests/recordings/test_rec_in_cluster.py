"""The recorder as the cluster runs it (issue 24 items 3-4), against the test API server and its kubelets.

The per-node pod's command is taken from ``--print-manifests --per-node`` itself (the DaemonSet's
``command`` + ``args``, ``$(NODE_NAME)`` filled in as the kubelet fills it from the downward API), run
through the real ``evictlens`` entry point: it records its one node through that node's kubelet port,
sends nothing through the API server proxy, keeps only its own kubelet's events, and answers
``/healthz``, ``/readyz`` and ``/metrics``.  A port in use is one line, exit 2, nothing created.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from rec_support import FakeServer, StderrLines, child_env, committed_ticks, journal_frames, kill_quietly, wait_for

from recordings.reader import open_recording
from recordings.recorder.manifests import Deploy, manifests

NODE = "node-001"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def kubelets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeServer]:
    """A server of our own: its request counters start at zero for this module."""
    server = FakeServer(tmp_path_factory.mktemp("apiserver"), nodes=3, pods=4, kubelet_ports=True)
    server.start()
    yield server
    server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def evictlens_command() -> list[str]:
    """The installed ``evictlens`` script (what the image's ENTRYPOINT runs), else its module."""
    script = Path(sys.executable).parent / "evictlens"
    return [str(script)] if script.exists() else [sys.executable, "-m", "replay.cli"]


def daemonset_command(out: Path, port: int) -> list[str]:
    """The DaemonSet container's command line, as the kubelet would run it on ``NODE``, pointed at ``out``
    and a loopback port, one tick a second."""
    ds = next(d for d in manifests(Deploy(per_node=True)) if isinstance(d, dict) and d["kind"] == "DaemonSet")
    container = ds["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("$(NODE_NAME)", NODE) for a in container["args"]]
    if "--retain" not in _record_flags():  # the rolling window lands separately (issue 24 item 1)
        args = args[: args.index("--retain")] + args[args.index("--retain") + 2 :]
    for flag, value in (("-o", str(out)), ("--interval", "1s"), ("--listen", f"127.0.0.1:{port}")):
        args[args.index(flag) + 1] = value
    assert container["command"] == ["evictlens", "record"]
    return [*evictlens_command(), "record", *args]


def _record_flags() -> set[str]:
    import argparse

    from recordings.recorder.options import add_record_arguments

    parser = argparse.ArgumentParser()
    add_record_arguments(parser)
    return set(parser._option_string_actions)


def get(port: int, path: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10, trust_env=False)


def _answers(port: int, path: str, status: int, proc: subprocess.Popen[str] | None = None) -> bool:
    if proc is not None and proc.poll() is not None:
        raise AssertionError(f"the recorder exited ({proc.returncode})")
    try:
        return get(port, path).status_code == status
    except httpx.HTTPError:
        return False


def _incident_reports(out: Path) -> list[Path]:
    return sorted((out / "incidents").glob(f"*-{NODE}-evicted-*/report.json"))


def _event_nodes(out: Path) -> set[str]:
    nodes: set[str] = set()
    for frame in journal_frames(out):
        cols = frame.get("tables", {}).get("objects")
        if cols:
            nodes |= {n for k, n in zip(cols["kind"], cols["node"], strict=True) if k == "event"}
    return nodes


def test_a_per_node_pod_records_its_node_through_its_kubelet_alone(kubelets: FakeServer, tmp_path: Path) -> None:
    out, port = tmp_path / "rec", free_port()
    before = kubelets.stats()
    cmd = [*daemonset_command(out, port), "--kubeconfig", kubelets.kubeconfig, "--context", "static"]
    proc = subprocess.Popen(cmd, env=child_env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = StderrLines(proc)
    try:
        wait_for(lambda: _answers(port, "/readyz", 200, proc), timeout=120, what="/readyz 200 (a first tick)")
        assert get(port, "/healthz").status_code == 200
        # An eviction on another node and one on ours: only our kubelet's event is kept.
        kubelets.control("evict", {"node": "node-002"})
        kubelets.control("evict", {"node": NODE})
        wait_for(lambda: NODE in _event_nodes(out), timeout=120, what="our node's Evicted event recorded")
        wait_for(lambda: committed_ticks(out) >= 3, timeout=120, what="3 ticks")
        # Explained on the node: the flight recorder's incident, counted in /metrics.
        wait_for(lambda: _incident_reports(out), timeout=180, what="an incident report for our node's eviction")
        wait_for(
            lambda: 'evictlens_recorder_incidents_total{kind="evicted"} 1.0' in get(port, "/metrics").text,
            timeout=60,
            what="the incident counted in /metrics",
        )
        metrics = get(port, "/metrics").text
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        kill_quietly(proc)
    assert proc.returncode == 0, err.text()
    after = kubelets.stats()
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert grew.get("proxy_requests", 0) == 0  # no summary, /pods or /configz through the API server
    assert grew["list_nodes_by_name"] >= 1  # the node list asked for our node only
    assert grew.get("list_pods", 0) == 0 and grew.get("watch_pods", 0) == 0  # the pods come from the kubelet
    assert grew["kubelet_stats/summary"] >= 3 and grew["pod_lists"] >= 1
    rec = open_recording(out)
    assert rec.nodes() == [NODE]
    assert set(rec.scan_ticks().collect()["node"]) == {NODE} and all(t.ok for t in rec.ticks(NODE))
    assert len(rec.pods_at(NODE)) >= 3
    events = rec.events()
    assert events and {e["source"]["host"] for e in events} == {NODE}
    assert len(_incident_reports(out)) == 1 and not list((out / "incidents").glob("*-node-002-*"))
    assert "evictlens_recorder_ticks_total" in metrics
    assert 'evictlens_recorder_node_failures_total{reason="timeout"} 0.0' in metrics


def test_node_needs_kubelet_direct(tmp_path: Path) -> None:
    done = subprocess.run(
        [*evictlens_command(), "record", "-o", str(tmp_path / "rec"), "--node", NODE],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "--node" in done.stderr and "--kubelet-direct" in done.stderr
    assert not (tmp_path / "rec").exists()


def test_a_port_in_use_is_one_line_exit_2_and_nothing_on_disk(kubelets: FakeServer, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        out = tmp_path / "rec"
        done = subprocess.run(
            [
                *evictlens_command(),
                "record",
                "-o",
                str(out),
                "--kubeconfig",
                kubelets.kubeconfig,
                "--context",
                "static",
                "--listen",
                f"127.0.0.1:{port}",
            ],
            env=child_env(),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--listen" in lines[0] and f"127.0.0.1:{port}" in lines[0], lines
    assert "Traceback" not in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("addr", ["9090", "host:", "127.0.0.1:70000"])
def test_a_bad_listen_address_is_one_line(addr: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*evictlens_command(), "record", "-o", str(tmp_path / "rec"), "--listen", addr],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "--listen" in done.stderr
    assert not (tmp_path / "rec").exists()


def test_a_node_the_cluster_does_not_have_is_one_line_and_nothing_on_disk(kubelets: FakeServer, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    done = subprocess.run(
        [
            *evictlens_command(),
            "record",
            "-o",
            str(out),
            "--kubeconfig",
            kubelets.kubeconfig,
            "--context",
            "static",
            "--kubelet-direct",
            "--node",
            "node-999",
            "--listen",
            f"127.0.0.1:{free_port()}",
        ],
        env=child_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    errors = [ln for ln in done.stderr.splitlines() if "/metrics, /healthz" not in ln]
    assert len(errors) == 1 and "--node" in errors[0] and "no nodes match" in errors[0], done.stderr
    assert not out.exists()
