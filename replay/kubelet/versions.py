"""Behaviour profiles of the kubelet eviction manager, by Kubernetes minor version.

The eviction logic changed in small, observable ways between releases (which containers the
message names, the grace period given to evicted pods, default thresholds...). A replay must say
which kubelet it imitates, so every switch lives here, with the PR that introduced it, and callers
pick a profile explicitly (``--kubelet-version 1.30``); nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kube.errors import InputError

MASTER_MINOR = 38
"""``master``: the newest upstream state read (1.38 development, after the 1.37 release)."""

KNOWN_VERSIONS: tuple[str, ...] = (*(f"1.{m}" for m in range(26, 38)), "master")


@dataclass(frozen=True)
class GateSpec:
    """A feature gate as the kubelet of a given minor version knows it (pkg/features/kube_features.go)."""

    name: str
    stages: tuple[tuple[int, bool, bool], ...]
    """(first minor, default, locked to default) — the entry with the largest minor ≤ version applies."""
    why: str

    def at(self, minor: int) -> tuple[bool, bool] | None:
        current: tuple[bool, bool] | None = None
        for first, default, locked in self.stages:
            if minor >= first:
                current = (default, locked)
        return current


GATES: tuple[GateSpec, ...] = (
    GateSpec(
        "InPlacePodVerticalScaling",
        ((27, False, False), (33, True, False), (35, True, True)),
        "1.27–1.31: evictionMessage reads status.containerStatuses[].allocatedResources (PR #102884); "
        "removed from evictionMessage in 1.32 (PR #128269)",
    ),
    GateSpec(
        "KubeletSeparateDiskGC",
        ((29, False, False), (31, True, False)),
        "a split image/container filesystem is only accepted with this gate (KEP-4191; beta PR #126205)",
    ),
    GateSpec(
        "AllowOverwriteTerminationGracePeriodSeconds",
        ((32, False, False), (35, False, True)),
        "on: soft evictions use evictionMaxPodGracePeriod as before 1.32 (PR #122890); locked in 1.35 (PR #133792)",
    ),
    GateSpec(
        "PodLevelResources",
        ((32, False, False), (34, True, False)),
        "pod-level spec.resources: pod sentence in the message and pod-level request in ranking (PR #132277, 1.34)",
    ),
    GateSpec(
        "PodDisruptionConditions",
        ((26, True, False), (31, True, True)),
        "threshold evictions add the DisruptionTarget pod condition (beta 1.26, GA 1.31)",
    ),
)
_GATES_BY_NAME = {gate.name: gate for gate in GATES}


@dataclass(frozen=True)
class VersionProfile:
    """Everything version-dependent that the port consults. Build with :func:`profile`."""

    version: str
    minor: int
    feature_gates: Mapping[str, bool] = field(default_factory=dict)

    def gate(self, name: str) -> bool:
        return self.feature_gates.get(name, False)

    # --- thresholds and defaults -------------------------------------------------------------
    @property
    def imagefs_inodes_default(self) -> bool:
        """``imagefs.inodesFree<5%`` is a Linux evictionHard default (PR #121834, 1.30)."""
        return self.minor >= 30

    @property
    def containerfs_signals(self) -> bool:
        """``containerfs.*`` signals and UpdateContainerFsThresholds exist (KEP-4191, 1.29)."""
        return self.minor >= 29

    @property
    def containerfs_node_reclaim(self) -> bool:
        """buildSignalToNodeReclaimFuncs maps ``containerfs.*`` to the reclaim functions of the signal they copy
        (nodefs, or imagefs with a dedicated unsplit imagefs): kubernetes/kubernetes PR #127874 ("Cleanup unused
        images or containers first when eviction manager detects ContainerFsInodesFree signal"), first in v1.32.0
        (CHANGELOG-1.32.md, v1.32.0 Bug or Regression: "Fixed an issue where eviction manager was not deleting
        unused images or containers"); no 1.31.x release note carries it. In 1.29–1.31 (v1.29.6 and v1.30.7
        read) the map has no containerfs entry: a pass whose threshold to reclaim is ``containerfs.*`` runs no
        image/container GC and ranks at once."""
        return self.minor >= 32

    @property
    def windows_memory_pressure(self) -> bool:
        """A Windows kubelet builds ``memory.available`` from the ``windows-global-commit-memory`` system container
        (helpers_windows.go) and defaults to ``memory.available<500Mi`` (defaults_windows.go): kubernetes/kubernetes
        PR #122922, first in v1.31.0 (CHANGELOG-1.31.md: "Fixed a missing behavior where Windows nodes did not
        implement memory-pressure eviction"). Before, Windows built the signal as every platform did (helpers.go,
        ``summary.Node.Memory``: available + working set) and took defaults_others.go (memory 100Mi, nodefs 10%,
        imagefs 15%; ``!linux`` then included Windows)."""
        return self.minor >= 31

    @property
    def merge_default_eviction_settings(self) -> bool:
        """``mergeDefaultEvictionSettings`` is a KubeletConfiguration field (PR #127577, 1.33)."""
        return self.minor >= 33

    # --- grace periods ---------------------------------------------------------------------------
    @property
    def immediate_eviction_grace_seconds(self) -> int:
        """Grace for hard and local-storage evictions: 1 s since PR #124063 (1.31), 0 before."""
        return 1 if self.minor >= 31 else 0

    @property
    def soft_grace_honours_pod_termination(self) -> bool:
        """Soft evictions use min(evictionMaxPodGracePeriod, terminationGracePeriodSeconds) (PR #122890, 1.32)."""
        return self.minor >= 32 and not self.gate("AllowOverwriteTerminationGracePeriodSeconds")

    # --- evictionMessage -----------------------------------------------------------------------
    @property
    def message_includes_init_containers(self) -> bool:
        """Init and restartable-init containers are named in the message (PR #124947, 1.32)."""
        return self.minor >= 32

    @property
    def message_uses_allocated_resources(self) -> bool:
        """1.27–1.31 with InPlacePodVerticalScaling: requests come from allocatedResources (PR #102884, #128269)."""
        return 27 <= self.minor <= 31 and self.gate("InPlacePodVerticalScaling")

    @property
    def pod_level_resources(self) -> bool:
        """Pod-level resources in message, annotations and ranking request (PR #132277, 1.34)."""
        return self.minor >= 34 and self.gate("PodLevelResources")

    # --- restartable init containers (sidecars) -----------------------------------------------
    @property
    def restartable_init_containers(self) -> bool:
        """``Container.restartPolicy`` exists and the pod resource helpers know sidecars (KEP-753, 1.28).

        From 1.28 pkg/api/v1/resource/helpers.go ``PodLimits``/``PodRequests`` (component-helpers later) add an
        init container with ``restartPolicy: Always`` to the regular containers' total and carry it through
        the later init containers' phases; the helpers test the field, not the ``SidecarContainers`` gate
        (alpha and off in 1.28), so a 1.28 kubelet handed such a pod sums it. The 1.26 and 1.27 API types
        have no container ``restartPolicy``: the field is dropped when the pod is decoded and the container
        is a plain init container — 1.26 ``PodRequestsAndLimits`` and 1.27 ``PodLimits`` take
        max(Σ containers, each init container), then overhead. Only the pod ephemeral-storage limit
        (localStorageEviction) reads these helpers before 1.34; ranking requests (max with every init
        container up to 1.33), the message (spec.containers before 1.32), QoS (every init container counts)
        and oom_score_adj (sidecar rule from 1.32) never sum sidecars before 1.28."""
        return self.minor >= 28

    # --- ranking -------------------------------------------------------------------------------
    @property
    def ranking_request_uses_pod_requests(self) -> bool:
        """GetResourceRequestQuantity calls component-helpers ``PodRequests(pod, {SkipContainerLevelResources:
        pod-level set, ExcludeOverhead: true})`` then adds non-zero overhead: sidecars are summed with the
        containers, the init peak counts, pod-level requests replace container ones (PR #132277, first in
        v1.34.0; the same form through v1.35.0, v1.36.0 and master). Before: Σ containers, max with every
        init container, sidecars included."""
        return self.minor >= 34

    # --- local storage -------------------------------------------------------------------------
    @property
    def sidecar_ephemeral_storage_limits(self) -> bool:
        """Restartable init containers' ephemeral-storage limits are enforced (PR #138462, 1.37)."""
        return self.minor >= 37

    @property
    def disruption_target_condition(self) -> bool:
        return self.gate("PodDisruptionConditions")

    def describe(self) -> list[tuple[str, str]]:
        """Human-readable list of the switches in force, for ``explain`` output."""
        return [
            ("imagefs.inodesFree default", str(self.imagefs_inodes_default)),
            ("containerfs signals", str(self.containerfs_signals)),
            ("containerfs node-level reclaim (image/container GC)", str(self.containerfs_node_reclaim)),
            ("restartable init containers (sidecars) in pod limits", str(self.restartable_init_containers)),
            ("hard/local-storage grace (s)", str(self.immediate_eviction_grace_seconds)),
            ("soft grace honours pod terminationGracePeriodSeconds", str(self.soft_grace_honours_pod_termination)),
            ("message names init/sidecar containers", str(self.message_includes_init_containers)),
            ("message uses allocatedResources", str(self.message_uses_allocated_resources)),
            ("pod-level resources", str(self.pod_level_resources)),
            ("ranking request is PodRequests (sidecars summed)", str(self.ranking_request_uses_pod_requests)),
        ]


def parse_minor(version: str) -> int:
    """``"1.30"``, ``"v1.30.2"``, ``"1.30.0-gke.1"`` or ``"master"`` → the minor number."""
    text = version.strip()
    if text == "master":
        return MASTER_MINOR
    core = text[1:] if text.startswith("v") else text
    parts = core.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1].split("-")[0].split("+")[0])
    except (ValueError, IndexError):
        raise InputError(
            f"unknown kubelet version {version!r}; known versions: {', '.join(KNOWN_VERSIONS)}",
            field="--kubelet-version",
        ) from None
    if major != 1 or not 26 <= minor < MASTER_MINOR:
        raise InputError(
            f"unknown kubelet version {version!r}; known versions: {', '.join(KNOWN_VERSIONS)}",
            field="--kubelet-version",
        )
    return minor


