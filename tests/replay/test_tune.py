"""``evictlens tune``: the search space as flags give it (and every bad flag one line, exit 2), the grid and its
sample, and the Pareto front / recommendation on plain rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
import yaml

from kube.errors import InputError
from replay.cli import main
from replay.kubelet.config import FlagOverrides
from replay.results import KernelKill
from replay.tune import (
    DEFAULTS,
    Candidate,
    Row,
    SearchSpace,
    distinct_kills,
    grid,
    pareto_front,
    parse_space,
    recommend,
    sample,
)
from replay.tune_report import snippet

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def space(**given: str) -> SearchSpace:
    return parse_space(given)[0]


# -- the search space ----------------------------------------------------------------------------------------


def test_without_flags_the_space_is_the_documented_defaults() -> None:
    s, given = parse_space({})
    assert given == ()
    assert s.memory_hard == ("100Mi", "500Mi", "1Gi", "5%", "10%")
    assert s.soft == (None, "15%", "20%") and s.soft_grace == ("30s", "1m30s")
    assert s.min_reclaim == (None,) and s.max_pod_grace == (0,) and not s.searches_reserved
    assert len(grid(s)) == 25 and set(DEFAULTS) == {f for f in s.__dataclass_fields__}


def test_lists_and_ranges_are_read_as_the_kubelet_reads_them() -> None:
    s = space(
        memory_hard="5%..20%/4,512Mi",
        soft="none,25%",
        soft_grace="30s..2m/4",
        max_pod_grace="0..60/3",
        kube_reserved="none,100Mi..300Mi/3",
    )
    assert s.memory_hard == ("5%", "10%", "15%", "20%", "512Mi")
    assert s.soft == (None, "25%")
    assert s.soft_grace == ("30s", "1m0s", "1m30s", "2m0s")
    assert s.max_pod_grace == (0, 30, 60)
    assert s.kube_reserved == (None, "100Mi", "200Mi", "300Mi")


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--memory-hard", "", "empty search space"),
        ("--memory-hard", ",", "empty search space"),
        ("--memory-hard", "lots", "expected a quantity such as 500Mi or a percentage"),
        ("--memory-hard", "150%", "at most 100%"),
        ("--memory-hard", "NaN%", "above 0%"),
        ("--memory-hard", "5%..20%", "FROM..TO/COUNT"),
        ("--memory-hard", "5%..1Gi/3", "both be percentages or both quantities"),
        ("--nodefs-hard", "-1Gi", "above 0"),
        ("--memory-hard", "0", "above 0"),
        ("--min-reclaim", "-1Mi", "of at least 0"),
        ("--memory-soft", "twenty", "expected a quantity"),
        ("--soft-grace", "30", "expected a duration such as 30s"),
        ("--soft-grace", "0s", "above 0"),
        ("--max-pod-grace", "-5", "from 0 to"),
        ("--max-pod-grace", "half", "whole number of seconds"),
        ("--kube-reserved", "10%", "no percentage here"),
        ("--max-candidates", "0", "at least 1"),
    ],
)
def test_a_bad_search_flag_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, said: str
) -> None:
    assert main(["tune", "jvm-spike", f"{flag}={value}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and said in err, err


def test_a_soft_threshold_at_or_below_every_hard_one_leaves_nothing_to_search(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["tune", "jvm-spike", "--memory-hard", "20%", "--memory-soft", "10%,20%"]) == 2
    err = capsys.readouterr().err
    assert "--memory-soft" in err and "empty search space" in err


def test_an_input_that_is_neither_recording_scenario_file_nor_bundled_name_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tune", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "no such recording directory, scenario file or bundled scenario" in err
    (tmp_path / "empty").mkdir()
    assert main(["tune", str(tmp_path / "empty")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# -- the grid and its sample -----------------------------------------------------------------------------------


def test_the_grid_skips_a_soft_threshold_at_or_below_its_hard_one_and_grace_without_soft() -> None:
    cands = grid(space(memory_hard="10%,1Gi", soft="none,10%,20%", soft_grace="30s,1m"))
    labels = [c.label for c in cands]
    assert "hard 10%, soft 10%/30s" not in labels  # at the hard threshold: never acts first
    assert "hard 1Gi, soft 10%/30s" in labels  # a quantity against a percentage: kept (capacity decides)
    assert labels.count("hard 10%, no soft") == 1  # no grace period dimension without a soft threshold
    assert len(cands) == 3 + 5  # 10%: none, 20% × 2 graces; 1Gi: none, 10% and 20% × 2 graces


def test_a_large_grid_is_sampled_reproducibly_and_says_so() -> None:
    cands = grid(space(memory_hard="1%..50%/50", soft="none,60%", soft_grace="30s"))
    assert len(cands) == 100
    picked, how = sample(cands, 10, seed=0)
    again, _ = sample(cands, 10, seed=0)
    assert picked == again and len(picked) == 10 and "10 of the grid's 100" in how and "seed 0" in how
    assert [cands.index(c) for c in picked] == sorted(cands.index(c) for c in picked)
    assert sample(cands, 10, seed=1)[0] != picked
    assert sample(cands[:5], 10, seed=0) == (cands[:5], "the whole grid: 5 candidates")
    with pytest.raises(InputError, match="at least 1"):
        sample(cands, 0, seed=0)


def test_a_candidate_is_a_complete_configuration_as_flags_and_as_a_document() -> None:
    c = Candidate("10%", "10%", "20%", "30s", "500Mi", 30, None, "1Gi")
    o = c.overrides()
    assert o.eviction_hard == (
        "memory.available<10%,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%",
    )
    assert o.eviction_soft == ("memory.available<20%",)
    assert o.eviction_soft_grace_period == ("memory.available=30s",)
    assert o.eviction_minimum_reclaim == ("memory.available=500Mi",)
    assert o.eviction_max_pod_grace_period == 30 and o.system_reserved == ("memory=1Gi",) and o.kube_reserved == ()
    none = Candidate("100Mi", "10%").overrides()
    assert none.eviction_soft == ("",) and none.eviction_minimum_reclaim == ("",)  # empty: replaces the baseline's
    doc = c.document()
    assert yaml.safe_load(snippet(doc)) == doc
    assert doc["apiVersion"] == "kubelet.config.k8s.io/v1beta1" and doc["kind"] == "KubeletConfiguration"
    assert doc["systemReserved"] == {"memory": "1Gi"} and "kubeReserved" not in doc


def test_the_snippet_loads_with_the_replay_config_loader(tmp_path: Path) -> None:
    from replay.cli.args import load_baseline
    from replay.kubelet.config import config_from_kubelet_configuration
    from replay.kubelet.versions import profile

    path = tmp_path / "kubelet.yaml"
    path.write_text(snippet(Candidate("5%", "15%", "20%", "1m30s", None, 0).document()))
    baseline = load_baseline(config=str(path))
    assert baseline is not None
    config = config_from_kubelet_configuration(baseline.document, source=str(path), profile=profile("1.33"))
    assert config.eviction_hard["memory.available"] == "5%" and config.eviction_soft_grace_period == {
        "memory.available": "1m30s"
    }


# -- kills, pressure, the front -----------------------------------------------------------------------------------


def _kill(kind: str, seconds: int, node: str = "n1", count: int = 1) -> KernelKill:
    return KernelKill(
        node=node,
        namespace=None if kind == "SystemOOM" else "ns",
        pod=None if kind == "SystemOOM" else "p",
        uid=None,
        container=None if kind == "SystemOOM" else "c",
        time=T0 + timedelta(seconds=seconds),
        kind=kind,
        message=None,
        victim="java" if kind == "SystemOOM" else None,
        pid=None,
        exit_code=None,
        restart_count=None,
        count=count,
        source="event" if kind == "SystemOOM" else "pod",
    )


def test_a_system_oom_and_the_container_it_killed_are_one_kill() -> None:
    assert len(distinct_kills([_kill("SystemOOM", 24), _kill("OOMKilled", 24)], 10)) == 1
    assert len(distinct_kills([_kill("SystemOOM", 24), _kill("OOMKilled", 24, node="n2")], 10)) == 2
    assert len(distinct_kills([_kill("SystemOOM", 24, count=3)], 10)) == 3  # an aggregated Event
    assert len(distinct_kills([_kill("OOMKilled", 1), _kill("OOMKilled", 100)], 10)) == 2


def test_pressure_time_counts_overlapping_conditions_of_a_node_once() -> None:
    from types import SimpleNamespace

    from replay.tune import pressure_seconds

    conditions = pl.DataFrame(
        {
            "node": ["a", "a", "b"],
            "condition": ["MemoryPressure", "DiskPressure", "MemoryPressure"],
            "from": [T0, T0 + timedelta(seconds=30), T0],
            "to": [T0 + timedelta(seconds=60), T0 + timedelta(seconds=90), None],
        }
    )
    nodes = (SimpleNamespace(node="a", last_time=None), SimpleNamespace(node="b", last_time=T0 + timedelta(seconds=40)))
    result = SimpleNamespace(conditions=conditions, nodes=nodes)
    assert pressure_seconds(result) == 90 + 40  # type: ignore[arg-type]


def row(index: int, kills: int = 0, evictions: int = 0, gone: int = 0, pressure: float = 0, withheld: int = 0) -> Row:
    return Row(index, f"#{index}", None, kills, evictions, gone, pressure, withheld, closed_loop=True)


def test_the_front_keeps_only_undominated_candidates_with_no_kernel_kill() -> None:
    rows = [
        row(1, kills=1),  # evicts nothing but the kernel kills: never recommended
        row(2, evictions=1, pressure=120, withheld=1 << 30),
        row(3, evictions=1, pressure=140, withheld=100 << 20),
        row(4, evictions=2, pressure=140, withheld=1 << 30),  # dominated by 2 and 3
        row(5, evictions=1, pressure=140, withheld=100 << 20),  # equal to 3: both stay
    ]
    assert [r.index for r in pareto_front(rows)] == [3, 5, 2]  # the rule: withheld before pressure
    pick = recommend(rows)
    assert pick is not None and pick.index == 3


def test_pods_that_will_not_come_back_outrank_eviction_count_in_the_pick() -> None:
    rows = [row(1, evictions=1, gone=1), row(2, evictions=3, gone=0, withheld=1 << 30)]
    pick = recommend(rows)
    assert pick is not None and pick.index == 2


def test_oom_risk_makes_a_candidate_ineligible_and_none_eligible_is_no_pick() -> None:
    risky = Row(1, "#1", None, 0, 0, 0, 0, 0, closed_loop=False, oom_risk=1)
    assert not risky.eligible and recommend([risky, row(2, kills=2)]) is None


# -- a --config document on a scenario recording ---------------------------------------------------------------


def test_a_config_document_becomes_the_scenario_kubelet_flags_with_kubelet_defaults_for_the_rest() -> None:
    from replay.scenario import document_flags, variant_flags
    from replay.settings import Baseline, SettingsRequest

    doc = Candidate("10%", "10%", "20%", "30s").document()
    assert document_flags(doc) == [
        "--eviction-hard=memory.available<10%,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,"
        "imagefs.inodesFree<5%",
        "--eviction-soft=memory.available<20%",
        "--eviction-soft-grace-period=memory.available=30s",
        "--eviction-minimum-reclaim=",  # not in the file: none, as a kubelet started with it
        "--kube-reserved=",
        "--system-reserved=",
        "--eviction-max-pod-grace-period=0",
        "--eviction-pressure-transition-period=5m0s",
        "--enforce-node-allocatable=pods",
    ]
    assert document_flags({**doc, "imageGCHighThresholdPercent": 85}) is None  # not modelled by scenarios
    assert document_flags({"kind": "KubeletConfiguration"}) is None  # evictionHard's defaults depend on the version
    assert document_flags({"kubeletconfig": doc}) is None  # a /configz response
    # a flag given beside the file replaces that field of it
    request = SettingsRequest(baseline=Baseline(doc, "k.yaml"), overrides=FlagOverrides(eviction_soft=("",)))
    flags = variant_flags(request)
    assert flags.count("--eviction-soft=") == 1 and "--eviction-soft=memory.available<20%" not in flags
    assert flags[0].startswith("--eviction-hard=memory.available<10%")


def test_tune_takes_a_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from recordings.scenarios import bundled_text

    path = tmp_path / "mine.yaml"
    path.write_bytes(bundled_text("qos-contest"))
    argv = ["tune", str(path), "--memory-hard", "1Gi", "--memory-soft", "none", "--json", "--jobs", "1"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mode"] == "closed loop (scenario)" and [c["label"] for c in doc["candidates"]] == [
        "current settings: memory.available<500Mi (hard)",
        "hard 1Gi, no soft",
    ]


def test_a_node_not_ready_disqualifies_in_a_closed_loop_only() -> None:
    modelled = Row(1, "#1", None, 0, 1, 0, 0, 0, closed_loop=True, not_ready=1)
    recorded = Row(2, "#2", None, 0, 1, 0, 0, 0, closed_loop=False, oom_risk=0, not_ready=1)
    assert not modelled.eligible  # the scenario's kubelet starved: caused by the settings
    assert recorded.eligible  # a recorded NotReady may have causes no eviction setting touches: shown only


def test_kills_every_row_shares_are_the_unavoidable_ones() -> None:
    from dataclasses import replace

    from replay.tune import KillRef, unavoidable

    limit = KillRef("n1", T0, "OOMKilled ns/p c")
    race = KillRef("n1", T0 + timedelta(seconds=200), "SystemOOM process java")
    rows = [replace(row(0, kills=2), kills=(limit, race)), replace(row(1, kills=1), kills=(limit,))]
    assert unavoidable(rows) == [limit]
    assert unavoidable([*rows, row(2)]) == []
