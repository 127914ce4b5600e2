"""The live engine's events against ``replay`` on the same recording (for bench_live.py, by hand)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recordings.reader import open_recording, to_micros
from replay.engine import replay
from replay.settings import SettingsRequest


def _replayed(rec_dir: Path, until: int | None) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    (result,) = replay(open_recording(rec_dir), [SettingsRequest()], closed_loop=False, jobs=1)
    evictions = sorted(
        (e.node, e.uid, to_micros(e.time), e.message) for e in result.evictions if until is None or e.tick < until
    )
    conditions = []
    for r in result.conditions.iter_rows(named=True):
        if until is not None and r["from_tick"] >= until:
            continue
        closed = r["to"] is not None and (until is None or r["to_tick"] < until)
        conditions.append((r["node"], r["condition"], to_micros(r["from"]), to_micros(r["to"]) if closed else None))
    return evictions, sorted(conditions)


def _live(events: list[dict[str, Any]]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    evictions = sorted(
        (e["node"], e["uid"], e["time_us"], e["message"]) for e in events if e["kind"] == "predicted-eviction"
    )
    opened: dict[tuple[str, str], int] = {}
    conditions = []
    for e in events:
        key = (e["node"], e.get("condition"))
        if e["kind"] == "pressure-start":
            opened[key] = e["time_us"]
        elif e["kind"] == "pressure-end":
            conditions.append((*key, opened.pop(key), e["time_us"]))
    conditions += [(*key, start, None) for key, start in opened.items()]
    return evictions, sorted(conditions)


def _say(replayed: tuple[list[Any], list[Any]], live: tuple[list[Any], list[Any]]) -> str:
    same = replayed == live
    head = "EQUAL to replay" if same else "DIFFERENT from replay"
    text = f"{head}: {len(live[0])} evictions (replay {len(replayed[0])}), "
    text += f"{len(live[1])} condition intervals (replay {len(replayed[1])})"
    if not same:
        for name, a, b in (("evictions", replayed[0], live[0]), ("conditions", replayed[1], live[1])):
            only_r = [x for x in a if x not in b][:5]
            only_l = [x for x in b if x not in a][:5]
            text += f"\n  {name} only in replay: {only_r}\n  {name} only live: {only_l}"
    return text


def compare(rec_dir: Path, events: list[dict[str, Any]]) -> str:
    return _say(_replayed(rec_dir, None), _live(events))


def compare_until(rec_dir: Path, events: list[dict[str, Any]], until: int) -> str:
    return _say(_replayed(rec_dir, until), _live(events))


class Replayed:
    """``replay`` on a recording once, compared with the live events so far at any tick."""

    def __init__(self, rec_dir: Path) -> None:
        (self.result,) = replay(open_recording(rec_dir), [SettingsRequest()], closed_loop=False, jobs=1)

    def compare(self, events: list[dict[str, Any]], until: int) -> str:
        r = self.result
        evictions = sorted((e.node, e.uid, to_micros(e.time), e.message) for e in r.evictions if e.tick < until)
        conditions = []
        for row in r.conditions.iter_rows(named=True):
            if row["from_tick"] >= until:
                continue
            closed = row["to"] is not None and row["to_tick"] < until
            to = to_micros(row["to"]) if closed else None
            conditions.append((row["node"], row["condition"], to_micros(row["from"]), to))
        return _say((evictions, sorted(conditions)), _live(events)).replace("\n", "\n    ")
