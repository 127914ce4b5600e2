"""``evictlens import --prometheus``: Prometheus history → a recording, one time window at a time.

Why windows: memory must be bounded by a window (sized by :mod:`.budget`), not by the range asked. Each
window runs every query of :mod:`.queries` as a range query on the step grid, turns the results into
whole tables (the series tables, ticks) with polars and publishes them as one part through
:meth:`RecordingWriter.publish_part` — as the benchmark generator does — while pods and nodes (from
kube-state-metrics) go through ``observe`` whenever they change. The manifest says ``source:
"prometheus"`` and carries ``notes``: what the source could not give (a missing series per signal,
scrape interval against the kubelet's 10 s loop, staleness gaps).

On any failure or Ctrl-C the directory this command created is removed: nothing half-written stays.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import polars as pl

from kube.errors import InputError, RecordingError

from ..format import Manifest, RecordingBusyError, list_parts, remove_tree
from ..schema import ALL_SCHEMAS, TIME
from ..summary_codec import format_time
from ..writer import RecordingWriter
from .budget import DEFAULT_BUDGET, choose_window, measure
from .client import Block, ClientOptions, Pending, PrometheusClient, PrometheusError
from .detect import discover, ksm_labels
from .interval import Intervals, family_queries, interval_notes
from .labels import Conventions
from .nonfinite import NonFinite
from .queries import Builder, Query, ksm_range_queries, ksm_static_queries, node_queries, pod_queries, time_queries

Progress = Callable[[str, int, int], None]
SECOND_US = 1_000_000
BUILTIN_PRIORITIES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
_UID_NS = uuid.UUID("6f1c1e0a-4d7e-4a52-9f0e-5b3f7d0c2a11")
ROLLUP_SECONDS = 3600.0
"""Window parts are merged into one part per this much of the range (a day: 24 parts)."""
BATCH_ROWS = 1_000_000
"""Pod and container samples assembled at a time (a batch of nodes): bounds the joins' memory."""
MERGE_BATCH_BYTES = 32 << 20
"""Rows a merge sorts at a time (estimated decoded bytes; the writer's default is 64 MiB): a merge's peak
is a few times this, and it must fit the budget next to the import's state."""
GAP = "prometheus: no node-level sample at this step (a scrape failure or a staleness gap)"


@dataclass
class PrometheusImport:
    """Everything one import needs (credentials stay in ``client``, never in the recording)."""

    client: ClientOptions
    start: float  # seconds since the epoch
    end: float
    step: float = 10.0
    conventions: Conventions = field(default_factory=Conventions)
    lookback: str | None = None
    window: float | None = None  # None: the largest that fits memory_budget (budget.choose_window)
    memory_budget: int = DEFAULT_BUDGET
    counted: Mapping[str, int] = field(default_factory=dict)  # series counted to size the window
    configz: Mapping[str | None, Mapping[str, Any]] = field(default_factory=dict)  # node (None: all) → body
    events: Sequence[Mapping[str, Any]] = ()
    priority_classes: Mapping[str, int] = field(default_factory=dict)


@dataclass
class _Pod:
    """What kube-state-metrics told us about one pod in the current window."""

    namespace: str
    name: str
    uid: str
    node: str
    priority_class: str | None


