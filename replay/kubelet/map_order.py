"""Decisions the kubelet leaves to Go's map order: which actionable threshold a pass acts on.

synchronize's thresholds reach ``getReclaimableThreshold`` in an order no run fixes: helpers.go
``thresholdsMetGracePeriod`` ranges over the ``thresholdsObservedAt`` map (Go randomises map iteration
per range), and ``sort.Sort(byEvictionPriority(...))`` orders nothing but memory first (``Less`` is true
for a memory signal, or when the other signal has no resource). So when several thresholds are
actionable, any memory one — or, with none, any of them — can come first. The port stays deterministic
(configured order, the containerfs copies appended: thresholds.py) and reports here the thresholds the
real kubelet could have acted on instead, when acting on them would be seen to differ: another starved
resource, other node-level reclaim functions (e.g. a ``containerfs.*`` copy before 1.32 has none:
VersionProfile.containerfs_node_reclaim), another rank function, or another ``Threshold quantity …,
available …`` sentence in the message (getThresholdMetInfo takes the first threshold of the resource,
which is the one acted on). Same in every version from 1.26 to master (helpers.go, byEvictionPriority
unchanged); what differs by version is whether the choice matters.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from kube.signals import ALLOCATABLE_MEMORY_AVAILABLE, MEMORY_AVAILABLE, PID_AVAILABLE, SIGNAL_TO_RESOURCE
from replay.kubelet.ranking import signal_fs_stats
from replay.kubelet.thresholds import Observations, Threshold, get_threshold_quantity

MEMORY_SIGNALS = (MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE)


def first_candidates(actionable: Sequence[Threshold]) -> list[Threshold]:
    """The thresholds byEvictionPriority may leave first for some input order: every memory threshold when one
    is actionable (insertion sort moves them all to the front, the last one read first), else every threshold
    whose signal has a resource (getReclaimableThreshold skips the others)."""
    memory = [t for t in actionable if t.signal in MEMORY_SIGNALS]
    if memory:
        return memory
    return [t for t in actionable if t.signal in SIGNAL_TO_RESOURCE]


def _rank_key(signal: str, with_image_fs: bool, split_fs: bool) -> Hashable:
    if signal in MEMORY_SIGNALS:
        return "memory"
    if signal == PID_AVAILABLE:
        return "pid"
    return (signal_fs_stats(with_image_fs, split_fs).get(signal), SIGNAL_TO_RESOURCE.get(signal))


def _outcome(
    threshold: Threshold,
    observations: Observations,
    reclaim_funcs: Mapping[str, tuple[str, ...]],
    with_image_fs: bool,
    split_fs: bool,
) -> Hashable:
    observed = observations.get(threshold.signal)
    met_info: tuple[str, str] | None = None
    if observed is not None:
        quantity = get_threshold_quantity(threshold.value, observed.capacity)
        met_info = (str(quantity), str(observed.available) if observed.available is not None else "0")
    return (
        SIGNAL_TO_RESOURCE.get(threshold.signal),
        reclaim_funcs.get(threshold.signal, ()),
        _rank_key(threshold.signal, with_image_fs, split_fs),
        met_info,
    )


def map_order_alternatives(
    actionable: Sequence[Threshold],
    chosen: Threshold,
    observations: Observations,
    reclaim_funcs: Mapping[str, tuple[str, ...]],
    with_image_fs: bool,
    split_fs: bool,
) -> tuple[Threshold, ...]:
    """The actionable thresholds a kubelet walking its maps in another order could have acted on instead of
    ``chosen``, with a visibly different outcome (resource, node-level reclaim, ranking, message); empty when the
    decision is the only one it could make."""
    mine = _outcome(chosen, observations, reclaim_funcs, with_image_fs, split_fs)
    return tuple(
        t
        for t in first_candidates(actionable)
        if t is not chosen and _outcome(t, observations, reclaim_funcs, with_image_fs, split_fs) != mine
    )


def describe_alternatives(chosen: Threshold, alternatives: Sequence[Threshold]) -> str:
    """The note explain/replay print: the decision is one of several the kubelet could have made."""
    others = ", ".join(t.describe() for t in alternatives)
    return (
        f"acted on {chosen.describe()}; a kubelet could as well have acted on {others} "
        "(helpers.go thresholdsMetGracePeriod walks a Go map and byEvictionPriority orders only memory first), "
        "with another outcome (node-level reclaim first or not, the message's threshold sentence, the ranking or "
        "the starved resource): this decision is one of "
        f"{len(alternatives) + 1} the real kubelet could have made"
    )
