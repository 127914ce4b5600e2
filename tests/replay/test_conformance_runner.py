"""replay/conformance: the shared vectors all pass, and a mismatch is reported by its first differing character."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import CONFORMANCE

from replay.conformance import run_cases
from replay.conformance.runner import summary_line
from replay.conformance.vectors import Case, load_cases

CASES = load_cases([CONFORMANCE])


def test_every_shared_conformance_vector_passes() -> None:
    results = run_cases(CASES)
    failed = [(r.case.id, r.failures) for r in results if r.status != "passed"]
    assert failed == []
    assert summary_line(results) == f"{len(CASES)} passed, 0 failed"


def test_every_vector_file_and_kind_is_loaded() -> None:
    files = {Path(c.source_file).name for c in CASES}
    assert files == {p.name for p in CONFORMANCE.glob("*.json")}
    assert {"quantity", "eviction_message", "rank", "parse_thresholds", "manager", "make_signal_observations"} <= {
        c.kind for c in CASES
    }


def _message_case(expected: str) -> Case:
    return Case(
        id="test/sabotaged",
        kind="eviction_message",
        kubelet_version="1.32",
        feature_gates={},
        expect_basis="upstream-assertion",
        input={
            "resource": "memory",
            "pod": {
                "metadata": {"name": "p", "uid": "p"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "100Mi"}}}]},
            },
            "pod_stats": {
                "podRef": {"name": "p", "namespace": "", "uid": "p"},
                "containers": [{"name": "c", "memory": {"workingSetBytes": 170074112}}],
            },
            "thresholds": [{"signal": "memory.available", "operator": "LessThan", "value": {"quantity": "100Mi"}}],
            "observations": {"memory.available": {"available": "98693120", "capacity": "8Gi"}},
        },
        expect={"message": expected},
        source_file="<test>",
    )


GOOD = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 96380Ki. "
    "Container c was using 166088Ki, request is 100Mi, has larger consumption of memory. "
)


def test_hand_built_case_with_the_right_expectation_passes() -> None:
    (result,) = run_cases([_message_case(GOOD)])
    assert result.status == "passed", result.failures


@pytest.mark.parametrize(
    ("expected", "index"),
    [
        (GOOD.replace("96380Ki", "96381Ki"), GOOD.index("96380Ki") + 4),
        (GOOD.rstrip(" "), len(GOOD) - 1),  # missing trailing space
        ("X" + GOOD[1:], 0),
    ],
)
def test_sabotaged_expectation_fails_naming_the_first_differing_character(expected: str, index: int) -> None:
    (result,) = run_cases([_message_case(expected)])
    assert result.status == "failed"
    (failure,) = result.failures
    assert failure.startswith(f"message: differs at character {index}:")


def test_sabotaged_manager_expectation_fails() -> None:
    manager = next(
        c
        for c in CASES
        if c.kind == "manager"
        and any(
            "killed_pods" in (s.get("expect") or {}) and (s.get("expect") or {})["killed_pods"]
            for s in c.input["steps"]
        )
    )
    steps: list[dict[str, Any]] = [dict(s) for s in manager.input["steps"]]
    for step in steps:
        expect = dict(step.get("expect") or {})
        if expect.get("killed_pods"):
            expect["killed_pods"] = ["nobody"]
            step["expect"] = expect
            break
    broken = Case(**{**manager.__dict__, "input": {**manager.input, "steps": steps}})
    (result,) = run_cases([broken])
    assert result.status == "failed"
    assert any("killed_pods" in f and "nobody" in f for f in result.failures)


def test_unknown_kind_and_unclaimed_version_are_skipped() -> None:
    unknown = Case(**{**_message_case(GOOD).__dict__, "kind": "no_such_kind"})
    unclaimed = Case(**{**_message_case(GOOD).__dict__, "kubelet_version": "1.12"})
    statuses = [r.status for r in run_cases([unknown, unclaimed])]
    assert statuses == ["skipped", "skipped"]
