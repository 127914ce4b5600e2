"""Results directories written by an earlier evictlens still open: users keep them.

``data/results-v1`` was written by the schema-1 writer (``evictlens replay --sample sidecar-stress -o``
at commit 32707d6, before per-node horizons): it loads with the keys version 2 added at their defaults.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from replay.results import READABLE_VERSIONS, SCHEMA_VERSION
from replay.results_io import load, to_document

V1 = Path(__file__).with_name("data") / "results-v1"


def test_a_schema_1_results_directory_loads_with_no_horizon() -> None:
    result = load(V1)
    assert result.schema_version == 1 and 1 in READABLE_VERSIONS and SCHEMA_VERSION in READABLE_VERSIONS
    assert result.evictions and all(n.horizon is None and n.horizon_reason == "" for n in result.nodes)
    assert result.signals.select(pl.len()).collect().item() > 0
    assert to_document(result)["nodes"][0]["horizon"] is None