class _Notes:
    """Notes for the manifest, each once, in the order found."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)


def import_prometheus(spec: PrometheusImport, out: Path, *, progress: Progress | None = None) -> Manifest:
    """Build a recording in the new directory ``out``; returns its (finalized) manifest."""
    report = progress or (lambda _p, _d, _t: None)
    if spec.end <= spec.start:
        raise InputError(f"--to ({_iso(spec.end)}) must be after --from ({_iso(spec.start)})", source="--to")
    if spec.step <= 0:
        raise InputError("expected a positive step", source="--step")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RecordingError("already exists; give a new directory", source=str(out))
    notes = _Notes()
    with PrometheusClient(spec.client) as client:
        report("probing", 0, 1)
        found = discover(client, spec.conventions, spec.start, spec.end, spec.step, _iso)
        spec = dataclasses.replace(spec, conventions=found.conventions)
        b = Builder(spec.conventions, spec.lookback)
        nodes = found.nodes
        for note in found.notes:
            notes.add(note)
        sizing = measure(client, spec.conventions, len(nodes), spec.start, spec.end, spec.step)
        window = choose_window(sizing, spec.step, spec.memory_budget, spec.window, spec.end - spec.start + spec.step)
        counted = {"pods": sizing.pods, "containers": sizing.containers}
        spec = dataclasses.replace(spec, window=window, counted=counted)
        report("probing", 1, 1)
        with _leave_nothing(out):
            writer = RecordingWriter(out, Manifest(source="prometheus", options=_options(spec, nodes)))
            try:
                rolled = _write(client, spec, b, nodes, writer, notes, report)
                for warning in client.warnings:
                    notes.add(
                        f"the server warned: {warning} (a partial answer: what it lacks is missing here too; "
                        "--partial-response false makes Thanos refuse instead)"
                    )
                writer.manifest.notes = notes.items
                report("finishing", 0, 1)
                # the last hour's window parts into one; the hourly parts stay (time-ordered, as the benchmark
                # generator writes a day): one merge of the whole range would cost memory that grows with it
                writer.flush_objects()
                writer.fold()
                writer.compact(since=rolled + 1)
                writer.finalize(compact=False)
                report("finishing", 1, 1)
            except BaseException:
                writer.close_after_failure()
                raise
    return writer.manifest


@contextlib.contextmanager
def _leave_nothing(out: Path) -> Iterator[None]:
    """Remove what this import created when it fails or is interrupted (Ctrl-C)."""
    existed = out.exists()
    try:
        yield
    except RecordingBusyError:
        raise
    except BaseException:
        if not existed:
            remove_tree(out)
        elif out.is_dir():
            for child in out.iterdir():
                remove_tree(child) if child.is_dir() else child.unlink(missing_ok=True)
        raise


# -- probing ----------------------------------------------------------------------------------
def _options(spec: PrometheusImport, nodes: list[str]) -> dict[str, Any]:
    """What the manifest keeps: never credentials (the URL without user:password, no headers)."""
    url = urlsplit(spec.client.url)
    conv = spec.conventions
    return {
        "prometheus": f"{url.scheme}://{url.hostname}{f':{url.port}' if url.port else ''}{url.path}",
        "from": _iso(spec.start),
        "to": _iso(spec.end),
        "step": f"{spec.step:g}s",
        "scrape_interval": None,  # measured while importing (interval.Intervals)
        "scrape_intervals": {},
        "nodes": nodes,
        "selector": list(conv.selector),
        "lookback": spec.lookback,
        "window": f"{spec.window:g}s" if spec.window else None,
        "memory_budget": spec.memory_budget,
        "series_counted": dict(spec.counted),
        "labels": {
            "kubelet_node": conv.kubelet_node,
            "node_exporter_node": conv.node_exporter_node,
            "ksm_node": conv.ksm_node,
            **{f"ksm_{k}": v for k, v in conv.ksm_pod_labels.items()},
        },
        "mountpoints": {"nodefs": conv.nodefs_mountpoint, "imagefs": conv.imagefs_mountpoint},
    }


# -- the windows --------------------------------------------------------------------------------
def _write(
    client: PrometheusClient,
    spec: PrometheusImport,
    b: Builder,
    nodes: list[str],
    writer: RecordingWriter,
    notes: _Notes,
    report: Progress,
) -> int:
    """Import window by window; returns the last segment already rolled up into an hourly part."""
    total = round((spec.end - spec.start) / spec.step) + 1
    per = max(1, int((spec.window or spec.step) // spec.step))
    windows = [(lo, min(total, lo + per)) for lo in range(0, total, per)]
    for node, body in _configz_for(spec, nodes):
        writer.observe("configz", body, observed=int(spec.start * SECOND_US), node=node)
    for ev in spec.events:
        host = (ev.get("source") or {}).get("host")
        if ev.get("reason") == "Evicted" and (host is None or host in nodes):
            when = ev.get("lastTimestamp") or ev.get("eventTime") or ev.get("firstTimestamp")
            writer.observe("event", ev, observed=_micros(when) if isinstance(when, str) else None)
    state = _ObjectState()
    state.non_finite = NonFinite(time_of=lambda tick: _iso(spec.start + tick * spec.step))
    used: dict[str, dict[str, set[str]]] = {}
    gaps = 0
    intervals = Intervals(spec.step)
    # the window parts of each hour are merged into one as the import goes (a streaming merge), so a
    # day ends as 24 parts and the final compaction reads those, not a thousand small ones
    per_part, rolled, group_lo = max(1, round(ROLLUP_SECONDS / spec.step)), 0, 0
    writer.compact_batch_bytes = MERGE_BATCH_BYTES
    # one window ahead: the server answers window i + 1 while this process assembles window i — except
    # before a merge, which then runs with nothing in flight (the budget holds one or the other)
    pending: Pending | None = _submit(client, spec, b, *windows[0])
    for i, (lo, hi) in enumerate(windows):
        report("importing", i, len(windows))
        merge = hi - group_lo >= per_part and hi < total
        last = i + 1 == len(windows)
        ahead = _submit(client, spec, b, *windows[i + 1]) if not (last or merge) else None
        assert pending is not None
        results = client.collect_blocks(pending)
        pending = None
        for family in family_queries(b.conv):
            got = results.pop(f"interval:{family}", None)
            intervals.add(family, got.series() if got is not None else [])
        gaps += _window(client, results, spec, b, nodes, writer, state, used, lo, hi)
        del results
        if merge:
            writer.compact(since=rolled + 1)
            parts = list_parts(writer.root)
            rolled, group_lo = (parts[-1][1] if parts else rolled), hi
        pending = ahead if ahead is not None else None if last else _submit(client, spec, b, *windows[i + 1])
    report("importing", len(windows), len(windows))
    state.finish(writer)
    measured = intervals.measured()
    main = next(
        (measured[f] for f in ("cAdvisor", "kubelet /metrics/resource", "node-exporter") if f in measured), None
    )
    writer.manifest.options["scrape_interval"] = f"{main:g}s" if main else None
    writer.manifest.options["scrape_intervals"] = {f: f"{v:g}s" for f, v in measured.items()}
    if not measured:
        notes.add("scrape interval unknown (fewer than three samples of any exporter's series in the range)")
    what = {f: w for f, (_q, w) in family_queries(b.conv).items()}
    for note in interval_notes(measured, spec.step, what):
        notes.add(note)
    for note in state.non_finite.notes():
        notes.add(note)
    if not state.pods:
        notes.add(
            "no kube_pod_info series (kube-state-metrics) for these nodes: no pod objects, so replay has no "
            "pods to rank or evict"
        )
    if not state.nodes:
        notes.add(
            "no kube_node_info series (kube-state-metrics): no node objects (capacity, allocatable, "
            "conditions, kubelet version)"
        )
    _source_notes(notes, used, nodes, b)
    if gaps:
        notes.add(f"{gaps} node-steps had no node-level sample (scrape failures or staleness gaps): recorded as gaps")
    notes.add(
        "pod volumes (emptyDir usage and sizeLimit) are not in Prometheus: emptyDir limit evictions are not "
        "decidable, and pods[].ephemeral-storage.usedBytes is rootfs + logs only"
    )
    notes.add("containers of a pod are listed by name (kube-state-metrics does not keep spec order)")
    if state.unknown_classes:
        notes.add(
            f"priority classes without a value ({', '.join(sorted(state.unknown_classes))}): priority 0; "
            "pass --priority-classes (kubectl get priorityclasses -o json)"
        )
    if not spec.configz:
        notes.add(
            "no --configz/--config: the kubelet's eviction settings are not in Prometheus; replay uses the "
            "version's defaults unless given settings"
        )
    if not spec.events:
        notes.add(
            "no --events: real eviction messages are not in Prometheus; ground truth is kube-state-metrics' "
            "Evicted reason (no message)"
        )
    return rolled


def _configz_for(spec: PrometheusImport, nodes: list[str]) -> list[tuple[str, Mapping[str, Any]]]:
    out = []
    for node in nodes:
        body = spec.configz.get(node) or spec.configz.get(None)
        if body is not None:
            out.append((node, body))
    return out


def _submit(client: PrometheusClient, spec: PrometheusImport, b: Builder, lo: int, hi: int) -> Pending:
    """Start every query of ticks [lo, hi): each field's alternatives and kube-state-metrics' pod
    and node series as range queries, the rarely changing ones once at the window's end."""
    t0, t1 = spec.start + lo * spec.step, spec.start + (hi - 1) * spec.step
    ranges: dict[str, tuple[str, float, float, float]] = {}
    for q in node_queries(b) + pod_queries(b) + time_queries(b):
        for j, (_src, promql, _label) in enumerate(q.alternatives):
            ranges[f"{q.name}#{j}"] = (promql, t0, t1, spec.step)
    for name, promql in ksm_range_queries(b).items():
        ranges[name] = (promql, t0, t1, spec.step)
    for family, (promql, _what) in family_queries(b.conv).items():
        ranges[f"interval:{family}"] = (promql, t0, t1, spec.step)
    instants = {f"static:{name}": at for name, at in _static_queries(spec, b, lo, hi, pods=False).items()}
    return client.submit_blocks(ranges, instants)


