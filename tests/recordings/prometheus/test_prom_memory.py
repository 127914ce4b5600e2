"""An import's memory does not grow with the length of its range (issue 26 item 6).

Each window is fetched, converted, written as a part and dropped; the parts of each hour are merged as the
import goes, so the end of an import merges one hour, not every window of the range. Checked on a real
Prometheus holding the benchmark model at a small scale: the same window over 2 and over 8 windows leaves
the same Python objects behind (traced bytes, live polars frames and series, result series), and the
recording is one part per hour. Peak RSS at 100 nodes is the benchmark's (README, Record and import).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from prom_bench_model import T0, write_chunk
from prom_support import MISSING, PROMETHEUS, PROMTOOL, backfill, prometheus

from recordings.format import list_parts
from recordings.prometheus.build import PrometheusImport, import_prometheus
from recordings.prometheus.client import ClientOptions, Series
from recordings.reader import open_recording

NODES, PODS, HOURS = 2, 20, 2
WINDOW = 300.0
pytestmark = pytest.mark.skipif(PROMETHEUS is None or PROMTOOL is None, reason=MISSING)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("prom-memory")
    om = base / "model.om"
    write_chunk(om, 0, HOURS * 360, NODES, PODS)
    backfill(om, base / "data")
    with prometheus(base / "data") as srv:
        yield srv.url


@dataclass(frozen=True)
class Left:
    """What an import holds once every window is written (before the manifest is finished)."""

    traced: int  # bytes of Python allocations since the import started
    frames: int  # live polars DataFrames and Series
    series: int  # live query result series


def _held_after_windows(url: str, out: Path, windows: int) -> Left:
    spec = PrometheusImport(
        client=ClientOptions(url=url), start=T0, end=T0 + windows * WINDOW - 10, window=WINDOW, step=10.0
    )
    seen: list[Left] = []

    def progress(phase: str, done: int, _total: int) -> None:
        if phase == "finishing" and done == 0:
            gc.collect()
            live = gc.get_objects()
            seen.append(
                Left(
                    tracemalloc.get_traced_memory()[0],
                    sum(isinstance(o, (pl.DataFrame, pl.Series)) for o in live),
                    sum(isinstance(o, Series) for o in live),
                )
            )

    gc.collect()
    tracemalloc.start()
    try:
        import_prometheus(spec, out, progress=progress)
    finally:
        tracemalloc.stop()
    assert len(seen) == 1
    return seen[0]


def test_memory_does_not_grow_with_the_number_of_windows(server: str, tmp_path: Path) -> None:
    _held_after_windows(server, tmp_path / "warm", 2)  # imports, caches and pools of the first run
    short = _held_after_windows(server, tmp_path / "short", 2)
    long = _held_after_windows(server, tmp_path / "long", 8)
    # one window's answers and tables are ~1 MB of Python objects here: six more windows kept would show
    assert long.traced - short.traced < 256 << 10, (short, long)
    # a window's answers are a few hundred series and dozens of frames; what outlives the windows is the
    # probes' few (detection, the window's sizing), whatever the range
    assert long.frames <= short.frames + 4 and long.series <= short.series + 4, (short, long)
    assert open_recording(tmp_path / "long").count_rows()["ticks"] == 8 * 30


def test_window_parts_are_merged_hour_by_hour(server: str, tmp_path: Path) -> None:
    out = tmp_path / "rec"
    spec = PrometheusImport(client=ClientOptions(url=server), start=T0, end=T0 + HOURS * 3600 - 10, window=1200.0)
    import_prometheus(spec, out)
    parts = list_parts(out)
    assert len(parts) == HOURS, parts  # not one part per window (6): the end merges one hour, not the range
    rec = open_recording(out)
    assert rec.manifest.finalized and rec.count_rows()["ticks"] == HOURS * 360
    assert rec.verify()  # checksums of the merged parts
