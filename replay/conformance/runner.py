"""Run conformance cases at their kubelet version and feature gates, and report like a test runner."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kube.errors import InputError
from replay.conformance.kinds import CHECKERS
from replay.conformance.manager_case import check_manager
from replay.conformance.vectors import Case
from replay.kubelet.versions import profile


@dataclass(frozen=True)
class CaseResult:
    case: Case
    status: str  # "passed" | "failed" | "skipped"
    failures: tuple[str, ...] = ()


def run_case(case: Case) -> CaseResult:
    checker = check_manager if case.kind == "manager" else CHECKERS.get(case.kind)
    if checker is None:
        return CaseResult(case, "skipped", (f"kind {case.kind!r} is not implemented",))
    try:
        prof = profile(case.kubelet_version, case.feature_gates)
    except InputError as err:
        return CaseResult(case, "skipped", (f"version not claimed: {err}",))
    try:
        failures = checker(case, prof)
    except (InputError, KeyError, TypeError, ValueError) as err:
        failures = [f"error: {type(err).__name__}: {err}"]
    return CaseResult(case, "failed" if failures else "passed", tuple(failures))


def run_cases(cases: Iterable[Case]) -> list[CaseResult]:
    return [run_case(case) for case in cases]


def summary_line(results: list[CaseResult]) -> str:
    passed = sum(r.status == "passed" for r in results)
    failed = sum(r.status == "failed" for r in results)
    skipped = sum(r.status == "skipped" for r in results)
    line = f"{passed} passed, {failed} failed"
    return f"{line}, {skipped} skipped" if skipped else line