def _static_queries(
    spec: PrometheusImport, b: Builder, lo: int, hi: int, *, pods: bool
) -> dict[str, tuple[str, float]]:
    """The rarely changing kube-state-metrics series of window [lo, hi) as of its last step: the nodes' (read
    every window), or the pods' (read only when a pod version is observed in the window: rarely, and ~10
    series a pod)."""
    t0, t1 = spec.start + lo * spec.step, spec.start + (hi - 1) * spec.step
    window = _range_text(t1 - t0 + spec.step)
    return {
        name: (promql, t1) for name, promql in ksm_static_queries(b, window).items() if name.startswith("node_") != pods
    }


_STATIC_POD_LABELS = frozenset(
    ("namespace", "pod", "container", "owner_kind", "owner_name", "owner_is_controller", "restart_policy", "resource")
)


def _pod_statics(client: PrometheusClient, spec: PrometheusImport, b: Builder, lo: int, hi: int) -> dict[str, Block]:
    """The pods' static series of window [lo, hi), fetched now (the labels :func:`_static_pods` reads)."""
    got = client.collect_blocks(client.submit_blocks({}, _static_queries(spec, b, lo, hi, pods=True)))
    out = {}
    for name, block in got.items():
        labels = [{k: v for k, v in lab.items() if k in _STATIC_POD_LABELS} for lab in ksm_labels(block.labels, b.conv)]
        out[name] = block.with_labels(labels)
    return out


def _window(
    client: PrometheusClient,
    results: Mapping[str, Block],
    spec: PrometheusImport,
    b: Builder,
    nodes: list[str],
    writer: RecordingWriter,
    state: _ObjectState,
    used: dict[str, dict[str, set[str]]],
    lo: int,
    hi: int,
) -> int:
    """Assemble and publish ticks [lo, hi) from their query results; returns the number of gap rows."""
    series_q = node_queries(b) + pod_queries(b) + time_queries(b)
    ksm = {"pod_info", "pod_phase", "pod_reason", "node_condition"}
    results = {
        name: v.with_labels(ksm_labels(v.labels, b.conv)) if name in ksm or name.startswith("static:") else v
        for name, v in results.items()
    }
    static = {name.removeprefix("static:"): v for name, v in results.items() if name.startswith("static:")}

    per_pod = pod_queries(b)
    labels = _Labels()
    frames: dict[str, pl.DataFrame] = {}
    for q in series_q:
        if q not in per_pod:
            frames[q.name] = _pick_alternative(q, results, spec, nodes, used, state.non_finite, labels)
    ticks = pl.DataFrame({"tick": list(range(lo, hi))}, schema={"tick": pl.Int64})
    grid = pl.DataFrame({"node": nodes}).join(ticks, how="cross")
    pods = _pods(results["pod_info"], spec, nodes)
    state.update(writer, spec, lo, hi, results, static, lambda: _pod_statics(client, spec, b, lo, hi), pods, nodes)

    node_df = _node_table(grid, frames, spec)
    ok = node_df.select("node", pl.col("tick").cast(pl.Int64))
    uids = _uids(pods, results["pod_info"], spec)
    # pods and containers a few nodes at a time: their joins cost several times the rows they join, and
    # every step of a window of 11,000 pods is ~10^5 rows
    rows = sum(results[f"{q.name}#0"].samples.height for q in per_pod)
    batch = max(1, round(len(nodes) * BATCH_ROWS / max(1, rows)))
    tables: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    for first in range(0, len(nodes), batch):
        some = set(nodes[first : first + batch])
        mine = {
            q.name: _pick_alternative(q, results, spec, nodes, used, state.non_finite, labels, some) for q in per_pod
        }
        tables.append(_pod_tables(mine, uids, spec, ok.filter(pl.col("node").is_in(list(some)))))
        del mine
    pod_df = pl.concat([t[0] for t in tables])
    ctr_df = pl.concat([t[1] for t in tables])
    del tables
    sys_df = _system_table(frames, spec, ok)
    gap = grid.join(ok, on=["node", "tick"], how="anti")
    tick_rows = pl.concat(
        [
            ok.with_columns(pl.lit(True).alias("ok"), pl.lit(None, pl.String).alias("error")),
            gap.with_columns(pl.lit(False).alias("ok"), pl.lit(GAP).alias("error")),
        ]
    )
    tick_rows = tick_rows.with_columns(_time_of(spec).alias("time"))
    writer.publish_part(
        {
            "ticks": _conform("ticks", tick_rows),
            "node_stats": _conform("node_stats", node_df),
            "system_container_stats": _conform("system_container_stats", sys_df),
            "pod_stats": _conform("pod_stats", pod_df),
            "container_stats": _conform("container_stats", ctr_df),
        }
    )
    return gap.height


def _pick_alternative(
    q: Query,
    results: Mapping[str, Block],
    spec: PrometheusImport,
    nodes: list[str],
    used: dict[str, dict[str, set[str]]],
    non_finite: NonFinite,
    labels: _Labels | None = None,
    only: set[str] | None = None,
) -> pl.DataFrame:
    """Per node (of ``only`` when given), the first alternative with data in this window → node, *keys,
    tick, value."""
    parts = []
    taken: set[str] = set()
    serve = nodes if only is None else [n for n in nodes if n in only]
    for j, (src, _promql, label) in enumerate(q.alternatives):
        block = results[f"{q.name}#{j}"]
        df = _long(block, label, q.keys, spec, non_finite.sink(q, serve, taken), labels, only).filter(
            pl.col("node").is_in(serve) & ~pl.col("node").is_in(list(taken))
        )
        have = set(df["node"].unique().to_list())
        for n in have:
            used.setdefault(q.name, {}).setdefault(n, set()).add(src)
        taken |= have
        parts.append(df)
    return pl.concat(parts) if parts else _long(None, "node", q.keys, spec)


