"""Every signal observation of a node's passes at once, from the recording's columns.

Mirrors replay/kubelet/signals.py (helpers.go: makeSignalObservations, helpers_linux.go:
makeMemoryAvailableSignalObservation) over polars columns instead of one Summary: uint64 values
become int64 with Go's two's-complement wrap (``reinterpret``), capacities of memory signals are
uint64 sums that wrap the same way, and a signal whose inputs are null has no observation. The
threshold columns follow api/types.go: GetThresholdQuantity (percentages as
``int64(float64(capacity) * float64(float32 percentage))``, truncated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from kube.signals import (
    SIGNALS,
)
from replay.kubelet.thresholds import OP_LESS_THAN, Threshold, ThresholdValue

SIGNAL_INDEX = {s: k for k, s in enumerate(SIGNALS)}

NODE_COLUMNS = (
    "tick",
    "memory_time",
    "memory_available_bytes",
    "memory_working_set_bytes",
    "fs_time",
    "fs_available_bytes",
    "fs_capacity_bytes",
    "fs_inodes_free",
    "fs_inodes",
    "imagefs_time",
    "imagefs_available_bytes",
    "imagefs_capacity_bytes",
    "imagefs_inodes_free",
    "imagefs_inodes",
    "containerfs_time",
    "containerfs_available_bytes",
    "containerfs_capacity_bytes",
    "containerfs_inodes_free",
    "containerfs_inodes",
    "rlimit_time",
    "rlimit_maxpid",
    "rlimit_curproc",
)
"""The node_stats columns the signals need (a column-pruned scan reads only these)."""
PODS_COLUMNS = ("tick", "container", "memory_time", "memory_available_bytes", "memory_working_set_bytes")
"""The system_container_stats columns of the ``pods`` container (allocatableMemory.available)."""


def _i64(name: str) -> pl.Expr:
    return pl.col(name).reinterpret(signed=True)


def _us(name: str) -> pl.Expr:
    return pl.col(name).dt.epoch("us")


def _obs(k: int, available: pl.Expr, capacity: pl.Expr, time: pl.Expr, present: pl.Expr) -> list[pl.Expr]:
    return [
        pl.when(present).then(available).otherwise(None).alias(f"a{k}"),
        pl.when(present).then(capacity).otherwise(None).alias(f"c{k}"),
        pl.when(present).then(time).otherwise(None).alias(f"t{k}"),
    ]


def _fs(k_bytes: int, k_inodes: int, prefix: str) -> list[pl.Expr]:
    avail, cap = f"{prefix}_available_bytes", f"{prefix}_capacity_bytes"
    free, total = f"{prefix}_inodes_free", f"{prefix}_inodes"
    time = _us(f"{prefix}_time")
    return [
        *_obs(k_bytes, _i64(avail), _i64(cap), time, pl.col(avail).is_not_null() & pl.col(cap).is_not_null()),
        *_obs(k_inodes, _i64(free), _i64(total), time, pl.col(free).is_not_null() & pl.col(total).is_not_null()),
    ]


def observations(node_rows: pl.DataFrame, pods_rows: pl.DataFrame, tick_times: pl.DataFrame) -> pl.DataFrame:
    """One row per pass: ``tick``, ``when`` (µs: the stats' sample time, else the tick time) and, per
    signal index k, ``a{k}``/``c{k}``/``t{k}`` (available, capacity, observation time in µs; null when
    the signal has no observation). ``node_rows`` hold one row per pass (in tick order),
    ``pods_rows`` the ``pods`` system container rows, ``tick_times`` (tick, time) of the passes.
    """
    pods = (
        pods_rows.sort("tick", "container")
        .unique(subset=["tick"], keep="first", maintain_order=True)
        .select(
            "tick",
            pl.col("memory_time").alias("p_time"),
            pl.col("memory_available_bytes").alias("p_avail"),
            pl.col("memory_working_set_bytes").alias("p_ws"),
        )
    )
    df = node_rows.join(pods, on="tick", how="left").join(tick_times, on="tick", how="left")
    mem_present = pl.col("memory_available_bytes").is_not_null() & pl.col("memory_working_set_bytes").is_not_null()
    pods_present = pl.col("p_avail").is_not_null() & pl.col("p_ws").is_not_null()
    pid_present = pl.col("rlimit_curproc").is_not_null() & pl.col("rlimit_maxpid").is_not_null()
    return df.select(
        "tick",
        pl.coalesce(pl.col("memory_time"), pl.col("fs_time"), pl.col("rlimit_time"), pl.col("_t"))
        .dt.epoch("us")
        .alias("when"),
        *_obs(
            0,
            _i64("memory_available_bytes"),
            (pl.col("memory_available_bytes") + pl.col("memory_working_set_bytes")).reinterpret(signed=True),
            _us("memory_time"),
            mem_present,
        ),
        *_obs(
            1,
            _i64("p_avail"),
            (pl.col("p_avail") + pl.col("p_ws")).reinterpret(signed=True),
            _us("p_time"),
            pods_present,
        ),
        *_fs(2, 3, "fs"),
        *_fs(4, 5, "imagefs"),
        *_fs(6, 7, "containerfs"),
        *_obs(
            8,
            pl.col("rlimit_maxpid") - pl.col("rlimit_curproc"),
            pl.col("rlimit_maxpid"),
            _us("rlimit_time"),
            pid_present,
        ),
    )


@dataclass(frozen=True)
class ThresholdPlan:
    """A threshold as numbers: its signal index and integer quantity or float32 fraction."""

    signal: int
    less_than: bool
    quantity: int | None
    percentage: float
    reclaim_quantity: int | None
    reclaim_percentage: float | None


def _value(v: ThresholdValue) -> tuple[int | None, float] | None:
    """(quantity, percentage), or None when the value is not an exact integer the loop can compare."""
    if v.quantity is None:
        return None, float(v.percentage)
    q = v.quantity.value
    if q != q.to_integral_value() or abs(q) >= 1 << 62:
        return None
    return int(q), 0.0


def plan_thresholds(thresholds: Sequence[Threshold]) -> list[ThresholdPlan] | None:
    """Numbers for each threshold; None when one of them is outside what the columns model exactly
    (a fractional or huge quantity, a min-reclaim percentage above 100 %)."""
    out = []
    for t in thresholds:
        if t.signal not in SIGNAL_INDEX:
            return None
        value = _value(t.value)
        if value is None:
            return None
        rq: int | None = None
        rp: float | None = None
        if t.min_reclaim is not None:
            reclaim = _value(t.min_reclaim)
            if reclaim is None or not 0 <= reclaim[1] <= 1:
                return None
            rq, rp = reclaim if reclaim[0] is not None else (None, reclaim[1])
        out.append(ThresholdPlan(SIGNAL_INDEX[t.signal], t.operator == OP_LESS_THAN, value[0], value[1], rq, rp))
    return out


def _quantity(quantity: int | None, percentage: float, capacity: pl.Expr) -> pl.Expr:
    if quantity is not None:
        return pl.lit(quantity, pl.Int64)
    return (capacity.cast(pl.Float64) * percentage).cast(pl.Int64)


def threshold_columns(obs: pl.DataFrame, plans: Sequence[ThresholdPlan]) -> pl.DataFrame:
    """Adds ``q{i}`` (the threshold's value at each pass, null without an observation) and the
    masks ``m0``/``m1`` (bit i: threshold i met without / with its minimum reclaim)."""
    exprs: list[pl.Expr] = []
    m0: pl.Expr = pl.lit(0, pl.UInt64)
    m1: pl.Expr = pl.lit(0, pl.UInt64)
    for i, p in enumerate(plans):
        avail, cap = pl.col(f"a{p.signal}"), pl.col(f"c{p.signal}")
        q = pl.when(avail.is_not_null()).then(_quantity(p.quantity, p.percentage, cap)).otherwise(None)
        exprs.append(q.alias(f"q{i}"))
        if not p.less_than:
            continue
        met = (q > avail).fill_null(False)
        with_reclaim = met
        if p.reclaim_quantity is not None or p.reclaim_percentage is not None:
            extra = _quantity(p.reclaim_quantity, p.reclaim_percentage or 0.0, cap)
            with_reclaim = ((q + extra) > avail).fill_null(False)
        bit = pl.lit(1 << i, pl.UInt64)
        m0 = m0 + pl.when(met).then(bit).otherwise(0)
        m1 = m1 + pl.when(with_reclaim).then(bit).otherwise(0)
    present = pl.lit(0, pl.UInt32)
    for k in range(len(SIGNALS)):
        present = present + pl.when(pl.col(f"a{k}").is_not_null()).then(pl.lit(1 << k, pl.UInt32)).otherwise(0)
    return obs.with_columns(*exprs, m0.alias("m0"), m1.alias("m1"), present.alias("present"))
