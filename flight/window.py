"""An incident's window: one node's part of a recording between two times, written as a recording of its own.

Why one node: an incident is one node's eviction or kill, and everything the engine reads to explain it is that
node's (its summaries, pods, node object, ``/configz``, its ground truth), so the window's size does not grow with
the cluster. The objects in force when the window opens come along (the last version of each pod, node and
``/configz`` observed before it), so the window replays on its own: ``evictlens replay``/``explain``/``tui`` on it
see the same pods at each pass as on the whole recording. Ticks keep their numbers (``explain --tick K`` names the
same tick in both).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl

from recordings.format import Manifest
from recordings.reader import Recording
from recordings.schema import SERIES
from recordings.writer import RecordingWriter

TIMED = ("raw", "evictions")  # tables kept by their ``observed`` time inside the window


def _us(col: str) -> pl.Expr:
    return pl.col(col).dt.epoch("us")


def cut_window(rec: Recording, dest: Path, node: str, start_us: int, end_us: int, *, note: str) -> int:
    """Write ``node``'s data between ``start_us`` and ``end_us`` (inclusive, µs) as a finalized recording at
    ``dest`` (which must not exist); returns the number of ticks it holds (0: nothing written)."""
    ticks = rec.scan("ticks").filter((pl.col("node") == node) & _us("time").is_between(start_us, end_us)).collect()
    if ticks.is_empty():
        return 0
    lo, hi = int(ticks["tick"].min()), int(ticks["tick"].max())  # type: ignore[arg-type]
    tables: dict[str, pl.DataFrame] = {"ticks": ticks}
    for table in SERIES:
        tables[table.name] = (
            rec.scan(table.name, ticks=(lo, hi))
            .filter((pl.col("node") == node) & pl.col("tick").is_between(lo, hi))
            .collect()
        )
    for name in TIMED:
        tables[name] = (
            rec.scan(name).filter((pl.col("node") == node) & _us("observed").is_between(start_us, end_us)).collect()
        )
    tables["objects"] = _objects(rec, node, start_us, end_us)
    tables["kernel_events"] = _kernel_events(rec, node, start_us, end_us)
    versions = {k: v for k, v in rec.manifest.kubelet_versions.items() if k == node}
    version = _kubelet_version(tables["objects"], node)  # a live manifest has them only from its last fold on
    if version:
        versions[node] = version
    manifest = dataclasses.replace(
        rec.manifest,
        kubelet_versions=versions,
        start_time=None,
        end_time=None,
        finalized=False,
        counts={},
        notes=[*rec.manifest.notes, note],
        options=dict(rec.manifest.options),
    )
    writer = RecordingWriter(dest, manifest)
    try:
        writer.publish_part({k: v for k, v in tables.items() if v.height})
        writer.finalize()
    except BaseException:
        writer.close_after_failure()
        raise
    return int(ticks["tick"].n_unique())


def _objects(rec: Recording, node: str, start_us: int, end_us: int) -> pl.DataFrame:
    """The node's object versions observed in the window, plus the last version of each observed before it."""
    mine = (pl.col("node") == node) | ((pl.col("kind") == "node") & (pl.col("name") == node))
    df = rec.scan("objects").filter(mine & (_us("observed") <= end_us)).collect()
    key = pl.coalesce("uid", pl.col("namespace").fill_null("") + "/" + pl.col("name").fill_null(""))
    df = df.with_columns(_key=pl.col("kind") + "|" + key)
    before = df.filter(_us("observed") < start_us).sort("observed").group_by("_key").last()
    inside = df.filter(_us("observed") >= start_us)
    return pl.concat([before.select(inside.columns), inside]).drop("_key")


def _kubelet_version(objects: pl.DataFrame, node: str) -> str | None:
    """The kubeletVersion of the node object's last version in the window (what the writer notes on observe)."""
    import orjson

    rows = objects.filter((pl.col("kind") == "node") & (pl.col("name") == node)).sort("observed")
    if rows.is_empty():
        return None
    body = orjson.loads(rows["body"][-1])
    version = ((body.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")
    return version if isinstance(version, str) and version else None


def _kernel_events(rec: Recording, node: str, start_us: int, end_us: int) -> pl.DataFrame:
    """The node's kernel kills and Ready transitions in the window, plus its Ready state when it opens."""
    df = rec.scan("kernel_events").filter((pl.col("node") == node) & (_us("observed") <= end_us)).collect()
    ready = df.filter((pl.col("kind") == "NodeReady") & (_us("observed") < start_us)).sort("observed").tail(1)
    return pl.concat([ready, df.filter(_us("observed") >= start_us)])


def window_manifest(path: Path) -> Manifest:
    """The manifest a cut wrote (for tests and the report)."""
    return Manifest.from_json((path / "manifest.json").read_bytes(), source=str(path))
