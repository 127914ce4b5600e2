"""Lossless for the eviction logic: the port sees the same thing before and after a recording.

Every real capture (summary, with its pods where they exist) is imported into a recording and read
back; signal observations, the ranking for every signal, and the eviction message and annotations
for every pod and resource must be identical to what the port computes from the original files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kube.signals import SIGNAL_TO_RESOURCE
from recordings.importer import import_files
from recordings.reader import open_recording
from replay.kubelet.api import Pod, Summary, parse_pods, parse_summary
from replay.kubelet.message import eviction_message
from replay.kubelet.ranking import build_signal_to_rank_func
from replay.kubelet.signals import make_signal_observations
from replay.kubelet.thresholds import OP_LESS_THAN, Threshold, ThresholdValue
from replay.kubelet.versions import profile

REALDATA = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"
CAPTURES = [
    (REALDATA / "nri-kubernetes-1_16" / "summary", REALDATA / "nri-kubernetes-1_16" / "pods"),
    (REALDATA / "nri-kubernetes-1_28" / "summary", REALDATA / "nri-kubernetes-1_28" / "pods"),
    (REALDATA / "nri-kubernetes-1_35" / "summary", REALDATA / "nri-kubernetes-1_35" / "pods"),
    (REALDATA / "datadog-integrations-core" / "stats_summary.json", None),
    (
        REALDATA / "datadog-integrations-core" / "stats_summary_windows.json",
        REALDATA / "datadog-integrations-core" / "pods_windows.json",
    ),
    (REALDATA / "elastic-beats" / "stats_summary.json", None),
    (REALDATA / "elastic-beats" / "stats_summary_multiple_containers.json", None),
]


def _load(path: Path) -> Any:
    text = path.read_bytes()
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return yaml.safe_load(text)


def _pods_from_summary(raw: dict[str, Any], node: str) -> dict[str, Any]:
    items = [
        {
            "metadata": {
                "name": p["podRef"]["name"],
                "namespace": p["podRef"].get("namespace", ""),
                "uid": p["podRef"]["uid"],
            },
            "spec": {"nodeName": node, "containers": [{"name": c["name"]} for c in p.get("containers") or []]},
        }
        for p in raw.get("pods") or []
    ]
    return {"kind": "PodList", "items": items}


def _everything(summary: Summary, pods: list[Pod], version: str) -> dict[str, Any]:
    """What the eviction logic derives: observations, rankings per signal, messages per pod."""
    prof = profile(version)
    observations, stats = make_signal_observations(summary)
    out: dict[str, Any] = {
        "observations": {s: (str(o.available), str(o.capacity), o.time) for s, o in observations.items()},
    }
    for dedicated in (False, True):
        for signal, rank in build_signal_to_rank_func(dedicated, False, prof).items():
            ordered = sorted(pods, key=lambda p: p.uid)
            rank(ordered, stats)
            out[f"rank/{signal}/{dedicated}"] = [p.uid for p in ordered]
    thresholds = [Threshold(s, OP_LESS_THAN, ThresholdValue(percentage=0.5)) for s in SIGNAL_TO_RESOURCE]
    for pod in pods:
        for resource in ("memory", "ephemeral-storage", "inodes", "pids"):
            out[f"message/{pod.uid}/{resource}"] = eviction_message(
                resource, pod, stats.get(pod.uid), thresholds, observations, prof
            )
    return out


@pytest.mark.parametrize("summary_path,pods_path", CAPTURES, ids=lambda p: f"{p.parent.name}/{p.name}" if p else "")
@pytest.mark.parametrize("version", ["1.30", "1.32", "1.34"])
def test_port_sees_identical_observations_rankings_and_messages(
    tmp_path: Path, summary_path: Path, pods_path: Path | None, version: str
) -> None:
    raw_summary = _load(summary_path)
    node_name = raw_summary["node"].get("nodeName") or "n"
    raw_pods = _load(pods_path) if pods_path else _pods_from_summary(raw_summary, node_name)
    pods_file = tmp_path / "pods.json"
    pods_file.write_bytes(orjson.dumps(raw_pods))
    import_files([str(summary_path), str(pods_file)], tmp_path / "rec", node=node_name)

    rec = open_recording(tmp_path / "rec")
    (node,) = rec.nodes()
    (tick,) = rec.ticks(node)
    summary_back = rec.summary_at(node, tick.index)
    pods_back = rec.pods_at(node)
    assert summary_back is not None and pods_back

    original_pods = [p for p in parse_pods(raw_pods, source="original") if p.node_name in ("", node)]
    by_uid = {p.uid for p in original_pods}
    recorded_pods = [p for p in parse_pods({"kind": "PodList", "items": pods_back}, source="recording")]
    assert {p.uid for p in recorded_pods} == by_uid
    recorded_pods.sort(key=lambda p: p.uid)
    original_pods.sort(key=lambda p: p.uid)

    before = _everything(parse_summary(raw_summary, source="original"), original_pods, version)
    after = _everything(parse_summary(summary_back, source="recording"), recorded_pods, version)
    assert after == before
