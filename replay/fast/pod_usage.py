"""``--counterfactual`` on the fast path: the evicted pods' recorded usage, per tick, off the node's columns.

The per-tick reference rewrites each later summary with :func:`replay.counterfactual.remove_pods`. Here
the same removal is done on the columns the passes are computed from: an evicted pod's rows of
``pod_stats`` / ``container_stats`` / ``volume_stats`` (from :class:`NodeUsage`, the node's rows read once
for all its evictions and requests) are summed per tick as :func:`~replay.counterfactual.pod_footprint`
sums one stats entry; the totals of
every pod evicted so far adjust the node's signal inputs (``node_stats`` and the ``pods`` system
container) exactly as ``remove_pods`` adjusts the summary, in 128-bit integers so that a sum past
2^64 - 1 is seen (the reference's summary then no longer parses: the ticks :func:`adjust` returns). The
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


_ENTRY_COLUMNS = ("tick", "pod", "memory_working_set_bytes", "memory_usage_bytes", "memory_rss_bytes", "process_count")
_CONTAINER_COLUMNS = (
    "tick",
    "pod",
    "memory_working_set_bytes",
    "memory_usage_bytes",
    "memory_rss_bytes",
    "rootfs_used_bytes",
    "rootfs_inodes_used",
    "logs_used_bytes",
    "logs_inodes_used",
)
_VOLUME_COLUMNS = ("tick", "pod", "name", "used_bytes", "inodes_used")
_ENTRY_SCHEMA = pl.Schema(
    {
        "tick": pl.UInt32(),
        "pod": pl.UInt32(),
        **dict.fromkeys(("ws", "usage", "rss", "procs", "rb", "ri", "lb", "li"), I128()),
    }
)


def _collect_tables(rec: Recording, queries: dict[str, pl.LazyFrame]) -> dict[str, pl.DataFrame]:
    try:  # the tables at once (each is a scan of every part)
        return dict(zip(queries, pl.collect_all(list(queries.values())), strict=True))
    except (OSError, pl.exceptions.PolarsError):  # the reader's one-line error, naming the table
        return {name: rec._collect(name, query) for name, query in queries.items()}


def _entries(entries: pl.DataFrame, containers: pl.DataFrame) -> pl.DataFrame:
    """Per stats entry (tick, pod) of one pod (_ENTRY_SCHEMA): its memory as counterfactual._memory reads
    it (the pod cgroup's, else the containers' sum), processes, writable layers and logs."""
    summed = containers.group_by("tick", "pod").agg(
        _i("memory_working_set_bytes").sum().alias("c_ws"),
        _i("memory_usage_bytes").sum().alias("c_usage"),
        _i("memory_rss_bytes").sum().alias("c_rss"),
        _i("rootfs_used_bytes").sum().alias("rb"),
        _i("rootfs_inodes_used").sum().alias("ri"),
        _i("logs_used_bytes").sum().alias("lb"),
        _i("logs_inodes_used").sum().alias("li"),
    )
    pod_level = pl.col("memory_working_set_bytes").is_not_null()

    def zero(name: str) -> pl.Expr:
        return pl.col(name).fill_null(pl.lit(0, I128))

    return (
        entries.select(*_ENTRY_COLUMNS)
        .join(summed, on=["tick", "pod"], how="left")
        .select(
            "tick",
            "pod",
            pl.when(pod_level).then(_i("memory_working_set_bytes")).otherwise(zero("c_ws")).alias("ws"),
            pl.when(pod_level).then(_i("memory_usage_bytes").fill_null(0)).otherwise(zero("c_usage")).alias("usage"),
            pl.when(pod_level).then(_i("memory_rss_bytes").fill_null(0)).otherwise(zero("c_rss")).alias("rss"),
            _i("process_count").fill_null(0).alias("procs"),
            zero("rb"),
            zero("ri"),
            zero("lb"),
            zero("li"),
        )
        .cast(dict(_ENTRY_SCHEMA))  # type: ignore[arg-type]
    )


def _by_tick(entries: pl.DataFrame, volumes: pl.DataFrame, emptydirs: Collection[str]) -> pl.DataFrame:
    """One pod's removal per tick (USAGE_SCHEMA) from its entries (:func:`_entries`) and volume rows: each
    entry as counterfactual.pod_footprint reads it, its disk-backed emptyDirs (``emptydirs``) with its logs."""
    if entries.is_empty():
        return empty_usage()
    names = list(emptydirs)
    if names and not volumes.is_empty():
        summed = (
            volumes.filter(pl.col("name").cast(pl.String).is_in(names))
            .group_by("tick", "pod")
            .agg(_i("used_bytes").sum().alias("vb"), _i("inodes_used").sum().alias("vi"))
        )
        entries = entries.join(summed, on=["tick", "pod"], how="left").with_columns(
            pl.col("vb").fill_null(pl.lit(0, I128)), pl.col("vi").fill_null(pl.lit(0, I128))
        )
    else:
        entries = entries.with_columns(pl.lit(0, I128).alias("vb"), pl.lit(0, I128).alias("vi"))
    return (
        entries.group_by("tick")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("ws").sum(),
            pl.col("usage").sum(),
            pl.col("rss").sum(),
            (pl.col("lb") + pl.col("vb")).sum().alias("nb"),
            (pl.col("li") + pl.col("vi")).sum().alias("ni"),
            pl.col("rb").sum(),
            pl.col("ri").sum(),
            pl.col("procs").sum(),
        )
        .select(*USAGE_SCHEMA.names())
        .cast(dict(USAGE_SCHEMA))  # type: ignore[arg-type]
        .sort("tick")
    )


def read_usage(rec: Recording, node: str, uid: str, after: int, emptydirs: Collection[str]) -> pl.DataFrame:
    """One pod's removal at every tick after ``after`` (USAGE_SCHEMA): each of its stats entries as
    counterfactual.pod_footprint and _memory read it from the decoded summary. One pod's rows only: a node
    replayed under several evictions reads them through :class:`NodeUsage` instead."""
    where = (pl.col("node") == node) & (pl.col("pod_uid") == uid) & (pl.col("tick") > after)
    tables = _collect_tables(
        rec,
        {
            POD_STATS.name: rec.scan(POD_STATS.name).filter(where).select(*_ENTRY_COLUMNS),
            CONTAINER_STATS.name: rec.scan(CONTAINER_STATS.name).filter(where).select(*_CONTAINER_COLUMNS),
            VOLUME_STATS.name: rec.scan(VOLUME_STATS.name).filter(where).select(*_VOLUME_COLUMNS),
        },
    )
    return _by_tick(
        _entries(tables[POD_STATS.name], tables[CONTAINER_STATS.name]), tables[VOLUME_STATS.name], emptydirs
    )


class NodeUsage:
    """Every pod's stats rows of one node in a tick range ``[lo, hi)`` (the columns a removal sums), read at
    the first removal any of the node's requests asks for, then each evicted pod's removal from memory.

    A read of one pod's rows costs about as much as a read of the whole node's (a scan of every part, its
    row groups found by the node): the counterfactual paid it per evicted pod (~0.1 s). Here the node's
    rows are read once for all of its evictions and requests (pod UIDs and volume names as categoricals,
    about 0.2 GB per node of a 110-pod day, held while the node's chunk runs), each pod's removal summed per
    tick once (:func:`_entries`, :func:`_by_tick`; kept in int64 where it fits, under 1 MB a pod) and each
    eviction's removal is its ticks after the eviction's. The rows read start after the first removal's
    tick; a removal asked for earlier reads the whole range (once)."""

    def __init__(self, rec: Recording, node: str, lo: int | None = None, hi: int | None = None) -> None:
        self.rec, self.node, self.lo, self.hi = rec, node, lo, hi
        self._after: int | None = None
        """Rows after this tick are held (None: nothing read yet; -1: the whole range)."""
        self._tables: dict[str, pl.DataFrame] = {}
        self._removals: dict[tuple[str, frozenset[str]], pl.DataFrame] = {}
        """(UID, emptyDir names) → the pod's removal at every tick held."""
        self.reads = 0
        """How many times the node's rows were read (tests)."""

    def _load(self, after: int) -> None:
        where = pl.col("node") == self.node
        if self.lo is not None:
            where = where & (pl.col("tick") >= self.lo)
        if self.hi is not None:
            where = where & (pl.col("tick") < self.hi)
        if after >= 0:
            where = where & (pl.col("tick") > after)
        self._tables, self._removals = {}, {}  # an earlier read goes before this one comes
        span = None if self.lo is None or self.hi is None else (max(self.lo, after + 1), self.hi - 1)
        uid = pl.col("pod_uid").cast(pl.Categorical)

        def scan(table: str, columns: Sequence[str]) -> pl.LazyFrame:
            return self.rec.scan(table, span).filter(where).select(uid, *columns)

        self._tables = _collect_tables(
            self.rec,
            {
                POD_STATS.name: scan(POD_STATS.name, _ENTRY_COLUMNS),
                CONTAINER_STATS.name: scan(CONTAINER_STATS.name, _CONTAINER_COLUMNS),
                VOLUME_STATS.name: scan(VOLUME_STATS.name, _VOLUME_COLUMNS).with_columns(
                    pl.col("name").cast(pl.Categorical)
                ),
            },
        )
        self._after = after
        self.reads += 1

    def usage(self, uid: str, after: int, emptydirs: Collection[str]) -> pl.DataFrame:
        """:func:`read_usage` of one pod of this node, restricted to the range's ticks."""
        if self._after is None:
            self._load(after)
        elif after < self._after:
            self._load(-1)
        key = (uid, frozenset(emptydirs))
        removal = self._removals.get(key)
        if removal is None:
            mine = pl.col("pod_uid") == uid
            pods, containers, volumes = (
                self._tables[t] for t in (POD_STATS.name, CONTAINER_STATS.name, VOLUME_STATS.name)
            )
            removal = _by_tick(_entries(pods.filter(mine), containers.filter(mine)), volumes.filter(mine), emptydirs)
            amounts = [pl.col(a) for a in AMOUNTS]
            if removal.height and all(
                v < 1 << 63 for v in removal.select(pl.max_horizontal(a.max() for a in amounts)).row(0)
            ):
                removal = removal.with_columns(a.cast(pl.Int64) for a in amounts)  # exact, in half the memory
            self._removals[key] = removal
        return removal.filter(pl.col("tick") > after).cast(dict(USAGE_SCHEMA))  # type: ignore[arg-type]


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
