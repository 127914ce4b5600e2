"""Any moment of a recording, explained: replay one node up to a tick or time and explain that pass.

The pass is the replay's own (same settings, same pods at the sample time, the manager state the
earlier passes built), so ``explain REC --at first-eviction`` prints exactly the message the replay
predicts, plus what the manager remembers: first-observed times, grace periods running and
conditions held by the transition period.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from recordings.errors import InputError
from recordings.reader import Recording, to_micros
from replay.engine import NodeRun, Pass, Replay
from replay.explain import Explanation, ObservationRow, manager_state
from replay.kubelet.duration import format_duration
from replay.kubelet.ranking import RankFacts, rank_facts
from replay.kubelet.thresholds import get_threshold_quantity
from replay.settings import SettingsRequest

FIRST_EVICTION = "first-eviction"


@dataclass(frozen=True)
class Moment:
    """Where to stop: a tick, a time (RFC 3339), or the first predicted eviction."""

    tick: int | None = None
    at: datetime | None = None
    first_eviction: bool = False

    @classmethod
    def parse(cls, at: str | None, tick: int | None) -> Moment:
        if at is not None and tick is not None:
            raise InputError("give --at or --tick, not both", field="--tick")
        if tick is not None:
            return cls(tick=tick)
        if at == FIRST_EVICTION:
            return cls(first_eviction=True)
        if at is None:
            raise InputError("say which moment: --at TIME (RFC 3339), --at first-eviction or --tick K", field="--at")
        try:
            when = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"expected an RFC 3339 time such as 2024-05-20T10:15:20Z or 'first-eviction', got {at!r}",
                             field="--at") from None
        if when.tzinfo is None:
            raise InputError(f"give a time zone (e.g. {at}Z)", field="--at")
        return cls(at=when)

    def describe(self) -> str:
        if self.tick is not None:
            return f"tick {self.tick}"
        if self.at is not None:
            return self.at.isoformat()
        return "the first eviction"


def _last_pass(run: NodeRun, moment: Moment) -> Pass | None:
    last = None
    for p in run.passes(until_tick=moment.tick):
        if moment.at is not None and to_micros(p.time) > to_micros(moment.at):
            break
        last = p
        if moment.first_eviction and p.result.evictions:
            break
    return last


def find_pass(rec: Recording, request: SettingsRequest, node: str | None, moment: Moment) -> tuple[NodeRun, Pass]:
    """Replay up to the moment; without a node, the first eviction anywhere (others need a node)."""
    names = [node] if node else rec.nodes()
    if node is None and not moment.first_eviction and len(names) > 1:
        raise InputError(f"the recording has {len(names)} nodes; say which with --node ({', '.join(names)})",
                         field="--node")
    replay = Replay(rec, request, names)
    found: list[tuple[NodeRun, Pass]] = []
    for run in replay.runs:
        p = _last_pass(run, moment)
        if p is not None and (not moment.first_eviction or p.result.evictions):
            found.append((run, p))
    if not found:
        if moment.first_eviction:
            raise InputError("the replay predicts no eviction" + (f" on {node}" if node else ""), field="--at")
        raise InputError(f"no recorded pass of {names[0]} at or before {moment.describe()}", field="--at")
    return min(found, key=lambda rp: to_micros(rp[1].time))


def explain_moment(rec: Recording, request: SettingsRequest, node: str | None, moment: Moment) -> Explanation:
    run, p = find_pass(rec, request, node, moment)
    result = p.result
    manager = run.manager
    assert manager is not None  # a pass was made
    rows = []
    for signal, obs in result.observations.items():
        entries = tuple(
            (t.describe(), str(get_threshold_quantity(t.value, obs.capacity)), t in result.thresholds_met)
            for t in manager.thresholds if t.signal == signal
        )
        rows.append(ObservationRow(signal, str(obs.available), str(obs.capacity), entries))
    ranking: tuple[RankFacts, ...] = ()
    if result.threshold_to_reclaim is not None and result.ranking:
        ranking = tuple(rank_facts(result.ranking, result.stats, result.threshold_to_reclaim.signal,
                                   run.topology.dedicated_image_fs, run.topology.split_container_image_fs,
                                   run.settings.profile))
    cfg = run.settings.config
    sources = "; ".join(f"{k} from {v}" for k, v in cfg.sources.items())
    return Explanation(
        node_name=run.node,
        kubelet_version=run.settings.profile.version,
        version_note=run.settings.version_source,
        config_source=f"{cfg.describe()} ({sources})" if sources else cfg.describe(),
        topology=run.topology,
        topology_note=run.topology_source,
        pods_note=f"{len(p.candidates)} active pods at the stats' sample time (from the recording)",
        observations=tuple(rows),
        result=result,
        ranking=ranking,
        notes=(f"replayed {run.node} from the start of the recording up to {moment.describe()}: this is pass "
               f"at tick {p.tick}; pressure transition period {format_duration(cfg.pressure_transition_period)}",),
        moment=f"tick {p.tick}, stats sampled at {p.time.isoformat()} (tick started {p.tick_time.isoformat()})",
        state=manager_state(manager, result),
    )
