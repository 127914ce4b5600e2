"""Benchmark (by hand, not in CI): ``record --retain`` for minutes, with SIGKILL restarts in between.

    .venv/bin/python tests/recordings/bench/bench_retention.py --nodes 100 --pods 50 \\
        --interval 1 --retain 2m --minutes 12 --kills 5

Starts the test API server, runs ``evictlens record --interval I --retain R`` without ``--duration``,
kills it with SIGKILL ``--kills`` times at evenly spread moments (each restart has the same arguments,
as a Deployment restarts its pod), stops it with SIGTERM at the end, and prints: MB on disk over time
(sampled every 10 s), each run's peak RSS (VmHWM) and CPU per tick, whether the size is flat after the
first window, and whether every tick a reader saw finished just before a kill is still in the final
recording (those inside the window; older ones were dropped by design).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import polars as pl  # noqa: E402
from rec_support import FakeServer, StderrLines, start_record  # noqa: E402

from kube.duration import parse_duration_seconds  # noqa: E402
from recordings.format import dir_bytes  # noqa: E402
from recordings.reader import Recording, to_micros  # noqa: E402
from recordings.snapshot import live_snapshot  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def _proc(pid: int) -> tuple[float, int, int]:
    """(CPU seconds, VmRSS kB, VmHWM kB) of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return cpu, int(status["VmRSS"].split()[0]), int(status["VmHWM"].split()[0])


def _ticks(out: Path) -> dict[int, int]:
    """tick → time (µs) of every finished tick a reader sees now (a live snapshot)."""
    with live_snapshot(out) as snap:
        df = Recording(snap).scan_ticks().select("tick", "time").unique("tick").collect()
    return {int(t): to_micros(at) for t, at in df.iter_rows()}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--pods", type=int, default=50)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--retain", default="2m")
    p.add_argument("--minutes", type=float, default=12)
    p.add_argument("--kills", type=int, default=5)
    p.add_argument("--dir", help="work directory (default: a temporary one)")
    args = p.parse_args()
    retain = parse_duration_seconds(args.retain, flag="--retain")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        srv = FakeServer(Path(tmp) / "srv", nodes=args.nodes, pods=args.pods, kubelet_ports=False)
        srv.start()
        out = Path(tmp) / "rec"
        rec_args = [
            "--kubeconfig",
            srv.kubeconfig,
            "--context",
            "static",
            "-o",
            str(out),
            "--interval",
            f"{args.interval}s",
            "--timeout",
            f"{max(1.0, args.interval)}s",
            "--retain",
            args.retain,
        ]
        total = args.minutes * 60
        kills = [total * (k + 1) / (args.kills + 1) for k in range(args.kills)]
        begin = time.monotonic()
        samples: list[tuple[float, int, int]] = []
        runs: list[dict[str, float]] = []
        resumed: list[str] = []
        seen: dict[int, int] = {}
        proc = start_record(rec_args)
        status = StderrLines(proc)
        started, next_sample = time.monotonic(), begin
        try:
            while True:
                now = time.monotonic() - begin
                if time.monotonic() >= next_sample:
                    rss = _proc(proc.pid)[1] if proc.poll() is None else 0
                    samples.append((now, dir_bytes(out) if out.exists() else 0, rss))
                    next_sample += 10
                if proc.poll() is not None:
                    raise SystemExit(f"recorder stopped by itself:\n{status.text()}")
                if (kills and now >= kills[0]) or now >= total:
                    final = now >= total and not (kills and now >= kills[0])
                    seen |= _ticks(out)
                    cpu, _rss, hwm = _proc(proc.pid)
                    ticks_before = len(seen)
                    if final:
                        proc.send_signal(signal.SIGTERM)
                        proc.wait(300)
                    else:
                        kills.pop(0)
                        proc.send_signal(signal.SIGKILL)
                        proc.wait(60)
                    runs.append({"seconds": time.monotonic() - started, "cpu": cpu, "hwm_mb": hwm / 1024})
                    print(f"t={now:6.0f}s {'SIGTERM' if final else 'SIGKILL'}: ticks seen {ticks_before}", flush=True)
                    if final:
                        break
                    proc = start_record(rec_args)
                    status = StderrLines(proc)
                    started = time.monotonic()
                    wait = time.monotonic() + 120
                    while not status.has("resumed the recording") and proc.poll() is None and time.monotonic() < wait:
                        time.sleep(0.05)
                    resumed += [line.strip() for line in status.lines if "resumed the recording" in line]
                time.sleep(0.2)
        finally:
            if proc.poll() is None:
                proc.kill()
        err = status.text()
        print(err.strip().splitlines()[-1] if err.strip() else "(no output)")
        rec = Recording(out)
        ticks = rec.scan_ticks().collect()
        kept = {int(t): to_micros(at) for t, at in ticks.select("tick", "time").unique("tick").iter_rows()}
        first = min(kept.values())
        lost = sorted(t for t, at in seen.items() if at >= first and t not in kept)
        gaps = ticks.filter(~pl.col("ok"))
        restarts = gaps.filter(pl.col("error").str.starts_with("recorder restarted"))["tick"].n_unique()
        span = (max(kept.values()) - first) / 1e6
        print(f"final recording: {len(kept)} ticks kept ({span:.0f} s), parts {len(rec.parts)}")
        print(
            f"restart gap ticks still in the window: {restarts}; other gap rows: {gaps.height - restarts * args.nodes}"
        )
        reasons = gaps.filter(~pl.col("error").str.starts_with("recorder restarted"))
        for error, count in reasons.group_by(pl.col("error").str.slice(0, 60)).len().sort("len").tail(3).iter_rows():
            print(f"  gap rows: {count} x {error}")
        for line in resumed:
            print(f"  {line}")
        print(f"finished ticks seen before a stop and inside the final window, lost: {len(lost)} {lost[:10]}")
        print("disk over time (s, MB on disk, recorder RSS MB):")
        for at, size, rss in samples:
            print(f"  {at:6.0f} {size / 1e6:8.1f} {rss / 1024:8.1f}")
        after = [size for at, size, _ in samples if at >= retain + 60]
        if after:
            print(f"after the first window: disk {min(after) / 1e6:.1f}..{max(after) / 1e6:.1f} MB")
        for i, run in enumerate(runs):
            print(f"run {i}: {run['seconds']:.0f} s, peak RSS {run['hwm_mb']:.0f} MB, CPU {run['cpu']:.1f} s")
        cpu = sum(r["cpu"] for r in runs)
        total_ticks = max(kept) + 1
        print(f"CPU per tick: {cpu / total_ticks * 1000:.0f} ms over {total_ticks} ticks (all runs)")
        srv.stop()


if __name__ == "__main__":
    main()
