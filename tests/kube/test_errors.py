"""One exception tree for the whole tool (recordings/errors.py), and how its errors read."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from kube.errors import CredentialError, EvictlensError, InputError, RecorderError, RecordingError

ROOT = Path(__file__).resolve().parents[1]


def test_the_tree_has_one_base_and_input_errors_are_value_errors() -> None:
    assert issubclass(InputError, EvictlensError) and issubclass(InputError, ValueError)
    assert issubclass(RecordingError, InputError)
    assert {cls.exit_code for cls in (EvictlensError, InputError, RecordingError)} == {2}


def test_a_recorder_that_cannot_work_is_not_bad_input() -> None:
    """A network failure exits 1 (as kubectl does), refused credentials 3: neither is exit 2, "fix the command"."""
    assert issubclass(RecorderError, EvictlensError) and not issubclass(RecorderError, InputError)
    assert issubclass(CredentialError, RecorderError)
    assert (RecorderError.exit_code, CredentialError.exit_code) == (1, 3)


def test_one_line_names_source_line_field_problem_and_hint() -> None:
    err = InputError("expected a quantity", source="pods.json", line=12, field="spec.containers[0]", hint="e.g. 1Gi")
    assert err.one_line() == "pods.json: line 12: spec.containers[0]: expected a quantity; e.g. 1Gi"
    assert str(err) == err.one_line()
    assert InputError("no source").one_line() == "no source"


def test_one_line_folds_line_breaks_of_wrapped_messages() -> None:
    assert RecordingError("first\n   second\r\nthird", source="f").one_line() == "f: first second third"


def test_within_keeps_the_class_and_prefixes_the_field() -> None:
    inner = RecorderError("refused", field="status", hint="check RBAC")
    outer = inner.within(source="https://api", field="response")
    assert type(outer) is RecorderError
    assert outer.one_line() == "https://api: response.status: refused; check RBAC"
    assert InputError("x", source="a").within(source="b").source == "a"  # the innermost source wins


def test_the_duplicate_replay_errors_module_is_gone() -> None:
    assert importlib.util.find_spec("replay.errors") is None


def test_every_module_takes_errors_from_recordings_errors() -> None:
    pattern = re.compile(r"^\s*(from|import)\s+replay\.errors\b", re.MULTILINE)
    offenders = [
        str(p.relative_to(ROOT))
        for d in ("replay", "recordings", "tests")
        for p in (ROOT / d).rglob("*.py")
        if pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


@pytest.mark.parametrize("name", ["InputError", "RecordingError"])
def test_the_class_names_users_and_code_know_are_kept(name: str) -> None:
    import kube.errors

    assert getattr(kube.errors, name).__name__ == name
