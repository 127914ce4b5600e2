"""Issue 29 item 3: the decisions the kubelet leaves to Go's map order (replay.kubelet.map_order)."""

from __future__ import annotations

from kube.quantity import Format, Quantity
from replay.kubelet.manager import build_signal_to_node_reclaim_funcs
from replay.kubelet.map_order import describe_alternatives, first_candidates, map_order_alternatives
from replay.kubelet.thresholds import SignalObservation, Threshold, ThresholdValue, sort_by_eviction_priority

MI = 1 << 20


def _t(signal: str, quantity: str) -> Threshold:
    return Threshold(signal, "LessThan", ThresholdValue(quantity=Quantity.parse(quantity)))


def _obs(available: int, capacity: int) -> SignalObservation:
    return SignalObservation(Quantity.new(available, Format.DECIMAL_SI), Quantity.new(capacity, Format.DECIMAL_SI))


def test_memory_thresholds_come_first_and_any_of_them_can() -> None:
    nodefs, memory, allocatable = (
        _t("nodefs.available", "1Gi"),
        _t("memory.available", "500Mi"),
        _t("allocatableMemory.available", "500Mi"),
    )
    actionable = [nodefs, memory, allocatable]
    assert first_candidates(actionable) == [memory, allocatable]
    assert first_candidates([nodefs]) == [nodefs]


def test_two_memory_thresholds_with_other_observations_are_two_decisions() -> None:
    memory, allocatable = _t("memory.available", "500Mi"), _t("allocatableMemory.available", "500Mi")
    actionable = [memory, allocatable]
    sort_by_eviction_priority(actionable)
    chosen = actionable[0]
    observations = {
        "memory.available": _obs(300 * MI, 8192 * MI),
        "allocatableMemory.available": _obs(200 * MI, 6 << 30),
    }
    alternatives = map_order_alternatives(actionable, chosen, observations, {}, False, False)
    assert len(alternatives) == 1 and alternatives[0] is not chosen
    note = describe_alternatives(chosen, alternatives)
    assert "one of 2" in note and alternatives[0].describe() in note


def test_same_outcome_is_no_alternative() -> None:
    memory, allocatable = _t("memory.available", "500Mi"), _t("allocatableMemory.available", "500Mi")
    same = _obs(300 * MI, 8192 * MI)
    observations = {"memory.available": same, "allocatableMemory.available": same}
    assert map_order_alternatives([memory, allocatable], memory, observations, {}, False, False) == ()
    assert map_order_alternatives([memory], memory, observations, {}, False, False) == ()


def test_containerfs_copy_differs_only_while_it_has_no_reclaim_functions() -> None:
    nodefs, copy = _t("nodefs.inodesFree", "1000"), _t("containerfs.inodesFree", "1000")
    observations = {"nodefs.inodesFree": _obs(500, 2_000_000), "containerfs.inodesFree": _obs(500, 2_000_000)}
    before = build_signal_to_node_reclaim_funcs(True, True, containerfs=False)  # 1.29-1.31
    after = build_signal_to_node_reclaim_funcs(True, True)  # 1.32+
    assert map_order_alternatives([nodefs, copy], nodefs, observations, before, True, True) == (copy,)
    assert map_order_alternatives([nodefs, copy], nodefs, observations, after, True, True) == ()
    # other observations print another threshold sentence: a second decision even from 1.32
    observations["containerfs.inodesFree"] = _obs(400, 2_000_000)
    assert map_order_alternatives([nodefs, copy], nodefs, observations, after, True, True) == (copy,)
