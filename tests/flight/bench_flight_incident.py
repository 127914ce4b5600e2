"""Benchmark (by hand, not collected by pytest): what one incident costs the flight recorder on a big recording.

Picks the recording's first real eviction (or ``--nth``), then does exactly what the recorder's incident thread
does (snapshot, cut the node's window, explain with the engine, pack, publish) and prints the time each incident
took. The recording is written to (``DIR/incidents/``): give a copy (``cp -al REC COPY`` links the parts).

    .venv/bin/python tests/bench_tree.py --limit-gb 8 -- .venv/bin/python tests/flight/bench_flight_incident.py \\
        /tmp/copy-of-bench100 --count 3
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from flight.incident import Incident, from_evictions
from flight.recorder import FlightOptions, FlightRecorder, _Job
from recordings.reader import open_recording, to_micros


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("recording", type=Path)
    ap.add_argument("--count", type=int, default=1, help="incidents to make, one after the other")
    ap.add_argument("--before", default=1800.0, type=float)
    ap.add_argument("--after", default=300.0, type=float)
    args = ap.parse_args()
    rec = open_recording(args.recording)
    rows = [
        {**r, "observed": to_micros(r["observed"]), "time": to_micros(r["time"]) if r["time"] else None}
        for r in rec.evictions()
    ]
    found = sorted(from_evictions(rows), key=lambda i: i.time)[: args.count]
    if not found:  # a generated day has no real eviction: a kernel kill on a node at the middle of the day
        first, last = rec.time_range()
        assert first is not None and last is not None
        nodes = rec.nodes()
        found = [
            Incident("OOMKilled", nodes[i * len(nodes) // args.count], "default", "bench", None, "c", mid, mid, None)
            for i, mid in enumerate([(first + last) // 2] * args.count)
        ]
    print(f"{len(rows)} eviction rows; making {len(found)} incidents", flush=True)
    hook = FlightRecorder(args.recording, FlightOptions(args.before, args.after, 100, 1 << 30), log=print)
    hook.store.ensure()
    for inc in found:
        started = time.monotonic()
        hook._batch([_Job(inc)])
        print(f"{inc.name}: {time.monotonic() - started:.2f} s", flush=True)
    started = time.monotonic()
    hook._batch([_Job(inc, repack=True) for inc in found])
    print(f"the {len(found)} made again in one batch (one snapshot): {time.monotonic() - started:.2f} s", flush=True)


if __name__ == "__main__":
    main()
