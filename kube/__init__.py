"""The Kubernetes vocabulary every evictlens package shares, written once: the error tree and exit statuses
(``errors``), Go's duration grammar (``duration``), resource quantities (``quantity``, a port of
apimachinery's resource.Quantity) and the eviction signals, resources and node conditions
(``signals``). It imports nothing else of evictlens: the port (replay/kubelet) imports only itself and
this base, and recordings never import replay (tests/test_import_hygiene.py).
"""
