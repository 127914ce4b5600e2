"""Benchmark (by hand, not in CI): what the in-cluster recorder costs, to size --print-manifests' resources.

    .venv/bin/python tests/recordings/bench/bench_incluster.py --nodes 100 300 500 --ticks 20
    .venv/bin/python tests/recordings/bench/bench_incluster.py --per-node --pods 110 --ticks 20

Whole cluster: the Deployment's recorder (through the API server proxy, ``--retain`` and ``--listen`` as
the manifest passes them, a short window so parts fold and leave it during the run) against the test
API server with N nodes × ``--pods`` pods.  ``--per-node``: one DaemonSet pod's recorder
(``--kubelet-direct --node node-000``) against one kubelet with ``--pods`` pods (110: the kubelet's
default maxPods).  Runs ``evictlens record`` as the image does (the flight recorder on; ``--evict-every``
makes incidents to explain).  Prints, per run, the recorder's own summary (CPU per tick, peak RSS from
``getrusage``), the share of one core it used while ticking, and whether every tick kept every node.
"""

from __future__ import annotations

import argparse
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import httpx  # noqa: E402
import polars as pl  # noqa: E402
from rec_support import REPO, FakeServer, child_env, wait_for  # noqa: E402

from recordings.reader import open_recording  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ticks_metric(port: int) -> float:
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5, trust_env=False).text
    except httpx.HTTPError:
        return 0.0
    m = re.search(r"^evictlens_recorder_ticks_total (\S+)$", text, re.MULTILINE)
    return float(m.group(1)) if m else 0.0


def _evictlens() -> list[str]:
    """``evictlens record`` as the image runs it (the flight recorder on: incidents explained as they come)."""
    script = Path(sys.executable).parent / "evictlens"
    return [str(script)] if script.exists() else [sys.executable, "-m", "replay.cli"]


def run(nodes: int, pods: int, ticks: int, interval: float, retain: str, per_node: bool, evict_every: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        srv = FakeServer(Path(tmp) / "srv", nodes=nodes, pods=pods, kubelet_ports=per_node)
        srv.start()
        out, port = Path(tmp) / "rec", _port()
        args = ["--kubeconfig", srv.kubeconfig, "--context", "static", "-o", str(out), "--append"]
        args += ["--interval", f"{interval:g}s", "--retain", retain, "--listen", f"127.0.0.1:{port}", "--timeout", "8s"]
        args += ["--concurrency", "64"]
        if per_node:
            args += ["--kubelet-direct", "--node", "node-000"]
        if evict_every:
            srv.faults(evict_every=evict_every)
        proc = subprocess.Popen(
            [*_evictlens(), "record", "--status", "plain", *args],
            env=child_env(),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: _ticks_metric(port) >= ticks, timeout=ticks * interval + 600, what=f"{ticks} ticks")
            proc.send_signal(signal.SIGTERM)
            _o, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
            srv.stop()
        lines = err.strip().splitlines()
        final = next(ln for ln in reversed(lines) if "peak rss" in ln)
        incidents = len(list((out / "incidents").glob("*/report.json")))
        rec = open_recording(out)
        gaps = rec.scan_ticks().filter(~pl.col("ok")).collect().height
        cpu = re.search(r"cpu (\S+)s \((\d+) ms/tick\)", final)
        rss = re.search(r"peak rss (\d+) MB", final)
        per_tick = int(cpu.group(2)) if cpu else -1
        share = per_tick / 1000 / interval
        mode = f"per-node (1 node × {pods} pods)" if per_node else f"{nodes} nodes × {pods} pods"
        return (
            f"{mode} at {interval:g}s, --retain {retain}: {per_tick} ms CPU/tick = {share:.2f} core, "
            f"peak RSS {rss.group(1) if rss else '?'} MB, gaps {gaps}, incidents {incidents}\n  {final}"
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, nargs="+", default=[100, 300, 500])
    p.add_argument("--pods", type=int, default=50)
    p.add_argument("--ticks", type=int, default=20)
    p.add_argument("--interval", type=float, default=10.0)
    p.add_argument("--retain", default="2m", help="short, so parts fold and leave the window during the run")
    p.add_argument("--per-node", action="store_true")
    p.add_argument("--evict-every", type=float, default=0.0, help="the test cluster evicts a pod every S seconds")
    args = p.parse_args()
    for n in [1] if args.per_node else args.nodes:
        t0 = time.monotonic()
        print(run(n, args.pods, args.ticks, args.interval, args.retain, args.per_node, args.evict_every), flush=True)
        print(f"  wall {time.monotonic() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
