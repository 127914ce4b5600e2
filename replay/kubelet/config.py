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

from kube.errors import InputError
from replay.kubelet.duration import MINUTE, format_duration, parse_duration
from replay.kubelet.thresholds import Threshold, parse_threshold_config
from replay.kubelet.versions import VersionProfile

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # evictionMaxPodGracePeriod is an int32 in the kubelet


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
    sources: Mapping[str, str] = field(default_factory=dict)
    """KubeletConfiguration field → where its value came from."""

    def describe(self) -> str:
        return f"{self.source}; pressure transition {format_duration(self.pressure_transition_period)}"


def default_eviction_hard(profile: VersionProfile, os: str = "linux") -> dict[str, str]:
    """eviction/defaults_{linux,windows,others}.go: DefaultEvictionHard (Windows keeps 500Mi of memory from 1.31;
    before, defaults_others.go held for Windows too: VersionProfile.windows_memory_pressure)."""
    if os == "windows" and profile.windows_memory_pressure:
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
    sources: Mapping[str, str] | None = None,
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
        sources=dict(sources or {}),
    )


@dataclass(frozen=True)
class EvictionFields:
    """The KubeletConfiguration eviction fields in force, each with where its value came from.

    ``sources`` maps the camelCase field name to a sentence such as ``--eviction-hard``,
    ``recorded /configz of node-a`` or ``defaults of kubelet 1.30``.
    """

    eviction_hard: Mapping[str, str]
    eviction_soft: Mapping[str, str] = field(default_factory=dict)
    eviction_soft_grace_period: Mapping[str, str] = field(default_factory=dict)
    eviction_minimum_reclaim: Mapping[str, str] = field(default_factory=dict)
    eviction_max_pod_grace_period: int = 0
    eviction_pressure_transition_period: int = 5 * MINUTE
    enforce_node_allocatable: tuple[str, ...] = ("pods",)
    local_storage_capacity_isolation: bool = True
    merge_default_eviction_settings: bool = False
    sources: Mapping[str, str] = field(default_factory=dict)
    source: str = "defaults"


FIELD_NAMES = (
    "evictionHard",
    "evictionSoft",
    "evictionSoftGracePeriod",
    "evictionMinimumReclaim",
    "evictionMaxPodGracePeriod",
    "evictionPressureTransitionPeriod",
    "enforceNodeAllocatable",
    "localStorageCapacityIsolation",
)


def default_fields(profile: VersionProfile, os: str = "linux") -> EvictionFields:
    """A kubelet started with neither config file nor eviction flags (v1beta1/defaults.go)."""
    source = f"defaults of kubelet {profile.version}"
    return EvictionFields(
        eviction_hard=default_eviction_hard(profile, os), sources=dict.fromkeys(FIELD_NAMES, source), source=source
    )


