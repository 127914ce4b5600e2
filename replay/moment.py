"""Any moment of a recording, explained: replay one node up to a tick or time and explain that pass.

The pass is the engine's own (:func:`replay.engine.moment`: one node's columns up to that moment, the
reference manager at that one pass), so it is the replay's own (same settings, same pods at the sample
time, the manager state the earlier passes built): ``explain REC --at first-eviction`` prints exactly the
message the replay predicts, plus what the manager remembers: first-observed times, grace periods running and
conditions held by the transition period.
"""

from __future__ import annotations

import dataclasses

from recordings.reader import Recording
from replay.engine import Moment, NodeRun, Pass
from replay.engine import moment as engine_moment
from replay.explain import Explanation, ObservationRow, manager_state
from replay.kubelet.duration import format_duration
from replay.kubelet.ranking import RankFacts, rank_facts
from replay.kubelet.thresholds import get_threshold_quantity
from replay.settings import SettingsRequest


def explain_moment(
    rec: Recording, request: SettingsRequest, node: str | None, moment: Moment, *, jobs: int = 1
) -> Explanation:
    found = engine_moment(rec, request, node, moment, jobs=jobs)
    explanation = explanation_of(found.run, found.p, moment)
    source = tuple(f"recording source ({rec.manifest.source}): {note}" for note in rec.manifest.notes)
    return dataclasses.replace(explanation, notes=(*explanation.notes, *found.notes, *source))


def explanation_of(run: NodeRun, p: Pass, moment: Moment) -> Explanation:
    """A pass of a replay (engine or reference) with the node's manager as it stands after it."""
    result = p.result
    manager = run.manager
    assert manager is not None  # a pass was made
    rows = []
    for signal, obs in result.observations.items():
        entries = tuple(
            (t.describe(), str(get_threshold_quantity(t.value, obs.capacity)), t in result.thresholds_met)
            for t in manager.thresholds
            if t.signal == signal
        )
        rows.append(ObservationRow(signal, str(obs.available), str(obs.capacity), entries))
    ranking: tuple[RankFacts, ...] = ()
    if result.threshold_to_reclaim is not None and result.ranking:
        ranking = tuple(
            rank_facts(
                result.ranking,
                result.stats,
                result.threshold_to_reclaim.signal,
                run.topology.dedicated_image_fs,
                run.topology.split_container_image_fs,
                run.settings.profile,
            )
        )
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
        notes=(
            f"replayed {run.node} from the start of the recording up to {moment.describe()}: this is pass "
            f"at tick {p.tick}; pressure transition period {format_duration(cfg.pressure_transition_period)}",
        ),
        moment=f"tick {p.tick}, stats sampled at {p.time.isoformat()} (tick started {p.tick_time.isoformat()})",
        state=manager_state(manager, result),
    )
