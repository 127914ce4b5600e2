"""The flight recorder: ``evictlens record`` composed with the engine.

It sits above both ``recordings`` (the recorder, the format) and ``replay`` (the engine): it keeps a
rolling window, turns every real eviction or kernel kill the recorder stores into an incident (a packed
window and the engine's explanation at that moment), and serves the recorder's health and metrics.
``recordings`` never imports it; it registers the ``record`` command through the ``evictlens.commands``
entry point.
"""
