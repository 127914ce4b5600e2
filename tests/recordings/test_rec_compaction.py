"""Final compaction streams: a recording whose parts are many times the compaction batch is
finalized into one sorted, checksummed part by a process whose peak RSS stays under the bound
FORMAT.md documents (§3 "Compaction"), not one that grows with the recording."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from rec_support import REPO, measured_env

from recordings import format as fmt
from recordings.format import Manifest
from recordings.reader import open_recording
from recordings.schema import ALL_SCHEMAS, SORT_KEYS
from recordings.writer import RecordingWriter, merge_table

T0 = 1_763_000_000_000_000
MIB = 1 << 20
# FORMAT.md §3: peak RSS of finalize <= COMPACT_BASE + 4 x the batch.
COMPACT_BASE = 256 * MIB


def _frame(name: str, ticks: range, nodes: int, pods: int) -> pl.DataFrame:
    """Rows of one table for ``ticks``: every column of the schema, values that change slowly
    (like real counters) so the parts compress like a real recording's."""
    per_node = pods if name not in ("node_stats", "ticks") else 1
    per_tick = nodes * per_node
    i = pl.int_range(0, len(ticks) * per_tick, dtype=pl.Int64)
    tick = pl.lit(ticks.start, pl.Int64) + i // per_tick
    node = (i // per_node) % nodes
    pod = i % per_node
    at = pl.from_epoch(pl.lit(T0) + tick * 10_000_000, time_unit="us").dt.replace_time_zone("UTC")
    special = {
        "tick": tick,
        "node": pl.format("node-{}", node),
        "pod": pod,
        "pod_uid": pl.format("uid-{}-{}", node, pod),
        "name": pl.format("pod-{}", pod),
        "ok": pl.lit(True),
        "error": pl.lit(None, pl.String),
    }
    exprs = []
    for k, (col, dtype) in enumerate(ALL_SCHEMAS[name].items()):
        if col in special:
            e = special[col]
        elif dtype == pl.String():
            e = pl.format("ns-{}", node)
        elif dtype == pl.Boolean():
            e = pl.lit(False)
        elif isinstance(dtype, pl.Datetime):
            e = at
        else:
            e = tick * 4093 + pod * 131 + k * 7919 + (i * 2654435761) % 1000003
        exprs.append(e.cast(dtype).alias(col))
    return pl.select(exprs)


def _write_parts(root: Path, parts: int, ticks_per_part: int, *, nodes: int = 4, pods: int = 50) -> None:
    w = RecordingWriter(root, Manifest(source="test"))
    for p in range(parts):
        ticks = range(p * ticks_per_part, (p + 1) * ticks_per_part)
        w.publish_part({name: _frame(name, ticks, nodes, pods) for name in ("ticks", "node_stats", "pod_stats")})
    w.close()  # not finalized: the child process finalizes it


FINALIZE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from recordings.format import Manifest
    from recordings.writer import RecordingWriter

    RecordingWriter(Path(sys.argv[1]), Manifest(), append=True).finalize()
    status = Path("/proc/self/status").read_text()
    print(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
    """
)


def _finalize_in_child(root: Path, batch: int) -> tuple[int, int, str]:
    """Finalize in a fresh process; (exit status, its peak RSS in bytes, stderr).

    The child reports its own VmHWM (peak RSS of its address space since exec): ``ru_maxrss``
    from ``RUSAGE_CHILDREN`` or ``wait4`` would not do, as Linux carries the parent's RSS at
    fork time into a child's ``ru_maxrss`` (the pytest process holds the test's frames)."""
    res = subprocess.run(
        [sys.executable, "-c", FINALIZE, str(root)],
        env={**measured_env(), "EVICTLENS_COMPACT_BATCH_BYTES": str(batch)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    peak = int(res.stdout.split()[-1]) * 1024 if res.returncode == 0 else 0
    return res.returncode, peak, res.stderr


def test_finalize_compacts_parts_four_times_the_batch_under_the_documented_memory_bound(tmp_path: Path) -> None:
    root = tmp_path / "rec"
    batch = 4 * MIB
    _write_parts(root, parts=8, ticks_per_part=500)
    before = fmt.list_parts(root)
    parquet = sum(f.stat().st_size for _f, _l, p in before for f in p.glob("*.parquet"))
    assert parquet > 4 * batch, parquet  # the parts exceed the compaction batch 4x (compressed)
    rows = {name: pl.read_parquet(root / "parts" / "*" / f"{name}.parquet") for name in ("ticks", "pod_stats")}

    code, peak, err = _finalize_in_child(root, batch)

    assert code == 0, err
    bound = COMPACT_BASE + 4 * batch
    assert peak < bound, f"finalize peaked at {peak / MIB:.0f} MiB, documented bound {bound / MIB:.0f} MiB"
    parts = fmt.list_parts(root)
    assert len(parts) == 1 and parts[0][:2] == (before[0][0], before[-1][1])
    rec = open_recording(root)  # checksums of the compacted part are checked on open
    assert rec.manifest.finalized and rec.manifest.counts["ticks"] == 4000
    for name, expected in rows.items():
        got = pl.read_parquet(parts[0][2] / f"{name}.parquet")
        keys = list(SORT_KEYS[name])
        assert got.equals(got.sort(keys, nulls_last=True, maintain_order=True)), f"{name} not sorted"
        assert got.equals(expected.sort(keys, nulls_last=True, maintain_order=True)), f"{name} rows differ"
    assert not list(parts[0][2].glob("*.chunks"))
    assert sorted(os.listdir(root)) == ["journal", "manifest.json", "parts"]  # the lock file went with the writer


@pytest.mark.parametrize("batch", [1, 2000, 1 << 40], ids=["row-groups", "several-batches", "one-batch"])
def test_merge_table_gives_the_same_sorted_rows_whatever_the_batch(tmp_path: Path, batch: int) -> None:
    """Several parts of objects (the table keyed by kind then time) with nulls and equal keys:
    the batched merge writes exactly the in-memory sort, however the batches are cut."""
    frames = []
    for p in range(3):
        n = 300
        i = pl.int_range(0, n, dtype=pl.Int64)
        df = pl.select(
            observed=pl.from_epoch(pl.lit(T0) + (i % 37) * 1000 + p, time_unit="us").dt.replace_time_zone("UTC"),
            kind=pl.when(i % 5 == 0).then(pl.lit("event")).otherwise(pl.lit("pod")),
            node=pl.when(i % 7 == 0).then(pl.lit(None, pl.String)).otherwise(pl.format("n{}", i % 3)),
            namespace=pl.lit("d"),
            name=pl.format("p{}-{}", p, i),
            uid=pl.format("u{}", i),
            resource_version=pl.lit(None, pl.String),
            deleted=pl.lit(False),
            body=pl.format("{}", i * 12345),
        ).cast(dict(ALL_SCHEMAS["objects"]))  # type: ignore[arg-type]
        frames.append(df.sort(list(SORT_KEYS["objects"]), nulls_last=True, maintain_order=True))
    files = []
    for k, df in enumerate(frames):
        files.append(tmp_path / f"{k}.parquet")
        df.write_parquet(files[-1])
    out = tmp_path / "merged.parquet"
    merge_table("objects", files, out, batch_bytes=batch)
    expected = pl.concat(frames).sort(list(SORT_KEYS["objects"]), nulls_last=True, maintain_order=True)
    assert pl.read_parquet(out).equals(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.parquet", "1.parquet", "2.parquet", "merged.parquet"]
