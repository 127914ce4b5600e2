"""Forecast scores (by hand, not collected by pytest): how long before each real eviction or kernel kill the live
engine first warned, and how many warnings came to nothing.

    .venv/bin/python tests/live/bench_live_score.py                      # every bundled scenario
    .venv/bin/python tests/live/bench_live_score.py --rec /tmp/bench100  # a recording of your own

Each recording is fed tick by tick to a ``LiveEngine`` (``--warn``, default 600 s), as the journal tail gives
its frames. A *warning* is the engine's ``warning`` event: a forecast of a node's threshold dropping under
``--warn`` (0 s when the threshold is met). For each real eviction (the recording's ``Evicted`` events and
pods) and each kernel kill (``OOMKilled`` containers, ``SystemOOM``) on a node: the lead is the time from the
first warning on that node since its previous eviction or kill (or the start) to it; none when there was no
such warning. A warning *came to nothing* when no eviction or kill followed on its node within ``--warn``
seconds. A recording without ground truth (the synthetic benchmark day) is scored against the engine's own
predicted evictions instead, and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SCENARIOS = (
    "container-limit",
    "disk-pressure",
    "init-container-memory",
    "jvm-spike",
    "k3d-operator-pod",
    "local-storage-limits",
    "no-system-reserved",
    "overcommit",
    "pid-pressure",
    "qos-contest",
    "sidecar-stress",
    "soft-grace",
)


def events_of(rec_dir: Path, warn: float) -> list[Any]:
    from live.engine import LiveEngine
    from live.tail import recorded_frames
    from recordings import format as fmt
    from recordings.reader import open_recording
    from recordings.writer import RecordingWriter

    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty"
        RecordingWriter(empty, fmt.Manifest(source="recorder")).finalize()
        engine = LiveEngine(empty, warn_seconds=warn)
        out = []
        for frame in recorded_frames(open_recording(rec_dir), chunk=10, interleave=True):
            out.extend(engine.feed([frame]))
        return out


def score(events: list[Any], warn: float) -> dict[str, Any]:
    truth = [e for e in events if e.kind in ("real-eviction", "kernel-kill")]
    basis = "real evictions and kernel kills"
    if not truth:
        truth = [e for e in events if e.kind == "predicted-eviction"]
        basis = "no ground truth: against the engine's predicted evictions"
    warnings = [e for e in events if e.kind == "warning"]
    leads: list[float | None] = []
    for e in sorted(truth, key=lambda e: e.time_us):
        before = [t.time_us for t in truth if t.node == e.node and t.time_us < e.time_us]
        since = max(before, default=-(1 << 62))
        first = min((w.time_us for w in warnings if w.node == e.node and since <= w.time_us <= e.time_us), default=None)
        leads.append(None if first is None else (e.time_us - first) / 1e6)
    horizon = int(warn * 1e6)
    nothing = sum(
        1
        for w in warnings
        if not any(t.node == w.node and w.time_us <= t.time_us <= w.time_us + horizon for t in truth)
    )
    return {"basis": basis, "events": len(truth), "leads": leads, "warnings": len(warnings), "nothing": nothing}


def _row(name: str, s: dict[str, Any]) -> str:
    leads = [x for x in s["leads"] if x is not None]
    missed = sum(1 for x in s["leads"] if x is None)
    median = sorted(leads)[len(leads) // 2] if leads else None
    lead = "—" if not leads else f"{min(leads):.0f} / {median:.0f} / {max(leads):.0f}"
    return f"| {name} | {s['events']} | {len(leads)} | {missed} | {lead} | {s['warnings']} | {s['nothing']} |" + (
        "" if s["basis"].startswith("real") else " (predicted)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rec", type=Path, action="append", default=[], help="a recording (repeatable)")
    parser.add_argument("--warn", type=float, default=600.0)
    parser.add_argument("--scenario", action="append", default=[], help="only these bundled scenarios")
    args = parser.parse_args()
    from replay.cli import main as cli

    print(
        "| recording | evictions + kills | warned before | not warned | lead s (min / median / max) | warnings |"
        " came to nothing |"
    )
    print("|---|---|---|---|---|---|---|")
    if not args.rec:
        with tempfile.TemporaryDirectory() as tmp:
            for name in args.scenario or SCENARIOS:
                where = Path(tmp) / name
                with contextlib.redirect_stdout(io.StringIO()):
                    assert cli(["scenario", "--sample", name, "-o", str(where)]) == 0
                print(_row(name, score(events_of(where, args.warn), args.warn)), flush=True)
    for rec in args.rec:
        print(_row(rec.name, score(events_of(rec, args.warn), args.warn)), flush=True)


if __name__ == "__main__":
    main()