def _long(
    block: Block | None,
    node_label: str,
    keys: Sequence[str],
    spec: PrometheusImport,
    non_finite: Callable[[pl.DataFrame], None] | None = None,
    cache: _Labels | None = None,
    only: set[str] | None = None,
) -> pl.DataFrame:
    """A query's answer (the series of ``only``'s nodes when given) → one row per sample: node, *keys,
    tick, value (NaN and ±Inf dropped, and handed to ``non_finite`` so the manifest says where)."""
    schema = {"node": pl.String, **{k: pl.String for k in keys}, "tick": pl.Int64, "value": pl.Float64}
    if block is None or not len(block):
        return pl.DataFrame(schema=schema)
    columns = {"node": node_label, **{k: k for k in keys}}
    labels = (cache or _Labels()).frame(block, columns)
    samples = block.samples
    if only is not None:
        labels = labels.filter(pl.col("node").is_in(list(only)))
        samples = samples.filter(pl.col("sid").is_in(labels["sid"].implode()))
    out = samples.with_columns(_tick(spec))
    finite = pl.col("value").is_finite().fill_null(False)
    if non_finite is not None:
        bad = out.filter(~finite)
        if bad.height:
            non_finite(bad.join(labels, on="sid").select("node", "tick", "value"))
    return out.filter(finite).join(labels, on="sid").select(list(schema))


class _Labels:
    """Label frames of one window's answers, built once however many node batches read them."""

    def __init__(self) -> None:
        self._frames: dict[tuple[int, tuple[tuple[str, str], ...]], pl.DataFrame] = {}

    def frame(self, block: Block, columns: Mapping[str, str]) -> pl.DataFrame:
        key = (id(block.labels), tuple(columns.items()))
        if key not in self._frames:
            self._frames[key] = _label_frame(block, columns)
        return self._frames[key]


def _label_frame(block: Block, columns: Mapping[str, str]) -> pl.DataFrame:
    """sid and a String column per label (column → label; absent: "")."""
    return pl.DataFrame(
        {"sid": range(len(block)), **{c: [lab.get(label, "") for lab in block.labels] for c, label in columns.items()}},
        schema={"sid": pl.Int64, **dict.fromkeys(columns, pl.String)},
    )


def _tick(spec: PrometheusImport) -> pl.Expr:
    """A sample's step: round((t - start) / step)."""
    return ((pl.col("t") - spec.start) / spec.step).round(0).cast(pl.Int64).alias("tick")


def _time_of(spec: PrometheusImport) -> pl.Expr:
    """The tick's time in µs: start + tick × step."""
    return (pl.lit(int(spec.start * SECOND_US)) + pl.col("tick") * int(spec.step * SECOND_US)).cast(pl.Int64)


def _u64(name: str) -> pl.Expr:
    return pl.col(name).round(0).clip(0).cast(pl.UInt64)


def _value(frames: Mapping[str, pl.DataFrame], name: str) -> pl.DataFrame:
    return frames[name].rename({"value": name})


def _node_table(grid: pl.DataFrame, frames: Mapping[str, pl.DataFrame], spec: PrometheusImport) -> pl.DataFrame:
    names = [
        "node_ws",
        "mem_capacity",
        "pods_ws",
        "pods_limit",
        "fs_avail",
        "fs_size",
        "fs_ffree",
        "fs_files",
        "imagefs_avail",
        "imagefs_size",
        "imagefs_ffree",
        "imagefs_files",
        "pid_max",
        "threads_max",
        "curproc",
        "ts_mem",
        "ts_fs",
        "ts_imagefs",
        "ts_rlimit",
    ]
    df = grid
    for n in names:
        df = df.join(_value(frames, n), on=["node", "tick"], how="left")
    # imageFs on the nodefs device unless a separate mount has data (the kubelet's imageFs is then the
    # same filesystem); containerFs = imageFs (no KEP-4191 split is visible in Prometheus).
    own_image = pl.col("imagefs_avail").is_not_null() & pl.col("imagefs_size").is_not_null()
    df = df.with_columns(
        [
            pl.when(own_image).then(pl.col(f"imagefs_{f}")).otherwise(pl.col(f"fs_{f}")).alias(f"imagefs_{f}")
            for f in ("avail", "size", "ffree", "files")
        ]
        + [pl.when(own_image).then(pl.col("ts_imagefs")).otherwise(pl.col("ts_fs")).alias("ts_imagefs")]
    )
    mem = pl.col("node_ws").is_not_null() & pl.col("mem_capacity").is_not_null()
    fs = (pl.col("fs_avail").is_not_null() & pl.col("fs_size").is_not_null()) | (
        pl.col("fs_ffree").is_not_null() & pl.col("fs_files").is_not_null()
    )
    img = (pl.col("imagefs_avail").is_not_null() & pl.col("imagefs_size").is_not_null()) | (
        pl.col("imagefs_ffree").is_not_null() & pl.col("imagefs_files").is_not_null()
    )
    pods = pl.col("pods_ws").is_not_null() & pl.col("pods_limit").is_not_null()
    maxpid = pl.min_horizontal("pid_max", "threads_max")
    rl = maxpid.is_not_null() & pl.col("curproc").is_not_null()
    df = df.filter(mem | fs | img | rl)
    at = _time_of(spec)
    present = (
        pl.lit(1, pl.UInt32)
        | pl.when(mem).then(2).otherwise(0)
        | pl.when(pods).then(4).otherwise(0)
        | pl.when(fs).then(8).otherwise(0)
        | pl.when(img).then(16 | 32 | 64).otherwise(0)
        | pl.when(rl).then(128).otherwise(0)
    ).cast(pl.UInt32)
    cols = [
        pl.col("tick").cast(pl.UInt32),
        pl.col("node"),
        at.alias("scraped"),
        present.alias("present"),
        pl.col("node").alias("node_name"),
        pl.when(mem).then(_sampled("ts_mem", at)).alias("memory_time"),
        pl.when(mem)
        .then((_u64("mem_capacity").cast(pl.Int64) - _u64("node_ws").cast(pl.Int64)).clip(0).cast(pl.UInt64))
        .alias("memory_available_bytes"),
        pl.when(mem).then(_u64("node_ws")).alias("memory_working_set_bytes"),
        pl.when(rl).then(_sampled("ts_rlimit", at)).alias("rlimit_time"),
        pl.when(rl).then(maxpid.round(0).cast(pl.Int64)).alias("rlimit_maxpid"),
        pl.when(rl).then(pl.col("curproc").round(0).cast(pl.Int64)).alias("rlimit_curproc"),
    ]
    for prefix, src, present_expr in (("fs", "fs", fs), ("imagefs", "imagefs", img), ("containerfs", "imagefs", img)):
        cols += [
            pl.when(present_expr).then(_sampled(f"ts_{src}", at)).alias(f"{prefix}_time"),
            _u64(f"{src}_avail").alias(f"{prefix}_available_bytes"),
            _u64(f"{src}_size").alias(f"{prefix}_capacity_bytes"),
            _u64(f"{src}_ffree").alias(f"{prefix}_inodes_free"),
            _u64(f"{src}_files").alias(f"{prefix}_inodes"),
            (_u64(f"{src}_files").cast(pl.Int64) - _u64(f"{src}_ffree").cast(pl.Int64))
            .clip(0)
            .cast(pl.UInt64)
            .alias(f"{prefix}_inodes_used"),
        ]
    return df.select(cols)


