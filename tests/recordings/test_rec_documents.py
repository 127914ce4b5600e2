"""One JSON/YAML loader (recordings.documents) for explain, replay, conformance and import."""

from __future__ import annotations

from pathlib import Path

import replay.inputs
from recordings import documents
from recordings.importer import load_file


def test_the_port_reads_through_the_same_loader() -> None:
    assert replay.inputs.load_document is documents.load_document


def test_import_keeps_yaml_timestamps_as_strings(tmp_path: Path) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text(
        "kind: PodList\nitems:\n- kind: Pod\n  metadata:\n    name: a\n    creationTimestamp: 2024-05-20T09:57:55Z\n"
    )
    doc = load_file(str(pods))
    assert doc.kind == "pods"
    assert doc.body["items"][0]["metadata"]["creationTimestamp"] == "2024-05-20T09:57:55Z"


def test_import_keeps_integers_above_uint64_exact(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text('{"node": {"nodeName": "n", "fs": {"usedBytes": 18446744073709551616}}, "pods": []}')
    doc = load_file(str(summary))
    assert doc.body["node"]["fs"]["usedBytes"] == 18446744073709551616
