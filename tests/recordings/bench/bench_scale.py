"""Benchmark (by hand, not in CI): the real recorder against 500 simulated nodes × 50 pods.

    .venv/bin/python tests/recordings/bench/bench_scale.py --nodes 500 --pods 50 --ticks 6

Starts the fake API server (HTTPS, HTTP/2) in its own process, runs ``evictlens record`` at a
10 s interval for ``--ticks`` ticks, then prints the recorder's own summary line (CPU per
tick, peak RSS), whether every tick kept every node, and bytes per metric sample.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import polars as pl  # noqa: E402
from rec_support import FakeServer, run_cli, start_record  # noqa: E402

from recordings.reader import open_recording  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--pods", type=int, default=50)
    p.add_argument("--ticks", type=int, default=6)
    p.add_argument("--interval", type=float, default=10.0)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--http1", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        srv = FakeServer(Path(tmp) / "srv", nodes=args.nodes, pods=args.pods, kubelet_ports=False)
        t0 = time.monotonic()
        srv.start()
        print(f"server up in {time.monotonic() - t0:.1f}s", flush=True)
        out = Path(tmp) / "rec"
        duration = args.interval * args.ticks - args.interval / 2
        proc = start_record(
            [
                "--kubeconfig",
                srv.kubeconfig,
                "-o",
                str(out),
                "--interval",
                f"{args.interval}s",
                "--duration",
                f"{duration}s",
                "--timeout",
                "8s",
                "--concurrency",
                str(args.concurrency),
                *(["--http1"] if args.http1 else []),
            ]
        )
        try:
            _o, err = proc.communicate(timeout=duration + 300)
            stats = srv.stats()
        finally:
            srv.stop()
        print("server:", {k: v for k, v in stats.items() if not k.startswith("configz_")})
        rec = open_recording(out)
        gaps = rec.scan_ticks().filter(~pl.col("ok")).group_by("tick", "error").len().sort("tick").collect()
        for row in gaps.iter_rows():
            print("  gap", row)
        print(err.strip().splitlines()[-1])
        info = json.loads(run_cli("info", str(out), "--json").stdout)
        c = info["counts"]
        print(
            f"ticks {c['ticks']}  nodes {c['nodes']}  node samples {c['node_samples']}  gaps {c['gaps']}  "
            f"pod samples {c['pod_samples']}  objects {c['objects']}"
        )
        print(
            f"bytes {info['bytes_on_disk']}  metric samples {c['metric_samples']}  "
            f"bytes/sample {info['bytes_per_metric_sample']}"
        )
        if proc.returncode:
            print("recorder exit code", proc.returncode, file=sys.stderr)
        subprocess.run(["du", "-sh", str(out)], check=False)


if __name__ == "__main__":
    main()
