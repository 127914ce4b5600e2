"""`--counterfactual`: an evicted pod's recorded usage leaves its node's later summaries."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from recbuild import POD_UID, sample, sidecar_recording

from recordings.reader import open_recording
from replay.cli import main
from replay.counterfactual import remove_pods
from replay.engine import replay_recording
from replay.kubelet.manager import FsTopology
from replay.settings import SettingsRequest

SHARED = FsTopology()
DEDICATED = FsTopology(dedicated_image_fs=True)
SPLIT = FsTopology(dedicated_image_fs=True, split_container_image_fs=True)


def _summary() -> dict[str, Any]:
    s: dict[str, Any] = copy.deepcopy(sample("summary.json"))
    pod = next(p for p in s["pods"] if p["podRef"]["uid"] == POD_UID)
    pod["volume"] = [
        {"name": "scratch", "usedBytes": 1000, "inodesUsed": 3},
        {"name": "token", "usedBytes": 7, "inodesUsed": 1},
    ]
    pod["process_stats"] = {"process_count": 9}
    return s


def _pod(s: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in s["pods"] if p["podRef"]["uid"] == POD_UID)


def _containers_sum(pod: dict[str, Any], part: str, key: str) -> int:
    return sum(c.get(part, {}).get(key, 0) for c in pod["containers"])


def test_memory_goes_back_at_once_to_node_and_pods_container_and_the_stats_entry_is_dropped() -> None:
    before = _summary()
    pristine = copy.deepcopy(before)
    ws = _containers_sum(_pod(before), "memory", "workingSetBytes")
    after, (freed,) = remove_pods(before, {POD_UID}, SHARED)
    assert before == pristine  # pure: the input is untouched
    assert freed.memory_working_set == ws and freed.processes == 9
    assert after["node"]["memory"]["availableBytes"] == before["node"]["memory"]["availableBytes"] + ws
    assert after["node"]["memory"]["workingSetBytes"] == before["node"]["memory"]["workingSetBytes"] - ws
    pods_before = next(c for c in before["node"]["systemContainers"] if c["name"] == "pods")["memory"]
    pods_after = next(c for c in after["node"]["systemContainers"] if c["name"] == "pods")["memory"]
    assert pods_after["availableBytes"] == pods_before["availableBytes"] + ws
    assert POD_UID not in {p["podRef"]["uid"] for p in after["pods"]}
    assert len(after["pods"]) == len(before["pods"]) - 1
    assert after["node"]["rlimit"]["curproc"] == before["node"]["rlimit"]["curproc"] - 9


@pytest.mark.parametrize(
    ("topology", "nodefs", "imagefs", "containerfs"),
    [
        (SHARED, "all", "all", "all"),
        (DEDICATED, "logs+volumes", "rootfs", "rootfs"),
        (SPLIT, "all", "none", "all"),
    ],
)
def test_disk_goes_back_to_the_filesystem_each_part_lives_on(
    topology: FsTopology, nodefs: str, imagefs: str, containerfs: str
) -> None:
    before = _summary()
    pod = _pod(before)
    rootfs = _containers_sum(pod, "rootfs", "usedBytes")
    logs = _containers_sum(pod, "logs", "usedBytes")
    amounts = {"all": rootfs + logs + 1000, "logs+volumes": logs + 1000, "rootfs": rootfs, "none": 0}
    after, _ = remove_pods(before, {POD_UID}, topology, emptydir_volumes={POD_UID: ("scratch",)})
    node_b, node_a = before["node"], after["node"]
    assert node_a["fs"]["availableBytes"] - node_b["fs"]["availableBytes"] == amounts[nodefs]
    assert node_b["fs"]["usedBytes"] - node_a["fs"]["usedBytes"] == amounts[nodefs]
    for key, expect in (("imageFs", imagefs), ("containerFs", containerfs)):
        delta = node_a["runtime"][key]["availableBytes"] - node_b["runtime"][key]["availableBytes"]
        assert delta == amounts[expect], key


def test_volumes_that_are_not_disk_emptydirs_stay() -> None:
    before = _summary()
    pod = _pod(before)
    expected = _containers_sum(pod, "rootfs", "usedBytes") + _containers_sum(pod, "logs", "usedBytes")
    after, _ = remove_pods(before, {POD_UID}, SHARED)  # no emptyDir names known: the token volume is tmpfs
    assert after["node"]["fs"]["availableBytes"] - before["node"]["fs"]["availableBytes"] == expected


def test_freed_space_never_exceeds_capacity_and_missing_pods_change_nothing() -> None:
    before = _summary()
    before["node"]["fs"]["availableBytes"] = before["node"]["fs"]["capacityBytes"] - 1
    after, _ = remove_pods(before, {POD_UID}, SHARED)
    assert after["node"]["fs"]["availableBytes"] == before["node"]["fs"]["capacityBytes"]
    same, freed = remove_pods(before, {"not-there"}, SHARED)
    assert freed == () and same == before


def test_open_loop_replay_goes_on_evicting_but_counterfactual_stops_after_the_memory_is_back(tmp_path: Path) -> None:
    rec = open_recording(sidecar_recording(tmp_path / "rec"))
    open_loop = replay_recording(rec, SettingsRequest(kubelet_version="1.30"))
    closed = replay_recording(rec, SettingsRequest(kubelet_version="1.30", counterfactual=True))
    assert [e.pod for e in open_loop.evictions] == ["alloc-sidecars", "kindnet-7xq2p"]
    assert [e.pod for e in closed.evictions] == ["alloc-sidecars"]
    assert closed.settings["counterfactual"] is True and open_loop.settings["counterfactual"] is False
    assert any("--counterfactual" in n and "2 pod stats entries removed" in n for n in closed.notes)
    assert not any("--counterfactual" in n for n in open_loop.notes)
    # the signal the manager saw after the eviction carries the freed working set
    signals = closed.signals.collect()
    mem = signals.filter((signals["signal"] == "memory.available") & (signals["tick"] == 3))
    assert mem["available"][0] > 4 * 1024**3


def test_replay_command_takes_counterfactual_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["replay", str(rec), "--kubelet-version", "1.30", "--counterfactual", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["counterfactual"] is True and len(doc["evictions"]) == 1
    assert main(["replay", str(rec), "--kubelet-version", "1.30", "--counterfactual"]) == 0
    assert "note: --counterfactual" in capsys.readouterr().out


def test_whatif_counterfactual_applies_to_every_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = sidecar_recording(tmp_path / "rec")
    assert main(["whatif", str(rec), "--kubelet-version", "1.30,1.32", "--counterfactual", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [v["settings"]["counterfactual"] for v in doc["variants"]] == [True, True, True]
    assert [v["evictions"] for v in doc["variants"]] == [1, 1, 1]
