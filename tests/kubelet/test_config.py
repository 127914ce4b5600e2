"""config.py: eviction configuration from /configz, a KubeletConfiguration file, or kubelet flags (§3.3)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import REALDATA

from kube.errors import InputError
from replay.inputs import load_document
from replay.kubelet.config import config_from_flags, config_from_kubelet_configuration, default_eviction_hard
from replay.kubelet.duration import MINUTE, SECOND
from replay.kubelet.versions import profile

CONFIGZ = REALDATA / "datadog-agent" / "kubelet_config.json"


def _signals(cfg: Any) -> list[tuple[str, str]]:
    return [(t.signal, str(t.value)) for t in cfg.thresholds]


def _file(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", **fields}


def test_configz_eviction_hard_is_used_exactly_and_zero_percent_disables() -> None:
    cfg = config_from_kubelet_configuration(load_document(CONFIGZ), source="configz", profile=profile("1.32"))
    assert cfg.eviction_hard == {"imagefs.available": "0%", "nodefs.available": "0%", "nodefs.inodesFree": "0%"}
    # every entry is 0% and memory.available is absent: no thresholds, no allocatable clone
    assert cfg.thresholds == ()
    assert cfg.pressure_transition_period == 5 * MINUTE
    assert cfg.local_storage_capacity_isolation is True
    assert "/configz" in cfg.source


@pytest.mark.parametrize(
    ("version", "signals"),
    [
        (
            "1.29",
            [
                "memory.available",
                "nodefs.available",
                "nodefs.inodesFree",
                "imagefs.available",
                "allocatableMemory.available",
            ],
        ),
        (
            "1.30",
            [
                "memory.available",
                "nodefs.available",
                "nodefs.inodesFree",
                "imagefs.available",
                "imagefs.inodesFree",
                "allocatableMemory.available",
            ],
        ),
    ],
)
def test_configuration_without_eviction_hard_gets_the_defaults(version: str, signals: list[str]) -> None:
    cfg = config_from_kubelet_configuration(_file(), source="kubelet.yaml", profile=profile(version))
    assert [t.signal for t in cfg.thresholds] == signals
    assert str(cfg.thresholds[0].value) == "100Mi"


def test_non_linux_defaults_have_no_inode_thresholds() -> None:
    assert default_eviction_hard(profile("1.32"), os="darwin") == {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
        "imagefs.available": "15%",
    }


def test_partial_eviction_hard_replaces_the_defaults() -> None:
    cfg = config_from_kubelet_configuration(
        _file(evictionHard={"memory.available": "200Mi"}), source="kubelet.yaml", profile=profile("1.32")
    )
    assert _signals(cfg) == [("memory.available", "200Mi"), ("allocatableMemory.available", "200Mi")]


def test_empty_eviction_hard_disables_hard_eviction() -> None:
    cfg = config_from_kubelet_configuration(_file(evictionHard={}), source="k", profile=profile("1.32"))
    assert cfg.thresholds == ()


def test_merge_default_eviction_settings_adds_missing_defaults_from_1_33() -> None:
    cfg = config_from_kubelet_configuration(
        _file(evictionHard={"memory.available": "200Mi"}, mergeDefaultEvictionSettings=True),
        source="k",
        profile=profile("1.33"),
    )
    assert dict(_signals(cfg)) == {
        "memory.available": "200Mi",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
        "imagefs.inodesFree": "5%",
        "allocatableMemory.available": "200Mi",
    }


def test_merge_default_eviction_settings_is_an_error_at_1_32() -> None:
    with pytest.raises(InputError) as err:
        config_from_kubelet_configuration(
            _file(evictionHard={"memory.available": "200Mi"}, mergeDefaultEvictionSettings=True),
            source="k",
            profile=profile("1.32"),
        )
    assert err.value.field == "mergeDefaultEvictionSettings"


def test_soft_thresholds_grace_and_transition_period_are_read() -> None:
    cfg = config_from_kubelet_configuration(
        _file(
            evictionHard={},
            evictionSoft={"memory.available": "1Gi"},
            evictionSoftGracePeriod={"memory.available": "1m30s"},
            evictionMaxPodGracePeriod=60,
            evictionPressureTransitionPeriod="30s",
            enforceNodeAllocatable=["pods"],
        ),
        source="k",
        profile=profile("1.32"),
    )
    (soft,) = cfg.thresholds
    assert soft.grace_period == 90 * SECOND
    assert cfg.max_pod_grace_period_seconds == 60
    assert cfg.pressure_transition_period == 30 * SECOND


def test_zero_transition_period_is_replaced_by_five_minutes() -> None:
    cfg = config_from_kubelet_configuration(
        _file(evictionPressureTransitionPeriod="0s"), source="k", profile=profile("1.32")
    )
    assert cfg.pressure_transition_period == 5 * MINUTE


def test_bad_threshold_in_a_file_names_the_source() -> None:
    with pytest.raises(InputError) as err:
        config_from_kubelet_configuration(
            _file(evictionHard={"foo": "1"}), source="kubelet.yaml", profile=profile("1.32")
        )
    assert err.value.source is not None and err.value.source.startswith("kubelet.yaml")
    assert err.value.problem == "unsupported eviction signal foo"


# --- flags ------------------------------------------------------------------------------------------------
def test_eviction_hard_flag_replaces_the_defaults() -> None:
    cfg = config_from_flags(profile("1.32"), eviction_hard=["memory.available<1.5Gi,nodefs.available<10%"])
    assert [t.signal for t in cfg.thresholds] == ["memory.available", "nodefs.available", "allocatableMemory.available"]
    assert cfg.thresholds[0].value.quantity is not None
    assert cfg.thresholds[0].value.quantity.int_value() == 1536 * 1024**2
    assert cfg.thresholds[1].value.percentage == 0.10000000149011612


def test_no_flags_means_the_defaults() -> None:
    cfg = config_from_flags(profile("1.32"))
    assert len(cfg.thresholds) == 6


def test_soft_flags_with_grace() -> None:
    cfg = config_from_flags(
        profile("1.32"),
        eviction_hard=["memory.available<100Mi"],
        eviction_soft=["memory.available<1Gi"],
        eviction_soft_grace_period=["memory.available=1m30s"],
        eviction_minimum_reclaim=["memory.available=50Mi"],
    )
    assert [(t.signal, t.grace_period, str(t.min_reclaim)) for t in cfg.thresholds] == [
        ("memory.available", 0, "50Mi"),
        ("memory.available", 90 * SECOND, "50Mi"),
        ("allocatableMemory.available", 0, "50Mi"),
    ]


@pytest.mark.parametrize(
    ("flag_value", "problem"),
    [
        ("memory.available>1Gi", "malformed pair"),
        ("foo<1", "unsupported eviction signal foo"),
        ("memory.available<1.5Gx", "1.5Gx"),
    ],
)
def test_bad_eviction_hard_flag_is_an_input_error_naming_the_flag(flag_value: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        config_from_flags(profile("1.32"), eviction_hard=[flag_value])
    assert "--eviction-hard" in str(err.value)
    assert problem in err.value.problem


def test_missing_soft_grace_period_names_the_soft_grace_flag() -> None:
    with pytest.raises(InputError) as err:
        config_from_flags(profile("1.32"), eviction_soft=["memory.available<1Gi"])
    assert "--eviction-soft-grace-period" in str(err.value)
