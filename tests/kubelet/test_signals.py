"""signals.py: makeSignalObservations on every real Summary API capture, and Go's integer casts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import REALDATA, make_summary, realdata_summaries

from kube.quantity import Format
from replay.inputs import load_document
from replay.kubelet.api import parse_summary
from replay.kubelet.signals import go_int64, make_signal_observations

U64_MAX = 2**64 - 1
SUMMARIES = realdata_summaries()


def _i64(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


def _expected(raw: dict[str, Any]) -> dict[str, tuple[int, int, Format]]:
    """The observations recomputed from the raw JSON, independently of the port (spec §2)."""
    node = raw["node"]
    out: dict[str, tuple[int, int, Format]] = {}
    mem = node.get("memory") or {}
    if mem.get("availableBytes") is not None and mem.get("workingSetBytes") is not None:
        capacity = mem["availableBytes"] + mem["workingSetBytes"]
        out["memory.available"] = (mem["availableBytes"], capacity, Format.BINARY_SI)
    pods = next((c for c in node.get("systemContainers") or [] if c.get("name") == "pods"), None)
    pmem = (pods or {}).get("memory") or {}
    if pmem.get("availableBytes") is not None and pmem.get("workingSetBytes") is not None:
        out["allocatableMemory.available"] = (
            pmem["availableBytes"],
            pmem["availableBytes"] + pmem["workingSetBytes"],
            Format.BINARY_SI,
        )
    runtime = node.get("runtime") or {}
    for prefix, fs in (
        ("nodefs", node.get("fs")),
        ("imagefs", runtime.get("imageFs")),
        ("containerfs", runtime.get("containerFs")),
    ):
        fs = fs or {}
        if fs.get("availableBytes") is not None and fs.get("capacityBytes") is not None:
            out[f"{prefix}.available"] = (fs["availableBytes"], fs["capacityBytes"], Format.BINARY_SI)
        if fs.get("inodesFree") is not None and fs.get("inodes") is not None:
            out[f"{prefix}.inodesFree"] = (_i64(fs["inodesFree"]), _i64(fs["inodes"]), Format.DECIMAL_SI)
    rlimit = node.get("rlimit") or {}
    if rlimit.get("maxpid") is not None and rlimit.get("curproc") is not None:
        out["pid.available"] = (rlimit["maxpid"] - rlimit["curproc"], rlimit["maxpid"], Format.DECIMAL_SI)
    return out


@pytest.mark.parametrize("path", SUMMARIES, ids=[str(p.relative_to(REALDATA)) for p in SUMMARIES])
def test_observations_of_every_realdata_summary_match_the_spec(path: Path) -> None:
    raw = load_document(path)
    obs, stats = make_signal_observations(parse_summary(raw, source=str(path)))
    want = _expected(raw)
    got = {
        signal: (o.available.int_value(), o.capacity.int_value(), o.available.format)
        for signal, o in obs.items()
        if o.available is not None and o.capacity is not None
    }
    assert got == want
    assert set(stats) == {p["podRef"]["uid"] for p in raw.get("pods") or []}


def test_realdata_summaries_are_all_found() -> None:
    assert len(SUMMARIES) == 7


def test_uint64_max_inodes_free_wraps_to_minus_one_like_go_int64() -> None:
    path = REALDATA / "elastic-beats" / "stats_summary_multiple_containers.json"
    obs, _ = make_signal_observations(parse_summary(load_document(path), source=str(path)))
    for signal in ("nodefs.inodesFree", "imagefs.inodesFree"):
        available = obs[signal].available
        assert available is not None and available.int_value() == -1 and str(available) == "-1"


def test_windows_summary_without_rlimit_has_no_pid_observation() -> None:
    path = REALDATA / "datadog-integrations-core" / "stats_summary_windows.json"
    obs, _ = make_signal_observations(parse_summary(load_document(path), source=str(path)))
    assert "pid.available" not in obs
    assert "nodefs.inodesFree" not in obs and "imagefs.inodesFree" not in obs
    # the `pods` system container reports only workingSetBytes
    assert "allocatableMemory.available" not in obs


def test_observation_times_come_from_each_stats_block() -> None:
    path = REALDATA / "nri-kubernetes-1_28" / "summary"
    raw = load_document(path)
    obs, _ = make_signal_observations(parse_summary(raw, source=str(path)))
    assert obs["imagefs.available"].time is not None
    assert obs["imagefs.available"].time.isoformat().startswith(raw["node"]["runtime"]["imageFs"]["time"][:19])
    assert obs["pid.available"].time is not None
    assert obs["pid.available"].time.isoformat().startswith(raw["node"]["rlimit"]["time"][:19])


def test_pid_available_may_be_negative() -> None:
    obs, _ = make_signal_observations(make_summary(rlimit=(100, 150)))
    available = obs["pid.available"].available
    assert available is not None and available.int_value() == -50


def test_missing_pieces_give_no_observation() -> None:
    obs, _ = make_signal_observations(make_summary(memory_available=100, nodefs=(1, 2)))
    assert set(obs) == {"nodefs.available"}


def test_later_duplicate_pod_uid_wins_in_the_stats_lookup() -> None:
    raw = {
        "node": {"nodeName": "n"},
        "pods": [
            {"podRef": {"name": "a", "namespace": "d", "uid": "u"}, "memory": {"workingSetBytes": 1}},
            {"podRef": {"name": "a", "namespace": "d", "uid": "u"}, "memory": {"workingSetBytes": 2}},
        ],
    }
    _, stats = make_signal_observations(parse_summary(raw, source="t"))
    memory = stats["u"].memory
    assert memory is not None and memory.working_set_bytes == 2


@pytest.mark.parametrize(("value", "want"), [(0, 0), (2**63 - 1, 2**63 - 1), (2**63, -(2**63)), (U64_MAX, -1)])
def test_go_int64_wraps_like_a_go_cast(value: int, want: int) -> None:
    assert go_int64(value) == want
