"""The counterfactual's other direction: a pod the recording shows evicted that the variant keeps is held at its
last recorded stats entry (replay/COUNTERFACTUAL.md), the inverse of taking an evicted pod off."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from recbuild import POD_UID, sample

from replay.counterfactual import hold_pods, remove_pods
from replay.kubelet.manager import FsTopology

TOPOLOGIES = [
    FsTopology(),
    FsTopology(dedicated_image_fs=True),
    FsTopology(dedicated_image_fs=True, split_container_image_fs=True),
]


def _summary() -> dict[str, Any]:
    s: dict[str, Any] = copy.deepcopy(sample("summary.json"))
    pod = next(p for p in s["pods"] if p["podRef"]["uid"] == POD_UID)
    pod["volume"] = [{"name": "scratch", "usedBytes": 1000, "inodesUsed": 3}]
    pod["process_stats"] = {"process_count": 9}
    return s


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_holding_a_pod_charges_back_exactly_what_taking_it_off_freed(topology: FsTopology) -> None:
    before = _summary()
    entry = next(p for p in before["pods"] if p["podRef"]["uid"] == POD_UID)
    gone, (freed,) = remove_pods(before, {POD_UID}, topology, emptydir_volumes={POD_UID: ("scratch",)})
    assert freed.memory_working_set > 0
    pristine = copy.deepcopy(gone)
    held = hold_pods(gone, {POD_UID: entry}, topology, emptydir_volumes={POD_UID: ("scratch",)})
    assert gone == pristine  # pure
    assert held["node"] == before["node"]  # every signal as it was while the pod ran (no clamp was involved)
    assert sorted(p["podRef"]["uid"] for p in held["pods"]) == sorted(p["podRef"]["uid"] for p in before["pods"])


def test_holding_never_takes_available_below_zero() -> None:
    s = _summary()
    entry = next(p for p in s["pods"] if p["podRef"]["uid"] == POD_UID)
    s["node"]["memory"]["availableBytes"] = 1
    held = hold_pods(s, {POD_UID: entry}, FsTopology())
    assert held["node"]["memory"]["availableBytes"] == 0


def test_holding_nothing_changes_nothing() -> None:
    s = _summary()
    assert hold_pods(s, {}, FsTopology()) == s
