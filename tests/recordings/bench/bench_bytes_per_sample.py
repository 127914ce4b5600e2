"""Benchmark (by hand, not in CI): bytes per stored metric sample on a day-long recording.

    .venv/bin/python tests/recordings/bench/bench_bytes_per_sample.py --nodes 5 --pods 30 --hours 24

Summaries come from the fake API server's synthetic cluster (real nri-kubernetes 1.28 pods,
memory moving by pages every tick, disks filling slowly), go through the real writer (journal,
folds every 60 ticks, compaction at finalize) and the figure is total bytes of the finished
recording directory / number of non-null numeric values in the series tables.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from apiserver.cluster import SyntheticCluster  # noqa: E402

from recordings.format import Manifest  # noqa: E402
from recordings.reader import open_recording  # noqa: E402
from recordings.writer import RecordingWriter  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=5)
    p.add_argument("--pods", type=int, default=30)
    p.add_argument("--hours", type=float, default=24)
    p.add_argument("--interval", type=float, default=10)
    p.add_argument("--keep", help="keep the recording here")
    args = p.parse_args()
    cluster = SyntheticCluster(args.nodes, args.pods)
    ticks = int(args.hours * 3600 / args.interval)
    with TemporaryDirectory() as tmp:
        root = Path(args.keep or Path(tmp) / "rec")
        w = RecordingWriter(root, Manifest(source="bench"))
        start, t0 = 1_763_000_000.0, time.perf_counter()
        for i in range(ticks):
            now = start + i * args.interval
            tick = w.begin_tick(int(now * 1e6))
            for node in cluster.names:
                tick.add_summary(node, orjson.loads(cluster.summary(node, now)), scraped=int(now * 1e6))
            w.commit(tick)
        w.finalize()
        elapsed = time.perf_counter() - t0
        rec = open_recording(root)
        counts = rec.count_rows()
        size = rec.size_bytes()
        print(f"ticks {ticks}  nodes {args.nodes}  pods/node {args.pods}  wrote in {elapsed:.0f}s")
        print(
            f"metric samples {counts['metric_samples']}  bytes {size}  "
            f"bytes/sample {size / counts['metric_samples']:.3f}"
        )
        for f in sorted(root.rglob("*.parquet")):
            print(f"  {f.relative_to(root)}  {f.stat().st_size}")


if __name__ == "__main__":
    main()
