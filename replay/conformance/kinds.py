"""One checker per vector kind: run the port on the case's input and describe every mismatch.

A checker returns a list of failure descriptions (empty when the case passes). Strings are
compared exactly, and a mismatch names the first differing character.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from kube.errors import InputError
from kube.quantity import Format, Quantity
from replay.conformance.vectors import (
    Case,
    multiset_equal,
    observations,
    same_threshold,
    threshold,
    threshold_value,
    thresholds,
    timestamp,
)
from replay.kubelet import conditions as cond
from replay.kubelet import ranking
from replay.kubelet import thresholds as th
from replay.kubelet.api import Pod, parse_pod, parse_pod_stats, parse_summary
from replay.kubelet.duration import parse_duration
from replay.kubelet.message import eviction_message
from replay.kubelet.signals import make_signal_observations, signal_platform
from replay.kubelet.versions import VersionProfile

Checker = Callable[[Case, VersionProfile], list[str]]


def string_diff(label: str, got: str, want: str) -> str:
    """Describe a string mismatch by its first differing character."""
    i = next((k for k, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
    return (
        f"{label}: differs at character {i}: got {got[i : i + 30]!r}, want {want[i : i + 30]!r}\n"
        f"      got:  {got!r}\n      want: {want!r}"
    )


def _eq(label: str, got: object, want: object) -> list[str]:
    if isinstance(got, str) and isinstance(want, str):
        return [] if got == want else [string_diff(label, got, want)]
    return [] if got == want else [f"{label}: got {got!r}, want {want!r}"]


# --- quantity -----------------------------------------------------------------------------------
def check_quantity(case: Case, profile: VersionProfile) -> list[str]:
    inp, exp = case.input, case.expect
    op = inp["op"]
    if op == "parse":
        try:
            q = Quantity.parse(str(inp["value"]))
        except InputError as err:
            return [] if exp.get("error") else [f"parse {inp['value']!r}: unexpected error {err}"]
        if exp.get("error"):
            return [f"parse {inp['value']!r}: expected an error, got {q!r}"]
        out = _eq("value", q.value, Decimal(str(exp["value"])))
        return out + _eq("format", str(q.format), exp["format"])
    if op == "format":
        return _eq(
            "string", str(Quantity.from_decimal(Decimal(str(inp["value"])), Format(inp["format"]))), exp["string"]
        )
    if op == "parse_emit":
        return _eq("string", str(Quantity.parse(str(inp["value"]))), exp["string"])
    if op == "new_quantity":
        return _eq("string", str(Quantity.new(int(inp["int_value"]), Format(inp["format"]))), exp["string"])
    if op == "cmp":
        return _eq("cmp", Quantity.parse(str(inp["a"])).cmp(Quantity.parse(str(inp["b"]))), exp["cmp"])
    return [f"unknown quantity op {op!r}"]


# --- eviction_message ---------------------------------------------------------------------------
def check_eviction_message(case: Case, profile: VersionProfile) -> list[str]:
    inp, exp = case.input, case.expect
    pod = parse_pod(inp["pod"], source=case.id, field="input.pod")
    stats = parse_pod_stats(inp["pod_stats"], source=case.id) if inp.get("pod_stats") is not None else None
    message, annotations = eviction_message(
        str(inp["resource"]),
        pod,
        stats,
        thresholds(inp.get("thresholds") or []),
        observations(inp.get("observations") or {}),
        profile,
    )
    failures: list[str] = []
    for want in (exp, exp.get("derived") or {}):
        if "message" in want:
            failures += _eq("message", message, want["message"])
        for key, value in (want.get("annotations") or {}).items():
            if key not in annotations:
                failures.append(f"annotation {key}: missing, want {value!r}")
            else:
                failures += _eq(f"annotation {key}", annotations[key], value)
    for part in exp.get("message_contains") or []:
        if part not in message:
            failures.append(f"message does not contain {part!r}: {message!r}")
    for part in exp.get("message_not_contains") or []:
        if part in message:
            failures.append(f"message contains {part!r}: {message!r}")
    return failures


# --- rank -------------------------------------------------------------------------------------------
def check_rank(case: Case, profile: VersionProfile) -> list[str]:
    inp = case.input
    pods: list[Pod] = [parse_pod(p, source=case.id, field=f"input.pods[{i}]") for i, p in enumerate(inp["pods"])]
    stats = {}
    for i, raw in enumerate(inp.get("pod_stats") or []):
        s = parse_pod_stats(raw, source=case.id, field=f"input.pod_stats[{i}]")
        stats[s.pod_ref.uid] = s
    cmps: list[ranking.CmpFunc] = []
    for spec in inp["comparators"]:
        cmp = _comparator(spec, stats, profile)
        if cmp is None:
            return [f"unknown comparator {spec['name']!r}"]
        cmps.append(cmp)
    ranking.ordered_by(pods, *cmps)
    return _eq("order", [p.name for p in pods], list(case.expect["order"]))


def _comparator(spec: Mapping[str, Any], stats: Mapping[str, Any], profile: VersionProfile) -> ranking.CmpFunc | None:
    name = spec["name"]
    fs = tuple(ranking.FsStatsType(x) for x in spec.get("fs_stats", []))
    resource = str(spec.get("resource", ""))
    if name == "exceedMemoryRequests":
        return ranking.exceed_memory_requests(stats, profile)
    if name == "priority":
        return ranking.priority
    if name == "memory":
        return ranking.memory(stats, profile)
    if name == "process":
        return ranking.process(stats)
    if name == "exceedDiskRequests":
        return ranking.exceed_disk_requests(stats, fs, resource, profile)
    if name == "disk":
        return ranking.disk(stats, fs, resource, profile)
    return None


# --- parse_thresholds and threshold helpers ----------------------------------------------------------
def check_parse_thresholds(case: Case, profile: VersionProfile) -> list[str]:
    inp, exp = case.input, case.expect
    try:
        got = th.parse_threshold_config(
            list(inp.get("allocatable_config") or []),
            inp.get("eviction_hard"),
            inp.get("eviction_soft"),
            inp.get("eviction_soft_grace_period"),
            inp.get("eviction_minimum_reclaim"),
            containerfs=profile.containerfs_signals,
        )
    except InputError as err:
        return [] if exp.get("error") else [f"unexpected error: {err}"]
    if exp.get("error"):
        return [f"expected an error, got {[t.describe() for t in got]}"]
    want = thresholds(exp.get("thresholds") or [])
    if multiset_equal(got, want, min_reclaim=True):
        return []
    return [f"thresholds: got {[t.describe() for t in got]}, want {[t.describe() for t in want]}"]


def _threshold_list(
    label: str, got: list[th.Threshold], want_raw: list[Mapping[str, Any]], *, min_reclaim: bool = False
) -> list[str]:
    want = thresholds(want_raw)
    if multiset_equal(got, want, min_reclaim=min_reclaim):
        return []
    return [f"{label}: got {[t.describe() for t in got]}, want {[t.describe() for t in want]}"]


def _observed_at(items: list[Mapping[str, Any]]) -> dict[th.Threshold, Any]:
    return {threshold(item["threshold"]): timestamp(item["time"]) for item in items}


def check_thresholds_kind(case: Case, profile: VersionProfile) -> list[str]:
    inp, exp, kind = case.input, case.expect, case.kind
    if kind == "add_allocatable_thresholds":
        return _threshold_list(
            "thresholds",
            th.add_allocatable_thresholds(thresholds(inp["thresholds"])),
            exp["thresholds"],
            min_reclaim=True,
        )
    if kind == "thresholds_met":
        got = th.thresholds_met(
            thresholds(inp["thresholds"]), observations(inp["observations"]), bool(inp["enforce_min_reclaim"])
        )
        return _threshold_list("thresholds", got, exp["thresholds"])
    if kind == "thresholds_updated_stats":
        got = th.thresholds_updated_stats(
            thresholds(inp["thresholds"]), observations(inp["observations"]), observations(inp["last_observations"])
        )
        return _threshold_list("thresholds", got, exp["thresholds"])
    if kind == "thresholds_first_observed_at":
        got_map = th.thresholds_first_observed_at(
            thresholds(inp["thresholds"]), _observed_at(inp["last_observed_at"]), timestamp(inp["now"])
        )
        want_map = _observed_at(exp["observed_at"])
        ok = len(got_map) == len(want_map) and all(
            any(same_threshold(g, w, min_reclaim=True) and gt == wt for w, wt in want_map.items())
            for g, gt in got_map.items()
        )
        return [] if ok else [f"observed_at: got {got_map}, want {want_map}"]
    if kind == "thresholds_met_grace_period":
        got = th.thresholds_met_grace_period(_observed_at(inp["observed_at"]), timestamp(inp["now"]))
        return _threshold_list("thresholds", got, exp["thresholds"])
    if kind == "sort_by_eviction_priority":
        items = thresholds(inp["thresholds"])
        th.sort_by_eviction_priority(items)
        return _eq("signals", [t.signal for t in items], list(exp["signals"]))
    if kind == "get_reclaimable_threshold":
        items = thresholds(inp["thresholds"])
        th.sort_by_eviction_priority(items)
        return _eq("found", th.get_reclaimable_threshold(items) is not None, bool(exp["found"]))
    if kind == "update_containerfs_thresholds":
        got, _errors = th.update_containerfs_thresholds(
            thresholds(inp["thresholds"]), bool(inp["image_fs"]), bool(inp["separate_container_image_fs"])
        )
        failures: list[str] = []
        for key, raw in exp["containerfs"].items():
            signal, klass = key.split("/")
            want = threshold(raw)
            matches = [t for t in got if t.signal == signal and (t.is_hard == (klass == "hard"))]
            if not matches:
                failures.append(f"{key}: missing")
            for t in matches:
                if not same_threshold(t, want, min_reclaim=True):
                    failures.append(f"{key}: got {t.describe()}, want {want.describe()}")
        return failures
    if kind == "compare_threshold_value":
        a, b = threshold_value(inp["a"]), threshold_value(inp["b"])
        assert a is not None and b is not None
        return _eq("equal(a, b)", th.compare_threshold_value(a, b), exp["equal"]) + _eq(
            "equal(b, a)", th.compare_threshold_value(b, a), exp["equal"]
        )
    if kind == "parse_percentage":
        try:
            value = th.parse_percentage(str(inp["value"]))
        except InputError:
            return [] if exp.get("error") else ["unexpected error"]
        if exp.get("error"):
            return [f"expected an error, got {value}"]
        return _eq("value", value, th.f32(float(exp["value"])))
    return [f"unknown kind {kind!r}"]


# --- node conditions ------------------------------------------------------------------------------
def check_node_conditions_kind(case: Case, profile: VersionProfile) -> list[str]:
    inp, exp, kind = case.input, case.expect, case.kind
    if kind == "node_conditions":
        return _eq("conditions", sorted(cond.node_conditions(thresholds(inp["thresholds"]))), sorted(exp["conditions"]))
    if kind == "node_conditions_last_observed_at":
        got = cond.node_conditions_last_observed_at(
            list(inp["node_conditions"]),
            {k: timestamp(v) for k, v in inp["last_observed_at"].items()},
            timestamp(inp["now"]),
        )
        return _eq("observed_at", got, {k: timestamp(v) for k, v in exp["observed_at"].items()})
    if kind == "node_conditions_observed_since":
        got_list = cond.node_conditions_observed_since(
            {k: timestamp(v) for k, v in inp["observed_at"].items()},
            parse_duration(inp["period"]),
            timestamp(inp["now"]),
        )
        return _eq("conditions", sorted(got_list), sorted(exp["conditions"]))
    if kind == "has_node_condition":
        return _eq("result", cond.has_node_condition(list(inp["conditions"]), inp["item"]), exp["result"])
    return [f"unknown kind {kind!r}"]


# --- make_signal_observations -----------------------------------------------------------------------
def check_signals(case: Case, profile: VersionProfile) -> list[str]:
    inp, exp = case.input, case.expect
    summary = parse_summary(inp["summary"], source=case.id)
    obs, stats = make_signal_observations(summary, signal_platform(str(inp.get("platform") or "linux"), profile))
    failures: list[str] = []
    for signal, want in exp.get("observations", {}).items():
        got = obs.get(signal)
        if got is None:
            failures.append(f"{signal}: no observation")
            continue
        for key, attr in (("available_value", got.available), ("capacity_value", got.capacity)):
            if key in want:
                value = attr.int_value() if attr is not None else None
                failures += _eq(f"{signal}.{key}", value, want[key])
    for uid in exp.get("pod_stats_found_for_uids", []):
        found = stats.get(uid)
        if found is None:
            failures.append(f"pod stats for uid {uid}: not found")
        elif "pod_working_set_bytes" in exp:
            ws = found.memory.working_set_bytes if found.memory else None
            failures += _eq(f"pod {uid} workingSetBytes", ws, exp["pod_working_set_bytes"])
    return failures


CHECKERS: Mapping[str, Checker] = {
    "quantity": check_quantity,
    "eviction_message": check_eviction_message,
    "rank": check_rank,
    "parse_thresholds": check_parse_thresholds,
    "make_signal_observations": check_signals,
    **{
        k: check_thresholds_kind
        for k in (
            "add_allocatable_thresholds",
            "thresholds_met",
            "thresholds_updated_stats",
            "thresholds_first_observed_at",
            "thresholds_met_grace_period",
            "sort_by_eviction_priority",
            "get_reclaimable_threshold",
            "update_containerfs_thresholds",
            "compare_threshold_value",
            "parse_percentage",
        )
    },
    **{
        k: check_node_conditions_kind
        for k in (
            "node_conditions",
            "node_conditions_last_observed_at",
            "node_conditions_observed_since",
            "has_node_condition",
        )
    },
}
