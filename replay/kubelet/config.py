"""The kubelet's eviction configuration, from a KubeletConfiguration, a ``/configz`` dump or flags.

Mirrors cmd/kubelet/app/server.go (loadConfigFile: the "partly set evictionHard replaces the
defaults" rule and mergeDefaultEvictionSettings), pkg/kubelet/apis/config/v1beta1/defaults.go
(pressure transition period 5m, enforceNodeAllocatable ["pods"]), pkg/kubelet/eviction/
defaults_linux.go / defaults_others.go, and component-base's map flag syntax
(``memory.available<1Gi,nodefs.available<10%``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replay.errors import InputError
from replay.kubelet.duration import MINUTE, format_duration, parse_duration
from replay.kubelet.thresholds import Threshold, parse_threshold_config
from replay.kubelet.versions import VersionProfile


@dataclass(frozen=True)
class EvictionConfig:
    """What the eviction manager is configured with (eviction_manager.go: Config), plus provenance."""

    thresholds: tuple[Threshold, ...]
    pressure_transition_period: int = 5 * MINUTE
    max_pod_grace_period_seconds: int = 0
    local_storage_capacity_isolation: bool = True
    enforce_node_allocatable: tuple[str, ...] = ("pods",)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: Mapping[str, str] = field(default_factory=dict)
    eviction_minimum_reclaim: Mapping[str, str] = field(default_factory=dict)
    source: str = "defaults"

    def describe(self) -> str:
        return f"{self.source}; pressure transition {format_duration(self.pressure_transition_period)}"


def default_eviction_hard(profile: VersionProfile, os: str = "linux") -> dict[str, str]:
    """eviction/defaults_{linux,windows,others}.go: DefaultEvictionHard (Windows keeps 500Mi of memory)."""
    if os == "windows":
        return {"memory.available": "500Mi", "nodefs.available": "10%", "imagefs.available": "15%"}
    defaults = {"memory.available": "100Mi", "nodefs.available": "10%"}
    if os == "linux":
        defaults["nodefs.inodesFree"] = "5%"
    defaults["imagefs.available"] = "15%"
    if os == "linux" and profile.imagefs_inodes_default:
        defaults["imagefs.inodesFree"] = "5%"
    return defaults


def _string_map(obj: Mapping[str, Any], key: str, source: str) -> dict[str, str] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InputError(f"expected a map of signal to value, got {type(value).__name__}", source=source, field=key)
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise InputError(f"expected a string such as 100Mi or 10%, got {v!r}", source=source, field=f"{key}.{k}")
        out[str(k)] = str(v)
    return out


def build_config(
    profile: VersionProfile,
    *,
    eviction_hard: Mapping[str, str] | None,
    eviction_soft: Mapping[str, str] | None = None,
    eviction_soft_grace_period: Mapping[str, str] | None = None,
    eviction_minimum_reclaim: Mapping[str, str] | None = None,
    pressure_transition_period: int = 5 * MINUTE,
    max_pod_grace_period_seconds: int = 0,
    enforce_node_allocatable: Sequence[str] = ("pods",),
    local_storage_capacity_isolation: bool = True,
    source: str,
) -> EvictionConfig:
    """Parse the maps into thresholds (ParseThresholdConfig), naming ``source`` in errors."""
    try:
        thresholds = parse_threshold_config(
            list(enforce_node_allocatable),
            eviction_hard,
            eviction_soft,
            eviction_soft_grace_period,
            eviction_minimum_reclaim,
            containerfs=profile.containerfs_signals,
        )
    except InputError as err:
        raise err.within(source=source) from None
    return EvictionConfig(
        thresholds=tuple(thresholds),
        pressure_transition_period=pressure_transition_period or 5 * MINUTE,
        max_pod_grace_period_seconds=max_pod_grace_period_seconds,
        local_storage_capacity_isolation=local_storage_capacity_isolation,
        enforce_node_allocatable=tuple(enforce_node_allocatable),
        eviction_hard=dict(eviction_hard or {}),
        eviction_soft=dict(eviction_soft or {}),
        eviction_soft_grace_period=dict(eviction_soft_grace_period or {}),
        eviction_minimum_reclaim=dict(eviction_minimum_reclaim or {}),
        source=source,
    )


def config_from_kubelet_configuration(
    obj: Any, *, source: str, profile: VersionProfile, os: str = "linux"
) -> EvictionConfig:
    """A KubeletConfiguration document, or a ``/configz`` response (``{"kubeletconfig": {...}}``).

    A config file gets loadConfigFile's defaulting: no ``evictionHard`` → the defaults; a partial
    map is used as is unless ``mergeDefaultEvictionSettings`` (1.33+) adds the missing defaults.
    ``/configz`` already shows the effective, defaulted configuration, so it is used exactly.
    """
    if not isinstance(obj, Mapping):
        raise InputError("expected a KubeletConfiguration object or a /configz response", source=source)
    is_configz = "kubeletconfig" in obj
    cfg = obj["kubeletconfig"] if is_configz else obj
    if not isinstance(cfg, Mapping):
        raise InputError("expected an object", source=source, field="kubeletconfig")
    kind = cfg.get("kind")
    if kind not in (None, "KubeletConfiguration"):
        raise InputError(f"expected kind KubeletConfiguration, got {kind!r}", source=source, field="kind")
    hard = _string_map(cfg, "evictionHard", source)
    merge = cfg.get("mergeDefaultEvictionSettings")
    if merge is not None and not profile.merge_default_eviction_settings:
        raise InputError(
            f"mergeDefaultEvictionSettings is not a field of kubelet {profile.version} (added in 1.33, PR #127577)",
            source=source,
            field="mergeDefaultEvictionSettings",
        )
    if not is_configz:
        if hard is None:
            hard = default_eviction_hard(profile, os)
        elif merge is True:
            hard = {**default_eviction_hard(profile, os), **hard}
    else:
        hard = hard or {}
    transition = 5 * MINUTE
    if cfg.get("evictionPressureTransitionPeriod") is not None:
        try:
            transition = parse_duration(str(cfg["evictionPressureTransitionPeriod"]))
        except InputError as err:
            raise err.within(source=source, field="evictionPressureTransitionPeriod") from None
    max_grace = cfg.get("evictionMaxPodGracePeriod", 0)
    if isinstance(max_grace, bool) or not isinstance(max_grace, int):
        raise InputError("expected an integer number of seconds", source=source, field="evictionMaxPodGracePeriod")
    allocatable = cfg.get("enforceNodeAllocatable", ["pods"])
    if not isinstance(allocatable, list) or not all(isinstance(x, str) for x in allocatable):
        raise InputError("expected a list of strings", source=source, field="enforceNodeAllocatable")
    isolation = cfg.get("localStorageCapacityIsolation", True)
    return build_config(
        profile,
        eviction_hard=hard,
        eviction_soft=_string_map(cfg, "evictionSoft", source),
        eviction_soft_grace_period=_string_map(cfg, "evictionSoftGracePeriod", source),
        eviction_minimum_reclaim=_string_map(cfg, "evictionMinimumReclaim", source),
        pressure_transition_period=transition,
        max_pod_grace_period_seconds=max_grace,
        enforce_node_allocatable=allocatable,
        local_storage_capacity_isolation=bool(isolation),
        source=f"{source} ({'/configz' if is_configz else 'KubeletConfiguration'})",
    )


def parse_flag_map(text: str, separator: str, flag: str) -> dict[str, str]:
    """component-base cli/flag: LangleSeparatedMapStringString (``<``) and MapStringString (``=``)."""
    out: dict[str, str] = {}
    for pair in text.split(","):
        if not pair.strip():
            continue
        key, sep, value = pair.partition(separator)
        if not sep:
            raise InputError(f"malformed pair {pair!r}, expect string{separator}string", field=flag)
        out[key.strip()] = value.strip()
    return out


def config_from_flags(
    profile: VersionProfile,
    *,
    eviction_hard: Sequence[str] = (),
    eviction_soft: Sequence[str] = (),
    eviction_soft_grace_period: Sequence[str] = (),
    eviction_minimum_reclaim: Sequence[str] = (),
    max_pod_grace_period_seconds: int = 0,
    pressure_transition_period: str | None = None,
    os: str = "linux",
) -> EvictionConfig:
    """Kubelet flags: the first ``--eviction-hard`` replaces the default map wholesale."""

    def merged(values: Sequence[str], sep: str, flag: str) -> dict[str, str] | None:
        if not values:
            return None
        out: dict[str, str] = {}
        for value in values:
            out.update(parse_flag_map(value, sep, flag))
        return out

    hard = merged(eviction_hard, "<", "--eviction-hard")
    if hard is None:
        hard = default_eviction_hard(profile, os)
    transition = 5 * MINUTE
    if pressure_transition_period:
        try:
            transition = parse_duration(pressure_transition_period)
        except InputError as err:
            raise err.within(field="--eviction-pressure-transition-period") from None
    try:
        return build_config(
            profile,
            eviction_hard=hard,
            eviction_soft=merged(eviction_soft, "<", "--eviction-soft"),
            eviction_soft_grace_period=merged(eviction_soft_grace_period, "=", "--eviction-soft-grace-period"),
            eviction_minimum_reclaim=merged(eviction_minimum_reclaim, "=", "--eviction-minimum-reclaim"),
            pressure_transition_period=transition,
            max_pod_grace_period_seconds=max_pod_grace_period_seconds,
            source="flags" if eviction_hard else "kubelet defaults",
        )
    except InputError as err:
        flag = "--eviction-hard"
        if err.field and err.field.startswith("evictionSoftGracePeriod"):
            flag = "--eviction-soft-grace-period"
        elif err.field and err.field.startswith("evictionSoft"):
            flag = "--eviction-soft"
        elif err.field and err.field.startswith("evictionMinimumReclaim"):
            flag = "--eviction-minimum-reclaim"
        raise InputError(err.problem, source=flag, field=err.field) from None
