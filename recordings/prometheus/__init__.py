"""``evictlens import --prometheus``: a recording built from Prometheus history (PROMETHEUS.md).

``client`` speaks the HTTP API, ``labels`` holds the label conventions, ``queries`` the mapping from
Summary API fields to PromQL, ``build`` the windowed import.
"""
