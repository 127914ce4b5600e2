"""Two results' evictions aligned by pod: the Compare screen's rows (plain data)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from replay.results import Eviction, ReplayResult


@dataclass(frozen=True)
class Pair:
    node: str
    namespace: str
    pod: str
    a: Eviction | None
    b: Eviction | None

    @property
    def key(self) -> str:
        return f"{self.node}/{self.namespace}/{self.pod}"

    @property
    def status(self) -> str:
        if self.a is None:
            return "only in B"
        if self.b is None:
            return "only in A"
        if self.a.message != self.b.message:
            return "message differs"
        return "same message" if self.a.tick == self.b.tick else "same message, other time"

    @property
    def first_time(self) -> datetime | None:
        times = [e.time for e in (self.a, self.b) if e is not None]
        return min(times) if times else None


def align(a: ReplayResult, b: ReplayResult) -> list[Pair]:
    """Each pod either result evicts (its first eviction in each), in the order they first happen."""

    def first(result: ReplayResult) -> dict[tuple[str, str, str], Eviction]:
        out: dict[tuple[str, str, str], Eviction] = {}
        for e in result.evictions:
            out.setdefault((e.node, e.namespace, e.pod), e)
        return out

    fa, fb = first(a), first(b)
    pairs = [Pair(*k, fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb])]
    return sorted(pairs, key=lambda p: (p.first_time is None, p.first_time or datetime.min, p.key))
