"""Any moment of a recording, explained: replay one node up to a tick or time and explain that pass.

The pass is the engine's own (:func:`replay.engine.moment`: one node's columns up to that moment, the
reference manager at that one pass), so it is the replay's own (same settings, same pods at the sample
time, the manager state the earlier passes built): ``explain REC --at first-eviction`` prints exactly the
message the replay predicts, plus what the manager remembers: first-observed times, grace periods running and
conditions held by the transition period.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from recordings.reader import Recording
from recordings.scratch import scratch_dir
from replay.engine import Moment, MomentPass, NodeRun, Pass
from replay.engine import moment as engine_moment
from replay.explain import Explanation, ObservationRow, manager_state
from replay.kubelet.duration import format_duration
from replay.kubelet.ranking import RankFacts, rank_facts
from replay.kubelet.thresholds import get_threshold_quantity
from replay.scenario import differs
from replay.settings import SettingsRequest


def explain_moment(
    rec: Recording,
    request: SettingsRequest,
    node: str | None,
    moment: Moment,
    *,
    jobs: int = 1,
    closed_loop: bool = False,
) -> Explanation:
    """The moment as these settings would have lived it. On a scenario's recording with other settings the
    scenario runs again with them (the closed loop, as ``whatif`` does): the moment is of that run, exact.
    On any other recording with other settings the pass reads the recorded usage, which holds only until the
    replay and the recording part ways (a pod evicted in one and not the other): a later moment says so.
    ``closed_loop``: ``rec`` already is such a run (:func:`replay.scenario.regenerate`), explained as it is."""
    from replay.scenario import can_regenerate

    if closed_loop:
        found = engine_moment(rec, request, node, moment, jobs=jobs)
        explanation = explanation_of(found.run, found.p, moment)
        return dataclasses.replace(explanation, notes=(*explanation.notes, *found.notes, _closed_loop_note(None)))
    if can_regenerate(rec, request):
        return _explain_regenerated(rec, request, node, moment, jobs=jobs)
    found = engine_moment(rec, request, node, moment, jobs=jobs)
    explanation = explanation_of(found.run, found.p, moment)
    source = tuple(f"recording source ({rec.manifest.source}): {note}" for note in rec.manifest.notes)
    parted = _parted(rec, request, found) if differs(request) else ()
    return dataclasses.replace(explanation, notes=(*explanation.notes, *found.notes, *parted, *source))


def _closed_loop_note(how: str | None) -> str:
    from replay.scenario import CLOSED_LOOP

    return (
        f"{CLOSED_LOOP}{f' ({how})' if how else ''}: this moment is of the scenario run again with these settings "
        "(pods this kubelet evicted stopped, controllers recreated them, the kernel acted on what was left), not of "
        "the recorded run: exact, no horizon"
    )


def _explain_regenerated(
    rec: Recording, request: SettingsRequest, node: str | None, moment: Moment, *, jobs: int
) -> Explanation:
    from replay.scenario import regenerate

    if moment.tick is not None:
        # a tick of the recording, found by its time in the new run (a memcg notification can add ticks)
        names = [node] if node else rec.nodes()
        times = {t.index: t.time for t in rec.ticks(names[0])} if len(names) == 1 else {}
        if moment.tick in times:
            moment = Moment(at=times[moment.tick])
    with scratch_dir("evictlens-closed-loop-") as tmp:
        again = regenerate(rec, request, Path(tmp) / "rec")
        found = engine_moment(again.recording, again.request, node, moment, jobs=jobs)
        explanation = explanation_of(found.run, found.p, moment)
    note = _closed_loop_note(again.describe())
    return dataclasses.replace(explanation, notes=(*explanation.notes, *found.notes, note))


def _parted(rec: Recording, request: SettingsRequest, found: MomentPass) -> tuple[str, ...]:
    """Where the node's replay with these settings and the recording part ways, when that is before the pass."""
    from replay.engine import replay

    (result,) = replay(rec, [request], [found.run.node])
    horizon = next((n for n in result.nodes if n.node == found.run.node and n.horizon is not None), None)
    if horizon is None or horizon.horizon is None or horizon.horizon >= found.p.time:
        return ()
    return (
        f"as recorded only until {horizon.horizon.isoformat()} ({horizon.horizon_reason}): this pass is later, so "
        "it reads usage recorded in a world these settings would have changed; `evictlens whatif` models what "
        "follows (counterfactual)",
    )


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
