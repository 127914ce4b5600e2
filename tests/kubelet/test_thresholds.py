"""thresholds.py: ParseThresholdConfig and the threshold helpers of the eviction manager (spec §3, §4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kube.errors import InputError
from kube.quantity import Format, Quantity
from kube.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
)
from replay.kubelet.duration import MINUTE, SECOND
from replay.kubelet.thresholds import (
    OP_LESS_THAN,
    SignalObservation,
    Threshold,
    ThresholdValue,
    add_allocatable_thresholds,
    get_reclaimable_threshold,
    get_threshold_quantity,
    merge_thresholds,
    parse_percentage,
    parse_threshold_config,
    sort_by_eviction_priority,
    thresholds_first_observed_at,
    thresholds_met,
    thresholds_met_grace_period,
    thresholds_updated_stats,
    update_containerfs_thresholds,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def q(text: str) -> ThresholdValue:
    return ThresholdValue(quantity=Quantity.parse(text))


def pct(text: str) -> ThresholdValue:
    return ThresholdValue(percentage=parse_percentage(text))


def hard(signal: str, value: ThresholdValue, min_reclaim: ThresholdValue | None = None) -> Threshold:
    return Threshold(signal, OP_LESS_THAN, value, 0, min_reclaim)


def soft(signal: str, value: ThresholdValue, grace: int) -> Threshold:
    return Threshold(signal, OP_LESS_THAN, value, grace)


def bytes_obs(available: int, capacity: int, time: datetime | None = None) -> SignalObservation:
    return SignalObservation(Quantity.new(available, Format.BINARY_SI), Quantity.new(capacity, Format.BINARY_SI), time)


def parse_hard(mapping: dict[str, str]) -> list[Threshold]:
    return parse_threshold_config([], mapping, None, None, None)


# --- ParseThresholdConfig: error texts (spec §3.2) ------------------------------------------------
@pytest.mark.parametrize(
    ("hard_map", "problem"),
    [
        ({"foo": "1"}, "unsupported eviction signal foo"),
        ({"memory.available": "-1Gi"}, "eviction threshold memory.available must be positive: -1Gi"),
        ({"memory.available": "0"}, "eviction threshold memory.available must be positive: 0"),
        ({"nodefs.available": "-5%"}, "eviction percentage threshold nodefs.available must be >= 0%: -5%"),
        ({"nodefs.available": "150%"}, "eviction percentage threshold nodefs.available must be <= 100%: 150%"),
        ({"nodefs.available": "abc%"}, 'strconv.ParseFloat: parsing "abc": invalid syntax'),
    ],
)
def test_hard_threshold_errors_use_the_kubelet_wording(hard_map: dict[str, str], problem: str) -> None:
    with pytest.raises(InputError) as err:
        parse_hard(hard_map)
    assert err.value.problem == problem


def test_unparsable_quantity_threshold_is_an_input_error_naming_the_value() -> None:
    with pytest.raises(InputError) as err:
        parse_hard({"memory.available": "1.5Gx"})
    assert "1.5Gx" in str(err.value)


def test_soft_threshold_without_grace_period_is_an_error() -> None:
    with pytest.raises(InputError) as err:
        parse_threshold_config([], None, {"memory.available": "1Gi"}, None, None)
    assert err.value.problem == "grace period must be specified for the soft eviction threshold memory.available"


def test_negative_grace_period_is_an_error() -> None:
    with pytest.raises(InputError) as err:
        parse_threshold_config([], None, {"memory.available": "1Gi"}, {"memory.available": "-1s"}, None)
    assert err.value.problem == "invalid eviction grace period specified: -1s, must be a positive value"


def test_extra_grace_period_entries_are_validated_but_ignored() -> None:
    got = parse_threshold_config([], None, None, {"nodefs.available": "1m"}, None)
    assert got == []
    with pytest.raises(InputError):
        parse_threshold_config([], None, None, {"nodefs.available": "soon"}, None)
    with pytest.raises(InputError, match="unsupported eviction signal bar"):
        parse_threshold_config([], None, None, {"bar": "1m"}, None)


@pytest.mark.parametrize(
    ("reclaim", "problem"),
    [
        ("0%", "eviction percentage minimum reclaim memory.available must be positive: 0%"),
        ("-1%", "eviction percentage minimum reclaim memory.available must be positive: -1%"),
        ("-1Mi", "negative eviction minimum reclaim specified for memory.available"),
    ],
)
def test_minimum_reclaim_errors_use_the_kubelet_wording(reclaim: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        parse_threshold_config([], None, None, None, {"memory.available": reclaim})
    assert err.value.problem == problem


def test_zero_quantity_minimum_reclaim_is_allowed() -> None:
    got = parse_threshold_config([], {"memory.available": "1Gi"}, None, None, {"memory.available": "0"})
    assert got[0].min_reclaim is not None and got[0].min_reclaim.quantity is not None
    assert got[0].min_reclaim.quantity.is_zero()


def test_containerfs_signals_are_unknown_before_1_29() -> None:
    with pytest.raises(InputError, match=r"unsupported eviction signal containerfs\.available"):
        parse_threshold_config([], {"containerfs.available": "1Gi"}, None, None, None, containerfs=False)


# --- ParseThresholdConfig: values ----------------------------------------------------------------
@pytest.mark.parametrize("disabled", ["0%", "100%"])
def test_zero_and_hundred_percent_disable_the_threshold(disabled: str) -> None:
    assert parse_hard({"nodefs.available": disabled}) == []


@pytest.mark.parametrize(("text", "fraction"), [("0.0%", 0.0), ("100.0%", 1.0)])
def test_other_spellings_of_zero_and_hundred_percent_survive(text: str, fraction: float) -> None:
    (got,) = parse_hard({"nodefs.available": text})
    assert got.value.quantity is None and got.value.percentage == fraction


@pytest.mark.parametrize(
    ("text", "fraction"),
    [
        ("10%", 0.10000000149011612),
        ("5%", 0.05000000074505806),
        ("15%", 0.15000000596046448),
        ("7.5%", 0.07500000298023224),
    ],
)
def test_percentages_are_float32_fractions(text: str, fraction: float) -> None:
    assert parse_percentage(text) == fraction


@pytest.mark.parametrize(("text", "accepted_by_go"), [(" 10%", False), ("1_0%", False), ("0x1p-2%", True)])
def test_percentage_number_follows_go_parsefloat_grammar(text: str, accepted_by_go: bool) -> None:
    try:
        parse_hard({"nodefs.available": text})
        accepted = True
    except InputError:
        accepted = False
    assert accepted == accepted_by_go


def test_percentage_of_100_gib_is_computed_in_float32_and_printed_binary_si() -> None:
    got = get_threshold_quantity(pct("10%"), Quantity.new(107374182400, Format.BINARY_SI))
    assert got.int_value() == 10737418400
    assert str(got) == "10737418400"
    assert got.format is Format.BINARY_SI


def test_percentage_of_inodes_is_binary_si_even_for_an_inode_signal() -> None:
    got = get_threshold_quantity(pct("5%"), Quantity.new(6553600, Format.DECIMAL_SI))
    assert got.int_value() == 327680 and str(got) == "320Ki"


def test_quantity_threshold_keeps_its_parsed_text() -> None:
    got = get_threshold_quantity(q("100Mi"), Quantity.new(8 * 1024**3, Format.BINARY_SI))
    assert str(got) == "100Mi"


def test_assembly_order_is_hard_then_soft_then_allocatable_clones() -> None:
    got = parse_threshold_config(
        ["pods"],
        {"memory.available": "100Mi", "nodefs.available": "10%"},
        {"memory.available": "300Mi", "imagefs.available": "20%"},
        {"memory.available": "1m30s", "imagefs.available": "2m"},
        {"memory.available": "50Mi"},
    )
    assert [(t.signal, t.grace_period) for t in got] == [
        (MEMORY_AVAILABLE, 0),
        (NODEFS_AVAILABLE, 0),
        (MEMORY_AVAILABLE, 90 * SECOND),
        (IMAGEFS_AVAILABLE, 2 * MINUTE),
        (ALLOCATABLE_MEMORY_AVAILABLE, 0),
    ]
    reclaims = [str(t.min_reclaim) if t.min_reclaim else None for t in got]
    assert reclaims == ["50Mi", None, "50Mi", None, "50Mi"]
    assert str(got[-1].value) == "100Mi"


def test_soft_threshold_with_zero_grace_is_hard_and_gets_an_allocatable_clone() -> None:
    got = parse_threshold_config(["pods"], None, {"memory.available": "1Gi"}, {"memory.available": "0s"}, None)
    assert [t.signal for t in got] == [MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE]
    assert all(t.is_hard for t in got)


def test_no_allocatable_clone_without_pods_enforcement() -> None:
    got = parse_threshold_config(["system-reserved"], {"memory.available": "1Gi"}, None, None, None)
    assert [t.signal for t in got] == [MEMORY_AVAILABLE]


# --- addAllocatableThresholds ---------------------------------------------------------------------
def test_add_allocatable_clones_only_hard_memory_thresholds_with_their_min_reclaim() -> None:
    mem = hard(MEMORY_AVAILABLE, q("1Gi"), q("500Mi"))
    items = [mem, soft(MEMORY_AVAILABLE, q("2Gi"), MINUTE), hard(NODEFS_AVAILABLE, pct("10%"))]
    got = add_allocatable_thresholds(items)
    assert got[:3] == items
    assert got[3:] == [Threshold(ALLOCATABLE_MEMORY_AVAILABLE, OP_LESS_THAN, mem.value, 0, mem.min_reclaim)]


# --- UpdateContainerFsThresholds (spec §3.4) -------------------------------------------------------
def _fs_thresholds() -> list[Threshold]:
    return [
        hard(NODEFS_AVAILABLE, pct("10%"), q("1Gi")),
        soft(NODEFS_AVAILABLE, pct("15%"), MINUTE),
        hard(NODEFS_INODES_FREE, pct("5%")),
        soft(NODEFS_INODES_FREE, pct("8%"), 2 * MINUTE),
        hard(IMAGEFS_AVAILABLE, pct("20%")),
        soft(IMAGEFS_AVAILABLE, pct("25%"), 3 * MINUTE),
        hard(IMAGEFS_INODES_FREE, pct("6%")),
        soft(IMAGEFS_INODES_FREE, pct("9%"), 4 * MINUTE),
    ]


@pytest.mark.parametrize(
    ("image_fs", "split", "source"),
    [(False, False, "nodefs"), (True, True, "nodefs"), (True, False, "imagefs")],
)
def test_containerfs_thresholds_copy_the_topologys_filesystem(image_fs: bool, split: bool, source: str) -> None:
    base = _fs_thresholds()
    got, errors = update_containerfs_thresholds(base, image_fs, split)
    assert errors == []
    assert got[:8] == base
    by_signal = {t.signal: t for t in base if t.is_hard} | {t.signal + "/soft": t for t in base if not t.is_hard}
    expect_from = [
        (CONTAINERFS_AVAILABLE, f"{source}.available"),
        (CONTAINERFS_AVAILABLE, f"{source}.available/soft"),
        (CONTAINERFS_INODES_FREE, f"{source}.inodesFree"),
        (CONTAINERFS_INODES_FREE, f"{source}.inodesFree/soft"),
    ]
    assert len(got) == 12
    for copy, (signal, key) in zip(got[8:], expect_from, strict=True):
        src = by_signal[key]
        assert (copy.signal, copy.operator, copy.value, copy.grace_period, copy.min_reclaim) == (
            signal,
            src.operator,
            src.value,
            src.grace_period,
            src.min_reclaim,
        )


def test_inconsistent_topology_adds_no_containerfs_thresholds() -> None:
    base = _fs_thresholds()
    got, _ = update_containerfs_thresholds(base, False, True)
    assert got == base


def test_user_containerfs_thresholds_are_overwritten_in_place_with_an_error() -> None:
    base = [hard(CONTAINERFS_AVAILABLE, q("1Gi")), hard(NODEFS_AVAILABLE, pct("10%"))]
    got, errors = update_containerfs_thresholds(base, False, False)
    assert errors == ["found containerfs.available for hard eviction. ignoring"]
    assert got[0].signal == CONTAINERFS_AVAILABLE and got[0].value == pct("10%")
    assert [t.signal for t in got[2:]] == [CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE, CONTAINERFS_INODES_FREE]


def test_missing_source_threshold_gives_an_inert_copy_that_never_fires() -> None:
    got, _ = update_containerfs_thresholds([], False, False)
    assert len(got) == 4 and all(t.operator == "" for t in got)
    obs = {CONTAINERFS_AVAILABLE: bytes_obs(0, 100), CONTAINERFS_INODES_FREE: bytes_obs(0, 100)}
    assert thresholds_met(got, obs, True) == []


# --- thresholdsMet ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("available", "met"), [(100 * 1024**2 - 1, True), (100 * 1024**2, False), (200 * 1024**2, False)]
)
def test_threshold_is_met_only_when_available_is_strictly_below(available: int, met: bool) -> None:
    t = hard(MEMORY_AVAILABLE, q("100Mi"))
    got = thresholds_met([t], {MEMORY_AVAILABLE: bytes_obs(available, 8 * 1024**3)}, False)
    assert got == ([t] if met else [])


def test_min_reclaim_counts_only_when_enforced() -> None:
    t = hard(MEMORY_AVAILABLE, q("100Mi"), q("50Mi"))
    obs = {MEMORY_AVAILABLE: bytes_obs(120 * 1024**2, 8 * 1024**3)}
    assert thresholds_met([t], obs, False) == []
    assert thresholds_met([t], obs, True) == [t]


def test_percentage_min_reclaim_is_a_share_of_capacity() -> None:
    t = hard(NODEFS_AVAILABLE, pct("10%"), pct("5%"))
    obs = {NODEFS_AVAILABLE: bytes_obs(14 * 10**9, 100 * 10**9)}
    assert thresholds_met([t], obs, False) == []
    assert thresholds_met([t], obs, True) == [t]


def test_threshold_without_observation_is_never_met() -> None:
    assert thresholds_met([hard(PID_AVAILABLE, q("1000"))], {}, True) == []


# --- thresholdsUpdatedStats --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("last", "now", "kept"),
    [
        (None, T0, True),  # no previous observation
        (T0, T0, False),  # stats did not advance
        (T0, T0 + timedelta(seconds=1), True),
        (T0 + timedelta(seconds=1), T0, False),
        (T0, None, True),  # zero time: always kept
        ("no-last", T0, True),
    ],
)
def test_thresholds_are_actionable_only_when_their_stats_advanced(
    last: datetime | str | None, now: datetime | None, kept: bool
) -> None:
    t = hard(MEMORY_AVAILABLE, q("1Gi"))
    current = {MEMORY_AVAILABLE: bytes_obs(1, 2, now)}
    last_time = last if isinstance(last, datetime) else None
    previous = {} if last == "no-last" else {MEMORY_AVAILABLE: bytes_obs(1, 2, last_time)}
    assert thresholds_updated_stats([t], current, previous) == ([t] if kept else [])


def test_updated_stats_drops_thresholds_without_observation() -> None:
    assert thresholds_updated_stats([hard(MEMORY_AVAILABLE, q("1Gi"))], {}, {}) == []


# --- mergeThresholds / first observed / grace ----------------------------------------------------------
def test_merge_compares_quantities_numerically_and_ignores_min_reclaim() -> None:
    a = [hard(MEMORY_AVAILABLE, q("1Gi"))]
    same = hard(MEMORY_AVAILABLE, q("1024Mi"), q("100Mi"))
    other = soft(MEMORY_AVAILABLE, q("1Gi"), MINUTE)
    assert merge_thresholds(a, [same, other]) == [a[0], other]


def test_first_observed_keeps_old_times_and_forgets_unmet_thresholds() -> None:
    a, b, c = hard(MEMORY_AVAILABLE, q("1Gi")), hard(NODEFS_AVAILABLE, pct("10%")), hard(PID_AVAILABLE, q("100"))
    now = T0 + timedelta(minutes=5)
    got = thresholds_first_observed_at([a, b], {a: T0, c: T0}, now)
    assert got == {a: T0, b: now}


def test_grace_period_is_satisfied_at_exactly_its_length() -> None:
    t = soft(MEMORY_AVAILABLE, q("1Gi"), 90 * SECOND)
    assert thresholds_met_grace_period({t: T0}, T0 + timedelta(seconds=89)) == []
    assert thresholds_met_grace_period({t: T0}, T0 + timedelta(seconds=90)) == [t]


# --- byEvictionPriority -----------------------------------------------------------------------------
def test_eviction_priority_puts_memory_first_in_reverse_input_order_and_keeps_the_rest() -> None:
    items = [
        hard(NODEFS_AVAILABLE, pct("10%")),
        hard(MEMORY_AVAILABLE, q("1Gi")),
        hard(IMAGEFS_AVAILABLE, pct("15%")),
        hard(ALLOCATABLE_MEMORY_AVAILABLE, q("1Gi")),
        hard(NODEFS_INODES_FREE, pct("5%")),
    ]
    sort_by_eviction_priority(items)
    assert [t.signal for t in items] == [
        ALLOCATABLE_MEMORY_AVAILABLE,
        MEMORY_AVAILABLE,
        NODEFS_AVAILABLE,
        IMAGEFS_AVAILABLE,
        NODEFS_INODES_FREE,
    ]


def test_reclaimable_threshold_is_the_first_with_a_resource() -> None:
    items = [Threshold("bogus"), hard(IMAGEFS_INODES_FREE, pct("5%"))]
    found = get_reclaimable_threshold(items)
    assert found is not None and found == (items[1], "inodes")
    assert get_reclaimable_threshold([Threshold("bogus")]) is None
