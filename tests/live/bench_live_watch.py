"""Benchmark (by hand, not in CI): ``evictlens watch`` on a live cluster of 100 simulated nodes × 110 pods.

    .venv/bin/python tests/live/bench_live_watch.py --nodes 100 --pods 110 --ticks 7

Starts the fake API server (tests/recordings/apiserver, HTTPS, HTTP/2) in its own process, runs
``evictlens watch --kubeconfig ... --interval 10s --duration ... --listen`` (record's recorder in-process into a
private directory, the live engine following it, /metrics served), scrapes /metrics after each tick as Prometheus
would, and prints the watch process's wall, CPU (share of one core), peak RSS and its RSS after the second tick
(memory must not grow with the recording), how many nodes /metrics shows decided at the newest tick, and how long a
scrape of 100 nodes takes. Waiting on the clock is the point here: this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "recordings"))

import httpx  # noqa: E402
from bench_tree import tree_rss  # noqa: E402
from rec_support import FakeServer, child_env  # noqa: E402

REPO = HERE.parents[1]


def _scrape(port: int) -> tuple[str, float]:
    t0 = time.monotonic()
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    except httpx.HTTPError:
        text = ""
    return text, time.monotonic() - t0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--pods", type=int, default=110)
    p.add_argument("--ticks", type=int, default=7)
    p.add_argument("--interval", type=float, default=10.0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-live-watch-") as tmp:
        srv = FakeServer(Path(tmp) / "srv", nodes=args.nodes, pods=args.pods, kubelet_ports=False)
        srv.start()
        try:
            duration = args.interval * args.ticks - args.interval / 2
            proc = subprocess.Popen(
                [sys.executable, "-m", "replay.cli", "watch", "--kubeconfig", srv.kubeconfig, "--interval",
                 f"{args.interval:g}s", "--duration", f"{duration:g}s", "--timeout", "8s", "--listen", "127.0.0.1:0"],
                cwd=REPO, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            assert proc.stderr is not None
            line = proc.stderr.readline()
            found = re.search(r"port (\d+)", line)
            assert found is not None, line
            port = int(found.group(1))
            start = time.monotonic()
            cpu: dict[int, float] = {}
            peak, after_two, scrapes, decided = 0, 0, [], []
            next_scrape = start + args.interval * 1.5
            while proc.poll() is None:
                rss = tree_rss(proc.pid, cpu)
                peak = max(peak, rss)
                if not after_two and time.monotonic() - start > 2.5 * args.interval:
                    after_two = rss
                if time.monotonic() >= next_scrape:
                    text, took = _scrape(port)
                    scrapes.append(took)
                    times = re.findall(r"^evictlens_live_last_tick_timestamp_seconds\{[^}]*\} (\S+)$", text, re.M)
                    newest = max((float(t) for t in times), default=0.0)
                    decided.append(sum(1 for t in times if float(t) == newest))
                    next_scrape += args.interval
                time.sleep(0.2)
            wall = time.monotonic() - start
            used = cpu.get(proc.pid, 0.0)
            err = proc.stderr.read()
        finally:
            srv.stop()
    print(
        f"watch, {args.nodes} nodes × {args.pods} pods, {args.ticks} ticks at {args.interval:g} s: exit "
        f"{proc.returncode}; wall {wall:.1f} s, CPU {used:.1f} s ({100 * used / wall:.1f}% of one core), "
        f"peak RSS {peak / 1e6:.0f} MB (after two ticks {after_two / 1e6:.0f} MB)"
    )
    if scrapes:
        print(f"scrapes: nodes decided at the newest tick {decided}; {1000 * sum(scrapes) / len(scrapes):.0f} ms each")
    print(err.strip().splitlines()[-1] if err.strip() else "")


if __name__ == "__main__":
    main()
