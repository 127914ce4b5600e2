"""The columnar fast path of ``evictlens replay``: same results as the per-tick reference, faster.

Signals are computed for all ticks of a node at once with polars, the manager's state machine runs
as a loop over numbers, and the reference code (parse_summary + EvictionManager) is called only at
passes where a threshold is actionable or a local-storage limit may be exceeded, so messages and
rankings stay byte-exact. :func:`replay_fast` and :func:`replay_fast_many` are the entry points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay.fast.driver import replay_fast, replay_fast_many

__all__ = ["replay_fast", "replay_fast_many"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from replay.fast import driver

        return getattr(driver, name)
    raise AttributeError(name)
