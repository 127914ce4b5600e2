"""versions.py: behaviour profiles per kubelet minor version, feature gates and their locks."""

from __future__ import annotations

import pytest

from kube.errors import InputError
from replay.kubelet.versions import KNOWN_VERSIONS, parse_feature_gates, parse_minor, profile


@pytest.mark.parametrize("version", ["9.99", "1.25", "1.38", "2.30", "latest", "1", ""])
def test_unknown_version_is_an_input_error_listing_known_versions(version: str) -> None:
    with pytest.raises(InputError) as err:
        profile(version)
    assert err.value.field == "--kubelet-version"
    for known in ("1.26", "1.32", "1.37", "master"):
        assert known in err.value.problem


@pytest.mark.parametrize(
    ("text", "minor"), [("1.30", 30), ("v1.30.2", 30), ("1.30.0-gke.1", 30), ("1.26", 26), ("master", 38)]
)
def test_version_spellings_are_understood(text: str, minor: int) -> None:
    assert parse_minor(text) == minor


def test_every_known_version_has_a_profile() -> None:
    for version in KNOWN_VERSIONS:
        assert profile(version).version == version


@pytest.mark.parametrize(
    ("version", "gate"),
    [
        ("1.28", "KubeletSeparateDiskGC"),
        ("1.31", "AllowOverwriteTerminationGracePeriodSeconds"),
        ("1.31", "PodLevelResources"),
        ("1.32", "NoSuchGate"),
    ],
)
def test_gate_unknown_to_the_version_is_an_error(version: str, gate: str) -> None:
    with pytest.raises(InputError, match=f"feature gate '{gate}' is not known to kubelet {version}"):
        profile(version, {gate: True})


@pytest.mark.parametrize(
    ("version", "gate", "value"),
    [
        ("1.35", "AllowOverwriteTerminationGracePeriodSeconds", True),
        ("1.31", "PodDisruptionConditions", False),
        ("1.35", "InPlacePodVerticalScaling", False),
    ],
)
def test_changing_a_locked_gate_is_an_error(version: str, gate: str, value: bool) -> None:
    with pytest.raises(InputError, match=f"feature gate {gate} is locked to"):
        profile(version, {gate: value})


def test_setting_a_locked_gate_to_its_default_is_allowed() -> None:
    assert (
        profile("1.35", {"AllowOverwriteTerminationGracePeriodSeconds": False}).gate(
            "AllowOverwriteTerminationGracePeriodSeconds"
        )
        is False
    )


@pytest.mark.parametrize(
    ("version", "gate", "default"),
    [
        ("1.30", "KubeletSeparateDiskGC", False),
        ("1.31", "KubeletSeparateDiskGC", True),
        ("1.33", "PodLevelResources", False),
        ("1.34", "PodLevelResources", True),
        ("1.32", "InPlacePodVerticalScaling", False),
        ("1.33", "InPlacePodVerticalScaling", True),
    ],
)
def test_gate_defaults_follow_the_release(version: str, gate: str, default: bool) -> None:
    assert profile(version).gate(gate) is default


@pytest.mark.parametrize(("version", "grace"), [("1.26", 0), ("1.30", 0), ("1.31", 1), ("1.32", 1), ("master", 1)])
def test_immediate_eviction_grace_is_one_second_from_1_31(version: str, grace: int) -> None:
    assert profile(version).immediate_eviction_grace_seconds == grace


@pytest.mark.parametrize(
    ("version", "gates", "honours"),
    [
        ("1.31", {}, False),
        ("1.32", {}, True),
        ("1.32", {"AllowOverwriteTerminationGracePeriodSeconds": True}, False),
        ("1.35", {}, True),
    ],
)
def test_soft_grace_honours_pod_termination_grace_from_1_32_unless_gated(
    version: str, gates: dict[str, bool], honours: bool
) -> None:
    assert profile(version, gates).soft_grace_honours_pod_termination is honours


@pytest.mark.parametrize(
    ("switch", "last_off", "first_on"),
    [
        ("imagefs_inodes_default", "1.29", "1.30"),
        ("containerfs_signals", "1.28", "1.29"),
        ("merge_default_eviction_settings", "1.32", "1.33"),
        ("message_includes_init_containers", "1.31", "1.32"),
        ("pod_level_resources", "1.33", "1.34"),
        ("sidecar_ephemeral_storage_limits", "1.36", "1.37"),
    ],
)
def test_version_switches_flip_at_their_release(switch: str, last_off: str, first_on: str) -> None:
    assert getattr(profile(last_off), switch) is False
    assert getattr(profile(first_on), switch) is True


def test_allocated_resources_in_message_only_1_27_to_1_31_with_the_gate() -> None:
    gate = {"InPlacePodVerticalScaling": True}
    assert profile("1.27", gate).message_uses_allocated_resources
    assert profile("1.31", gate).message_uses_allocated_resources
    assert not profile("1.31").message_uses_allocated_resources
    assert not profile("1.33").message_uses_allocated_resources


def test_parse_feature_gates_reads_the_kubelet_flag_syntax() -> None:
    assert parse_feature_gates("A=true, B=False,") == {"A": True, "B": False}
    with pytest.raises(InputError, match=r"expected NAME=true\|false"):
        parse_feature_gates("A=yes")
