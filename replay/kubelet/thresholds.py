"""Eviction thresholds: their type, parsing, and the helpers the manager loop applies to them.

Mirrors pkg/kubelet/eviction/api/types.go (Threshold, GetThresholdQuantity) and the threshold
half of pkg/kubelet/eviction/helpers.go (ParseThresholdConfig, thresholdsMet, mergeThresholds,
UpdateContainerFsThresholds, byEvictionPriority ...). Go map iteration order is random; where
the kubelet iterates a map, this port uses the configured (insertion) order instead.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from kube.errors import InputError
from kube.quantity import Format, Quantity
from kube.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    CONTAINERFS_SIGNALS,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    SIGNAL_TO_RESOURCE,
)
from replay.kubelet.duration import format_duration, nanoseconds_between, parse_duration
from replay.kubelet.gosort import go_sort

OP_LESS_THAN = "LessThan"


def valid_signal(signal: str, *, containerfs: bool = True) -> bool:
    """helpers.go: validSignal — containerfs signals only exist from 1.29 on."""
    return signal in SIGNAL_TO_RESOURCE and (containerfs or signal not in CONTAINERFS_SIGNALS)


# --- float32, as Go computes percentages --------------------------------------------------------
def f32(value: float) -> float:
    """Round a float64 to the nearest float32 (Go's ``float32(x)``)."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _f32_neighbours(value: float) -> list[float]:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    out = [value]
    for delta in (-1, 1):
        nb = bits + delta
        if 0 <= nb <= 0xFFFFFFFF:
            cand = float(struct.unpack("<f", struct.pack("<I", nb))[0])
            if cand == cand:  # not NaN
                out.append(cand)
    return out


_GO_DECIMAL_FLOAT = re.compile(r"^[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|(?i:inf|infinity|nan))$")
_GO_HEX_FLOAT = re.compile(r"^[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+$")


def decimal_to_f32(text: str) -> float:
    """Parse a decimal string to the correctly rounded float32 (Go ``strconv.ParseFloat(s, 32)``).

    ``float32(float(s))`` rounds twice and can be off by one ulp in halfway cases, so the nearest
    float32 is chosen exactly among the candidates around the float64 result.
    """
    if _GO_HEX_FLOAT.match(text):
        value = f32(float.fromhex(text))
        if value in (float("inf"), float("-inf")):
            raise InputError(f'strconv.ParseFloat: parsing "{text}": value out of range')
        return value
    if not _GO_DECIMAL_FLOAT.match(text):
        raise InputError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    try:
        exact = Decimal(text)
    except InvalidOperation:
        raise InputError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
    if not exact.is_finite():
        if exact.is_nan():
            return float("nan")
        return float("inf") if exact > 0 else float("-inf")
    approx = float(exact)
    try:
        first = f32(approx)
    except OverflowError:
        raise InputError(f'strconv.ParseFloat: parsing "{text}": value out of range') from None
    if approx in (float("inf"), float("-inf")):  # past float64 too (1e400): Go's ParseFloat says the same
        raise InputError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    target = Fraction(exact)
    best = first
    best_dist = abs(Fraction(first) - target)
    for cand in _f32_neighbours(first):
        dist = abs(Fraction(cand) - target)
        if dist < best_dist or (dist == best_dist and struct.unpack("<I", struct.pack("<f", cand))[0] % 2 == 0):
            best, best_dist = cand, dist
    if best in (float("inf"), float("-inf")) or abs(best) > 3.4028234663852886e38:
        raise InputError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return best


def parse_percentage(text: str) -> float:
    """helpers.go: parsePercentage — ``"25.5%"`` → float32(25.5)/100 in float32 arithmetic.

    One departure: Go's ``strconv.ParseFloat`` takes ``NaN`` (any case), and the kubelet keeps a
    NaN percentage, whose threshold is ``int64(capacity × NaN)``: a conversion the Go spec leaves
    to the implementation (MinInt64 on amd64, 0 on arm64), so the replay would depend on the CPU
    the kubelet ran on.  Such a value is refused here, in the words of the range checks.
    """
    number = text.rstrip("%")
    value = decimal_to_f32(number)
    if value != value:
        raise InputError(f"eviction percentage {text} is not a number; expected a number such as 10%")
    return f32(value / 100.0)


# --- the Threshold type (api/types.go) -----------------------------------------------------------
@dataclass(frozen=True)
class ThresholdValue:
    """api/types.go: ThresholdValue — a quantity, or a float32 fraction of capacity."""

    quantity: Quantity | None = None
    percentage: float = 0.0

    def __str__(self) -> str:
        if self.quantity is not None:
            return str(self.quantity)
        return f"{self.percentage * 100:g}%"


@dataclass(frozen=True)
class Threshold:
    """api/types.go: Threshold. Hard when ``grace_period`` (nanoseconds) is 0."""

    signal: str
    operator: str = OP_LESS_THAN
    value: ThresholdValue = ThresholdValue()
    grace_period: int = 0
    min_reclaim: ThresholdValue | None = None

    @property
    def is_hard(self) -> bool:
        """helpers.go: isHardEvictionThreshold."""
        return self.grace_period == 0

    def describe(self) -> str:
        kind = "hard" if self.is_hard else f"soft, grace {format_duration(self.grace_period)}"
        reclaim = f", min-reclaim {self.min_reclaim}" if self.min_reclaim is not None else ""
        return f"{self.signal}<{self.value} ({kind}{reclaim})"


def get_threshold_quantity(value: ThresholdValue, capacity: Quantity | None) -> Quantity:
    """api/types.go: GetThresholdQuantity — percentages become BinarySI whatever the signal."""
    if value.quantity is not None:
        return value.quantity
    cap = capacity.int_value() if capacity is not None else 0
    return Quantity.new(int(float(cap) * float(value.percentage)), Format.BINARY_SI)


def compare_threshold_value(a: ThresholdValue, b: ThresholdValue) -> bool:
    """helpers.go: compareThresholdValue."""
    if a.quantity is not None:
        return b.quantity is not None and a.quantity.cmp(b.quantity) == 0
    if b.quantity is not None:
        return False
    return a.percentage == b.percentage


def has_threshold(inputs: Sequence[Threshold], item: Threshold) -> bool:
    """helpers.go: hasThreshold — min-reclaim is not compared."""
    return any(
        t.grace_period == item.grace_period
        and t.operator == item.operator
        and t.signal == item.signal
        and compare_threshold_value(t.value, item.value)
        for t in inputs
    )


def merge_thresholds(a: Sequence[Threshold], b: Sequence[Threshold]) -> list[Threshold]:
    """helpers.go: mergeThresholds."""
    results = list(a)
    for threshold in b:
        if not has_threshold(results, threshold):
            results.append(threshold)
    return results


# --- parsing (ParseThresholdConfig) --------------------------------------------------------------
def _parse_threshold_statement(signal: str, value: str, *, containerfs: bool) -> Threshold | None:
    """helpers.go: parseThresholdStatement (``0%``/``100%`` disable the threshold)."""
    if not valid_signal(signal, containerfs=containerfs):
        raise InputError(f"unsupported eviction signal {signal}")
    if value.endswith("%"):
        if value in ("0%", "100%"):
            return None
        percentage = parse_percentage(value)
        if percentage < 0:
            raise InputError(f"eviction percentage threshold {signal} must be >= 0%: {value}")
        if percentage > 1:
            raise InputError(f"eviction percentage threshold {signal} must be <= 100%: {value}")
        return Threshold(signal, OP_LESS_THAN, ThresholdValue(percentage=percentage))
    quantity = Quantity.parse(value)
    if quantity.sign() < 0 or quantity.is_zero():
        raise InputError(f"eviction threshold {signal} must be positive: {quantity}")
    return Threshold(signal, OP_LESS_THAN, ThresholdValue(quantity=quantity))


def _parse_statements(statements: Mapping[str, str] | None, *, containerfs: bool, what: str) -> list[Threshold]:
    results: list[Threshold] = []
    for signal, value in (statements or {}).items():
        try:
            parsed = _parse_threshold_statement(signal, str(value), containerfs=containerfs)
        except InputError as err:
            raise err.within(field=f"{what}[{signal}]") from None
        if parsed is not None:
            results.append(parsed)
    return results


def parse_threshold_config(
    allocatable_config: Sequence[str],
    eviction_hard: Mapping[str, str] | None,
    eviction_soft: Mapping[str, str] | None,
    eviction_soft_grace_period: Mapping[str, str] | None,
    eviction_minimum_reclaim: Mapping[str, str] | None,
    *,
    containerfs: bool = True,
) -> list[Threshold]:
    """helpers.go: ParseThresholdConfig — hard, then soft (with grace), min-reclaim, allocatable clones."""
    hard = _parse_statements(eviction_hard, containerfs=containerfs, what="evictionHard")
    soft = _parse_statements(eviction_soft, containerfs=containerfs, what="evictionSoft")
    grace: dict[str, int] = {}
    for signal, text in (eviction_soft_grace_period or {}).items():
        where = f"evictionSoftGracePeriod[{signal}]"
        if not valid_signal(signal, containerfs=containerfs):
            raise InputError(f"unsupported eviction signal {signal}", field=where)
        try:
            period = parse_duration(str(text))
        except InputError as err:
            raise err.within(field=where) from None
        if period < 0:
            raise InputError(f"invalid eviction grace period specified: {text}, must be a positive value", field=where)
        grace[signal] = period
    reclaims: dict[str, ThresholdValue] = {}
    for signal, text in (eviction_minimum_reclaim or {}).items():
        where = f"evictionMinimumReclaim[{signal}]"
        if not valid_signal(signal, containerfs=containerfs):
            raise InputError(f"unsupported eviction signal {signal}", field=where)
        text = str(text)
        try:
            if text.endswith("%"):
                percentage = parse_percentage(text)
                if percentage <= 0:
                    raise InputError(f"eviction percentage minimum reclaim {signal} must be positive: {text}")
                reclaims[signal] = ThresholdValue(percentage=percentage)
                continue
            quantity = Quantity.parse(text)
            if quantity.sign() < 0:
                raise InputError(f"negative eviction minimum reclaim specified for {signal}")
            reclaims[signal] = ThresholdValue(quantity=quantity)
        except InputError as err:
            raise err.within(field=where) from None
    for i, threshold in enumerate(soft):
        if threshold.signal not in grace:
            raise InputError(
                f"grace period must be specified for the soft eviction threshold {threshold.signal}",
                field="evictionSoftGracePeriod",
            )
        soft[i] = replace(threshold, grace_period=grace[threshold.signal])
    results = hard + soft
    results = [replace(t, min_reclaim=reclaims[t.signal]) if t.signal in reclaims else t for t in results]
    if "pods" in allocatable_config:
        results = add_allocatable_thresholds(results)
    return results


def add_allocatable_thresholds(thresholds: Sequence[Threshold]) -> list[Threshold]:
    """helpers.go: addAllocatableThresholds — clone hard memory.available as allocatableMemory.available."""
    extra = [
        Threshold(ALLOCATABLE_MEMORY_AVAILABLE, t.operator, t.value, 0, t.min_reclaim)
        for t in thresholds
        if t.signal == MEMORY_AVAILABLE and t.is_hard
    ]
    return [*thresholds, *extra]


def update_containerfs_thresholds(
    thresholds: Sequence[Threshold], image_fs: bool, separate_container_image_fs: bool
) -> tuple[list[Threshold], list[str]]:
    """helpers.go: UpdateContainerFsThresholds — containerfs copies nodefs or imagefs.

    Returns the new list and the errors the kubelet logs (user containerfs settings are ignored).
    A missing source threshold yields an all-zero copy (empty operator) that can never be met.
    """
    result = list(thresholds)
    src: dict[tuple[str, bool], Threshold] = {}
    slots: dict[tuple[str, bool], int] = {}
    errors: list[str] = []
    for idx, t in enumerate(result):
        key = (t.signal, t.is_hard)
        if t.signal in (IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE, NODEFS_AVAILABLE, NODEFS_INODES_FREE):
            src[key] = t
        if t.signal in CONTAINERFS_SIGNALS:
            errors.append(f"found {t.signal} for {'hard' if t.is_hard else 'soft'} eviction. ignoring")
            slots[key] = idx

    def put(signal: str, hard: bool, source_signal: str) -> None:
        source = src.get((source_signal, hard), Threshold(source_signal, operator="", value=ThresholdValue()))
        copy = Threshold(
            signal,
            source.operator,
            source.value,
            0 if hard else source.grace_period,
            source.min_reclaim,
        )
        if (signal, hard) in slots:
            result[slots[(signal, hard)]] = copy
        else:
            result.append(copy)

    if image_fs == separate_container_image_fs:
        base_fs, base_inodes = NODEFS_AVAILABLE, NODEFS_INODES_FREE
    elif image_fs and not separate_container_image_fs:
        base_fs, base_inodes = IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE
    else:
        return result, errors
    put(CONTAINERFS_AVAILABLE, True, base_fs)
    put(CONTAINERFS_AVAILABLE, False, base_fs)
    put(CONTAINERFS_INODES_FREE, True, base_inodes)
    put(CONTAINERFS_INODES_FREE, False, base_inodes)
    return result, errors


# --- evaluation helpers (helpers.go) ---------------------------------------------------------------
@dataclass(frozen=True)
class SignalObservation:
    """helpers.go: signalObservation — available and capacity quantities, and the stats time."""

    available: Quantity | None
    capacity: Quantity | None
    time: datetime | None = None


Observations = Mapping[str, SignalObservation]


def thresholds_met(
    thresholds: Sequence[Threshold], observations: Observations, enforce_min_reclaim: bool
) -> list[Threshold]:
    """helpers.go: thresholdsMet — met when threshold (+ min-reclaim) > available, strictly."""
    results: list[Threshold] = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is None:
            continue
        quantity = get_threshold_quantity(threshold.value, observed.capacity)
        if enforce_min_reclaim and threshold.min_reclaim is not None:
            quantity = quantity.add(get_threshold_quantity(threshold.min_reclaim, observed.capacity))
        available = observed.available if observed.available is not None else Quantity.zero()
        if threshold.operator == OP_LESS_THAN and quantity.cmp(available) > 0:
            results.append(threshold)
    return results


def thresholds_updated_stats(
    thresholds: Sequence[Threshold], observations: Observations, last_observations: Observations
) -> list[Threshold]:
    """helpers.go: thresholdsUpdatedStats — drop thresholds whose stats did not advance."""
    results: list[Threshold] = []
    for threshold in thresholds:
        observed = observations.get(threshold.signal)
        if observed is None:
            continue
        last = last_observations.get(threshold.signal)
        # Go: !found || observed.time.IsZero() || observed.time.After(last.time); a zero last time is
        # before any non-zero time.
        if last is None or observed.time is None or last.time is None or observed.time > last.time:
            results.append(threshold)
    return results


def thresholds_first_observed_at(
    thresholds: Sequence[Threshold], last_observed_at: Mapping[Threshold, datetime], now: datetime
) -> dict[Threshold, datetime]:
    """helpers.go: thresholdsFirstObservedAt."""
    return {t: last_observed_at.get(t, now) for t in thresholds}


def thresholds_met_grace_period(observed_at: Mapping[Threshold, datetime], now: datetime) -> list[Threshold]:
    """helpers.go: thresholdsMetGracePeriod — grace periods compared in nanoseconds."""
    results: list[Threshold] = []
    for threshold, at in observed_at.items():
        if nanoseconds_between(at, now) < threshold.grace_period:
            continue
        results.append(threshold)
    return results


def sort_by_eviction_priority(thresholds: list[Threshold]) -> None:
    """helpers.go: byEvictionPriority with Go's sort.Sort — memory first, nothing else ordered."""

    def less(a: Threshold, b: Threshold) -> bool:
        return a.signal in (MEMORY_AVAILABLE, ALLOCATABLE_MEMORY_AVAILABLE) or b.signal not in SIGNAL_TO_RESOURCE

    go_sort(thresholds, less)


def get_reclaimable_threshold(thresholds: Sequence[Threshold]) -> tuple[Threshold, str] | None:
    """helpers.go: getReclaimableThreshold — the first threshold whose signal maps to a resource."""
    for threshold in thresholds:
        resource = SIGNAL_TO_RESOURCE.get(threshold.signal)
        if resource is not None:
            return threshold, resource
    return None
