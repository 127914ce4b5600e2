"""Node partials → one ReplayResult through :meth:`replay.collect.ResultBuilder.finish` itself.

Partials come in the recording's node order (from one process, several, or a Ray cluster); the
builder is given each node's counts and frames instead of passes, so nodes, notes, settings digest,
matches and overcommit lead are computed by the reference code. Eviction ids are renumbered in node
order, so the result does not depend on how nodes were sharded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import polars as pl

from recordings.reader import Recording
from replay.collect import ResultBuilder
from replay.fast.driver import NodePartial
from replay.results import CONDITIONS_SCHEMA, OVERCOMMIT_SCHEMA, SIGNALS_SCHEMA, Eviction, ReplayResult
from replay.settings import SettingsRequest


def _columns(frames: list[pl.DataFrame], schema: pl.Schema) -> dict[str, Any]:
    frames = [f for f in frames if f.height]
    df = pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=schema)
    return {name: df[name] for name in schema.names()}


def assemble(rec: Recording, request: SettingsRequest, partials: Sequence[NodePartial],
             notes: Sequence[str] = ()) -> ReplayResult:
    runs = [SimpleNamespace(
        rec=rec, node=p.node, settings=p.settings, topology=p.topology, topology_source=p.topology_source,
        manager=None if p.thresholds is None else SimpleNamespace(thresholds=p.thresholds), gaps=p.gaps,
        counterfactual_removed=p.counterfactual_removed) for p in partials]
    builder = ResultBuilder(cast(Any, SimpleNamespace(rec=rec, request=request, runs=runs)))
    evictions: list[Eviction] = []
    for p in partials:
        state = builder._nodes[p.node]
        state.passes, state.reasons, state.errors = p.passes, Counter(p.reasons), list(p.errors)
        state.first, state.last, state.open, state.first_eviction = p.first, p.last, dict(p.open), p.first_eviction
        for e in p.evictions:
            evictions.append(replace(e, id=len(evictions)))
    builder._evictions = evictions
    builder._signals = _columns([p.signals for p in partials], SIGNALS_SCHEMA)
    builder._conditions = {name: list(col) for name, col in
                           _columns([p.conditions for p in partials], CONDITIONS_SCHEMA).items()}
    builder._overcommit = _columns([p.overcommit for p in partials], OVERCOMMIT_SCHEMA)
    return builder.finish(notes)
