"""NaN and ±Inf samples: dropped from the recording, never silently.

Why: Prometheus stores what an exporter exposed, and an exporter exposes NaN when it could not
read a value (cAdvisor's working set of a cgroup that went away, a division by zero in a recording
rule) or ±Inf. The Summary API has no such numbers, so such a sample is recorded as missing at its
step — which at an eviction tick means the signal is not observed there and the manager decides
without it. The manifest says so per field: how many, and the first node and time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import polars as pl


class _Query(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def what(self) -> str: ...


@dataclass
class _Seen:
    what: str
    count: int
    first: tuple[int, str, float]  # (tick, node, value)
    kinds: set[str]


class NonFinite:
    """Per field, the NaN/±Inf samples the import dropped (counts and the earliest), bounded memory."""

    def __init__(self, time_of: Callable[[int], str]) -> None:
        self.time_of = time_of
        self.seen: dict[str, _Seen] = {}

    def sink(self, q: _Query, nodes: Sequence[str], taken: set[str]) -> Callable[[pl.DataFrame], None]:
        """A callback for one alternative of ``q``: only nodes it serves (not one taken by an earlier
        alternative, not a node outside the import) count."""
        allowed = set(nodes) - set(taken)

        def add(bad: pl.DataFrame) -> None:
            rows = bad.filter(pl.col("node").is_in(list(allowed))).select("tick", "node", "value")
            if not rows.height:
                return
            # the earliest, the first node by name at a tie: the same whichever batches of nodes report it
            tick, node, value = rows.sort("tick", "node", maintain_order=True).row(0)
            entry = self.seen.get(q.name)
            kinds = {"NaN" if v != v else "+Inf" if v > 0 else "-Inf" for v in rows["value"].unique().to_list()}
            if entry is None:
                self.seen[q.name] = _Seen(q.what, rows.height, (tick, node, value), kinds)
            else:
                entry.count += rows.height
                entry.kinds |= kinds
                entry.first = min(entry.first, (tick, node, value), key=lambda f: f[:2])

        return add

    def notes(self) -> list[str]:
        out = []
        for seen in self.seen.values():
            tick, node, _value = seen.first
            kinds = "/".join(sorted(seen.kinds))
            out.append(
                f"{seen.what}: {seen.count} {kinds} sample{'s' if seen.count != 1 else ''} (first on {node} at "
                f"{self.time_of(tick)}): recorded as missing at those steps, so a pass there decides without "
                "that signal"
            )
        return out