def _sampled(column: str, tick_time: pl.Expr) -> pl.Expr:
    """The scrape's time in whole seconds (the Summary API's precision), else the step's."""
    return pl.coalesce((pl.col(column).floor() * SECOND_US).cast(pl.Int64), tick_time)


def _system_table(frames: Mapping[str, pl.DataFrame], spec: PrometheusImport, ok: pl.DataFrame) -> pl.DataFrame:
    """The ``pods`` system container (kubepods cgroup): allocatableMemory.available."""
    df = (
        ok.join(_value(frames, "pods_ws"), on=["node", "tick"])
        .join(_value(frames, "pods_limit"), on=["node", "tick"])
        .join(_value(frames, "ts_pods"), on=["node", "tick"], how="left")
    )
    at = _time_of(spec)
    return df.select(
        pl.col("tick").cast(pl.UInt32),
        "node",
        pl.lit(0, pl.UInt32).alias("container"),
        pl.lit(3, pl.UInt32).alias("present"),
        pl.lit("pods").alias("name"),
        _sampled("ts_pods", at).alias("memory_time"),
        (_u64("pods_limit").cast(pl.Int64) - _u64("pods_ws").cast(pl.Int64))
        .clip(0)
        .cast(pl.UInt64)
        .alias("memory_available_bytes"),
        _u64("pods_ws").alias("memory_working_set_bytes"),
    )


def _pods(info: Block, spec: PrometheusImport, nodes: Sequence[str]) -> dict[tuple[str, str, str], _Pod]:
    out: dict[tuple[str, str, str], _Pod] = {}
    label = spec.conventions.ksm_node
    for lab in info.labels:
        node = lab.get(label, "")
        if node not in nodes or not lab.get("pod"):
            continue
        key = (lab.get("namespace", ""), lab["pod"], lab.get("uid") or _uid(lab.get("namespace", ""), lab["pod"]))
        out[key] = _Pod(key[0], key[1], key[2], node, lab.get("priority_class") or None)
    return out


def _uid(namespace: str, name: str) -> str:
    return str(uuid.uuid5(_UID_NS, f"{namespace}/{name}"))


def _uids(
    pods: Mapping[tuple[str, str, str], _Pod], info: Block, spec: PrometheusImport
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A pod's uid at each step (the kube_pod_info series present then: a StatefulSet pod keeps its name, not
    its uid), and any uid it had in the window."""
    uid_at = (
        _long(info, spec.conventions.ksm_node, ("namespace", "pod", "uid"), spec)
        .select("namespace", "pod", "uid", "tick")
        .unique(["namespace", "pod", "tick"], keep="last")
    )
    any_uid = pl.DataFrame(
        {"namespace": [k[0] for k in pods], "pod": [k[1] for k in pods], "uid_any": [k[2] for k in pods]},
        schema={"namespace": pl.String, "pod": pl.String, "uid_any": pl.String},
    )
    return uid_at, any_uid.unique(["namespace", "pod"], keep="last")


def _pod_tables(
    frames: Mapping[str, pl.DataFrame],
    uids: tuple[pl.DataFrame, pl.DataFrame],
    spec: PrometheusImport,
    ok: pl.DataFrame,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    keys = ["node", "namespace", "pod", "container", "tick"]
    ctr = _value(frames, "container_ws")
    for name in ("container_rootfs", "container_logs"):
        ctr = ctr.join(_value(frames, name), on=keys, how="full", coalesce=True)
    ctr = ctr.join(ok, on=["node", "tick"], how="semi")
    pkeys = ["node", "namespace", "pod", "tick"]
    eph = ctr.group_by(pkeys).agg(
        pl.col("container_rootfs").sum().alias("eph"),
        (pl.col("container_rootfs").is_not_null() | pl.col("container_logs").is_not_null()).any().alias("has_eph"),
        pl.col("container_logs").sum().alias("eph_logs"),
    )
    pod = _value(frames, "pod_ws").join(_value(frames, "pod_procs"), on=pkeys, how="full", coalesce=True)
    pod = pod.join(eph, on=pkeys, how="full", coalesce=True).join(ok, on=["node", "tick"], how="semi")
    uid_at, any_uid = uids

    def with_uid(df: pl.DataFrame) -> pl.DataFrame:
        df = df.join(uid_at, on=["namespace", "pod", "tick"], how="left").join(
            any_uid, on=["namespace", "pod"], how="left"
        )
        missing = df.filter(pl.col("uid").is_null() & pl.col("uid_any").is_null()).select("namespace", "pod").unique()
        made = missing.with_columns(
            pl.Series("uid_made", [_uid(ns, name) for ns, name in missing.iter_rows()], dtype=pl.String)
        )
        df = df.join(made, on=["namespace", "pod"], how="left")
        return df.with_columns(pl.coalesce("uid", "uid_any", "uid_made").alias("pod_uid"))

    pod = with_uid(pod).sort(["node", "tick", "pod_uid"])
    pod = pod.with_columns(pl.int_range(pl.len()).over(["node", "tick"]).cast(pl.UInt32).alias("pod_index"))
    at = _time_of(spec)
    has_mem, has_proc = pl.col("pod_ws").is_not_null(), pl.col("pod_procs").is_not_null()
    has_eph = pl.col("has_eph").fill_null(False)
    present = (
        pl.lit(1 | 16, pl.UInt32)
        | pl.when(has_mem).then(2).otherwise(0)
        | pl.when(has_eph).then(4).otherwise(0)
        | pl.when(has_proc).then(8).otherwise(0)
    ).cast(pl.UInt32)
    pod_df = pod.select(
        pl.col("tick").cast(pl.UInt32),
        "node",
        pl.col("pod_index").alias("pod"),
        "pod_uid",
        present.alias("present"),
        pl.col("pod").alias("name"),
        "namespace",
        pl.when(has_mem).then(at).alias("memory_time"),
        _u64("pod_ws").alias("memory_working_set_bytes"),
        pl.when(has_eph).then(at).alias("ephemeral_time"),
        pl.when(has_eph)
        .then((pl.col("eph").fill_null(0) + pl.col("eph_logs").fill_null(0)).round(0).cast(pl.UInt64))
        .alias("ephemeral_used_bytes"),
        _u64("pod_procs").alias("process_count"),
    )
    index = pod.select("node", "tick", "namespace", "pod", "pod_uid", "pod_index")
    ctr = ctr.join(index, on=["node", "tick", "namespace", "pod"], how="inner").sort(
        ["node", "tick", "pod_uid", "container"]
    )
    ctr = ctr.with_columns(pl.int_range(pl.len()).over(["node", "tick", "pod_uid"]).cast(pl.UInt32).alias("cidx"))
    has_ws, has_root, has_logs = (
        pl.col(c).is_not_null() for c in ("container_ws", "container_rootfs", "container_logs")
    )
    cpresent = (
        pl.lit(1, pl.UInt32)
        | pl.when(has_ws).then(2).otherwise(0)
        | pl.when(has_root).then(4).otherwise(0)
        | pl.when(has_logs).then(8).otherwise(0)
    ).cast(pl.UInt32)
    ctr_df = ctr.select(
        pl.col("tick").cast(pl.UInt32),
        "node",
        pl.col("pod_index").alias("pod"),
        "pod_uid",
        pl.col("cidx").alias("container"),
        cpresent.alias("present"),
        pl.col("container").alias("name"),
        pl.when(has_ws).then(at).alias("memory_time"),
        _u64("container_ws").alias("memory_working_set_bytes"),
        pl.when(has_root).then(at).alias("rootfs_time"),
        _u64("container_rootfs").alias("rootfs_used_bytes"),
        pl.when(has_logs).then(at).alias("logs_time"),
        _u64("container_logs").alias("logs_used_bytes"),
    )
    return pod_df, ctr_df


def _conform(name: str, df: pl.DataFrame) -> pl.DataFrame:
    """Every column of the table's schema, in order, with its type (absent columns are null)."""
    schema = ALL_SCHEMAS[name]
    cols = []
    for col, dtype in schema.items():
        if col in df.columns:
            expr = pl.col(col)
            cols.append(
                (
                    expr.cast(pl.Int64).cast(TIME) if dtype == TIME and df.schema[col] != TIME else expr.cast(dtype)
                ).alias(col)
            )
        else:
            cols.append(pl.lit(None, dtype).alias(col))
    return df.select(cols)


