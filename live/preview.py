"""The newest tick first: what a long recording's nodes show now, before the engine has replayed their history.

``tui REC --follow`` on a day-long recording waited for :class:`~live.engine.LiveEngine` to carry every node's
eviction manager through the whole day (tens of seconds of CPU) before its first frame. What a node shows that
does not depend on that history is shown at once: the signals at the newest tick against the thresholds in
force (resolved as the engine resolves them: settings from the node object and /configz, the fast path's
signal and threshold columns, replay/incremental_nodes.py: signal_frames) and the forecast over the last
:data:`~live.engine.HISTORY_TICKS` ticks (the same estimator on the same observations). What does depend on it
is not guessed: pressure conditions (the transition period, soft grace periods and minimum reclaim carry
state from earlier passes), the pod next to go (pods the replay would have evicted earlier are not candidates)
and the events. Each :class:`~live.model.NodeNow` says so (``catching_up``) until the engine, started after
this in the same worker, has replayed the history: from then on every decision is the engine's, equal to
``replay``'s. A node the fast path does not model (Windows, thresholds outside its columns) is shown with its
signals only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from live.engine import HISTORY_TICKS, forecast
from live.forecast import SignalHistory
from live.model import Forecast, NodeNow
from recordings.reader import open_recording
from recordings.schema import NODE_STATS, SYSTEM_STATS
from replay.fast.loop import to_us
from replay.incremental import FAST, NodeRows, NodeStepper, signals_seen
from replay.incremental_nodes import signal_frames
from replay.settings import SettingsRequest

__all__ = ["CATCHING_UP", "Preview", "newest"]

CATCHING_UP = "history being replayed: conditions and the pod next to go once it is"


@dataclass(frozen=True)
class Preview:
    nodes: dict[str, NodeNow]
    last_tick: int | None
    last_time_us: int | None
    ticks: int
    """How many ticks the recording holds (what the engine replays next)."""


def newest(root: Path, request: SettingsRequest | None = None) -> Preview:
    """Each node at the recording's newest tick (see the module docstring); reads only the last ticks' node rows
    and the node objects and /configz."""
    request = request or SettingsRequest()
    rec = open_recording(root)
    ticks = rec._collect("ticks", rec.scan("ticks").select("tick", "time", "node", "ok", "error"))
    if not ticks.height:
        return Preview({}, None, None, 0)
    last = int(ticks["tick"].max())  # type: ignore[arg-type]
    lo = max(0, last - HISTORY_TICKS + 1)
    recent = ticks.filter(pl.col("tick") >= lo).with_columns(pl.col("time").dt.epoch("us"))
    wanted = pl.col("tick").is_between(lo, last)
    tables = {t: rec._collect(t, rec.scan(t, (lo, last)).filter(wanted)) for t in (NODE_STATS.name, SYSTEM_STATS.name)}
    objects = rec._collect(
        "objects",
        rec.scan_objects()
        .filter(pl.col("kind").is_in(["node", "configz"]))
        .sort("observed", maintain_order=True)
        .select("kind", "name", "node", "deleted", "body"),
    )
    node_objects: dict[str, dict[str, Any] | None] = {}
    configz: dict[str, dict[str, Any] | None] = {}
    for kind, name, node, deleted, body in objects.iter_rows():
        if kind == "node" and name:
            node_objects[name] = None if deleted else orjson.loads(body)
        elif kind == "configz" and node:
            configz[node] = None if deleted else orjson.loads(body)
    with_data = set(tables[NODE_STATS.name]["node"].unique().to_list())
    tick_times: dict[str, dict[int, int]] = {}
    newest_row: dict[str, tuple[int, int, bool, str | None]] = {}
    for tick, time_us, node, ok, error in recent.sort("tick").iter_rows():
        if ok and node in with_data:
            tick_times.setdefault(node, {})[tick] = time_us
        newest_row[node] = (tick, time_us, bool(ok and node in with_data), error)
    steppers: dict[str, NodeStepper] = {}
    for name, times in tick_times.items():
        stepper = NodeStepper.start(name, request, node_objects.get(name), configz.get(name))
        first = min(times)
        stepper._begin(NodeRows(name, tables), first, times[first])
        if stepper.mode == FAST:
            steppers[name] = stepper
    frames = signal_frames(steppers, tables, tick_times)
    nodes: dict[str, NodeNow] = {}
    for name, (tick, time_us, ok, error) in sorted(newest_row.items()):
        version = _version(node_objects.get(name))
        fast = steppers.get(name)
        frame = frames.get(name)
        if not ok or fast is None or frame is None or not frame.height:
            reason = None if ok else (error or "no data")
            nodes[name] = NodeNow.without_pass(
                name, tick, time_us, stale=not ok, reason=reason, version=version, catching_up=CATCHING_UP
            )
            continue
        stepper = fast
        assert stepper.fast is not None
        history: dict[str, SignalHistory] = {}
        thresholds: dict[str, list[int]] = {}
        made: list[Forecast] = []
        tracked = [t.signal for t in stepper.fast.machine.thresholds]
        for (observed, resolved), when in zip(
            signals_seen(frame, stepper.fast.machine.thresholds), frame["when"], strict=True
        ):
            thresholds, made = forecast(name, observed, resolved, history, _us(when), tracked)
        signals = {s: v[0] for s, v in observed.items()}
        nodes[name] = NodeNow(
            node=name,
            tick=int(frame["tick"][-1]),
            time_us=_us(frame["when"][-1]),
            stale=False,
            stale_reason=None,
            kubelet_version=stepper.settings.profile.version,
            signals=signals,
            thresholds={k: tuple(v) for k, v in thresholds.items()},
            conditions=(),
            next_to_go=None,
            forecasts=tuple(made),
            tick_time_us=tick_times[name][int(frame["tick"][-1])],
            catching_up=CATCHING_UP,
        )
    return Preview(nodes, last, int(recent["time"].max()), int(ticks["tick"].n_unique()))  # type: ignore[arg-type]


def _us(value: Any) -> int:
    return value if isinstance(value, int) else to_us(value)


def _version(node: dict[str, Any] | None) -> str:
    info = ((node or {}).get("status") or {}).get("nodeInfo") or {}
    return ".".join(str(info.get("kubeletVersion") or "").lstrip("v").split(".")[:2])
