"""The precision table of recordings/PROMETHEUS.md (by hand, not collected by pytest): for bundled
scenarios, the evictions an import at a 10 s, 15 s and 30 s scrape interval predicts against the
scenario's own replay.

    .venv/bin/python tests/recordings/prometheus/precision_table.py [SCENARIO ...]

Each scenario is generated, written as OpenMetrics three times (one ``variant`` label per interval: a
scrape sees the recording's tick at or before it), backfilled into one real Prometheus, imported once
per interval (``--lookback`` one second under the interval, as for backfilled data) and replayed.
Matched: the same pod on the same node evicted; "same tick" and "later by ≤ interval" split those by
timing; missed/extra are the rest.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from prom_support import (  # noqa: E402
    Variant,
    backfill,
    openmetrics_from_recording,
    prometheus,
    write_side_files,
)

from recordings.reader import open_recording  # noqa: E402
from recordings.scenarios import load_bundled  # noqa: E402
from replay.scenario import run_scenario  # noqa: E402

INTERVALS = (10.0, 15.0, 30.0)
DEFAULT = ("sidecar-stress", "disk-pressure", "jvm-spike", "overcommit", "qos-contest", "soft-grace", "pid-pressure")


def _evictions(rec: Path) -> list[tuple[str, str, int]]:
    import orjson

    done = subprocess.run(
        [sys.executable, "-m", "replay.cli", "replay", str(rec), "--json"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return [(e["node"], e["pod"], e["tick"]) for e in orjson.loads(done.stdout)["evictions"]]


def row(name: str, work: Path) -> list[str]:
    rec = work / "rec"
    run_scenario(load_bundled(name), rec)
    expected = _evictions(rec)
    variants = tuple(Variant(extra=(("variant", f"s{i:g}"),), interval=i) for i in INTERVALS)
    side = openmetrics_from_recording(rec, work / "om.txt", variants=variants)
    backfill(work / "om.txt", work / "data")
    args = write_side_files(side, work)
    ticks = open_recording(rec).ticks()
    start, end = ticks[0].time.timestamp(), ticks[-1].time.timestamp()
    cells = [name, str(len(expected))]
    with prometheus(work / "data") as srv:
        for interval in INTERVALS:
            out = work / f"imp{interval:g}"
            done = subprocess.run(
                [sys.executable, "-m", "replay.cli", "import", "--prometheus", srv.url, "--from", f"{start}",
                 "--to", f"{end}", "--lookback", f"{interval - 1:g}s", "--selector", f'variant="s{interval:g}"',
                 "-o", str(out), *args],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                cells.append(f"import failed: {done.stderr.strip()[:80]}")
                continue
            got = _evictions(out)
            exp = {(n, p): t for n, p, t in expected}
            have = {(n, p): t for n, p, t in got}
            matched = exp.keys() & have.keys()
            same = sum(1 for k in matched if have[k] == exp[k])
            later = sum(1 for k in matched if 0 < (have[k] - exp[k]) * 10 <= interval)
            other = len(matched) - same - later
            missed, extra = len(exp.keys() - have.keys()), len(have.keys() - exp.keys())
            cell = f"{len(matched)}/{len(exp)} ({same} same tick, {later} ≤ {interval:g}s later"
            cell += f", {other} further off" if other else ""
            cell += f"; {missed} missed" if missed else ""
            cell += f"; {extra} extra" if extra else ""
            cells.append(cell + ")")
    return cells


def main() -> int:
    names = sys.argv[1:] or list(DEFAULT)
    print("| scenario | evictions | " + " | ".join(f"{i:g} s scrape" for i in INTERVALS) + " |")
    print("|---|---|" + "---|" * len(INTERVALS))
    for name in names:
        with tempfile.TemporaryDirectory(prefix="prom-precision-") as tmp:
            print("| " + " | ".join(row(name, Path(tmp))) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