def fields_from_kubelet_configuration(
    obj: Any, *, source: str, profile: VersionProfile, os: str = "linux"
) -> EvictionFields:
    """The eviction fields of a KubeletConfiguration document or a ``/configz`` response.

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
    defaults = f"defaults of kubelet {profile.version}"
    sources = {name: (source if cfg.get(name) is not None else defaults) for name in FIELD_NAMES}
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
            sources["evictionHard"] = f"{defaults} (evictionHard not set in {source})"
        elif merge is True:
            hard = {**default_eviction_hard(profile, os), **hard}
            sources["evictionHard"] = f"{source}, merged with the {defaults} (mergeDefaultEvictionSettings)"
    else:
        hard = hard or {}
        sources["evictionHard"] = source
    transition = 5 * MINUTE
    if cfg.get("evictionPressureTransitionPeriod") is not None:
        try:
            transition = parse_duration(str(cfg["evictionPressureTransitionPeriod"]))
        except InputError as err:
            raise err.within(source=source, field="evictionPressureTransitionPeriod") from None
    max_grace = cfg.get("evictionMaxPodGracePeriod", 0)
    if isinstance(max_grace, bool) or not isinstance(max_grace, int):
        raise InputError("expected an integer number of seconds", source=source, field="evictionMaxPodGracePeriod")
    if not INT32_MIN <= max_grace <= INT32_MAX:  # the kubelet's config decoder (encoding/json) refuses it
        raise InputError(
            f"json: cannot unmarshal number {max_grace} into Go struct field "
            "KubeletConfiguration.evictionMaxPodGracePeriod of type int32",
            source=source,
            field="evictionMaxPodGracePeriod",
        )
    allocatable = cfg.get("enforceNodeAllocatable", ["pods"])
    if not isinstance(allocatable, list) or not all(isinstance(x, str) for x in allocatable):
        raise InputError("expected a list of strings", source=source, field="enforceNodeAllocatable")
    isolation = cfg.get("localStorageCapacityIsolation", True)
    return EvictionFields(
        eviction_hard=hard,
        eviction_soft=_string_map(cfg, "evictionSoft", source) or {},
        eviction_soft_grace_period=_string_map(cfg, "evictionSoftGracePeriod", source) or {},
        eviction_minimum_reclaim=_string_map(cfg, "evictionMinimumReclaim", source) or {},
        eviction_max_pod_grace_period=max_grace,
        eviction_pressure_transition_period=transition or 5 * MINUTE,
        enforce_node_allocatable=tuple(allocatable),
        local_storage_capacity_isolation=bool(isolation),
        merge_default_eviction_settings=merge is True,
        sources=sources,
        source=f"{source} ({'/configz' if is_configz else 'KubeletConfiguration'})",
    )


def config_from_fields(profile: VersionProfile, fields: EvictionFields) -> EvictionConfig:
    """ParseThresholdConfig over the fields in force; an error names the flag or file the bad value came from."""
    try:
        return build_config(
            profile,
            eviction_hard=fields.eviction_hard,
            eviction_soft=fields.eviction_soft,
            eviction_soft_grace_period=fields.eviction_soft_grace_period,
            eviction_minimum_reclaim=fields.eviction_minimum_reclaim,
            pressure_transition_period=fields.eviction_pressure_transition_period,
            max_pod_grace_period_seconds=fields.eviction_max_pod_grace_period,
            enforce_node_allocatable=fields.enforce_node_allocatable,
            local_storage_capacity_isolation=fields.local_storage_capacity_isolation,
            source=fields.source,
            sources=fields.sources,
        )
    except InputError as err:
        # the field at fault (longest name first: evictionSoftGracePeriod before evictionSoft); a value that
        # came from flags, or is missing beside one, is reported against the field's own flag
        name = next((n for n in sorted(FIELD_NAMES, key=len, reverse=True) if (err.field or "").startswith(n)), "")
        from_flags = any(origin.startswith("--") for origin in fields.sources.values())
        origin = fields.sources.get(name, "")
        if name and from_flags and (origin.startswith("--") or origin.startswith("defaults")):
            flag = "--" + "".join("-" + c.lower() if c.isupper() else c for c in name)
            raise InputError(err.problem, source=flag, field=err.field) from None
        raise


def config_from_kubelet_configuration(
    obj: Any, *, source: str, profile: VersionProfile, os: str = "linux"
) -> EvictionConfig:
    """A KubeletConfiguration document, or a ``/configz`` response (``{"kubeletconfig": {...}}``)."""
    return config_from_fields(profile, fields_from_kubelet_configuration(obj, source=source, profile=profile, os=os))


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


@dataclass(frozen=True)
class FlagOverrides:
    """Kubelet eviction flags as given; each one set replaces its field, whatever the baseline."""

    eviction_hard: tuple[str, ...] = ()
    eviction_soft: tuple[str, ...] = ()
    eviction_soft_grace_period: tuple[str, ...] = ()
    eviction_minimum_reclaim: tuple[str, ...] = ()
    eviction_max_pod_grace_period: int | None = None
    eviction_pressure_transition_period: str | None = None
    kube_reserved: tuple[str, ...] = ()
    """``--kube-reserved`` (``memory=1Gi``): not an eviction setting, so :func:`apply_flags` leaves it out (a
    recording's allocatable is what its node reported); a scenario recording regenerates with it
    (replay.scenario.variant_flags), which moves the node's allocatable and the pods' cgroup limit."""
    system_reserved: tuple[str, ...] = ()
    """``--system-reserved``: as :attr:`kube_reserved`."""

    def flag_values(self) -> list[tuple[str, str]]:
        """``(--flag, value)`` for each value given, map flags first, in the order they were given."""
        out: list[tuple[str, str]] = []
        for name in (
            "eviction_hard",
            "eviction_soft",
            "eviction_soft_grace_period",
            "eviction_minimum_reclaim",
            "kube_reserved",
            "system_reserved",
        ):
            values: tuple[str, ...] = getattr(self, name)
            out += [("--" + name.replace("_", "-"), v) for v in values]
        if self.eviction_max_pod_grace_period is not None:
            out.append(("--eviction-max-pod-grace-period", str(self.eviction_max_pod_grace_period)))
        if self.eviction_pressure_transition_period is not None:
            out.append(("--eviction-pressure-transition-period", self.eviction_pressure_transition_period))
        return out

    def given(self) -> dict[str, str]:
        """Flag → value text, for the flags that were set (the label of a what-if)."""
        out: dict[str, str] = {}
        for flag, value in self.flag_values():
            out[flag] = f"{out[flag]},{value}" if flag in out else value
        return out

    def __bool__(self) -> bool:
        return bool(self.given())


def _merged_flag(values: Sequence[str], sep: str, flag: str) -> dict[str, str] | None:
    """A repeated map flag: the first use replaces the map, later uses add to it (cli/flag map Set)."""
    if not values:
        return None
    out: dict[str, str] = {}
    for value in values:
        out.update(parse_flag_map(value, sep, flag))
    return out


def apply_flags(fields: EvictionFields, flags: FlagOverrides) -> EvictionFields:
    """The kubelet's flag precedence: each flag given replaces its field in the baseline configuration.

    A flag that could not take effect (a soft grace period or minimum reclaim for a signal with no
    threshold in the result) is an error here: the kubelet would ignore it, a what-if must not.
    """
    from dataclasses import replace

    sources = dict(fields.sources)
    changes: dict[str, Any] = {}
    for attr, sep, flag, camel in (
        ("eviction_hard", "<", "--eviction-hard", "evictionHard"),
        ("eviction_soft", "<", "--eviction-soft", "evictionSoft"),
        ("eviction_soft_grace_period", "=", "--eviction-soft-grace-period", "evictionSoftGracePeriod"),
        ("eviction_minimum_reclaim", "=", "--eviction-minimum-reclaim", "evictionMinimumReclaim"),
    ):
        value = _merged_flag(getattr(flags, attr), sep, flag)
        if value is not None:
            changes[attr] = value
            sources[camel] = flag
    if flags.eviction_max_pod_grace_period is not None:
        if flags.eviction_max_pod_grace_period > INT32_MAX:  # pflag's Int32Var
            big = flags.eviction_max_pod_grace_period
            raise InputError(
                f'invalid argument "{big}" for "--eviction-max-pod-grace-period" flag: '
                f'strconv.ParseInt: parsing "{big}": value out of range',
                field="--eviction-max-pod-grace-period",
            )
        if flags.eviction_max_pod_grace_period < 0:
            raise InputError("expected a number of seconds ≥ 0, e.g. 30", field="--eviction-max-pod-grace-period")
        changes["eviction_max_pod_grace_period"] = flags.eviction_max_pod_grace_period
        sources["evictionMaxPodGracePeriod"] = "--eviction-max-pod-grace-period"
    if flags.eviction_pressure_transition_period is not None:
        try:
            period = parse_duration(flags.eviction_pressure_transition_period)
        except InputError as err:
            raise err.within(field="--eviction-pressure-transition-period") from None
        if period < 0:  # the kubelet takes it (no validation) and then never reports a pressure condition
            raise InputError(
                "expected a duration ≥ 0, e.g. 5m (a negative period would hold no pressure condition at all)",
                field="--eviction-pressure-transition-period",
            )
        changes["eviction_pressure_transition_period"] = period or 5 * MINUTE
        sources["evictionPressureTransitionPeriod"] = "--eviction-pressure-transition-period"
    if not changes:
        return fields
    out = replace(fields, **changes, sources=sources, source=f"{fields.source} + flags")
    soft = set(out.eviction_soft)
    for signal in _merged_flag(flags.eviction_soft_grace_period, "=", "--eviction-soft-grace-period") or {}:
        if signal not in soft:
            raise InputError(
                f"no soft threshold for {signal} to apply a grace period to (set --eviction-soft '{signal}<…' too)",
                field="--eviction-soft-grace-period",
            )
    configured = soft | set(out.eviction_hard)
    for signal in _merged_flag(flags.eviction_minimum_reclaim, "=", "--eviction-minimum-reclaim") or {}:
        if signal not in configured:
            raise InputError(
                f"no threshold for {signal} to apply a minimum reclaim to (set --eviction-hard or "
                f"--eviction-soft for {signal} too)",
                field="--eviction-minimum-reclaim",
            )
    return out


def config_from_flags(
    profile: VersionProfile,
    *,
    eviction_hard: Sequence[str] = (),
    eviction_soft: Sequence[str] = (),
    eviction_soft_grace_period: Sequence[str] = (),
    eviction_minimum_reclaim: Sequence[str] = (),
    max_pod_grace_period_seconds: int | None = None,
    pressure_transition_period: str | None = None,
    os: str = "linux",
    baseline: EvictionFields | None = None,
) -> EvictionConfig:
    """Kubelet flags over ``baseline`` (default: the version's defaults, as a kubelet with no config file)."""
    flags = FlagOverrides(
        tuple(eviction_hard),
        tuple(eviction_soft),
        tuple(eviction_soft_grace_period),
        tuple(eviction_minimum_reclaim),
        max_pod_grace_period_seconds,
        pressure_transition_period,
    )
    fields = baseline if baseline is not None else default_fields(profile, os)
    fields = apply_flags(fields, flags)
    if baseline is None:
        from dataclasses import replace

        fields = replace(fields, source="flags" if eviction_hard else "kubelet defaults")
    return config_from_fields(profile, fields)