# -- objects from kube-state-metrics ------------------------------------------------------------
class _ObjectState:
    """Pod and node objects as kube-state-metrics shows them; a version is observed when it changes."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str, str], tuple[dict[str, Any], tuple[Any, ...]]] = {}
        self.nodes: dict[str, tuple[Any, ...]] = {}
        self.unknown_classes: set[str] = set()
        self.last_time = 0
        self.non_finite = NonFinite(time_of=lambda _tick: "")

    def update(
        self,
        writer: RecordingWriter,
        spec: PrometheusImport,
        lo: int,
        hi: int,
        results: Mapping[str, Block],
        static: Mapping[str, Block],
        pod_statics: Callable[[], Mapping[str, Block]],
        pods: Mapping[tuple[str, str, str], _Pod],
        nodes: Sequence[str],
    ) -> None:
        """Observe each pod version at the step it starts and each pod's end; the steps where a pod's
        state (present, phase, reason, node) changes are found in columns, then handled one by one."""
        step_us = int(spec.step * SECOND_US)
        start_us = int(spec.start * SECOND_US)
        ksm = spec.conventions.ksm_node
        info: dict[tuple[str, str], dict[str, Any]] | None = None  # built when a pod version is: rarely
        keys = sorted(pods)
        for kid, tick, ph, rs in _pod_changes(results, spec, lo, hi, keys, pods, self.pods).iter_rows():
            key = keys[kid]
            pod = pods[key]
            at = start_us + tick * step_us
            prev = self.pods.get(key)
            if ph is None:  # not present at this step
                if prev is not None and prev[1][0]:
                    writer.observe("pod", prev[0], observed=at, node=pod.node, deleted=True)
                    self.pods[key] = (prev[0], (False,))
                continue
            sig = (True, ph, rs, pod.node)
            if prev is not None and prev[1] == sig:
                continue
            if info is None:
                info = _static_pods(pod_statics())
            body = _pod_body(pod, ph, rs, info.get((pod.namespace, pod.name), {}), spec, self.unknown_classes)
            writer.observe("pod", body, observed=at, node=pod.node)
            self.pods[key] = (body, sig)
        conditions = _node_conditions(results["node_condition"], ksm, spec)
        nodes_static = _static_nodes(static, ksm)
        for node in sorted((set(nodes_static) | {n for n, _ in conditions}) & set(nodes)):
            for tick in range(lo, hi):
                conds = conditions.get((node, tick), frozenset())
                nsig = (conds, repr(nodes_static.get(node)))
                if self.nodes.get(node) == nsig:
                    continue
                self.nodes[node] = nsig
                writer.observe(
                    "node",
                    _node_body(node, nodes_static.get(node, {}), conds),
                    observed=start_us + tick * step_us,
                    node=node,
                )

    def finish(self, writer: RecordingWriter) -> None:
        writer.flush_objects()


_ABSENT = "\x00absent"


def _pod_changes(
    results: Mapping[str, Block],
    spec: PrometheusImport,
    lo: int,
    hi: int,
    keys: Sequence[tuple[str, str, str]],
    pods: Mapping[tuple[str, str, str], _Pod],
    known: Mapping[tuple[str, str, str], tuple[dict[str, Any], tuple[Any, ...]]],
) -> pl.DataFrame:
    """(kid: index in ``keys``, tick, phase, reason) at each step of [lo, hi) where a pod's state
    differs from the step before (from what ``known`` holds at ``lo``), in key then tick order; phase is
    null where the pod is absent. A pod is present where its kube_pod_info has a sample (not NaN), its
    phase (Running when none) and reason those whose series is 1 there (the last series wins)."""
    if not keys:
        return pl.DataFrame(schema={"kid": pl.Int64, "tick": pl.Int64, "phase": pl.String, "reason": pl.String})
    index = {k: i for i, k in enumerate(keys)}
    by_name = pl.DataFrame(
        {"kid": range(len(keys)), "namespace": [k[0] for k in keys], "pod": [k[1] for k in keys]},
        schema={"kid": pl.Int64, "namespace": pl.String, "pod": pl.String},
    )
    info = results["pod_info"]
    sid_kid = [
        index.get(
            (
                lab.get("namespace", ""),
                lab.get("pod", ""),
                lab.get("uid") or _uid(lab.get("namespace", ""), lab.get("pod", "")),
            )
        )
        for lab in info.labels
    ]
    present = (
        info.samples.filter(pl.col("value").is_not_nan())
        .with_columns(pl.lit(pl.Series(sid_kid, dtype=pl.Int64)).gather(pl.col("sid")).alias("kid"), _tick(spec))
        .drop_nulls("kid")
        .select("kid", "tick", pl.lit(True).alias("present"))
        .unique(["kid", "tick"])
    )

    def at_ticks(block: Block, label: str) -> pl.DataFrame:
        lab = _label_frame(block, {"namespace": "namespace", "pod": "pod", label: label})
        return (
            block.samples.filter(pl.col("value").is_not_nan())
            .join(lab.filter(pl.col(label) != ""), on="sid")
            .sort("sid", maintain_order=True)
            .select("namespace", "pod", _tick(spec), label)
            .unique(["namespace", "pod", "tick"], keep="last", maintain_order=True)
            .join(by_name, on=["namespace", "pod"])
            .select("kid", "tick", label)
        )

    grid = by_name.select("kid").join(pl.DataFrame({"tick": range(lo, hi)}, schema={"tick": pl.Int64}), how="cross")
    grid = (
        grid.join(present, on=["kid", "tick"], how="left")
        .join(at_ticks(results["pod_phase"], "phase"), on=["kid", "tick"], how="left")
        .join(at_ticks(results["pod_reason"], "reason"), on=["kid", "tick"], how="left")
        .sort("kid", "tick")
    )
    # the state before lo: its phase and reason, or absent; a pod now on another node counts as changed
    before = []
    for k in keys:
        prev = known.get(k)
        if prev is None or not prev[1][0]:
            before.append(_ABSENT)
        elif prev[1][3] != pods[k].node:
            before.append("\x00moved")
        else:
            before.append(_state(prev[1][1], prev[1][2]))
    ph = pl.when(pl.col("present")).then(pl.col("phase").fill_null("Running"))
    state = (
        pl.when(pl.col("present"))
        .then(pl.concat_str(pl.col("phase").fill_null("Running"), pl.lit("\x00"), pl.col("reason").fill_null("\x01")))
        .otherwise(pl.lit(_ABSENT))
    )
    first = pl.lit(pl.Series(before, dtype=pl.String)).gather(pl.col("kid"))
    grid = grid.with_columns(state.alias("state"), ph.alias("ph"), pl.col("reason").alias("rs"))
    grid = grid.with_columns(pl.when(pl.col("tick") == lo).then(first).otherwise(pl.col("state").shift(1)).alias("was"))
    changed = grid.filter(pl.col("state") != pl.col("was"))
    return changed.select(
        "kid",
        "tick",
        pl.when(pl.col("present")).then(pl.col("ph")).alias("phase"),
        pl.when(pl.col("present")).then(pl.col("rs")).alias("reason"),
    )


def _state(phase: str, reason: str | None) -> str:
    return f"{phase}\x00{reason if reason is not None else chr(1)}"


def _node_conditions(block: Block, label: str, spec: PrometheusImport) -> dict[tuple[str, int], frozenset[str]]:
    lab = _label_frame(block, {"node": label, "condition": "condition"})
    rows = (
        block.samples.filter(pl.col("value").is_not_nan())
        .join(lab, on="sid")
        .select("node", _tick(spec), "condition")
        .group_by("node", "tick")
        .agg(pl.col("condition").unique())
    )
    return {(n, t): frozenset(c) for n, t, c in rows.iter_rows()}


def _static_pods(static: Mapping[str, Block]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}

    def slot(lab: Mapping[str, str]) -> dict[str, Any]:
        return out.setdefault((lab.get("namespace", ""), lab.get("pod", "")), {})

    empty = Block([], pl.DataFrame())
    for lab in static.get("pod_owner", empty).labels:
        if lab.get("owner_kind") not in (None, "", "<none>"):
            slot(lab)["owner"] = (
                lab["owner_kind"],
                lab.get("owner_name", ""),
                lab.get("owner_is_controller") == "true",
            )
    for name in ("pod_created", "pod_start"):
        block = static.get(name, empty)
        for lab, value in zip(block.labels, block.last_values() if len(block) else [], strict=True):
            slot(lab)[name] = value
    for name in ("container_info", "init_info"):
        for lab in static.get(name, empty).labels:
            slot(lab).setdefault(name, {})[lab.get("container", "")] = lab.get("restart_policy")
    for name in ("requests", "limits", "init_requests", "init_limits"):
        block = static.get(name, empty)
        for lab, value in zip(block.labels, block.last_values() if len(block) else [], strict=True):
            res = _resource_name(lab.get("resource", ""))
            slot(lab).setdefault(name, {}).setdefault(lab.get("container", ""), {})[res] = _quantity(res, value)
    return out


def _resource_name(ksm: str) -> str:
    """kube-state-metrics writes resource names with ``_`` (``ephemeral_storage``)."""
    return {"ephemeral_storage": "ephemeral-storage"}.get(ksm, ksm)


def _quantity(resource: str, value: float) -> str:
    """A quantity's canonical text from kube-state-metrics' float: millicores for cpu, and for byte
    amounts the largest exact binary (Ki…) or decimal (k…) suffix, as Quantity.String() prints a
    quantity written that way (apimachinery resource/quantity.go); plain integers otherwise."""
    if resource == "cpu":
        milli = round(value * 1000)
        return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
    n = round(value)
    if n == 0:
        return "0"
    for suffix, size in (
        ("Ei", 1 << 60),
        ("Pi", 1 << 50),
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ):
        if n % size == 0:
            return f"{n // size}{suffix}"
    for suffix, size in (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


def _pod_body(
    pod: _Pod, phase: str, reason: str | None, info: Mapping[str, Any], spec: PrometheusImport, unknown: set[str]
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if "pod_created" in info:
        meta["creationTimestamp"] = format_time(int(info["pod_created"]) * SECOND_US)
    owner = info.get("owner")
    if owner:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": owner[2]}]
        if owner[0] == "Node":  # a mirror pod: the kubelet's static pod, always critical
            meta["annotations"] = {"kubernetes.io/config.mirror": "prometheus", "kubernetes.io/config.source": "file"}

    def containers(
        names: Mapping[str, Any], req: Mapping[str, Any], lim: Mapping[str, Any], init: bool
    ) -> list[dict[str, Any]]:
        out = []
        for name in sorted(set(names) | set(req) | set(lim)):
            c: dict[str, Any] = {"name": name}
            resources = {k: dict(v[name]) for k, v in (("requests", req), ("limits", lim)) if v.get(name)}
            if resources:
                c["resources"] = resources
            if init and names.get(name) == "Always":
                c["restartPolicy"] = "Always"
            out.append(c)
        return out

    pod_spec: dict[str, Any] = {
        "nodeName": pod.node,
        "containers": containers(
            info.get("container_info", {}), info.get("requests", {}), info.get("limits", {}), False
        ),
    }
    init = containers(info.get("init_info", {}), info.get("init_requests", {}), info.get("init_limits", {}), True)
    if init:
        pod_spec["initContainers"] = init
    if pod.priority_class:
        pod_spec["priorityClassName"] = pod.priority_class
        value = spec.priority_classes.get(pod.priority_class, BUILTIN_PRIORITIES.get(pod.priority_class))
        if value is None:
            unknown.add(pod.priority_class)
        else:
            pod_spec["priority"] = value
    status: dict[str, Any] = {"phase": phase}
    if reason:
        status["reason"] = reason
    if "pod_start" in info:
        status["startTime"] = format_time(int(info["pod_start"]) * SECOND_US)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec, "status": status}


def _static_nodes(static: Mapping[str, Block], label: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    empty = Block([], pl.DataFrame())
    for lab in static.get("node_info", empty).labels:
        out.setdefault(lab.get(label, ""), {})["info"] = {
            k: lab[v]
            for k, v in (
                ("kubeletVersion", "kubelet_version"),
                ("kernelVersion", "kernel_version"),
                ("osImage", "os_image"),
                ("containerRuntimeVersion", "container_runtime_version"),
            )
            if lab.get(v)
        }
    for name in ("node_capacity", "node_allocatable"):
        block = static.get(name, empty)
        for lab, value in zip(block.labels, block.last_values() if len(block) else [], strict=True):
            res = _resource_name(lab.get("resource", ""))
            out.setdefault(lab.get(label, ""), {}).setdefault(name, {})[res] = _quantity(res, value)
    for lab in static.get("node_taints", empty).labels:
        taint = {k: lab[k] for k in ("key", "value", "effect") if lab.get(k)}
        out.setdefault(lab.get(label, ""), {}).setdefault("taints", []).append(taint)
    return out


def _node_body(node: str, info: Mapping[str, Any], conditions: frozenset[str]) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [
            {"type": c, "status": "True" if c in conditions else "False"}
            for c in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
        ],
    }
    if info.get("node_capacity"):
        status["capacity"] = info["node_capacity"]
    if info.get("node_allocatable"):
        status["allocatable"] = info["node_allocatable"]
    if info.get("info"):
        status["nodeInfo"] = info["info"]
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}, "status": status}
    if info.get("taints"):
        body["spec"] = {"taints": sorted(info["taints"], key=lambda t: (t.get("key", ""), t.get("effect", "")))}
    return body


# -- notes --------------------------------------------------------------------------------------
_DECIDES = {
    "node_ws": "memory.available not decidable",
    "mem_capacity": "memory.available not decidable",
    "pods_ws": "allocatableMemory.available not decidable",
    "pods_limit": "allocatableMemory.available not decidable",
    "fs_avail": "nodefs.available not decidable",
    "fs_ffree": "nodefs.inodesFree not decidable",
    "pid_max": "pid.available not decidable",
    "curproc": "pid.available not decidable",
    "pod_ws": "memory ranking uses 0 for pods without it",
    "container_ws": "eviction messages leave out containers without it",
    "container_rootfs": "ranking for nodefs/imagefs not decidable (no per-container rootfs usage)",
    "container_logs": "ranking for nodefs not decidable (no per-container log usage)",
    "pod_procs": "ranking for pid not decidable (no per-pod process count)",
}


def _source_notes(notes: _Notes, used: Mapping[str, Mapping[str, set[str]]], nodes: Sequence[str], b: Builder) -> None:
    """Which series measured each field, and which fields had none (what that leaves undecidable)."""
    for q in node_queries(b) + pod_queries(b):
        got = used.get(q.name, {})
        missing = [n for n in nodes if n not in got]
        if q.name in ("imagefs_avail", "imagefs_size", "imagefs_ffree", "imagefs_files", "threads_max"):
            continue  # optional: imageFs shares nodefs, maxpid is pid_max alone
        if q.name.startswith("fs_") and q.name not in ("fs_avail", "fs_ffree"):
            continue
        if missing:
            decides = _DECIDES.get(q.name, "")
            who = "any node" if len(missing) == len(nodes) else ", ".join(missing)
            notes.add(
                f"{q.what}: no series for {who} ({q.alternatives[0][0]}"
                f"{' or others' if len(q.alternatives) > 1 else ''}){f': {decides}' if decides else ''}"
            )
        sources = sorted({src for per in got.values() for src in per})
        approx = [s for s in sources if "approximation" in s]
        if approx:
            notes.add(f"{q.what} from {approx[0]}")


def _range_text(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"


def _iso(seconds: float) -> str:
    return format_time(round(seconds * SECOND_US))


def _micros(text: str) -> int | None:
    from ..summary_codec import parse_time

    try:
        return parse_time(text)
    except ValueError:
        return None


__all__ = ["PrometheusError", "PrometheusImport", "import_prometheus"]
