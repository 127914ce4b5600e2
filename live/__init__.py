"""Live: the one engine carried forward tick by tick as a recording grows, with a forecast.

It sits above ``recordings`` and ``replay``: it reads the finished ticks of a recording being written
(the flight recorder's, ``record`` running beside, or a bundled scenario played in real time) and keeps
each node's eviction-manager state, so ``evictlens watch`` and ``evictlens tui --live`` say who goes
next, now, and when.
"""
