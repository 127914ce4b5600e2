"""``--counterfactual`` on the fast path: the evicted pods' recorded usage, per tick, off the node's columns.

The per-tick reference rewrites each later summary with :func:`replay.counterfactual.remove_pods`. Here
the same removal is done on the columns the passes are computed from: one evicted pod's rows are read
from ``pod_stats`` / ``container_stats`` / ``volume_stats`` (node, UID and ticks pushed into the scans)
and summed per tick as :func:`~replay.counterfactual.pod_footprint` sums one stats entry; the totals of
every pod evicted so far adjust the node's signal inputs (``node_stats`` and the ``pods`` system
container) exactly as ``remove_pods`` adjusts the summary, in 128-bit integers so that a sum past
2^64 - 1 is seen (the reference's summary then no longer parses: :func:`overflow_ticks`). The
delegated passes get whole summaries rewritten by ``remove_pods`` itself (:class:`CounterfactualSummary`).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import polars as pl

from recordings.reader import Recording
from recordings.schema import CONTAINER_STATS, POD_STATS, VOLUME_STATS
from replay.counterfactual import (
    LAYERS,
    NODEFS,
    free_node_disk,
    free_node_memory,
    fs_shares,
    layers_on_nodefs,
    remove_pods,
)
from replay.fast.columns import SummaryAt
from replay.kubelet.api import Summary, parse_summary
from replay.kubelet.manager import FsTopology

I128 = pl.Int128
U64_MAX = (1 << 64) - 1
AMOUNTS = ("ws", "usage", "rss", "nb", "ni", "rb", "ri", "procs")
"""Per tick, summed over the removed entries: memory (working set, usage, rss), logs + disk emptyDirs
(bytes, inodes), writable layers (bytes, inodes), processes; ``n``: how many entries."""
USAGE_SCHEMA = pl.Schema({"tick": pl.UInt32(), "n": pl.Int64(), **dict.fromkeys(AMOUNTS, I128())})
_PREFIX = {"fs": "fs", "imageFs": "imagefs", "containerFs": "containerfs"}


def empty_usage() -> pl.DataFrame:
    return pl.DataFrame(schema=USAGE_SCHEMA)


def _i(name: str) -> pl.Expr:
    return pl.col(name).cast(I128)


def read_usage(rec: Recording, node: str, uid: str, after: int, emptydirs: Collection[str]) -> pl.DataFrame:
    """One pod's removal at every tick after ``after`` (USAGE_SCHEMA): each of its stats entries as
    counterfactual.pod_footprint and _memory read it from the decoded summary."""
    where = (pl.col("node") == node) & (pl.col("pod_uid") == uid) & (pl.col("tick") > after)
    queries: dict[str, pl.LazyFrame] = {
        POD_STATS.name: rec.scan(POD_STATS.name)
        .filter(where)
        .select("tick", "pod", "memory_working_set_bytes", "memory_usage_bytes", "memory_rss_bytes", "process_count"),
        CONTAINER_STATS.name: rec.scan(CONTAINER_STATS.name)
        .filter(where)
        .group_by("tick", "pod")
        .agg(
            _i("memory_working_set_bytes").sum().alias("c_ws"),
            _i("memory_usage_bytes").sum().alias("c_usage"),
            _i("memory_rss_bytes").sum().alias("c_rss"),
            _i("rootfs_used_bytes").sum().alias("rb"),
            _i("rootfs_inodes_used").sum().alias("ri"),
            _i("logs_used_bytes").sum().alias("lb"),
            _i("logs_inodes_used").sum().alias("li"),
        ),
    }
    if emptydirs:
        queries[VOLUME_STATS.name] = (
            rec.scan(VOLUME_STATS.name)
            .filter(where & pl.col("name").is_in(list(emptydirs)))
            .group_by("tick", "pod")
            .agg(_i("used_bytes").sum().alias("vb"), _i("inodes_used").sum().alias("vi"))
        )
    try:  # the tables at once (each is a scan of every part)
        frames = dict(zip(queries, pl.collect_all(list(queries.values())), strict=True))
    except (OSError, pl.exceptions.PolarsError):  # the reader's one-line error, naming the table
        frames = {name: rec._collect(name, query) for name, query in queries.items()}
    entries, containers = frames[POD_STATS.name], frames[CONTAINER_STATS.name]
    if entries.is_empty():
        return empty_usage()
    volumes = frames.get(
        VOLUME_STATS.name, pl.DataFrame(schema={"tick": pl.UInt32, "pod": pl.UInt32, "vb": I128, "vi": I128})
    )
    pod_level = pl.col("memory_working_set_bytes").is_not_null()  # _memory: the pod cgroup's, else the containers'

    def zero(name: str) -> pl.Expr:
        return pl.col(name).fill_null(pl.lit(0, I128))

    per_entry = entries.join(containers, on=["tick", "pod"], how="left").join(volumes, on=["tick", "pod"], how="left")
    return (
        per_entry.group_by("tick")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.when(pod_level).then(_i("memory_working_set_bytes")).otherwise(zero("c_ws")).sum().alias("ws"),
            pl.when(pod_level)
            .then(_i("memory_usage_bytes").fill_null(0))
            .otherwise(zero("c_usage"))
            .sum()
            .alias("usage"),
            pl.when(pod_level).then(_i("memory_rss_bytes").fill_null(0)).otherwise(zero("c_rss")).sum().alias("rss"),
            (zero("lb") + zero("vb")).sum().alias("nb"),
            (zero("li") + zero("vi")).sum().alias("ni"),
            zero("rb").sum().alias("rb"),
            zero("ri").sum().alias("ri"),
            _i("process_count").fill_null(0).sum().alias("procs"),
        )
        .select(*USAGE_SCHEMA.names())
        .cast(dict(USAGE_SCHEMA))  # type: ignore[arg-type]
        .sort("tick")
    )


def add_usage(total: pl.DataFrame, more: pl.DataFrame) -> pl.DataFrame:
    """Two removals at once (several evicted pods' entries in the same summary)."""
    if more.is_empty():
        return total
    if total.is_empty():
        return more
    return (
        pl.concat([total, more])
        .group_by("tick")
        .agg(pl.col("n").sum(), *(pl.col(a).sum() for a in AMOUNTS))
        .sort("tick")
    )


def _minus(value: pl.Expr, amount: pl.Expr) -> pl.Expr:
    """``max(0, value - amount)``; null stays null."""
    out = value - amount
    return pl.when(out < 0).then(pl.lit(0, I128)).otherwise(out)


def _at_most(value: pl.Expr, bound: pl.Expr) -> pl.Expr:
    """``min(value, bound)`` when the bound is reported (not null)."""
    return pl.when(bound.is_not_null() & (bound < value)).then(bound).otherwise(value)


def _fs_exprs(prefix: str, nbytes: pl.Expr, inodes: pl.Expr) -> dict[str, pl.Expr]:
    """counterfactual._free_fs over one filesystem's columns."""
    avail, cap = f"{prefix}_available_bytes", f"{prefix}_capacity_bytes"
    free, total = f"{prefix}_inodes_free", f"{prefix}_inodes"
    freed_inodes = _at_most(_i(free) + inodes, _i(total))
    return {
        avail: _at_most(_i(avail) + nbytes, _i(cap)),
        free: pl.when(_i(free) < pl.lit(1 << 63, I128)).then(freed_inodes).otherwise(_i(free)),
    }


def adjust(
    node_rows: pl.DataFrame, pods_rows: pl.DataFrame, removed: pl.DataFrame, topology: FsTopology
) -> tuple[pl.DataFrame, pl.DataFrame, list[int]]:
    """The signal inputs (signals.NODE_COLUMNS, PODS_COLUMNS rows) with ``removed`` taken off at its ticks,
    as remove_pods takes it off a summary with a removed entry; and the ticks where a value no longer fits
    a uint64 (the rewritten summary does not parse there)."""
    if removed.is_empty():
        return node_rows, pods_rows, []
    on = pl.col("n").is_not_null()
    ws = pl.col("ws")
    nodefs_b = pl.col("nb") + (pl.col("rb") if layers_on_nodefs(topology) else pl.lit(0, I128))
    nodefs_i = pl.col("ni") + (pl.col("ri") if layers_on_nodefs(topology) else pl.lit(0, I128))
    amounts = {NODEFS: (nodefs_b, nodefs_i), LAYERS: (pl.col("rb"), pl.col("ri"))}
    node_new: dict[str, pl.Expr] = {
        "memory_available_bytes": _i("memory_available_bytes") + ws,
        "memory_working_set_bytes": _minus(_i("memory_working_set_bytes"), ws),
    }
    for name, share in fs_shares(topology).items():
        node_new |= _fs_exprs(_PREFIX[name], *amounts[share])
    pods_new: dict[str, pl.Expr] = {
        "memory_available_bytes": _i("memory_available_bytes") + ws,
        "memory_working_set_bytes": _minus(_i("memory_working_set_bytes"), ws),
    }
    node_df = node_rows.join(removed, on="tick", how="left", maintain_order="left").with_columns(
        *(pl.when(on).then(e).otherwise(_i(c)).alias(c) for c, e in node_new.items()),
        pl.when(on)
        .then(_minus(_i("rlimit_curproc"), pl.col("procs")))
        .otherwise(_i("rlimit_curproc"))
        .cast(pl.Int64)
        .alias("rlimit_curproc"),
    )
    pods_df = pods_rows.join(removed, on="tick", how="left", maintain_order="left").with_columns(
        *(pl.when(on).then(e).otherwise(_i(c)).alias(c) for c, e in pods_new.items())
    )
    too_big = pl.lit(U64_MAX, I128)
    over = set(node_df.filter(pl.any_horizontal(*(pl.col(c) > too_big for c in node_new)))["tick"].to_list())
    over |= set(pods_df.filter(pl.any_horizontal(*(pl.col(c) > too_big for c in pods_new)))["tick"].to_list())

    def back(df: pl.DataFrame, columns: Sequence[str], like: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(pl.col(c).cast(like.schema[c], strict=False) for c in columns).select(like.columns)

    return (
        back(node_df, list(node_new), node_rows),
        back(pods_df, list(pods_new), pods_rows),
        sorted(int(t) for t in over),
    )


def removed_entries(removed: pl.DataFrame, ticks: Sequence[int]) -> int:
    """How many stats entries the removal took off the summaries of these ticks (counterfactual_removed)."""
    if removed.is_empty() or not ticks:
        return 0
    found = removed.filter(pl.col("tick").is_in(list(ticks)))["n"].sum()
    return int(found or 0)


def totals_at(removed: pl.DataFrame, tick: int) -> dict[str, int] | None:
    """The removal at one tick (AMOUNTS as Python ints), None when no removed pod has an entry there."""
    found = removed.filter(pl.col("tick") == tick)
    if found.is_empty():
        return None
    row = found.row(0, named=True)
    return {a: int(row[a]) for a in AMOUNTS}


class CounterfactualSummary(SummaryAt):
    """A recorded summary with the evicted pods removed (what the reference's NodeRun.passes parses): its node
    part by remove_pods' node-side functions with the tick's totals; whole, that node part with the recorded
    parse's pods less the removed ones (the recording's parse, shared by the variants) — or, for a summary
    read on its own (a mapping), remove_pods itself."""

    def __init__(
        self,
        recorded: SummaryAt | Mapping[str, Any],
        tick: int,
        evicted: Collection[str],
        emptydirs: Mapping[str, Collection[str]],
        topology: FsTopology,
        totals: dict[str, int] | None,
    ) -> None:
        self.recorded, self.tick = recorded, tick
        self.evicted, self.emptydirs, self.topology, self.totals = evicted, emptydirs, topology, totals
        self._node: Summary | None = None

    def whole(self) -> dict[str, Any]:
        recorded = dict(self.recorded) if isinstance(self.recorded, Mapping) else self.recorded.whole()
        if not self.evicted:
            return recorded
        out, _freed = remove_pods(recorded, self.evicted, self.topology, emptydir_volumes=self.emptydirs)
        return out

    def node_part(self) -> dict[str, Any]:
        if isinstance(self.recorded, Mapping):
            return {"node": self.whole().get("node"), "pods": []}
        out = copy.deepcopy(self.recorded.node_part())
        if self.totals is not None:
            node = out.setdefault("node", {})
            t = self.totals
            free_node_memory(node, t["ws"], t["usage"], t["rss"])
            free_node_disk(node, t["nb"], t["ni"], t["rb"], t["ri"], t["procs"], self.topology)
        return out

    def parsed(self, *, whole: bool, source: str) -> Summary:
        if isinstance(self.recorded, Mapping) or "" in self.evicted:  # "": remove_pods keeps stats without a UID
            return parse_summary(self.whole() if whole else self.node_part(), source=source)
        if self._node is None:
            self._node = parse_summary(self.node_part(), source=source)
        if not whole:
            return self._node
        pods = self.recorded.parsed(whole=True, source=source).pods
        return Summary(node=self._node.node, pods=tuple(p for p in pods if p.pod_ref.uid not in self.evicted))
