"""The engine's columnar path: same results as the per-tick reference, faster.

Signals are computed for all ticks of a node at once with polars, the manager's state machine runs
as a loop over numbers, and the reference code (parse_summary + EvictionManager) is called only at
passes where a threshold is actionable or a local-storage limit may be exceeded, so messages and
rankings stay byte-exact. :func:`replay.engine.replay` is the entry point.
"""
