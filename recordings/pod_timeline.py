"""The pods bound to one node over time, indexed once, answered at any moment in time order.

A replay asks "which pods were in force when the kubelet took these stats?" at every pass. The
objects table keeps each pod version with the time the recorder observed it; this index groups
versions by node once (a pod keeps its node; tombstones inherit it) and applies them in order as
the replay's clock moves forward, so a pass costs only the versions observed since the last one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import polars as pl


@dataclass(frozen=True, slots=True)
class PodVersion:
    observed: datetime
    key: str
    """The pod's UID, else ``namespace/name``."""
    seq: int
    """Position in the recording's pod versions: a stable identity for caching a parsed pod."""
    body: str
    deleted: bool

    def decode(self) -> dict[str, Any]:
        doc: dict[str, Any] = orjson.loads(self.body)
        return doc


class PodsInForce:
    """The latest non-deleted version of each pod of one node as of a time, advanced incrementally."""

    def __init__(self, versions: list[PodVersion]) -> None:
        self._versions = versions
        self._next = 0
        self._at: datetime | None = None
        self._current: dict[str, PodVersion] = {}
        self._first: dict[str, PodVersion] = {}
        for v in versions:
            if not v.deleted:
                self._first.setdefault(v.key, v)

    def at(self, when: datetime) -> dict[str, PodVersion]:
        """Key → version in force at ``when`` (observed ≤ when, not deleted). Do not mutate the result."""
        if self._at is not None and when < self._at:
            self._next, self._current = 0, {}
        self._at = when
        versions, i = self._versions, self._next
        while i < len(versions) and versions[i].observed <= when:
            v = versions[i]
            if v.deleted:
                self._current.pop(v.key, None)
            else:
                self._current[v.key] = v
            i += 1
        self._next = i
        return self._current

    def append(self, version: PodVersion) -> None:
        """A version observed after the ones given (a recording being written): applied at the next ``at``."""
        self._versions.append(version)
        if not version.deleted:
            self._first.setdefault(version.key, version)

    def compact(self) -> list[PodVersion]:
        """Forget the versions already applied, for a reader that never goes back in time (the live engine): the
        ones in force stay, a version to come keeps its place, so ``at`` answers as before for any later time.
        Returns the versions kept (in force, then to come)."""
        applied = {id(v) for v in self._versions[: self._next]}
        in_force = {id(v) for v in self._current.values()}
        del self._versions[: self._next]
        self._next = 0
        for key, v in self._first.items():  # a first version applied keeps only its time (all that is read of it)
            if id(v) in applied and id(v) not in in_force:
                self._first[key] = _bodiless(v)
        return [*self._current.values(), *self._versions]

    def first_version(self, key: str) -> PodVersion | None:
        """The earliest stored version of a pod (for one whose stats arrive before its object was observed)."""
        return self._first.get(key)


def _bodiless(v: PodVersion) -> PodVersion:
    return PodVersion(v.observed, v.key, v.seq, "", v.deleted)


def index_pods_by_node(objects: pl.DataFrame) -> dict[str, list[PodVersion]]:
    """Every stored pod version, grouped by the node the pod is bound to, in observation order.

    An unbound (pending) version belongs to no node; a tombstone belongs to the node its pod was on.
    """
    df = objects.filter(pl.col("kind") == "pod").sort("observed", maintain_order=True)
    key = pl.coalesce("uid", pl.col("namespace") + "/" + pl.col("name"))
    df = df.with_columns(key.alias("_key"))
    df = df.with_columns(pl.col("node").forward_fill().backward_fill().over("_key").alias("_bound"))
    df = df.with_columns(
        pl.when(pl.col("node").is_null() & ~pl.col("deleted")).then(None).otherwise(pl.col("_bound")).alias("_node")
    )
    index: dict[str, list[PodVersion]] = {}
    for seq, (observed, k, n, body, deleted) in enumerate(
        df.select("observed", "_key", "_node", "body", "deleted").iter_rows()
    ):
        if n is not None:
            index.setdefault(n, []).append(PodVersion(observed, k, seq, body, bool(deleted)))
    return index


def pods_of_nodes(objects: pl.LazyFrame, nodes: Sequence[str]) -> pl.DataFrame:
    """The stored versions of every pod ever bound to one of ``nodes`` (its pending and tombstone versions
    too): what :func:`index_pods_by_node` needs for those nodes, read without the rest of the cluster."""
    key = pl.coalesce("uid", pl.col("namespace") + "/" + pl.col("name"))
    pods = objects.filter(pl.col("kind") == "pod").with_columns(key.alias("_k"))
    bound = pods.filter(pl.col("node").is_in(list(nodes))).select("_k").unique()
    return pods.join(bound, on="_k", how="semi").drop("_k").collect()
