"""Loading conformance vector files and turning their JSON shapes into port types.

The schema is ``kubelet-eviction-conformance/v1`` (see ../shared/conformance/README.md): Kubernetes'
own JSON shapes for pods and summaries, plus small shapes for thresholds and observations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kube.errors import InputError
from kube.quantity import Format, Quantity
from kube.signals import RESOURCE_INODES, RESOURCE_PIDS, SIGNAL_TO_RESOURCE
from replay.inputs import load_document
from replay.kubelet.duration import parse_duration
from replay.kubelet.thresholds import SignalObservation, Threshold, ThresholdValue, f32

SCHEMA = "kubelet-eviction-conformance/v1"


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    kubelet_version: str
    feature_gates: Mapping[str, bool]
    expect_basis: str
    input: Mapping[str, Any]
    expect: Mapping[str, Any]
    source_file: str


def vector_files(paths: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.json") if p.is_file()))
        elif path.exists():
            files.append(path)
        else:
            raise InputError("no such file or directory", source=str(path))
    return files


def load_cases(paths: Iterable[str | Path]) -> list[Case]:
    cases: list[Case] = []
    for path in vector_files(paths):
        doc = load_document(path)
        if not isinstance(doc, Mapping) or doc.get("schema") != SCHEMA:
            raise InputError(f"expected a vector file with schema {SCHEMA!r}", source=str(path), field="schema")
        raw_cases = doc.get("cases")
        if not isinstance(raw_cases, list):
            raise InputError("expected a list of cases", source=str(path), field="cases")
        for i, raw in enumerate(raw_cases):
            if not isinstance(raw, Mapping):
                raise InputError("expected an object", source=str(path), field=f"cases[{i}]")
            try:
                cases.append(
                    Case(
                        id=str(raw["id"]),
                        kind=str(raw["kind"]),
                        kubelet_version=str(raw.get("kubelet_version", "1.32")),
                        feature_gates=dict(raw.get("feature_gates") or {}),
                        expect_basis=str(raw.get("expect_basis", "")),
                        input=raw.get("input") or {},
                        expect=raw.get("expect") or {},
                        source_file=str(path),
                    )
                )
            except KeyError as err:
                raise InputError(f"missing key {err.args[0]!r}", source=str(path), field=f"cases[{i}]") from None
    return cases


# --- shapes -------------------------------------------------------------------------------------
def threshold_value(obj: Mapping[str, Any] | None) -> ThresholdValue | None:
    """``{"quantity": "1Gi"}`` | ``{"percentage": 0.1}`` | ``{}`` (optionally ``quantity_format``)."""
    if obj is None:
        return None
    if "quantity" in obj and obj["quantity"] is not None:
        q = Quantity.parse(str(obj["quantity"]))
        fmt = obj.get("quantity_format")
        if fmt:
            q = Quantity.from_decimal(q.value, Format(fmt))
        return ThresholdValue(quantity=q)
    return ThresholdValue(percentage=f32(float(obj.get("percentage", 0.0))))


def threshold(obj: Mapping[str, Any]) -> Threshold:
    value = threshold_value(obj.get("value") or {})
    return Threshold(
        signal=str(obj.get("signal", "")),
        operator=str(obj.get("operator", "")),
        value=value if value is not None else ThresholdValue(),
        grace_period=parse_duration(str(obj.get("grace_period") or "0s")),
        min_reclaim=threshold_value(obj.get("min_reclaim")),
    )


def thresholds(items: Iterable[Mapping[str, Any]]) -> list[Threshold]:
    return [threshold(t) for t in items]


def timestamp(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def observations(obj: Mapping[str, Any]) -> dict[str, SignalObservation]:
    """Observation quantities take the kubelet's format for the signal, not the string's suffix."""
    out: dict[str, SignalObservation] = {}
    for signal, raw in obj.items():
        resource = SIGNAL_TO_RESOURCE.get(signal)
        fmt = Format.DECIMAL_SI if resource in (RESOURCE_INODES, RESOURCE_PIDS) else Format.BINARY_SI

        def quantity(key: str, raw: Mapping[str, Any] = raw, fmt: Format = fmt) -> Quantity | None:
            if raw.get(key) is None:
                return None
            return Quantity.from_decimal(Quantity.parse(str(raw[key])).value, fmt)

        when = raw.get("time")
        out[signal] = SignalObservation(quantity("available"), quantity("capacity"), timestamp(when) if when else None)
    return out


def same_value(a: ThresholdValue | None, b: ThresholdValue | None) -> bool:
    if a is None or b is None:
        return a is b
    if a.quantity is not None or b.quantity is not None:
        return a.quantity is not None and b.quantity is not None and a.quantity.cmp(b.quantity) == 0
    return a.percentage == b.percentage


def same_threshold(a: Threshold, b: Threshold, *, min_reclaim: bool) -> bool:
    return (
        a.signal == b.signal
        and a.operator == b.operator
        and a.grace_period == b.grace_period
        and same_value(a.value, b.value)
        and (not min_reclaim or same_value(a.min_reclaim, b.min_reclaim))
    )


def multiset_equal(got: list[Threshold], want: list[Threshold], *, min_reclaim: bool) -> bool:
    remaining = list(want)
    for item in got:
        match = next((i for i, w in enumerate(remaining) if same_threshold(item, w, min_reclaim=min_reclaim)), None)
        if match is None:
            return False
        remaining.pop(match)
    return not remaining
