"""Benchmark (by hand, not collected by pytest): ``import --prometheus`` of N nodes × H hours, on one of two servers.

    flock /work/bench.lock .venv/bin/python tests/recordings/prometheus/bench_prom_import.py \
        --backend standin --nodes 100 --pods 110 --hours 24

The cluster is :mod:`prom_bench_model` (``--pods`` pods of two containers per node; cAdvisor, the kubelet and
node-exporter scraped every 10 s — kubelet/cAdvisor's usual interval, the one at which the import decides as
the kubelet did — and kube-state-metrics every 30 s). Back-ends:

* ``prometheus``: the model written as OpenMetrics and backfilled with ``promtool tsdb create-blocks-from
  openmetrics`` one ``--chunk-minutes`` file at a time (promtool holds a chunk in memory), then served by the
  real ``prometheus`` (``--keep`` reuses the blocks of an earlier run);
* ``standin``: :mod:`prom_standin` answers the same queries from the model (checked against the real server by
  ``test_prom_standin.py``), for the scales the real server cannot be backfilled with here.

The import runs under ``tests/bench_tree.py`` (wall, CPU, peak RSS of the import's process tree, the server not
included), with ``--limit-gb``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))

from prom_bench_model import T0, write_chunk  # noqa: E402
from prom_support import backfill, prometheus  # noqa: E402


def _import(url: str, args: argparse.Namespace) -> int:
    out = args.dir / "rec"
    shutil.rmtree(out, ignore_errors=True)
    minutes = args.minutes or args.hours * 60
    command = [
        sys.executable,
        str(ROOT / "tests" / "bench_tree.py"),
        "--limit-gb",
        str(args.limit_gb),
        "--",
        sys.executable,
        "-m",
        "replay.cli",
        "import",
        "--prometheus",
        url,
        "--from",
        str(T0 + args.offset_minutes * 60),
        "--to",
        str(T0 + (args.offset_minutes + minutes) * 60 - 10),
        "-o",
        str(out),
        *args.import_args,
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    print(done.stdout.strip(), done.stderr.strip()[-3000:], sep="\n")
    if out.exists():
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
        options = __import__("orjson").loads((out / "manifest.json").read_bytes())["options"]
        print(f"recording {size:.1f} MB, window {options['window']}, series counted {options['series_counted']}")
    return done.returncode


def _standin(args: argparse.Namespace) -> int:
    args.dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(HERE / "prom_standin.py"), "--nodes", str(args.nodes), "--pods", str(args.pods)]
    command += ["--hours", str(args.hours), "--port", str(args.port)]
    with (args.dir / "standin.log").open("w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{args.port}"
    try:
        deadline = time.monotonic() + 300
        while True:  # polling a condition under a deadline
            try:
                httpx.post(f"{url}/api/v1/query", data={"query": "machine_memory_bytes", "time": str(T0)}, timeout=5)
                break
            except httpx.HTTPError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(
                        f"the stand-in did not start: {(args.dir / 'standin.log').read_text()[-2000:]}"
                    ) from None
                time.sleep(0.2)
        return _import(url, args)
    finally:
        server.terminate()
        server.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--pods", type=int, default=10)
    ap.add_argument("-d", "--dir", type=Path, default=Path("/tmp/prom-bench"))
    ap.add_argument("--backend", choices=("prometheus", "standin"), default="prometheus")
    ap.add_argument("--port", type=int, default=9099, help="the stand-in's port")
    ap.add_argument("--offset-minutes", type=int, default=0, help="import from this far into the data")
    ap.add_argument("--limit-gb", type=float, default=4.0, help="bench_tree kills the import past this")
    ap.add_argument("--keep", action="store_true", help="reuse the blocks already in DIR/data")
    ap.add_argument(
        "--chunk-minutes",
        type=int,
        default=120,
        help="backfill this much at a time (promtool holds a chunk in memory: 100 nodes × 1 h took > 8 GB)",
    )
    ap.add_argument("--minutes", type=int, help="import only the first MINUTES of the generated range")
    ap.add_argument("import_args", nargs="*", help="more import flags (after --), e.g. -- --window 30m")
    args = ap.parse_args()
    if args.backend == "standin":
        return _standin(args)
    data = args.dir / "data"
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)
        args.dir.mkdir(parents=True)
        started, total = time.monotonic(), 0
        per = args.chunk_minutes * 6  # ticks of 10 s
        for lo in range(0, args.hours * 360, per):
            path = args.dir / "chunk.om"
            total += write_chunk(path, lo, min(args.hours * 360, lo + per), args.nodes, args.pods)
            backfill(path, data)
            path.unlink()
        print(f"generated and backfilled {total:,} samples in {time.monotonic() - started:.0f}s")
    with prometheus(data, deadline=600) as srv:
        return _import(srv.url, args)


if __name__ == "__main__":
    sys.exit(main())