def profile(version: str, feature_gates: Mapping[str, bool] | None = None) -> VersionProfile:
    """The behaviour profile of ``version`` with its default feature gates, then ``feature_gates``.

    Unknown versions, gates the version does not have, and attempts to change a locked gate are
    errors — a replay never silently imitates a kubelet that could not exist.
    """
    minor = parse_minor(version)
    gates: dict[str, bool] = {}
    for spec in GATES:
        state = spec.at(minor)
        if state is not None:
            gates[spec.name] = state[0]
    for name, value in (feature_gates or {}).items():
        gate_spec = _GATES_BY_NAME.get(name)
        state = gate_spec.at(minor) if gate_spec else None
        if gate_spec is None or state is None:
            known = ", ".join(sorted(gates)) or "none"
            raise InputError(
                f"feature gate {name!r} is not known to kubelet {version}; known gates: {known}",
                field="--feature-gates",
            )
        default, locked = state
        if locked and value != default:
            raise InputError(
                f"feature gate {name} is locked to {str(default).lower()} in kubelet {version}",
                field="--feature-gates",
            )
        gates[name] = bool(value)
    label = "master" if minor == MASTER_MINOR else f"1.{minor}"
    return VersionProfile(version=label, minor=minor, feature_gates=MappingProxyType(gates))


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``"A=true,B=false"`` (the kubelet's --feature-gates syntax) → a dict."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            raise InputError(f"expected NAME=true|false, got {item!r}", field="--feature-gates")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates
