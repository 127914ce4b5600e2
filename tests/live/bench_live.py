"""Benchmark (by hand, not collected by pytest): the live engine on the 100-node benchmark day.

    .venv/bin/python tests/live/bench_live.py run /tmp/bench100 -o /tmp/live100 --from 2850 --ticks 300 --interval 2
    .venv/bin/python tests/live/bench_live.py equal /tmp/bench100 --ticks 8640

``run``: this process writes ticks ``--from`` … of the source recording into a new recording through the real
writer (RecordingWriter, a journal frame per tick, folded as ``commit`` folds), one every ``--interval`` seconds,
after the pods, nodes and /configz observed before the first one; a child process runs ``LiveEngine`` on it,
as ``watch`` does: a poll, then ``engine.wait`` (woken by the append: live/wake.py; ``--poll S`` sleeps S
seconds instead, the old way). Per tick: the latency to the engine having decided it, from the frame written
(the append returned) and from the start of the writer's commit (serializing and compressing the frame: the
writer's time), and the engine's CPU; its RSS sampled at every tick (flat or not). At the end ``replay`` runs on
the written recording and its evictions (node, pod, time, exact message) and condition intervals are compared with the
engine's. CPU % of one core at a 10 s interval is the engine's CPU per tick over 10 s (the per-tick work does
not depend on the interval; the idle polls between ticks cost a few stat calls).

``equal``: the source recording fed tick by tick to an engine in this process (no writer: the frames as the
tail would give them), compared with ``replay`` on the source for ticks up to ``--ticks``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _ready(out: Path) -> Path:
    """The file the engine process creates once it has opened the recording."""
    return out.with_name(out.name + ".ready")


# -- the engine side (child process) ----------------------------------------------------------------
def engine_main(dst: Path, out: Path, final: int, poll: float | None) -> None:
    from live.engine import LiveEngine

    t0, c0 = time.time(), time.process_time()
    engine = LiveEngine(dst)
    started = {"wall": time.time() - t0, "cpu": time.process_time() - c0, "rss_mb": _rss_mb()}
    _ready(out).touch()  # the writer waits for this before its first timed tick
    decided: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    last = engine.last_tick
    deadline = time.time() + 3600
    while (last is None or last < final) and time.time() < deadline:
        c = time.process_time()
        got = engine.poll()
        cpu = time.process_time() - c
        now = time.time()
        events.extend({"kind": e.kind, "node": e.node, "time_us": e.time_us, **e.details} for e in got)
        if engine.last_tick != last:
            new = 1 if last is None or engine.last_tick is None else engine.last_tick - last
            last = engine.last_tick
            decided.append({"tick": last, "decided": now, "cpu": cpu, "rss_mb": _rss_mb(), "new": new})
        elif poll is not None:
            time.sleep(poll)
        else:
            engine.wait(1.0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total_cpu = time.process_time() - c0
    out.write_text(
        json.dumps(
            {
                "start": started,
                "decided": decided,
                "events": events,
                "peak_rss_mb": peak,
                "cpu": total_cpu,
                "event_driven": engine.event_driven and poll is None,
            },
            default=str,
        )
    )


# -- the writer side ---------------------------------------------------------------------------------
def run(src: Path, dst: Path, first: int, count: int, interval: float, poll: float | None) -> None:
    from bench_live_compare import compare

    from live.tail import recorded_frames
    from recordings import format as fmt
    from recordings.reader import open_recording
    from recordings.writer import RecordingWriter

    rec = open_recording(src)
    frames = recorded_frames(rec, after_tick=first - 1, chunk=10)
    loose = next(frames)
    writer = RecordingWriter(dst, fmt.Manifest(source="recorder", options={"interval": f"{interval}s"}))
    pending = sorted(
        (
            (row["observed"], name, row)
            for name in ("objects", "evictions", "kernel_events")
            for row in loose.rows(name)
        ),
        key=lambda r: r[0],
    )
    out = dst.parent / (dst.name + ".engine.json")
    child = None
    commits: dict[int, float] = {}
    written: dict[int, float] = {}
    i = 0
    for n, frame in enumerate(frames):
        if n >= count:
            break
        assert frame.tick is not None
        writer.next_tick = frame.tick
        tick = writer.begin_tick(at=frame.time)
        for name in frame.tables:
            for col, values in frame.columns(name).items():
                tick.tables[name][col].extend(values)
        while i < len(pending) and pending[i][0] <= frame.time + int(interval * 1e6):
            _at, name, row = pending[i]
            for col, value in row.items():
                tick.tables[name][col].append(value)
            i += 1
        if child is None:  # the engine starts on the empty recording: the first tick brings every object
            child = subprocess.Popen(
                [sys.executable, __file__, "engine", str(dst), "--out", str(out), "--last", str(first + count - 1)]
                + ([] if poll is None else ["--poll", str(poll)]),
                cwd=ROOT,
            )
            until = time.time() + 600
            while not _ready(out).exists() and child.poll() is None and time.time() < until:
                time.sleep(0.05)  # polling the engine's ready file under a deadline
        due = time.time() + interval
        commits[frame.tick] = time.time()  # the frame is appended first thing in commit (a fold may follow)
        writer.commit(tick, fold=False)
        written[frame.tick] = time.time()
        if writer._pending_ticks >= writer.fold_every or writer._pending_rows >= writer.fold_rows:
            writer.fold()  # as commit(tick) would, after the append
        time.sleep(max(0.0, due - time.time()))
    assert child is not None
    child.wait(timeout=3600)
    writer.finalize()
    result = json.loads(out.read_text())
    head = result["decided"][0]
    first_latency = head["decided"] - commits[head["tick"]]
    lat = sorted(d["decided"] - commits[d["tick"]] for d in result["decided"] if d["tick"] in commits)
    lat_w = sorted(d["decided"] - written[d["tick"]] for d in result["decided"] if d["tick"] in written)
    serialize = sorted(written[t] - commits[t] for t in written)
    cpus = [d["cpu"] / d["new"] for d in result["decided"][1:]]
    rss = [d["rss_mb"] for d in result["decided"]]
    print(f"ticks written {len(commits)} (from tick {first}), interval {interval} s")
    print(f"engine start-up on the empty recording: {result['start']}")
    wake = "woken by the append (inotify)" if result["event_driven"] else f"polling every {poll or 1.0} s"
    print(f"engine: a poll, then {wake}")

    def dist(xs: list[float]) -> str:
        return f"p50 {xs[len(xs) // 2]:.2f} s, p95 {xs[int(len(xs) * 0.95)]:.2f} s, max {xs[-1]:.2f} s"

    print(f"latency frame written → decided: {dist(lat_w)}")
    print(f"latency commit start → decided: {dist(lat)} (first tick {first_latency:.2f} s)")
    print(f"writer's append (serialize, compress, write): {dist(serialize)}")
    mean = sum(cpus) / len(cpus)
    print(
        f"engine CPU per tick after the first: mean {mean * 1000:.0f} ms, max {max(cpus) * 1000:.0f} ms "
        f"→ {mean / 10 * 100:.1f} % of one core at a 10 s interval; total CPU {result['cpu']:.1f} s"
    )
    print(
        f"engine RSS: after first tick {rss[0]:.0f} MB, after {len(rss) // 2} ticks {rss[len(rss) // 2]:.0f} MB, "
        f"at the end {rss[-1]:.0f} MB, peak {result['peak_rss_mb']:.0f} MB"
    )
    print(compare(dst, result["events"]))


def equal(src: Path, ticks: int, every: int) -> None:
    from bench_live_compare import Replayed

    from live.engine import LiveEngine
    from live.tail import recorded_frames
    from recordings.reader import open_recording

    rec = open_recording(src)
    t0 = time.time()
    replayed = Replayed(src)
    print(f"replay of the source: {time.time() - t0:.0f} s", flush=True)
    # an engine on an empty recording, then the source's frames one tick at a time (what the tail gives)
    empty = src.parent / (src.name + ".empty-for-live")
    if not empty.exists():
        from recordings import format as fmt
        from recordings.writer import RecordingWriter

        RecordingWriter(empty, fmt.Manifest(source="recorder")).finalize()
    engine = LiveEngine(empty)
    events: list[dict[str, Any]] = []
    t0, c0 = time.time(), time.process_time()
    n = 0
    for frame in recorded_frames(rec, chunk=10, interleave=True):
        if frame.tick is not None and frame.tick >= ticks:
            break
        got = engine.feed([frame])
        events.extend({"kind": e.kind, "node": e.node, "time_us": e.time_us, **e.details} for e in got)
        n += frame.tick is not None
        if n and n % every == 0:
            print(
                f"{n} ticks, {time.time() - t0:.0f} s, cpu {time.process_time() - c0:.0f} s, rss {_rss_mb():.0f} MB: "
                + replayed.compare(events, n),
                flush=True,
            )
    print(f"{n} ticks fed: wall {time.time() - t0:.0f} s, CPU {time.process_time() - c0:.0f} s, RSS {_rss_mb():.0f} MB")
    print(replayed.compare(events, n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("src", type=Path)
    r.add_argument("-o", "--out", type=Path, required=True)
    r.add_argument("--from", dest="first", type=int, default=0)
    r.add_argument("--ticks", type=int, default=60)
    r.add_argument("--interval", type=float, default=10.0)
    r.add_argument(
        "--poll", type=float, default=None, help="the engine sleeps this long between polls (default: woken)"
    )
    e = sub.add_parser("engine")
    e.add_argument("dst", type=Path)
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--last", type=int, required=True, help="the last tick the writer commits")
    e.add_argument(
        "--poll", type=float, default=None, help="sleep this long between polls (default: wait on the wake-up)"
    )
    q = sub.add_parser("equal")
    q.add_argument("src", type=Path)
    q.add_argument("--ticks", type=int, default=8640)
    q.add_argument("--every", type=int, default=500, help="compare with replay every this many ticks")
    args = parser.parse_args()
    if args.cmd == "run":
        if args.out.exists():
            raise SystemExit(f"{args.out} exists")
        run(args.src, args.out, args.first, args.ticks, args.interval, args.poll)
    elif args.cmd == "engine":
        engine_main(args.dst, args.out, args.last, args.poll)
    else:
        equal(args.src, args.ticks, args.every)


if __name__ == "__main__":
    os.environ.setdefault("POLARS_MAX_THREADS", "2")
    main()
